// ONNX models for the converter tests, written field by field in protobuf's wire format
// (onnx.proto's field numbers), so that the tests need no protobuf headers: nodes with
// attributes of every kind the converters read (subgraphs included), initializers, typed
// inputs and outputs.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>
#include "common/protobuf_writer.h"

namespace loom::test::onnx_writer {

using loom::test::Pb;

enum ElemType : int64_t { kFloat = 1, kUInt8 = 2, kInt32 = 6, kInt64 = 7, kBool = 9, kDouble = 11 };

template <typename T>
std::string bytes_of(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

/// TensorProto with raw data.
inline Pb tensor(const std::string& name, int64_t type, const std::vector<int64_t>& dims, const std::string& raw) {
  Pb t;
  for (int64_t d : dims) t.i(1, d);
  t.i(2, type).s(8, name).s(9, raw);
  return t;
}
inline Pb floats_tensor(const std::string& name, const std::vector<int64_t>& dims, const std::vector<float>& v) {
  return tensor(name, kFloat, dims, bytes_of(v));
}
inline Pb ints_tensor(const std::string& name, const std::vector<int64_t>& dims, const std::vector<int64_t>& v) {
  return tensor(name, kInt64, dims, bytes_of(v));
}

/// ValueInfoProto of a tensor (dims: its static shape; rank 0 for {}).
inline Pb value(const std::string& name, const std::vector<int64_t>& dims, int64_t type = kFloat) {
  Pb shape;
  for (int64_t d : dims) shape.m(1, Pb().i(1, d));
  Pb tensor_type;
  tensor_type.i(1, type).m(2, shape);
  return Pb().s(1, name).m(2, Pb().m(1, tensor_type));
}

// AttributeProto: name 1, f 2, i 3, s 4, t 5, g 6, floats 7, ints 8, type 20.
inline Pb attr_int(const std::string& name, int64_t v) { return Pb().s(1, name).i(3, v).i(20, 2); }
inline Pb attr_float(const std::string& name, float v) { return Pb().s(1, name).f32(2, v).i(20, 1); }
inline Pb attr_str(const std::string& name, const std::string& v) { return Pb().s(1, name).s(4, v).i(20, 3); }
inline Pb attr_ints(const std::string& name, const std::vector<int64_t>& v) {
  Pb a;
  a.s(1, name);
  for (int64_t x : v) a.i(8, x);
  return a.i(20, 7);
}
inline Pb attr_floats(const std::string& name, const std::vector<float>& v) {
  Pb a;
  a.s(1, name);
  for (float x : v) a.f32(7, x);
  return a.i(20, 6);
}
inline Pb attr_tensor(const std::string& name, const Pb& t) { return Pb().s(1, name).m(5, t).i(20, 4); }

inline Pb node(const std::string& op, const std::vector<std::string>& ins, const std::vector<std::string>& outs,
               const std::string& name, const std::vector<Pb>& attrs = {}) {
  Pb n;
  for (const auto& x : ins) n.s(1, x);
  for (const auto& x : outs) n.s(2, x);
  n.s(3, name).s(4, op);
  for (const Pb& a : attrs) n.m(5, a);
  return n;
}

struct GraphPb {
  std::vector<Pb> nodes, inits, inputs, outputs;
  Pb proto(const std::string& name = "g") const {
    Pb g;
    for (const Pb& n : nodes) g.m(1, n);
    g.s(2, name);
    for (const Pb& t : inits) g.m(5, t);
    for (const Pb& v : inputs) g.m(11, v);
    for (const Pb& v : outputs) g.m(12, v);
    return g;
  }
};

inline Pb attr_graph(const std::string& name, const GraphPb& g) { return Pb().s(1, name).m(6, g.proto(name)).i(20, 5); }

struct ModelPb : GraphPb {
  int64_t opset = 19;
  /// Opsets of other domains the model imports (e.g. {"ai.onnx.preview", 1}).
  std::vector<std::pair<std::string, int64_t>> domains;
  std::string bytes() const {
    Pb model;
    model.i(1, 8).m(7, proto()).m(8, Pb().s(1, "").i(2, opset));
    for (const auto& [domain, version] : domains) model.m(8, Pb().s(1, domain).i(2, version));
    return model.b;
  }
};

/// `n` (a node()) in operator domain `domain`.
inline Pb in_domain(Pb n, const std::string& domain) { return n.s(7, domain); }

}  // namespace loom::test::onnx_writer
