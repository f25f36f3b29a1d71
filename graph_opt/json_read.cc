// Reading model files: every field, reference and constant checked; any fault a loom::Error
// naming the file and the node.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "loom/graph_opt/builder.h"
#include "loom/graph_opt/serialize.h"
#include "../records/json_limits.h"
#include "loom/runtime/error.h"
#include "loom/runtime/suggest.h"
#include "model_format.h"

namespace loom::graph_opt {

namespace fs = std::filesystem;
using nlohmann::json;
using te::ops::AttrKind;
using detail::kWeightsMagic;
using records::detail::json_int;
using records::detail::json_integer;
using records::detail::short_json;

namespace {

const char* kind_name(const json& j) {
  switch (j.type()) {
    case json::value_t::null: return "null";
    case json::value_t::object: return "an object";
    case json::value_t::array: return "an array";
    case json::value_t::string: return "a string";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return "an integer";
    case json::value_t::number_float: return "a number";
    default: return "a value";
  }
}

/// Reads fields of one JSON object, each fault an error naming `where` (file and node).
class Fields {
 public:
  Fields(const json& j, std::string where) : j_(j), where_(std::move(where)) {
    LOOM_CHECK(j.is_object(), "{}: expected an object, found {}", where_, kind_name(j));
  }
  bool has(const char* k) const { return j_.contains(k); }
  const json& get(const char* k) const {
    LOOM_CHECK(j_.contains(k), "{}: missing field \"{}\"", where_, k);
    return j_.at(k);
  }
  std::string str(const char* k) const {
    const json& v = get(k);
    LOOM_CHECK(v.is_string(), "{}: field \"{}\" must be a string, found {}", where_, k, kind_name(v));
    return v.get<std::string>();
  }
  int64_t integer(const char* k) const { return json_int<int64_t>(get(k), fmt::format("{}: field \"{}\"", where_, k)); }
  const json& array(const char* k) const {
    const json& v = get(k);
    LOOM_CHECK(v.is_array(), "{}: field \"{}\" must be an array, found {}", where_, k, kind_name(v));
    return v;
  }
  const std::string& where() const { return where_; }

 private:
  const json& j_;
  std::string where_;
};

TensorType read_type(const json& j, const std::string& where) {
  Fields f(j, where);
  TensorType t;
  // Extents as te takes them (int32), and at most 2^40 elements in all.
  int64_t elements = 1;
  for (const json& d : f.array("shape")) {
    bool ok = d.is_number_unsigned() ? d.get<uint64_t>() >= 1 && d.get<uint64_t>() <= uint64_t(INT32_MAX)
              : d.is_number_integer() ? d.get<int64_t>() >= 1 && d.get<int64_t>() <= INT32_MAX
                                      : false;
    LOOM_CHECK(ok, "{}: shape dims must be positive integers up to 2^31-1, found {}", where, short_json(d));
    int64_t v = d.get<int64_t>();
    LOOM_CHECK(elements <= (int64_t(1) << 40) / v, "{}: the shape has more than 2^40 elements", where);
    elements *= v;
    t.shape.push_back(v);
  }
  std::string dt = f.str("dtype");
  try {
    t.dtype = DataType::parse(dt);
  } catch (const Error& e) {
    fail("{}: dtype '{}': {}", where, dt, e.what());
  }
  LOOM_CHECK(t.dtype.is_scalar() && !t.dtype.is_handle() && !t.dtype.is_void(), "{}: dtype '{}' is not a tensor element type",
             where, dt);
  if (f.has("layout")) t.layout = f.str("layout");
  return t;
}

/// A JSON number, or a string the writer uses for NaN and the infinities.
std::optional<double> float_of(const json& x) {
  double v;
  if (x.is_number()) return x.get<double>();
  if (x.is_string() && detail::nonfinite_value(x.get_ref<const std::string&>(), &v)) return v;
  return std::nullopt;
}

/// A JSON attribute value as the schema's kind (or, for a name the schema lacks, its natural
/// kind, so that normalize_attrs can name it as unknown). The schema's integers are int32
/// (axes, extents, flags): a value outside that range is refused, not truncated.
AttrValue read_attr(const json& v, std::optional<AttrKind> kind, const std::string& where) {
  auto want = [&](bool ok, const char* what) {
    LOOM_CHECK(ok, "{}: must be {}, found {}", where, what, short_json(v));
  };
  const bool known = kind.has_value();
  auto integer = [&](const json& x, const std::string& what) {
    return known ? int64_t(json_int<int32_t>(x, what)) : json_int<int64_t>(x, what);
  };
  auto all = [&](auto pred) { return v.is_array() && std::all_of(v.begin(), v.end(), pred); };
  auto is_int = [](const json& x) { return x.is_number_integer(); };
  auto is_num = [](const json& x) { return float_of(x).has_value(); };
  if (!kind) {
    if (v.is_number_integer()) kind = AttrKind::kInt;
    else if (v.is_number()) kind = AttrKind::kFloat;
    else if (v.is_string()) kind = AttrKind::kString;
    else if (all(is_int)) kind = AttrKind::kInts;
    else kind = AttrKind::kFloats;
  }
  switch (*kind) {
    case AttrKind::kInt:
      return integer(v, where);
    case AttrKind::kFloat:
      want(is_num(v), "a number");
      return *float_of(v);
    case AttrKind::kString:
      want(v.is_string(), "a string");
      return v.get<std::string>();
    case AttrKind::kInts: {
      want(v.is_array(), "an array of integers");
      std::vector<int64_t> out;
      for (size_t i = 0; i < v.size(); ++i) out.push_back(integer(v[i], fmt::format("{}[{}]", where, i)));
      return out;
    }
    case AttrKind::kFloats: {
      want(all(is_num), "an array of numbers");
      std::vector<double> out;
      for (const json& x : v) out.push_back(*float_of(x));
      return out;
    }
  }
  fail("{}: unsupported attribute kind", where);
}

/// The weights file, read on demand.
class Weights {
 public:
  Weights(std::string path, std::string source) : path_(std::move(path)), source_(std::move(source)) {}
  bool defined() const { return !path_.empty(); }

