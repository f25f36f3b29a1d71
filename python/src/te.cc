// loom.te: expressions with Python operators, tensors, compute and reductions.
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "convert.h"
#include "loom/te/op_registry.h"
#include "loom/te/expr.h"
#include "loom/te/tensor.h"
#include "loom/te/tensor_intrinsics.h"

namespace loom::python {
namespace {

using te::Expr;
using te::IterVar;
using te::Tensor;
using te::Var;

/// The arithmetic and comparison operators of an expression-like class S (Expr, IterVar),
/// as TVM defines them: `//` and `%` floor, `/` as C does (true division for floats).
template <typename S, typename C>
void def_operators(C& cls) {
  auto E = [](const S& s) { return Expr(s); };
  cls.def("__add__", [E](const S& a, const Expr& b) { return E(a) + b; }, nb::is_operator())
      .def("__radd__", [E](const S& a, const Expr& b) { return b + E(a); }, nb::is_operator())
      .def("__sub__", [E](const S& a, const Expr& b) { return E(a) - b; }, nb::is_operator())
      .def("__rsub__", [E](const S& a, const Expr& b) { return b - E(a); }, nb::is_operator())
      .def("__mul__", [E](const S& a, const Expr& b) { return E(a) * b; }, nb::is_operator())
      .def("__rmul__", [E](const S& a, const Expr& b) { return b * E(a); }, nb::is_operator())
      .def("__truediv__", [E](const S& a, const Expr& b) { return E(a) / b; }, nb::is_operator())
      .def("__rtruediv__", [E](const S& a, const Expr& b) { return b / E(a); }, nb::is_operator())
      .def("__floordiv__", [E](const S& a, const Expr& b) { return te::floordiv(E(a), b); }, nb::is_operator())
      .def("__rfloordiv__", [E](const S& a, const Expr& b) { return te::floordiv(b, E(a)); }, nb::is_operator())
      .def("__mod__", [E](const S& a, const Expr& b) { return te::floormod(E(a), b); }, nb::is_operator())
      .def("__rmod__", [E](const S& a, const Expr& b) { return te::floormod(b, E(a)); }, nb::is_operator())
      .def("__neg__", [E](const S& a) { return -E(a); })
      .def("__lt__", [E](const S& a, const Expr& b) { return E(a) < b; }, nb::is_operator())
      .def("__le__", [E](const S& a, const Expr& b) { return E(a) <= b; }, nb::is_operator())
      .def("__gt__", [E](const S& a, const Expr& b) { return E(a) > b; }, nb::is_operator())
      .def("__ge__", [E](const S& a, const Expr& b) { return E(a) >= b; }, nb::is_operator())
      .def("__eq__", [E](const S& a, const Expr& b) { return E(a) == b; }, nb::is_operator())
      .def("__ne__", [E](const S& a, const Expr& b) { return E(a) != b; }, nb::is_operator())
      .def("__and__", [E](const S& a, const Expr& b) { return E(a) && b; }, nb::is_operator())
      .def("__rand__", [E](const S& a, const Expr& b) { return b && E(a); }, nb::is_operator())
      .def("__or__", [E](const S& a, const Expr& b) { return E(a) || b; }, nb::is_operator())
      .def("__ror__", [E](const S& a, const Expr& b) { return b || E(a); }, nb::is_operator())
      .def("__invert__", [E](const S& a) { return !E(a); })
      .def("__bool__", [](const S&) -> bool {
        fail("a loom expression has no truth value: use loom.te.if_then_else, &, | and ~ for conditions");
      })
      .def("astype", [E](const S& a, const std::string& dtype) { return te::cast(DataType::parse(dtype), E(a)); },
           nb::arg("dtype"), "The expression converted to `dtype`.");
}

std::vector<Expr> index_list(nb::handle idx) {
  std::vector<Expr> out;
  if (nb::isinstance<nb::tuple>(idx) || nb::isinstance<nb::list>(idx)) {
    for (nb::handle h : idx) out.push_back(to_expr(h));
  } else {
    out.push_back(to_expr(idx));
  }
  return out;
}

std::vector<IterVar> axis_list(nb::handle axis) {
  std::vector<IterVar> out;
  if (nb::isinstance<IterVar>(axis)) {
    out.push_back(nb::cast<IterVar>(axis));
    return out;
  }
  for (nb::handle h : axis) {
    if (!nb::isinstance<IterVar>(h)) fail("a reduction axis must be a loom.te.IterVar (reduce_axis), not {}", py_type_name(h));
    out.push_back(nb::cast<IterVar>(h));
  }
  return out;
}

/// TVM's dom forms: an extent n (0..n-1) or a (begin, end) pair.
te::Range to_range(nb::handle dom, const char* what) {
  if (nb::isinstance<nb::tuple>(dom) || nb::isinstance<nb::list>(dom)) {
    if (nb::len(dom) != 2) fail("{}: the range must be (begin, end) or an extent, got {} values", what, nb::len(dom));
    return te::Range::from_begin_end(to_expr(dom[0]), to_expr(dom[1]));
  }
  return te::Range(Expr(0), to_expr(dom));
}

nb::object shape_value(const Expr& e) {
  if (auto c = te::as_const_int(e)) return nb::int_(*c);
  return nb::cast(e);
}

nb::tuple shape_tuple(const std::vector<Expr>& shape) {
  nb::list l;
  for (const Expr& e : shape) l.append(shape_value(e));
  return nb::tuple(l);
}

}  // namespace

Expr to_expr(nb::handle h) {
  if (nb::isinstance<Expr>(h)) return nb::cast<Expr>(h);
  if (nb::isinstance<IterVar>(h)) return Expr(nb::cast<IterVar>(h));
  if (PyBool_Check(h.ptr())) return te::make_const(DataType::Bool(), int64_t(h.ptr() == Py_True));
  if (PyLong_Check(h.ptr())) {
    int64_t v = nb::cast<int64_t>(h);
    if (v >= INT32_MIN && v <= INT32_MAX) return Expr(int(v));
    return Expr(v);
  }
  if (PyFloat_Check(h.ptr())) return Expr(nb::cast<double>(h));
  fail("expected a loom expression, an int or a float, not {}", py_type_name(h));
}

std::string py_type_name(nb::handle h) { return nb::cast<std::string>(nb::type_name(h.type())); }

namespace {

te::ops::AttrValue to_attr(const std::string& key, nb::handle h) {
  if (PyBool_Check(h.ptr())) return int64_t(h.ptr() == Py_True);
  if (PyLong_Check(h.ptr())) return nb::cast<int64_t>(h);
  if (PyFloat_Check(h.ptr())) return nb::cast<double>(h);
  if (nb::isinstance<nb::str>(h)) return nb::cast<std::string>(h);
  if (nb::isinstance<nb::list>(h) || nb::isinstance<nb::tuple>(h)) {
    bool floats = false;
    for (nb::handle x : h) {
      if (PyFloat_Check(x.ptr())) floats = true;
      else if (!PyLong_Check(x.ptr())) fail("attribute '{}': a list of ints or floats, not one holding a {}", key, py_type_name(x));
    }
    if (floats) return nb::cast<std::vector<double>>(h);
    return nb::cast<std::vector<int64_t>>(h);
  }
  fail("attribute '{}': an int, float, str or list of numbers, not a {}", key, py_type_name(h));
}

}  // namespace

te::ops::Attrs to_attrs(nb::dict d) {
  te::ops::Attrs a;
  for (auto [k, v] : d) {
    std::string key = nb::cast<std::string>(k);
    a[key] = to_attr(key, v);
  }
  return a;
}

void bind_te(nb::module_& m) {
  auto expr = nb::class_<Expr>(m, "Expr", "An expression of loom's IR (te::Expr).")
                  .def("__init__", [](Expr* self, nb::handle v) { new (self) Expr(to_expr(v)); }, nb::arg("value"))
                  .def_prop_ro("dtype", [](const Expr& e) { return e.dtype().str(); })
                  .def_prop_ro("value", [](const Expr& e) -> nb::object {
                    if (auto c = te::as_const_int(e)) return nb::int_(*c);
                    if (auto f = te::as_const_float(e)) return nb::float_(*f);
                    return nb::none();
                  }, "The value of a constant, else None.")
                  .def("same_as", &Expr::same_as, "True when both are the same node.")
                  .def("__hash__", [](const Expr& e) { return std::hash<const void*>()(e.get()); })
                  .def("__str__", [](const Expr& e) { return te::to_string(e); })
                  .def("__repr__", [](const Expr& e) { return "Expr(" + te::to_string(e) + ")"; });
  def_operators<Expr>(expr);
  nb::implicitly_convertible<int, Expr>();
  nb::implicitly_convertible<double, Expr>();

  nb::class_<Var, Expr>(m, "Var", "A variable (an axis of a compute, or a free variable).")
      .def_prop_ro("name", &Var::name)
      .def("__repr__", [](const Var& v) { return "Var(" + v.name() + ")"; });

  auto itervar = nb::class_<IterVar>(m, "IterVar", "An iteration variable: a loop of a stage, with its range.")
                     .def_prop_ro("var", [](const IterVar& iv) { return iv.var(); })
                     .def_prop_ro("name", &IterVar::name)
                     .def_prop_ro("dom", [](const IterVar& iv) -> nb::object {
                       if (!iv.dom().min.defined()) return nb::none();
                       return nb::make_tuple(shape_value(iv.dom().min), shape_value(iv.dom().extent));
                     }, "(min, extent), or None for a loop whose range bound inference gives.")
                     .def_prop_ro("kind", [](const IterVar& iv) {
                       switch (iv.type()) {
                         case te::IterVarType::kDataPar: return "spatial";
                         case te::IterVarType::kCommReduce: return "reduce";
                         case te::IterVarType::kThreadIndex: return "thread";
                         case te::IterVarType::kOrdered: return "ordered";
                         default: return "opaque";
                       }
                     })
                     .def("same_as", &IterVar::same_as)
                     .def("__hash__", [](const IterVar& iv) { return std::hash<const void*>()(iv.get()); })
                     .def("__str__", &IterVar::name)
                     .def("__repr__", [](const IterVar& iv) { return "IterVar(" + iv.name() + ")"; });
  def_operators<IterVar>(itervar);
  nb::implicitly_convertible<IterVar, Expr>();

  nb::class_<Operation>(m, "Operation", "The operation producing a tensor (placeholder or compute).")
      .def_prop_ro("name", [](const Operation& o) { return o.op->name; })
      .def_prop_ro("tag", [](const Operation& o) { return o.op->tag; })
      .def_prop_ro("attrs", [](const Operation& o) { return o.op->attrs; })
      .def_prop_ro("axis", [](const Operation& o) { return o.op->axis; }, "The spatial axes, one per output dimension.")
      .def_prop_ro("reduce_axis", [](const Operation& o) { return o.op->reduce_axis; })
      .def_prop_ro("num_outputs", [](const Operation& o) { return o.op->num_outputs(); })
      .def_prop_ro("input_tensors", [](const Operation& o) { return o.op->input_tensors(); })
      .def("output", [](const Operation& o, int i) {
        if (i < 0 || i >= o.op->num_outputs()) fail("operation '{}' has {} outputs, not {}", o.op->name, o.op->num_outputs(), i + 1);
        return te::output(o.op, i);
      }, nb::arg("index") = 0)
      .def("__eq__", [](const Operation& a, const Operation& b) { return a.op == b.op; })
      .def("__hash__", [](const Operation& o) { return std::hash<const void*>()(o.op.get()); })
      .def("__repr__", [](const Operation& o) { return "Operation(" + o.op->name + ")"; });

  nb::class_<Tensor>(m, "Tensor", "A tensor: a placeholder or the output of a compute. `A[i, j]` reads an element.")
      .def_prop_ro("shape", [](const Tensor& t) { return shape_tuple(t.shape()); })
      .def_prop_ro("dtype", [](const Tensor& t) { return t.dtype().str(); })
      .def_prop_ro("ndim", &Tensor::ndim)
      .def_prop_ro("name", &Tensor::name)
      .def_prop_ro("op", [](const Tensor& t) { return Operation{t.op()}; })
      .def_prop_ro("value_index", &Tensor::value_index)
      .def("__getitem__", [](const Tensor& t, nb::handle idx) { return t(index_list(idx)); })
      .def("__call__", [](const Tensor& t, nb::args idx) { return t(index_list(idx)); })
      .def("__eq__", [](const Tensor& a, const Tensor& b) { return a == b; })
      .def("__hash__", [](const Tensor& t) {
        return te::hash_combine(std::hash<const void*>()(t.op().get()), size_t(t.value_index()));
      })
      .def("__repr__", [](const Tensor& t) {
        std::string s = "Tensor(" + t.name() + ", " + t.dtype().str() + "[";
        for (size_t i = 0; i < t.ndim(); ++i) s += (i ? "," : "") + te::to_string(t.shape()[i]);
        return s + "])";
      });

  nb::class_<TensorIntrin>(m, "TensorIntrin", "A tensor intrinsic to tensorize with (Stage.tensorize).")
      .def_prop_ro("name", [](const TensorIntrin& t) { return t.intrin->name; })
      .def_prop_ro("doc", [](const TensorIntrin& t) { return t.intrin->doc; })
      .def_prop_ro("output", [](const TensorIntrin& t) { return t.intrin->output; })
      .def_prop_ro("inputs", [](const TensorIntrin& t) { return t.intrin->inputs; })
      .def("__repr__", [](const TensorIntrin& t) { return "TensorIntrin(" + t.intrin->name + ")"; });
  m.def("intrin_dot_u8s8s32", [](int lanes) { return TensorIntrin{te::dot_u8s8s32(lanes)}; }, nb::arg("lanes") = 16);
  m.def("intrin_wmma_load_a", [] { return TensorIntrin{te::wmma_load_a()}; });
  m.def("intrin_wmma_load_b", [] { return TensorIntrin{te::wmma_load_b()}; });
  m.def("intrin_wmma_mma", [] { return TensorIntrin{te::wmma_mma()}; });
  m.def("intrin_wmma_store", [] { return TensorIntrin{te::wmma_store()}; });
  m.def("intrin_mma_load_a", [] { return TensorIntrin{te::mma_load_a()}; });
  m.def("intrin_mma_load_b", [] { return TensorIntrin{te::mma_load_b()}; });
  m.def("intrin_mma_m16n8k16", [] { return TensorIntrin{te::mma_m16n8k16()}; });
  m.def("intrin_mma_store", [] { return TensorIntrin{te::mma_store()}; });

  m.def("placeholder", [](std::vector<Expr> shape, const std::string& dtype, std::string name) {
    return te::placeholder(std::move(shape), DataType::parse(dtype), std::move(name));
  }, nb::arg("shape"), nb::arg("dtype") = "float32", nb::arg("name") = "placeholder");

  m.def("compute", [](std::vector<Expr> shape, nb::callable fcompute, std::string name, std::string tag,
                      std::map<std::string, std::string> attrs) -> nb::object {
    bool multi = false;
    te::FComputeMulti f = [&](const std::vector<Var>& vars) {
      nb::list args;
      for (const Var& v : vars) args.append(nb::cast(v));
      nb::object r = fcompute(*nb::tuple(args));
      std::vector<Expr> body;
      if (nb::isinstance<nb::tuple>(r) || nb::isinstance<nb::list>(r)) {
        multi = true;
        for (nb::handle h : r) body.push_back(to_expr(h));
      } else {
        body.push_back(to_expr(r));
      }
      return body;
    };
    std::vector<Tensor> out = te::compute_multi(std::move(shape), f, std::move(name), std::move(tag), std::move(attrs));
    if (multi) return nb::cast(out);
    return nb::cast(out[0]);
  }, nb::arg("shape"), nb::arg("fcompute"), nb::arg("name") = "compute", nb::arg("tag") = "",
     nb::arg("attrs") = std::map<std::string, std::string>{});

  m.def("reduce_axis", [](nb::handle dom, std::string name) { return te::reduce_axis(to_range(dom, "reduce_axis"), std::move(name)); },
        nb::arg("dom"), nb::arg("name") = "rv");
  m.def("thread_axis", [](std::string tag, nb::handle dom) {
    return te::thread_axis(std::move(tag), dom.is_none() ? te::Range() : to_range(dom, "thread_axis"));
  }, nb::arg("tag"), nb::arg("dom") = nb::none());
  m.def("var", [](std::string name, const std::string& dtype) { return Var(std::move(name), DataType::parse(dtype)); },
        nb::arg("name") = "v", nb::arg("dtype") = "int32");
  m.def("const", [](nb::handle value, const std::string& dtype) {
    DataType t = DataType::parse(dtype);
    if (PyFloat_Check(value.ptr())) return te::make_const(t, nb::cast<double>(value));
    return te::make_const(t, nb::cast<int64_t>(value));
  }, nb::arg("value"), nb::arg("dtype") = "int32");

  auto reduction = [](Expr (*f)(Expr, std::vector<IterVar>, Expr)) {
    return [f](nb::handle source, nb::handle axis, nb::handle where) {
      return f(to_expr(source), axis_list(axis), where.is_none() ? Expr() : to_expr(where));
    };
  };
  m.def("sum", reduction(&te::sum), nb::arg("expr"), nb::arg("axis"), nb::arg("where") = nb::none());
  m.def("max_reduce", reduction(&te::max_reduce), nb::arg("expr"), nb::arg("axis"), nb::arg("where") = nb::none());
  m.def("min_reduce", reduction(&te::min_reduce), nb::arg("expr"), nb::arg("axis"), nb::arg("where") = nb::none());
  m.def("prod", reduction(&te::prod), nb::arg("expr"), nb::arg("axis"), nb::arg("where") = nb::none());

  m.def("max2", [](const Expr& a, const Expr& b) { return te::max(a, b); });
  m.def("min2", [](const Expr& a, const Expr& b) { return te::min(a, b); });
  m.def("floordiv", &te::floordiv);
  m.def("floormod", &te::floormod);
  m.def("truncdiv", &te::truncdiv);
  m.def("truncmod", &te::truncmod);
  m.def("if_then_else", &te::select, nb::arg("cond"), nb::arg("then_value"), nb::arg("else_value"));
  m.def("cast", [](const std::string& dtype, const Expr& v) { return te::cast(DataType::parse(dtype), v); },
        nb::arg("dtype"), nb::arg("value"));
  m.def("exp", &te::exp);
  m.def("log", &te::log);
  m.def("sqrt", &te::sqrt);
  m.def("tanh", &te::tanh);
  m.def("sigmoid", &te::sigmoid);
  m.def("abs", &te::abs);
  m.def("floor", &te::floor);
  m.def("ceil", &te::ceil);
  m.def("round", &te::round);
  m.def("erf", &te::erf);
  m.def("power", &te::pow);
  m.def("max_value", [](const std::string& dtype) { return te::max_value(DataType::parse(dtype)); });
  m.def("min_value", [](const std::string& dtype) { return te::min_value(DataType::parse(dtype)); });
}

}  // namespace loom::python
