// "attention" on CPUs: softmax(Q·Kᵀ·scale + bias) · V in one kernel, FlashAttention's online
// softmax as a loop nest of an extern operation (lowering::IRBuilder), never materializing
// the [seq_q, seq_kv] scores.
//
// One task per (batch, head, block of block_q queries), in parallel. A task keeps, per thread:
// its queries transposed and scaled, qᵀ [head_dim, block_q]; the running row maximum m, row
// sum l and context acc [block_q, v_head_dim]; and one block of scores, transposed, pᵀ
// [block_k, block_q]: O(block·head_dim) memory whatever the sequence. For each block of
// block_k keys (up to the causal frontier of the task's last query):
//   pᵀ[j, i] = K[j]·qᵀ[:, i] (+ bias, -inf where masked), in register tiles of tile_k keys by
//             tile_q queries, vectorized along the queries (K's elements broadcast, no
//             transpose of K);
//   m' = max(m, max_j pᵀ[j, :]); α = exp(m - m'); pᵀ = exp(pᵀ - m'); l = α·l + Σ_j pᵀ[j, :]
//             (vectorized along the queries: the row reductions are lane-wise maxima and sums);
//   acc = α·acc + P·V_block, in register tiles of tile_rows queries by v_head_dim,
//             vectorized along v_head_dim (V's rows read as they are).
// Then out = acc / max(l, 1) (a row whose every key is masked gives 0). Rows past seq_q in
// the last query block read the last query (never stored); keys past seq_kv are masked.
#include "attention.h"
#include "loom/codegen/intrinsics.h"

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


/// Largest per-thread block of scores (floats): a stack array of the code generator.
constexpr int64_t kMaxScoreBlock = 16384;

struct Blocks {
  int64_t bq, bk, tile_q, tile_k, tile_rows;
};

Blocks blocks_of(const lowering::ExternContext& ctx) {
  Blocks b{ctx.param("block_q"), ctx.param("block_k"), ctx.param("tile_q"), ctx.param("tile_k"),
           ctx.param("tile_rows")};
  b.tile_q = std::min(b.tile_q, b.bq);
  LOOM_CHECK(b.bq >= 1 && b.bk >= 1 && b.tile_q >= 1 && b.tile_k >= 1 && b.tile_rows >= 1 && b.bq % b.tile_q == 0 &&
                 b.bk % b.tile_k == 0 && b.bq % b.tile_rows == 0,
             "attention: block_q {} must be a multiple of tile_q {} and tile_rows {}, block_k {} of tile_k {}", b.bq,
             b.tile_q, b.tile_rows, b.bk, b.tile_k);
  LOOM_CHECK(b.bq * b.bk <= kMaxScoreBlock, "attention: a block of {}x{} scores exceeds {} floats", b.bq, b.bk,
             kMaxScoreBlock);
  return b;
}

