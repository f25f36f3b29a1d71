// Whole-log operations behind `loom records …`: summaries, merging, distilling, the configs that
// do well across workloads, tuning curves and their SVG plot.
#pragma once
#include <cstdint>
#include <iosfwd>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "loom/records/record.h"

namespace loom::records {

/// What the logs hold for one (workload, target).
struct WorkloadSummary {
  std::string key;     // Workload::key()
  std::string target;
  int64_t trials = 0;  // records, valid or not, but for the confirm step's
  int64_t valid = 0;   // valid trials
  std::map<ErrorCode, int64_t> errors;  // invalid trials by code (kNoError: no error but no costs)
  /// Re-measurements by the confirm step (tuner kConfirmTuner): not trials, but they count in
  /// their config's median.
  int64_t confirmations = 0;
  /// The best config, ranked as ApplyHistoryBest ranks them (by the median of a config's
  /// records), and the speed of its median record; 0 / -1 when no config has a valid median.
  double best_gflops = 0;
  double best_cost = 0;      // mean seconds
  int64_t best_config = -1;
  /// 1-based trial number (in log order, counting this workload's trials) of the first
  /// trial reaching 95% of best_gflops; -1 when no valid trial does.
  int64_t trials_to_95 = -1;
  /// Distinct configs with a valid median record, and how many of them are within 95% of
  /// best_gflops: on a log of the whole space (`loom tune --tuner grid`), how narrow the top is.
  int64_t configs = 0;
  int64_t configs_within_95 = 0;
  /// Indices of the (up to) three fastest distinct configs, fastest first.
  std::vector<int64_t> top_configs;
};

/// The records of every log in `paths`, in order (read_log on each; skipped lines are
/// reported on `warn` if given).
std::vector<Record> read_logs(const std::vector<std::string>& paths, std::ostream* warn = nullptr);

/// One summary per (workload, target) over `paths` read in order, in order of first appearance.
/// Skipped lines are reported on `warn` if given.
std::vector<WorkloadSummary> summary(const std::vector<std::string>& paths, std::ostream* warn = nullptr);
/// The summaries as an aligned text table, one row each.
std::string format_summary(const std::vector<WorkloadSummary>& rows);

struct MergeStats {
  int64_t read = 0;        // records read
  int64_t written = 0;     // records written
  int64_t duplicates = 0;  // records dropped as another trial of the same config
};
/// Writes every record of `paths` (valid and invalid) to `out`, replacing it, keeping one record
/// per (workload key, target, config index): its median_record, so the merged log ranks configs
/// as ApplyHistoryBest ranks the inputs. Records keep the order in which their (key, target,
/// index) first appeared. `out` may be one of the inputs; it is written to a temporary file and
/// renamed.
MergeStats merge(const std::vector<std::string>& paths, const std::string& out, std::ostream* warn = nullptr);
/// Writes ApplyHistoryBest::all() of the logs to `out` (replacing it): the median record of the
/// best config of each (workload, target), in key order; returns how many were written.
int64_t distill(const std::vector<std::string>& paths, const std::string& out, std::ostream* warn = nullptr);

/// A config, named by its knob values, with a valid median record in each of several
/// (workload, target)s: how close it comes to each one's best.
struct PortableConfig {
  ConfigRecord config;         // its knob values (and its index in the first workload's space)
  std::vector<double> ratios;  // per workload: that workload's best median cost / this config's
  double geomean = 0;          // geometric mean of `ratios`
};
/// The configs (by knob values) measured validly in every (workload, target) of `paths`,
/// fastest geometric mean of their speed relative to each workload's best first; configs rank
/// by their median record, as ApplyHistoryBest ranks them. Which config to prefer when one must
/// serve all these workloads (a template's default, say) is the first. `workloads` (if given)
/// receives "<key> <target>" per workload, in the order of `ratios`.
std::vector<PortableConfig> portable_configs(const std::vector<std::string>& paths,
                                             std::vector<std::string>* workloads = nullptr,
                                             std::ostream* warn = nullptr);

/// Best-so-far GFLOP/s after each trial of the log (element i: after trial i+1; 0 until the first
/// valid trial). With `workload_key` non-empty, only that workload's records count as trials.
/// Re-measurements of the confirm step (tuner "confirm") are not trials and are left out.
std::vector<double> best_curve(const std::string& path, const std::string& workload_key = "",
                               std::ostream* warn = nullptr);

/// A standalone SVG line chart of GFLOP/s against trial number: axes with ticks and labels, a
/// legend and one <polyline> per (label, curve).
std::string plot_svg(const std::vector<std::pair<std::string, std::vector<double>>>& curves,
                     const std::string& title);

}  // namespace loom::records
