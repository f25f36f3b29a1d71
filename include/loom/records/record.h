// Tuning records: one measured trial, its JSON-lines form, and the log file that holds them.
#pragma once
#include <cstdint>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "loom/runtime/error.h"

namespace loom::records {

/// Schema version written into every record. Version 2 added "steps" (the schedule steps of
/// auto-scheduled configs); readers accept versions kOldestSchemaVersion to kSchemaVersion and
/// report others.
inline constexpr int kSchemaVersion = 2;
inline constexpr int kOldestSchemaVersion = 1;

/// Why a trial produced no valid time.
enum class ErrorCode : int {
  kNoError = 0,
  kInstantiation = 1,  // the template rejected the config (or it failed a verifier)
  kCompile = 2,
  kRuntime = 3,        // crashed or returned an error status while running
  kWrongAnswer = 4,    // ran, but disagreed with the reference result
  kBuildTimeout = 5,
  kRunTimeout = 6,
  kUnknown = 7,
};
/// "no_error", "instantiation", "compile", "runtime", "wrong_answer", "build_timeout",
/// "run_timeout", "unknown".
const char* to_string(ErrorCode c);
/// Inverse of to_string; throws loom::Error for any other string.
ErrorCode error_code_from_string(const std::string& s);

/// The loom version this library was built as (written into records as `loom_version`).
const char* loom_version();

/// Thrown by Record::from_json for a record of another schema version.
class SchemaVersionError : public Error {
 public:
  explicit SchemaVersionError(int version);
  int version() const { return version_; }

 private:
  int version_;
};

/// What is tuned: an operator template and its arguments. `key()` is canonical: equal
/// workloads have equal keys.
struct Workload {
  std::string op;              // template name, e.g. "matmul"
  std::vector<int64_t> shape;  // template-specific sizes, e.g. M,N,K
  std::string dtype = "float32";
  std::map<std::string, std::string> attrs;  // e.g. {"stride": "1"}
  /// `op(shape…;dtype)` or, with attrs (sorted by name), `op(shape…;dtype;k=v,…)`,
  /// e.g. `conv2d(1,64,56,56,64,3,3;float32;pad=1,stride=1)`.
  std::string key() const;
  bool operator==(const Workload& o) const = default;
};

/// A point of a config space: its index and, per knob, the chosen value (as the template
/// reads it: split factors, an annotation, a choice, a permutation).
struct ConfigRecord {
  int64_t index = -1;
  std::map<std::string, std::vector<int64_t>> knobs;
  std::map<std::string, std::string> labels;  // readable knob values ("vec", "unroll")
};

struct MeasureResult {
  std::vector<double> costs;  // seconds per run, one per repeat
  ErrorCode error = ErrorCode::kNoError;
  std::string error_msg;
  double all_cost = 0;     // seconds spent building and measuring this trial
  double timestamp = 0;    // Unix time the trial finished
  /// Where the trial was built and measured: host name and CPU model name. Empty: this
  /// process's machine (tuner::Task::record fills in the local ones). Not part of the
  /// "result" object of a record; they become Record::host and Record::target_cpu.
  std::string host;
  std::string cpu;
  /// Mean of costs; +inf when there is an error or no cost.
  double mean_cost() const;
};

/// Record::tuner of a re-measurement by the confirm step (tuner::TuneOptions::confirm_top): not
/// a trial of the search.
inline constexpr const char* kConfirmTuner = "confirm";

/// One line of a tuning log.
struct Record {
  int version = kSchemaVersion;
  Workload workload;
  std::string target;        // Target::str(), e.g. "llvm -mcpu=skylake-avx512"
  std::string target_cpu;    // host CPU name when measured
  std::string target_features;
  std::string host;          // host name of the machine that measured it; "" in older logs
  double flop = 0;           // floating point operations per run of the workload
  ConfigRecord config;
  MeasureResult result;
  std::string tuner;         // "xgb", "random", "grid", "ga"; kConfirmTuner
  std::string loom_version;
  /// The config's schedule steps as a JSON array (schedule::steps_to_json; the records layer
  /// keeps it as text), or empty: auto-scheduled records carry them, so a record still
  /// replays when the rules that made its config space have changed.
  std::string steps;

