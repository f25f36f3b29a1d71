// Memory-bound kernels whose vector code is transcendental (codegen/llvm/vector_math.cc), as
// the graph level schedules them (tuner::schedule_by_pattern for the target's lanes): a BERT
// layer's attention softmax (12 heads × 128 × 128, along the last axis) and its GELU (erf) on
// the 128 × 3072 intermediate activation, plus sigmoid and tanh on the same tensor, each
//   - with libmvec (the default target "llvm"),
//   - with one libm call per lane (target "llvm -vector_math=none", what loom did before),
//   - with oneDNN's softmax / eltwise primitive (tools/peers.h),
//   - next to memcpy of the same bytes (input to output) and the copy bandwidth of 64 MiB
// in one run, interleaved (bench_common.h), at each thread count. A kernel's bandwidth is the
// bytes it must move (its input read once, its output written once) over its time; "of copy"
// is that over memcpy's bandwidth on the same bytes, "of 64 MiB copy" over a 64 MiB memcpy's
// (the figure bench/graph's --profile compares memory-bound kernels with). Outputs are checked
// against te::evaluate before timing.
//
//   bench/vector_math [--threads 1,2] [--repeat R] [--ops softmax,gelu,sigmoid,tanh] [--target T]
#include <loom/loom.h>
#include <loom/lower/vector_access.h>
#include <loom/runtime/thread_pool.h>
#include <loom/te/ops.h>
#include <loom/tuner/schedule_by_pattern.h>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "bench_common.h"
#include "cli.h"
#include "peers.h"

