// Distributed tuning's throughput: candidates compiled and measured per minute by the ranks of
// an MPI job (tuner::distributed::Cluster), and a model on paper of what more machines give.
//
// Run under mpirun (bench/scale.sh runs 1, 2 and 4 ranks and prints the ratios to 1 rank):
//   mpirun -np N bench/scale --op conv2d_nchw --shape 1,128,28,28,128,3,3 --attr stride=1 --attr pad=1
//          [--candidates 24] [--jobs 1] [--repeat 3] [--min-repeat-ms 100] [--seed 1]
// Rank 0 picks --candidates distinct random configs (the same for every N), measures them
// through the cluster in batches of one round of every rank's workers, as `loom tune` does,
// and prints one line: ranks, candidates, errors, seconds, candidates per minute.
//
// --calibrate (with -np 1): first times the phases of one candidate on this machine, each on
// its own: compile (Measurer::build, one worker), compile + run (Measurer::measure), and the
// search of the xgb tuner per batch (the cost model's refit and simulated annealing, with the
// measurements answered instantly from a synthetic cost); then prints the model of ResNet-18
// (12 tasks, --model-trials per task or the whole space where it is smaller) on 1, 8 and 64
// machines of --model-cores cores each.
#include <loom/loom.h>
#include <loom/tuner/distributed.h>
#include <loom/tuner/features.h>
#include <loom/tuner/tuner.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <random>
#include <set>
#include <sstream>

#include "cli.h"

using namespace loom;
using Clock = std::chrono::steady_clock;

