// The ONNX half of fuzz_mutators.h. ONNX's protobuf classes may only be included by the
// frontend (cmake/check_layering.cmake), so models are read and written here as protobuf
// wire format with the field numbers of onnx/onnx.proto; that also lets a mutation write
// what the classes cannot: a field with the wrong wire type, an enum out of range.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <vector>

#include "fuzz/fuzz_mutators.h"
#include "loom/graph_opt/onnx.h"

namespace loom::fuzz {
namespace {

// ---------------------------------------------------------------- protobuf wire format

enum Wire { kVarint = 0, kFixed64 = 1, kLen = 2, kFixed32 = 5 };

/// The message types of onnx.proto the mutations look into.
enum class T {
  kNone,
  kModel,
  kOpset,
  kGraph,
  kNode,
  kAttr,
  kTensor,
  kValueInfo,
  kType,
  kTypeTensor,
  kTypeSeq,
  kShape,
  kDim,
  kEntry
};

/// The message type of field `num` of a `t`, kNone for scalars, strings and bytes.
T sub_type(T t, uint32_t num) {
  switch (t) {
    case T::kModel: return num == 7 ? T::kGraph : num == 8 ? T::kOpset : num == 14 ? T::kEntry : T::kNone;
    case T::kGraph:
      return num == 1                                ? T::kNode
             : num == 5                              ? T::kTensor
             : (num == 11 || num == 12 || num == 13) ? T::kValueInfo
                                                     : T::kNone;
    case T::kNode: return num == 5 ? T::kAttr : T::kNone;
    case T::kAttr:
      return num == 5 || num == 10 ? T::kTensor : num == 6 || num == 11 ? T::kGraph : num == 14 ? T::kType : T::kNone;
    case T::kTensor: return num == 13 ? T::kEntry : T::kNone;
    case T::kValueInfo: return num == 2 ? T::kType : T::kNone;
    case T::kType: return num == 1 ? T::kTypeTensor : num == 4 ? T::kTypeSeq : T::kNone;
    case T::kTypeTensor: return num == 2 ? T::kShape : T::kNone;
    case T::kTypeSeq: return num == 1 ? T::kType : T::kNone;
    case T::kShape: return num == 1 ? T::kDim : T::kNone;
    default: return T::kNone;
  }
}

struct Msg;

/// One field; copies are deep (a copied message mutates apart from the original).
struct Field {
  uint32_t num = 0;
  Wire wire = kVarint;
  uint64_t v = 0;            // kVarint, kFixed64, kFixed32
  std::string bytes;         // kLen, when not a message
  std::shared_ptr<Msg> msg;  // kLen, a message of a known type

  Field() = default;
  Field(uint32_t n, Wire w, uint64_t value, std::string b, std::shared_ptr<Msg> m)
      : num(n), wire(w), v(value), bytes(std::move(b)), msg(std::move(m)) {}
  Field(const Field& o);
  Field& operator=(const Field& o);
  Field(Field&&) = default;
  Field& operator=(Field&&) = default;
};

struct Msg {
  std::vector<Field> fields;

  Msg& varint(uint32_t num, int64_t v) {
    fields.push_back({num, kVarint, uint64_t(v), "", nullptr});
    return *this;
  }
  Msg& str(uint32_t num, const std::string& s) {
    fields.push_back({num, kLen, 0, s, nullptr});
    return *this;
  }
  Msg& f32(uint32_t num, float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    fields.push_back({num, kFixed32, u, "", nullptr});
    return *this;
  }
  Msg& msg(uint32_t num, Msg m) {
    fields.push_back({num, kLen, 0, "", std::make_shared<Msg>(std::move(m))});
    return *this;
  }
  /// The sub-messages in field `num`.
  std::vector<Msg*> all(uint32_t num) {
    std::vector<Msg*> out;
    for (Field& f : fields)
      if (f.num == num && f.msg) out.push_back(f.msg.get());
    return out;
  }
  Msg* first(uint32_t num) {
    for (Field& f : fields)
      if (f.num == num && f.msg) return f.msg.get();
    return nullptr;
  }
  Field* scalar(uint32_t num) {
    for (Field& f : fields)
      if (f.num == num && !f.msg) return &f;
    return nullptr;
  }
  std::string text(uint32_t num) {
    Field* f = scalar(num);
    return f && f->wire == kLen ? f->bytes : "";
  }
  void set_varint(uint32_t num, int64_t v) {
    erase(num);
    varint(num, v);
  }
  void set_str(uint32_t num, const std::string& s) {
    erase(num);
    str(num, s);
  }
  void erase(uint32_t num) {
    std::erase_if(fields, [&](const Field& f) { return f.num == num; });
  }
  size_t count(uint32_t num) const {
    return size_t(std::count_if(fields.begin(), fields.end(), [&](const Field& f) { return f.num == num; }));
  }
};

Field::Field(const Field& o)
    : num(o.num), wire(o.wire), v(o.v), bytes(o.bytes), msg(o.msg ? std::make_shared<Msg>(*o.msg) : nullptr) {}

Field& Field::operator=(const Field& o) {
  if (this != &o) *this = Field(o);
  return *this;
}

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out += char(uint8_t(v) | 0x80);
    v >>= 7;
  }
  out += char(v);
}

std::string encode(const Msg& m) {
  std::string out;
  for (const Field& f : m.fields) {
    put_varint(out, (uint64_t(f.num) << 3) | f.wire);
    switch (f.wire) {
      case kVarint: put_varint(out, f.v); break;
      case kFixed64: out.append(reinterpret_cast<const char*>(&f.v), 8); break;
      case kFixed32: {
        uint32_t u = uint32_t(f.v);
        out.append(reinterpret_cast<const char*>(&u), 4);
        break;
      }
      case kLen: {
        std::string body = f.msg ? encode(*f.msg) : f.bytes;
        put_varint(out, body.size());
        out += body;
        break;
      }
    }
  }
  return out;
}

