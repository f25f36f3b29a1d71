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
#include "loom/tuner/measure.h"
#include "loom/tuner/build_best.h"

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
  const std::string hint = did_you_mean(op, names);
  return fmt::format("unknown op '{}'; {}", op, hint.empty() ? "`loom ops` lists the operator templates" : hint);
}

std::vector<Option> workload_options(bool with_target) {
  std::vector<Option> o = {
      {"--op", "NAME", "operator template (loom ops lists them)"},
      {"--shape", "LIST", "its sizes, comma-separated, e.g. 1024,1024,1024 (loom ops gives the order)"},
      {"--dtype", "T", "element type (default: float32)"},
      {"--attr", "K=V", "template attribute, e.g. --attr stride=2 --attr pad=1", true},
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

tuner::Task task_from(const Args& a) {
  std::optional<Target> target;
  try {
    target.emplace(a.str("--target", "llvm"));
    codegen::check_target(*target);
  } catch (const Error& e) {
    a.usage_error("--target: {}", e.what());
  }
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
  tuner::ConfigEntity e = tuner::record_config(task, *rec);
  c.index = e.index();
  c.instance = task.instantiate(e);
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