lowering::Stmt cpu_body(const AttentionSpec& a, const lowering::ExternContext& ctx) {
  const te::ops::AttentionDims& d = a.dims;
  const Blocks k = blocks_of(ctx);
  const Tensor &Q = ctx.inputs[0], &K = ctx.inputs[1], &V = ctx.inputs[2], &out = ctx.outputs[0];
  const Tensor bias = d.bias.empty() ? Tensor() : ctx.inputs[3];
  const int64_t nq = (d.seq_q + k.bq - 1) / k.bq, nk = (d.seq_kv + k.bk - 1) / k.bk, group = d.heads / d.kv_heads;
  const Expr lowest = f32(-double(std::numeric_limits<float>::max()));
  const Expr minus_inf = f32(-std::numeric_limits<double>::infinity());

  IRBuilder ib;
  ib.loop("task", c32(0), c32(d.batch * d.heads * nq), [&](const Var& task) {
    const Var b = ib.let("b", te::floordiv(task, c32(d.heads * nq)));
    const Var h = ib.let("h", te::floormod(te::floordiv(task, c32(nq)), c32(d.heads)));
    const Var i0 = ib.let("i0", te::floormod(task, c32(nq)) * c32(k.bq));
    const Expr hk = group == 1 ? Expr(h) : Expr(ib.let("hk", te::floordiv(h, c32(group))));
    const Var rows = ib.let("rows", te::min(c32(k.bq), c32(d.seq_q) - i0));
    const Tensor qt = ib.scratch("q_t", {c32(d.head_dim), c32(k.bq)}, DataType::Float(32));
    const Tensor m = ib.scratch("row_max", {c32(k.bq)}, DataType::Float(32));
    const Tensor m_new = ib.scratch("new_max", {c32(k.bq)}, DataType::Float(32));
    const Tensor alpha = ib.scratch("rescale", {c32(k.bq)}, DataType::Float(32));
    const Tensor l = ib.scratch("row_sum", {c32(k.bq)}, DataType::Float(32));
    const Tensor acc = ib.scratch("context", {c32(k.bq), c32(d.v_head_dim)}, DataType::Float(32));
    const Tensor pt = ib.scratch("p_t", {c32(k.bk), c32(k.bq)}, DataType::Float(32));

    // The task's queries, transposed and scaled (a row past seq_q reads the last query).
    ib.loop("d", c32(0), c32(d.head_dim), [&](const Var& x) {
      ib.loop("i", c32(0), c32(k.bq), [&](const Var& i) {
        Expr row = te::min(i0 + i, c32(d.seq_q - 1));
        ib.store(qt, {x, i}, tmpl::attention_at(a, Q, d.head_dim, b, h, row, x) * f32(d.scale));
      }, ForKind::kVectorized);
    });
    ib.loop("i", c32(0), c32(k.bq), [&](const Var& i) {
      ib.store(m, {i}, lowest);
      ib.store(l, {i}, f32(0));
    }, ForKind::kVectorized);
    ib.loop("i", c32(0), c32(k.bq), [&](const Var& i) {
      ib.loop("c", c32(0), c32(d.v_head_dim), [&](const Var& c) { ib.store(acc, {i, c}, f32(0)); },
              ForKind::kVectorized);
    });

    // Key blocks up to the causal frontier of the task's last query.
    Expr key_blocks = c32(nk);
    if (a.causal())
      key_blocks = te::max(c32(0), te::min(c32(nk), te::floordiv(i0 + rows + c32(a.attrs.causal_offset + k.bk - 1),
                                                                 c32(k.bk))));
    ib.loop("kb", c32(0), key_blocks, [&](const Var& kb) {
      const Var j0 = ib.let("j0", kb * c32(k.bk));
      // Scores, transposed: tiles of tile_k keys by tile_q queries in registers.
      ib.loop("jo", c32(0), c32(k.bk / k.tile_k), [&](const Var& jo) {
        ib.loop("io", c32(0), c32(k.bq / k.tile_q), [&](const Var& io) {
          const Tensor tile = ib.scratch("score_tile", {c32(k.tile_k), c32(k.tile_q)}, DataType::Float(32));
          ib.loop("jr", c32(0), c32(k.tile_k), [&](const Var& jr) {
            ib.loop("ic", c32(0), c32(k.tile_q), [&](const Var& ic) { ib.store(tile, {jr, ic}, f32(0)); },
                    ForKind::kVectorized);
          }, ForKind::kUnrolled);
          ib.loop("d", c32(0), c32(d.head_dim), [&](const Var& x) {
            ib.loop("jr", c32(0), c32(k.tile_k), [&](const Var& jr) {
              Expr key = te::min(j0 + jo * c32(k.tile_k) + jr, c32(d.seq_kv - 1));
              Expr kx = tmpl::attention_at(a, K, d.head_dim, b, hk, key, x);
              ib.loop("ic", c32(0), c32(k.tile_q), [&](const Var& ic) {
                ib.store(tile, {jr, ic}, tile(jr, ic) + kx * qt(x, io * c32(k.tile_q) + ic));
              }, ForKind::kVectorized);
            }, ForKind::kUnrolled);
          });
          ib.loop("jr", c32(0), c32(k.tile_k), [&](const Var& jr) {
            ib.loop("ic", c32(0), c32(k.tile_q), [&](const Var& ic) {
              Expr jj = jo * c32(k.tile_k) + jr, ii = io * c32(k.tile_q) + ic;
              Expr j = j0 + jj, i = i0 + ii;
              Expr x = tile(jr, ic);
              if (bias.defined())
                x = x + tmpl::attention_bias(a, bias, b, h, te::min(i, c32(d.seq_q - 1)), te::min(j, c32(d.seq_kv - 1)));
              // Masked by adding -inf (indices are clamped: every read is in bounds, none predicated).
              Expr valid = j < c32(d.seq_kv);
              if (a.causal()) valid = valid && j <= i + c32(a.attrs.causal_offset);
              ib.store(pt, {jj, ii}, x + te::select(valid, f32(0), minus_inf));
            }, ForKind::kVectorized);
          }, ForKind::kUnrolled);
        });
      });
      // The online softmax, lane-wise along the queries.
      ib.loop("i", c32(0), c32(k.bq), [&](const Var& i) { ib.store(m_new, {i}, m(i)); }, ForKind::kVectorized);
      ib.loop("j", c32(0), c32(k.bk), [&](const Var& j) {
        ib.loop("i", c32(0), c32(k.bq), [&](const Var& i) { ib.store(m_new, {i}, te::max(m_new(i), pt(j, i))); },
                ForKind::kVectorized);
      });
      ib.loop("i", c32(0), c32(k.bq), [&](const Var& i) {
        ib.store(alpha, {i}, te::exp(m(i) - m_new(i)));
        ib.store(l, {i}, l(i) * alpha(i));
        ib.store(m, {i}, m_new(i));
      }, ForKind::kVectorized);
      ib.loop("j", c32(0), c32(k.bk), [&](const Var& j) {
        ib.loop("i", c32(0), c32(k.bq), [&](const Var& i) {
          ib.store(pt, {j, i}, te::exp(pt(j, i) - m_new(i)));
          ib.store(l, {i}, l(i) + pt(j, i));
        }, ForKind::kVectorized);
      });
      // acc = α·acc + P·V over the block's keys, tile_rows queries at a time.
      const Var cols = ib.let("cols", te::min(c32(k.bk), c32(d.seq_kv) - j0));
      ib.loop("io", c32(0), c32(k.bq / k.tile_rows), [&](const Var& io) {
        const Tensor tile = ib.scratch("context_tile", {c32(k.tile_rows), c32(d.v_head_dim)}, DataType::Float(32));
        ib.loop("r", c32(0), c32(k.tile_rows), [&](const Var& r) {
          Expr ii = io * c32(k.tile_rows) + r;
          ib.loop("c", c32(0), c32(d.v_head_dim), [&](const Var& c) { ib.store(tile, {r, c}, acc(ii, c) * alpha(ii)); },
                  ForKind::kVectorized);
        }, ForKind::kUnrolled);
        ib.loop("j", c32(0), cols, [&](const Var& j) {
          ib.loop("r", c32(0), c32(k.tile_rows), [&](const Var& r) {
            Expr p = pt(j, io * c32(k.tile_rows) + r);
            ib.loop("c", c32(0), c32(d.v_head_dim), [&](const Var& c) {
              ib.store(tile, {r, c}, tile(r, c) + p * tmpl::attention_at(a, V, d.v_head_dim, b, hk, j0 + j, c));
            }, ForKind::kVectorized);
          }, ForKind::kUnrolled);
        });
        ib.loop("r", c32(0), c32(k.tile_rows), [&](const Var& r) {
          ib.loop("c", c32(0), c32(d.v_head_dim), [&](const Var& c) {
            ib.store(acc, {io * c32(k.tile_rows) + r, c}, tile(r, c));
          }, ForKind::kVectorized);
        }, ForKind::kUnrolled);
      });
    });

    // out = acc / max(l, 1) for the task's rows.
    ib.loop("i", c32(0), rows, [&](const Var& i) {
      Expr norm = f32(1) / te::max(l(i), f32(1));
      ib.loop("c", c32(0), c32(d.v_head_dim), [&](const Var& c) {
        Expr y = acc(i, c) * norm;
        if (d.packed) ib.store(out, {b, i0 + i, h * c32(d.v_head_dim) + c}, y);
        else ib.store(out, {b, h, i0 + i, c}, y);
      }, ForKind::kVectorized);
    });
  }, ForKind::kParallel);
  return ib.get();
}

