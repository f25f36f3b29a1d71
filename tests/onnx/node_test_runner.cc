// Runs ONNX's backend node tests (written by gen_node_tests.py in ONNX's layout) through
// loom: import each model.onnx, run it on every test_data_set_N's inputs and compare with its
// expected outputs (a case folder may hold loom's own model file, model.json, instead: loaded
// with graph_opt::load_graph, for the builder models against ONNX Runtime). Prints one line
// per case, PASS, SKIP (with the reason) or FAIL (with what went wrong), then "N passed, M
// failed, K skipped"; exits 1 if any case failed.
//
//   loom_onnx_node_tests CASES_DIR --skips FILE [--filter REGEX] [--modes reference,optimized,compiled]
//                        [--rtol R --atol A] [--timeout S] [--jobs N]
//
// Execution modes (--modes; a case passes when every mode does): "reference", the imported
// graph run node by node (graph_opt::run_reference, te::evaluate); "optimized", the graph
// after the pass pipeline (graph_opt::optimize: simplify inference, constant folding, scale
// folding, CSE, layout, fusion), each fused group's composed computation evaluated at once
// (run_reference_fused); "compiled", the graph compiled for the CPU (graph_opt::compile,
// LLVM) and run. Default: reference,compiled.
//
// Tolerance: |loom - expected| <= atol + rtol * |expected| elementwise with rtol 1e-4,
// atol 1e-5 for float32/float64 (1e-3/1e-3 for float16), or else within the case's own
// tolerance (ONNX's runner's: rtol 1e-3, atol 1e-7; some cases' expected values are written
// to 4 digits), which the PASS line then says; NaN matches NaN; integers and bool exactly.
// Expected rank-0 outputs match loom's shape [1].
//
// Inputs that loom needs at import (shapes, axes, pads, clip bounds, Compress's condition,
// NonZero's input) which a case passes as graph inputs are bound to the data set's values
// (OnnxImportOptions::bind_inputs). A PASS line names them, and says when the imported graph
// kept no run-time input at all (every input bound or without elements: the outputs fold at
// import); the summary counts both kinds of passes.
//
// Skips: a case loom cannot run (a loom::Error from import or execution) is SKIP only when the
// skip file lists it (a regex matching its whole name, then the reason, under a `[category]`
// line naming one of kCategories), or when the manifest says it uses an operator loom does not
// import (onnx_supported_ops(); category "not-yet"); any other error is FAIL, as is a listed
// case that passes (so the list stays true). A wrong result is FAIL whatever the list says.
// Each case runs in a child process (--jobs at a time), so a crash is a FAIL too. The summary
// counts the skips per category and names the operators not imported, by cases.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "loom/graph_opt/compile.h"
#include "loom/graph_opt/onnx.h"
#include "loom/graph_opt/passes.h"
#include "loom/graph_opt/reference.h"
#include "loom/graph_opt/serialize.h"

namespace fs = std::filesystem;
using loom::runtime::NDArray;

namespace {

/// loom's own tolerance (--rtol/--atol; float16 always 1e-3/1e-3).
double g_rtol = 1e-4, g_atol = 1e-5;

/// The categories a skipped case falls in: a short fixed list.
struct Category {
  const char* key;
  const char* what;
};
constexpr Category kCategories[] = {
    {"element-type", "element types loom does not compute (bfloat16, float8, float4, 4- and 2-bit integers, string, complex)"},
    {"value-kind", "sequence, optional and map values"},
    {"training-random", "training and random operators"},
    {"control-flow", "control flow with a data-dependent trip count"},
    {"empty-tensor", "tensors without elements (loom has none)"},
    {"not-yet", "operators and attributes loom does not import yet"},
};

struct SkipRule {
  std::regex pattern;
  std::string text, reason, category;
};

std::vector<SkipRule> read_skips(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw loom::Error("cannot open skip file " + path);
  std::vector<SkipRule> rules;
  std::string line, category;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    size_t start = line.find_first_not_of(" \t");
    if (start == std::string::npos || line[start] == '#') continue;
    if (line[start] == '[') {
      size_t close = line.find(']', start);
      category = line.substr(start + 1, close == std::string::npos ? std::string::npos : close - start - 1);
      bool known = false;
      for (const Category& c : kCategories) known = known || category == c.key;
      if (!known) {
        std::string keys;
        for (const Category& c : kCategories) keys += std::string(keys.empty() ? "" : ", ") + c.key;
        throw loom::Error(fmt::format("{}:{}: unknown category '{}' (the categories: {})", path, n, category, keys));
      }
      continue;
    }
    size_t end = line.find_first_of(" \t", start);
    std::string pat = line.substr(start, end - start);
    std::string reason = end == std::string::npos ? "" : line.substr(line.find_first_not_of(" \t", end));
    if (reason.empty()) throw loom::Error(fmt::format("{}:{}: '{}' has no reason", path, n, pat));
    if (category.empty()) throw loom::Error(fmt::format("{}:{}: '{}' comes before any [category] line", path, n, pat));
    try {
      rules.push_back({std::regex(pat), pat, reason, category});
    } catch (const std::regex_error& e) {
      throw loom::Error(fmt::format("{}:{}: bad regex '{}': {}", path, n, pat, e.what()));
    }
  }
  return rules;
}

