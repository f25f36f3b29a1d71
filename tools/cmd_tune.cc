// `loom tune`: searches an operator's config space, appending every trial to a log.
#include <iostream>

#include "cli.h"
#include "mpi_job.h"
#include "loom/loom.h"
#include "loom/tuner/features.h"
#include "loom/tuner/tuner.h"

namespace loom::cli {
namespace {

int run(const Args& a) {
  MpiJob job(a.has("--quiet"));  // under mpirun: rank 0 goes on, the other ranks have served it
  if (job.served()) return 0;
  tuner::Task task = task_from(a);
  tuner::TuneOptions opt;
  opt.log_file = a.required("--log");
  opt.n_trial = int(a.integer("--trials", 200, 1, 1 << 30));
  const std::string name = a.choice("--tuner", "xgb", {"xgb", "random", "grid", "ga"});
  opt.resume = a.has("--resume");
  for (const std::string& f : a.all("--transfer-from")) require_file("--transfer-from", f);
  opt.transfer_from = a.all("--transfer-from");
  opt.batch_size = int(a.integer("--batch", 0, 0, 4096));
  opt.seed = uint64_t(a.integer("--seed", 0, 0));
  opt.early_stopping = int(a.integer("--early-stopping", -1, -1, 1 << 30));
  opt.measure.timeout_s = a.number("--timeout", 10, 0.001);
  opt.measure.n_parallel = int(a.integer("--jobs", 0, 0, 256));
  opt.measure.repeat = int(a.integer("--repeat", 3, 1, 1000));
  opt.measure.min_repeat_ms = a.number("--min-repeat-ms", 100, 0);
  opt.measure.rotate_inputs = a.has("--rotate-inputs");
  opt.measure.check_correctness = !a.has("--no-check");
  opt.confirm_top = int(a.integer("--confirm", 5, 0, 1000));
  opt.confirm_measurements = int(a.integer("--confirm-measurements", 3, 2, 1000));
  opt.progress = a.has("--quiet") ? nullptr : &std::cerr;
  if (!opt.transfer_from.empty() && name != "xgb")
    a.usage_error("--transfer-from needs --tuner xgb (only the cost model learns from other logs)");

  using tuner::FeatureSet;
  const std::string features =
      a.choice("--features", to_string(FeatureSet::kAuto),
               {to_string(FeatureSet::kAuto), to_string(FeatureSet::kItervarKnob), to_string(FeatureSet::kItervar),
                to_string(FeatureSet::kKnob)});
  if (a.has("--features") && name != "xgb") a.usage_error("--features needs --tuner xgb (the cost model's features)");
  std::unique_ptr<tuner::Tuner> t;
  if (name == "xgb") {
    tuner::XGBTunerOptions xo;
    xo.features = tuner::parse_feature_set(features);
    t = std::make_unique<tuner::XGBTuner>(task, xo);
  } else {
    t = tuner::make_tuner(name, task);
  }
  opt.service = job.service(task.target());
  // Before the log is opened: without a GPU every trial would fail, and the log stay empty.
  if (task.target().is_cuda() && !opt.service) require_gpu_workers();
  tuner::TuneSummary s = t->tune(opt);

  std::string errors;
  for (const auto& [code, n] : s.errors_by_code) errors += fmt::format("{}{} {}", errors.empty() ? "" : ", ", n, records::to_string(code));
  std::cout << fmt::format("workload  {}\ntarget    {}\n", task.key(), task.target().str());
  std::cout << fmt::format("tuner     {}: {} trials measured ({} errors{}{}){} in {}{}\n", name, s.trials, s.errors,
                           errors.empty() ? "" : ": ", errors,
                           s.confirmed ? fmt::format(" and {} confirming measurements", s.confirmed) : "",
                           format_seconds(s.elapsed_s),
                           s.resumed ? fmt::format(", {} resumed from the log", s.resumed) : "");
  if (s.trials < opt.n_trial && opt.early_stopping < 0)
    std::cout << fmt::format("          (the space has {} configs; every one is measured)\n", task.space().size());
  if (s.best) {
    std::cout << fmt::format("best      {:.2f} GFLOP/s, {:.4f} ms, config {}", s.best_gflops(),
                             s.best->result.mean_cost() * 1e3, s.best->config.index);
    const auto& m = s.best_measurements;
    if (m.size() > 1)
      std::cout << fmt::format(" (median of {} measurements, {:.2f}-{:.2f} GFLOP/s)", m.size(),
                               s.best->flop / m.back() / 1e9, s.best->flop / m.front() / 1e9);
    std::cout << '\n';
    std::cout << fmt::format("          {}\n", task.space().get(s.best->config.index).str());
  } else {
    std::cout << "best      none: no trial succeeded\n";
  }
  std::cout << fmt::format("log       {}\n", opt.log_file);
  return s.best ? 0 : kExitFailure;
}

}  // namespace

Command tune_command() {
  Command c;
  c.name = "tune";
  c.synopsis = "tune an operator: measure configs of its template or auto-scheduled space, log every trial";
  c.usage = "--op NAME (--shape LIST | --input TYPE…) --log FILE [--trials N] [--tuner xgb|random|grid|ga] [options]";
  c.description =
      "Proposes configs of the operator's search space (its schedule template's, or the\n"
      "auto-scheduler's, derived from the computation) with the chosen tuner, builds and\n"
      "times them in worker processes (checking each result against a reference) and appends\n"
      "every trial to the log as one JSON line. Progress goes to stderr (a live line on a\n"
      "terminal): trials done, best GFLOP/s, errors, elapsed time and ETA; a summary to stdout.\n"
      "On a shared machine one measurement can be a quarter off, so the search ends by measuring\n"
      "its fastest configs again (--confirm); these records carry tuner \"confirm\", and `loom\n"
      "build`, `bench` and `records best` rank a config by the median of all its records.\n"
      "Exit status 1 when no trial succeeded. Apply the log with `loom build` or `loom bench`.\n\n"
      "On several machines (a loom built with MPI): started by mpirun with more than one rank,\n"
      "rank 0 runs the search and writes the log, and every rank (rank 0 included) builds and\n"
      "measures chunks of each batch in its own worker processes. A rank whose CPU differs from\n"
      "the target's (without -mcpu: from rank 0's) says so and only compiles: candidates that\n"
      "fail to build are recorded from it, the others are measured by a matching rank. Records\n"
      "name the host that measured them. --batch defaults to the workers of all ranks; the\n"
      "configs a seeded search explores depend on --batch, not on the number of ranks. A lost\n"
      "rank ends the job (the log keeps every finished batch): rerun with --resume. Run one rank\n"
      "per machine, as ranks sharing one disturb each other's timings. Under Slurm:\n"
      "  salloc -N 8 --ntasks-per-node=1 mpirun loom tune … --log net.jsonl\n"
      "  (or in an sbatch script: `mpirun loom tune …`, which takes the hosts from the\n"
      "  allocation; or `srun --mpi=pmix loom tune …` where Slurm has PMIx)\n"
      "Without Slurm: mpirun -np 4 --host a,b,c,d loom tune …; as root add --allow-run-as-root.\n\n"
      + std::string(kWorkloadHelp) +
      "Auto-scheduled records carry their schedule steps (log schema version 2).\n\n"
      "examples:\n"
      "  loom tune --op matmul --shape 1024,1024,1024 --trials 200 --log matmul.jsonl\n"
      "  loom tune --op layer_norm --input 128,768 --input 768 --input 768 --trials 64 --log ln.jsonl\n"
      "  loom tune --op matmul --auto --input 1024,1024 --input 1024,1024 --trials 200 --log matmul.jsonl";
  c.options = workload_options();
  std::vector<Option> more = {
      {"--log", "FILE", "the tuning log records are appended to (required)"},
      {"--trials", "N", "trials to measure (default: 200; fewer when the space is smaller)"},
      {"--tuner", "NAME", "xgb (cost model + simulated annealing), random, grid or ga (default: xgb)"},
      {"--resume", "", "skip configs already in --log and learn from them first"},
      {"--features", "SET",
       fmt::format("what the xgb model sees: auto (knob for spaces of up to {} configs, itervar+knob beyond), ",
                   tuner::kAutoKnobSpace) +
           "itervar+knob (the loop IR's features and the knob values), itervar or knob (knob values only: no "
           "lowering; spaces up to 65536 configs ranked whole) (default: auto)"},
      {"--transfer-from", "FILE", "seed the xgb cost model with another log's records", true},
      {"--timeout", "S", "seconds allowed to build, and to run, one candidate (default: 10)"},
      {"--jobs", "N", "candidates built in parallel (default: 0, one per core; under mpirun, per rank)"},
      {"--seed", "N", "seed of the tuner's random choices (default: 0)"},
      {"--batch", "N",
       "candidates proposed and measured before the tuner learns from them (default 0: one per build worker, "
       "i.e. --jobs; under mpirun, the workers of all ranks)"},
      {"--repeat", "R", "timed repeats per candidate (default: 3)"},
      {"--min-repeat-ms", "MS", "minimum duration of one timed repeat (default: 100)"},
      {"--rotate-inputs", "",
       "time each run on the next of several copies of the inputs (64 MiB in all), so that no run finds them in "
       "cache, as a network's kernels find their weights"},
      {"--early-stopping", "N", "stop after N trials without improvement (default: never)"},
      {"--confirm", "K",
       "at the end, measure the K fastest configs again, round-robin, until each has "
       "--confirm-measurements records; the best is the config with the fastest median (default: 5; 0: off)"},
      {"--confirm-measurements", "M", "measurements each confirmed config ends with (default: 3)"},
      {"--no-check", "", "skip comparing each candidate's output with the reference"},
      {"--quiet", "", "no progress on stderr"},
  };
  c.options.insert(c.options.end(), more.begin(), more.end());
  c.run = run;
  return c;
}

}  // namespace loom::cli
