// The operator registry: registration, lookup, attribute checking and type inference.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <memory>
#include <mutex>

#include "loom/runtime/suggest.h"
#include "loom/te/op_registry.h"
#include "register_ops.h"

namespace loom::te::ops {
namespace {

struct Registry {
  std::mutex mu;
  std::map<std::string, std::shared_ptr<const OpDef>> ops;
  std::vector<std::shared_ptr<const OpDef>> replaced;  // keeps references handed out valid
};

void add(Registry& r, OpDef def) {
  LOOM_CHECK(!def.name.empty(), "register_op: an operator needs a name");
  LOOM_CHECK(static_cast<bool>(def.compute), "register_op: operator '{}' needs a compute function", def.name);
  LOOM_CHECK(def.min_inputs <= def.inputs.size(), "register_op: operator '{}' has {} inputs but min_inputs {}",
             def.name, def.inputs.size(), def.min_inputs);
  for (const AttrSpec& a : def.attrs) {
    if (!a.default_value) continue;
    Attrs one{{a.name, *a.default_value}};
    OpDef probe;
    probe.name = def.name;
    probe.attrs = {AttrSpec{a.name, a.kind, std::nullopt, ""}};
    normalize_attrs(probe, one, "register_op");  // the default must have the attribute's kind
  }
  auto p = std::make_shared<const OpDef>(std::move(def));
  auto it = r.ops.find(p->name);
  if (it != r.ops.end()) r.replaced.push_back(it->second);
  r.ops[p->name] = p;
}

// The built-in operators register once, on the registry's first use: one explicit list, not
// static initializers, which a static libloom would drop and which run in no defined order.
Registry& ready_registry() {
  static Registry r;
  static std::once_flag once;
  std::call_once(once, [&] {
    std::lock_guard<std::mutex> lock(r.mu);
    for (auto* family : {detail::nn_ops, detail::elementwise_ops, detail::reduce_ops, detail::transform_ops,
                          detail::quantize_ops, detail::softmax_family_ops, detail::shape_ops, detail::logic_ops,
                          detail::search_ops, detail::spatial_nd_ops, detail::resize_ops, detail::linalg_ops,
                          detail::vision_ops, detail::qnn_ops, detail::loss_ops,
                          detail::attention_ops})
      for (OpDef& d : family()) add(r, std::move(d));
  });
  return r;
}

const char* kind_of(const AttrValue& v) {
  switch (v.index()) {
    case 0: return "int";
    case 1: return "float";
    case 2: return "string";
    case 3: return "ints";
    default: return "floats";
  }
}

/// `v` converted to `kind` where that loses nothing (an int where a float is expected, ints
/// where floats are, an empty list either way); nullopt when it does not fit.
std::optional<AttrValue> convert(const AttrValue& v, AttrKind kind) {
  switch (kind) {
    case AttrKind::kInt:
      if (auto* i = std::get_if<int64_t>(&v)) return *i;
      if (auto* d = std::get_if<double>(&v); d && std::isfinite(*d) && *d == std::floor(*d) && std::abs(*d) < 9e15)
        return int64_t(*d);
      return std::nullopt;
    case AttrKind::kFloat:
      if (auto* d = std::get_if<double>(&v)) return *d;
      if (auto* i = std::get_if<int64_t>(&v)) return double(*i);
      return std::nullopt;
    case AttrKind::kString:
      if (auto* s = std::get_if<std::string>(&v)) return *s;
      return std::nullopt;
    case AttrKind::kInts:
      if (auto* l = std::get_if<std::vector<int64_t>>(&v)) return *l;
      if (auto* l = std::get_if<std::vector<double>>(&v); l && l->empty()) return std::vector<int64_t>{};
      return std::nullopt;
    case AttrKind::kFloats:
      if (auto* l = std::get_if<std::vector<double>>(&v)) return *l;
      if (auto* l = std::get_if<std::vector<int64_t>>(&v)) return std::vector<double>(l->begin(), l->end());
      return std::nullopt;
  }
  return std::nullopt;
}

std::string prefix(const std::string& where) { return where.empty() ? "" : where + ": "; }

/// The dtype of every output and the layout rule of OpDef::infer_type's default: outputs of
/// elementwise and broadcast operators keep the layout of an input of the same shape.
std::vector<TensorType> types_from_compute(const OpDef& def, const std::vector<TensorType>& inputs,
                                           const Attrs& attrs) {
  std::vector<Tensor> ph;
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::vector<Expr> shape;
    for (int64_t d : inputs[i].shape) {
      LOOM_CHECK(d >= 1 && d <= INT32_MAX, "input {} ('{}') has extent {}; extents must be in [1, 2^31-1]", i,
                 i < def.inputs.size() ? def.inputs[i] : def.inputs.back(), d);
      shape.push_back(make_const(DataType::Int(32), d));
    }
    ph.push_back(placeholder(std::move(shape), inputs[i].dtype, fmt::format("in{}", i)));
  }
  std::vector<TensorType> out;
  for (const Tensor& t : def.compute(ph, attrs)) {
    TensorType tt;
    tt.dtype = t.dtype();
    for (const Expr& e : t.shape()) tt.shape.push_back(*as_const_int(e));
    if (def.pattern == OpPattern::kElemwise || def.pattern == OpPattern::kBroadcast)
      for (const TensorType& in : inputs)
        if (in.shape == tt.shape && !in.layout.empty()) {
          tt.layout = in.layout;
          break;
        }
    out.push_back(std::move(tt));
  }
  return out;
}

}  // namespace