const SkipRule* listed(const std::vector<SkipRule>& rules, const std::string& name) {
  for (const SkipRule& r : rules)
    if (std::regex_match(name, r.pattern)) return &r;
  return nullptr;
}

std::string shape_str(const std::vector<int64_t>& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + std::to_string(s[i]);
  return r + "]";
}

/// How one output compares.
struct Comparison {
  std::string diff;    // "" when it matches
  bool loose = false;  // matches only within the case's own (ONNX's) tolerance
};

/// Compares one output within loom's tolerance, or else the case's own (`case_rtol`/`case_atol`).
Comparison compare(const NDArray& got, const NDArray& want, double case_rtol, double case_atol) {
  if (got.dtype() != want.dtype()) return {fmt::format("dtype {} but expected {}", got.dtype().str(), want.dtype().str())};
  std::vector<int64_t> ws = want.shape().empty() ? std::vector<int64_t>{1} : want.shape();
  if (got.shape() != ws) return {fmt::format("shape {} but expected {}", shape_str(got.shape()), shape_str(want.shape()))};
  const bool is_float = want.dtype().is_float();
  const double rtol = want.dtype().bits() == 16 ? 1e-3 : g_rtol, atol = want.dtype().bits() == 16 ? 1e-3 : g_atol;
  int64_t bad = 0, first = -1;
  double worst = 0;
  bool loose = false;
  for (int64_t i = 0; i < want.numel(); ++i) {
    double g = got.get(i), w = want.get(i);
    bool ok;
    if (is_float) {
      if (std::isnan(w) || std::isnan(g)) ok = std::isnan(w) && std::isnan(g);
      else if (std::isinf(w) || std::isinf(g)) ok = g == w;
      else {
        const double d = std::abs(g - w);
        ok = d <= atol + rtol * std::abs(w);
        if (!ok && d <= case_atol + case_rtol * std::abs(w)) ok = loose = true;
        if (!ok) worst = std::max(worst, d);
      }
    } else {
      ok = want.dtype().bits() == 64 ? std::memcmp(static_cast<const char*>(got.raw_data()) + 8 * i,
                                                   static_cast<const char*>(want.raw_data()) + 8 * i, 8) == 0
                                     : g == w;
    }
    if (!ok && bad++ == 0) first = i;
  }
  if (bad == 0) return {"", loose};
  return {fmt::format("{} of {} elements differ; first at flat index {}: {} but expected {}{}", bad, want.numel(), first,
                      got.get(first), want.get(first), is_float ? fmt::format(" (largest difference {:.3g})", worst) : "")};
}

/// The generator's manifest entries (graph input names, operators, ONNX's tolerances) by case
/// name, read once before the children fork.
std::map<std::string, nlohmann::json> g_manifest;

void read_manifest(const fs::path& cases_dir) {
  std::ifstream in(cases_dir / "manifest.json");
  if (!in) throw loom::Error("no manifest.json in " + cases_dir.string());
  nlohmann::json m = nlohmann::json::parse(in);
  for (const auto& c : m.at("cases")) g_manifest[c.at("name").get<std::string>()] = c;
}

const nlohmann::json& manifest_entry(const fs::path& dir) {
  auto it = g_manifest.find(dir.filename().string());
  if (it == g_manifest.end()) throw std::runtime_error("manifest.json does not list " + dir.filename().string());
  return it->second;
}

