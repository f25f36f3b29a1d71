// `loom ops`: the tunable operator templates (or, with --te, the te::ops examples).
#include <iostream>

#include "cli.h"
#include "loom/loom.h"
#include "loom/te/op_registry.h"

namespace loom::cli {
namespace {

int list_te_examples() {
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

int list_graph_ops() {
  for (const std::string& name : te::ops::op_names()) {
    const te::ops::OpDef& d = te::ops::get_op(name);
    std::vector<std::string> attrs, targets;
    for (const auto& at : d.attrs)
      attrs.push_back(at.default_value ? fmt::format("{}={}", at.name, te::ops::to_string(*at.default_value)) : at.name);
    for (const auto& [kind, f] : d.strategy) targets.push_back(kind);
    std::string inputs = fmt::format("{}", fmt::join(d.inputs, ", "));
    if (d.min_inputs < d.inputs.size() && !d.inputs.back().ends_with("..."))
      inputs = fmt::format("{} [{}]",
                           fmt::join(std::vector<std::string>(d.inputs.begin(), d.inputs.begin() + long(d.min_inputs)), ", "),
                           fmt::join(std::vector<std::string>(d.inputs.begin() + long(d.min_inputs), d.inputs.end()), ", "));
    std::cout << fmt::format("{}({})  {}{}{}\n    {}\n", name, inputs, te::ops::to_string(d.pattern),
                             attrs.empty() ? "" : fmt::format("  {}", fmt::join(attrs, " ")),
                             targets.empty() ? "" : fmt::format("  templates on: {}", fmt::join(targets, ", ")), d.doc);
  }
  return 0;
}

int run(const Args& a) {
  if (a.has("--te")) return list_te_examples();
  if (a.has("--graph")) return list_graph_ops();
  for (const tuner::Template* t : tuner::templates()) {
    std::string aliases = t->aliases.empty() ? "" : fmt::format(" (also {})", fmt::join(t->aliases, ", "));
    std::cout << fmt::format("{}{}  --shape {}  [{}]{}\n    {}\n", t->name, aliases, t->shape_doc,
                             fmt::join(t->targets, ", "), t->schedule_epilogue ? "  fuses epilogues" : "", t->doc);
  }
  std::cout << fmt::format("and {} registry operators (loom ops --graph), auto-scheduled on the CPU where they have no "
                           "template (or with --auto): --op NAME --input TYPE …\n",
                           te::ops::op_names().size());
  return 0;
}

}  // namespace

Command ops_command() {
  Command c;
  c.name = "ops";
  c.synopsis = "list the operator templates that tune, build, bench and show accept";
  c.usage = "[--te | --graph]";
  c.description =
      "Each template is listed with the order of its --shape sizes, the targets it supports and\n"
      "what it computes (one op name may have a template per target: `--op matmul --target cuda`\n"
      "picks the GPU one). With --te, lists instead the te::ops examples that `loom lower --op`\n"
      "accepts, with their tensors' shapes; with --graph, the operator registry that graphs are\n"
      "built from: inputs ([optional]), fusion pattern, attributes (=default) and the targets\n"
      "with a template. Every registry operator tunes, builds, benches and shows: by its\n"
      "template where it has one, else auto-scheduled (loom tune --help).";
  c.options = {{"--te", "", "list the te::ops examples (for loom lower) instead"},
               {"--graph", "", "list the graph operators of the registry instead"}};
  c.run = run;
  return c;
}

}  // namespace loom::cli