bool get_varint(const std::string& s, size_t& at, uint64_t& v) {
  v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (at >= s.size()) return false;
    uint8_t b = uint8_t(s[at++]);
    v |= uint64_t(b & 0x7f) << shift;
    if (!(b & 0x80)) return true;
  }
  return false;
}

/// Parses `s` as a message of type `t`; false if it is not well-formed wire format (or nests
/// deeper than `depth`).
bool decode(const std::string& s, T t, Msg& m, int depth = 48) {
  if (depth == 0) return false;
  size_t at = 0;
  while (at < s.size()) {
    uint64_t key;
    if (!get_varint(s, at, key) || (key >> 3) == 0 || (key >> 3) > (1u << 29)) return false;
    Field f;
    f.num = uint32_t(key >> 3);
    f.wire = Wire(key & 7);
    switch (f.wire) {
      case kVarint:
        if (!get_varint(s, at, f.v)) return false;
        break;
      case kFixed64:
        if (s.size() - at < 8) return false;
        std::memcpy(&f.v, s.data() + at, 8);
        at += 8;
        break;
      case kFixed32: {
        if (s.size() - at < 4) return false;
        uint32_t u;
        std::memcpy(&u, s.data() + at, 4);
        f.v = u;
        at += 4;
        break;
      }
      case kLen: {
        uint64_t n;
        if (!get_varint(s, at, n) || n > s.size() - at) return false;
        std::string body = s.substr(at, size_t(n));
        at += size_t(n);
        T sub = sub_type(t, f.num);
        if (sub != T::kNone) {
          f.msg = std::make_shared<Msg>();
          if (!decode(body, sub, *f.msg, depth - 1)) return false;
        } else {
          f.bytes = std::move(body);
        }
        break;
      }
      default: return false;
    }
    m.fields.push_back(std::move(f));
  }
  return true;
}

// ---------------------------------------------------------------- ONNX messages

// Field numbers of onnx.proto.
namespace model {
enum { ir_version = 1, producer = 2, graph = 7, opset = 8 };
}
namespace graph {
enum { node = 1, name = 2, initializer = 5, input = 11, output = 12, value_info = 13 };
}
namespace node {
enum { input = 1, output = 2, name = 3, op_type = 4, attribute = 5, domain = 7 };
}
namespace attr {
enum { name = 1, f = 2, i = 3, s = 4, t = 5, g = 6, floats = 7, ints = 8, strings = 9, type = 20 };
}
namespace attr_type {
enum { FLOAT = 1, INT = 2, STRING = 3, TENSOR = 4, GRAPH = 5, FLOATS = 6, INTS = 7, STRINGS = 8 };
}
namespace tensor {
enum {
  dims = 1,
  data_type = 2,
  float_data = 4,
  int64_data = 7,
  name = 8,
  raw_data = 9,
  external_data = 13,
  data_location = 14
};
}
namespace dtype {
enum { FLOAT = 1, INT64 = 7, STRING = 8, BOOL = 9 };
}

Msg value_info(const std::string& name, const std::vector<int64_t>& shape, int elem_type = dtype::FLOAT) {
  Msg sh;
  for (int64_t d : shape) sh.msg(1, Msg().varint(1, d));
  Msg tt;
  tt.varint(1, elem_type).msg(2, std::move(sh));
  return Msg().str(1, name).msg(2, Msg().msg(1, std::move(tt)));
}

std::string packed_floats(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4);
}

std::string packed_varints(const std::vector<int64_t>& v) {
  std::string s;
  for (int64_t x : v) put_varint(s, uint64_t(x));
  return s;
}

/// A float initializer with deterministic values, as raw_data or (packed) float_data.
Msg float_init(const std::string& name, const std::vector<int64_t>& shape, bool raw, float scale) {
  Msg t;
  int64_t n = 1;
  for (int64_t d : shape) {
    t.varint(tensor::dims, d);
    n *= d;
  }
  t.varint(tensor::data_type, dtype::FLOAT).str(tensor::name, name);
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[size_t(i)] = scale * float((i * 37) % 17 - 8) / 8.0f;
  t.str(raw ? tensor::raw_data : tensor::float_data, packed_floats(v));
  return t;
}

Msg ints_attr(const std::string& name, const std::vector<int64_t>& v) {
  Msg a;
  a.str(attr::name, name).varint(attr::type, attr_type::INTS);
  for (int64_t x : v) a.varint(attr::ints, x);
  return a;
}

Msg make_node(const std::string& op, const std::vector<std::string>& in, const std::string& out,
              std::vector<Msg> attrs = {}) {
  Msg n;
  for (const auto& s : in) n.str(node::input, s);
  n.str(node::output, out).str(node::name, out).str(node::op_type, op);
  for (Msg& a : attrs) n.msg(node::attribute, std::move(a));
  return n;
}

std::vector<int64_t> dims_of(Msg& t) {
  std::vector<int64_t> d;
  for (Field& f : t.fields)
    if (f.num == tensor::dims && f.wire == kVarint) d.push_back(int64_t(f.v));
  return d;
}

void set_dims(Msg& t, const std::vector<int64_t>& dims) {
  // dims come first, where the seed writes them
  std::vector<Field> rest;
  for (Field& f : t.fields)
    if (f.num != tensor::dims) rest.push_back(std::move(f));
  t.fields.clear();
  for (int64_t d : dims) t.varint(tensor::dims, d);
  for (Field& f : rest) t.fields.push_back(std::move(f));
}

/// The operator names a node may become: every one the importer converts (so the fuzzer
/// follows the frontend as operators are added), and a few it does not.
const std::vector<std::string>& onnx_op_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v = graph_opt::onnx_supported_ops();
    for (const char* other : {"Loop", "Scan", "NoSuchOp", ""}) v.push_back(other);
    return v;
  }();
  return names;
}