/// The case's operators that loom does not import (none when the manifest lists no operators).
std::vector<std::string> ops_not_imported(const std::string& name, const std::set<std::string>& supported) {
  std::vector<std::string> missing;
  auto it = g_manifest.find(name);
  if (it == g_manifest.end() || !it->second.contains("ops")) return missing;
  for (const auto& op : it->second.at("ops")) {
    const std::string o = op.get<std::string>();
    if (!supported.count(o) && std::find(missing.begin(), missing.end(), o) == missing.end()) missing.push_back(o);
  }
  return missing;
}

/// The case's model file: model.onnx, or else loom's model.json.
fs::path model_file(const fs::path& dir) {
  return fs::exists(dir / "model.onnx") ? dir / "model.onnx" : dir / "model.json";
}

/// Imports the case for one data set (a model.json is loaded as it is). A graph input that
/// loom needs at import (a shape, axes, pads, clip bounds given as an input rather than an
/// initializer) is bound to the data set's value, as TVM's freeze_params does; so are the
/// inputs the manifest entry lists under "bind" (the real-model corpus's sample rate, which an
/// If branches on). With "fix_input_shapes" (the corpus's models, exported with symbolic dims)
/// every input's shape is the data set's. Every other input stays an input.
/// The names of the graph inputs bound go into `bound`.
loom::graph_opt::Graph import_for(const fs::path& dir, const fs::path& set, const nlohmann::json& entry,
                                  std::set<std::string>* bound) {
  if (model_file(dir).extension() == ".json") return loom::graph_opt::load_graph(model_file(dir).string());
  const auto names = entry.at("inputs").get<std::vector<std::string>>();
  auto input_value = [&](const std::string& name) {
    auto it = std::find(names.begin(), names.end(), name);
    if (it == names.end()) throw std::runtime_error("the manifest lists no graph input '" + name + "'");
    return loom::graph_opt::read_onnx_tensor((set / fmt::format("input_{}.pb", it - names.begin())).string());
  };
  loom::graph_opt::OnnxImportOptions opt;
  if (entry.contains("bind"))
    for (const auto& name : entry.at("bind")) opt.bind_inputs[name.get<std::string>()] = input_value(name.get<std::string>());
  if (entry.value("fix_input_shapes", false))
    for (const std::string& name : names)
      if (!opt.bind_inputs.count(name)) opt.input_shapes[name] = input_value(name).shape();
  for (;;) {
    try {
      loom::graph_opt::Graph g = loom::graph_opt::import_onnx((dir / "model.onnx").string(), opt);
      for (const auto& [name, _] : opt.bind_inputs) bound->insert(name);
      return g;
    } catch (const loom::graph_opt::OnnxUnsupported& e) {
      const std::string& name = e.constant_input;
      if (name.empty() || opt.bind_inputs.count(name) || std::find(names.begin(), names.end(), name) == names.end()) throw;
      opt.bind_inputs[name] = input_value(name);
    }
  }
}

/// Runs one case; "" when every data set matches, else what went wrong. Throws loom::Error
/// when loom cannot import or run it.
/// The graph's outputs for `args` in execution mode `mode`.
std::vector<NDArray> execute(const loom::graph_opt::Graph& g, const std::string& mode, const std::vector<NDArray>& args) {
  using namespace loom::graph_opt;
  if (mode == "reference") return run_reference(g, args);
  if (mode == "optimized") return run_reference_fused(optimize(g), args);
  if (mode == "compiled") {
    loom::runtime::Module m = compile(g, loom::Target("llvm"));
    std::vector<NDArray> outs;
    std::vector<DLTensor*> call;
    for (const NDArray& a : args) call.push_back(a.dltensor());
    for (ValueRef v : g.outputs) outs.push_back(NDArray::empty(g.type(v).shape, g.type(v).dtype));
    for (const NDArray& a : outs) call.push_back(a.dltensor());
    m.get_function("run").call(call);
    return outs;
  }
  throw loom::Error("unknown execution mode " + mode);
}

