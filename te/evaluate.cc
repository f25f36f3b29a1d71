// The reference evaluator. Each compute body is compiled once into a tree of closures over
// a frame of variable slots (ints and doubles), then run for every output element.
#include "loom/te/evaluate.h"

#include <bit>
#include <cmath>
#include <functional>
#include <type_traits>
#include <unordered_map>

#include "loom/runtime/float16.h"

namespace loom::te {

namespace {

using runtime::NDArray;

/// Variable values while evaluating one operation.
struct Frame {
  std::vector<int64_t> ints;
  std::vector<double> floats;
};

using IntFn = std::function<int64_t(Frame&)>;
using FloatFn = std::function<double(Frame&)>;

/// A compiled expression: computes an int64 (ints, bools) or a double (floats).
struct Code {
  bool is_float = false;
  IntFn i;
  FloatFn f;
};

struct Slot {
  bool is_float;
  int index;
};

Code int_code(IntFn f) { return Code{false, std::move(f), nullptr}; }
Code float_code(FloatFn f) { return Code{true, nullptr, std::move(f)}; }

FloatFn as_float(const Code& c) {
  if (c.is_float) return c.f;
  IntFn i = c.i;
  return [i](Frame& fr) { return double(i(fr)); };
}

int64_t double_to_int(double v) {
  if (std::isnan(v)) return 0;
  if (v >= 9.2233720368547758e18) return INT64_MAX;
  if (v <= -9.2233720368547758e18) return INT64_MIN;
  return int64_t(v);
}

IntFn as_int(const Code& c) {
  if (!c.is_float) return c.i;
  FloatFn f = c.f;
  return [f](Frame& fr) { return double_to_int(f(fr)); };
}

/// Wraps an int64 to an integer type's width, as a C cast does.
int64_t wrap(DataType t, int64_t v) {
  if (t.is_bool()) return v != 0;
  switch (t.bits()) {
    case 8: return t.is_int() ? int64_t(int8_t(v)) : int64_t(uint8_t(v));
    case 16: return t.is_int() ? int64_t(int16_t(v)) : int64_t(uint16_t(v));
    case 32: return t.is_int() ? int64_t(int32_t(v)) : int64_t(uint32_t(v));
    default: return v;
  }
}

/// Rounds a double to a float type's precision.
double round_to(DataType t, double v) {
  if (t.bits() == 32) return double(float(v));
  if (t.bits() == 16) return double(runtime::half_to_float(runtime::float_to_half(float(v))));
  return v;
}

/// A float operation's result rounded to its type, as the type's arithmetic rounds it (ints
/// are wrapped to their width alike): float32 x / y is not the double quotient.
Code rounded(DataType t, FloatFn f) {
  if (t.bits() >= 64) return float_code(std::move(f));
  return float_code([t, f = std::move(f)](Frame& fr) { return round_to(t, f(fr)); });
}

IntFn wrapped(DataType t, IntFn f) {
  if (t.is_integer() && t.bits() >= 64) return f;
  return [t, f](Frame& fr) { return wrap(t, f(fr)); };
}

/// Integer +, -, * wrap around (computed unsigned); floating point is plain.
template <typename T, typename Op>
T wrapping(T x, T y, Op op) {
  if constexpr (std::is_same_v<T, int64_t>) return int64_t(op(uint64_t(x), uint64_t(y)));
  else return op(x, y);
}

/// A host array as the evaluator reads and writes it.
struct Buffer {
  std::string name;
  DataType dtype;
  void* data = nullptr;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
};

double read_float(const Buffer& b, int64_t i) {
  switch (b.dtype.bits()) {
    case 16: return runtime::half_to_float(static_cast<const uint16_t*>(b.data)[i]);
    case 32: return static_cast<const float*>(b.data)[i];
    default: return static_cast<const double*>(b.data)[i];
  }
}

int64_t read_int(const Buffer& b, int64_t i) {
  const void* p = b.data;
  if (b.dtype.is_bool()) return static_cast<const uint8_t*>(p)[i] != 0;
  bool s = b.dtype.is_int();
  switch (b.dtype.bits()) {
    case 8: return s ? int64_t(static_cast<const int8_t*>(p)[i]) : int64_t(static_cast<const uint8_t*>(p)[i]);
    case 16: return s ? int64_t(static_cast<const int16_t*>(p)[i]) : int64_t(static_cast<const uint16_t*>(p)[i]);
    case 32: return s ? int64_t(static_cast<const int32_t*>(p)[i]) : int64_t(static_cast<const uint32_t*>(p)[i]);
    default: return static_cast<const int64_t*>(p)[i];
  }
}

void write_float(const Buffer& b, int64_t i, double v) {
  switch (b.dtype.bits()) {
    case 16: static_cast<uint16_t*>(b.data)[i] = runtime::float_to_half(float(v)); return;
    case 32: static_cast<float*>(b.data)[i] = float(v); return;
    default: static_cast<double*>(b.data)[i] = v; return;
  }
}

void write_int(const Buffer& b, int64_t i, int64_t v) {
  void* p = b.data;
  if (b.dtype.is_bool()) {
    static_cast<uint8_t*>(p)[i] = v != 0;
    return;
  }
  switch (b.dtype.bits()) {
    case 8: static_cast<uint8_t*>(p)[i] = uint8_t(v); return;
    case 16: static_cast<uint16_t*>(p)[i] = uint16_t(v); return;
    case 32: static_cast<uint32_t*>(p)[i] = uint32_t(v); return;
    default: static_cast<int64_t*>(p)[i] = v; return;
  }
}

void check_storable(DataType t, const std::string& what) {
  bool ok = t.is_scalar() && ((t.is_float() && (t.bits() == 16 || t.bits() == 32 || t.bits() == 64)) ||
                              (t.is_integer() && (t.bits() == 8 || t.bits() == 16 || t.bits() == 32 || t.bits() == 64)) ||
                              t.is_bool());
  LOOM_CHECK(ok, "evaluate: {} has type {}, which the evaluator cannot store", what, t.str());
}

std::string shape_text(const std::vector<int64_t>& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

std::vector<int64_t> const_shape(const std::vector<Expr>& shape, const std::string& name) {
  std::vector<int64_t> r;
  for (auto& e : shape) {
    auto c = as_const_int(e);
    if (!c) {
      std::string text;
      for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + to_string(shape[i]);
      fail("evaluate: tensor '{}' has a non-constant shape [{}]; the evaluator needs constant shapes", name, text);
    }
    LOOM_CHECK(*c >= 0, "evaluate: tensor '{}' has negative extent {}", name, *c);
    r.push_back(*c);
  }
  return r;
}

Buffer make_buffer(const std::string& name, const NDArray& a) {
  Buffer b;
  b.name = name;
  b.dtype = a.dtype();
  b.data = a.raw_data();
  b.shape = a.shape();
  b.strides.assign(b.shape.size(), 1);
  for (size_t d = b.shape.size(); d-- > 1;) b.strides[d - 1] = b.strides[d] * b.shape[d];
  return b;
}

using TensorKey = std::pair<const OperationNode*, int>;
struct TensorKeyHash {
  size_t operator()(const TensorKey& k) const { return std::hash<const void*>()(k.first) ^ size_t(k.second); }
};

using UnaryMath = double (*)(double);
const std::unordered_map<std::string, UnaryMath>& unary_intrinsics() {
  static const std::unordered_map<std::string, UnaryMath> table = {
      {"exp", [](double x) { return std::exp(x); }},
      {"exp2", [](double x) { return std::exp2(x); }},
      {"exp10", [](double x) { return std::pow(10.0, x); }},
      {"expm1", [](double x) { return std::expm1(x); }},
      {"log", [](double x) { return std::log(x); }},
      {"log2", [](double x) { return std::log2(x); }},
      {"log10", [](double x) { return std::log10(x); }},
      {"log1p", [](double x) { return std::log1p(x); }},
      {"sqrt", [](double x) { return std::sqrt(x); }},
      {"rsqrt", [](double x) { return 1.0 / std::sqrt(x); }},
      {"tanh", [](double x) { return std::tanh(x); }},
      {"sigmoid", [](double x) { return 1.0 / (1.0 + std::exp(-x)); }},
      {"fabs", [](double x) { return std::fabs(x); }},
      {"floor", [](double x) { return std::floor(x); }},
      {"ceil", [](double x) { return std::ceil(x); }},
      {"round", [](double x) { return std::nearbyint(x); }},
      {"nearbyint", [](double x) { return std::nearbyint(x); }},
      {"trunc", [](double x) { return std::trunc(x); }},
      {"erf", [](double x) { return std::erf(x); }},
      {"sin", [](double x) { return std::sin(x); }},
      {"cos", [](double x) { return std::cos(x); }},
      {"tan", [](double x) { return std::tan(x); }},
      {"asin", [](double x) { return std::asin(x); }},
      {"acos", [](double x) { return std::acos(x); }},
      {"atan", [](double x) { return std::atan(x); }},
      {"sinh", [](double x) { return std::sinh(x); }},
      {"cosh", [](double x) { return std::cosh(x); }},
      {"asinh", [](double x) { return std::asinh(x); }},
      {"acosh", [](double x) { return std::acosh(x); }},
      {"atanh", [](double x) { return std::atanh(x); }},
  };
  return table;
}

class Program;

/// A compiled reduction: leaves its result values in the reducer's lhs slots.
struct ReduceCode {
  static constexpr size_t kMaxAxes = 16;
  std::vector<int> axis_slots;
  std::vector<IntFn> axis_min, axis_extent;
  IntFn condition;  // null: always true
  std::vector<Code> source, result, start;
  std::vector<Slot> lhs, rhs;
  /// For the built-in single-value reducers (sum, prod, max, min): the combining node kind,
  /// applied directly instead of through the lhs/rhs slots. IntImm means none.
  ExprKind fast = ExprKind::IntImm;
  DataType value_type;

  /// Runs `body` once for every point of the reduce domain where the condition holds.
  template <typename F>
  void iterate(Frame& fr, F&& body) const {
    size_t na = axis_slots.size();
    int64_t lo[kMaxAxes], end[kMaxAxes];
    for (size_t a = 0; a < na; ++a) {
      lo[a] = axis_min[a](fr);
      end[a] = lo[a] + axis_extent[a](fr);
      if (end[a] <= lo[a]) return;
      fr.ints[axis_slots[a]] = lo[a];
    }
    while (true) {
      if (!condition || condition(fr)) body();
      if (na == 0) return;
      size_t a = na;
      while (true) {
        --a;
        int64_t& x = fr.ints[axis_slots[a]];
        if (++x < end[a]) break;
        x = lo[a];
        if (a == 0) return;
      }
    }
  }

  template <typename T, typename Op>
  T fold(Frame& fr, T acc, const std::function<T(Frame&)>& src, Op op) const {
    iterate(fr, [&] { acc = op(acc, src(fr)); });
    return acc;
  }

  template <typename T>
  T run_fast(Frame& fr, T acc, const std::function<T(Frame&)>& src) const {
    switch (fast) {
      case ExprKind::Add: return fold(fr, acc, src, [](T x, T y) { return wrapping(x, y, std::plus<>()); });
      case ExprKind::Mul: return fold(fr, acc, src, [](T x, T y) { return wrapping(x, y, std::multiplies<>()); });
      case ExprKind::Max: return fold(fr, acc, src, [](T x, T y) { return x > y ? x : y; });
      default: return fold(fr, acc, src, [](T x, T y) { return x < y ? x : y; });
    }
  }

  void run(Frame& fr) const {
    size_t nv = lhs.size();
    for (size_t v = 0; v < nv; ++v) assign(fr, lhs[v], start[v]);
    if (fast != ExprKind::IntImm) {
      if (lhs[0].is_float) {
        double& acc = fr.floats[lhs[0].index];
        acc = run_fast<double>(fr, acc, as_float(source[0]));
      } else {
        int64_t& acc = fr.ints[lhs[0].index];
        acc = wrap(value_type, run_fast<int64_t>(fr, acc, as_int(source[0])));
      }
      return;
    }
    int64_t tmp_i[kMaxAxes];
    double tmp_f[kMaxAxes];
    iterate(fr, [&] {
      for (size_t v = 0; v < nv; ++v) assign(fr, rhs[v], source[v]);
      if (nv == 1) {
        assign(fr, lhs[0], result[0]);
        return;
      }
      for (size_t v = 0; v < nv; ++v) {
        if (result[v].is_float) tmp_f[v] = result[v].f(fr);
        else tmp_i[v] = result[v].i(fr);
      }
      for (size_t v = 0; v < nv; ++v) {
        if (lhs[v].is_float) fr.floats[lhs[v].index] = result[v].is_float ? tmp_f[v] : double(tmp_i[v]);
        else fr.ints[lhs[v].index] = result[v].is_float ? double_to_int(tmp_f[v]) : tmp_i[v];
      }
    });
  }

  static void assign(Frame& fr, const Slot& s, const Code& c) {
    if (s.is_float) fr.floats[s.index] = c.is_float ? c.f(fr) : double(c.i(fr));
    else fr.ints[s.index] = c.is_float ? double_to_int(c.f(fr)) : c.i(fr);
  }
};

/// The node kind of a built-in reducer's combiner (x + y, x * y, max, min), else IntImm.
ExprKind builtin_combiner(const CommReducer& r) {
  if (r->result.size() != 1) return ExprKind::IntImm;
  const Expr& e = r->result[0];
  auto match = [&](const Expr& a, const Expr& b) { return a.same_as(r->lhs[0]) && b.same_as(r->rhs[0]); };
  if (auto* n = e.as<AddNode>(); n && match(n->a, n->b)) return ExprKind::Add;
  if (auto* n = e.as<MulNode>(); n && match(n->a, n->b)) return ExprKind::Mul;
  if (auto* n = e.as<MaxNode>(); n && match(n->a, n->b)) return ExprKind::Max;
  if (auto* n = e.as<MinNode>(); n && match(n->a, n->b)) return ExprKind::Min;
  return ExprKind::IntImm;
}

/// Compiles the expressions of one operation against its variable slots and buffers.
class Program {
 public:
  Program(std::string op_name, const std::unordered_map<TensorKey, Buffer, TensorKeyHash>& buffers)
      : op_name_(std::move(op_name)), buffers_(buffers) {}

  Slot bind(const Var& v) {
    Slot s{v.dtype().is_float(), v.dtype().is_float() ? num_floats_++ : num_ints_++};
    LOOM_CHECK(v.dtype().is_scalar(), "evaluate: compute '{}' binds vector variable '{}'", op_name_, v.name());
    slots_[v.get()] = s;
    return s;
  }

  Frame make_frame() const {
    Frame fr;
    fr.ints.assign(size_t(num_ints_), 0);
    fr.floats.assign(size_t(num_floats_), 0.0);
    return fr;
  }

  std::shared_ptr<ReduceCode> compile_reduce(const ReduceNode* op) {
    auto rc = std::make_shared<ReduceCode>();
    LOOM_CHECK(op->axis.size() <= ReduceCode::kMaxAxes && op->source.size() <= ReduceCode::kMaxAxes,
               "evaluate: compute '{}': too many reduce axes or values in {}", op_name_, to_string(to_expr(op)));
    for (auto& iv : op->axis) {
      LOOM_CHECK(iv.dom().min.defined() && iv.dom().extent.defined(),
                 "evaluate: compute '{}': reduce axis '{}' has no range", op_name_, iv.name());
      rc->axis_min.push_back(as_int(compile(iv.dom().min)));
      rc->axis_extent.push_back(as_int(compile(iv.dom().extent)));
    }
    for (auto& iv : op->axis) {
      LOOM_CHECK(!iv.var().dtype().is_float(), "evaluate: reduce axis '{}' is not an integer", iv.name());
      rc->axis_slots.push_back(bind(iv.var()).index);
    }
    if (op->condition.defined() && !is_one(op->condition)) rc->condition = as_int(compile(op->condition));
    const CommReducer& r = op->combiner;
    LOOM_CHECK(r && r->lhs.size() == op->source.size() && r->rhs.size() == op->source.size() &&
                   r->result.size() == op->source.size() && r->identity.size() == op->source.size(),
               "evaluate: compute '{}': malformed reducer in {}", op_name_, to_string(to_expr(op)));
    for (auto& s : op->source) rc->source.push_back(compile(s));
    for (size_t v = 0; v < op->source.size(); ++v) {
      const Expr& st = v < op->init.size() && op->init[v].defined() ? op->init[v] : r->identity[v];
      rc->start.push_back(compile(st));
    }
    for (auto& v : r->lhs) rc->lhs.push_back(bind(v));
    for (auto& v : r->rhs) rc->rhs.push_back(bind(v));
    for (auto& e : r->result) rc->result.push_back(compile(e));
    rc->value_type = r->lhs[0].dtype();
    if (rc->value_type.is_float() || rc->value_type.is_integer() || rc->value_type.is_bool())
      rc->fast = builtin_combiner(r);
    return rc;
  }

  Code compile(const Expr& e) {
    LOOM_CHECK(e.defined(), "evaluate: compute '{}' contains an undefined expression", op_name_);
    LOOM_CHECK(e.dtype().is_scalar(), "evaluate: compute '{}': vector expression {} is not part of a tensor expression",
               op_name_, to_string(e));
    DataType t = e.dtype();
    const ExprNode* n = e.get();
    switch (n->kind) {
      case ExprKind::IntImm: {
        int64_t v = e.as<IntImmNode>()->value;
        return int_code([v](Frame&) { return v; });
      }
      case ExprKind::FloatImm: {
        double v = e.as<FloatImmNode>()->value;
        return float_code([v](Frame&) { return v; });
      }
      case ExprKind::Var: {
        auto it = slots_.find(e.as<VarNode>());
        LOOM_CHECK(it != slots_.end(), "evaluate: compute '{}' uses variable '{}', which is not one of its axes",
                   op_name_, e.as<VarNode>()->name);
        int idx = it->second.index;
        if (it->second.is_float) return float_code([idx](Frame& fr) { return fr.floats[idx]; });
        return int_code([idx](Frame& fr) { return fr.ints[idx]; });
      }
      case ExprKind::Add: return arith<AddNode>(n, t, [](auto x, auto y) { return wrapping(x, y, std::plus<>()); });
      case ExprKind::Sub: return arith<SubNode>(n, t, [](auto x, auto y) { return wrapping(x, y, std::minus<>()); });
      case ExprKind::Mul: return arith<MulNode>(n, t, [](auto x, auto y) { return wrapping(x, y, std::multiplies<>()); });
      case ExprKind::Min: return arith<MinNode>(n, t, [](auto x, auto y) { return x < y ? x : y; });
      case ExprKind::Max: return arith<MaxNode>(n, t, [](auto x, auto y) { return x > y ? x : y; });
      case ExprKind::Div: return division<DivNode>(n, t, false, false);
      case ExprKind::Mod: return division<ModNode>(n, t, false, true);
      case ExprKind::FloorDiv: return division<FloorDivNode>(n, t, true, false);
      case ExprKind::FloorMod: return division<FloorModNode>(n, t, true, true);
      case ExprKind::EQ: return compare<EQNode>(n, [](auto x, auto y) { return x == y; });
      case ExprKind::NE: return compare<NENode>(n, [](auto x, auto y) { return x != y; });
      case ExprKind::LT: return compare<LTNode>(n, [](auto x, auto y) { return x < y; });
      case ExprKind::LE: return compare<LENode>(n, [](auto x, auto y) { return x <= y; });
      case ExprKind::GT: return compare<GTNode>(n, [](auto x, auto y) { return x > y; });
      case ExprKind::GE: return compare<GENode>(n, [](auto x, auto y) { return x >= y; });
      case ExprKind::And: {
        auto* p = static_cast<const AndNode*>(n);
        IntFn a = truth(compile(p->a)), b = truth(compile(p->b));
        return int_code([a, b](Frame& fr) { return int64_t(a(fr) && b(fr)); });
      }
      case ExprKind::Or: {
        auto* p = static_cast<const OrNode*>(n);
        IntFn a = truth(compile(p->a)), b = truth(compile(p->b));
        return int_code([a, b](Frame& fr) { return int64_t(a(fr) || b(fr)); });
      }
      case ExprKind::Not: {
        IntFn a = truth(compile(e.as<NotNode>()->a));
        return int_code([a](Frame& fr) { return int64_t(!a(fr)); });
      }
      case ExprKind::Select: {
        auto* p = e.as<SelectNode>();
        IntFn c = truth(compile(p->cond));
        return lazy_choice(t, c, compile(p->true_value), compile(p->false_value));
      }
      case ExprKind::Cast: return convert(compile(e.as<CastNode>()->value), t);
      case ExprKind::Call: return call(e.as<CallNode>());
      case ExprKind::Let: {
        auto* p = e.as<LetNode>();
        Code value = compile(p->value);
        Slot s = bind(p->var);
        Code body = compile(p->body);
        auto set = [s, value](Frame& fr) { ReduceCode::assign(fr, s, value); };
        if (body.is_float) {
          FloatFn b = body.f;
          return float_code([set, b](Frame& fr) { set(fr); return b(fr); });
        }
        IntFn b = body.i;
        return int_code([set, b](Frame& fr) { set(fr); return b(fr); });
      }
      case ExprKind::ProducerLoad: return load(e.as<ProducerLoadNode>());
      case ExprKind::Reduce: {
        auto* p = e.as<ReduceNode>();
        std::shared_ptr<const ReduceCode> rc = compile_reduce(p);
        Slot out = rc->lhs[size_t(p->value_index)];
        if (out.is_float) return float_code([rc, out](Frame& fr) { rc->run(fr); return fr.floats[out.index]; });
        return int_code([rc, out](Frame& fr) { rc->run(fr); return fr.ints[out.index]; });
      }
      default: break;
    }
    fail("evaluate: compute '{}': {} is not part of a tensor expression", op_name_, to_string(e));
  }

 private:
  static IntFn truth(const Code& c) {
    if (!c.is_float) return c.i;
    FloatFn f = c.f;
    return [f](Frame& fr) { return int64_t(f(fr) != 0.0); };
  }

  /// Converts a computed value to type `t`, as a C cast does (floats rounded to t's precision).
  static Code convert(const Code& c, DataType t) {
    if (t.is_float()) {
      FloatFn f = as_float(c);
      if (t.bits() == 64) return float_code(f);
      return float_code([f, t](Frame& fr) { return round_to(t, f(fr)); });
    }
    if (t.is_bool()) return int_code(truth(c));
    return int_code(wrapped(t, as_int(c)));
  }

  Code lazy_choice(DataType t, IntFn c, const Code& a, const Code& b) {
    if (t.is_float()) {
      FloatFn x = as_float(a), y = as_float(b);
      return float_code([c, x, y](Frame& fr) { return c(fr) ? x(fr) : y(fr); });
    }
    IntFn x = as_int(a), y = as_int(b);
    return int_code([c, x, y](Frame& fr) { return c(fr) ? x(fr) : y(fr); });
  }

  template <typename Node, typename Op>
  Code arith(const ExprNode* n, DataType t, Op op) {
    auto* p = static_cast<const Node*>(n);
    Code a = compile(p->a), b = compile(p->b);
    if (t.is_float()) {
      FloatFn x = as_float(a), y = as_float(b);
      return rounded(t, [x, y, op](Frame& fr) { return op(x(fr), y(fr)); });
    }
    IntFn x = as_int(a), y = as_int(b);
    if (t.is_uint() && t.bits() == 64)
      return int_code([x, y, op](Frame& fr) { return int64_t(op(uint64_t(x(fr)), uint64_t(y(fr)))); });
    return int_code(wrapped(t, [x, y, op](Frame& fr) { return op(x(fr), y(fr)); }));
  }

  template <typename Node>
  Code division(const ExprNode* n, DataType t, bool floor_mode, bool remainder) {
    auto* p = static_cast<const Node*>(n);
    Code a = compile(p->a), b = compile(p->b);
    if (t.is_float()) {
      FloatFn x = as_float(a), y = as_float(b);
      if (!remainder) {
        if (floor_mode) return rounded(t, [x, y, t](Frame& fr) { return std::floor(round_to(t, x(fr) / y(fr))); });
        return rounded(t, [x, y](Frame& fr) { return x(fr) / y(fr); });
      }
      if (floor_mode)
        return rounded(t, [x, y](Frame& fr) {
          double u = x(fr), v = y(fr);
          return u - std::floor(u / v) * v;
        });
      return rounded(t, [x, y](Frame& fr) { return std::fmod(x(fr), y(fr)); });
    }
    IntFn x = as_int(a), y = as_int(b);
    std::string text = to_string(to_expr(n));
    std::string op = op_name_;
    return int_code(wrapped(t, [x, y, floor_mode, remainder, text, op](Frame& fr) -> int64_t {
      int64_t u = x(fr), v = y(fr);
      if (v == 0) fail("evaluate: compute '{}': integer division by zero in {}", op, text);
      if (v == -1) return remainder ? 0 : int64_t(0 - uint64_t(u));
      int64_t q = u / v, r = u % v;
      if (floor_mode && r != 0 && ((r < 0) != (v < 0))) {
        q -= 1;
        r += v;
      }
      return remainder ? r : q;
    }));
  }

  template <typename Node, typename Cmp>
  Code compare(const ExprNode* n, Cmp cmp) {
    auto* p = static_cast<const Node*>(n);
    Code a = compile(p->a), b = compile(p->b);
    if (a.is_float || b.is_float) {
      FloatFn x = as_float(a), y = as_float(b);
      return int_code([x, y, cmp](Frame& fr) { return int64_t(cmp(x(fr), y(fr))); });
    }
    IntFn x = a.i, y = b.i;
    if (p->a.dtype().is_uint() && p->a.dtype().bits() == 64)
      return int_code([x, y, cmp](Frame& fr) { return int64_t(cmp(uint64_t(x(fr)), uint64_t(y(fr)))); });
    return int_code([x, y, cmp](Frame& fr) { return int64_t(cmp(x(fr), y(fr))); });
  }

  /// The bits of `arg` (one lane) as `to`, of the same width.
  Code reinterpret(const Expr& arg, DataType to) {
    const DataType from = arg.dtype();
    LOOM_CHECK(from.lanes() == 1 && to.lanes() == 1 && from.bits() == to.bits() && !from.is_bool() && !to.is_bool(),
               "evaluate: compute '{}': reinterpret of {} as {} (one lane of one width)", op_name_, from.str(), to.str());
    Code a = compile(arg);
    const int bits = from.bits();
    std::function<uint64_t(Frame&)> raw;
    if (from.is_float()) {
      FloatFn x = as_float(a);
      raw = [x, bits](Frame& fr) -> uint64_t {
        const double v = x(fr);
        if (bits == 64) return std::bit_cast<uint64_t>(v);
        if (bits == 32) return std::bit_cast<uint32_t>(float(v));
        return runtime::float_to_half(float(v));
      };
    } else {
      IntFn x = as_int(a);
      raw = [x, bits](Frame& fr) -> uint64_t {
        return bits == 64 ? uint64_t(x(fr)) : uint64_t(x(fr)) & ((uint64_t(1) << bits) - 1);
      };
    }
    if (to.is_float())
      return float_code([raw, bits](Frame& fr) -> double {
        const uint64_t r = raw(fr);
        if (bits == 64) return std::bit_cast<double>(r);
        if (bits == 32) return double(std::bit_cast<float>(uint32_t(r)));
        return double(runtime::half_to_float(uint16_t(r)));
      });
    return int_code(wrapped(to, [raw](Frame& fr) { return int64_t(raw(fr)); }));
  }

  Code call(const CallNode* op) {
    DataType t = op->dtype;
    auto nargs = [&](size_t k) {
      LOOM_CHECK(op->args.size() == k, "evaluate: compute '{}': {} takes {} arguments, got {}", op_name_, op->name, k,
                 op->args.size());
    };
    Code result;
    if (op->name == "likely") {
      nargs(1);
      return convert(compile(op->args[0]), t);
    }
    if (op->name == "if_then_else") {
      nargs(3);
      return lazy_choice(t, truth(compile(op->args[0])), compile(op->args[1]), compile(op->args[2]));
    }
    auto& unary = unary_intrinsics();
    if (auto it = unary.find(op->name); it != unary.end()) {
      nargs(1);
      UnaryMath m = it->second;
      FloatFn x = as_float(compile(op->args[0]));
      result = float_code([m, x](Frame& fr) { return m(x(fr)); });
    } else if (op->name == "pow" || op->name == "fmod" || op->name == "atan2" || op->name == "hypot") {
      nargs(2);
      FloatFn x = as_float(compile(op->args[0])), y = as_float(compile(op->args[1]));
      double (*m)(double, double) = op->name == "pow"    ? static_cast<double (*)(double, double)>(std::pow)
                                    : op->name == "fmod" ? static_cast<double (*)(double, double)>(std::fmod)
                                    : op->name == "atan2" ? static_cast<double (*)(double, double)>(std::atan2)
                                                          : static_cast<double (*)(double, double)>(std::hypot);
      result = float_code([m, x, y](Frame& fr) { return m(x(fr), y(fr)); });
    } else if (op->name == "isnan") {
      nargs(1);
      Code a = compile(op->args[0]);
      if (!a.is_float) return int_code([](Frame&) { return int64_t(0); });
      FloatFn x = as_float(a);
      return int_code([x](Frame& fr) { return int64_t(std::isnan(x(fr))); });
    } else if (op->name == "bitwise_not") {
      nargs(1);
      IntFn x = as_int(compile(op->args[0]));
      return int_code(wrapped(t, [x](Frame& fr) { return ~x(fr); }));
    } else if (op->name == "bitwise_and" || op->name == "bitwise_or" || op->name == "bitwise_xor" ||
               op->name == "shift_left" || op->name == "shift_right") {
      nargs(2);
      IntFn x = as_int(compile(op->args[0])), y = as_int(compile(op->args[1]));
      const char k = op->name == "bitwise_and" ? '&' : op->name == "bitwise_or" ? '|' : op->name == "bitwise_xor" ? '^'
                     : op->name == "shift_left" ? '<' : '>';
      // Shifts by the width or more give 0 (all sign bits for a signed right shift) rather than C's undefined behavior.
      const int bits = t.bits();
      const bool is_signed = t.is_int();
      return int_code(wrapped(t, [x, y, k, bits, is_signed](Frame& fr) -> int64_t {
        const int64_t a = x(fr), b = y(fr);
        const uint64_t ua = bits < 64 && !is_signed ? uint64_t(a) & ((uint64_t(1) << bits) - 1) : uint64_t(a);
        switch (k) {
          case '&': return a & b;
          case '|': return a | b;
          case '^': return a ^ b;
          case '<': return b < 0 || b >= bits ? 0 : int64_t(ua << b);
          default:
            if (is_signed) return b < 0 || b >= bits ? (a < 0 ? -1 : 0) : a >> b;
            return b < 0 || b >= bits ? 0 : int64_t(ua >> b);
        }
      }));
    } else if (op->name == "reinterpret") {
      nargs(1);
      return reinterpret(op->args[0], t);
    } else if (op->name == "fma") {
      nargs(3);
      FloatFn x = as_float(compile(op->args[0])), y = as_float(compile(op->args[1])),
              z = as_float(compile(op->args[2]));
      result = float_code([x, y, z](Frame& fr) { return x(fr) * y(fr) + z(fr); });
    } else {
      fail("evaluate: compute '{}': unknown intrinsic '{}' in {}", op_name_, op->name, to_string(to_expr(op)));
    }
    if (t.is_float() && result.is_float) result = rounded(t, result.f);
    return convert(result, t);
  }

  Code load(const ProducerLoadNode* op) {
    LOOM_CHECK(op->producer && op->producer->op, "evaluate: compute '{}' reads an undefined tensor", op_name_);
    auto it = buffers_.find({op->producer->op.get(), op->producer->value_index});
    LOOM_CHECK(it != buffers_.end(), "evaluate: compute '{}' reads tensor '{}', which is not computed before it",
               op_name_, op->producer->op->name);
    const Buffer* b = &it->second;
    LOOM_CHECK(op->indices.size() == b->shape.size(), "evaluate: compute '{}' reads '{}' with {} indices, expected {}",
               op_name_, b->name, op->indices.size(), b->shape.size());
    std::vector<IntFn> idx;
    for (auto& i : op->indices) idx.push_back(as_int(compile(i)));
    std::string op_name = op_name_;
    auto offset = [b, idx, op_name](Frame& fr) {
      int64_t off = 0;
      for (size_t d = 0; d < idx.size(); ++d) {
        int64_t v = idx[d](fr);
        if (v < 0 || v >= b->shape[d]) {
          std::vector<int64_t> at;
          for (auto& f : idx) at.push_back(f(fr));
          fail("evaluate: compute '{}' reads {}{} out of bounds (shape {})", op_name, b->name, shape_text(at),
               shape_text(b->shape));
        }
        off += v * b->strides[d];
      }
      return off;
    };
    if (b->dtype.is_float()) return float_code([b, offset](Frame& fr) { return read_float(*b, offset(fr)); });
    return int_code([b, offset](Frame& fr) { return read_int(*b, offset(fr)); });
  }

  std::string op_name_;
  const std::unordered_map<TensorKey, Buffer, TensorKeyHash>& buffers_;
  std::unordered_map<const VarNode*, Slot> slots_;
  int num_ints_ = 0, num_floats_ = 0;
};

/// True when every body is the same tuple reduction, differing only in value_index.
bool is_tuple_reduce(const std::vector<Expr>& body) {
  if (body.size() < 2) return false;
  auto* first = body[0].as<ReduceNode>();
  if (!first) return false;
  for (size_t i = 0; i < body.size(); ++i) {
    auto* r = body[i].as<ReduceNode>();
    if (!r || r->combiner != first->combiner || r->value_index != int(i) || r->source.size() != body.size()) return false;
    for (size_t s = 0; s < r->source.size(); ++s)
      if (!r->source[s].same_as(first->source[s])) return false;
    if (!r->condition.same_as(first->condition) || r->axis != first->axis) return false;
  }
  return true;
}

void run_compute(const OperationNode& op, const std::vector<Buffer>& outs,
                 const std::unordered_map<TensorKey, Buffer, TensorKeyHash>& buffers) {
  Program prog(op.name, buffers);
  std::vector<int> axis_slots;
  for (auto& iv : op.axis) axis_slots.push_back(prog.bind(iv.var()).index);

  // Each output value: either its own compiled body or a slot of a shared tuple reduction.
  std::shared_ptr<ReduceCode> tuple;
  std::vector<Code> bodies;
  if (is_tuple_reduce(op.body)) {
    tuple = prog.compile_reduce(op.body[0].as<ReduceNode>());
  } else {
    for (auto& b : op.body) bodies.push_back(prog.compile(b));
  }

  std::vector<int64_t> shape;
  for (auto& o : outs) LOOM_ICHECK(o.shape == outs[0].shape);
  shape = outs[0].shape;
  int64_t total = 1;
  for (int64_t s : shape) total *= s;
  if (total == 0) return;

  Frame fr = prog.make_frame();
  size_t nd = shape.size();
  for (int64_t flat = 0; flat < total; ++flat) {
    if (tuple) {
      tuple->run(fr);
      for (size_t v = 0; v < outs.size(); ++v) {
        const Slot& s = tuple->lhs[v];
        if (outs[v].dtype.is_float()) write_float(outs[v], flat, s.is_float ? fr.floats[s.index] : double(fr.ints[s.index]));
        else write_int(outs[v], flat, s.is_float ? double_to_int(fr.floats[s.index]) : fr.ints[s.index]);
      }
    } else {
      for (size_t v = 0; v < outs.size(); ++v) {
        const Code& c = bodies[v];
        if (outs[v].dtype.is_float()) write_float(outs[v], flat, c.is_float ? c.f(fr) : double(c.i(fr)));
        else write_int(outs[v], flat, c.is_float ? double_to_int(c.f(fr)) : c.i(fr));
      }
    }
    for (size_t d = nd; d-- > 0;) {
      int64_t& x = fr.ints[axis_slots[d]];
      if (++x < shape[d]) break;
      x = 0;
    }
  }
}

}  // namespace

std::vector<NDArray> evaluate(const std::vector<Tensor>& outputs, const std::map<Tensor, NDArray>& inputs) {
  std::unordered_map<TensorKey, Buffer, TensorKeyHash> buffers;
  std::unordered_map<TensorKey, NDArray, TensorKeyHash> arrays;
  for (const Operation& op : post_dfs_order(outputs)) {
    if (op->kind == OpKind::kPlaceholder) {
      Tensor t = output(op, 0);
      auto it = inputs.find(t);
      LOOM_CHECK(it != inputs.end(), "evaluate: no input array given for placeholder '{}'", op->name);
      const NDArray& a = it->second;
      LOOM_CHECK(a.defined(), "evaluate: the input array for placeholder '{}' is undefined", op->name);
      LOOM_CHECK(a.device().device_type == kDLCPU, "evaluate: the input array for placeholder '{}' is not on the host",
                 op->name);
      std::vector<int64_t> expected = const_shape(op->shape, op->name);
      LOOM_CHECK(a.shape() == expected, "evaluate: the input array for placeholder '{}' has shape {}, expected {}",
                 op->name, shape_text(a.shape()), shape_text(expected));
      LOOM_CHECK(a.dtype() == op->dtype, "evaluate: the input array for placeholder '{}' has type {}, expected {}",
                 op->name, a.dtype().str(), op->dtype.str());
      check_storable(op->dtype, fmt::format("placeholder '{}'", op->name));
      buffers[{op.get(), 0}] = make_buffer(op->name, a);
      arrays[{op.get(), 0}] = a;
      continue;
    }
    if (op->kind == OpKind::kExtern) {
      LOOM_CHECK(!op->reference.empty(),
                 "evaluate: extern operation '{}' has no reference computation (te::extern_op's `reference`)",
                 op->name);
      std::map<Tensor, NDArray> in;
      for (size_t i = 0; i < op->inputs.size(); ++i)
        in[op->reference_inputs[i]] = arrays.at({op->inputs[i].op().get(), op->inputs[i].value_index()});
      std::vector<NDArray> out = evaluate(op->reference, in);
      for (int i = 0; i < op->num_outputs(); ++i) {
        arrays[{op.get(), i}] = out[size_t(i)];
        buffers[{op.get(), i}] = make_buffer(op->name, out[size_t(i)]);
      }
      continue;
    }
    std::vector<int64_t> shape = const_shape(op->output_shape(0), op->name);
    for (auto& iv : op->axis)
      LOOM_CHECK(is_zero(iv.dom().min), "evaluate: compute '{}': axis '{}' does not start at 0", op->name, iv.name());
    std::vector<Buffer> outs;
    for (int i = 0; i < op->num_outputs(); ++i) {
      DataType t = op->output_dtype(i);
      check_storable(t, fmt::format("compute '{}'", op->name));
      NDArray a = NDArray::empty(shape, t);
      outs.push_back(make_buffer(op->name, a));
      arrays[{op.get(), i}] = a;
    }
    run_compute(*op, outs, buffers);
    for (int i = 0; i < op->num_outputs(); ++i) buffers[{op.get(), i}] = outs[size_t(i)];
  }
  std::vector<NDArray> result;
  for (auto& t : outputs) result.push_back(arrays.at({t.op().get(), t.value_index()}));
  return result;
}

}  // namespace loom::te
