// The `loom` command line: dispatches to the subcommands of tools/cmd_*.cc.
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "cli.h"
#include "loom/runtime/suggest.h"
#include "peers.h"

namespace {

using loom::cli::Command;

std::vector<Command> commands() {
  using namespace loom::cli;
  return {tune_command(),    build_command(),     bench_command(),   show_command(),
          compile_command(), tune_model_command(), run_model_command(), records_command(),
          ops_command(),     lower_command(),      import_command()};
}

void print_usage(std::ostream& os, const std::vector<Command>& cmds) {
  os << "loom: a schedule-based tensor operator compiler\n\n"
        "usage: loom <command> [options]\n\ncommands:\n";
  for (const Command& c : cmds) os << fmt::format("  {:<10} {}\n", c.name, c.synopsis);
  os << "  help       this text; `loom help CMD` is `loom CMD --help`\n\n"
        "A typical session:\n"
        "  loom tune  --op matmul --shape 1024,1024,1024 --trials 200 --log matmul.jsonl\n"
        "  loom build --op matmul --shape 1024,1024,1024 --log matmul.jsonl -o libmatmul.so\n"
        "  loom bench --op matmul --shape 1024,1024,1024 --log matmul.jsonl --so libmatmul.so\n"
        "and for a network:\n"
        "  loom tune-model resnet18.onnx --trials-per-task 64 --log resnet18.jsonl\n"
        "  loom compile resnet18.onnx --log resnet18.jsonl -o resnet18.so\n"
        "  loom run resnet18.so --input image.npy --repeat 50\n\n"
        "Run `loom <command> --help` for the options of one command.\n";
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<Command> cmds = commands();
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    print_usage(std::cerr, cmds);
    return loom::cli::kExitUsage;
  }
  std::string name = args[0];
#ifdef LOOM_CLI_HAVE_DNNL
  // oneDNN's OpenMP threads spin-wait by default, which starves them on a busy machine
  // (a 0.3 ms convolution takes 36 ms). OpenMP reads its settings when it is loaded, before
  // main, so `loom bench` re-executes itself once with the passive policy.
  if (name == "bench" && !std::getenv("OMP_WAIT_POLICY")) {
    ::setenv("OMP_WAIT_POLICY", "passive", 1);
    ::execv("/proc/self/exe", argv);  // returns only on failure: carry on as we are
  }
#endif
  if (name == "bench") loom::cli::openblas_native_kernels(argv);
  if (name == "help" || name == "--help" || name == "-h") {
    if (args.size() > 1) {
      name = args[1];
      args = {name, "--help"};
    } else {
      print_usage(std::cout, cmds);
      return 0;
    }
  }
  loom::cli::check_config_indices();
  for (const Command& c : cmds) {
    if (c.name == name) return loom::cli::run_command(c, {args.begin() + 1, args.end()});
  }
  std::vector<std::string> names = {"help"};
  for (const Command& c : cmds) names.push_back(c.name);
  const std::string hint = loom::did_you_mean(name, names);
  std::cerr << "loom: unknown command '" << name << "'" << (hint.empty() ? "" : "; " + hint) << "\n\n";
  print_usage(std::cerr, cmds);
  return loom::cli::kExitUsage;
}