/// `bound` collects the graph inputs bound at import, over the data sets; `folded` is set when
/// an imported graph keeps no run-time input (every one bound, or without elements).
std::string run_case(const fs::path& dir, const std::string& mode, bool* loose, std::set<std::string>* bound,
                     bool* folded) {
  using namespace loom::graph_opt;
  const nlohmann::json& entry = manifest_entry(dir);
  const auto names = entry.at("inputs").get<std::vector<std::string>>();
  const double case_rtol = entry.at("onnx_rtol").get<double>(), case_atol = entry.at("onnx_atol").get<double>();
  std::vector<fs::path> sets;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0) sets.push_back(e.path());
  std::sort(sets.begin(), sets.end());
  if (sets.empty()) return "no test_data_set_N folder";
  for (const fs::path& set : sets) {
    Graph g = import_for(dir, set, entry, bound);
    *folded = *folded || (g.input_nodes().empty() && !names.empty());
    std::vector<NDArray> args;
    for (int node : g.input_nodes()) {
      const auto& t = g.nodes[size_t(node)].outputs[0];
      auto k = std::find(names.begin(), names.end(), g.nodes[size_t(node)].name) - names.begin();
      NDArray a = read_onnx_tensor((set / fmt::format("input_{}.pb", k)).string());
      if (a.ndim() == 0) {  // rank 0 is [1] in loom
        NDArray b = NDArray::empty({1}, a.dtype());
        std::memcpy(b.raw_data(), a.raw_data(), a.nbytes());
        a = b;
      }
      if (a.shape() != t.shape || a.dtype() != t.dtype)
        return fmt::format("{}: input {} is {}{} but the graph takes {}", set.filename().string(), k, a.dtype().str(),
                           shape_str(a.shape()), loom::te::ops::to_string(t));
      args.push_back(a);
    }
    std::vector<NDArray> outs = execute(g, mode, args);
    for (size_t k = 0; k < outs.size(); ++k) {
      fs::path want_path = set / fmt::format("output_{}.pb", k);
      if (!fs::exists(want_path)) return fmt::format("{}: loom gives {} outputs, the case has fewer", set.filename().string(), outs.size());
      Comparison c = compare(outs[k], read_onnx_tensor(want_path.string()), case_rtol, case_atol);
      if (!c.diff.empty()) return fmt::format("{}: output {}: {}", set.filename().string(), k, c.diff);
      *loose = *loose || c.loose;
    }
    if (fs::exists(set / fmt::format("output_{}.pb", outs.size())))
      return fmt::format("{}: loom gives {} outputs, the case has more", set.filename().string(), outs.size());
  }
  return "";
}

/// A case running in a child process: its pid and the read end of the pipe it reports on.
struct Child {
  pid_t pid = -1;
  int fd = -1;
  std::string msg;
};

/// Forks a child that runs the case and writes a status letter (P pass, L pass within the
/// case's own tolerance, W wrong result, U unsupported, E loom error, X other exception) and a
/// message to its pipe.
Child start_child(const fs::path& dir, const std::vector<std::string>& modes, int timeout_s) {
  int fds[2];
  if (pipe(fds) != 0) throw loom::Error("pipe failed");
  std::cout.flush();
  pid_t pid = fork();
  if (pid < 0) throw loom::Error("fork failed");
  if (pid == 0) {
    close(fds[0]);
    alarm(unsigned(timeout_s));
    std::string msg;
    try {
      bool loose = false;
      std::string diff;
      std::set<std::string> bound;
      bool folded = false;
      for (const std::string& mode : modes) {
        try {
          diff = run_case(dir, mode, &loose, &bound, &folded);
        } catch (const loom::graph_opt::OnnxUnsupported&) {
          throw;
        } catch (const loom::Error& e) {
          throw loom::Error(mode + ": " + e.what());
        }
        if (!diff.empty()) {
          diff = mode + ": " + diff;
          break;
        }
      }
      // A pass reports whether its outputs folded at import ('*', else '-') and the graph inputs bound.
      msg = !diff.empty() ? "W" + diff
                          : std::string(loose ? "L" : "P") + (folded ? "*" : "-") + fmt::format("{}", fmt::join(bound, ", "));
    } catch (const loom::Error& e) {
      msg = std::string(dynamic_cast<const loom::graph_opt::OnnxUnsupported*>(&e) ? "U" : "E") + e.what();
    } catch (const std::exception& e) {
      msg = std::string("X") + "exception: " + e.what();
    }
    ssize_t unused = write(fds[1], msg.data(), msg.size());
    (void)unused;
    close(fds[1]);
    _exit(0);
  }
  close(fds[1]);
  return {pid, fds[0], ""};
}