  runtime::NDArray read(const Fields& f, const TensorType& t) {
    LOOM_CHECK(defined(), "{}: the constant's data is in a weights file, but {} names none (a \"weights\" field)",
               f.where(), source_);
    open();
    int64_t off = f.integer("offset"), n = f.integer("nbytes");
    LOOM_CHECK(n == nbytes(t), "{}: \"nbytes\" is {} but its type {} takes {} bytes", f.where(), n, to_string(t),
               nbytes(t));
    LOOM_CHECK(off >= int64_t(sizeof(kWeightsMagic)) && off <= size_,
               "{}: offset {} lies outside the weights file '{}' ({} bytes)", f.where(), off, path_, size_);
    LOOM_CHECK(n <= size_ - off,
               "{}: the weights file '{}' is truncated: the constant needs bytes [{}, {}) but the file has {}", f.where(),
               path_, off, off + n, size_);
    runtime::NDArray a = runtime::NDArray::empty(t.shape, t.dtype);
    in_.seekg(off);
    in_.read(static_cast<char*>(a.raw_data()), std::streamsize(n));
    LOOM_CHECK(in_.good(), "{}: reading {} bytes at offset {} of '{}' failed", f.where(), n, off, path_);
    if (f.has("checksum")) {
      std::string want = f.str("checksum"), got = detail::checksum_text(detail::fnv1a(a.raw_data(), size_t(n)));
      LOOM_CHECK(want == got,
                 "{}: the bytes at offset {} of '{}' have checksum {}, not {} (the weights file belongs to another "
                 "model or is damaged)",
                 f.where(), off, path_, got, want);
    }
    return a;
  }

