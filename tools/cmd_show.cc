// `loom show`: the best tuned config of a workload, its knob values and its lowered IR.
#include <iostream>

#include "cli.h"
#include "loom/codegen/cuda.h"
#include "loom/loom.h"
#include "loom/schedule/trace.h"

namespace loom::cli {
namespace {

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) s.replace(p, from.size(), to);
  return s;
}

int run(const Args& a) {
  tuner::Task task = task_from(a);
  const bool vector_report = a.has("--vector-report");
  if (vector_report && task.target().is_cuda())
    a.usage_error("--vector-report: describes CPU code; target '{}' is a GPU", task.target().str());
  const std::vector<std::string> logs = a.all("--log");
  for (const std::string& f : logs) require_file("--log", f);
  Chosen c;
  if (a.has("--config")) {
    c.index = a.integer("--config", 0, 0, task.space().size() - 1);
    c.instance = task.instantiate(c.index);
  } else {
    c = choose_config(task, logs, &std::cerr);
  }
  std::cout << fmt::format("// {} on {}: ", task.key(), task.target().str());
  if (c.record) {
    std::cout << fmt::format("best record, config {} of {}, {:.2f} GFLOP/s ({:.4f} ms, tuner {})\n", c.index,
                             task.space().size(), c.record->gflops(), c.record->result.mean_cost() * 1e3,
                             c.record->tuner);
    if (c.how.find("steps") != std::string::npos) std::cout << "// applied: " << c.how << "\n";
  } else if (a.has("--config")) {
    std::cout << fmt::format("config {} of {}\n", c.index, task.space().size());
  } else {
    std::cout << fmt::format("default config {} of {} (untuned)\n", c.index, task.space().size());
  }
  std::cout << "// " << replace_all(task.search_space().describe(), "\n", "\n//   ") << "\n";
  if (c.how.find("steps") == std::string::npos) {
    tuner::ConfigEntity e = task.space().get(c.index);
    std::cout << "// knobs:\n";
    for (const tuner::Knob& k : task.space().knobs()) {
      std::string label = e.label(k.name);
      std::string value = !label.empty() ? label : fmt::format("[{}]", fmt::join(e.value(k.name), ", "));
      std::cout << fmt::format("//   {:<16} {}\n", k.name, value);
    }
  }
  if (task.is_auto() || a.has("--steps")) {
    std::cout << "// steps:\n";
    for (const schedule::Step& st : schedule::trace(c.instance.schedule))
      std::cout << "//   " << schedule::to_string(st) << "\n";
  }
  lowering::LowerOptions opts;
  opts.target = task.target();
  lowering::VectorizationReport report;
  if (vector_report) opts.vector_report = &report;
  auto f = lowering::lower(c.instance.schedule, c.instance.args, function_name(task), opts);
  if (vector_report) std::cout << report.to_string();
  else std::cout << f << "\n";
  if (task.target().is_cuda() && !vector_report) std::cout << "// CUDA C of its kernels\n" << codegen::cuda_source(f);
  return 0;
}

}  // namespace

Command show_command() {
  Command c;
  c.name = "show";
  c.synopsis = "print the best tuned config of a workload: its knob values, steps and lowered IR";
  c.usage = "--op NAME (--shape LIST | --input TYPE…) --log FILE [--target T] [--config N] [--steps] [--vector-report]";
  c.description =
      "Picks the config `loom build` would (the best valid record in the log(s), or the default\n"
      "with a warning when there is none) and prints how the search space schedules the\n"
      "computation, the config's knob values, its schedule steps (auto-scheduled tasks, or\n"
      "--steps; a record whose config no longer fits the space is replayed from its steps) and\n"
      "the loop IR it lowers to (and, for target cuda, the CUDA C of its kernels).\n"
      "--config N shows config N of the space instead. --vector-report prints, instead of the IR,\n"
      "the config's vector accesses that are not dense and its vector operations computed lane by\n"
      "lane (as `loom lower --vector-report`).\n\n" + std::string(kWorkloadHelp) +
      "\nexample:\n  loom show --op layer_norm --input 128,768 --input 768 --input 768 --log ln.jsonl";
  c.options = workload_options();
  std::vector<Option> more = {
      {"--log", "FILE", "tuning log(s) to take the best record from", true},
      {"--config", "N", "show this config index instead of the best record"},
      {"--steps", "", "print the schedule steps of a template's config too (auto-scheduled configs always)"},
      {"--vector-report", "", "print the vectorization report instead of the IR (CPU targets)"},
  };
  c.options.insert(c.options.end(), more.begin(), more.end());
  c.run = run;
  return c;
}

}  // namespace loom::cli
