// `loom ops`: the tunable operator templates (or, with --te, the te::ops examples).
#include <iostream>

#include "cli.h"
#include "loom/loom.h"

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

int run(const Args& a) {
  if (a.has("--te")) return list_te_examples();
  for (const std::string& name : tuner::template_names()) {
    const tuner::Template& t = tuner::get_template(name);
    std::cout << fmt::format("{}  --shape {}  [{}]\n    {}\n", t.name, t.shape_doc, fmt::join(t.targets, ", "), t.doc);
  }
  return 0;
}

}  // namespace

Command ops_command() {
  Command c;
  c.name = "ops";
  c.synopsis = "list the operator templates that tune, build, bench and show accept";
  c.usage = "[--te]";
  c.description =
      "Each template is listed with the order of its --shape sizes, the targets it supports and\n"
      "what it computes. With --te, lists instead the te::ops examples that `loom lower --op`\n"
      "accepts, with their tensors' shapes.";
  c.options = {{"--te", "", "list the te::ops examples (for loom lower) instead"}};
  c.run = run;
  return c;
}

}  // namespace loom::cli
