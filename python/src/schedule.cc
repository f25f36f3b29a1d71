// loom.create_schedule, Schedule and Stage (TVM's names), and loom.lower.
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "convert.h"
#include "loom/lower/lower.h"
#include "loom/schedule/schedule.h"

namespace loom::python {
namespace {

using schedule::Schedule;
using schedule::Stage;
using te::Expr;
using te::IterVar;
using te::Tensor;

std::vector<te::Operation> op_list(nb::handle outs) {
  std::vector<te::Operation> ops;
  auto one = [&](nb::handle h) {
    if (nb::isinstance<Tensor>(h)) ops.push_back(nb::cast<Tensor>(h).op());
    else if (nb::isinstance<Operation>(h)) ops.push_back(nb::cast<Operation>(h).op);
    else fail("expected a loom.te.Tensor or Operation, not {}", py_type_name(h));
  };
  if (nb::isinstance<nb::list>(outs) || nb::isinstance<nb::tuple>(outs)) {
    for (nb::handle h : outs) one(h);
  } else {
    one(outs);
  }
  return ops;
}

std::vector<IterVar> itervar_args(nb::args args) {
  std::vector<IterVar> out;
  for (nb::handle h : args) {
    if (nb::isinstance<nb::list>(h) || nb::isinstance<nb::tuple>(h)) {
      for (nb::handle x : h) out.push_back(nb::cast<IterVar>(x));
    } else {
      out.push_back(nb::cast<IterVar>(h));
    }
  }
  return out;
}

/// The loop IR of a function, printed by str().
struct LoweredFunc {
  lowering::LoweredFunc f;
};

}  // namespace

void bind_schedule(nb::module_& m) {
  nb::class_<Stage>(m, "Stage", "The schedule of one operation: its loops and where it is computed.")
      .def_prop_ro("op", [](const Stage& s) { return Operation{s->op}; })
      .def_prop_ro("origin_op", [](const Stage& s) { return Operation{s->origin_op}; })
      .def_prop_ro("name", [](const Stage& s) { return s->name(); })
      .def_prop_ro("leaf_iter_vars", [](const Stage& s) { return s.leaf_iter_vars(); }, "The loops, outermost first.")
      .def("axis", [](const Stage& s, size_t i) { return s.axis(i); }, nb::arg("index"))
      .def("reduce_axis", [](const Stage& s, size_t i) { return s.reduce_axis(i); }, nb::arg("index"))
      .def("split", [](Stage& s, const IterVar& parent, nb::handle factor, nb::handle nparts) {
        if (factor.is_none() == nparts.is_none()) fail("stage '{}': split takes factor= or nparts=, exactly one", s->name());
        return factor.is_none() ? s.split_nparts(parent, to_expr(nparts)) : s.split(parent, to_expr(factor));
      }, nb::arg("parent"), nb::arg("factor") = nb::none(), nb::arg("nparts") = nb::none(),
         "Splits `parent` into (outer, inner) by an inner `factor` or `nparts` outer iterations.")
      .def("tile", [](Stage& s, const IterVar& x, const IterVar& y, const Expr& xf, const Expr& yf) {
        return s.tile(x, y, xf, yf);
      }, nb::arg("x_parent"), nb::arg("y_parent"), nb::arg("x_factor"), nb::arg("y_factor"),
         "Splits x and y and orders the loops (xo, yo, xi, yi).")
      .def("fuse", [](Stage& s, nb::args axes) { return s.fuse(itervar_args(axes)); }, "Fuses adjacent loops, outermost first.")
      .def("reorder", [](Stage& s, nb::args axes) { s.reorder(itervar_args(axes)); })
      .def("vectorize", &Stage::vectorize, nb::arg("var"))
      .def("unroll", &Stage::unroll, nb::arg("var"))
      .def("parallel", &Stage::parallel, nb::arg("var"))
      .def("bind", &Stage::bind, nb::arg("var"), nb::arg("thread"))
      .def("pragma", [](Stage& s, const IterVar& iv, const std::string& key, const Expr& value) { s.pragma(iv, key, value); },
           nb::arg("var"), nb::arg("key"), nb::arg("value") = 1)
      .def("tensorize", [](Stage& s, const IterVar& iv, const TensorIntrin& t) { s.tensorize(iv, t.intrin); },
           nb::arg("var"), nb::arg("intrin"))
      .def("compute_at", &Stage::compute_at, nb::arg("parent"), nb::arg("scope"))
      .def("compute_inline", &Stage::compute_inline)
      .def("compute_root", &Stage::compute_root)
      .def("storage_align", &Stage::storage_align, nb::arg("axis"), nb::arg("factor"), nb::arg("offset"))
      .def("storage_order", &Stage::storage_order, nb::arg("axes"))
      .def("set_scope", &Stage::set_scope, nb::arg("scope"))
      .def("double_buffer", &Stage::double_buffer)
      .def("compute_padded", [](Stage& s, double v) { s.compute_padded(te::make_const(DataType::Float(64), v)); }, nb::arg("pad_value") = 0.0)
      .def("__repr__", [](const Stage& s) { return "Stage(" + s->name() + ")"; });

  nb::class_<Schedule>(m, "Schedule", "How each operation of a tensor program runs: one Stage per operation.")
      .def("__getitem__", [](const Schedule& s, nb::handle t) {
        if (nb::isinstance<Tensor>(t)) return s[nb::cast<Tensor>(t)];
        if (nb::isinstance<Operation>(t)) return s[nb::cast<Operation>(t).op];
        fail("a schedule is indexed by a loom.te.Tensor or Operation, not {}", py_type_name(t));
      })
      .def_prop_ro("stages", [](const Schedule& s) { return s.stages(); })
      .def_prop_ro("outputs", [](const Schedule& s) {
        std::vector<Operation> ops;
        for (const auto& o : s.outputs()) ops.push_back(Operation{o});
        return ops;
      })
      .def("cache_read", [](Schedule& s, const Tensor& t, const std::string& scope, nb::handle readers) {
        return s.cache_read(t, scope, op_list(readers));
      }, nb::arg("tensor"), nb::arg("scope"), nb::arg("readers"))
      .def("cache_write", &Schedule::cache_write, nb::arg("tensor"), nb::arg("scope"))
      .def("rfactor", &Schedule::rfactor, nb::arg("tensor"), nb::arg("axis"), nb::arg("factor_axis") = 0)
      .def("copy", &Schedule::copy);

  m.def("create_schedule", [](nb::handle outs) { return schedule::create_schedule(op_list(outs)); }, nb::arg("outputs"),
        "A schedule computing `outputs` (tensors or operations), every stage at the root.");

  nb::class_<LoweredFunc>(m, "LoweredFunc", "A function in loop IR; str() prints it.")
      .def_prop_ro("name", [](const LoweredFunc& f) { return f.f.name; })
      .def_prop_ro("args", [](const LoweredFunc& f) {
        std::vector<std::string> names;
        for (const auto& a : f.f.args) names.push_back(a.name);
        return names;
      })
      .def("__str__", [](const LoweredFunc& f) { return lowering::to_string(f.f); })
      .def("__repr__", [](const LoweredFunc& f) { return lowering::to_string(f.f); });
  m.def("lower", [](const Schedule& s, const std::vector<Tensor>& args, const std::string& name, const std::string& target,
                    bool packed) {
    lowering::LowerOptions opt;
    opt.target = Target(target);
    opt.skip_packed_api = !packed;
    return LoweredFunc{lowering::lower(s, args, name, opt)};
  }, nb::arg("schedule"), nb::arg("args"), nb::arg("name") = "default_function", nb::arg("target") = "llvm",
     nb::arg("packed") = false);
}

}  // namespace loom::python
