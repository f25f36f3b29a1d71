// Option parsing, help text and the shared workload options of the `loom` command line.
#include "cli.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "loom/codegen/check_target.h"
#include "loom/loom.h"
#include "loom/runtime/cuda.h"
#include "loom/runtime/suggest.h"
#include "loom/te/op_registry.h"
#include "loom/tuner/auto/workload.h"
#include "loom/tuner/build_best.h"
#include "loom/tuner/measure.h"

namespace loom::cli {

// ------------------------------------------------------------------ Args

std::string Args::str(const std::string& name, const std::string& def) const {
  auto it = values_.find(name);
  return it == values_.end() ? def : it->second.back();
}

std::string Args::required(const std::string& name) const {
  if (!has(name)) {
    for (const Option& o : cmd_->options) {
      if (o.name == name) usage_error("{}{} {} is required", o.alias.empty() ? "" : o.alias + "/", name, o.value);
    }
    usage_error("{} is required", name);
  }
  return str(name);
}

std::vector<std::string> Args::all(const std::string& name) const {
  auto it = values_.find(name);
  return it == values_.end() ? std::vector<std::string>{} : it->second;
}

int64_t Args::integer(const std::string& name, int64_t def, int64_t lo, int64_t hi) const {
  if (!has(name)) return def;
  std::string v = str(name);
  char* end = nullptr;
  errno = 0;
  long long x = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || errno == ERANGE) usage_error("{}: expected an integer, got '{}'", name, v);
  if (x < lo || x > hi) {
    if (hi == INT64_MAX) usage_error("{}: must be at least {}, got {}", name, lo, x);
    usage_error("{}: must be between {} and {}, got {}", name, lo, hi, x);
  }
  return x;
}

double Args::number(const std::string& name, double def, double lo) const {
  if (!has(name)) return def;
  std::string v = str(name);
  char* end = nullptr;
  double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || !std::isfinite(x)) usage_error("{}: expected a number, got '{}'", name, v);
  if (x < lo) usage_error("{}: must be at least {}, got {}", name, lo, v);
  return x;
}

std::string Args::choice(const std::string& name, const std::string& def, const std::vector<std::string>& choices) const {
  std::string v = str(name, def);
  for (const auto& c : choices) {
    if (c == v) return v;
  }
  std::string list;
  for (size_t i = 0; i < choices.size(); ++i)
    list += (i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ") + choices[i];
  usage_error("{}: '{}' is not one of {}", name, v, list);
}

// ------------------------------------------------------------------ parsing and help

Args parse(const Command& cmd, const std::vector<std::string>& argv) {
  Args a(&cmd);
  auto find = [&](const std::string& name) -> const Option* {
    for (const Option& o : cmd.options) {
      if (o.name == name || (!o.alias.empty() && o.alias == name)) return &o;
    }
    return nullptr;
  };
  for (size_t i = 0; i < argv.size(); ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      a.help_ = true;
      continue;
    }
    if (arg == "--") {
      for (++i; i < argv.size(); ++i) a.positional_.push_back(argv[i]);
      break;
    }
    if (arg.size() < 2 || arg[0] != '-') {
      if (cmd.positional.empty()) a.usage_error("unexpected argument '{}'", arg);
      a.positional_.push_back(arg);
      continue;
    }
    std::optional<std::string> inline_value;
    if (size_t eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      inline_value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    }
    const Option* o = find(arg);
    if (!o) {
      std::vector<std::string> names;
      for (const Option& opt : cmd.options) names.push_back(opt.name);
      std::string hint = did_you_mean(arg, names);
      a.usage_error("unknown option '{}'{}", arg, hint.empty() ? "" : "; " + hint);
    }
    std::vector<std::string>& slot = a.values_[o->name];
    if (!slot.empty() && !o->repeated) a.usage_error("{} given more than once", o->name);
    if (o->value.empty()) {
      if (inline_value) a.usage_error("{} takes no value", o->name);
      slot.push_back("1");
    } else if (inline_value) {
      slot.push_back(*inline_value);
    } else {
      if (i + 1 >= argv.size()) a.usage_error("{} needs a value ({})", o->name, o->value);
      slot.push_back(argv[++i]);
    }
  }
  return a;
}