 private:
  void open() {
    if (in_.is_open()) return;
    std::error_code ec;
    LOOM_CHECK(fs::is_regular_file(path_, ec), "{}: the weights file '{}' does not exist or is not a file", source_,
               path_);
    in_.open(path_, std::ios::binary);
    LOOM_CHECK(in_.is_open(), "{}: cannot open the weights file '{}'", source_, path_);
    in_.seekg(0, std::ios::end);
    size_ = int64_t(in_.tellg());
    in_.seekg(0);
    char magic[sizeof(kWeightsMagic)] = {};
    in_.read(magic, sizeof(magic));
    LOOM_CHECK(in_.good() && std::memcmp(magic, kWeightsMagic, sizeof(magic)) == 0,
               "{}: '{}' is not a loom weights file (it does not start with LOOMWGT1)", source_, path_);
  }
  std::string path_, source_;
  std::ifstream in_;
  int64_t size_ = 0;
};

runtime::NDArray inline_data(const Fields& f, const TensorType& t) {
  const json& d = f.array("data");
  LOOM_CHECK(int64_t(d.size()) == numel(t), "{}: \"data\" has {} values but the type {} has {} elements", f.where(),
             d.size(), to_string(t), numel(t));
  runtime::NDArray a = runtime::NDArray::empty(t.shape, t.dtype);
  const DataType dt = t.dtype;
  const int bits = dt.bits();
  for (size_t i = 0; i < d.size(); ++i) {
    const json& x = d[i];
    std::string what = fmt::format("{}: data value {}", f.where(), i);
    if (dt.is_float()) {
      std::optional<double> v = float_of(x);
      LOOM_CHECK(v, "{}: data value {} is {}, not a number (or \"nan\", \"inf\", \"-inf\")", f.where(), i,
                 short_json(x));
      double max = bits == 16 ? 65504.0 : bits == 32 ? double(std::numeric_limits<float>::max()) : HUGE_VAL;
      LOOM_CHECK(!std::isfinite(*v) || std::abs(*v) <= max, "{}: {} does not fit in {}", what, x.dump(), dt.str());
      a.set(int64_t(i), *v);
      continue;
    }
    LOOM_CHECK(x.is_number(), "{}: data value {} is {}, not a number", f.where(), i, kind_name(x));
    if (dt.is_uint() && bits == 64) {
      a.data<uint64_t>()[i] = x.is_number_unsigned() ? x.get<uint64_t>()
                                                     : uint64_t(json_integer(x, what, 0, INT64_MAX, "uint64"));
    } else if (dt.is_int() && bits == 64) {
      a.data<int64_t>()[i] = json_int<int64_t>(x, what);
    } else {
      // int8..int32, uint8..uint32, bool: exact as a double.
      int64_t lo = dt.is_int() ? -(int64_t(1) << (bits - 1)) : 0;
      int64_t hi = dt.is_bool() ? 1 : dt.is_int() ? (int64_t(1) << (bits - 1)) - 1 : (int64_t(1) << bits) - 1;
      a.set(int64_t(i), double(json_integer(x, what, lo, hi, dt.str().c_str())));
    }
  }
  return a;
}

struct RawNode {
  const json* j;
  std::string name, where;
  std::vector<std::pair<std::string, int>> inputs;  // (node name, output index)
};

std::pair<std::string, int> read_ref(const json& r, const std::string& where) {
  if (r.is_string()) return {r.get<std::string>(), 0};
  LOOM_CHECK(r.is_array() && r.size() == 2 && r[0].is_string() && r[1].is_number(),
             "{}: a value reference is a node name or [name, output index], found {}", where, short_json(r));
  std::string name = r[0].get<std::string>();
  return {name, json_int<int32_t>(r[1], fmt::format("{}: the output index of [\"{}\", …]", where, name))};
}

Graph parse_graph(const json& doc, const std::string& source, const std::string& weights_dir) {
  Fields top(doc, source);
  if (top.has("format")) {
    std::string fm = top.str("format");
    LOOM_CHECK(fm == detail::kFormat, "{}: \"format\" is '{}', not '{}'", source, fm, detail::kFormat);
  }
  int64_t version = top.integer("version");
  LOOM_CHECK(version == kGraphFormatVersion, "{}: format version {} (this loom reads version {})", source, version,
             kGraphFormatVersion);
  std::string name = top.has("name") ? top.str("name") : "graph";
  Weights weights("", source);
  if (top.has("weights")) {
    std::string file = top.str("weights");
    fs::path p = fs::path(file).is_absolute() ? fs::path(file) : fs::path(weights_dir) / file;
    weights = Weights(p.string(), source);
  }

  // Nodes by name, then a topological order (a depth-first walk; a node met again while
  // still on the walk's stack closes a cycle).
  const json& jnodes = top.array("nodes");
  std::vector<RawNode> raw;
  std::map<std::string, size_t> by_name;
  for (size_t i = 0; i < jnodes.size(); ++i) {
    Fields f(jnodes[i], fmt::format("{}: node {}", source, i));
    RawNode r{&jnodes[i], f.str("name"), "", {}};
    LOOM_CHECK(!r.name.empty(), "{}: node {} has an empty name", source, i);
    r.where = fmt::format("{}: node '{}'", source, r.name);
    LOOM_CHECK(by_name.emplace(r.name, i).second, "{}: two nodes are named '{}'", source, r.name);
    if (f.has("inputs"))
      for (const json& in : f.array("inputs")) r.inputs.push_back(read_ref(in, r.where));
    raw.push_back(std::move(r));
  }
  std::vector<int> state(raw.size(), 0);  // 0 new, 1 on the stack, 2 done
  std::vector<size_t> order;
  for (size_t root = 0; root < raw.size(); ++root) {
    if (state[root]) continue;
    std::vector<std::pair<size_t, size_t>> stack{{root, 0}};
    state[root] = 1;
    while (!stack.empty()) {
      auto& [i, k] = stack.back();
      if (k == raw[i].inputs.size()) {
        state[i] = 2;
        order.push_back(i);
        stack.pop_back();
        continue;
      }
      const std::string& dep = raw[i].inputs[k++].first;
      auto it = by_name.find(dep);
      LOOM_CHECK(it != by_name.end(), "{}: input '{}' names no node of the graph", raw[i].where, dep);
      size_t d = it->second;
      LOOM_CHECK(state[d] != 1, "{}: the graph has a cycle through node '{}' (it depends on itself via '{}')",
                 source, raw[d].name, raw[i].name);
      if (state[d] == 0) {
        state[d] = 1;
        stack.push_back({d, 0});
      }
    }
  }

  GraphBuilder b(name);
  std::map<std::string, int> id;  // name -> node index in the new graph
  for (size_t i : order) {
    const RawNode& r = raw[i];
    Fields f(*r.j, r.where);
    std::string kind = f.has("kind") ? f.str("kind") : (f.has("op") ? "op" : "");
    LOOM_CHECK(kind == "input" || kind == "constant" || kind == "op",
               "{}: \"kind\" must be \"input\", \"constant\" or \"op\" (or an \"op\" field given), found '{}'", r.where,
               kind);
    if (kind != "op")
      LOOM_CHECK(r.inputs.empty(), "{}: an {} takes no inputs", r.where, kind);
    Value v;
    if (kind == "input") {
      v = b.input(r.name, read_type(f.get("type"), r.where + ", \"type\""));
    } else if (kind == "constant") {
      TensorType t = read_type(f.get("type"), r.where + ", \"type\"");
      runtime::NDArray a = f.has("data") ? inline_data(f, t) : weights.read(f, t);
      v = b.constant(r.name, std::move(a), t.layout);
    } else {
      std::string op = f.str("op");
      const te::ops::OpDef* def = te::ops::find_op(op);
      LOOM_CHECK(def, "{}: unknown operator '{}'{} (registered: {})", r.where, op, [&] {
        std::string hint = did_you_mean(op, te::ops::op_names());
        return hint.empty() ? hint : "; " + hint;
      }(), fmt::format("{}", fmt::join(te::ops::op_names(), ", ")));
      Attrs attrs;
      if (f.has("attrs")) {
        const json& ja = f.get("attrs");
        LOOM_CHECK(ja.is_object(), "{}: \"attrs\" must be an object, found {}", r.where, kind_name(ja));
        for (auto it = ja.begin(); it != ja.end(); ++it) {
          std::optional<AttrKind> k;
          for (const auto& spec : def->attrs)
            if (spec.name == it.key()) k = spec.kind;
          attrs[it.key()] = read_attr(it.value(), k, fmt::format("{}: attribute '{}'", r.where, it.key()));
        }
      }
      std::vector<Value> ins;
      for (const auto& [dep, idx] : r.inputs) {
        const Node& src = b.graph().nodes[size_t(id.at(dep))];
        LOOM_CHECK(idx >= 0 && size_t(idx) < src.outputs.size(), "{}: input [{}, {}]: node '{}' has {} output(s)",
                   r.where, dep, idx, dep, src.outputs.size());
        ins.push_back({id.at(dep), idx});
      }
      std::vector<Value> outs;
      try {
        outs = b.call(op, ins, attrs, r.name);
      } catch (const Error& e) {
        fail("{}: {}", source, e.what());
      }
      v = outs[0];
      if (f.has("types")) {
        const json& ts = f.array("types");
        const Node& n = b.graph().nodes[size_t(v.node)];
        LOOM_CHECK(ts.size() == n.outputs.size(), "{}: \"types\" lists {} types but the operator has {} outputs",
                   r.where, ts.size(), n.outputs.size());
        for (size_t k = 0; k < ts.size(); ++k) {
          TensorType want = read_type(ts[k], fmt::format("{}, \"types\"[{}]", r.where, k));
          LOOM_CHECK(want == n.outputs[k], "{}: the file gives output {} the type {} but its inputs make it {}",
                     r.where, k, to_string(want), to_string(n.outputs[k]));
        }
      }
    }
    id[r.name] = v.node;
  }
  const json& jouts = top.array("outputs");
  LOOM_CHECK(!jouts.empty(), "{}: the graph has no outputs", source);
  for (const json& o : jouts) {
    auto [dep, idx] = read_ref(o, source + ": \"outputs\"");
    auto it = id.find(dep);
    LOOM_CHECK(it != id.end(), "{}: output '{}' names no node of the graph", source, dep);
    LOOM_CHECK(idx >= 0 && size_t(idx) < b.graph().nodes[size_t(it->second)].outputs.size(),
               "{}: output [{}, {}]: node '{}' has no such output", source, dep, idx, dep);
    b.output({it->second, idx});
  }
  Graph g = b.build();

  if (top.has("groups")) {
    for (const json& jg : top.array("groups")) {
      Fields f(jg, source + ": a group");
      FusedGroup grp;
      grp.name = f.str("name");
      std::string where = fmt::format("{}: group '{}'", source, grp.name);
      for (const json& m : f.array("nodes")) {
        LOOM_CHECK(m.is_string() && g.find(m.get<std::string>()) >= 0, "{}: member {} names no node", where, short_json(m));
        grp.nodes.push_back(g.find(m.get<std::string>()));
      }
      std::sort(grp.nodes.begin(), grp.nodes.end());
      if (f.has("anchor")) {
        grp.anchor = g.find(f.str("anchor"));
        LOOM_CHECK(grp.anchor >= 0, "{}: anchor '{}' names no node", where, f.str("anchor"));
      }
      grp.pattern = te::ops::OpPattern::kOpaque;
      std::string pat = f.str("pattern");
      for (auto p : {OpPattern::kElemwise, OpPattern::kBroadcast, OpPattern::kInjective, OpPattern::kCommReduce,
                     OpPattern::kOutEWiseFusable, OpPattern::kOpaque})
        if (pat == te::ops::to_string(p)) grp.pattern = p;
      g.groups.push_back(std::move(grp));
    }
    set_group_boundaries(g);
    try {
      verify(g);
    } catch (const Error& e) {
      fail("{}: {}", source, e.what());
    }
  }
  return g;
}

json parse_text(const std::string& text, const std::string& source) {
  try {
    return records::detail::parse_json(text, source);
  } catch (const json::exception& e) {
    fail("{}: not valid JSON: {}", source, e.what());
  }
}

std::string read_file(const std::string& path) {
  std::error_code ec;
  LOOM_CHECK(fs::is_regular_file(path, ec), "model file '{}' does not exist or is not a file", path);
  std::ifstream in(path, std::ios::binary);
  LOOM_CHECK(in, "cannot open the model file '{}'", path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}


}  // namespace

Graph from_json(const std::string& text, const std::string& source, const std::string& weights_dir) {
  return parse_graph(parse_text(text, source), source, weights_dir);
}

Graph load_graph(const std::string& json_path) {
  std::string dir = fs::path(json_path).parent_path().string();
  return from_json(read_file(json_path), json_path, dir);
}

}  // namespace loom::graph_opt
