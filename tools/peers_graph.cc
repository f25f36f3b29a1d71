// The oneDNN peer of whole networks (peers.h: graph_peer): the graph run layer by layer with
// oneDNN primitives in the layouts they choose (format_tag::any), reordering only where a
// primitive asks for another layout, as a framework built on oneDNN runs a network for
// inference. A residual add fused into a convolution is a sum post-op (the convolution adds
// into its destination, which holds the residual): oneDNN 2.6 runs a binary-add post-op only
// in its slow gemm convolution.
#include <fmt/format.h>

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <unordered_map>

#include "loom/runtime/error.h"
#include "loom/te/op_registry.h"
#include "peers.h"

#ifdef LOOM_CLI_HAVE_DNNL
#include <dnnl.hpp>
#endif

namespace loom::cli {

#ifdef LOOM_CLI_HAVE_DNNL
namespace {

using namespace dnnl;
using tag = memory::format_tag;
using dt = memory::data_type;
using graph_opt::Graph;
using graph_opt::Node;
using graph_opt::ValueRef;

memory::dims dims_of(const std::vector<int64_t>& s) { return memory::dims(s.begin(), s.end()); }

tag plain_tag(size_t ndim) {
  switch (ndim) {
    case 1: return tag::a;
    case 2: return tag::ab;
    case 3: return tag::abc;
    case 4: return tag::abcd;
    case 5: return tag::abcde;
    default: fail("oneDNN peer: tensors of {} dimensions are not supported", ndim);
  }
}

memory::desc plain_md(const std::vector<int64_t>& shape) { return memory::desc(dims_of(shape), dt::f32, plain_tag(shape.size())); }
memory::desc any_md(const std::vector<int64_t>& shape) { return memory::desc(dims_of(shape), dt::f32, tag::any); }

std::vector<int64_t> ints(const Node& n, const char* name) { return te::ops::attr_ints(n.attrs, name); }

/// The network as primitives with their arguments, built once; run() executes them in order.
class Network {
 public:
  explicit Network(const Graph& g) : g_(g), strm_(eng_) {
    auto consumers = g.consumers();
    std::set<ValueRef> outputs(g.outputs.begin(), g.outputs.end());
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const Node& n = g.nodes[i];
      ValueRef v{int(i), 0};
      if (n.is_input()) {
        mem_[v] = memory(plain_md(n.outputs[0].shape), eng_, nullptr);
        inputs_.push_back(mem_[v]);
        continue;
      }
      if (n.is_constant()) {
        mem_[v] = memory(plain_md(n.outputs[0].shape), eng_, n.value.raw_data());
        continue;
      }
      if (fused_.count(int(i))) continue;
      if (n.op == "conv2d") conv(int(i), consumers, outputs);
      else if (n.op == "dense") dense(int(i));
      else if (n.op == "relu" || n.op == "clip") eltwise(int(i));
      else if (n.op == "add") binary(int(i));
      else if (n.op == "max_pool2d" || n.op == "avg_pool2d" || n.op == "global_avg_pool2d") pool(int(i));
      else if (n.op == "flatten" || n.op == "reshape") reshape(int(i));
      else fail("oneDNN peer: no primitive for operator '{}' (node '{}')", n.op, n.name);
    }
    for (ValueRef v : g.outputs) {
      memory user(plain_md(g.type(v).shape), eng_, nullptr);
      add_reorder(value(v), user);
      outputs_.push_back(user);
    }
  }

  size_t primitives() const { return steps_.size(); }

  void run(const std::vector<runtime::NDArray>& in, const std::vector<runtime::NDArray>& out) {
    for (size_t k = 0; k < inputs_.size(); ++k) inputs_[k].set_data_handle(in[k].raw_data());
    for (size_t k = 0; k < outputs_.size(); ++k) outputs_[k].set_data_handle(out[k].raw_data());
    for (auto& s : steps_) s.prim.execute(strm_, s.args);
    strm_.wait();
  }

 private:
  struct Step {
    primitive prim;
    std::unordered_map<int, memory> args;
  };

  memory value(ValueRef v) {
    auto it = mem_.find(v);
    LOOM_CHECK(it != mem_.end(), "oneDNN peer: {} has no memory", g_.value_name(v));
    return it->second;
  }