namespace {

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::vector<int64_t> pick_configs(const tuner::Task& task, int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> dist(0, task.space().size() - 1);
  std::vector<int64_t> out;
  std::set<int64_t> seen;
  while (int(out.size()) < n && int64_t(seen.size()) < task.space().size()) {
    int64_t i = dist(rng);
    if (seen.insert(i).second) out.push_back(i);
  }
  return out;
}

struct Calibration {
  double compile_s = 0;  // one candidate, one worker
  double run_s = 0;      // timing and checking it, after the compile
  double start_s = 0;    // a task's first candidate beyond that: the worker's start, the reference
  double search_s = 0;   // the xgb tuner's search per batch of `search_batch`
  int search_batch = 0;
  std::string search_note;
};

Calibration calibrate(const tuner::Task& task, const tuner::MeasureOptions& mo, const std::vector<int64_t>& sample) {
  Calibration c;
  tuner::MeasureOptions one = mo;
  one.n_parallel = 1;
  tuner::Measurer m(task, one);
  auto t0 = Clock::now();
  m.measure(std::vector<int64_t>{sample[0]});  // starts the worker and computes its reference
  double first = since(t0);
  std::vector<int64_t> rest(sample.begin() + 1, sample.end());
  t0 = Clock::now();
  m.build(rest);
  c.compile_s = since(t0) / double(rest.size());
  t0 = Clock::now();
  m.measure(rest);
  c.run_s = std::max(0.0, since(t0) / double(rest.size()) - c.compile_s);
  c.start_s = std::max(0.0, first - c.compile_s - c.run_s);

  // The search alone: xgb over instant synthetic costs, 128 trials in batches of 16.
  tuner::TuneOptions o;
  o.n_trial = 128;
  o.batch_size = c.search_batch = 16;
  std::ostringstream progress;
  o.progress = &progress;
  o.include_default = true;
  double measuring = 0;
  o.measure_fn = [&](const std::vector<int64_t>& batch) {
    auto t = Clock::now();
    std::vector<records::MeasureResult> out;
    for (int64_t i : batch) {
      records::MeasureResult r;
      r.costs = {1e-3 * (1.0 + double((i * 2654435761LL) % 1000) / 100.0)};
      out.push_back(r);
    }
    measuring += since(t);
    return out;
  };
  t0 = Clock::now();
  tuner::XGBTuner tuner(task);
  tuner::TuneSummary sum = tuner.tune(o);
  c.search_s = (since(t0) - measuring) / (128.0 / 16.0);
  c.search_note = fmt::format("xgb on {} features, {} trials, space of {} configs", to_string(tuner.feature_set()),
                              sum.trials, task.space().size());
  return c;
}

/// ResNet-18 at batch 1, 224x224: its 11 distinct convolutions (N,C,H,W,K,R,S; stride, pad)
/// and the classifier.
std::vector<tuner::Task> resnet18_tasks() {
  struct Conv {
    std::vector<int64_t> shape;
    int stride, pad;
  };
  const std::vector<Conv> convs = {
      {{1, 3, 224, 224, 64, 7, 7}, 2, 3},   {{1, 64, 56, 56, 64, 3, 3}, 1, 1},    {{1, 64, 56, 56, 128, 3, 3}, 2, 1},
      {{1, 64, 56, 56, 128, 1, 1}, 2, 0},   {{1, 128, 28, 28, 128, 3, 3}, 1, 1},  {{1, 128, 28, 28, 256, 3, 3}, 2, 1},
      {{1, 128, 28, 28, 256, 1, 1}, 2, 0},  {{1, 256, 14, 14, 256, 3, 3}, 1, 1},  {{1, 256, 14, 14, 512, 3, 3}, 2, 1},
      {{1, 256, 14, 14, 512, 1, 1}, 2, 0},  {{1, 512, 7, 7, 512, 3, 3}, 1, 1},
  };
  std::vector<tuner::Task> out;
  for (const Conv& c : convs)
    out.push_back(tuner::Task::create("conv2d_nchw", c.shape, Target("llvm"), "float32",
                                      {{"stride", std::to_string(c.stride)}, {"pad", std::to_string(c.pad)}}));
  out.push_back(tuner::Task::create("dense_bias_relu", {1, 1000, 512}, Target("llvm")));
  return out;
}

void print_model(const Calibration& c, int cores, int trials) {
  // A task whose space is smaller than `trials` is done when its space is measured whole.
  int64_t total = 0;
  std::vector<std::string> per_task;
  std::vector<tuner::Task> tasks = resnet18_tasks();
  for (const tuner::Task& t : tasks) {
    total += std::min<int64_t>(trials, t.space().size());
    per_task.push_back(std::to_string(std::min<int64_t>(trials, t.space().size())));
  }
  std::cout << fmt::format(
      "calibration on this machine: compile {:.2f} s, run {:.2f} s per candidate; {:.2f} s to start a task; search "
      "{:.2f} s per batch of {} ({})\n",
      c.compile_s, c.run_s, c.start_s, c.search_s, c.search_batch, c.search_note);
  std::cout << fmt::format(
      "model: ResNet-18, {} tasks, up to {} trials each (their spaces allow {}) = {} candidates; machines of {} cores, "
      "one rank each\n",
      tasks.size(), trials, fmt::join(per_task, ","), total, cores);
  std::cout << "machines  batch  candidates/min  measuring  search+start      total\n";
  for (int machines : {1, 8, 64}) {
    // A machine's round: its `cores` workers compile one candidate each at once, then run
    // them one at a time. The search on rank 0 runs between batches (its cost per batch taken
    // as measured at batch 16: the refit grows with the history, the annealing does not).
    double round_s = c.compile_s + cores * c.run_s;
    double per_min = 60.0 * machines * cores / round_s;
    int batch = machines * cores;
    double total_candidates = double(total);
    double measuring_s = total_candidates / per_min * 60.0;
    // Every machine starts each task once (in parallel with the others), the search per batch.
    double search_s = total_candidates / batch * c.search_s + double(tasks.size()) * c.start_s;
    std::cout << fmt::format("{:>8}  {:>5}  {:>14.1f}  {:>9}  {:>12}  {:>9}\n", machines, batch, per_min,
                             cli::format_seconds(measuring_s), cli::format_seconds(search_s),
                             cli::format_seconds(measuring_s + search_s));
  }
}

int run(const cli::Args& a, tuner::distributed::Cluster* cluster) {
  tuner::Task task = cli::task_from(a);
  tuner::MeasureOptions mo;
  mo.n_parallel = int(a.integer("--jobs", 1, 0, 256));
  mo.repeat = int(a.integer("--repeat", 3, 1, 1000));
  mo.min_repeat_ms = a.number("--min-repeat-ms", 100, 0);
  mo.timeout_s = a.number("--timeout", 10, 0.001);
  const int n = int(a.integer("--candidates", 24, 1, 100000));
  const uint64_t seed = uint64_t(a.integer("--seed", 1, 0));
  std::vector<int64_t> configs = pick_configs(task, n, seed);

  if (a.has("--calibrate")) {
    std::vector<int64_t> sample(configs.begin(), configs.begin() + std::min<size_t>(configs.size(), 7));
    LOOM_CHECK(sample.size() >= 2, "--calibrate needs at least 2 candidates");
    Calibration c = calibrate(task, mo, sample);
    print_model(c, int(a.integer("--model-cores", 2, 1, 1024)), int(a.integer("--model-trials", 800, 1, 100000)));
  }

  cluster->announce(task.target());
  std::shared_ptr<tuner::MeasureService> service = cluster->service();
  const size_t batch = size_t(service->parallelism(mo));
  auto t0 = Clock::now();
  int errors = 0;
  for (size_t start = 0; start < configs.size(); start += batch) {
    std::vector<int64_t> b(configs.begin() + long(start), configs.begin() + long(std::min(configs.size(), start + batch)));
    for (const records::MeasureResult& r : service->measure(task, mo, b)) errors += r.error != records::ErrorCode::kNoError;
  }
  double s = since(t0);
  std::cout << fmt::format("scale: {} ranks, {} candidates ({} errors) of {} in {:.1f} s: {:.1f} candidates/min\n",
                           cluster->size(), configs.size(), errors, task.key(), s, 60.0 * double(configs.size()) / s);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  cli::Command c;
  c.program = "";
  c.name = "scale";
  c.synopsis = "candidates compiled and measured per minute by the ranks of an MPI job";
  c.usage = "--op NAME --shape LIST [--candidates N] [--jobs J] [--calibrate] (under mpirun)";
  c.description = "Run by bench/scale.sh under mpirun with 1, 2 and 4 ranks; see docs/benchmarks.md.";
  c.options = cli::workload_options();
  std::vector<cli::Option> more = {
      {"--candidates", "N", "random configs measured (default: 24)"},
      {"--jobs", "J", "worker processes per rank (default: 1)"},
      {"--repeat", "R", "timed repeats per candidate (default: 3)"},
      {"--min-repeat-ms", "MS", "minimum duration of one timed repeat (default: 100)"},
      {"--timeout", "S", "seconds allowed to build, and to run, one candidate (default: 10)"},
      {"--seed", "N", "seed of the configs picked (default: 1)"},
      {"--calibrate", "", "time compile, run and search on this machine first and print the model"},
      {"--model-cores", "C", "cores of each machine in the model (default: 2)"},
      {"--model-trials", "T", "trials per task in the model (default: 800)"},
  };
  c.options.insert(c.options.end(), more.begin(), more.end());
  if (!tuner::distributed::launched_by_mpi()) {
    std::cerr << "scale: run me under mpirun (mpirun -np N bench/scale …; bench/scale.sh does)\n";
    return cli::kExitUsage;
  }
  tuner::distributed::ClusterOptions co;
  co.progress = &std::cerr;
  tuner::distributed::Cluster cluster(&argc, &argv, co);
  if (cluster.rank() != 0) {
    cluster.serve();
    return 0;
  }
  c.run = [&](const cli::Args& a) { return run(a, &cluster); };
  return cli::run_command(c, {argv + 1, argv + argc});
}