namespace loom {
namespace {

struct Options {
  std::vector<int> threads = {1, 2};
  int repeat = 9;
  std::vector<std::string> ops = {"softmax", "gelu", "sigmoid", "tanh"};
  std::string target = "llvm";
  double settle_ms = 100;
};

cli::Command command() {
  cli::Command c;
  c.program = "";
  c.name = "vector_math";
  c.usage = "[options]";
  c.synopsis = "softmax and activations with libmvec vs libm per lane vs oneDNN vs memcpy";
  c.options = {
      {"--threads", "LIST", "thread counts for loom and oneDNN (default 1,2)"},
      {"--repeat", "R", "timed repeats; the median is reported (default 9)"},
      {"--ops", "LIST", "any of softmax,gelu,sigmoid,tanh (default all)"},
      {"--target", "T", "loom's target (default llvm); the 'before' column adds -vector_math=none"},
      {"--settle-ms", "MS", "pause before each multi-threaded timed block (default 100)"},
  };
  return c;
}

Options options_from(const cli::Args& a) {
  Options o;
  bench::int_list_option(a, "--threads", &o.threads);
  o.repeat = int(a.integer("--repeat", o.repeat, 1, 1000));
  if (a.has("--ops")) o.ops = bench::split_list(a.str("--ops"), ',');
  for (const auto& op : o.ops)
    if (op != "softmax" && op != "gelu" && op != "sigmoid" && op != "tanh")
      a.usage_error("--ops: unknown op '{}' (expected softmax, gelu, sigmoid, tanh)", op);
  o.target = a.str("--target", o.target);
  o.settle_ms = a.number("--settle-ms", o.settle_ms, 0);
  return o;
}

struct Case {
  std::string op;
  std::vector<int64_t> shape;    // loom's tensor
  records::Workload peer_workload;  // oneDNN's view of it
};

Case make_case(const std::string& op) {
  if (op == "softmax") return {op, {12, 128, 128}, {"softmax", {12 * 128, 128}, "float32", {}}};
  return {op, {128, 3072}, {op, {128, 3072}, "float32", {}}};
}

te::Tensor compute(const Case& c, const te::Tensor& x) {
  if (c.op == "softmax") return te::ops::softmax(x, -1);
  if (c.op == "gelu") return te::ops::gelu(x, false);
  if (c.op == "sigmoid") return te::ops::sigmoid(x);
  return te::ops::tanh(x);
}

runtime::NDArray f32(const std::vector<int64_t>& shape) { return runtime::NDArray::empty(shape, DataType::Float(32)); }

/// memcpy of `bytes` on `threads` threads (each its own slice) from one buffer into another.
std::function<void()> parallel_copy(const void* src, void* dst, size_t bytes, int threads) {
  return [=] {
    if (threads == 1) {
      std::memcpy(dst, src, bytes);
      return;
    }
    runtime::ThreadPool::global().run(threads, [&](int t, int n) {
      const size_t lo = bytes * size_t(t) / size_t(n), hi = bytes * size_t(t + 1) / size_t(n);
      std::memcpy(static_cast<char*>(dst) + lo, static_cast<const char*>(src) + lo, hi - lo);
      return 0;
    });
  };
}

int run(const Options& o) {
  const Target with(o.target);
  const Target without(o.target + " -vector_math=none");
  std::printf("vector math: loom (%s) with %s vs libm per lane (%s) vs oneDNN, memcpy of the same bytes\n",
              with.str().c_str(), lowering::vector_math_library(with).empty() ? "no vector math library" : "libmvec",
              without.str().c_str());
  constexpr size_t kBig = size_t(64) << 20;
  std::vector<char> big_src(kBig, 1), big_dst(kBig, 0);
  std::printf("%-8s %-14s %3s %9s %9s %9s %9s %9s | %7s %7s %8s %8s %8s\n", "op", "shape", "thr", "libmvec", "libm/lane",
              "oneDNN", "memcpy", "64MiBcpy", "GB/s", "of cpy", "of 64MiB", "vs libm", "vs dnnl");
  std::printf("%-8s %-14s %3s %9s %9s %9s %9s %9s | %7s %7s %8s %8s %8s\n", "", "", "", "ms", "ms", "ms", "ms", "GB/s",
              "libmvec", "libmvec", "libmvec", "speedup", "speedup");
  for (const std::string& op : o.ops) {
    const Case c = make_case(op);
    te::Tensor x = te::placeholder(std::vector<te::Expr>(c.shape.begin(), c.shape.end()), DataType::Float(32), "x");
    te::Tensor out = compute(c, x);
    runtime::Module m_with = build(tuner::schedule_by_pattern({out}, with), {x, out}, with, "f");
    runtime::Module m_without = build(tuner::schedule_by_pattern({out}, without), {x, out}, without, "f");
    runtime::NDArray in = f32(c.shape);
    in.fill_random(11, op == "softmax" ? -8.0 : -6.0, op == "softmax" ? 8.0 : 6.0);
    runtime::NDArray want = te::evaluate({out}, {{x, in}})[0];
    const int64_t n = in.numel();
    const size_t bytes = size_t(n) * sizeof(float);
    runtime::NDArray o_with = f32(c.shape), o_without = f32(c.shape), o_peer = f32(c.shape), o_copy = f32(c.shape);
    for (auto [m, res, what] : {std::tuple{&m_with, &o_with, "libmvec"}, std::tuple{&m_without, &o_without, "libm"}}) {
      bench::poison(res->data<float>(), n);
      m->get_function("f")(in, *res);
      double err = bench::max_rel_err(res->data<float>(), want.data<float>(), n);
      if (!(err < 1e-5)) throw Error(fmt::format("vector_math: {} ({}) differs from te::evaluate: {}", op, what, err));
    }
    std::string shape;
    for (int64_t d : c.shape) shape += (shape.empty() ? "" : "x") + std::to_string(d);
    for (int nt : o.threads) {
      runtime::ThreadPool::global().resize(nt);
      cli::set_peer_threads(nt);
      std::string why;
      std::optional<cli::Peer> peer = cli::find_peer(c.peer_workload, &why);  // created after the thread count
      std::vector<std::function<void()>> fs = {
          [&] { m_with.get_function("f")(in, o_with); },
          [&] { m_without.get_function("f")(in, o_without); },
          parallel_copy(in.raw_data(), o_copy.raw_data(), bytes, nt),
          parallel_copy(big_src.data(), big_dst.data(), kBig, nt),
      };
      if (peer) {
        bench::poison(o_peer.data<float>(), n);
        peer->run({in}, o_peer);
        double err = bench::max_rel_err(o_peer.data<float>(), want.data<float>(), n);
        if (!(err < 1e-4)) std::printf("  (oneDNN's %s differs from te::evaluate by %.2g)\n", op.c_str(), err);
        fs.push_back([&] { peer->run({in}, o_peer); });
      }
      std::vector<double> t = bench::interleaved_times(fs, o.repeat, 20, nt > 1 ? o.settle_ms : 0);
      const double moved = 2.0 * double(bytes);  // read once, written once
      const double gbs = moved / t[0] * 1e-9, copy_gbs = moved / t[2] * 1e-9, big_gbs = 2.0 * double(kBig) / t[3] * 1e-9;
      const double t_peer = peer ? t[4] : 0;
      std::printf("%-8s %-14s %3d %9.3f %9.3f %9s %9.3f %9.1f | %7.1f %7.2f %8.2f %8.1f %8s\n", op.c_str(), shape.c_str(),
                  nt, t[0] * 1e3, t[1] * 1e3, peer ? fmt::format("{:.3f}", t_peer * 1e3).c_str() : "n/a", t[2] * 1e3,
                  big_gbs, gbs, gbs / copy_gbs, gbs / big_gbs, t[1] / t[0],
                  peer ? fmt::format("{:.2f}", t_peer / t[0]).c_str() : why.c_str());
    }
  }
  std::printf("speedup columns: the other's time over loom-with-libmvec's (above 1: loom with libmvec is faster)\n");
  return 0;
}

}  // namespace
}  // namespace loom

int main(int argc, char** argv) {
  loom::cli::Command c = loom::command();
  c.run = [](const loom::cli::Args& a) { return loom::run(loom::options_from(a)); };
  return loom::cli::run_command(c, {argv + 1, argv + argc});
}