std::string help_text(const Command& cmd) {
  std::string out = fmt::format("usage: {} {}\n\n{}\n", cmd.prog(), cmd.usage, cmd.synopsis);
  if (!cmd.description.empty()) out += "\n" + cmd.description + (cmd.description.back() == '\n' ? "" : "\n");
  if (!cmd.subcommands.empty()) {
    out += "\ncommands:\n";
    for (const Command& s : cmd.subcommands) {
      std::string leaf = s.name.substr(s.name.rfind(' ') + 1);
      out += fmt::format("  {:<10} {}\n", leaf, s.synopsis);
    }
  }
  out += "\noptions:\n";
  {
    for (const Option& o : cmd.options) {
      std::string lhs = (o.alias.empty() ? "" : o.alias + ", ") + o.name + (o.value.empty() ? "" : " " + o.value);
      if (lhs.size() <= 22) {
        out += fmt::format("  {:<22} {}{}\n", lhs, o.help, o.repeated ? " (repeatable)" : "");
      } else {
        out += fmt::format("  {}\n  {:<22} {}{}\n", lhs, "", o.help, o.repeated ? " (repeatable)" : "");
      }
    }
  }
  out += fmt::format("  {:<22} {}\n", "-h, --help", "this text");
  return out;
}

int run_command(const Command& cmd, const std::vector<std::string>& argv) {
  const std::string prog = cmd.prog();
  try {
    if (!cmd.subcommands.empty()) {
      if (argv.empty()) {
        std::cerr << help_text(cmd);
        return kExitUsage;
      }
      if (argv[0] == "--help" || argv[0] == "-h" || argv[0] == "help") {
        std::cout << help_text(cmd);
        return 0;
      }
      for (const Command& s : cmd.subcommands) {
        if (s.name == cmd.name + " " + argv[0]) return run_command(s, {argv.begin() + 1, argv.end()});
      }
      std::vector<std::string> names;
      for (const Command& s : cmd.subcommands) names.push_back(s.name.substr(s.name.rfind(' ') + 1));
      std::string hint = did_you_mean(argv[0], names);
      throw UsageError(fmt::format("unknown command '{}'{}", argv[0], hint.empty() ? "" : "; " + hint));
    }
    Args a = parse(cmd, argv);
    if (a.help()) {
      std::cout << help_text(cmd);
      return 0;
    }
    return cmd.run(a);
  } catch (const UsageError& e) {
    std::cerr << prog << ": error: " << e.what() << "\n(see '" << prog << " --help')\n";
    return kExitUsage;
  } catch (const std::exception& e) {
    std::cerr << prog << ": error: " << e.what() << "\n";
    return kExitFailure;
  }
}

// ------------------------------------------------------------------ workload options

std::string unknown_op_message(const std::string& op) {
  std::vector<std::string> names = tuner::template_names();
  for (const tuner::Template* t : tuner::templates())
    for (const std::string& alias : t->aliases) names.push_back(alias);
  for (const std::string& n : te::ops::op_names()) names.push_back(n);
  const std::string hint = did_you_mean(op, names);
  return fmt::format("unknown op '{}'; {}", op,
                     hint.empty() ? "`loom ops` lists the operator templates, `loom ops --graph` every operator" : hint);
}

const char* const kWorkloadHelp =
    "An op with a schedule template (`loom ops`) takes the template's sizes: --op matmul --shape\n"
    "M,N,K. Any operator of the registry (`loom ops --graph`) without a template is auto-scheduled\n"
    "(docs/auto_scheduler.md): give one --input per operator input, as its shape (element type\n"
    "--dtype, default float32) or as DTYPE[SHAPE], and its attributes with --attr NAME=VALUE (a\n"
    "list as 1,2); --auto auto-schedules an operator that has a template too, to compare the two:\n"
    "  --op layer_norm --input 128,768 --input 768 --input 768 --attr epsilon=1e-5\n"
    "  --op softmax --input float32[128,128] --attr axis=-1\n"
    "  --op matmul --auto --input 1024,1024 --input 1024,1024\n";