const char* to_string(OpPattern p) {
  switch (p) {
    case OpPattern::kElemwise: return "elemwise";
    case OpPattern::kBroadcast: return "broadcast";
    case OpPattern::kInjective: return "injective";
    case OpPattern::kCommReduce: return "reduce";
    case OpPattern::kOutEWiseFusable: return "out_elemwise_fusable";
    case OpPattern::kOpaque: return "opaque";
  }
  return "?";
}

const char* to_string(AttrKind k) {
  switch (k) {
    case AttrKind::kInt: return "int";
    case AttrKind::kFloat: return "float";
    case AttrKind::kString: return "string";
    case AttrKind::kInts: return "ints";
    case AttrKind::kFloats: return "floats";
  }
  return "?";
}

std::string to_string(const TensorType& t) {
  std::string s = fmt::format("{}[{}]", t.dtype.str(), fmt::join(t.shape, ","));
  if (!t.layout.empty()) s += "@" + t.layout;
  return s;
}

std::string to_string(const AttrValue& v) {
  if (auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (auto* d = std::get_if<double>(&v)) return fmt::format("{}", *d);
  if (auto* s = std::get_if<std::string>(&v)) return fmt::format("\"{}\"", *s);
  if (auto* l = std::get_if<std::vector<int64_t>>(&v)) return fmt::format("[{}]", fmt::join(*l, ","));
  return fmt::format("[{}]", fmt::join(std::get<std::vector<double>>(v), ","));
}

void register_op(OpDef def) {
  Registry& r = ready_registry();
  std::lock_guard<std::mutex> lock(r.mu);
  add(r, std::move(def));
}

const OpDef* find_op(const std::string& name) {
  Registry& r = ready_registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.ops.find(name);
  return it == r.ops.end() ? nullptr : it->second.get();
}

const OpDef& get_op(const std::string& name) {
  if (const OpDef* d = find_op(name)) return *d;
  const std::vector<std::string> names = op_names();
  const std::string hint = did_you_mean(name, names);
  fail("no operator '{}'{} (operators: {})", name, hint.empty() ? "" : "; " + hint, fmt::join(names, ", "));
}

std::vector<std::string> op_names() {
  Registry& r = ready_registry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<std::string> names;
  for (const auto& [n, _] : r.ops) names.push_back(n);
  return names;
}

Attrs normalize_attrs(const OpDef& def, const Attrs& attrs, const std::string& where) {
  Attrs out;
  for (const auto& [name, value] : attrs) {
    const AttrSpec* spec = nullptr;
    for (const AttrSpec& a : def.attrs)
      if (a.name == name) spec = &a;
    if (!spec) {
      std::vector<std::string> known;
      for (const AttrSpec& a : def.attrs) known.push_back(a.name);
      fail("{}operator '{}' has no attribute '{}' (its attributes: {})", prefix(where), def.name, name,
           known.empty() ? std::string("none") : fmt::format("{}", fmt::join(known, ", ")));
    }
    std::optional<AttrValue> v = convert(value, spec->kind);
    LOOM_CHECK(v.has_value(), "{}operator '{}': attribute '{}' must be {} but is {} {}", prefix(where), def.name, name,
               to_string(spec->kind), kind_of(value), to_string(value));
    out[name] = std::move(*v);
  }
  for (const AttrSpec& a : def.attrs) {
    if (out.count(a.name)) continue;
    LOOM_CHECK(a.default_value.has_value(), "{}operator '{}': the required attribute '{}' ({}{}) is missing",
               prefix(where), def.name, a.name, to_string(a.kind), a.doc.empty() ? "" : ": " + a.doc);
    out[a.name] = *a.default_value;
  }
  return out;
}

namespace {

/// Checks the number of inputs `def` takes.
void check_input_count(const OpDef& def, size_t n) {
  const std::string& op = def.name;
  const bool variadic = def.inputs.size() == 1 && def.inputs[0].ends_with("...");
  if (variadic) {
    LOOM_CHECK(n >= std::max<size_t>(def.min_inputs, 1), "operator '{}' takes at least {} input(s), got {}", op,
               std::max<size_t>(def.min_inputs, 1), n);
  } else {
    LOOM_CHECK(n >= def.min_inputs && n <= def.inputs.size(),
               "operator '{}' takes {} input(s) ({}), got {}", op,
               def.min_inputs == def.inputs.size() ? std::to_string(def.inputs.size())
                                                   : fmt::format("{} to {}", def.min_inputs, def.inputs.size()),
               fmt::join(def.inputs, ", "), n);
  }
}

}  // namespace

std::vector<TensorType> infer_type(const std::string& op, const std::vector<TensorType>& inputs, const Attrs& attrs) {
  const OpDef& def = get_op(op);
  check_input_count(def, inputs.size());
  Attrs norm = normalize_attrs(def, attrs);
  try {
    return def.infer_type ? def.infer_type(inputs, norm) : types_from_compute(def, inputs, norm);
  } catch (const Error& e) {
    std::vector<std::string> ins;
    for (const TensorType& t : inputs) ins.push_back(to_string(t));
    fail("operator '{}' on ({}): {}", op, fmt::join(ins, ", "), e.what());
  }
}

std::vector<Tensor> apply_op(const std::string& op, const std::vector<Tensor>& inputs, const Attrs& attrs) {
  const OpDef& def = get_op(op);
  check_input_count(def, inputs.size());
  Attrs norm = normalize_attrs(def, attrs);
  for (size_t i = 0; i < inputs.size(); ++i) LOOM_CHECK(inputs[i].defined(), "operator '{}': input {} is undefined", op, i);
  try {
    return def.compute(inputs, norm);
  } catch (const Error& e) {
    fail("operator '{}': {}", op, e.what());
  }
}

std::optional<TemplateCall> select_template(const std::string& op, const std::string& target_kind,
                                            const std::vector<TensorType>& inputs, const Attrs& attrs) {
  const OpDef& def = get_op(op);
  auto it = def.strategy.find(target_kind);
  if (it == def.strategy.end()) return std::nullopt;
  check_input_count(def, inputs.size());
  return it->second(inputs, normalize_attrs(def, attrs));
}

std::vector<TensorType> infer_from_compute(const OpDef& def, const std::vector<TensorType>& inputs,
                                           const Attrs& attrs) {
  return types_from_compute(def, inputs, attrs);
}

namespace {

const AttrValue& attr(const Attrs& a, const std::string& name) {
  auto it = a.find(name);
  LOOM_CHECK(it != a.end(), "attribute '{}' is missing", name);
  return it->second;
}

template <typename T>
const T& attr_as(const Attrs& a, const std::string& name, const char* kind) {
  const AttrValue& v = attr(a, name);
  const T* p = std::get_if<T>(&v);
  LOOM_CHECK(p != nullptr, "attribute '{}' must be {} but is {} {}", name, kind, kind_of(v), to_string(v));
  return *p;
}

}  // namespace

int64_t attr_int(const Attrs& a, const std::string& name) { return attr_as<int64_t>(a, name, "int"); }

double attr_float(const Attrs& a, const std::string& name) {
  const AttrValue& v = attr(a, name);
  if (auto* i = std::get_if<int64_t>(&v)) return double(*i);
  return attr_as<double>(a, name, "float");
}

const std::string& attr_str(const Attrs& a, const std::string& name) { return attr_as<std::string>(a, name, "string"); }

std::vector<int64_t> attr_ints(const Attrs& a, const std::string& name) {
  return attr_as<std::vector<int64_t>>(a, name, "ints");
}

std::vector<double> attr_floats(const Attrs& a, const std::string& name) {
  const AttrValue& v = attr(a, name);
  if (auto* l = std::get_if<std::vector<int64_t>>(&v)) return {l->begin(), l->end()};
  return attr_as<std::vector<double>>(a, name, "floats");
}

}  // namespace loom::te::ops
