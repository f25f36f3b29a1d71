// Helpers shared by the tuning benchmarks: argument parsing, timing, error checks, the FMA
// peak test.
#pragma once
#include <loom/loom.h>
#include <loom/records/record.h>
#include <loom/tuner/measure.h>
#include <loom/tuner/task.h>

#include "cli.h"

#include <functional>
#include <string>
#include <vector>

namespace loom::bench {

std::vector<std::string> split_list(const std::string& s, char sep);
/// Replaces `out` with the integers of list option `name` ("1,2") of `a`, when it is given.
void int_list_option(const cli::Args& a, const std::string& name, std::vector<int>* out);
/// A positive integer (loom::Error naming `what` otherwise).
int parse_int(const std::string& s, const char* what);

/// Seconds per call of each f: the median (or with `best`, the minimum) over `repeat` timed
/// blocks. Each f gets two warm-up calls; then every round times each f in turn
/// (interleaved, so that load from other processes falls on all alike), each block running
/// as many calls as make it last at least min_repeat_ms, after a pause of settle_ms (so that
/// the idle workers of the previous library's thread pool, which spin for a while, have gone
/// to sleep) followed by as many untimed calls (so that the timed library's own workers are
/// awake and the cores back at speed: a block timed straight after the pause ran at half
/// speed on 2 threads).
std::vector<double> interleaved_times(const std::vector<std::function<void()>>& fs, int repeat,
                                      double min_repeat_ms = 20, double settle_ms = 0, bool best = false);

/// max |c - ref| / max |ref| over n floats (inf if c has a NaN).
double max_rel_err(const float* c, const float* ref, int64_t n);

/// Fills n floats with NaN, so that an element a kernel fails to write cannot pass a check.
void poison(float* p, int64_t n);

/// Measured single-precision FMA throughput in GFLOP/s of `threads` threads together, each
/// running independent vector FMAs for about `seconds` (AVX-512 when the CPU has it, else
/// AVX2+FMA, else 0); the best of `bursts` such runs, so that a shared machine's load
/// lowers it less. `isa` receives the instruction set used.
double fma_peak_gflops(int threads, double seconds, int bursts, std::string* isa = nullptr);

/// A file-name-safe form of a workload key: `conv2d_nchw(1,64,56,…;float32;pad=1)` →
/// `conv2d_nchw_1_64_56_…_float32_pad_1`.
std::string sanitize(const std::string& key);

double geomean(const std::vector<double>& xs);

/// The records of `task` (its workload on its target) in `log`; none when there is no log.
std::vector<records::Record> task_records(const std::string& log, const tuner::Task& task);

/// How a benchmark tunes one workload with the XGB tuner.
struct TuneRequest {
  std::string tag;    // the benchmark's name, for messages: "tuned_cpu"
  std::string label;  // the workload, for messages
  int trials = 0;     // records of the task the log should end up with
  bool resume = false;   // an existing log may be continued (else it is an error)
  bool no_tune = false;  // only report what the log has
  bool verbose = false;  // the tuner's progress lines
  tuner::MeasureOptions measure;
};

/// Tunes `task` until `log` holds `r.trials` records of it (never measuring a config twice),
/// reporting on stderr; throws loom::Error when the log already has records and neither
/// resume nor no_tune is set, so that two runs never mix by accident.
void tune_xgb(const tuner::Task& task, const std::string& log, const TuneRequest& r);

}  // namespace loom::bench