std::vector<Option> workload_options(bool with_target) {
  std::vector<Option> o = {
      {"--op", "NAME", "operator: a template (loom ops) or a registry operator (loom ops --graph)"},
      {"--shape", "LIST", "a template's sizes, comma-separated, e.g. 1024,1024,1024 (loom ops gives the order)"},
      {"--input", "TYPE", "an auto-scheduled operator's input, in order: its shape (128,768) or float32[128,768]",
       true},
      {"--auto", "", "auto-schedule the registry operator even where a template exists (with --input)"},
      {"--dtype", "T", "element type (default: float32)"},
      {"--attr", "K=V", "attribute, e.g. --attr stride=2 --attr pad=1 (a template's) or --attr axis=-1", true},
  };
  if (with_target) o.push_back({"--target", "T", "target, e.g. \"llvm -mcpu=x86-64-v3\" (default: llvm)"});
  return o;
}

std::vector<int64_t> parse_int_list(const std::string& option, const std::string& text) {
  std::vector<int64_t> out;
  std::stringstream ss(text);
  std::string part;
  bool ok = !text.empty() && text.back() != ',';
  while (ok && std::getline(ss, part, ',')) {
    char* end = nullptr;
    errno = 0;
    long long v = std::strtoll(part.c_str(), &end, 10);
    ok = !part.empty() && *end == '\0' && errno == 0 && v > 0 && v <= INT32_MAX;
    out.push_back(v);
  }
  if (!ok) throw UsageError(fmt::format("{}: '{}' is not a comma-separated list of integers in [1, 2^31-1]", option, text));
  return out;
}

