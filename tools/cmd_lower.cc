// `loom lower`: the lowered loop IR of a te::ops example with its default schedule.
#include <iostream>

#include "cli.h"
#include "loom/codegen/check_target.h"
#include "loom/loom.h"
#include "loom/runtime/suggest.h"

namespace loom::cli {
namespace {

std::vector<te::Tensor> make_op(const Args& a, const std::string& name, const std::string& shape) {
  if (name == "matmul" && !shape.empty()) {
    auto d = parse_int_list("--shape", shape);
    if (d.size() != 3) a.usage_error("--shape: matmul takes M,N,K; got '{}'", shape);
    auto A = te::placeholder({d[0], d[2]}, DataType::Float(32), "A");
    auto B = te::placeholder({d[2], d[1]}, DataType::Float(32), "B");
    return {A, B, te::ops::matmul(A, B)};
  }
  if (!shape.empty()) a.usage_error("--shape is only supported for matmul (other examples have fixed shapes)");
  std::string known;
  std::vector<std::string> names;
  for (const auto& c : te::ops::test_cases()) {
    if (c.name == name) return c.make();
    known += " " + c.name;
    names.push_back(c.name);
  }
  const std::string hint = did_you_mean(name, names);
  a.usage_error("--op: unknown operator '{}'; {}known:{}", name, hint.empty() ? "" : hint + " ", known);
}

int run(const Args& a) {
  const std::string op = a.required("--op");
  std::vector<te::Tensor> args = make_op(a, op, a.str("--shape"));
  std::vector<te::Operation> outs;
  for (const auto& t : args) {
    if (t.op()->kind != te::OpKind::kPlaceholder) outs.push_back(t.op());
  }
  Schedule s = create_schedule(outs);
  lowering::LowerOptions opts;
  try {
    opts.target = Target(a.str("--target", "llvm"));
    codegen::check_target(opts.target);
  } catch (const Error& e) {
    a.usage_error("--target: {}", e.what());
  }
  const bool all = a.has("--print-after-all");
  if (all) opts.print_after_all = &std::cout;
  lowering::VectorizationReport report;
  const bool vector_report = a.has("--vector-report");
  if (vector_report) {
    if (opts.target.is_cuda()) a.usage_error("--vector-report: describes CPU code; target '{}' is a GPU", opts.target.str());
    opts.vector_report = &report;
  }
  auto f = lowering::lower(s, args, op, opts);
  if (vector_report) std::cout << report.to_string();
  else if (!all) std::cout << f << "\n";
  return 0;
}

}  // namespace

Command lower_command() {
  Command c;
  c.name = "lower";
  c.synopsis = "print the lowered loop IR of a te::ops example with its default schedule";
  c.usage = "--op NAME [--shape M,N,K] [--print-after-all] [--vector-report] [--target T]";
  c.description =
      "The operators are the te::ops examples (`loom ops --te` lists them), unscheduled. For the\n"
      "IR of a tuned config, see `loom show`.\n"
      "--vector-report prints, instead of the IR, every vector load/store that is not dense\n"
      "(gather, scatter, strided, predicated) and every vector operation computed lane by lane\n"
      "(scalarized), one row each: the stage (the buffer its store writes), the buffer, the\n"
      "kind, load/store, lanes, how many identical copies, how the code generator emits it and\n"
      "the index. Unscheduled examples have no vector code; `loom show --vector-report` reports\n"
      "a template's config. docs/architecture.md says how to read it.";
  c.options = {
      {"--op", "NAME", "the example to lower (loom ops --te lists them)"},
      {"--shape", "M,N,K", "matmul only: the problem size (default: the example's)"},
      {"--print-after-all", "", "print the IR after every pass of the pipeline"},
      {"--vector-report", "", "print the vectorization report instead of the IR (CPU targets)"},
      {"--target", "T", "e.g. \"llvm\", \"llvm -mcpu=x86-64-v3\" (default: llvm)"},
  };
  c.run = run;
  return c;
}

}  // namespace loom::cli