  void add_reorder(const memory& from, const memory& to) { steps_.push_back({reorder(from, to), {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}}}); }

  /// `v`'s memory in layout `md`: itself, or a reordered copy (made once per layout).
  memory as(ValueRef v, const memory::desc& md) {
    memory m = value(v);
    if (m.get_desc() == md) return m;
    auto key = std::make_pair(v, md);
    for (const auto& [k, r] : converted_)
      if (k.first == v && k.second == md) return r;
    memory r(md, eng_);
    if (g_.node(v).is_constant()) reorder(m, r).execute(strm_, m, r), strm_.wait();  // weights: once
    else add_reorder(m, r);
    converted_.push_back({key, r});
    return r;
  }

  /// A conv, with its bias, and the elementwise chain after it (a residual add as a binary
  /// post-op, relu/clip as eltwise post-ops) when the conv's value has that one reader.
  void conv(int i, const std::vector<std::vector<int>>& consumers, const std::set<ValueRef>& outputs) {
    const Node& n = g_.nodes[size_t(i)];
    const auto& wshape = g_.type(n.inputs[1]).shape;  // O, I/groups, KH, KW
    const int64_t groups = te::ops::attr_int(n.attrs, "groups");
    std::vector<int64_t> s = ints(n, "strides"), p = ints(n, "padding"), d = ints(n, "dilation");
    memory::dims strides{s[0], s[1]}, pad{p[0], p[1]}, dil{d[0] - 1, d[1] - 1};
    memory::dims wdims = groups == 1 ? dims_of(wshape)
                                     : memory::dims{groups, wshape[0] / groups, wshape[1], wshape[2], wshape[3]};
    const auto& out_shape = n.outputs[0].shape;
    bool has_bias = n.inputs.size() > 2;

    // The post-op chain: follow single readers while they are relu / clip or an add of
    // another value of the same shape (a sum post-op: the conv accumulates into a copy of
    // that value, or into the value itself when nothing else reads it).
    post_ops po;
    std::optional<ValueRef> residual;
    ValueRef last{i, 0};
    for (;;) {
      if (outputs.count(last) || consumers[size_t(last.node)].size() != 1) break;
      int c = consumers[size_t(last.node)][0];
      const Node& cn = g_.nodes[size_t(c)];
      if (cn.op == "relu" || cn.op == "clip") {
        float lo = cn.op == "clip" ? float(te::ops::attr_float(cn.attrs, "min")) : 0.f;
        float hi = cn.op == "clip" ? float(te::ops::attr_float(cn.attrs, "max")) : 0.f;
#if DNNL_VERSION_MAJOR >= 3
        po.append_eltwise(cn.op == "clip" ? algorithm::eltwise_clip : algorithm::eltwise_relu, lo, hi);
#else
        po.append_eltwise(1.f, cn.op == "clip" ? algorithm::eltwise_clip : algorithm::eltwise_relu, lo, hi);
#endif
      } else if (cn.op == "add" && !residual && cn.inputs.size() == 2 &&
                 g_.type(cn.inputs[0]).shape == g_.type(cn.inputs[1]).shape) {
        ValueRef other = cn.inputs[0] == last ? cn.inputs[1] : cn.inputs[0];
        if (other == last || !mem_.count(other)) break;
        po.append_sum(1.f);
        residual = other;
      } else {
        break;
      }
      fused_.insert(c);
      last = {c, 0};
    }
    primitive_attr attr;
    attr.set_post_ops(po);
    memory::desc bias_md = has_bias ? plain_md({out_shape[1]}) : memory::desc();
#if DNNL_VERSION_MAJOR >= 3
    convolution_forward::primitive_desc pd(eng_, prop_kind::forward_inference, algorithm::convolution_direct,
                                           any_md(g_.type(n.inputs[0]).shape), memory::desc(wdims, dt::f32, tag::any),
                                           bias_md, any_md(out_shape), strides, dil, pad, pad, attr);
#else
    convolution_forward::desc cd = has_bias ? convolution_forward::desc(
                                                  prop_kind::forward_inference, algorithm::convolution_direct,
                                                  any_md(g_.type(n.inputs[0]).shape), memory::desc(wdims, dt::f32, tag::any),
                                                  bias_md, any_md(out_shape), strides, dil, pad, pad)
                                            : convolution_forward::desc(
                                                  prop_kind::forward_inference, algorithm::convolution_direct,
                                                  any_md(g_.type(n.inputs[0]).shape), memory::desc(wdims, dt::f32, tag::any),
                                                  any_md(out_shape), strides, dil, pad, pad);
    convolution_forward::primitive_desc pd(cd, attr, eng_);
#endif
    memory weights_plain(memory::desc(wdims, dt::f32, groups == 1 ? tag::oihw : tag::goihw), eng_,
                         g_.node(n.inputs[1]).value.raw_data());
    memory weights(pd.weights_desc(), eng_);
    reorder(weights_plain, weights).execute(strm_, weights_plain, weights);
    strm_.wait();
    memory src = as(n.inputs[0], pd.src_desc());
    memory dst;
    if (residual) {
      memory r = value(*residual);
      bool sole_reader = consumers[size_t(residual->node)].size() == 1 && !outputs.count(*residual) &&
                         !g_.node(*residual).is_constant() && !g_.node(*residual).is_input();
      if (sole_reader && r.get_desc() == pd.dst_desc()) {
        dst = r;
      } else {
        dst = memory(pd.dst_desc(), eng_);
        add_reorder(r, dst);
      }
    } else {
      dst = memory(pd.dst_desc(), eng_);
    }
    std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DST, dst}};
    if (has_bias) args[DNNL_ARG_BIAS] = value(n.inputs[2]);
    steps_.push_back({convolution_forward(pd), args});
    mem_[last] = dst;
  }

  void dense(int i) {
    const Node& n = g_.nodes[size_t(i)];
    const auto& out_shape = n.outputs[0].shape;
    bool has_bias = n.inputs.size() > 2;
    memory::desc src_md = plain_md(g_.type(n.inputs[0]).shape);
    memory::desc wei_any = any_md(g_.type(n.inputs[1]).shape);
#if DNNL_VERSION_MAJOR >= 3
    inner_product_forward::primitive_desc pd(eng_, prop_kind::forward_inference, src_md, wei_any,
                                             has_bias ? plain_md({out_shape[1]}) : memory::desc(), any_md(out_shape));
#else
    inner_product_forward::desc d = has_bias ? inner_product_forward::desc(prop_kind::forward_inference, src_md, wei_any,
                                                                           plain_md({out_shape[1]}), any_md(out_shape))
                                             : inner_product_forward::desc(prop_kind::forward_inference, src_md, wei_any,
                                                                           any_md(out_shape));
    inner_product_forward::primitive_desc pd(d, eng_);
#endif
    memory dst(pd.dst_desc(), eng_);
    std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, as(n.inputs[0], pd.src_desc())},
                                            {DNNL_ARG_WEIGHTS, as(n.inputs[1], pd.weights_desc())},
                                            {DNNL_ARG_DST, dst}};
    if (has_bias) args[DNNL_ARG_BIAS] = value(n.inputs[2]);
    steps_.push_back({inner_product_forward(pd), args});
    mem_[{i, 0}] = dst;
  }

  void eltwise(int i) {
    const Node& n = g_.nodes[size_t(i)];
    memory src = value(n.inputs[0]);
    float lo = n.op == "clip" ? float(te::ops::attr_float(n.attrs, "min")) : 0.f;
    float hi = n.op == "clip" ? float(te::ops::attr_float(n.attrs, "max")) : 0.f;
    algorithm a = n.op == "clip" ? algorithm::eltwise_clip : algorithm::eltwise_relu;
#if DNNL_VERSION_MAJOR >= 3
    eltwise_forward::primitive_desc pd(eng_, prop_kind::forward_inference, a, src.get_desc(), src.get_desc(), lo, hi);
#else
    eltwise_forward::primitive_desc pd(eltwise_forward::desc(prop_kind::forward_inference, a, src.get_desc(), lo, hi),
                                       eng_);
#endif
    memory dst(pd.dst_desc(), eng_);
    steps_.push_back({eltwise_forward(pd), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}}});
    mem_[{i, 0}] = dst;
  }

  void binary(int i) {
    const Node& n = g_.nodes[size_t(i)];
    memory a = value(n.inputs[0]);
    memory b = as(n.inputs[1], a.get_desc());
#if DNNL_VERSION_MAJOR >= 3
    binary::primitive_desc pd(eng_, algorithm::binary_add, a.get_desc(), b.get_desc(), a.get_desc());
#else
    binary::primitive_desc pd(binary::desc(algorithm::binary_add, a.get_desc(), b.get_desc(), a.get_desc()), eng_);
#endif
    memory dst(pd.dst_desc(), eng_);
    steps_.push_back({dnnl::binary(pd), {{DNNL_ARG_SRC_0, a}, {DNNL_ARG_SRC_1, b}, {DNNL_ARG_DST, dst}}});
    mem_[{i, 0}] = dst;
  }

  void pool(int i) {
    const Node& n = g_.nodes[size_t(i)];
    const auto& in_shape = g_.type(n.inputs[0]).shape;
    memory::dims kernel, strides, pad{0, 0};
    algorithm a = algorithm::pooling_max;
    if (n.op == "global_avg_pool2d") {
      kernel = {in_shape[2], in_shape[3]};
      strides = {1, 1};
      a = algorithm::pooling_avg_exclude_padding;
    } else {
      std::vector<int64_t> k = ints(n, "pool_size"), s = ints(n, "strides"), p = ints(n, "padding");
      kernel = {k[0], k[1]};
      strides = {s[0], s[1]};
      pad = {p[0], p[1]};
      if (n.op == "avg_pool2d")
        a = te::ops::attr_int(n.attrs, "count_include_pad") ? algorithm::pooling_avg_include_padding
                                                           : algorithm::pooling_avg_exclude_padding;
    }
    memory src = value(n.inputs[0]);
    // Padding on the high side as the output size needs (a ceil-mode pool pads more there).
    const auto& out_shape = n.outputs[0].shape;
    memory::dims pad_r{(out_shape[2] - 1) * strides[0] + kernel[0] - in_shape[2] - pad[0],
                       (out_shape[3] - 1) * strides[1] + kernel[1] - in_shape[3] - pad[1]};
#if DNNL_VERSION_MAJOR >= 3
    pooling_forward::primitive_desc pd(eng_, prop_kind::forward_inference, a, src.get_desc(), any_md(out_shape), strides,
                                       kernel, memory::dims{0, 0}, pad, pad_r);
#else
    pooling_forward::primitive_desc pd(
        pooling_forward::desc(prop_kind::forward_inference, a, src.get_desc(), any_md(out_shape), strides, kernel, pad,
                              pad_r),
        eng_);
#endif
    memory dst(pd.dst_desc(), eng_);
    steps_.push_back({pooling_forward(pd), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}}});
    mem_[{i, 0}] = dst;
  }

  /// flatten/reshape: the value in plain layout, viewed with the new shape.
  void reshape(int i) {
    const Node& n = g_.nodes[size_t(i)];
    memory plain = as(n.inputs[0], plain_md(g_.type(n.inputs[0]).shape));
    mem_[{i, 0}] = memory(plain_md(n.outputs[0].shape), eng_, plain.get_data_handle());
  }

  const Graph& g_;
  engine eng_{engine::kind::cpu, 0};
  stream strm_;
  std::map<ValueRef, memory> mem_;
  std::vector<std::pair<std::pair<ValueRef, memory::desc>, memory>> converted_;
  std::set<int> fused_;
  std::vector<Step> steps_;
  std::vector<memory> inputs_, outputs_;
};

}  // namespace
#endif

std::optional<GraphPeer> graph_peer(const graph_opt::Graph& g, std::string* why_not) {
#ifdef LOOM_CLI_HAVE_DNNL
  try {
    auto net = std::make_shared<Network>(g);
    GraphPeer p;
    p.name = fmt::format("oneDNN {}.{}, {} primitives layer by layer (blocked layouts, conv post-ops)",
                         DNNL_VERSION_MAJOR, DNNL_VERSION_MINOR, net->primitives());
    p.run = [net](const std::vector<runtime::NDArray>& in, const std::vector<runtime::NDArray>& out) { net->run(in, out); };
    return p;
  } catch (const std::exception& e) {
    if (why_not) *why_not = e.what();
    return std::nullopt;
  }
#else
  if (why_not) *why_not = "built without oneDNN";
  return std::nullopt;
#endif
}

}  // namespace loom::cli