records::Workload workload_from(const Args& a, const std::string& target_kind) {
  records::Workload w;
  w.op = a.required("--op");
  const tuner::Template* t = nullptr;
  try {
    t = &tuner::get_template(w.op, target_kind);
  } catch (const Error& e) {
    if (tuner::find_template(w.op, "llvm") || tuner::find_template(w.op, "cuda"))
      a.usage_error("--target: {} has no schedule template for '{}'", w.op, target_kind);
    a.usage_error("--op: {}", unknown_op_message(w.op));
  }
  std::string shape = a.str("--shape");
  if (shape.empty()) a.usage_error("--shape {} is required for {}", t->shape_doc, w.op);
  w.shape = parse_int_list("--shape", shape);
  w.dtype = a.str("--dtype", "float32");
  for (const std::string& kv : a.all("--attr")) {
    size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == kv.size()) a.usage_error("--attr: expected KEY=VALUE, got '{}'", kv);
    w.attrs[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  try {
    t->check(w);
  } catch (const Error& e) {
    std::string msg = e.what();
    const char* option = msg.find("attribute") != std::string::npos ? "--attr"
                         : msg.find("dtype") != std::string::npos ? "--dtype"
                                                                  : "--shape";
    a.usage_error("{}: {} ({} takes --shape {})", option, msg, w.op, t->shape_doc);
  }
  return w;
}

namespace {

/// The --attr values of an auto-scheduled operator, read by its attribute schema.
te::ops::Attrs auto_attrs(const Args& a, const te::ops::OpDef& def) {
  te::ops::Attrs attrs;
  for (const std::string& kv : a.all("--attr")) {
    size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == kv.size()) a.usage_error("--attr: expected NAME=VALUE, got '{}'", kv);
    const std::string name = kv.substr(0, eq), text = kv.substr(eq + 1);
    const te::ops::AttrSpec* spec = nullptr;
    for (const te::ops::AttrSpec& s : def.attrs)
      if (s.name == name) spec = &s;
    if (!spec) {
      std::vector<std::string> known;
      for (const te::ops::AttrSpec& s : def.attrs) known.push_back(s.name);
      a.usage_error("--attr: operator '{}' has no attribute '{}' (its attributes: {})", def.name, name,
                    known.empty() ? std::string("none") : fmt::format("{}", fmt::join(known, ", ")));
    }
    auto number = [&](const std::string& t, bool integer) -> std::optional<double> {
      char* end = nullptr;
      errno = 0;
      double v = integer ? double(std::strtoll(t.c_str(), &end, 10)) : std::strtod(t.c_str(), &end);
      if (t.empty() || *end != '\0' || errno == ERANGE) return std::nullopt;
      return v;
    };
    auto list = [&](bool integer) {
      std::vector<double> out;
      std::stringstream ss(text);
      std::string part;
      while (std::getline(ss, part, ',')) {
        auto v = number(part, integer);
        if (!v) a.usage_error("--attr {}: '{}' is not a list of {}", name, text, integer ? "integers" : "numbers");
        out.push_back(*v);
      }
      return out;
    };
    switch (spec->kind) {
      case te::ops::AttrKind::kString: attrs[name] = text; break;
      case te::ops::AttrKind::kInt: {
        auto v = number(text, true);
        if (!v) a.usage_error("--attr {}: '{}' is not an integer", name, text);
        attrs[name] = int64_t(*v);
        break;
      }
      case te::ops::AttrKind::kFloat: {
        auto v = number(text, false);
        if (!v) a.usage_error("--attr {}: '{}' is not a number", name, text);
        attrs[name] = *v;
        break;
      }
      case te::ops::AttrKind::kInts: {
        std::vector<int64_t> v;
        for (double x : list(true)) v.push_back(int64_t(x));
        attrs[name] = v;
        break;
      }
      case te::ops::AttrKind::kFloats: attrs[name] = list(false); break;
    }
  }
  return attrs;
}

tuner::Task auto_task_from(const Args& a, const std::string& op, const Target& target) {
  const te::ops::OpDef* def = te::ops::find_op(op);
  if (!def) {
    if (tuner::find_template(op, "llvm") || tuner::find_template(op, "cuda"))
      a.usage_error("--op: '{}' is a template but not a registry operator: --auto has nothing to auto-schedule", op);
    a.usage_error("--op: {}", unknown_op_message(op));
  }
  const std::string inputs_doc = fmt::format("{}", fmt::join(def->inputs, ", "));
  if (a.has("--shape"))
    a.usage_error("--shape gives a template's sizes; {} '{}' is auto-scheduled: give its inputs' types with "
                  "--input, one per input ({})",
                  a.has("--auto") ? "with --auto" : "operator", op, inputs_doc);
  if (!a.has("--input"))
    a.usage_error("--input is required: '{}' has no template{}, so it is auto-scheduled on the types of its inputs "
                  "({}), one --input each, e.g. --input 128,768 or --input float32[128,768]",
                  op, a.has("--auto") ? " used (--auto)" : "", inputs_doc);
  const DataType dtype = [&] {
    try {
      return DataType::parse(a.str("--dtype", "float32"));
    } catch (const Error& e) {
      a.usage_error("--dtype: {}", e.what());
    }
  }();
  std::vector<te::ops::TensorType> types;
  for (const std::string& in : a.all("--input")) {
    try {
      if (in.find('[') != std::string::npos) {
        types.push_back(tuner::autosched::parse_tensor_type(in));
      } else {
        types.push_back({parse_int_list("--input", in), dtype, ""});
      }
    } catch (const Error& e) {
      a.usage_error("--input: {}", e.what());
    }
  }
  te::ops::Attrs attrs = auto_attrs(a, *def);
  std::optional<tuner::autosched::OpGraph> graph;
  try {
    graph = tuner::autosched::OpGraph::single(op, types, attrs);
  } catch (const Error& e) {
    const std::string msg = e.what();
    a.usage_error("{}: {}", msg.find("attribute") != std::string::npos ? "--attr" : "--input", msg);
  }
  return tuner::Task::create_auto(*graph, target);
}

}  // namespace