  bool valid() const { return result.error == ErrorCode::kNoError && !result.costs.empty(); }
  double gflops() const;  // 0 when not valid
  /// One JSON object without a newline.
  std::string to_json() const;
  /// Parses one line; throws loom::Error naming what is missing or malformed (every field of
  /// the schema is required but "host", added later and read as "" when absent, and "steps",
  /// an array when present; unknown fields are ignored), or SchemaVersionError when "v" is not
  /// between kOldestSchemaVersion and kSchemaVersion.
  static Record from_json(const std::string& line);
};

/// Appends records to a log. Each record is written with a single write(2) on a file opened
/// O_APPEND, so concurrent writers never interleave a line and a killed job leaves whole lines.
class LogWriter {
 public:
  /// Opens (creating if needed) `path` for appending; throws loom::Error on failure.
  explicit LogWriter(const std::string& path);
  ~LogWriter();
  LogWriter(const LogWriter&) = delete;
  LogWriter& operator=(const LogWriter&) = delete;
  /// Appends one line. A record with an empty loom_version is written with loom_version().
  /// Throws loom::Error (with strerror) when the write fails.
  void write(const Record& r);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
};

struct LogContents {
  std::vector<Record> records;
  std::vector<std::string> warnings;  // "matmul.jsonl:17: skipped: truncated JSON", …
};
/// Reads every well-formed record of the current schema version. Malformed lines and records
/// of another version are skipped and described in `warnings` as "PATH:LINE: skipped: reason"
/// (also printed, one a line, to `warn` if given). Empty lines are ignored. Throws loom::Error
/// when the file cannot be read.
LogContents read_log(const std::string& path, std::ostream* warn = nullptr);

/// Whether a record measured on `record_target` may stand in for `target` when no record has
/// exactly that target string: same kind and same -mcpu, where no -mcpu and -mcpu=native both
/// mean the host (for cuda, the same -arch likewise).
bool target_compatible(const std::string& record_target, const std::string& target);

/// The cost that ranks a config measured more than once: the upper median of its records'
/// mean costs (the slower of the two middle ones for an even count), an invalid record counting
/// as +inf. On a noisy machine one lucky measurement then cannot make a config the best, and a
/// config that fails as often as it succeeds is never chosen. One record: its mean cost.
double median_cost(std::vector<double> mean_costs);
/// The record whose mean cost is median_cost of them all (the first of equals in the given
/// order); `records` must not be empty.
const Record& median_record(const std::vector<const Record*>& records);

/// The best config of each (workload, target) over one or more logs, ranked by median_cost of
/// all its records (most configs have one; `loom tune --confirm` re-measures the fastest).
/// Configs whose median is +inf (errors, no costs) are never chosen.
class ApplyHistoryBest {
 public:
  ApplyHistoryBest() = default;
  /// Reads the log(s) with read_log; skipped lines are reported on std::cerr.
  explicit ApplyHistoryBest(const std::string& path);
  explicit ApplyHistoryBest(const std::vector<std::string>& paths);
  void add(Record r);
  /// The median record (see median_cost) of the best config for `w` measured on exactly
  /// `target` (compared as Target::str() text); if there is none, the best among records whose
  /// target is target_compatible with it.
  std::optional<Record> best(const Workload& w, const std::string& target) const;
  /// The mean cost of every record of config `index` of `w` on exactly `target`, ascending
  /// (+inf for invalid ones); empty when it has none.
  std::vector<double> measurements(const Workload& w, const std::string& target, int64_t index) const;
  /// Up to `n` configs of `w` on exactly `target` with a finite median, fastest first.
  std::vector<int64_t> top(const Workload& w, const std::string& target, size_t n) const;
  /// The best record of every (workload, target), in key order.
  std::vector<Record> all() const;
  /// (workload, target) pairs with a valid best.
  size_t size() const;

 private:
  struct Config {
    std::vector<Record> records;  // in the order added
    double median = 0;            // median_cost of their mean costs
    const Record& median_record() const;
  };
  struct Entry {
    std::map<int64_t, Config> configs;  // by config index
    std::optional<int64_t> best;        // index of the config with the lowest finite median
  };
  std::map<std::string, Entry> entries_;  // key: workload key + '\n' + target
};

}  // namespace loom::records
