// The tuning chart of `loom records plot`: every trial as a point and the best config as
// `loom build` ranks them, per (workload, target) of a log.
#pragma once
#include <cstdint>
#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

namespace loom::records {

/// The trials of one (workload, target) of a log.
struct TrialCurve {
  std::string workload;  // Workload::key(), e.g. "matmul(1024,1024,1024;float32)"
  std::string target;
  std::string label;     // legend text; trial_curves sets "<workload> on <target>"
  /// Records other than the confirm step's re-measurements (tuner "confirm"), in log order.
  int64_t trials = 0;
  /// (1-based trial number, GFLOP/s) of every valid trial.
  std::vector<std::pair<int64_t, double>> points;
  /// Trials without a valid measurement (build or run errors, wrong answers): not in `points`.
  int64_t failed = 0;
  /// Element i: after trial i+1 (and the confirmations logged before the next trial), the
  /// GFLOP/s of the best config as ApplyHistoryBest ranks configs: the median record of the
  /// config with the lowest median cost. 0 until a trial is valid. Because a config's median
  /// moves with its re-measurements, this may fall as well as rise.
  std::vector<double> best;
  /// The best at the end of the log, confirmations included: the record `loom build` and
  /// `loom records best` pick (0 / -1 / 0 when no config has a valid median).
  double best_gflops = 0;
  int64_t best_config = -1;
  size_t best_measurements = 0;  // records of that config
};

/// One curve per (workload, target) of the log at `path`, in order of first appearance;
/// skipped lines are reported on `warn` if given.
std::vector<TrialCurve> trial_curves(const std::string& path, std::ostream* warn = nullptr);

/// A standalone SVG chart of `curves`: each valid trial a point (<circle class="trial">), the
/// best-so-far line of each curve (<polyline class="best" data-final-gflops="…">), a legend
/// giving each curve's trial count, failed trials (not drawn) and final best, and the title
/// (<text class="title">): `title`, or the workload and target of a single curve followed by
/// `title` when both are given ("" for none).
std::string plot_trials_svg(const std::vector<TrialCurve>& curves, const std::string& title = "");

}  // namespace loom::records
