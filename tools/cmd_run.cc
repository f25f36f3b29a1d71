// `loom run`: a compiled network (a graph library written by `loom compile`) run on inputs
// from .npy files (or random ones): its latency, its outputs, and with --profile each
// kernel's share of the time.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "../records/json_limits.h"
#include "cli.h"
#include "loom/loom.h"
#include "loom/runtime/npy.h"
#include "loom/runtime/shape.h"

namespace loom::cli {
namespace {

using runtime::NDArray;
using nlohmann::json;

struct TensorInfo {
  std::string name;
  DataType dtype;
  std::vector<int64_t> shape;
  std::string text() const { return dtype.str() + runtime::shape_str(shape); }
};

std::vector<TensorInfo> tensors_of(const json& list, const std::string& path) {
  std::vector<TensorInfo> out;
  for (const auto& t : list) {
    try {
      out.push_back({t.at("name").get<std::string>(), DataType::parse(t.at("dtype").get<std::string>()),
                     t.at("shape").get<std::vector<int64_t>>()});
    } catch (const json::exception& e) {
      fail("{}: loom_module_info has a malformed tensor entry {}: {}", path, records::detail::short_json(t), e.what());
    }
  }
  return out;
}

std::string bytes_text(double b) {
  if (b >= 1 << 30) return fmt::format("{:.1f} GiB", b / double(1 << 30));
  if (b >= 1 << 20) return fmt::format("{:.1f} MiB", b / double(1 << 20));
  if (b >= 1 << 10) return fmt::format("{:.1f} KiB", b / double(1 << 10));
  return fmt::format("{} B", int64_t(b));
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? NAN : v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

/// "min -1.2, max 3.4, mean 0.01, argmax 283; first: 0.1, 0.2, …"
std::string summary(const NDArray& a) {
  int64_t n = a.numel();
  if (n == 0) return "empty";
  double lo = a.get(0), hi = lo, sum = 0;
  int64_t arg = 0;
  for (int64_t i = 0; i < n; ++i) {
    double v = a.get(i);
    sum += v;
    if (v > hi) hi = v, arg = i;
    lo = std::min(lo, v);
  }
  std::string first;
  for (int64_t i = 0; i < std::min<int64_t>(n, 8); ++i) first += fmt::format("{}{:.6g}", i ? ", " : "", a.get(i));
  return fmt::format("min {:.6g}, max {:.6g}, mean {:.6g}, argmax {}; first: {}{}", lo, hi, sum / double(n), arg, first,
                     n > 8 ? ", …" : "");
}

int run(const Args& a) {
  if (a.positional().size() != 1) a.usage_error("expected one MODEL.so (a library written by `loom compile`)");
  const std::string path = a.positional()[0];
  require_file("", path);
  const int repeat = int(a.integer("--repeat", 10, 1, 1000000));
  const int warmup = int(a.integer("--warmup", 3, 0, 1000000));
  if (a.has("--threads")) {
    // Before the library runs anything: its embedded runtime sizes its pool from this.
    int64_t threads = a.integer("--threads", 1, 1, 1024);
    ::setenv("LOOM_NUM_THREADS", std::to_string(threads).c_str(), 1);
  }
  const std::vector<std::string> input_files = a.all("--input");
  for (const auto& f : input_files) require_file("--input", f);
  const std::vector<std::string> output_files = a.all("--output");
  const uint64_t seed = uint64_t(a.integer("--seed", 1, 0));

  runtime::Module m = runtime::Module::load(path);
  json info;
  try {
    info = records::detail::parse_json(m.info_json(), path + ": loom_module_info");
  } catch (const json::exception& e) {
    fail("{}: loom_module_info is not JSON: {}", path, e.what());
  }
  if (info.value("type_key", "") != "graph" || !info.contains("inputs") || !info.contains("outputs"))
    fail("{} is not a compiled network (its loom_module_info has type_key '{}', not 'graph'); `loom compile` writes "
         "them, `loom bench --so` runs single-operator libraries",
         path, info.value("type_key", "?"));
  const std::string entry = info["functions"].at(0).at("name").get<std::string>();
  std::vector<TensorInfo> ins = tensors_of(info["inputs"], path), outs = tensors_of(info["outputs"], path);
  const json kernels = info.value("kernels", json::array());

  std::cout << fmt::format("{}: a network of {} kernels; {} input{}, {} output{}; arena {}, constants {}; target {}{}\n",
                           path, kernels.size(), ins.size(), ins.size() == 1 ? "" : "s", outs.size(),
                           outs.size() == 1 ? "" : "s", bytes_text(info.value("arena_bytes", 0.0)),
                           bytes_text(info.value("constants_bytes", 0.0)), info.value("target", "?"),
                           info.contains("cpu") ? " (cpu " + info["cpu"].get<std::string>() + ")" : "");

  if (!input_files.empty() && input_files.size() != ins.size())
    a.usage_error("--input: the network takes {} input{} ({}), {} file{} given", ins.size(), ins.size() == 1 ? "" : "s",
                  [&] {
                    std::string s;
                    for (const auto& t : ins) s += (s.empty() ? "" : ", ") + t.name + ": " + t.text();
                    return s;
                  }(),
                  input_files.size(), input_files.size() == 1 ? " is" : "s are");
  if (!output_files.empty() && output_files.size() != outs.size())
    a.usage_error("--output: the network has {} output{}, {} file{} given", outs.size(), outs.size() == 1 ? "" : "s",
                  output_files.size(), output_files.size() == 1 ? " is" : "s are");

  std::vector<NDArray> arrays;
  for (size_t i = 0; i < ins.size(); ++i) {
    const TensorInfo& t = ins[i];
    if (input_files.empty()) {
      NDArray x = NDArray::empty(t.shape, t.dtype);
      x.fill_random(seed + i, -1.0, 1.0);
      arrays.push_back(x);
      std::cout << fmt::format("input {} '{}': {}, uniform random in [-1, 1) (seed {})\n", i, t.name, t.text(), seed + i);
      continue;
    }
    NDArray x = runtime::load_npy(input_files[i]);
    if (x.dtype() != t.dtype || x.shape() != t.shape)
      fail("--input {}: holds {}{}, but input {} ('{}') is {}", input_files[i], x.dtype().str(),
           runtime::shape_str(x.shape()), i, t.name, t.text());
    arrays.push_back(x);
    std::cout << fmt::format("input {} '{}': {} from {}\n", i, t.name, t.text(), input_files[i]);
  }
  for (const auto& t : outs) arrays.push_back(NDArray::empty(t.shape, t.dtype));
  std::vector<DLTensor*> args;
  for (const auto& x : arrays) args.push_back(x.dltensor());

  runtime::PackedFunc f = m.get_function(entry);
  using Clock = std::chrono::steady_clock;
  for (int i = 0; i < warmup; ++i) f.call(args);
  std::vector<double> ms;
  for (int i = 0; i < repeat; ++i) {
    auto t0 = Clock::now();
    f.call(args);
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  const char* env_threads = std::getenv("LOOM_NUM_THREADS");
  std::cout << fmt::format("latency: median {:.3f} ms, min {:.3f} ms, max {:.3f} ms over {} run{} after {} warm-up "
                           "run{} ({})\n",
                           median(ms), *std::min_element(ms.begin(), ms.end()), *std::max_element(ms.begin(), ms.end()),
                           repeat, repeat == 1 ? "" : "s", warmup, warmup == 1 ? "" : "s",
                           env_threads ? fmt::format("{} threads", env_threads)
                                       : std::string("LOOM_NUM_THREADS unset: a thread per CPU"));

  if (a.has("--profile")) {
    NDArray seconds = NDArray::empty({int64_t(kernels.size())}, DataType::Float(64));
    std::vector<DLTensor*> pargs = args;
    pargs.push_back(seconds.dltensor());
    runtime::PackedFunc p = m.get_function(entry + "_profile");
    std::vector<std::vector<double>> per(kernels.size());
    for (int i = 0; i < repeat; ++i) {
      p.call(pargs);
      for (size_t k = 0; k < kernels.size(); ++k) per[k].push_back(seconds.get(int64_t(k)) * 1e3);
    }
    std::vector<double> med(kernels.size());
    double total = 0;
    for (size_t k = 0; k < kernels.size(); ++k) total += med[k] = median(per[k]);
    std::cout << fmt::format("per kernel (median of {} profiled runs; {:.3f} ms in kernels):\n", repeat, total);
    std::cout << fmt::format("  {:>3}  {:<36} {:>9} {:>7} {:>9}  {}\n", "#", "kernel", "ms", "share", "GB/s", "schedule");
    for (size_t k = 0; k < kernels.size(); ++k) {
      double bytes = kernels[k].value("bytes", 0.0);
      std::cout << fmt::format("  {:>3}  {:<36} {:>9.4f} {:>6.1f}% {:>9.1f}  {}\n", k,
                               kernels[k].value("name", "?"), med[k], total > 0 ? 100 * med[k] / total : 0.0,
                               med[k] > 0 ? bytes / (med[k] * 1e-3) / 1e9 : 0.0, kernels[k].value("note", ""));
    }
  }

  for (size_t j = 0; j < outs.size(); ++j) {
    const NDArray& y = arrays[ins.size() + j];
    if (!output_files.empty()) {
      runtime::save_npy(output_files[j], y);
      std::cout << fmt::format("output {} '{}': {} written to {}\n", j, outs[j].name, outs[j].text(), output_files[j]);
    } else {
      std::cout << fmt::format("output {} '{}': {}: {}\n", j, outs[j].name, outs[j].text(), summary(y));
    }
  }
  return 0;
}

}  // namespace

Command run_model_command() {
  Command c;
  c.name = "run";
  c.synopsis = "run a compiled network (.so from `loom compile`): latency and outputs";
  c.usage = "MODEL.so [--input FILE.npy ...] [--repeat N] [--threads T] [--output FILE.npy ...] [--profile]";
  c.description =
      "Loads a network compiled by `loom compile`, runs it on the inputs (.npy files, one per input\n"
      "in the order the network lists them, or uniform random values in [-1, 1)), and prints the\n"
      "median latency of --repeat runs after --warmup runs, then each output (a summary, or written\n"
      "to the --output files). --profile adds each kernel's median time, its share of the time in\n"
      "kernels and the bandwidth its argument bytes imply. The library runs with its own embedded\n"
      "runtime: --threads sets its thread count (LOOM_NUM_THREADS; default: every CPU).\n\n"
      "example:\n"
      "  loom compile resnet18.json --log resnet18.jsonl -o resnet18.so\n"
      "  loom run resnet18.so --input image.npy --repeat 50 --threads 2 --output logits.npy";
  c.positional = "MODEL.so";
  c.options = {
      {"--input", "FILE.npy", "an input, in the network's order (all inputs or none; none: random)", true},
      {"--output", "FILE.npy", "write the outputs, one file per output in order, instead of printing them", true},
      {"--repeat", "N", "timed runs (default 10)"},
      {"--warmup", "N", "untimed runs first (default 3)"},
      {"--threads", "T", "threads of the library's pool (default: LOOM_NUM_THREADS, else every CPU)"},
      {"--seed", "S", "seed of the random inputs (default 1; input i uses S+i)"},
      {"--profile", "", "time each kernel and print the table"},
  };
  c.run = run;
  return c;
}

}  // namespace loom::cli
