// Helpers shared by the built-in schedule templates.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "templates.h"

namespace loom::tuner {

std::vector<Template> builtin_templates() {
  std::vector<Template> all = {matmul_template(),
                               batch_matmul_template(),
                               dense_template(),
                               dense_pack_template(),
                               dense_bias_relu_template(),
                               conv2d_nchw_template(),
                               conv2d_nchwc_template(),
                               conv2d_nchwc_winograd_template(),
                               depthwise_conv2d_nchw_template(),
                               depthwise_conv2d_nchwc_template(),
                               softmax_template(),
                               attention_template(),
                               attention_cuda_template()};
  for (Template& t : cuda_templates()) all.push_back(std::move(t));
  for (Template& t : tensorize_templates()) all.push_back(std::move(t));
  return all;
}

namespace tmpl {

void check_shape(const records::Workload& w, const std::vector<std::string>& names) {
  LOOM_CHECK(w.dtype == "float32", "{}: dtype must be float32, got '{}'", w.op, w.dtype);
  LOOM_CHECK(w.shape.size() == names.size(), "{}: shape must be [{}] ({} sizes), got {} sizes", w.op,
             fmt::join(names, ", "), names.size(), w.shape.size());
  for (size_t i = 0; i < names.size(); ++i)
    LOOM_CHECK(w.shape[i] >= 1 && w.shape[i] <= INT32_MAX, "{}: size {} must be in [1, 2^31-1], got {}", w.op,
               names[i], w.shape[i]);
}

int64_t int_attr(const records::Workload& w, const std::string& key, int64_t def, int64_t lo) {
  auto it = w.attrs.find(key);
  if (it == w.attrs.end()) return def;
  size_t used = 0;
  int64_t v = 0;
  try {
    v = std::stoll(it->second, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  LOOM_CHECK(used == it->second.size() && used > 0, "{}: attribute {} must be an integer, got '{}'", w.op, key,
             it->second);
  LOOM_CHECK(v >= lo && v <= INT32_MAX, "{}: attribute {} must be in [{}, 2^31-1], got {}", w.op, key, lo, v);
  return v;
}

te::Tensor find_input(const te::Tensor& t, const std::string& name) {
  for (const te::Operation& op : te::post_dfs_order({t}))
    if (op->name == name) return te::output(op);
  fail("internal error: no stage '{}' feeds '{}'", name, t.name());
}

namespace {

/// dist[k][j]: how far value j of knob k is from its preference (0 for knobs without one).
std::vector<std::vector<double>> preference_distances(const ConfigSpace& space, const Preferences& prefs) {
  std::vector<std::vector<double>> dist(space.knobs().size());
  for (size_t i = 0; i < space.knobs().size(); ++i) {
    const Knob& k = space.knobs()[i];
    dist[i].assign(k.size(), 0.0);
    if (k.kind == KnobKind::kAnnotate) {
      auto it = prefs.labels.find(k.name);
      if (it == prefs.labels.end()) continue;
      for (size_t j = 0; j < k.labels.size(); ++j) dist[i][j] = k.labels[j] == it->second ? 0 : 1;
      continue;
    }
    auto it = prefs.values.find(k.name);
    if (it == prefs.values.end()) continue;
    for (size_t j = 0; j < k.values.size(); ++j) {
      const auto& v = k.values[j];
      double d = 0;
      if (k.kind == KnobKind::kSplit && v.size() == it->second.size()) {
        for (size_t p = 1; p < v.size(); ++p) d += std::abs(std::log2(double(v[p])) - std::log2(double(it->second[p])));
        // Prefer the larger factor on ties at the innermost (more vector/register work).
        d -= 1e-3 * std::log2(double(v.back()));
      } else {
        d = v == it->second ? 0 : 1;
      }
      dist[i][j] = d;
    }
  }
  return dist;
}

}  // namespace

int64_t closest_config(const ConfigSpace& space, const Preferences& prefs) {
  std::vector<std::vector<double>> dist = preference_distances(space, prefs);
  std::vector<int> choices(space.knobs().size(), 0);
  for (size_t i = 0; i < dist.size(); ++i)
    choices[i] = int(std::min_element(dist[i].begin(), dist[i].end()) - dist[i].begin());
  return space.index_of(choices);
}

int64_t closest_config(const ConfigSpace& space, const Preferences& prefs,
                       const std::function<bool(const ConfigEntity&)>& valid) {
  const int64_t first = closest_config(space, prefs);
  if (valid(space.get(first))) return first;
  std::vector<std::vector<double>> dist = preference_distances(space, prefs);
  int64_t best = -1;
  double best_d = INFINITY;
  for (int64_t idx = 0; idx < space.size(); ++idx) {
    std::vector<int> ch = space.choices_of(idx);
    double d = 0;
    for (size_t i = 0; i < ch.size(); ++i) d += dist[i][size_t(ch[i])];
    if (d < best_d && valid(space.get(idx))) best = idx, best_d = d;
  }
  return best >= 0 ? best : first;
}

SplitOptions block_split_options(int64_t extent) {
  SplitOptions o;
  o.policy = SplitOptions::kCandidates;
  o.num_outputs = 3;
  const int64_t padded = ceil_div(extent, kBlock) * kBlock;
  for (int64_t bn = kBlock; bn <= 64 && (bn == kBlock || bn <= padded); bn += kBlock) {
    for (int64_t outer = 1; outer == 1 || outer * bn <= padded; outer *= 2) o.candidates.push_back({-1, outer, bn});
  }
  return o;
}

SplitOptions row_split_options(int64_t extent) {
  SplitOptions o;
  o.policy = SplitOptions::kCandidates;
  o.num_outputs = 3;
  std::vector<int64_t> divisors;  // ascending; found in O(sqrt(extent)) so that huge extents stay quick
  for (int64_t d = 1; d <= extent / d; ++d)
    if (extent % d == 0) {
      divisors.push_back(d);
      if (d != extent / d) divisors.push_back(extent / d);
    }
  std::sort(divisors.begin(), divisors.end());
  for (int64_t mid : divisors) {
    bool six = false;
    for (int64_t inner = 1; inner <= 16; ++inner) {
      if ((extent / mid) % inner) continue;
      o.candidates.push_back({-1, mid, inner});
      six |= inner == 6;
    }
    // Six rows of two 8-wide accumulators fill AVX2's 16 registers; most extents need a tail.
    const bool pow2 = (mid & (mid - 1)) == 0;
    if (!six && pow2 && (mid == 1 || mid * 6 <= extent)) o.candidates.push_back({-1, mid, 6});
  }
  // Eight rows (AVX-512's 32 registers hold 8 x 2-3 accumulators) with a tail where no
  // divisor gives them (197 tokens); appended so that the earlier candidates keep their
  // indices in old records.
  for (int64_t mid = 1; mid * 8 <= extent; mid *= 2) {
    const std::vector<int64_t> eight{-1, mid, 8};
    if (std::find(o.candidates.begin(), o.candidates.end(), eight) == o.candidates.end()) o.candidates.push_back(eight);
  }
  return o;
}

ConvDims conv_dims(const records::Workload& w) {
  ConvDims d{w.shape[0], w.shape[1], w.shape[2], w.shape[3], w.shape[4], w.shape[5], w.shape[6],
             int_attr(w, "stride", 1, 1), int_attr(w, "pad", 0, 0), 0, 0};
  d.OH = (d.H + 2 * d.pad - d.R) / d.stride + 1;
  d.OW = (d.W + 2 * d.pad - d.S) / d.stride + 1;
  return d;
}

void check_conv(const records::Workload& w, const std::vector<std::string>& extra_attrs) {
  check_shape(w, {"N", "C", "H", "W", "K", "R", "S"});
  ConvDims d = conv_dims(w);
  LOOM_CHECK(d.H + 2 * d.pad >= d.R && d.W + 2 * d.pad >= d.S,
             "{}: kernel {}x{} is larger than the padded input {}x{}", w.op, d.R, d.S, d.H + 2 * d.pad,
             d.W + 2 * d.pad);
  std::vector<std::string> known{"stride", "pad"};
  known.insert(known.end(), extra_attrs.begin(), extra_attrs.end());
  for (const auto& [k, v] : w.attrs)
    LOOM_CHECK(std::find(known.begin(), known.end(), k) != known.end(), "{}: unknown attribute '{}' (expected {})",
               w.op, k, fmt::join(known, ", "));
}

std::function<Schedule(ConfigContext&, const std::vector<te::Tensor>&, const Target&)> bare(EpilogueSchedule f) {
  return [f = std::move(f)](ConfigContext& cfg, const std::vector<te::Tensor>& args, const Target& target) {
    return f(cfg, args.back(), args.back(), target);
  };
}

Schedule create_epilogue_schedule(const te::Tensor& anchor, const te::Tensor& output) {
  Schedule s = create_schedule({output});
  if (anchor == output) return s;
  LOOM_CHECK(anchor.ndim() == output.ndim(), "epilogue: '{}' is {}-D but its anchor '{}' is {}-D", output.name(),
             output.ndim(), anchor.name(), anchor.ndim());
  for (size_t d = 0; d < anchor.ndim(); ++d)
    LOOM_CHECK(te::as_const_int(anchor.shape()[d]) == te::as_const_int(output.shape()[d]),
               "epilogue: '{}' does not have the shape of its anchor '{}' (dim {}: {} vs {})", output.name(),
               anchor.name(), d, te::to_string(output.shape()[d]), te::to_string(anchor.shape()[d]));
  // The stages on a path from the anchor to the output: the epilogue.
  std::set<const te::OperationNode*> downstream{anchor.op().get()};
  std::vector<te::Operation> chain;
  for (const te::Operation& op : te::post_dfs_order({output})) {
    if (op == anchor.op()) continue;
    bool reads = false;
    for (const te::Tensor& in : op->input_tensors()) reads |= downstream.count(in.op().get()) > 0;
    if (!reads) continue;
    LOOM_CHECK(op->tag == "elemwise" || op->tag == "broadcast",
               "epilogue: stage '{}' (tag '{}') after the anchor '{}' is not elementwise or broadcast", op->name,
               op->tag, anchor.name());
    LOOM_CHECK(op->reduce_axis.empty(), "epilogue: stage '{}' reduces", op->name);
    downstream.insert(op.get());
    chain.push_back(op);
  }
  LOOM_CHECK(downstream.count(output.op().get()), "epilogue: '{}' does not read the anchor '{}'", output.name(),
             anchor.name());
  for (const te::Operation& op : chain)
    if (op != output.op()) s[op].compute_inline();
  // Stages that feed the epilogue's other inputs (a reshaped bias, a re-laid-out residual)
  // are inlined too; the anchor's own stages (padding, packing) stay the template's.
  std::set<const te::OperationNode*> upstream;
  for (const te::Operation& op : te::post_dfs_order({anchor})) upstream.insert(op.get());
  for (const te::Operation& op : te::post_dfs_order({output})) {
    if (op->kind != te::OpKind::kCompute || upstream.count(op.get()) || downstream.count(op.get())) continue;
    LOOM_CHECK(op->reduce_axis.empty() && (op->tag == "elemwise" || op->tag == "broadcast" || op->tag == "injective"),
               "epilogue: stage '{}' (tag '{}') feeding the epilogue of '{}' is not injective", op->name, op->tag,
               anchor.name());
    s[op].compute_inline();
  }
  return s;
}

OutputTile output_tile(Schedule& s, const te::Tensor& anchor, const te::Tensor& output) {
  if (anchor == output) {
    te::Tensor local = s.cache_write(anchor, "local");
    return {s[anchor], s[local]};
  }
  schedule::Stage acc = s[anchor];
  acc.set_scope("local");
  return {s[output], acc};
}

void unroll_tile(schedule::Stage out, const std::vector<te::IterVar>& tile) {
  for (const te::IterVar& v : tile) out.unroll(v);
}

std::vector<std::vector<int64_t>> permutations(int n) {
  std::vector<int64_t> p(size_t(n), 0);
  for (int i = 0; i < n; ++i) p[size_t(i)] = i;
  std::vector<std::vector<int64_t>> all;
  do all.push_back(p);
  while (std::next_permutation(p.begin(), p.end()));
  return all;
}

SplitOptions tile_options(int64_t extent, int64_t max) {
  SplitOptions o;
  o.policy = SplitOptions::kCandidates;
  for (int64_t f = 1; f <= std::min(extent, max); ++f)
    if (extent % f == 0 || (f & (f - 1)) == 0) o.candidates.push_back({-1, f});
  return o;
}

Preferences gemm_preferences(int64_t rows, int64_t cols) {
  Preferences p;
  p.values["tile_y"] = {-1, 4, 8};
  p.values["tile_x"] = {-1, 4, 32};
  p.values["tile_k"] = {-1, 4};
  p.labels["unroll_k"] = "unroll";
  p.values["cols_outer"] = {0};
  if (rows < cols) {
    // B (K x cols) outweighs A (rows x K): stream B once, a 48-column panel (8 x 3
    // accumulators) at a time, while every row passes.
    p.values["cols_outer"] = {1};
    p.values["tile_x"] = {-1, 1, 48};
  }
  return p;
}

void schedule_gemm(ConfigContext& cfg, schedule::Stage out, const te::IterVar& batch, const te::IterVar& y,
                   const te::IterVar& x, int64_t M, int64_t N, int64_t K, schedule::Stage acc,
                   const std::vector<te::IterVar>& acc_outer, const te::IterVar& acc_y, const te::IterVar& acc_x,
                   const te::IterVar& acc_k) {
  cfg.split("tile_y", M, row_split_options(M));
  cfg.split("tile_x", N, block_split_options(N));
  SplitOptions tk;
  tk.max_factor = 16;
  cfg.split("tile_k", K, tk);
  cfg.annotate("unroll_k", {"unroll", "none"});
  // Which operand the outer tiles stream once: rows outermost (0) re-reads B's panels for
  // every block of rows; columns outermost (1) keeps a B panel in cache while all the rows
  // pass, which is what a weight much larger than the activations (a transformer's dense
  // layers over a few hundred tokens) needs. Where there are at least as many rows as
  // columns, rows outermost already streams the larger operand once: the knob keeps one value
  // there, so square and tall spaces are as large as before it was added.
  const std::vector<int64_t> orders = M < N ? std::vector<int64_t>{0, 1} : std::vector<int64_t>{0};
  const int64_t cols_outer = cfg.choice("cols_outer", orders, /*absent_means_first=*/true);

  auto yp = cfg.apply_split("tile_y", out, y);
  auto xp = cfg.apply_split("tile_x", out, x);
  std::vector<te::IterVar> order;
  if (batch.defined()) order.push_back(batch);
  if (cols_outer)
    order.insert(order.end(), {xp[0], yp[0], yp[1], xp[1], yp[2], xp[2]});
  else
    order.insert(order.end(), {yp[0], xp[0], yp[1], xp[1], yp[2], xp[2]});
  out.reorder(order);
  std::vector<te::IterVar> outer(order.begin(), order.end() - 4);
  out.parallel(outer.size() > 1 ? out.fuse(outer) : outer[0]);
  auto [xr, xv] = out.split(xp[2], kBlock);
  out.vectorize(xv);
  unroll_tile(out, {yp[2], xr});

  acc.compute_at(out, xp[1]);
  auto kp = cfg.apply_split("tile_k", acc, acc_k);
  te::IterVar ko = kp[0], ki = kp[1];
  auto [xcr, xcv] = acc.split(acc_x, kBlock);
  std::vector<te::IterVar> acc_order = acc_outer;
  acc_order.insert(acc_order.end(), {ko, ki, acc_y, xcr, xcv});
  acc.reorder(acc_order);
  cfg.apply_annotate("unroll_k", acc, ki);
  acc.unroll(acc_y);
  acc.unroll(xcr);
  acc.vectorize(xcv);
}

bool schedule_pad(ConfigContext& cfg, Schedule& s, const te::Tensor& out, const std::vector<int64_t>& values) {
  te::Operation pad_op;
  for (const te::Operation& op : te::post_dfs_order({out}))
    if (op->name == "pad") pad_op = op;
  if (!pad_op) return false;
  schedule::Stage pad = s[te::output(pad_op)];
  if (cfg.choice("pad_inline", values)) {
    pad.compute_inline();
    return true;
  }
  pad.parallel(pad.fuse(pad.axis(0), pad.axis(1)));
  const auto& leaves = pad.leaf_iter_vars();
  if (te::as_const_int(leaves.back()->dom.extent) == kBlock && leaves.size() >= 4) pad.vectorize(leaves.back());
  return false;
}

void schedule_pack(schedule::Stage pack) {
  const auto& leaves = pack.leaf_iter_vars();
  std::vector<te::IterVar> outer(leaves.begin(), leaves.end() - 2);
  pack.vectorize(leaves.back());
  pack.parallel(outer.size() > 1 ? pack.fuse(outer) : outer[0]);
}

void schedule_transpose_pack(schedule::Stage pack) {
  const auto& leaves = pack.leaf_iter_vars();
  std::vector<te::IterVar> blocks(leaves.begin(), leaves.end() - 2);
  const te::IterVar k = leaves[leaves.size() - 2], v = leaves.back();
  const te::IterVar outer = blocks.size() > 1 ? pack.fuse(blocks) : blocks[0];
  auto [ko, ki] = pack.split(k, te::Expr(kBlock));
  pack.reorder({outer, ko, v, ki});
  pack.unroll(v);
  pack.unroll(ki);
  pack.parallel(outer);
}

}  // namespace tmpl
}  // namespace loom::tuner
