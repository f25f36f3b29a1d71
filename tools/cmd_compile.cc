// `loom compile`: a network (a model file) to one self-contained library, printing the fused
// kernels with how each was scheduled, the memory plan, and a warning per untuned workload.
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <set>
#include <sstream>

#include "cli.h"
#include "model_file.h"
#include "loom/graph_opt/compile.h"
#include "loom/graph_opt/serialize.h"
#include "loom/loom.h"

namespace loom::cli {
namespace {

std::string mib(double bytes) { return fmt::format("{:.2f} MiB", bytes / double(1 << 20)); }

int run(const Args& a) {
  if (a.positional().size() != 1)
    a.usage_error("expected one MODEL (a model file MODEL.json, docs/graph.md, or an ONNX model MODEL.onnx)");
  const std::string model = a.positional()[0];
  require_file("", model);
  const std::string out = a.required("--output");
  if (std::filesystem::is_directory(out)) a.usage_error("--output: '{}' is a directory; name the library to write", out);
  const std::vector<std::string> logs = a.all("--log");
  for (const std::string& f : logs) require_file("--log", f);
  const Target target = network_target(a);
  graph_opt::CompileOptions opt = compile_options(a);
  opt.warn = &std::cerr;

  graph_opt::Graph g = load_model(a, model);
  std::cout << fmt::format("{}: graph '{}', {} operators, {} input{}, {} output{}\n", model, g.name, g.num_ops(),
                           g.input_nodes().size(), g.input_nodes().size() == 1 ? "" : "s", g.outputs.size(),
                           g.outputs.size() == 1 ? "" : "s");
  auto best = std::make_shared<records::ApplyHistoryBest>();
  for (const std::string& f : logs)
    for (const records::Record& r : records::read_log(f, &std::cerr).records) best->add(r);
  if (a.str("--winograd") == "auto") {
    if (logs.empty()) a.usage_error("--winograd auto compares tuning records: give --log");
    opt.passes.layout.choose_winograd = graph_opt::winograd_if_faster(best, target);
  }

  graph_opt::CompileReport report;
  runtime::Module m = graph_opt::compile(g, target, logs.empty() ? nullptr : best.get(), opt, &report);

  int tuned = 0, templated = 0, automatic = 0;
  std::cout << fmt::format("{} kernels (level {}; {} distinct functions), in execution order:\n", report.kernels.size(),
                           opt.passes.opt_level, report.functions);
  std::cout << fmt::format("  {:>3}  {:<36} {:<32} {}\n", "#", "kernel", "operators", "schedule");
  for (size_t k = 0; k < report.kernels.size(); ++k) {
    const auto& kern = report.kernels[k];
    std::cout << fmt::format("  {:>3}  {:<36} {:<32} {}\n", k, kern.name, kern.ops, kern.schedule);
    templated += kern.source == "tuned" || kern.source == "default";
    tuned += kern.source == "tuned";
    automatic += kern.source == "auto";
  }
  std::cout << fmt::format("templates: {} kernels ({} tuned from the log{}, {} on the default config); "
                           "auto-scheduled from the log: {}; patterns: {}\n",
                           templated, tuned, logs.empty() ? ": none given" : "", templated - tuned, automatic,
                           report.kernels.size() - size_t(templated + automatic));
  std::cout << "memory: " << report.memory.summary() << "\n";
  if (a.has("--require-tuned") && tuned < templated) {
    std::string missing;
    for (size_t k = 0; k < report.kernels.size(); ++k) {
      const auto& kern = report.kernels[k];
      if (kern.source == "default") missing += fmt::format("\n  {:>3}  {}: {}", k, kern.name, kern.workload);
    }
    fail("--require-tuned: {} of the {} template kernels have no tuning record on {} {}, so nothing was written; "
         "tune them with `loom tune-model {} --log FILE` (same --target and pass options):{}",
         templated - tuned, templated, target.str(),
         logs.empty() ? "(no --log given)" : fmt::format("in {}", fmt::join(logs, ", ")), model, missing);
  }
  std::filesystem::path p(out);
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path());
  m.export_library(out);
  std::filesystem::path header = p.extension() == ".so" ? std::filesystem::path(p).replace_extension(".h")
                                                        : std::filesystem::path(out + ".h");
  std::cout << fmt::format("wrote {} ({} with the weights embedded) and {}\n", out,
                           mib(double(std::filesystem::file_size(out))), header.string());
  return 0;
}

}  // namespace

Command compile_command() {
  Command c;
  c.name = "compile";
  c.synopsis = "compile a network (model.json or model.onnx) into one self-contained library";
  c.usage = "MODEL.json|MODEL.onnx -o MODEL.so [--log FILE ...] [--require-tuned] [--target T] [--opt-level N] [--disable PASS ...] [--winograd M|auto]";
  c.description =
      "Reads a model file (docs/graph.md) or an ONNX model (docs/onnx.md), optimizes and fuses it\n"
      "(--opt-level, default 3: folding, fusion, channel-blocked layouts), plans its memory,\n"
      "schedules every fused kernel (its anchor's template with the best config of the --log files,\n"
      "or the template's default with a warning per untuned workload, an error listing them with\n"
      "--require-tuned; the kernel's auto-scheduled record where the logs have one, taken over the\n"
      "template's record when its mean cost is lower; else a schedule from the kernel's pattern,\n"
      "which needs no record) and writes one library with the weights embedded and its\n"
      "C header (docs/deploy.md). Prints the kernels with how each was scheduled and the memory\n"
      "plan; `loom run` runs the library. `loom tune-model` writes a log for the same network and\n"
      "options.\n\n"
      "example:\n"
      "  loom tune-model resnet18.onnx --trials-per-task 64 --log resnet18.jsonl\n"
      "  loom compile resnet18.onnx --log resnet18.jsonl -o resnet18.so\n"
      "  loom run resnet18.so --repeat 50";
  c.positional = "MODEL";
  c.options = {
      {"--output", "FILE.so", "the library to write (its header goes next to it)", false, "-o"},
      {"--log", "FILE", "a tuning log to take configs from", true},
      {"--require-tuned", "", "fail (exit 1, nothing written) when some template kernel has no record in the "
                              "logs, listing each such kernel"},
      {"--target", "T", "an llvm target (default llvm: this CPU)"},
      input_shape_option(),
  };
  for (const Option& o : pass_options()) c.options.push_back(o);
  c.run = run;
  return c;
}

}  // namespace loom::cli
