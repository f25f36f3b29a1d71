// loom.graph: graphs built in Python or read from ONNX / model files, and compile.
#include <nanobind/ndarray.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstring>
#include <iostream>

#include "bindings.h"
#include "convert.h"
#include "loom/graph_opt/builder.h"
#include "loom/graph_opt/compile.h"
#include "loom/graph_opt/onnx.h"
#include "loom/graph_opt/serialize.h"

namespace loom::python {
namespace {

using graph_opt::Graph;
using graph_opt::GraphBuilder;
using graph_opt::TensorType;
using graph_opt::ValueRef;

/// A value of the graph being built, with its type.
struct Value {
  ValueRef ref;
  TensorType type;
};

/// A copy of a host array (constants are owned by the graph).
runtime::NDArray to_ndarray(nb::handle h, const std::string& what) {
  nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu> a;
  if (!nb::try_cast(h, a)) fail("{}: expected a host array (NumPy or DLPack), not a {}", what, py_type_name(h));
  std::vector<int64_t> shape(a.shape_ptr(), a.shape_ptr() + a.ndim());
  DataType t(DLDataType{a.dtype().code, a.dtype().bits, a.dtype().lanes});
  runtime::NDArray out = runtime::NDArray::empty(shape, t);
  std::memcpy(out.raw_data(), a.data(), out.nbytes());
  return out;
}

nb::list types_of(const Graph& g, const std::vector<ValueRef>& values) {
  nb::list out;
  for (ValueRef v : values) {
    const TensorType& t = g.type(v);
    out.append(nb::make_tuple(g.value_name(v), t.shape, t.dtype.str()));
  }
  return out;
}

}  // namespace

void bind_graph(nb::module_& m) {
  nb::class_<Graph>(m, "Graph", "A network: inputs, constants and operator calls.")
      .def_prop_ro("name", [](const Graph& g) { return g.name; })
      .def_prop_ro("num_ops", &Graph::num_ops)
      .def_prop_ro("inputs", [](const Graph& g) {
        std::vector<ValueRef> v;
        for (int i : g.input_nodes()) v.push_back(ValueRef{i, 0});
        nb::list l = types_of(g, v);
        nb::list out;  // input names without the value '%'
        for (size_t i = 0; i < v.size(); ++i) out.append(nb::make_tuple(g.nodes[size_t(v[i].node)].name, l[i][1], l[i][2]));
        return out;
      }, "[(name, shape, dtype)] in call order.")
      .def_prop_ro("outputs", [](const Graph& g) { return types_of(g, g.outputs); }, "[(value, shape, dtype)].")
      .def("to_json", [](const Graph& g) { return graph_opt::to_json(g); })
      .def("save", [](const Graph& g, const std::string& path) { return graph_opt::save_graph(g, path); }, nb::arg("path"))
      .def("__repr__", [](const Graph& g) { return fmt::format("Graph({}, {} operators)", g.name, g.num_ops()); });

  m.def("graph_import_onnx", [](const std::string& path, std::map<std::string, std::vector<int64_t>> shapes) {
    graph_opt::OnnxImportOptions opt;
    opt.input_shapes = std::move(shapes);
    nb::gil_scoped_release release;
    return graph_opt::import_onnx(path, opt);
  }, nb::arg("path"), nb::arg("input_shapes") = std::map<std::string, std::vector<int64_t>>{});
  m.def("graph_load", [](const std::string& path) {
    nb::gil_scoped_release release;
    return graph_opt::load_model(path);
  }, nb::arg("path"));
  m.def("graph_from_json", [](const std::string& text) { return graph_opt::from_json(text); }, nb::arg("text"));
  m.def("onnx_frontend_available", &graph_opt::onnx_frontend_available);

  nb::class_<Value>(m, "Value", "A value of the graph being built.")
      .def_prop_ro("shape", [](const Value& v) { return v.type.shape; })
      .def_prop_ro("dtype", [](const Value& v) { return v.type.dtype.str(); })
      .def("__repr__", [](const Value& v) { return "Value(" + te::ops::to_string(v.type) + ")"; });
  nb::class_<GraphBuilder>(m, "GraphBuilder", "Builds a graph operator by operator, checking each call.")
      .def(nb::init<std::string>(), nb::arg("name") = "graph")
      .def("input", [](GraphBuilder& b, const std::string& name, std::vector<int64_t> shape, const std::string& dtype) {
        ValueRef v = b.input(name, TensorType{std::move(shape), DataType::parse(dtype), ""});
        return Value{v, b.type(v)};
      }, nb::arg("name"), nb::arg("shape"), nb::arg("dtype") = "float32")
      .def("constant", [](GraphBuilder& b, const std::string& name, nb::handle value) {
        ValueRef v = b.constant(name, to_ndarray(value, "constant '" + name + "'"));
        return Value{v, b.type(v)};
      }, nb::arg("name"), nb::arg("value"), "A constant holding a copy of `value` (a host array).")
      .def("call", [](GraphBuilder& b, const std::string& op, const std::vector<Value>& inputs, nb::dict attrs,
                      const std::string& name) {
        std::vector<ValueRef> in;
        for (const Value& v : inputs) in.push_back(v.ref);
        std::vector<Value> out;
        for (ValueRef v : b.call(op, in, to_attrs(attrs), name)) out.push_back(Value{v, b.type(v)});
        return out;
      }, nb::arg("op"), nb::arg("inputs"), nb::arg("attrs") = nb::dict(), nb::arg("name") = "")
      .def("output", [](GraphBuilder& b, const Value& v) { b.output(v.ref); }, nb::arg("value"))
      .def("build", &GraphBuilder::build);

  nb::class_<graph_opt::CompiledKernel>(m, "CompiledKernel")
      .def_ro("name", &graph_opt::CompiledKernel::name)
      .def_ro("ops", &graph_opt::CompiledKernel::ops)
      .def_ro("schedule", &graph_opt::CompiledKernel::schedule)
      .def_ro("workload", &graph_opt::CompiledKernel::workload)
      .def_ro("tuned", &graph_opt::CompiledKernel::tuned)
      .def("__repr__", [](const graph_opt::CompiledKernel& k) { return k.name + ": " + k.ops + " (" + k.schedule + ")"; });
  m.def("graph_compile", [](const Graph& g, const std::string& target, const std::vector<std::string>& logs, int opt_level) {
    nb::gil_scoped_release release;
    records::ApplyHistoryBest best(logs);
    graph_opt::CompileOptions opt;
    opt.passes.opt_level = opt_level;
    graph_opt::CompileReport report;
    runtime::Module mod = graph_opt::compile(g, Target(target), logs.empty() ? nullptr : &best, opt, &report);
    return std::make_pair(mod, report.kernels);
  }, nb::arg("graph"), nb::arg("target") = "llvm", nb::arg("logs") = std::vector<std::string>{}, nb::arg("opt_level") = 3);
}

}  // namespace loom::python
