// The attention templates' workload and computation.
#include <fmt/ranges.h>

#include <algorithm>

#include "attention.h"

namespace loom::tuner::tmpl {

AttentionSpec attention_workload(const records::Workload& w) {
  LOOM_CHECK(w.dtype == "float32", "{}: dtype must be float32, got '{}'", w.op, w.dtype);
  AttentionSpec a;
  a.dims = te::ops::parse_attention_workload(w.shape, w.attrs, &a.attrs, w.op);
  return a;
}

std::vector<te::Tensor> attention_inputs(const AttentionSpec& a) {
  const te::ops::AttentionDims& d = a.dims;
  auto shape = [&](int64_t heads, int64_t seq, int64_t dim) -> std::vector<te::Expr> {
    if (d.packed) return {c32(d.batch), c32(seq), c32(heads * dim)};
    return {c32(d.batch), c32(heads), c32(seq), c32(dim)};
  };
  std::vector<te::Tensor> in = {te::placeholder(shape(d.heads, d.seq_q, d.head_dim), DataType::Float(32), "query"),
                                te::placeholder(shape(d.kv_heads, d.seq_kv, d.head_dim), DataType::Float(32), "key"),
                                te::placeholder(shape(d.kv_heads, d.seq_kv, d.v_head_dim), DataType::Float(32), "value")};
  if (!d.bias.empty()) {
    std::vector<te::Expr> s;
    for (int64_t x : d.bias) s.push_back(c32(x));
    in.push_back(te::placeholder(s, DataType::Float(32), "bias"));
  }
  return in;
}

std::vector<te::Tensor> attention_computation(const records::Workload& w, lowering::LoopBodyBuilder body,
                                              const std::string& body_name, std::map<std::string, int64_t> params) {
  const AttentionSpec a = attention_workload(w);
  std::vector<te::Tensor> args = attention_inputs(a);
  // The workload rides on the operation (attention_workload_of reads it back).
  std::map<std::string, std::string> op_attrs = w.attrs;
  op_attrs["shape"] = fmt::format("{}", fmt::join(w.shape, ","));
  std::vector<te::Expr> out;
  for (int64_t x : a.dims.output_shape()) out.push_back(c32(x));
  const te::ops::AttentionAttrs attrs = a.attrs;
  te::Tensor o = te::extern_op(
      "attention", {out}, {DataType::Float(32)}, args, lowering::loop_body(body_name, std::move(body)),
      std::move(params),
      [attrs](const std::vector<te::Tensor>& in) {
        return std::vector<te::Tensor>{
            te::ops::attention(in[0], in[1], in[2], in.size() > 3 ? in[3] : te::Tensor(), attrs, "attention")};
      },
      "attention", std::move(op_attrs))[0];
  args.push_back(o);
  return args;
}

AttentionSpec attention_workload_of(const te::Tensor& out) {
  LOOM_CHECK(out.defined() && out.op()->kind == te::OpKind::kExtern && out.op()->attrs.count("shape"),
             "attention: '{}' is not the attention templates' computation", out.defined() ? out.name() : "(undefined)");
  records::Workload w;
  w.op = "attention";
  w.attrs = out.op()->attrs;
  w.attrs.erase("shape");
  const std::string& text = out.op()->attrs.at("shape");
  for (size_t pos = 0; pos <= text.size();) {
    const size_t end = std::min(text.find(',', pos), text.size());
    w.shape.push_back(std::stoll(text.substr(pos, end - pos)));
    pos = end + 1;
  }
  return attention_workload(w);
}

schedule::Schedule attention_schedule(const te::Tensor& out, const std::map<std::string, int64_t>& params) {
  Schedule s = create_schedule({out});
  for (const auto& [key, value] : params) s[out].extern_param(key, value);
  return s;
}

Template attention_template_base() {
  Template t;
  t.name = "attention";
  t.check = [](const records::Workload& w) { attention_workload(w); };
  t.flop = [](const records::Workload& w) { return attention_workload(w).dims.flop(); };
  return t;
}

te::Expr attention_at(const AttentionSpec& a, const te::Tensor& t, int64_t dim, te::Expr b, te::Expr h, te::Expr i,
                      te::Expr x) {
  if (a.dims.packed) return t(b, i, h * c32(dim) + x);
  return t(b, h, i, x);
}

te::Expr attention_bias(const AttentionSpec& a, const te::Tensor& bias, te::Expr b, te::Expr h, te::Expr i,
                        te::Expr j) {
  const std::vector<int64_t>& s = a.dims.bias;
  if (s.empty()) return te::Expr();
  const std::vector<te::Expr> all = {b, h, i, j};
  std::vector<te::Expr> idx;
  for (size_t n = 0; n < s.size(); ++n) idx.push_back(s[n] == 1 ? c32(0) : all[4 - s.size() + n]);
  return bias(idx);
}

}  // namespace loom::tuner::tmpl