template <class V>
auto& pick_from(V& v, Rng& rng) {
  return v[size_t(rng.below(v.size()))];
}

/// The tensor shapes (TensorShapeProto) of the graph's inputs, outputs and value_info, with
/// the value's name.
std::vector<std::pair<std::string, Msg*>> typed_values(Msg& g) {
  std::vector<std::pair<std::string, Msg*>> out;
  for (uint32_t k : {graph::input, graph::output, graph::value_info})
    for (Msg* vi : g.all(k)) out.push_back({vi->text(1), vi});
  return out;
}

/// The TypeProto.Tensor of a ValueInfoProto, made if missing.
Msg& tensor_type(Msg& vi) {
  Msg* type = vi.first(2);
  if (!type) {
    vi.msg(2, Msg());
    type = vi.first(2);
  }
  Msg* tt = type->first(1);
  if (!tt) {
    type->msg(1, Msg());
    tt = type->first(1);
  }
  return *tt;
}

/// Makes `consumer` read `out` in place of its input `use`, and moves it after the nodes
/// added last (nodes come in order).
void read_instead(Msg& g, Msg* consumer, Field* use, const std::string& out) {
  use->bytes = out;
  auto& fs = g.fields;
  auto it = std::find_if(fs.begin(), fs.end(), [&](const Field& f) { return f.msg.get() == consumer; });
  if (it != fs.end()) {
    Field moved = std::move(*it);
    fs.erase(it);
    fs.push_back(std::move(moved));
  }
}

/// An initializer of `type` (INT64 or BOOL) named `name` holding `v`.
Msg int_init(const std::string& name, const std::vector<int64_t>& dims, const std::vector<int64_t>& v, int type) {
  Msg t;
  for (int64_t d : dims) t.varint(tensor::dims, d);
  t.varint(tensor::data_type, type).str(tensor::name, name);
  if (type == dtype::INT64) {
    t.str(tensor::raw_data, std::string(reinterpret_cast<const char*>(v.data()), v.size() * 8));
  } else {
    std::string raw;
    for (int64_t x : v) raw += char(x != 0);
    t.str(tensor::raw_data, raw);
  }
  return t;
}

Msg int_attr(const std::string& name, int64_t v) {
  return Msg().str(attr::name, name).varint(attr::type, attr_type::INT).varint(attr::i, v);
}
Msg str_attr(const std::string& name, const std::string& v) {
  return Msg().str(attr::name, name).varint(attr::type, attr_type::STRING).str(attr::s, v);
}

/// Adds a node of one of the operators whose converters came later (NegativeLogLikelihoodLoss,
/// SoftmaxCrossEntropyLoss, Compress, NonZero, Unique, NonMaxSuppression, ai.onnx.preview's
/// FlexAttention with a modifier subgraph) reading `c` and writing `out`, with hostile or
/// plausible inputs and attributes (extreme targets and ignore_index, conditions of any length,
/// modifiers that are broken); returns what it added.
std::string splice_later_operator(Msg& model, Msg& g, Rng& rng, const std::string& c, const std::string& out) {
  const std::string arg = "fuzz_arg_" + out;
  auto value = [&]() -> int64_t { return rng.chance(60) ? int64_t(rng.below(6)) - 1 : rng.pick(extreme_ints()); };
  auto values = [&](size_t n) {
    std::vector<int64_t> v(n);
    for (int64_t& x : v) x = value();
    return v;
  };
  switch (rng.below(7)) {
    case 0:
    case 1: {
      const bool sce = rng.chance(50);
      const char* op = sce ? "SoftmaxCrossEntropyLoss" : "NegativeLogLikelihoodLoss";
      std::vector<int64_t> dims;
      for (size_t i = 0, n = 1 + rng.below(3); i < n; ++i) dims.push_back(1 + int64_t(rng.below(3)));
      int64_t n = 1;
      for (int64_t d : dims) n *= d;
      g.msg(graph::initializer, int_init(arg, dims, values(size_t(n)), dtype::INT64));
      std::vector<std::string> ins = {c, arg};
      if (rng.chance(40)) {
        g.msg(graph::initializer, float_init(arg + "_w", {int64_t(1 + rng.below(9))}, true, 1.0f));
        ins.push_back(arg + "_w");
      }
      std::vector<Msg> attrs;
      static const std::vector<std::string> reductions = {"none", "sum", "mean", "average", ""};
      if (rng.chance(70)) attrs.push_back(str_attr("reduction", rng.pick(reductions)));
      if (rng.chance(50)) attrs.push_back(int_attr("ignore_index", value()));
      g.msg(graph::node, make_node(op, ins, out, std::move(attrs)));
      return fmt::format("{} of targets [{}]{}", op, fmt::join(dims, ","), ins.size() > 2 ? " with weights" : "");
    }
    case 2: {
      const size_t n = size_t(rng.pick(std::vector<int64_t>{1, 3, 8, 64, 513}));
      std::vector<int64_t> bits(n);
      for (int64_t& b : bits) b = rng.chance(40) ? 1 : 0;
      g.msg(graph::initializer, int_init(arg, {int64_t(n)}, bits, dtype::BOOL));
      std::vector<Msg> attrs;
      if (rng.chance(70)) attrs.push_back(int_attr("axis", value()));
      g.msg(graph::node, make_node("Compress", {c, arg}, out, std::move(attrs)));
      return fmt::format("Compress by a condition of {} values", n);
    }
    case 3: g.msg(graph::node, make_node("NonZero", {c}, out)); return "NonZero";
    case 4: {
      std::vector<Msg> attrs;
      if (rng.chance(50)) attrs.push_back(int_attr("axis", value()));
      if (rng.chance(50)) attrs.push_back(int_attr("sorted", value()));
      g.msg(graph::node, make_node("Unique", {c}, out, std::move(attrs)));
      return "Unique";
    }
    case 5: {
      g.msg(graph::initializer, int_init(arg, {1}, {value()}, dtype::INT64));
      std::vector<Msg> attrs;
      if (rng.chance(50)) attrs.push_back(int_attr("center_point_box", value()));
      g.msg(graph::node, make_node("NonMaxSuppression", {c, c, arg}, out, std::move(attrs)));
      return "NonMaxSuppression of one value as boxes and scores";
    }
    default: {
      // score_mod or prob_mod: scores + 1, or broken: no output, two inputs, an output nothing computes.
      Msg sub;
      sub.str(graph::name, "mod");
      sub.msg(graph::input, Msg().str(1, "s").msg(2, Msg().msg(1, Msg().varint(1, dtype::FLOAT))));  // no shape
      sub.msg(graph::initializer, float_init("one", {}, true, 1.0f));
      const int broken = int(rng.below(4));
      if (broken == 1) sub.msg(graph::input, value_info("s2", {1}));
      sub.msg(graph::node, make_node("Add", {"s", "one"}, "s_out"));
      if (broken != 2) sub.msg(graph::output, Msg().str(1, broken == 3 ? "nothing" : "s_out"));
      Msg a;
      a.str(attr::name, rng.chance(50) ? "score_mod" : "prob_mod").varint(attr::type, attr_type::GRAPH);
      a.msg(attr::g, std::move(sub));
      Msg n = make_node("FlexAttention", {c, c, c}, out, {std::move(a)});
      n.str(node::domain, "ai.onnx.preview");
      g.msg(graph::node, std::move(n));
      const int64_t version = rng.pick(std::vector<int64_t>{1, 1, 2, 0});
      model.msg(model::opset, Msg().str(1, "ai.onnx.preview").varint(2, version));
      return fmt::format("FlexAttention of one value as Q, K and V (modifier {}, preview opset {})",
                         broken ? "broken" : "valid", version);
    }
  }
}

