// `loom build`: compiles an operator with its best tuned config and exports a shared library.
#include <filesystem>
#include <iostream>
#include <sstream>

#include "cli.h"
#include "loom/codegen/build.h"
#include "loom/loom.h"
#include "loom/tuner/build_best.h"

namespace loom::cli {
namespace {

int run(const Args& a) {
  tuner::Task task = task_from(a);
  const std::string out = a.required("--output");
  if (std::filesystem::is_directory(out)) a.usage_error("--output: '{}' is a directory; name the library to write", out);
  const std::vector<std::string> logs = a.all("--log");
  for (const std::string& f : logs) require_file("--log", f);
  const std::string name = a.str("--name", function_name(task));
  if (std::string why = codegen::export_name_problem(name); !why.empty()) a.usage_error("--name: {}", why);

  records::ApplyHistoryBest best;
  for (const std::string& f : logs) {
    for (const records::Record& r : records::read_log(f, &std::cerr).records) best.add(r);
  }
  std::optional<records::Record> rec = tuner::best_record(task, best);
  if (!rec && a.has("--require-tuned"))
    fail("no tuning record for {} on {} {} (--require-tuned: nothing was written)", task.key(), task.target().str(),
         logs.empty() ? "(no --log given)" : fmt::format("in {}", fmt::join(logs, ", ")));
  std::ostringstream fallback;
  runtime::Module m = tuner::build_best(task, best, &fallback, name, a.has("--check-bounds"));
  if (!fallback.str().empty()) std::cerr << "warning: " << fallback.str();
  std::filesystem::path p(out);
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path());
  m.export_library(out);
  std::filesystem::path header = p.extension() == ".so" ? std::filesystem::path(p).replace_extension(".h")
                                                        : std::filesystem::path(out + ".h");
  std::cout << fmt::format("wrote {} and {}: {}(", out, header.string(), name);
  bool first = true;
  for (const te::Tensor& t : task.instantiate_default().args) {
    std::cout << (first ? "" : ", ") << "DLTensor* " << t.name();
    first = false;
  }
  std::cout << ")\n";
  if (rec) {
    std::string how;
    tuner::instantiate_record(task, *rec, &how);
    std::string knobs = how.find("steps") != std::string::npos ? how : tuner::record_config(task, *rec).str();
    std::cout << fmt::format("config {} from {}: {:.2f} GFLOP/s when tuned ({})\n", rec->config.index,
                             fmt::join(logs, ", "), rec->gflops(), knobs);
  } else {
    std::cout << fmt::format("config {}: the {}'s default (untuned)\n", task.default_index(),
                             task.is_auto() ? "auto-scheduler" : "template");
  }
  return 0;
}

}  // namespace

Command build_command() {
  Command c;
  c.name = "build";
  c.synopsis = "compile an operator with its best tuned config into a shared library";
  c.usage = "--op NAME (--shape LIST | --input TYPE…) --log FILE -o LIB.so [--target T] [--name NAME] [--check-bounds] "
            "[--require-tuned]";
  c.description =
      "Picks the best config of the operator's workload and target in the log(s), by the median\n"
      "of its records (records of a compatible target stand in when none matches exactly),\n"
      "compiles it and exports a self-contained shared library plus its C header (LIB.h next to\n"
      "LIB.so). With no matching record it warns and builds the template's default config, or,\n"
      "with --require-tuned, fails (exit status 1) and writes nothing. Load the library with\n"
      "dlopen or runtime::Module::load; `loom bench --so LIB.so` times it.\n\n" + std::string(kWorkloadHelp) +
      "\nexample:\n"
      "  loom build --op matmul --shape 1024,1024,1024 --log matmul.jsonl -o libmatmul.so";
  c.options = workload_options();
  std::vector<Option> more = {
      {"--log", "FILE", "tuning log(s) to take the best record from", true},
      {"--output", "LIB.so", "the library to write (required); the header goes next to it", false, "-o"},
      {"--name", "NAME", "the exported function's name (default: the operator's): a C identifier, not loom_*, __* "
                         "or a C library function"},
      {"--check-bounds", "", "check every tensor access and integer division at run time (slower; a failed check "
                             "returns an error naming the tensor)"},
      {"--require-tuned", "", "fail (exit 1, nothing written) when the logs have no record for the workload, "
                              "instead of building the default config"},
  };
  c.options.insert(c.options.end(), more.begin(), more.end());
  c.run = run;
  return c;
}

}  // namespace loom::cli
