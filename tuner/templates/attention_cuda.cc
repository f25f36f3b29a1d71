// "attention" on CUDA GPUs: the online-softmax kernel of attention_cpu.cc for a GPU, as the
// loop IR of an extern operation with thread bindings (FlashAttention's pattern without
// tensor cores, float32).
//
// A thread block per (batch, head, block of block_q queries): `warps` warps of 32 lanes, each
// warp owning block_q / warps query rows. The block's queries (scaled) stay in shared memory;
// for each block of block_k keys (up to the causal frontier of its last query) the block
// loads the keys and values into shared tiles together, then each warp, row by row: lane t
// scores keys t, t + 32, … (a dot product over head_dim with the shared query row), the row
// maximum and the sum of the exponentials are warp reductions (butterflies of
// loom.warp_shuffle_xor), the probabilities go through a per-warp shared row to the lanes,
// and lane t accumulates context elements t, t + 32, … of its rows, rescaled by exp(m - m').
// The running maximum, sum and context of a warp's rows are registers. thread_sync puts the
// barriers between the shared writes and reads.
#include "attention.h"
#include "loom/te/intrinsics.h"

namespace loom::tuner {
namespace {

using lowering::ForKind;
using lowering::IRBuilder;
using te::Expr;
using te::Tensor;
using te::Var;
using tmpl::AttentionSpec;
using tmpl::c32;
using tmpl::f32;

constexpr int64_t kWarp = 32;


/// `x` combined by `op` over the 32 lanes of the warp; every lane gets the result.
Expr warp_allreduce(IRBuilder& ib, Expr x, const std::function<Expr(Expr, Expr)>& op, const std::string& name) {
  for (int64_t mask = kWarp / 2; mask >= 1; mask /= 2) {
    Expr other = te::call(DataType::Float(32), te::intrin::kWarpShuffleXor, {x, c32(mask)});
    x = ib.let(name, op(x, other));
  }
  return x;
}

/// Shared-memory bytes of a configuration: the query block, the key and value tiles (keys
/// padded by one float so that lanes reading different keys hit different banks) and one
/// probability row per warp.
int64_t shared_bytes(const AttentionSpec& a, int64_t bq, int64_t bk, int64_t warps) {
  const te::ops::AttentionDims& d = a.dims;
  return 4 * (bq * d.head_dim + bk * (d.head_dim + 1) + bk * d.v_head_dim + warps * bk);
}

constexpr int64_t kMaxShared = 48 * 1024;

lowering::Stmt cuda_body(const AttentionSpec& a, const lowering::ExternContext& ctx) {
  const te::ops::AttentionDims& d = a.dims;
  const int64_t bq = ctx.param("block_q"), bk = ctx.param("block_k"), warps = ctx.param("warps");
  LOOM_CHECK(bq % warps == 0 && bk % kWarp == 0, "attention (cuda): block_q {} must be a multiple of warps {} and "
             "block_k {} of 32", bq, warps, bk);
  LOOM_CHECK(shared_bytes(a, bq, bk, warps) <= kMaxShared, "attention (cuda): {} bytes of shared memory exceed {}",
             shared_bytes(a, bq, bk, warps), kMaxShared);
  const int64_t rows = bq / warps, keys = bk / kWarp, cols = (d.v_head_dim + kWarp - 1) / kWarp;
  const int64_t nq = (d.seq_q + bq - 1) / bq, nk = (d.seq_kv + bk - 1) / bk, group = d.heads / d.kv_heads;
  const int64_t threads = warps * kWarp;
  const Tensor &Q = ctx.inputs[0], &K = ctx.inputs[1], &V = ctx.inputs[2], &out = ctx.outputs[0];
  const Tensor bias = d.bias.empty() ? Tensor() : ctx.inputs[3];
  const Expr minus_inf = f32(-std::numeric_limits<double>::infinity());
  auto fmax = [](Expr x, Expr y) { return te::max(x, y); };
  auto fadd = [](Expr x, Expr y) { return x + y; };

  IRBuilder ib;
  const Var task = ib.launch_thread("blockIdx.x", c32(d.batch * d.heads * nq));
  const Var warp = ib.launch_thread("threadIdx.y", c32(warps));
  const Var lane = ib.launch_thread("threadIdx.x", c32(kWarp));
  const Var b = ib.let("b", te::floordiv(task, c32(d.heads * nq)));
  const Var h = ib.let("h", te::floormod(te::floordiv(task, c32(nq)), c32(d.heads)));
  const Var i0 = ib.let("i0", te::floormod(task, c32(nq)) * c32(bq));
  const Expr hk = group == 1 ? Expr(h) : Expr(ib.let("hk", te::floordiv(h, c32(group))));
  const Var tid = ib.let("tid", warp * c32(kWarp) + lane);
  const Tensor q_s = ib.scratch("q_shared", {c32(bq), c32(d.head_dim)}, DataType::Float(32), "shared");
  const Tensor k_s = ib.scratch("k_shared", {c32(bk), c32(d.head_dim + 1)}, DataType::Float(32), "shared");
  const Tensor v_s = ib.scratch("v_shared", {c32(bk), c32(d.v_head_dim)}, DataType::Float(32), "shared");
  const Tensor p_s = ib.scratch("p_shared", {c32(warps), c32(bk)}, DataType::Float(32), "shared");
  const Tensor m = ib.scratch("row_max", {c32(rows)}, DataType::Float(32), "local");
  const Tensor l = ib.scratch("row_sum", {c32(rows)}, DataType::Float(32), "local");
  const Tensor acc = ib.scratch("context", {c32(rows), c32(cols)}, DataType::Float(32), "local");
  const Tensor sc = ib.scratch("scores", {c32(keys)}, DataType::Float(32), "local");

  // Elements [0, n) of a tile, `threads` at a time: f(element).
  auto cooperative = [&](const std::string& name, int64_t n, const std::function<void(Expr)>& f) {
    ib.loop(name, c32(0), c32((n + threads - 1) / threads), [&](const Var& it) {
      Expr e = it * c32(threads) + tid;
      if (n % threads == 0) f(e);
      else ib.if_then(e < c32(n), [&] { f(e); });
    });
  };
  cooperative("load_q", bq * d.head_dim, [&](Expr e) {
    Expr r = te::floordiv(e, c32(d.head_dim)), x = te::floormod(e, c32(d.head_dim));
    Expr row = te::min(i0 + r, c32(d.seq_q - 1));
    ib.store(q_s, {r, x}, tmpl::attention_at(a, Q, d.head_dim, b, h, row, x) * f32(d.scale));
  });
  ib.loop("r", c32(0), c32(rows), [&](const Var& r) {
    ib.store(m, {r}, f32(-double(std::numeric_limits<float>::max())));
    ib.store(l, {r}, f32(0));
    ib.loop("c", c32(0), c32(cols), [&](const Var& c) { ib.store(acc, {r, c}, f32(0)); }, ForKind::kUnrolled);
  }, ForKind::kUnrolled);

  Expr key_blocks = c32(nk);
  if (a.causal())
    key_blocks = te::max(c32(0), te::min(c32(nk), te::floordiv(te::min(i0 + c32(bq), c32(d.seq_q)) +
                                                                   c32(a.attrs.causal_offset + bk - 1),
                                                               c32(bk))));
  ib.loop("kb", c32(0), key_blocks, [&](const Var& kb) {
    const Var j0 = ib.let("j0", kb * c32(bk));
    cooperative("load_k", bk * d.head_dim, [&](Expr e) {
      Expr j = te::floordiv(e, c32(d.head_dim)), x = te::floormod(e, c32(d.head_dim));
      ib.store(k_s, {j, x}, tmpl::attention_at(a, K, d.head_dim, b, hk, te::min(j0 + j, c32(d.seq_kv - 1)), x));
    });
    cooperative("load_v", bk * d.v_head_dim, [&](Expr e) {
      Expr j = te::floordiv(e, c32(d.v_head_dim)), x = te::floormod(e, c32(d.v_head_dim));
      ib.store(v_s, {j, x}, tmpl::attention_at(a, V, d.v_head_dim, b, hk, te::min(j0 + j, c32(d.seq_kv - 1)), x));
    });
    ib.loop("r", c32(0), c32(rows), [&](const Var& r) {
      const Var row = ib.let("row", warp * c32(rows) + r);
      const Expr i = i0 + row;
      // Lane t's scores: keys t, t + 32, …
      ib.loop("u", c32(0), c32(keys), [&](const Var& u) {
        const Expr jj = u * c32(kWarp) + lane, j = j0 + jj;
        ib.store(sc, {u}, f32(0));
        ib.loop("x", c32(0), c32(d.head_dim), [&](const Var& x) {
          ib.store(sc, {u}, sc(u) + q_s(row, x) * k_s(jj, x));
        });
        Expr s = sc(u);
        if (bias.defined())
          s = s + tmpl::attention_bias(a, bias, b, h, te::min(i, c32(d.seq_q - 1)), te::min(j, c32(d.seq_kv - 1)));
        Expr valid = j < c32(d.seq_kv);
        if (a.causal()) valid = valid && j <= i + c32(a.attrs.causal_offset);
        ib.store(sc, {u}, te::select(valid, s, minus_inf));
      }, ForKind::kUnrolled);
      Expr local_max = sc(c32(0));
      for (int64_t u = 1; u < keys; ++u) local_max = te::max(local_max, sc(c32(u)));
      const Expr block_max = warp_allreduce(ib, ib.let("local_max", local_max), fmax, "block_max");
      const Var m_new = ib.let("m_new", te::max(m(r), block_max));
      const Var alpha = ib.let("alpha", te::exp(m(r) - m_new));
      ib.loop("u", c32(0), c32(keys), [&](const Var& u) {
        ib.store(sc, {u}, te::exp(sc(u) - m_new));
        ib.store(p_s, {warp, u * c32(kWarp) + lane}, sc(u));
      }, ForKind::kUnrolled);
      Expr local_sum = sc(c32(0));
      for (int64_t u = 1; u < keys; ++u) local_sum = local_sum + sc(c32(u));
      const Expr block_sum = warp_allreduce(ib, ib.let("local_sum", local_sum), fadd, "block_sum");
      ib.store(l, {r}, l(r) * alpha + block_sum);
      ib.store(m, {r}, m_new);
      // Lane t's context elements t, t + 32, … of this row.
      ib.loop("c", c32(0), c32(cols), [&](const Var& c) {
        const Expr x = c * c32(kWarp) + lane;
        auto update = [&] {
          ib.store(acc, {r, c}, acc(r, c) * alpha);
          ib.loop("j", c32(0), c32(bk), [&](const Var& j) {
            ib.store(acc, {r, c}, acc(r, c) + p_s(warp, j) * v_s(j, x));
          });
        };
        if (d.v_head_dim % kWarp == 0) update();
        else ib.if_then(x < c32(d.v_head_dim), update);
      }, ForKind::kUnrolled);
    }, ForKind::kUnrolled);
  });

  ib.loop("r", c32(0), c32(rows), [&](const Var& r) {
    const Expr i = i0 + warp * c32(rows) + r;
    ib.if_then(i < c32(d.seq_q), [&] {
      ib.loop("c", c32(0), c32(cols), [&](const Var& c) {
        const Expr x = c * c32(kWarp) + lane;
        ib.if_then(x < c32(d.v_head_dim), [&] {
          Expr y = acc(r, c) / te::max(l(r), f32(1));
          if (d.packed) ib.store(out, {b, i, h * c32(d.v_head_dim) + x}, y);
          else ib.store(out, {b, h, i, x}, y);
        });
      }, ForKind::kUnrolled);
    });
  }, ForKind::kUnrolled);
  return ib.get();
}

std::vector<Tensor> compute(const records::Workload& w) {
  const AttentionSpec a = tmpl::attention_workload(w);
  return tmpl::attention_computation(
      w, [a](const lowering::ExternContext& ctx) { return cuda_body(a, ctx); }, "attention_cuda",
      {{"block_q", 32}, {"block_k", 32}, {"warps", 4}});
}

schedule::Schedule schedule_attention_cuda(ConfigContext& cfg, const std::vector<Tensor>& args, const Target&) {
  const Tensor out = args.back();
  const int64_t bq = cfg.choice("block_q", {16, 32, 64});
  const int64_t bk = cfg.choice("block_k", {32, 64});
  const int64_t warps = cfg.choice("warps", {2, 4, 8});
  if (!cfg.defining()) {
    const AttentionSpec w = tmpl::attention_workload_of(out);
    if (bq % warps || shared_bytes(w, bq, bk, warps) > kMaxShared)
      throw InstantiationError(fmt::format("attention (cuda): block_q {} with {} warps and block_k {} needs {} rows per "
                                           "warp and {} bytes of shared memory (at most {})",
                                           bq, warps, bk, double(bq) / double(warps), shared_bytes(w, bq, bk, warps),
                                           kMaxShared));
  }
  return tmpl::attention_schedule(out, {{"block_q", bq}, {"block_k", bk}, {"warps", warps}});
}

}  // namespace

Template attention_cuda_template() {
  Template t = tmpl::attention_template_base();
  t.targets = {"cuda"};
  t.shape_doc = "batch,heads,seq_q,seq_kv,head_dim (attrs as the CPU template's)";
  t.doc = "softmax(Q*K^T*scale + bias)*V in one kernel (online softmax, shared K/V tiles, warp reductions), float32";
  t.compute = compute;
  t.schedule = schedule_attention_cuda;
  t.default_config = [](const ConfigSpace& sp) {
    tmpl::Preferences p;
    p.values["block_q"] = {32};
    p.values["block_k"] = {32};
    p.values["warps"] = {4};
    return tmpl::closest_config(sp, p);
  };
  return t;
}

}  // namespace loom::tuner
