// Fused attention (the "attention" template: one kernel, online softmax) against loom's unfused
// chain and oneDNN's matmul + softmax primitives, for BERT-base's attention (batch 1, 12 heads,
// head_dim 64, a key mask [1, 1, 1, S] added to the scores) at several sequence lengths.
//
// The chain is a graph as the importer writes it: batch_matmul(Q, K, transpose_b) → × scale →
// + mask → softmax (along the keys, of the [H·S, S] reshape, so that the softmax template
// runs it) → batch_matmul by V. loom compiles it twice: with the fuse_attention pass (one
// attention kernel) and without (three kernels: the first product with the scale and mask as
// its epilogue, the softmax, the second product; the [12, S, S] scores go through memory
// between them). oneDNN runs a matmul with the scale and mask as post-ops, softmax_forward in
// place and a matmul (tools/peers.h). Every output is checked against the fused one before
// timing. Reported per sequence length and thread count: ms (median, interleaved blocks as
// bench_common.h times them), GFLOP/s of 4·H·S²·D, the unfused chain's and oneDNN's time over
// the fused kernel's, and the bytes of the kernels' arguments that `loom run --profile`
// counts (each kernel's inputs and outputs) for both loom variants.
//
//   bench/attention [--seq 128,384,1024] [--threads 1,2] [--heads 12] [--head-dim 64]
//                   [--repeat 9] [--log FILE]
#include <loom/graph_opt/builder.h>
#include <loom/graph_opt/compile.h>
#include <loom/runtime/thread_pool.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>

#include "bench_common.h"
#include "cli.h"
#include "peers.h"

