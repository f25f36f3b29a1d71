// `loom show`: the best tuned config of a workload, its knob values and its lowered IR.
#include <iostream>

#include "cli.h"
#include "loom/loom.h"

namespace loom::cli {
namespace {

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
  tuner::ConfigEntity e = task.space().get(c.index);
  std::cout << fmt::format("// {} on {}: ", task.key(), task.target().str());
  if (c.record) {
    std::cout << fmt::format("best record, config {} of {}, {:.2f} GFLOP/s ({:.4f} ms, tuner {})\n", c.index,
                             task.space().size(), c.record->gflops(), c.record->result.mean_cost() * 1e3,
                             c.record->tuner);
  } else if (a.has("--config")) {
    std::cout << fmt::format("config {} of {}\n", c.index, task.space().size());
  } else {
    std::cout << fmt::format("default config {} of {} (untuned)\n", c.index, task.space().size());
  }
  std::cout << "// knobs:\n";
  for (const tuner::Knob& k : task.space().knobs()) {
    std::string label = e.label(k.name);
    std::string value = !label.empty() ? label : fmt::format("[{}]", fmt::join(e.value(k.name), ", "));
    std::cout << fmt::format("//   {:<16} {}\n", k.name, value);
  }
  lowering::LowerOptions opts;
  opts.target = task.target();
  lowering::VectorizationReport report;
  if (vector_report) opts.vector_report = &report;
  auto f = lowering::lower(c.instance.schedule, c.instance.args, task.workload().op, opts);
  if (vector_report) std::cout << report.to_string();
  else std::cout << f << "\n";
  return 0;
}

}  // namespace

Command show_command() {
  Command c;
  c.name = "show";
  c.synopsis = "print the best tuned config of a workload: its knob values and lowered IR";
  c.usage = "--op NAME --shape LIST --log FILE [--target T] [--config N] [--vector-report]";
  c.description =
      "Picks the config `loom build` would (the best valid record in the log(s), or the default\n"
      "with a warning when there is none) and prints its knob values and the loop IR it lowers to.\n"
      "--config N shows config N of the space instead. --vector-report prints, instead of the IR,\n"
      "the config's vector accesses that are not dense and its vector operations computed lane by\n"
      "lane (as `loom lower --vector-report`).";
  c.options = workload_options();
  std::vector<Option> more = {
      {"--log", "FILE", "tuning log(s) to take the best record from", true},
      {"--config", "N", "show this config index instead of the best record"},
      {"--vector-report", "", "print the vectorization report instead of the IR (CPU targets)"},
  };
  c.options.insert(c.options.end(), more.begin(), more.end());
  c.run = run;
  return c;
}

}  // namespace loom::cli
