// The `loom` command line.
#include <cstring>
#include <iostream>
#include <sstream>

#include "loom/loom.h"

namespace {

using namespace loom;

const char* kUsage = R"(loom: a schedule-based tensor operator compiler

usage: loom <command> [options]

commands:
  ops                     list the operators loom can lower by name, with their example shapes
  lower --op NAME         print the lowered loop IR of an operator with its default schedule
        [--shape M,N,K]   matmul only: the problem size (default: the example shape)
        [--print-after-all]  print the IR after every pass of the pipeline
        [--target T]      e.g. "llvm", "llvm -mcpu=x86-64-v3" (default: llvm)
  help                    this text

Run `loom <command> --help` for the options of one command.
)";

std::vector<int64_t> parse_shape(const std::string& s) {
  std::vector<int64_t> out;
  std::stringstream ss(s);
  std::string part;
  while (std::getline(ss, part, ',')) {
    char* end = nullptr;
    long long v = std::strtoll(part.c_str(), &end, 10);
    if (part.empty() || *end != '\0' || v <= 0) fail("--shape: '{}' is not a list of positive integers", s);
    out.push_back(v);
  }
  return out;
}

std::vector<te::Tensor> make_op(const std::string& name, const std::string& shape) {
  if (name == "matmul" && !shape.empty()) {
    auto d = parse_shape(shape);
    LOOM_CHECK(d.size() == 3, "--shape for matmul is M,N,K; got '{}'", shape);
    auto A = te::placeholder({int64_t(d[0]), int64_t(d[2])}, DataType::Float(32), "A");
    auto B = te::placeholder({int64_t(d[2]), int64_t(d[1])}, DataType::Float(32), "B");
    return {A, B, te::ops::matmul(A, B)};
  }
  LOOM_CHECK(shape.empty(), "--shape is only supported for matmul so far");
  std::string known;
  for (const auto& c : te::ops::test_cases()) {
    if (c.name == name) return c.make();
    known += " " + c.name;
  }
  fail("unknown operator '{}'; known:{}", name, known);
}

int cmd_ops() {
  for (const auto& c : te::ops::test_cases()) {
    std::cout << c.name << ":";
    for (const auto& t : c.make()) {
      std::cout << " " << t.name() << "[";
      for (size_t i = 0; i < t.ndim(); ++i) std::cout << (i ? "," : "") << t.shape()[i];
      std::cout << "]";
    }
    std::cout << "\n";
  }
  return 0;
}

int cmd_lower(int argc, char** argv) {
  std::string op, shape, target = "llvm";
  bool all = false;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      LOOM_CHECK(i + 1 < argc, "{} needs a value", a);
      return argv[++i];
    };
    if (a == "--op") op = value();
    else if (a == "--shape") shape = value();
    else if (a == "--target") target = value();
    else if (a == "--print-after-all") all = true;
    else if (a == "--help" || a == "-h") { std::cout << kUsage; return 0; }
    else fail("lower: unknown option '{}' (see loom --help)", a);
  }
  LOOM_CHECK(!op.empty(), "lower: --op NAME is required (loom ops lists them)");
  std::vector<te::Tensor> args = make_op(op, shape);
  std::vector<te::Operation> outs;
  for (const auto& t : args) {
    if (t.op()->kind != te::OpKind::kPlaceholder) outs.push_back(t.op());
  }
  Schedule s = create_schedule(outs);
  lower::LowerOptions opts;
  opts.target = Target(target);
  if (all) opts.print_after_all = &std::cout;
  auto f = lower::lower(s, args, op, opts);
  if (!all) std::cout << f << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc < 2 || !std::strcmp(argv[1], "help") || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
      std::cout << kUsage;
      return argc < 2 ? 2 : 0;
    }
    std::string cmd = argv[1];
    if (cmd == "ops") return cmd_ops();
    if (cmd == "lower") return cmd_lower(argc - 2, argv + 2);
    std::cerr << "loom: unknown command '" << cmd << "'\n\n" << kUsage;
    return 2;
  } catch (const Error& e) {
    std::cerr << "loom: error: " << e.what() << "\n";
    return 1;
  }
}
