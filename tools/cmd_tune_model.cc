// `loom tune-model`: tunes every task of a network (graph_opt/task_extraction.h) with the task
// scheduler (tuner/task_scheduler.h), appending every trial to one log that `loom compile`
// then reads.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>

#include "cli.h"
#include "mpi_job.h"
#include "loom/graph_opt/compile.h"
#include "loom/graph_opt/task_extraction.h"
#include "loom/loom.h"
#include "loom/tuner/features.h"
#include "loom/tuner/task_scheduler.h"
#include "model_file.h"

namespace loom::cli {
namespace {

/// DIR/STEM.latency.jsonl for the log DIR/STEM.jsonl (or DIR/STEM.EXT).
std::string latency_file_for(const std::string& log) {
  std::filesystem::path p(log);
  return (p.parent_path() / (p.stem().string() + ".latency.jsonl")).string();
}

constexpr int kNetworkRuns = 10, kNetworkWarmup = 3;

/// Milliseconds with three decimals, or four significant digits below 1 ms (a small network).
std::string ms_text(double seconds) {
  const double ms = seconds * 1e3;
  return ms >= 1 ? fmt::format("{:.3f}", ms) : fmt::format("{:.4g}", ms);
}

/// Median seconds of one run of `g` compiled for `target` with the records of `log` (and the
/// compile options tune-model tuned with), on random inputs: what `loom run` reports.
double measure_network(const graph_opt::Graph& g, const Target& target, const std::string& log,
                       graph_opt::CompileOptions opt) {
  records::ApplyHistoryBest best;
  for (const records::Record& r : records::read_log(log).records) best.add(r);
  opt.warn = nullptr;
  runtime::Module m = graph_opt::compile(g, target, &best, opt);
  std::vector<runtime::NDArray> arrays;
  std::vector<DLTensor*> args;
  uint64_t seed = 1;
  for (int n : g.input_nodes()) {
    const graph_opt::TensorType& t = g.nodes[size_t(n)].outputs[0];
    arrays.push_back(runtime::NDArray::empty(t.shape, t.dtype));
    arrays.back().fill_random(seed++);
  }
  for (graph_opt::ValueRef v : g.outputs) arrays.push_back(runtime::NDArray::empty(g.type(v).shape, g.type(v).dtype));
  for (const runtime::NDArray& x : arrays) args.push_back(x.dltensor());
  runtime::PackedFunc f = m.get_function("run");
  for (int i = 0; i < kNetworkWarmup; ++i) f.call(args);
  std::vector<double> s;
  for (int i = 0; i < kNetworkRuns; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    f.call(args);
    s.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(s.begin(), s.end());
  return 0.5 * (s[(s.size() - 1) / 2] + s[s.size() / 2]);
}

int run(const Args& a) {
  MpiJob job(a.has("--quiet"));  // under mpirun: rank 0 goes on, the other ranks have served it
  if (job.served()) return 0;
  if (a.positional().size() != 1) a.usage_error("expected one MODEL (MODEL.json or MODEL.onnx)");
  const std::string model = a.positional()[0];
  const bool list_only = a.has("--list");
  const std::string log = list_only ? a.str("--log") : a.required("--log");
  const Target target = network_target(a);
  if (a.has("--trials") && a.has("--trials-per-task")) a.usage_error("give --trials or --trials-per-task, not both");
  if (a.str("--winograd") == "auto")
    a.usage_error("--winograd auto picks between tuned records at compile time; tune with --winograd M (2..6), "
                  "then compile with --winograd auto or M");
  const graph_opt::CompileOptions copt = compile_options(a);

  tuner::TaskSchedulerOptions opt;
  opt.strategy = tuner::parse_strategy(a.choice("--strategy", "gradient", {"gradient", "round-robin"}));
  opt.round_trials = int(a.integer("--round", 0, 0, 1 << 20));
  opt.share_model = !a.has("--no-share");
  opt.tuner = a.choice("--tuner", "xgb", {"xgb", "random", "grid", "ga"});
  if (opt.tuner != "xgb" && (a.has("--transfer-from") || a.has("--features")))
    a.usage_error("--transfer-from and --features need --tuner xgb (they are the cost model's)");
  using tuner::FeatureSet;
  opt.xgb.features = tuner::parse_feature_set(
      a.choice("--features", to_string(FeatureSet::kAuto),
               {to_string(FeatureSet::kAuto), to_string(FeatureSet::kItervarKnob), to_string(FeatureSet::kItervar),
                to_string(FeatureSet::kKnob)}));
  tuner::TuneOptions& to = opt.tune;
  to.log_file = log;
  to.resume = a.has("--resume");
  for (const std::string& f : a.all("--transfer-from")) require_file("--transfer-from", f);
  to.transfer_from = a.all("--transfer-from");
  to.batch_size = int(a.integer("--batch", 0, 0, 4096));
  to.seed = uint64_t(a.integer("--seed", 0, 0));
  to.measure.timeout_s = a.number("--timeout", 10, 0.001);
  to.measure.n_parallel = int(a.integer("--jobs", 0, 0, 256));
  to.measure.repeat = int(a.integer("--repeat", 3, 1, 1000));
  to.measure.min_repeat_ms = a.number("--min-repeat-ms", 100, 0);
  to.measure.rotate_inputs = a.has("--rotate-inputs");
  to.measure.check_correctness = !a.has("--no-check");
  to.confirm_top = int(a.integer("--confirm", 3, 0, 1000));
  to.confirm_measurements = int(a.integer("--confirm-measurements", 3, 2, 1000));
  opt.progress = a.has("--quiet") ? nullptr : &std::cerr;
  opt.table_every = int(a.integer("--table-every", 10, 1, 1 << 20));
  opt.latency_file = log.empty() ? "" : a.str("--latency-file", latency_file_for(log));

  graph_opt::Graph g = load_model(a, model);
  const tuner::SearchKind search = tuner::parse_search_kind(a.choice("--search", "template", {"template", "auto", "both"}));
  graph_opt::TaskExtraction x = graph_opt::extract_tasks(g, target, copt, search);
  int auto_tasks = 0;
  for (const graph_opt::ExtractedTask& t : x.tasks) auto_tasks += t.task.is_auto();
  int kernels = 0;
  for (const graph_opt::FusedGroup& grp : x.fused.groups) kernels += !graph_opt::is_view_group(x.fused, grp);
  std::cout << fmt::format("{}: graph '{}', {} kernels (level {}), {} tuning task{} ({} auto-scheduled; --search {}) on {}\n",
                           model, g.name, kernels, copt.passes.opt_level, x.tasks.size(), x.tasks.size() == 1 ? "" : "s",
                           auto_tasks, tuner::to_string(search), target.str());
  std::cout << fmt::format("  {:>4}  {:>6}  {:>10}  {:>10}  {}\n", "task", "weight", "configs", "MFLOP", "workload");
  for (size_t i = 0; i < x.tasks.size(); ++i) {
    const graph_opt::ExtractedTask& t = x.tasks[i];
    std::cout << fmt::format("  {:>4}  {:>6}  {:>10}  {:>10.1f}  {}\n", i, t.weight, t.task.space().size(),
                             t.task.flop() / 1e6, t.task.key());
  }
  if (!x.untuned.empty()) {
    std::cout << fmt::format("{} kernel{} no task covers:\n", x.untuned.size(), x.untuned.size() == 1 ? "" : "s");
    for (const graph_opt::UntunedKernel& u : x.untuned)
      std::cout << fmt::format("  {}: {}{}\n", u.kernel, u.workload.empty() ? "" : u.workload + ": ", u.reason);
  }
  if (list_only) return 0;
  if (x.tasks.empty()) {
    std::cout << "nothing to tune: no kernel of this network has a template or an auto-scheduled task\n";
    return 0;
  }

  const int n_tasks = int(x.tasks.size());
  opt.n_trial = a.has("--trials") ? int(a.integer("--trials", 0, 0, 1 << 30))
                                  : int(std::min<int64_t>(a.integer("--trials-per-task", 64, 0, 1 << 20) * n_tasks,
                                                          1 << 30));
  std::vector<tuner::WeightedTask> tasks;
  for (const graph_opt::ExtractedTask& t : x.tasks) tasks.push_back({t.task, t.weight});
  to.service = job.service(target);
  tuner::TaskScheduler scheduler(std::move(tasks), opt);
  tuner::SchedulerSummary s = scheduler.run();

  int confirmed = 0, resumed = 0, errors = 0;
  for (const tuner::TaskProgress& t : s.tasks) confirmed += t.confirmed, resumed += t.resumed, errors += t.errors;
  if (!opt.progress) std::cout << scheduler.table();  // else the scheduler's last table is on stderr
  std::cout << fmt::format("tuned     {} trials ({} errors) in {} rounds{}{} in {} (search {}, confirm {})\n",
                           s.trials, errors, s.rounds,
                           confirmed ? fmt::format(" and {} confirming measurements", confirmed) : "",
                           resumed ? fmt::format(", {} resumed from the log", resumed) : "",
                           format_seconds(s.elapsed_s), format_seconds(s.search_s), format_seconds(s.confirm_s));
  if (std::isfinite(s.estimated_s))
    std::cout << fmt::format(
        "estimate  {} ms: Σ weight × best latency of the {} tasks' kernels, each timed alone with hot caches{};\n"
        "          the other {} kernels (no task), cold caches between kernels and the executor are not\n"
        "          counted, so `loom run` of the compiled network measures more (often much more)\n",
        ms_text(s.estimated_s), x.tasks.size(),
        search == tuner::SearchKind::kBoth ? " (with --search both a templated kernel counts in two tasks)" : "",
        x.untuned.size());
  else
    std::cout << "estimate  none: some task has no successful trial\n";
  if (a.has("--measure-network")) {
    const double measured = measure_network(g, target, log, copt);
    std::cout << fmt::format("measured  {} ms: the network compiled with this log, run end to end (median of {} "
                             "runs after {} warm-up runs, as `loom run` times it){}\n",
                             ms_text(measured), kNetworkRuns, kNetworkWarmup,
                             std::isfinite(s.estimated_s)
                                 ? fmt::format("; the estimate is {:.0f}% of it", 100 * s.estimated_s / measured)
                                 : "");
  }
  std::cout << fmt::format("log       {}\n", log);
  if (!opt.latency_file.empty()) std::cout << fmt::format("latency   {}\n", opt.latency_file);
  std::cout << fmt::format("next      loom compile {} --log {} -o MODEL.so{}{}\n", model, log,
                           copt.passes.opt_level != 3 ? fmt::format(" --opt-level {}", copt.passes.opt_level) : "",
                           copt.passes.layout.winograd_tile ? " --winograd auto" : "");
  return std::isfinite(s.estimated_s) ? 0 : kExitFailure;
}

}  // namespace

Command tune_model_command() {
  Command c;
  c.name = "tune-model";
  c.synopsis = "tune every kernel of a network (model.json or model.onnx) with a task scheduler";
  c.usage = "MODEL.json|MODEL.onnx --log FILE [--trials N | --trials-per-task N] [--resume] [options]";
  c.description =
      "Extracts the network's tuning tasks from its kernels as `loom compile` fuses and lays them\n"
      "out with the same --opt-level/--disable/--target: a kernel whose anchor has a template (conv,\n"
      "dense, matmul, softmax, …) gives that template's workload; every other fused kernel\n"
      "(layer_norm, GELU chains, transposes, reductions, pooling, …) an auto-scheduled task of its\n"
      "whole computation (docs/auto_scheduler.md), keyed on the kernel's operators and shapes.\n"
      "--search auto gives templated kernels an auto task instead of their template's, --search\n"
      "both gives them both, and `loom compile --log` then takes whichever record is faster for\n"
      "the kernel (the template's record times the bare workload, the auto one the whole kernel).\n"
      "Equal workloads are one task, weighted by the number of kernels that run it (kernels no task\n"
      "covers are listed). Then tunes them together, every trial appended to --log: first a\n"
      "round-robin warm-up (one round of --round trials per task, the task's default config\n"
      "first), then each round goes to the task where it is expected to lower the estimated\n"
      "end-to-end latency most, Σ weight × best latency per task (Ansor's task scheduler: the\n"
      "gradient mixes the task's improvement over its last 3 rounds with an optimistic guess\n"
      "bounded by the best throughput of a task of the same template), or in turn with\n"
      "--strategy round-robin. Each task is searched by the xgb tuner (cost model + simulated\n"
      "annealing) kept between its rounds; the tasks of one template share their cost model's\n"
      "training rows, so what one shape taught guides the others (--no-share: not). At the end the\n"
      "--confirm fastest configs of every task are measured again (see `loom tune --help`).\n\n"
      "Progress (stderr): a line per round with the search's ETA and, after the warm-up, every\n"
      "--table-every rounds and at the end, a table per task: weight, trials, best latency,\n"
      "GFLOP/s, share of the estimate. The confirm step, which can take a large share of the job,\n"
      "is announced with its number of measurements and their expected time (at the search's pace),\n"
      "and reports each task it confirmed with its own ETA. The estimate sums the kernels timed alone\n"
      "with hot caches: kernels no task covers, the data moving between kernels and the\n"
      "executor are not in it, so `loom run` measures the compiled network slower; --measure-network\n"
      "compiles the network with the log at the end and prints that measured latency too.\n"
      "After every round the estimate is appended to the latency file (JSON lines, default\n"
      "<log dir>/<log stem>.latency.jsonl): event, round, elapsed_s, trials, estimated_ms (null\n"
      "until every task has a result), and the task of the round. --resume reads the log first:\n"
      "configs measured already are not measured again, each task's best, trials and rounds are\n"
      "rebuilt (tasks with records skip the warm-up), and --trials counts new trials.\n\n"
      "Under mpirun with more than one rank (a loom built with MPI) rank 0 schedules, searches\n"
      "and writes the log and every rank measures, as for `loom tune` (see its --help).\n"
      "Exit status 1 when some task has no successful trial.\n\n"
      "example:\n"
      "  loom tune-model resnet18.onnx --trials-per-task 64 --log resnet18.jsonl\n"
      "  loom compile resnet18.onnx --log resnet18.jsonl -o resnet18.so";
  c.positional = "MODEL";
  c.options = {
      {"--log", "FILE", "the tuning log every trial is appended to (required, except with --list)"},
      {"--trials", "N", "new trials in all, across the tasks"},
      {"--trials-per-task", "N", "new trials in all = N × the number of tasks (default: 64)"},
      {"--round", "N", "trials a task gets each time it is chosen (default: min(8, trials / tasks))"},
      {"--strategy", "S", "gradient (default) or round-robin"},
      {"--resume", "", "continue from --log: nothing measured again, each task's state rebuilt"},
      {"--list", "", "only list the tasks and the kernels no task covers"},
      {"--target", "T", "an llvm target (default llvm: this CPU); compile with the same"},
      input_shape_option(),
      {"--search", "S", "what tunes a kernel that has a template: template (default), auto or both; kernels "
                        "without one are auto-scheduled"},
      {"--tuner", "NAME", "per-task search: xgb (default), random, grid or ga"},
      {"--features", "SET", "what the xgb model sees: auto (default), itervar+knob, itervar or knob"},
      {"--no-share", "", "each task's cost model learns from its own trials only"},
      {"--transfer-from", "FILE", "seed the cost models with another log's records", true},
      {"--timeout", "S", "seconds allowed to build, and to run, one candidate (default: 10)"},
      {"--jobs", "N", "candidates built in parallel (default: 0, one per core; under mpirun, per rank)"},
      {"--batch", "N", "candidates measured before the model learns (default 0: one per build worker)"},
      {"--seed", "N", "seed of the random choices (default: 0; task i searches with seed + i)"},
      {"--repeat", "R", "timed repeats per candidate (default: 3)"},
      {"--min-repeat-ms", "MS", "minimum duration of one timed repeat (default: 100)"},
      {"--rotate-inputs", "",
       "time each run on the next of several copies of the inputs (64 MiB in all), so that no run finds them in "
       "cache, as a network's kernels find their weights"},
      {"--confirm", "K", "at the end, measure each task's K fastest configs again (default: 3; 0: off)"},
      {"--confirm-measurements", "M", "measurements each confirmed config ends with (default: 3)"},
      {"--no-check", "", "skip comparing each candidate's output with the reference"},
      {"--latency-file", "FILE", "where the estimate is appended after every round (default: next to the log)"},
      {"--measure-network", "", "at the end, compile the network with the log and time it end to end as `loom run` "
                                "does, next to the estimate"},
      {"--table-every", "N", "rounds between progress tables (default: 10)"},
      {"--quiet", "", "no progress on stderr"},
  };
  for (const Option& o : pass_options()) c.options.push_back(o);  // compile with the same
  c.run = run;
  return c;
}

}  // namespace loom::cli
