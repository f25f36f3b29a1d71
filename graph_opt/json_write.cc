// Writing model files: the graph as JSON, large constants into the weights file.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "loom/graph_opt/serialize.h"
#include "loom/runtime/error.h"
#include "model_format.h"

namespace loom::graph_opt {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;  // fields in a fixed, readable order
using detail::kWeightsMagic;

namespace {

/// JSON text that stays readable at a network's size: a value whose compact form is short,
/// and any array of scalars (a shape, inline data), on one line; other objects and arrays
/// one member per line.
void pretty(std::string& out, const ojson& j, int indent) {
  bool flat = !j.is_structured() || j.dump().size() <= 96 ||
              (j.is_array() && std::none_of(j.begin(), j.end(), [](const ojson& e) { return e.is_structured(); }));
  if (flat) {
    out += j.dump();
    return;
  }
  out += j.is_object() ? '{' : '[';
  bool first = true;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!first) out += ',';
    first = false;
    out += '\n';
    out.append(size_t(indent + 1), ' ');
    if (j.is_object()) {
      out += ojson(it.key()).dump();
      out += ": ";
    }
    pretty(out, it.value(), indent + 1);
  }
  out += '\n';
  out.append(size_t(indent), ' ');
  out += j.is_object() ? '}' : ']';
}

std::string pretty(const ojson& j) {
  std::string out;
  pretty(out, j, 0);
  return out + "\n";
}


ojson type_json(const TensorType& t) {
  ojson j = {{"shape", t.shape}, {"dtype", t.dtype.str()}};
  if (!t.layout.empty()) j["layout"] = t.layout;
  return j;
}

ojson ref_json(const Graph& g, ValueRef v) {
  const std::string& n = g.nodes[size_t(v.node)].name;
  if (v.index == 0) return n;
  return ojson::array({n, v.index});
}

/// A float, or the string the format writes for NaN and the infinities.
ojson number_json(double v) { return std::isfinite(v) ? ojson(v) : ojson(detail::nonfinite_text(v)); }

ojson attr_json(const AttrValue& v) {
  if (const double* d = std::get_if<double>(&v)) return number_json(*d);
  if (const auto* ds = std::get_if<std::vector<double>>(&v)) {
    ojson arr = ojson::array();
    for (double d : *ds) arr.push_back(number_json(d));
    return arr;
  }
  return std::visit([](const auto& x) { return ojson(x); }, v);
}

ojson data_json(const runtime::NDArray& a) {
  ojson arr = ojson::array();
  DataType t = a.dtype();
  int64_t n = a.numel();
  for (int64_t i = 0; i < n; ++i) {
    if (t.is_float()) arr.push_back(number_json(a.get(i)));
    else if (t.is_int() && t.bits() == 64) arr.push_back(a.data<int64_t>()[i]);
    else if (t.is_uint() && t.bits() == 64) arr.push_back(a.data<uint64_t>()[i]);
    else arr.push_back(int64_t(a.get(i)));
  }
  return arr;
}

/// The document; constants above `inline_limit` elements are appended to `weights` (bytes
/// after the header, at 64-byte aligned offsets), which the document names `weights_name`.
ojson graph_json(const Graph& g, bool write_types, int64_t inline_limit, std::string* weights,
                 const std::string& weights_name = "") {
  ojson nodes = ojson::array();
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    ojson j = {{"name", n.name}};
    if (n.is_input()) {
      j["kind"] = "input";
      j["type"] = type_json(n.outputs[0]);
    } else if (n.is_constant()) {
      j["kind"] = "constant";
      j["type"] = type_json(n.outputs[0]);
      if (weights && n.value.numel() > inline_limit) {
        size_t off = (weights->size() + detail::kWeightsAlign - 1) / detail::kWeightsAlign * detail::kWeightsAlign;
        weights->resize(off, '\0');
        weights->append(static_cast<const char*>(n.value.raw_data()), n.value.nbytes());
        j["offset"] = off;
        j["nbytes"] = n.value.nbytes();
        j["checksum"] = detail::checksum_text(detail::fnv1a(n.value.raw_data(), n.value.nbytes()));
      } else {
        j["data"] = data_json(n.value);
      }
    } else {
      j["op"] = n.op;
      ojson ins = ojson::array();
      for (const ValueRef& v : n.inputs) ins.push_back(ref_json(g, v));
      j["inputs"] = ins;
      ojson at = ojson::object();
      for (const auto& [k, v] : n.attrs) at[k] = attr_json(v);
      j["attrs"] = at;
      if (write_types) {
        ojson ts = ojson::array();
        for (const TensorType& t : n.outputs) ts.push_back(type_json(t));
        j["types"] = ts;
      }
    }
    nodes.push_back(std::move(j));
  }
  ojson outs = ojson::array();
  for (const ValueRef& v : g.outputs) outs.push_back(ref_json(g, v));
  ojson doc = {{"format", detail::kFormat}, {"version", kGraphFormatVersion}, {"name", g.name}};
  if (weights && weights->size() > sizeof(kWeightsMagic)) doc["weights"] = weights_name;
  doc["nodes"] = std::move(nodes);
  doc["outputs"] = std::move(outs);
  if (!g.groups.empty()) {
    ojson groups = ojson::array();
    for (const FusedGroup& grp : g.groups) {
      ojson members = ojson::array();
      for (int n : grp.nodes) members.push_back(g.nodes[size_t(n)].name);
      ojson jg = {{"name", grp.name}, {"nodes", members}, {"pattern", te::ops::to_string(grp.pattern)}};
      if (grp.anchor >= 0) jg["anchor"] = g.nodes[size_t(grp.anchor)].name;
      groups.push_back(jg);
    }
    doc["groups"] = groups;
  }
  return doc;
}

}  // namespace

std::string to_json(const Graph& g, bool write_types) {
  return pretty(graph_json(g, write_types, 0, nullptr));
}

std::string save_graph(const Graph& g, const std::string& json_path, const SaveOptions& opt) {
  fs::path jp(json_path);
  std::string weights(kWeightsMagic, sizeof(kWeightsMagic));
  std::string wname = opt.weights_file.empty() ? jp.stem().string() + ".weights" : opt.weights_file;
  ojson doc = graph_json(g, opt.write_types, opt.inline_limit, &weights, wname);
  std::string wpath;
  if (weights.size() > sizeof(kWeightsMagic)) {
    fs::path wp = fs::path(wname).is_absolute() ? fs::path(wname) : jp.parent_path() / wname;
    std::ofstream w(wp, std::ios::binary | std::ios::trunc);
    LOOM_CHECK(w, "cannot write the weights file '{}'", wp.string());
    w.write(weights.data(), std::streamsize(weights.size()));
    w.close();
    LOOM_CHECK(w, "writing the weights file '{}' failed", wp.string());
    wpath = wp.string();
  }
  std::ofstream out(jp, std::ios::trunc);
  LOOM_CHECK(out, "cannot write the model file '{}'", json_path);
  out << pretty(doc);
  out.close();
  LOOM_CHECK(out, "writing the model file '{}' failed", json_path);
  return wpath;
}

}  // namespace loom::graph_opt