tuner::Task task_from(const Args& a) {
  std::optional<Target> target;
  try {
    target.emplace(a.str("--target", "llvm"));
    codegen::check_target(*target);
  } catch (const Error& e) {
    a.usage_error("--target: {}", e.what());
  }
  const std::string op = a.required("--op");
  const bool has_template = tuner::find_template(op, target->kind()) != nullptr;
  // --shape for an op with a template on another target: the template's error names the targets.
  const bool template_elsewhere = tuner::find_template(op, "llvm") || tuner::find_template(op, "cuda");
  if (a.has("--auto") || (!has_template && te::ops::find_op(op) && !(a.has("--shape") && template_elsewhere)))
    return auto_task_from(a, op, *target);
  if (!has_template) workload_from(a, target->kind());  // throws: an unknown op, a template of another target
  if (a.has("--input"))
    a.usage_error("--input is for auto-scheduled operators; '{}' has a schedule template, which takes --shape{} (add "
                  "--auto to auto-schedule the registry operator on these inputs instead)",
                  op, " " + tuner::get_template(op, target->kind()).shape_doc);
  return tuner::Task::create(workload_from(a, target->kind()), *target);
}

// ------------------------------------------------------------------ choosing a config

Chosen default_config(const tuner::Task& task) {
  Chosen c;
  c.index = task.default_index();
  c.instance = task.instantiate_default();
  return c;
}

Chosen choose_config(const tuner::Task& task, const std::vector<std::string>& logs, std::ostream* warn) {
  records::ApplyHistoryBest best;
  for (const std::string& path : logs) {
    records::LogContents log = records::read_log(path, warn);
    for (const records::Record& r : log.records) best.add(r);
  }
  const std::string target = task.target().str();
  std::optional<records::Record> rec = tuner::best_record(task, best);
  if (!rec) {
    if (warn)
      *warn << fmt::format("warning: no tuning record for {} on {}{}; using the default config\n", task.key(), target,
                           logs.empty() ? "" : " in " + fmt::format("{}", fmt::join(logs, ", ")));
    return default_config(task);
  }
  Chosen c;
  c.instance = tuner::instantiate_record(task, *rec, &c.how);
  c.index = rec->config.index;
  c.record = std::move(rec);
  return c;
}

// ------------------------------------------------------------------ formatting

std::string format_knobs(const records::ConfigRecord& c) {
  std::string out;
  for (const auto& [name, value] : c.knobs) {
    if (!out.empty()) out += " ";
    auto label = c.labels.find(name);
    if (label != c.labels.end() && !label->second.empty()) {
      out += name + "=" + label->second;
    } else if (value.size() == 1) {
      out += fmt::format("{}={}", name, value[0]);
    } else {
      out += fmt::format("{}=[{}]", name, fmt::join(value, ", "));
    }
  }
  return out;
}

std::string format_seconds(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  if (s < 60) return fmt::format("{:.1f} s", s);
  if (s < 3600) return fmt::format("{}m{:02d}s", int(s) / 60, int(s) % 60);
  return fmt::format("{}h{:02d}m", int(s) / 3600, (int(s) % 3600) / 60);
}

void check_config_indices() { tuner::install_record_check(); }

namespace {
[[noreturn]] void no_gpu(const std::string& why) {
  fail("no CUDA driver/GPU: {}; --target cuda needs an NVIDIA GPU and its driver on this machine", why);
}
}  // namespace

void require_gpu() {
  if (!runtime::cuda_available()) no_gpu(runtime::cuda_unavailable_reason());
}

void require_gpu_workers() {
  if (std::string why = tuner::cuda_worker_unavailable_reason(); !why.empty()) no_gpu(why);
}

void require_file(const std::string& option, const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw UsageError(fmt::format("{}cannot read '{}': it is a directory", option.empty() ? "" : option + ": ", path));
  if (!std::filesystem::exists(path, ec))
    throw UsageError(fmt::format("{}cannot read '{}' (no such file)", option.empty() ? "" : option + ": ", path));
  if (!std::filesystem::is_regular_file(path, ec))
    throw UsageError(fmt::format("{}cannot read '{}': not a regular file (a device, socket or pipe)",
                                 option.empty() ? "" : option + ": ", path));
}

}  // namespace loom::cli