/// Powers of two from 16 up to `extent` rounded up to one (at least 16), at most `cap`.
std::vector<int64_t> block_choices(int64_t extent, int64_t cap) {
  std::vector<int64_t> v;
  for (int64_t b = 16; b <= cap; b *= 2) {
    v.push_back(b);
    if (b >= extent) break;
  }
  return v;
}

std::vector<Tensor> compute(const records::Workload& w) {
  const AttentionSpec a = tmpl::attention_workload(w);
  return tmpl::attention_computation(
      w, [a](const lowering::ExternContext& ctx) { return cpu_body(a, ctx); }, "attention_cpu",
      {{"block_q", 64}, {"block_k", 64}, {"tile_q", 64}, {"tile_k", 4}, {"tile_rows", 4}});
}

schedule::Schedule schedule_attention(ConfigContext& cfg, const std::vector<Tensor>& args, const Target&) {
  const Tensor out = args.back();
  const AttentionSpec a = tmpl::attention_workload_of(out);
  const int64_t bq = cfg.choice("block_q", block_choices(a.dims.seq_q, 128));
  const int64_t bk = cfg.choice("block_k", block_choices(a.dims.seq_kv, 256));
  const int64_t tile_q = cfg.choice("tile_q", {16, 32, 64});
  const int64_t tile_k = cfg.choice("tile_k", {1, 2, 4, 8});
  const int64_t tile_rows = cfg.choice("tile_rows", {1, 2, 4, 8});
  if (!cfg.defining() && bq * bk > kMaxScoreBlock)
    throw InstantiationError(fmt::format("attention: block_q {} x block_k {} scores exceed {} floats per thread", bq,
                                         bk, kMaxScoreBlock));
  return tmpl::attention_schedule(
      out, {{"block_q", bq}, {"block_k", bk}, {"tile_q", tile_q}, {"tile_k", tile_k}, {"tile_rows", tile_rows}});
}

}  // namespace

Template attention_template() {
  Template t = tmpl::attention_template_base();
  t.shape_doc = "batch,heads,seq_q,seq_kv,head_dim (attrs packed, kv_heads, v_head_dim, bias, causal, causal_offset, scale)";
  t.doc = "softmax(Q*K^T*scale + bias)*V in one kernel (online softmax), float32";
  t.compute = compute;
  t.schedule = schedule_attention;
  t.default_config = [](const ConfigSpace& sp) {
    // 64 x 64 blocks; on AVX2 (16 vector registers) narrower score tiles.
    const bool wide = codegen::target_has_feature(Target("llvm"), "avx512f");
    tmpl::Preferences p;
    p.values["block_q"] = {64};
    p.values["block_k"] = {64};
    p.values["tile_q"] = {wide ? 64 : 32};
    p.values["tile_k"] = {4};
    p.values["tile_rows"] = {wide ? 4 : 2};
    return tmpl::closest_config(sp, p);
  };
  return t;
}

}  // namespace loom::tuner
