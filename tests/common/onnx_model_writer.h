// Small ONNX models written in C++ for the frontend's tests: the protobuf messages field by
// field in protobuf's wire format (onnx.proto's field numbers; the test executables do not link
// ONNX's protobuf classes), and running an imported graph through the reference evaluator or
// compiled for the CPU.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "loom/graph_opt/compile.h"
#include "loom/graph_opt/graph.h"
#include "loom/graph_opt/reference.h"
#include "loom/runtime/module.h"
#include "loom/runtime/ndarray.h"
#include "loom/runtime/target.h"
#include "common/protobuf_writer.h"

namespace loom::onnx_test {

using loom::test::Pb;

/// ONNX element types (TensorProto.DataType).
enum : int64_t { kFloat = 1, kUint8 = 2, kInt8 = 3, kInt32 = 6, kInt64 = 7, kBool = 9, kDouble = 11 };

template <typename T>
std::string bytes_of(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

/// TensorProto: dims, data_type and raw bytes.
inline Pb tensor(const std::string& name, int64_t type, const std::vector<int64_t>& dims, const std::string& raw) {
  Pb t;
  for (int64_t d : dims) t.i(1, d);
  t.i(2, type).s(8, name).s(9, raw);
  return t;
}
inline Pb floats(const std::string& name, const std::vector<int64_t>& dims, const std::vector<float>& v) {
  return tensor(name, kFloat, dims, bytes_of(v));
}
inline Pb int64s(const std::string& name, const std::vector<int64_t>& dims, const std::vector<int64_t>& v) {
  return tensor(name, kInt64, dims, bytes_of(v));
}

/// ValueInfoProto of a tensor; each dim a number (dim_value) or a name (dim_param).
inline Pb value(const std::string& name, const std::vector<std::string>& dims, int64_t type = kFloat) {
  Pb shape;
  for (const std::string& d : dims) {
    const bool number = !d.empty() && d.find_first_not_of("0123456789") == std::string::npos;
    shape.m(1, number ? Pb().i(1, std::stoll(d)) : Pb().s(2, d));
  }
  Pb tensor_type;
  tensor_type.i(1, type).m(2, shape);
  return Pb().s(1, name).m(2, Pb().m(1, tensor_type));
}
/// An output without a declared type.
inline Pb untyped(const std::string& name) { return Pb().s(1, name); }

inline Pb attr_int(const std::string& name, int64_t v) { return Pb().s(1, name).i(3, v).i(20, 2); }
inline Pb attr_float(const std::string& name, float v) { return Pb().s(1, name).f32(2, v).i(20, 1); }
inline Pb attr_str(const std::string& name, const std::string& v) { return Pb().s(1, name).s(4, v).i(20, 3); }
inline Pb attr_tensor(const std::string& name, const Pb& t) { return Pb().s(1, name).m(5, t).i(20, 4); }
inline Pb attr_ints(const std::string& name, const std::vector<int64_t>& v) {
  Pb a;
  a.s(1, name);
  for (int64_t x : v) a.i(8, x);
  return a.i(20, 7);
}

inline Pb node(const std::string& op, const std::vector<std::string>& ins, const std::vector<std::string>& outs,
               const std::vector<Pb>& attrs = {}, const std::string& name = "") {
  Pb n;
  for (const auto& x : ins) n.s(1, x);
  for (const auto& x : outs) n.s(2, x);
  n.s(3, name.empty() ? op : name).s(4, op);
  for (const Pb& a : attrs) n.m(5, a);
  return n;
}

/// A ModelProto of one graph importing the default-domain `opset`.
struct Model {
  std::vector<Pb> nodes, inits, inputs, outputs;
  int64_t opset = 17;
  std::string bytes() const {
    Pb g;
    for (const Pb& n : nodes) g.m(1, n);
    g.s(2, "g");
    for (const Pb& t : inits) g.m(5, t);
    for (const Pb& v : inputs) g.m(11, v);
    for (const Pb& v : outputs) g.m(12, v);
    Pb model;
    model.i(1, 8).m(7, g).m(8, Pb().s(1, "").i(2, opset));
    return model.b;
  }
};

/// A float32 array of `shape` holding `v`.
inline runtime::NDArray array(const std::vector<int64_t>& shape, const std::vector<double>& v,
                              DataType t = DataType::Float(32)) {
  return runtime::NDArray::from_vector(v, shape, t);
}

/// The graph's outputs for `args`: "reference" (run_reference) or "compiled" (LLVM, this CPU).
inline std::vector<runtime::NDArray> run_graph(const graph_opt::Graph& g, const std::string& mode,
                                               const std::vector<runtime::NDArray>& args) {
  if (mode == "reference") return graph_opt::run_reference(g, args);
  runtime::Module m = graph_opt::compile(g, Target("llvm"));
  std::vector<runtime::NDArray> outs;
  std::vector<DLTensor*> call;
  for (const runtime::NDArray& a : args) call.push_back(a.dltensor());
  for (graph_opt::ValueRef v : g.outputs) outs.push_back(runtime::NDArray::empty(g.type(v).shape, g.type(v).dtype));
  for (const runtime::NDArray& a : outs) call.push_back(a.dltensor());
  m.get_function("run").call(call);
  return outs;
}

/// The values of `a` as doubles.
inline std::vector<double> values(const runtime::NDArray& a) {
  std::vector<double> v(size_t(a.numel()));
  for (int64_t i = 0; i < a.numel(); ++i) v[size_t(i)] = a.get(i);
  return v;
}

}  // namespace loom::onnx_test