std::string mutate_model(Msg& model, Rng& rng, bool* deep, int kind) {
  Msg* g = model.first(model::graph);
  if (!g) return "";
  std::vector<Msg*> nodes = g->all(graph::node), inits = g->all(graph::initializer);
  auto node_name = [](Msg* n) { return n->text(node::name); };
  switch (kind >= 0 ? uint64_t(kind) : rng.below(kOnnxMutationKinds)) {
    case 0: {  // a dim of a declared type
      auto vs = typed_values(*g);
      if (vs.empty()) return "";
      auto [name, vi] = pick_from(vs, rng);
      Msg& tt = tensor_type(*vi);
      switch (rng.below(4)) {
        case 0: tt.erase(2); return fmt::format("onnx: value '{}' loses its shape", name);
        case 1: {
          int r = int(rng.below(6));
          Msg sh;
          for (int i = 0; i < r; ++i) sh.msg(1, Msg().varint(1, 1 + int64_t(rng.below(4))));
          tt.erase(2);
          tt.msg(2, std::move(sh));
          return fmt::format("onnx: value '{}' gets rank {}", name, r);
        }
        default: {
          Msg* sh = tt.first(2);
          if (!sh || sh->all(1).empty()) return "";
          std::vector<Msg*> dims = sh->all(1);
          size_t i = size_t(rng.below(dims.size()));
          if (rng.chance(25)) {
            dims[i]->erase(1);
            dims[i]->set_str(2, "N");
            return fmt::format("onnx: value '{}' dim {} symbolic", name, i);
          }
          int64_t d = rng.pick(extreme_ints());
          dims[i]->set_varint(1, d);
          return fmt::format("onnx: value '{}' dim {} = {}", name, i, d);
        }
      }
    }
    case 1: {  // initializer dims
      if (inits.empty()) return "";
      Msg& t = *pick_from(inits, rng);
      std::vector<int64_t> d = dims_of(t);
      if (d.empty() || rng.chance(30)) {
        d.clear();
        for (int i = 0, r = int(rng.below(7)); i < r; ++i)
          d.push_back(rng.chance(50) ? rng.pick(extreme_ints()) : 1 + int64_t(rng.below(8)));
      } else {
        d[size_t(rng.below(d.size()))] = rng.pick(extreme_ints());
      }
      set_dims(t, d);
      return fmt::format("onnx: initializer '{}' dims [{}]", t.text(tensor::name), fmt::join(d, ","));
    }
    case 2: {  // a data type
      static const std::vector<int64_t> types = {0,  1,  2,  3,  4,  5,  6,  7,  8,  9,   10, 11,
                                                 12, 13, 14, 15, 16, 17, 19, 21, 23, 999, -1};
      int64_t dt = rng.pick(types);
      if (rng.chance(50) && !inits.empty()) {
        Msg& t = *pick_from(inits, rng);
        t.set_varint(tensor::data_type, dt);
        return fmt::format("onnx: initializer '{}' data_type {}", t.text(tensor::name), dt);
      }
      auto vs = typed_values(*g);
      if (vs.empty()) return "";
      auto [name, vi] = pick_from(vs, rng);
      tensor_type(*vi).set_varint(1, dt);
      return fmt::format("onnx: value '{}' elem_type {}", name, dt);
    }
    case 3: {  // an attribute of the wrong type
      if (nodes.empty()) return "";
      Msg* n = pick_from(nodes, rng);
      std::vector<Msg*> attrs = n->all(node::attribute);
      if (attrs.empty()) return "";
      Msg& a = *pick_from(attrs, rng);
      std::string name = a.text(attr::name);
      a = Msg();
      a.str(attr::name, name);
      std::string what;
      switch (rng.below(9)) {
        case 0:
          a.varint(attr::type, attr_type::FLOAT).f32(attr::f, 1.5f);
          what = "FLOAT";
          break;
        case 1:
          a.varint(attr::type, attr_type::INT).varint(attr::i, 3);
          what = "INT";
          break;
        case 2:
          a.varint(attr::type, attr_type::STRING).str(attr::s, "SAME_UPPER");
          what = "STRING";
          break;
        case 3:
          a.varint(attr::type, attr_type::FLOATS).f32(attr::floats, 2.0f).f32(attr::floats, -1.0f);
          what = "FLOATS";
          break;
        case 4:
          a.varint(attr::type, attr_type::STRINGS).str(attr::strings, "x");
          what = "STRINGS";
          break;
        case 5: {
          Msg t;
          t.varint(tensor::dims, 2)
              .varint(tensor::data_type, dtype::INT64)
              .str(tensor::int64_data, packed_varints({2, 2}));
          a.varint(attr::type, attr_type::TENSOR).msg(attr::t, std::move(t));
          what = "TENSOR";
          break;
        }
        case 6:
          a.varint(attr::type, attr_type::INTS);
          what = "INTS, empty";
          break;
        case 7:
          a.varint(attr::type, 99).varint(attr::i, 2);
          what = "99 (no such type)";
          break;
        default:
          a.varint(attr::type, attr_type::INTS).str(attr::ints, "\x02\x02");
          what = "INTS, packed";
          break;
      }
      return fmt::format("onnx: node '{}' attribute '{}' of type {}", node_name(n), name, what);
    }
    case 4: {  // attribute values
      if (nodes.empty()) return "";
      Msg* n = pick_from(nodes, rng);
      std::vector<Msg*> attrs = n->all(node::attribute);
      if (attrs.empty()) return "";
      Msg& a = *pick_from(attrs, rng);
      std::string name = a.text(attr::name);
      if (a.count(attr::ints)) {
        std::vector<int64_t> v;
        for (Field& f : a.fields)
          if (f.num == attr::ints && f.wire == kVarint) v.push_back(int64_t(f.v));
        if (v.empty() || rng.chance(30)) {
          v.clear();
          for (int i = 0, k = int(rng.below(9)); i < k; ++i) v.push_back(int64_t(rng.below(5)) - 1);
        } else {
          v[size_t(rng.below(v.size()))] = rng.pick(extreme_ints());
        }
        a.erase(attr::ints);
        for (int64_t x : v) a.varint(attr::ints, x);
        return fmt::format("onnx: node '{}' attribute '{}' = [{}]", node_name(n), name, fmt::join(v, ","));
      }
      if (a.count(attr::i)) {
        int64_t v = rng.pick(extreme_ints());
        a.set_varint(attr::i, v);
        return fmt::format("onnx: node '{}' attribute '{}' = {}", node_name(n), name, v);
      }
      static const float floats[] = {0.0f, -1.0f, 1e38f, -1e38f, 1e-45f, NAN, INFINITY};
      float f = floats[rng.below(sizeof floats / sizeof floats[0])];
      a.erase(attr::f);
      a.f32(attr::f, f);
      return fmt::format("onnx: node '{}' attribute '{}' = {}", node_name(n), name, f);
    }
    case 5: {  // a duplicate attribute
      if (nodes.empty()) return "";
      Msg* n = pick_from(nodes, rng);
      std::vector<Msg*> attrs = n->all(node::attribute);
      if (attrs.empty()) return "";
      Msg copy = *pick_from(attrs, rng);
      bool changed = rng.chance(50);
      if (changed)
        for (Field& f : copy.fields)
          if ((f.num == attr::ints || f.num == attr::i) && f.wire == kVarint) f.v += 1;
      n->msg(node::attribute, copy);
      return fmt::format("onnx: node '{}' has attribute '{}' twice{}", node_name(n), copy.text(attr::name),
                         changed ? " with different values" : "");
    }
    case 6: {  // an input naming its own or a later node's output: a cycle
      if (nodes.empty()) return "";
      size_t i = size_t(rng.below(nodes.size()));
      size_t j = i + size_t(rng.below(nodes.size() - i));
      std::string target = nodes[j]->text(node::output);
      if (target.empty()) return "";
      Msg& n = *nodes[i];
      std::vector<Field*> ins;
      for (Field& f : n.fields)
        if (f.num == node::input) ins.push_back(&f);
      if (ins.empty() || rng.chance(20))
        n.str(node::input, target);
      else
        pick_from(ins, rng)->bytes = target;
      return fmt::format("onnx: node '{}' reads '{}' ({})", node_name(&n), target,
                         i == j ? "its own output" : "a later output");
    }
    case 7: {  // a missing initializer
      if (inits.empty()) return "";
      size_t k = size_t(rng.below(inits.size()));
      std::string name = inits[k]->text(tensor::name);
      size_t seen = 0;
      std::erase_if(g->fields, [&](const Field& f) { return f.num == graph::initializer && seen++ == k; });
      return fmt::format("onnx: initializer '{}' removed", name);
    }
    case 8: {  // tensor data of the wrong size
      if (inits.empty()) return "";
      Msg& t = *pick_from(inits, rng);
      std::string name = t.text(tensor::name);
      uint32_t data = t.count(tensor::raw_data)     ? tensor::raw_data
                      : t.count(tensor::float_data) ? tensor::float_data
                                                    : tensor::int64_data;
      Field* f = t.scalar(data);
      switch (rng.below(4)) {
        case 0: {
          if (!f) return "";
          size_t n = f->bytes.empty() ? 0 : size_t(rng.below(f->bytes.size()));
          f->bytes.resize(n);
          return fmt::format("onnx: initializer '{}' data cut to {} bytes", name, n);
        }
        case 1: {
          if (!f) return "";
          size_t n = size_t(1 + rng.below(9));
          f->bytes += std::string(n, '\x01');
          return fmt::format("onnx: initializer '{}' data {} bytes longer", name, n);
        }
        case 2:
          t.str(tensor::float_data, packed_floats({1.0f})).str(tensor::int64_data, packed_varints({1}));
          return fmt::format("onnx: initializer '{}' gains float_data and int64_data values", name);
        default:
          t.erase(tensor::raw_data);
          t.erase(tensor::float_data);
          t.erase(tensor::int64_data);
          return fmt::format("onnx: initializer '{}' has no data", name);
      }
    }
    case 9: {  // opset
      static const std::vector<int64_t> versions = {1, 7, 999, 0, -5, int64_t(1) << 40};
      switch (rng.below(3)) {
        case 0: {
          int64_t v = rng.pick(versions);
          model.erase(model::opset);
          model.msg(model::opset, Msg().str(1, "").varint(2, v));
          return fmt::format("onnx: opset {}", v);
        }
        case 1: model.erase(model::opset); return "onnx: no opset_import";
        default: {
          std::string domain = rng.chance(50) ? "" : "com.microsoft";
          int64_t v = rng.pick(versions);
          model.msg(model::opset, Msg().str(1, domain).varint(2, v));
          return fmt::format("onnx: a second opset_import '{}' version {}", domain, v);
        }
      }
    }
    case 10: {  // another operator
      if (nodes.empty()) return "";
      Msg* n = pick_from(nodes, rng);
      std::string op = onnx_op_names()[size_t(rng.below(onnx_op_names().size()))];
      n->set_str(node::op_type, op);
      bool ml = rng.chance(20);
      if (ml) n->set_str(node::domain, "ai.onnx.ml");
      return fmt::format("onnx: node '{}' becomes '{}'{}", node_name(n), op, ml ? " in domain ai.onnx.ml" : "");
    }
    case 11: {  // inputs added, dropped, emptied
      if (nodes.empty()) return "";
      Msg& n = *pick_from(nodes, rng);
      std::vector<Field*> ins;
      for (Field& f : n.fields)
        if (f.num == node::input) ins.push_back(&f);
      switch (rng.below(3)) {
        case 0: {
          int k = int(1 + rng.below(4));
          for (int i = 0; i < k; ++i) n.str(node::input, "x");
          return fmt::format("onnx: node '{}' gains {} input(s)", node_name(&n), k);
        }
        case 1: {
          if (ins.empty()) return "";
          size_t last = 0;
          for (size_t i = 0; i < n.fields.size(); ++i)
            if (n.fields[i].num == node::input) last = i;
          n.fields.erase(n.fields.begin() + long(last));
          return fmt::format("onnx: node '{}' loses its last input", node_name(&n));
        }
        default: {
          if (ins.empty()) return "";
          std::string v = rng.chance(50) ? "" : "no_such_value";
          pick_from(ins, rng)->bytes = v;
          return fmt::format("onnx: node '{}' input '{}'", node_name(&n), v);
        }
      }
    }
    case 12: {  // graph outputs and node outputs
      switch (rng.below(4)) {
        case 0: g->erase(graph::output); return "onnx: no graph outputs";
        case 1: {
          std::string name = rng.chance(50) ? "no_such_value" : "x";
          g->msg(graph::output, value_info(name, {1, 3, 8, 8}));
          return fmt::format("onnx: graph output '{}' added", name);
        }
        case 2: {
          if (nodes.empty()) return "";
          Msg* n = pick_from(nodes, rng);
          n->erase(node::output);
          return fmt::format("onnx: node '{}' has no outputs", node_name(n));
        }
        default: {
          if (nodes.size() < 2) return "";
          Msg* a = pick_from(nodes, rng);
          std::string o = pick_from(nodes, rng)->text(node::output);
          a->str(node::output, o);
          return fmt::format("onnx: node '{}' also writes '{}'", node_name(a), o);
        }
      }
    }
    case 13: {  // deeply nested subgraphs
      if (nodes.empty()) return "";
      Msg* n = pick_from(nodes, rng);
      static const std::vector<int> depths = {8, 120, 3000};
      int depth = rng.pick(depths);
      // Built inside out: a graph holding an If node whose then_branch is the graph before.
      Msg sub;
      sub.str(graph::name, "leaf");
      for (int i = 1; i < depth; ++i) {
        Msg a;
        a.str(attr::name, "then_branch").varint(attr::type, attr_type::GRAPH).msg(attr::g, std::move(sub));
        Msg inner;
        inner.str(node::output, fmt::format("o{}", i)).str(node::op_type, "If").msg(node::attribute, std::move(a));
        sub = Msg();
        sub.str(graph::name, fmt::format("sub{}", i)).msg(graph::node, std::move(inner));
      }
      Msg a;
      a.str(attr::name, rng.chance(50) ? "then_branch" : "body")
          .varint(attr::type, attr_type::GRAPH)
          .msg(attr::g, std::move(sub));
      n->msg(node::attribute, std::move(a));
      *deep = depth > 10;
      return fmt::format("onnx: node '{}' gets a graph attribute nested {} deep", node_name(n), depth);
    }
    case 14: {  // external data
      if (inits.empty()) return "";
      Msg& t = *pick_from(inits, rng);
      static const std::vector<std::string> locs = {
          "missing.bin", "/etc/passwd", "../../../../etc/hostname", "", "/dev/zero", "/proc/self/mem", "/"};
      t.erase(tensor::raw_data);
      t.erase(tensor::float_data);
      t.set_varint(tensor::data_location, 1);
      std::string loc = rng.pick(locs);
      t.msg(tensor::external_data, Msg().str(1, "location").str(2, loc));
      std::string off = std::to_string(rng.chance(50) ? 0 : rng.pick(extreme_ints()));
      std::string len = std::to_string(rng.chance(50) ? 432 : rng.pick(extreme_ints()));
      if (rng.chance(70)) t.msg(tensor::external_data, Msg().str(1, "offset").str(2, off));
      if (rng.chance(70)) t.msg(tensor::external_data, Msg().str(1, "length").str(2, len));
      return fmt::format("onnx: initializer '{}' external data at '{}' (offset {}, length {})", t.text(tensor::name),
                         loc, off, len);
    }
    case 15: {  // an initializer that is also an input, or two of one name
      if (inits.empty()) return "";
      Msg& t = *pick_from(inits, rng);
      std::string name = t.text(tensor::name);
      if (rng.chance(50)) {
        g->msg(graph::input, value_info(name, {int64_t(1 + rng.below(3)), 5}));
        return fmt::format("onnx: initializer '{}' also a graph input of another shape", name);
      }
      Msg copy = t;
      std::vector<int64_t> d = dims_of(copy);
      if (!d.empty()) d[0] += 1;
      set_dims(copy, d);
      g->msg(graph::initializer, std::move(copy));
      return fmt::format("onnx: initializer '{}' twice", name);
    }
    case 16: {  // ir_version
      static const std::vector<int64_t> versions = {0, 1, 3, 999, -1};
      int64_t v = rng.pick(versions);
      model.set_varint(model::ir_version, v);
      return fmt::format("onnx: ir_version {}", v);
    }
    case 17: {  // a field with the wrong wire type
      std::vector<Msg*> msgs = {&model, g};
      for (Msg* n : nodes) msgs.push_back(n);
      for (Msg* t : inits) msgs.push_back(t);
      Msg& m = *pick_from(msgs, rng);
      if (m.fields.empty()) return "";
      Field& f = pick_from(m.fields, rng);
      uint32_t num = f.num;
      if (f.wire == kLen) {
        f = Field{num, rng.chance(50) ? kVarint : kFixed32, 7, "", nullptr};
      } else {
        f = Field{num, kLen, 0, "\x07\x07", nullptr};
      }
      return fmt::format("onnx: field {} written with wire type {}", num, int(f.wire));
    }
    case 18:
    case 19: {  // a plausible change: the input's size, or a small attribute value
      if (rng.chance(50)) {
        std::vector<Msg*> ins = g->all(graph::input);
        if (ins.empty()) return "";
        Msg* sh = tensor_type(*ins[0]).first(2);
        if (!sh || sh->all(1).empty()) return "";
        std::vector<Msg*> dims = sh->all(1);
        size_t i = size_t(rng.below(dims.size()));
        int64_t d = 1 + int64_t(rng.below(40));
        dims[i]->set_varint(1, d);
        g->erase(graph::value_info);
        return fmt::format("onnx: input dim {} = {} (value_info dropped)", i, d);
      }
      if (nodes.empty()) return "";
      Msg* n = pick_from(nodes, rng);
      std::vector<Msg*> attrs = n->all(node::attribute);
      if (attrs.empty()) return "";
      Msg& a = *pick_from(attrs, rng);
      std::vector<Field*> ints;
      for (Field& f : a.fields)
        if ((f.num == attr::ints || f.num == attr::i) && f.wire == kVarint) ints.push_back(&f);
      if (ints.empty()) return "";
      int64_t v = int64_t(rng.below(10));
      pick_from(ints, rng)->v = uint64_t(v);
      return fmt::format("onnx: node '{}' attribute '{}': a value = {}", node_name(n), a.text(attr::name), v);
    }
    case 20:
    case 21: {  // an operator on a value (mostly an initializer: folded at import) spliced in before its consumer
      std::vector<std::pair<Msg*, Field*>> uses;
      std::map<std::string, size_t> rank;  // of initializers (4 for other values: a guess)
      for (Msg* t : inits) rank[t->text(tensor::name)] = dims_of(*t).size();
      bool constants = rng.chance(70);
      for (Msg* n : nodes)
        for (Field& f : n->fields)
          if (f.num == node::input && !f.bytes.empty() && rank.count(f.bytes) == size_t(constants))
            uses.push_back({n, &f});
      if (uses.empty()) return "";
      auto [consumer, use] = pick_from(uses, rng);
      std::string c = use->bytes, out = "fuzz_" + c, arg = "fuzz_arg_" + c;
      size_t r = constants ? rank[c] : 4;
      auto value = [&]() -> int64_t { return rng.chance(60) ? int64_t(rng.below(6)) - 1 : rng.pick(extreme_ints()); };
      auto ints_init = [&](std::vector<int64_t> v) {
        Msg t;
        t.varint(tensor::dims, int64_t(v.size())).varint(tensor::data_type, dtype::INT64).str(tensor::name, arg);
        t.str(tensor::int64_data, packed_varints(v));
        g->msg(graph::initializer, std::move(t));
        return fmt::format("[{}]", fmt::join(v, ","));
      };
      std::string what;
      switch (rng.below(6)) {
        case 0: {
          std::vector<int64_t> pads;
          for (size_t i = 0; i < 2 * r; ++i) pads.push_back(value());
          what = "Pad " + ints_init(pads);
          g->msg(graph::node, make_node("Pad", {c, arg}, out));
          break;
        }
        case 1: {
          std::vector<int64_t> shape;
          for (size_t i = 0, n = r + rng.below(3); i < n; ++i)
            shape.push_back(rng.chance(70) ? 1 + int64_t(rng.below(4)) : value());
          what = "Expand " + ints_init(shape);
          g->msg(graph::node, make_node("Expand", {c, arg}, out));
          break;
        }
        case 2: {
          std::vector<int64_t> reps;
          for (size_t i = 0; i < r; ++i) reps.push_back(value());
          what = "Tile " + ints_init(reps);
          g->msg(graph::node, make_node("Tile", {c, arg}, out));
          break;
        }
        case 3: {
          size_t copies = rng.pick(std::vector<size_t>{2, 3, 100, 5000});
          Msg a;
          int64_t axis = int64_t(rng.below(r + 2)) - 1;
          a.str(attr::name, "axis").varint(attr::type, attr_type::INT).varint(attr::i, axis);
          Msg n = make_node("Concat", std::vector<std::string>(copies, c), out, {a});
          g->msg(graph::node, std::move(n));
          what = fmt::format("Concat of {} copies on axis {}", copies, axis);
          break;
        }
        case 4: {
          std::vector<int64_t> shape;
          for (size_t i = 0, n = rng.below(5); i < n; ++i) shape.push_back(value());
          what = "Reshape " + ints_init(shape);
          g->msg(graph::node, make_node("Reshape", {c, arg}, out));
          break;
        }
        default: {
          std::vector<int64_t> starts = {value()}, ends = {value()};
          what = "Slice " + ints_init(starts);
          std::string e = arg + "_end";
          Msg t;
          t.varint(tensor::dims, 1).varint(tensor::data_type, dtype::INT64).str(tensor::name, e);
          t.str(tensor::int64_data, packed_varints(ends));
          g->msg(graph::initializer, std::move(t));
          g->msg(graph::node, make_node("Slice", {c, arg, e}, out));
          what += fmt::format(" to [{}]", ends[0]);
          break;
        }
      }
      read_instead(*g, consumer, use, out);
      return fmt::format("onnx: node '{}' reads {} of '{}'", node_name(consumer), what, c);
    }
    case 22: {  // an operator of the later converters (losses, data-dependent shapes, FlexAttention) spliced in
      std::vector<std::pair<Msg*, Field*>> uses;
      for (Msg* n : nodes)
        for (Field& f : n->fields)
          if (f.num == node::input && !f.bytes.empty()) uses.push_back({n, &f});
      if (uses.empty()) return "";
      auto [consumer, use] = pick_from(uses, rng);
      const std::string c = use->bytes, out = "fuzz_" + c;
      const std::string what = splice_later_operator(model, *g, rng, c, out);
      read_instead(*g, consumer, use, out);
      return fmt::format("onnx: node '{}' reads {} of '{}'", node_name(consumer), what, c);
    }
    default: {  // an input that is not a tensor, or not of numbers
      std::vector<Msg*> ins = g->all(graph::input);
      if (ins.empty()) return "";
      Msg& vi = *pick_from(ins, rng);
      std::string name = vi.text(1);
      switch (rng.below(3)) {
        case 0: {
          vi.erase(2);
          Msg elem;
          elem.msg(1, Msg().varint(1, dtype::FLOAT));
          vi.msg(2, Msg().msg(4, Msg().msg(1, std::move(elem))));
          return fmt::format("onnx: input '{}' is a sequence", name);
        }
        case 1: vi.erase(2); return fmt::format("onnx: input '{}' has no type", name);
        default: tensor_type(vi).set_varint(1, dtype::STRING); return fmt::format("onnx: input '{}' of strings", name);
      }
    }
  }
}

}  // namespace