namespace loom {
namespace {

using graph_opt::GraphBuilder;
using graph_opt::Value;
using runtime::NDArray;

struct Options {
  std::vector<int> seq = {128, 384, 1024};
  std::vector<int> threads = {1, 2};
  int heads = 12, head_dim = 64;
  int repeat = 9;
  std::string log;
  double settle_ms = 100;
};

cli::Command command() {
  cli::Command c;
  c.program = "";
  c.name = "attention";
  c.usage = "[options]";
  c.synopsis = "fused attention vs loom's unfused chain vs oneDNN matmul + softmax, BERT-base's heads";
  c.options = {
      {"--seq", "LIST", "sequence lengths (default 128,384,1024)"},
      {"--threads", "LIST", "thread counts for loom and oneDNN (default 1,2)"},
      {"--heads", "N", "heads (default 12)"},
      {"--head-dim", "N", "head dimension (default 64)"},
      {"--repeat", "R", "timed repeats; the median is reported (default 9)"},
      {"--log", "FILE", "tuning records applied to both loom variants (loom tune --op attention / batch_matmul / softmax)"},
      {"--settle-ms", "MS", "pause before each multi-threaded timed block (default 100)"},
  };
  return c;
}

Options options_from(const cli::Args& a) {
  Options o;
  bench::int_list_option(a, "--seq", &o.seq);
  bench::int_list_option(a, "--threads", &o.threads);
  o.heads = int(a.integer("--heads", o.heads, 1, 1024));
  o.head_dim = int(a.integer("--head-dim", o.head_dim, 1, 1024));
  o.repeat = int(a.integer("--repeat", o.repeat, 1, 1000));
  o.log = a.str("--log");
  o.settle_ms = a.number("--settle-ms", o.settle_ms, 0);
  return o;
}

/// The chain as the importer writes it, Q, K, V [1, H, S, D] and the mask [1, 1, 1, S] inputs.
graph_opt::Graph chain(int64_t H, int64_t S, int64_t D) {
  const DataType f32 = DataType::Float(32);
  GraphBuilder b("attention_chain");
  Value q = b.input("q", {{1, H, S, D}, f32, ""}), k = b.input("k", {{1, H, S, D}, f32, ""});
  Value v = b.input("v", {{1, H, S, D}, f32, ""}), mask = b.input("mask", {{1, 1, 1, S}, f32, ""});
  Value s = b.op("batch_matmul", {b.reshape(q, {H, S, D}), b.reshape(k, {H, S, D})}, {{"transpose_b", int64_t(1)}});
  NDArray c = NDArray::empty({}, f32);
  c.set(0, 1.0 / std::sqrt(double(D)));
  s = b.add(b.multiply(b.reshape(s, {1, H, S, S}), b.constant("scale", c)), mask);
  Value p = b.reshape(b.op("softmax", {b.reshape(s, {H * S, S})}, {{"axis", int64_t(1)}}), {H, S, S});
  b.output(b.reshape(b.op("batch_matmul", {p, b.reshape(v, {H, S, D})}), {1, H, S, D}));
  return b.build();
}

/// A compiled variant: its module, kernels, and the bytes of their arguments.
struct Variant {
  runtime::Module module;
  size_t kernels = 0;
  double bytes = 0;
};

Variant compile(const graph_opt::Graph& g, bool fused, const records::ApplyHistoryBest* best) {
  graph_opt::CompileOptions opt;
  if (!fused) opt.passes.disabled = {"fuse_attention"};
  Variant v;
  graph_opt::CompileReport report;
  v.module = graph_opt::compile(g, Target("llvm"), best, opt, &report);
  v.kernels = report.kernels.size();
  const nlohmann::json info = nlohmann::json::parse(v.module.info_json());
  for (const auto& k : info.at("kernels")) v.bytes += k.value("bytes", 0.0);
  return v;
}

int run(const Options& o) {
  std::optional<records::ApplyHistoryBest> best;
  if (!o.log.empty()) best.emplace(o.log);
  const int64_t H = o.heads, D = o.head_dim;
  std::printf("attention: batch 1, %lld heads, head_dim %lld, key mask; fused = one attention kernel, unfused = "
              "loom's chain (fuse_attention off), oneDNN = matmul + softmax + matmul\n",
              (long long)H, (long long)D);
  std::printf("%5s %3s | %9s %8s | %9s %8s %6s | %9s %8s %6s | %11s %11s\n", "seq", "thr", "fused", "GFLOP/s",
              "unfused", "GFLOP/s", "ratio", "oneDNN", "GFLOP/s", "ratio", "fused MB", "unfused MB");
  for (int seq : o.seq) {
    const int64_t S = seq;
    graph_opt::Graph g = chain(H, S, D);
    Variant fused = compile(g, true, best ? &*best : nullptr), unfused = compile(g, false, best ? &*best : nullptr);
    std::vector<NDArray> in;
    for (int i : g.input_nodes()) {
      const graph_opt::TensorType& t = g.nodes[size_t(i)].outputs[0];
      in.push_back(NDArray::empty(t.shape, t.dtype));
      in.back().fill_random(uint64_t(7 + i), -1, 1);
    }
    for (int64_t j = 0; j < S; ++j) in[3].set(j, j >= S - S / 8 ? -10000.0 : 0.0);  // padding: the last eighth
    auto output = [&] { return NDArray::empty({1, H, S, D}, DataType::Float(32)); };
    NDArray out_fused = output(), out_unfused = output(), out_peer = output();
    auto call = [&](const Variant& v, const NDArray& out) {
      return [&v, &in, out] { v.module.get_function("run")(in[0], in[1], in[2], in[3], out); };
    };
    const int64_t n = out_fused.numel();
    call(fused, out_fused)();
    bench::poison(out_unfused.data<float>(), n);
    call(unfused, out_unfused)();
    const double err = bench::max_rel_err(out_unfused.data<float>(), out_fused.data<float>(), n);
    LOOM_CHECK(err < 1e-4, "bench/attention: seq {}: the fused kernel differs from the chain by {}", seq, err);

    records::Workload w{"attention", {1, H, S, S, D}, "float32", {{"bias", fmt::format("1,1,1,{}", S)}}};
    w.attrs["scale"] = fmt::format("{}", 1.0 / std::sqrt(double(D)));
    const double flop = 4.0 * double(H) * double(S) * double(S) * double(D);
    for (int nt : o.threads) {
      runtime::ThreadPool::global().resize(nt);
      cli::set_peer_threads(nt);
      std::string why;
      std::optional<cli::Peer> peer = cli::find_peer(w, &why);  // made after the thread count
      std::vector<std::function<void()>> fs = {call(fused, out_fused), call(unfused, out_unfused)};
      if (peer) {
        bench::poison(out_peer.data<float>(), n);
        peer->run({in[0], in[1], in[2], in[3]}, out_peer);
        const double perr = bench::max_rel_err(out_peer.data<float>(), out_fused.data<float>(), n);
        if (!(perr < 1e-4)) std::printf("  (oneDNN differs from the fused kernel by %.2g)\n", perr);
        fs.push_back([&] { peer->run({in[0], in[1], in[2], in[3]}, out_peer); });
      }
      const std::vector<double> t = bench::interleaved_times(fs, o.repeat, 20, nt > 1 ? o.settle_ms : 0);
      auto gf = [&](double s) { return flop / s * 1e-9; };
      std::printf("%5d %3d | %9.3f %8.1f | %9.3f %8.1f %6.2f | %9s %8s %6s | %11.1f %11.1f\n", seq, nt, t[0] * 1e3,
                  gf(t[0]), t[1] * 1e3, gf(t[1]), t[1] / t[0], peer ? fmt::format("{:.3f}", t[2] * 1e3).c_str() : "n/a",
                  peer ? fmt::format("{:.1f}", gf(t[2])).c_str() : "", peer ? fmt::format("{:.2f}", t[2] / t[0]).c_str() : "",
                  fused.bytes / 1e6, unfused.bytes / 1e6);
      if (!peer) std::printf("  oneDNN: %s\n", why.c_str());
    }
    std::printf("  seq %d: fused %zu kernel(s), unfused %zu kernels\n", seq, fused.kernels, unfused.kernels);
  }
  std::printf("ratio: the other's time over the fused kernel's (above 1: fused is faster); MB: bytes of the kernels' "
              "arguments (inputs and outputs, as loom run --profile counts them)\n");
  return 0;
}

}  // namespace
}  // namespace loom

int main(int argc, char** argv) {
  loom::cli::Command c = loom::command();
  c.run = [](const loom::cli::Args& a) { return loom::run(loom::options_from(a)); };
  return loom::cli::run_command(c, {argv + 1, argv + argc});
}