/// The child's report once its pipe is closed: reaps it and turns a signal into a C (crash) report.
std::string finish_child(Child& c, int timeout_s) {
  close(c.fd);
  int status = 0;
  waitpid(c.pid, &status, 0);
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    return std::string("C") + (sig == SIGALRM ? fmt::format("timed out after {} s", timeout_s)
                                              : fmt::format("crashed with signal {} ({})", sig, strsignal(sig)));
  }
  if (c.msg.empty()) return "Cexited without a result";
  return c.msg;
}

/// Runs every case, `jobs` children at a time; the reports in the order of `cases`.
std::vector<std::string> run_all(const std::vector<fs::path>& cases, const std::vector<std::string>& modes, int timeout_s,
                                 int jobs) {
  std::vector<std::string> reports(cases.size());
  std::map<size_t, Child> running;
  size_t next = 0;
  while (next < cases.size() || !running.empty()) {
    while (next < cases.size() && int(running.size()) < jobs) {
      running[next] = start_child(cases[next], modes, timeout_s);
      ++next;
    }
    std::vector<pollfd> fds;
    std::vector<size_t> which;
    for (auto& [i, c] : running) {
      fds.push_back({c.fd, POLLIN, 0});
      which.push_back(i);
    }
    if (poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      throw loom::Error(std::string("poll failed: ") + strerror(errno));
    }
    for (size_t k = 0; k < fds.size(); ++k) {
      if (!(fds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      Child& c = running.at(which[k]);
      char buf[4096];
      ssize_t n = read(c.fd, buf, sizeof buf);
      if (n > 0) {
        c.msg.append(buf, size_t(n));
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      reports[which[k]] = finish_child(c, timeout_s);
      running.erase(which[k]);
    }
  }
  return reports;
}

}  // namespace

int main(int argc, char** argv) {
  std::string cases_dir, skips_path, filter = ".*";
  std::string modes_arg = "reference,compiled";
  int timeout_s = 120, jobs = 1;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << a << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--skips") skips_path = value();
    else if (a == "--filter") filter = value();
    else if (a == "--modes") modes_arg = value();
    else if (a == "--rtol") g_rtol = std::stod(value());
    else if (a == "--atol") g_atol = std::stod(value());
    else if (a == "--timeout") timeout_s = std::stoi(value());
    else if (a == "--jobs") jobs = std::max(1, std::stoi(value()));
    else if (!a.empty() && a[0] != '-' && cases_dir.empty()) cases_dir = a;
    else {
      std::cerr << "usage: loom_onnx_node_tests CASES_DIR --skips FILE [--filter REGEX] [--modes reference,optimized,compiled] [--rtol R --atol A] [--timeout S] [--jobs N]\n";
      return 2;
    }
  }
  if (cases_dir.empty() || skips_path.empty()) {
    std::cerr << "usage: loom_onnx_node_tests CASES_DIR --skips FILE [--filter REGEX] [--modes reference,optimized,compiled] [--rtol R --atol A] [--timeout S] [--jobs N]\n";
    return 2;
  }
  std::vector<std::string> modes;
  for (size_t p = 0; p <= modes_arg.size();) {
    size_t q = std::min(modes_arg.find(',', p), modes_arg.size());
    modes.push_back(modes_arg.substr(p, q - p));
    if (modes.back() != "reference" && modes.back() != "optimized" && modes.back() != "compiled") {
      std::cerr << "--modes takes reference, optimized and/or compiled, got '" << modes.back() << "'\n";
      return 2;
    }
    p = q + 1;
  }
  std::vector<SkipRule> skips;
  try {
    skips = read_skips(skips_path);
  } catch (const loom::Error& e) {
    std::cerr << e.what() << "\n";
    return 2;
  }
  if (!loom::graph_opt::onnx_frontend_available()) {
    std::cout << "SKIPPED: this loom was built without the ONNX frontend (libonnx-dev, libprotobuf-dev)\n";
    return 77;
  }
  std::vector<fs::path> cases;
  std::regex only(filter);
  for (const auto& e : fs::directory_iterator(cases_dir))
    if (e.is_directory() && fs::exists(model_file(e.path())) && std::regex_match(e.path().filename().string(), only))
      cases.push_back(e.path());
  std::sort(cases.begin(), cases.end());
  if (cases.empty()) {
    std::cerr << "no cases (folders with model.onnx or model.json) under " << cases_dir << " match '" << filter << "'\n";
    return 2;
  }
  try {
    read_manifest(cases_dir);
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 2;
  }
  std::set<std::string> supported;
  for (const std::string& op : loom::graph_opt::onnx_supported_ops()) supported.insert(op);
  int passed = 0, failed = 0, skipped = 0, passed_bound = 0, passed_folded = 0;
  std::map<std::string, int> skipped_by_category;
  std::map<std::string, int> cases_by_missing_op;
  std::vector<bool> rule_used(skips.size(), false);
  const auto start = std::chrono::steady_clock::now();
  const std::vector<std::string> reports = run_all(cases, modes, timeout_s, jobs);
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string name = cases[i].filename().string();
    const std::string& r = reports[i];
    const char kind = r[0];
    const std::string msg = r.substr(1);
    const SkipRule* rule = listed(skips, name);
    if (rule) rule_used[size_t(rule - skips.data())] = true;
    const std::vector<std::string> missing = ops_not_imported(name, supported);
    if ((kind == 'P' || kind == 'L') && !rule) {
      ++passed;
      // msg: '*' when the imported graph kept no run-time input (its outputs fold at import), else '-'; the bound inputs.
      const bool folded = !msg.empty() && msg[0] == '*';
      const std::string bound = msg.size() > 1 ? msg.substr(1) : "";
      passed_bound += !bound.empty();
      passed_folded += folded;
      std::cout << "PASS " << name << (kind == 'L' ? " (within the case's own tolerance only, ONNX's rtol 1e-3)" : "")
                << (bound.empty() ? "" : " (graph inputs bound at import: " + bound + ")")
                << (folded ? " (no run-time input left: its outputs fold at import)" : "") << "\n";
    } else if (kind == 'P' || kind == 'L') {
      ++failed;
      std::cout << "FAIL " << name << ": passes, but the skip list says '" << rule->reason
                << "' (remove it from the list)\n";
    } else if ((kind == 'U' || kind == 'E') && rule) {
      ++skipped;
      ++skipped_by_category[rule->category];
      std::cout << "SKIP " << name << ": [" << rule->category << "] " << rule->reason << " [" << msg << "]\n";
    } else if (kind == 'U' && !missing.empty()) {
      ++skipped;
      ++skipped_by_category["not-yet"];
      for (const std::string& op : missing) ++cases_by_missing_op[op];
      std::cout << "SKIP " << name << ": [not-yet] operator not imported: " << fmt::format("{}", fmt::join(missing, ", "))
                << "\n";
    } else {
      ++failed;
      std::cout << "FAIL " << name << ": "
                << (kind == 'W' ? "wrong result: " : kind == 'U' ? "unsupported (not in the skip list): "
                                                   : kind == 'E' ? "error: " : "")
                << msg << "\n";
    }
  }
  for (size_t i = 0; i < skips.size(); ++i)
    if (!rule_used[i] && filter == ".*")
      std::cout << "note: skip rule '" << skips[i].text << "' matches no case\n";
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << fmt::format("{}: {} cases, modes {}, rtol {:g} atol {:g}, {:.0f} s\n", fs::path(cases_dir).filename().string(), cases.size(), modes_arg,
                           g_rtol, g_atol, secs);
  if (skipped) {
    std::cout << "skipped, by category:\n";
    for (const Category& c : kCategories)
      if (skipped_by_category.count(c.key))
        std::cout << fmt::format("  {:5} {} ({})\n", skipped_by_category[c.key], c.key, c.what);
  }
  if (!cases_by_missing_op.empty()) {
    std::vector<std::pair<int, std::string>> by_count;
    for (const auto& [op, n] : cases_by_missing_op) by_count.push_back({-n, op});
    std::sort(by_count.begin(), by_count.end());
    std::string list;
    for (const auto& [n, op] : by_count) list += fmt::format("{}{} ({})", list.empty() ? "" : ", ", op, -n);
    std::cout << "operators not imported, by cases: " << list << "\n";
  }
  if (passed_bound || passed_folded)
    std::cout << fmt::format("of the passes, {} bind graph inputs that loom needs at import to the data set's values "
                             "(shapes, axes, conditions); {} keep no run-time input (every input bound or without "
                             "elements: their outputs fold at import)\n",
                             passed_bound, passed_folded);
  std::cout << fmt::format("{} passed ({:.1f}% of {} cases), {} failed, {} skipped\n", passed,
                           cases.empty() ? 0.0 : 100.0 * passed / double(cases.size()), cases.size(), failed, skipped);
  return failed ? 1 : 0;
}