std::string onnx_seed_model() {
  Msg g;
  g.str(graph::name, "fuzz_net");
  g.msg(graph::node,
        make_node("Conv", {"x", "W", "B"}, "conv",
                  {ints_attr("kernel_shape", {3, 3}), ints_attr("pads", {1, 1, 1, 1}), ints_attr("strides", {1, 1})}));
  g.msg(graph::node, make_node("Relu", {"conv"}, "relu"));
  g.msg(graph::node, make_node("Add", {"relu", "C"}, "add"));
  g.msg(graph::node,
        make_node("MaxPool", {"add"}, "pool", {ints_attr("kernel_shape", {2, 2}), ints_attr("strides", {2, 2})}));
  g.msg(graph::node, make_node("GlobalAveragePool", {"pool"}, "gap"));
  g.msg(graph::node, make_node("Reshape", {"gap", "S"}, "flat"));
  Msg trans_b, alpha;
  trans_b.str(attr::name, "transB").varint(attr::type, attr_type::INT).varint(attr::i, 1);
  alpha.str(attr::name, "alpha").varint(attr::type, attr_type::FLOAT).f32(attr::f, 1.0f);
  g.msg(graph::node, make_node("Gemm", {"flat", "G", "Gb"}, "y", {trans_b, alpha}));
  g.msg(graph::initializer, float_init("W", {8, 3, 3, 3}, true, 0.5f));
  g.msg(graph::initializer, float_init("B", {8}, false, 0.1f));
  g.msg(graph::initializer, float_init("C", {8, 1, 1}, true, 0.2f));
  g.msg(graph::initializer, float_init("G", {2, 8}, true, 0.05f));
  g.msg(graph::initializer, float_init("Gb", {2}, false, 0.1f));
  Msg s;
  s.varint(tensor::dims, 2).varint(tensor::data_type, dtype::INT64).str(tensor::name, "S");
  s.str(tensor::int64_data, packed_varints({1, -1}));
  g.msg(graph::initializer, std::move(s));
  g.msg(graph::input, value_info("x", {1, 3, 8, 8}));
  g.msg(graph::output, value_info("y", {1, 2}));
  g.msg(graph::value_info, value_info("conv", {1, 8, 8, 8}));
  g.msg(graph::value_info, value_info("pool", {1, 8, 4, 4}));

  Msg m;
  m.varint(model::ir_version, 8).str(model::producer, "loom-fuzz");
  m.msg(model::graph, std::move(g));
  m.msg(model::opset, Msg().str(1, "").varint(2, 13));
  return encode(m);
}

void mutate_onnx(Mutant& m, Rng& rng, int kind) {
  Msg model;
  if (m.deep || !decode(m.bytes, T::kModel, model)) {
    mutate_bytes(m, rng);
    return;
  }
  std::string what;
  bool deep = false;
  for (int tries = 0; tries < 20 && what.empty(); ++tries) what = mutate_model(model, rng, &deep, tries ? -1 : kind);
  if (what.empty()) {
    mutate_bytes(m, rng);
    return;
  }
  m.bytes = encode(model);
  m.deep = m.deep || deep;
  m.steps.push_back(what);
}

}  // namespace loom::fuzz
