#include "fuzz/fuzz_mutators.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>

namespace loom::fuzz {

using nlohmann::json;

uint64_t Rng::next() {
  uint64_t z = (s_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t case_seed(uint64_t seed, const std::string& stream, uint64_t index) {
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a of the stream name, mixed with the rest
  for (unsigned char c : stream) h = (h ^ c) * 0x100000001b3ULL;
  Rng r(seed ^ h);
  r.next();
  Rng mixed(r.next() ^ (index * 0x9e3779b97f4a7c15ULL));
  return mixed.next();
}

const std::vector<int64_t>& extreme_ints() {
  static const std::vector<int64_t> v = {0,
                                         -1,
                                         -2,
                                         -7,
                                         1,
                                         2,
                                         3,
                                         17,
                                         1000,
                                         65536,
                                         1000000,
                                         int64_t(1) << 30,
                                         (int64_t(1) << 31) - 1,
                                         int64_t(1) << 31,
                                         (int64_t(1) << 31) + 1,
                                         int64_t(1) << 32,
                                         (int64_t(1) << 32) + 1,
                                         int64_t(1) << 40,
                                         int64_t(1) << 62,
                                         std::numeric_limits<int64_t>::max(),
                                         std::numeric_limits<int64_t>::max() - 1,
                                         std::numeric_limits<int64_t>::min(),
                                         std::numeric_limits<int64_t>::min() + 1,
                                         -(int64_t(1) << 31),
                                         -(int64_t(1) << 32)};
  return v;
}

// ---------------------------------------------------------------- byte-level

void mutate_bytes(Mutant& m, Rng& rng) {
  std::string& b = m.bytes;
  if (b.empty()) {
    b = std::string(size_t(1 + rng.below(16)), char(rng.below(256)));
    m.steps.push_back(fmt::format("bytes: empty file replaced by {} bytes", b.size()));
    return;
  }
  switch (rng.below(7)) {
    case 0: {
      size_t at = size_t(rng.below(b.size()));
      b.resize(at);
      m.steps.push_back(fmt::format("bytes: truncated to {} bytes", at));
      break;
    }
    case 1: {
      int n = int(1 + rng.below(8));
      std::string where;
      for (int i = 0; i < n; ++i) {
        size_t at = size_t(rng.below(b.size()));
        int bit = int(rng.below(8));
        b[at] = char(uint8_t(b[at]) ^ (1u << bit));
        where += fmt::format("{}{}.{}", i ? "," : "", at, bit);
      }
      m.steps.push_back(fmt::format("bytes: flipped {} bit(s) at byte.bit {}", n, where));
      break;
    }
    case 2: {
      size_t at = size_t(rng.below(b.size() + 1)), n = size_t(1 + rng.below(8));
      std::string ins;
      for (size_t i = 0; i < n; ++i) ins += char(rng.below(256));
      b.insert(at, ins);
      m.steps.push_back(fmt::format("bytes: inserted {} random byte(s) at {}", n, at));
      break;
    }
    case 3: {
      size_t at = size_t(rng.below(b.size())), n = std::min(b.size() - at, size_t(1 + rng.below(32)));
      b.erase(at, n);
      m.steps.push_back(fmt::format("bytes: deleted {} byte(s) at {}", n, at));
      break;
    }
    case 4: {
      size_t at = size_t(rng.below(b.size())), n = std::min(b.size() - at, size_t(1 + rng.below(64)));
      size_t to = size_t(rng.below(b.size() + 1));
      b.insert(to, b.substr(at, n));
      m.steps.push_back(fmt::format("bytes: copied {} byte(s) from {} to {}", n, at, to));
      break;
    }
    case 5: {
      static const uint8_t boundary[] = {0x00, 0xff, 0x7f, 0x80, 0x01, 0xfe};
      size_t at = size_t(rng.below(b.size())), n = std::min(b.size() - at, size_t(1 + rng.below(8)));
      uint8_t v = boundary[rng.below(sizeof boundary)];
      for (size_t i = 0; i < n; ++i) b[at + i] = char(v);
      m.steps.push_back(fmt::format("bytes: {} byte(s) at {} set to 0x{:02x}", n, at, v));
      break;
    }
    default: {
      size_t at = size_t(rng.below(b.size())), n = std::min(b.size() - at, size_t(1 + rng.below(16)));
      for (size_t i = 0; i < n; ++i) b[at + i] = char(rng.below(256));
      m.steps.push_back(fmt::format("bytes: {} random byte(s) at {}", n, at));
      break;
    }
  }
}

// ---------------------------------------------------------------- JSON

namespace {

const char* kDeepMarker = "@@LOOM_FUZZ_DEEP@@";
const char* kDupMarker = "@@LOOM_FUZZ_DUP@@";

/// A value in the document and where it sits.
struct Slot {
  json* v;
  json* parent;      // null for the root
  std::string key;   // in an object parent
  size_t index = 0;  // in an array parent
  std::string path;
};

/// Every value of `root`, except the elements of constants' "data" arrays (hundreds of
/// numbers that would otherwise draw most of the picks; the array itself is a slot).
std::vector<Slot> slots(json& root) {
  std::vector<Slot> out;
  std::vector<Slot> stack{{&root, nullptr, "", 0, ""}};
  while (!stack.empty()) {
    Slot s = stack.back();
    stack.pop_back();
    out.push_back(s);
    if (s.v->is_object()) {
      for (auto it = s.v->begin(); it != s.v->end(); ++it)
        stack.push_back({&it.value(), s.v, it.key(), 0, s.path + "/" + it.key()});
    } else if (s.v->is_array() && s.key != "data") {
      for (size_t i = 0; i < s.v->size(); ++i)
        stack.push_back({&(*s.v)[i], s.v, "", i, fmt::format("{}/{}", s.path, i)});
    }
  }
  return out;
}

template <class Pred>
std::vector<Slot> slots_where(json& root, Pred pred) {
  std::vector<Slot> all = slots(root), out;
  for (const Slot& s : all)
    if (pred(s)) out.push_back(s);
  return out;
}

json extreme_value(Rng& rng) {
  switch (rng.below(8)) {
    case 0: return json(std::numeric_limits<uint64_t>::max());
    case 1: return json(uint64_t(1) << 63);
    case 2: return json(1e300);
    case 3: return json(-0.0);
    case 4: return json(2.5);
    default: return json(rng.pick(extreme_ints()));
  }
}

json other_type(const json& v, Rng& rng) {
  for (;;) {
    json c;
    switch (rng.below(10)) {
      case 0: c = "8"; break;
      case 1: c = ""; break;
      case 2: c = json::object(); break;
      case 3: c = json{{"a", 1}}; break;
      case 4: c = json::array(); break;
      case 5: c = json::array({1, "x", nullptr}); break;
      case 6: c = nullptr; break;
      case 7: c = true; break;
      case 8: c = 1.5; break;
      default: c = -3; break;
    }
    if (c.type() != v.type()) return c;
  }
}

std::string deep_text(Rng& rng, size_t depth) {
  if (rng.chance(50)) return std::string(depth, '[') + "1" + std::string(depth, ']');
  std::string s;
  s.reserve(depth * 6 + 1);
  for (size_t i = 0; i < depth; ++i) s += "{\"a\":";
  return s + "1" + std::string(depth, '}');
}

/// The op nodes of the document (objects in "nodes" with an "op" string).
std::vector<json*> op_nodes(json& doc) {
  std::vector<json*> out;
  if (doc.is_object() && doc.contains("nodes") && doc["nodes"].is_array())
    for (json& n : doc["nodes"])
      if (n.is_object() && n.contains("op")) out.push_back(&n);
  return out;
}

std::vector<json*> all_nodes(json& doc) {
  std::vector<json*> out;
  if (doc.is_object() && doc.contains("nodes") && doc["nodes"].is_array())
    for (json& n : doc["nodes"])
      if (n.is_object()) out.push_back(&n);
  return out;
}

std::string node_name(const json& n) {
  return n.contains("name") && n["name"].is_string() ? n["name"].get<std::string>() : "";
}

/// Applies one structural mutation; returns its description, or "" when the document has
/// nothing it applies to.
std::string mutate_doc(json& doc, Rng& rng, const std::vector<std::string>& ops, std::string* deep, std::string* dup,
                       int kind) {
  switch (kind >= 0 ? uint64_t(kind) : rng.below(kJsonMutationKinds)) {
    case 0: {  // a dim
      auto dims = slots_where(doc, [](const Slot& s) {
        return s.parent && s.parent->is_array() && s.path.find("/shape/") != std::string::npos;
      });
      if (dims.empty()) return "";
      const Slot& s = rng.pick(dims);
      *s.v = extreme_value(rng);
      return fmt::format("json: dim {} = {}", s.path, s.v->dump());
    }
    case 1: {  // any integer
      auto ints = slots_where(doc, [](const Slot& s) { return s.v->is_number_integer(); });
      if (ints.empty()) return "";
      const Slot& s = rng.pick(ints);
      *s.v = extreme_value(rng);
      return fmt::format("json: integer {} = {}", s.path, s.v->dump());
    }
    case 2: {  // a value of the wrong type
      auto all = slots(doc);
      const Slot& s = rng.pick(all);
      *s.v = other_type(*s.v, rng);
      return fmt::format("json: {} replaced by {}", s.path.empty() ? "the document" : s.path, s.v->dump());
    }
    case 3:
    case 16: {  // deep nesting, mostly where the reader looks (and may print what it found)
      auto all = slots(doc);
      auto read = slots_where(doc, [](const Slot& s) {
        for (const char* k : {"/shape/", "/attrs/", "/inputs/", "/outputs/", "/data", "/types/", "/nodes/"})
          if (s.path.find(k) != std::string::npos) return true;
        return false;
      });
      const Slot& s = rng.chance(70) && !read.empty() ? rng.pick(read) : rng.pick(all);
      static const std::vector<size_t> depths = {64, 1000, 20000, 100000};
      size_t depth = rng.pick(depths);
      *deep = deep_text(rng, depth);
      *s.v = kDeepMarker;
      return fmt::format("json: {} replaced by {} levels of nested {}", s.path.empty() ? "the document" : s.path, depth,
                         (*deep)[0] == '[' ? "arrays" : "objects");
    }
    case 4: {  // a duplicate field
      auto objs = slots_where(doc, [](const Slot& s) { return s.v->is_object() && !s.v->empty(); });
      if (objs.empty()) return "";
      const Slot& s = rng.pick(objs);
      auto it = s.v->begin();
      std::advance(it, long(rng.below(s.v->size())));
      json second = rng.chance(50) ? it.value() : other_type(it.value(), rng);
      *dup = json(it.key()).dump() + ":" + second.dump();
      (*s.v)[kDupMarker] = nullptr;
      std::string shown = second.dump();
      if (shown.size() > 80) shown = shown.substr(0, 80) + "…";
      return fmt::format("json: {} has field \"{}\" twice, the second {}", s.path.empty() ? "the document" : s.path,
                         it.key(), shown);
    }
    case 5: {  // a missing field or element
      auto cont =
          slots_where(doc, [](const Slot& s) { return (s.v->is_object() || s.v->is_array()) && !s.v->empty(); });
      if (cont.empty()) return "";
      const Slot& s = rng.pick(cont);
      if (s.v->is_object()) {
        auto it = s.v->begin();
        std::advance(it, long(rng.below(s.v->size())));
        std::string k = it.key();
        s.v->erase(k);
        return fmt::format("json: field {}/{} removed", s.path, k);
      }
      size_t i = size_t(rng.below(s.v->size()));
      s.v->erase(i);
      return fmt::format("json: element {}/{} removed", s.path, i);
    }
    case 6: {  // a reference: self, cycle, unknown, bad output index
      auto opn = op_nodes(doc);
      if (opn.empty()) return "";
      json& n = *rng.pick(opn);
      std::string self = node_name(n);
      json target;
      std::string what;
      switch (rng.below(6)) {
        case 0:
          target = self;
          what = "itself";
          break;
        case 1: {  // a node that (transitively, in the seed) comes after it: a cycle
          auto nodes = all_nodes(doc);
          size_t at = 0;
          for (size_t i = 0; i < nodes.size(); ++i)
            if (nodes[i] == &n) at = i;
          if (at + 1 >= nodes.size()) return "";
          target = node_name(*nodes[size_t(at + 1 + rng.below(nodes.size() - at - 1))]);
          what = "a later node";
          break;
        }
        case 2:
          target = "no_such_node";
          what = "an unknown node";
          break;
        case 3:
          target = json::array({self.empty() ? "x" : self, rng.pick(extreme_ints())});
          what = "an output index";
          break;
        case 4:
          target = json::array({"x", -1});
          what = "a negative output index";
          break;
        default:
          target = 7;
          what = "a number";
          break;
      }
      if (rng.chance(15) && doc.contains("outputs") && doc["outputs"].is_array()) {
        doc["outputs"].push_back(target);
        return fmt::format("json: outputs gain {} ({})", target.dump(), what);
      }
      if (!n.contains("inputs") || !n["inputs"].is_array()) n["inputs"] = json::array();
      json& ins = n["inputs"];
      if (ins.empty() || rng.chance(25))
        ins.push_back(target);
      else
        ins[size_t(rng.below(ins.size()))] = target;
      return fmt::format("json: node '{}' input {} ({})", self, target.dump(), what);
    }
    case 7: {  // a duplicate node
      auto nodes = all_nodes(doc);
      if (nodes.empty()) return "";
      json copy = *rng.pick(nodes);
      bool rename = rng.chance(40);
      if (rename && copy.contains("name")) copy["name"] = node_name(copy) + "_copy";
      doc["nodes"].push_back(copy);
      return fmt::format("json: node '{}' duplicated{}", node_name(copy), rename ? " under a new name" : "");
    }
    case 8: {  // another operator
      auto opn = op_nodes(doc);
      if (opn.empty() || ops.empty()) return "";
      json& n = *rng.pick(opn);
      std::string op = rng.pick(ops);
      n["op"] = op;
      if (rng.chance(50)) n.erase("types");
      return fmt::format("json: node '{}' becomes operator '{}'", node_name(n), op);
    }
    case 9: {  // an attribute
      auto opn = op_nodes(doc);
      if (opn.empty()) return "";
      json& n = *rng.pick(opn);
      if (!n.contains("attrs") || !n["attrs"].is_object() || n["attrs"].empty()) {
        auto other = opn;
        json& src = *rng.pick(other);
        if (src.contains("attrs")) n["attrs"] = src["attrs"];
        return fmt::format("json: node '{}' takes the attributes of '{}'", node_name(n), node_name(src));
      }
      json& attrs = n["attrs"];
      auto it = attrs.begin();
      std::advance(it, long(rng.below(attrs.size())));
      json v;
      switch (rng.below(5)) {
        case 0: v = json::array({rng.pick(extreme_ints()), rng.pick(extreme_ints())}); break;
        case 1:
          v = json::array(
              {rng.pick(extreme_ints()), rng.pick(extreme_ints()), rng.pick(extreme_ints()), rng.pick(extreme_ints())});
          break;
        case 2: v = rng.pick(extreme_ints()); break;
        case 3: v = other_type(it.value(), rng); break;
        default: {
          json arr = json::array();
          for (size_t i = 0, k = size_t(rng.below(10)); i < k; ++i) arr.push_back(int64_t(rng.below(5)) - 1);
          v = arr;
          break;
        }
      }
      it.value() = v;
      return fmt::format("json: node '{}' attribute '{}' = {}", node_name(n), it.key(), v.dump());
    }
    case 10: {  // constant data
      auto consts = slots_where(doc, [](const Slot& s) { return s.key == "data" && s.v->is_array(); });
      if (consts.empty()) return "";
      const Slot& s = rng.pick(consts);
      json& d = *s.v;
      switch (rng.below(4)) {
        case 0: {
          size_t n = d.empty() ? 0 : size_t(rng.below(d.size()));
          d.erase(d.begin() + long(n), d.end());
          return fmt::format("json: {} cut to {} values", s.path, n);
        }
        case 1: {
          size_t n = size_t(1 + rng.below(100));
          for (size_t i = 0; i < n; ++i) d.push_back(0.5);
          return fmt::format("json: {} gains {} values", s.path, n);
        }
        case 2: {
          if (d.empty()) return "";
          size_t i = size_t(rng.below(d.size()));
          static const std::vector<json> odd = {1e308,
                                                -1e308,
                                                1e-320,
                                                json(std::numeric_limits<int64_t>::min()),
                                                json(std::numeric_limits<uint64_t>::max()),
                                                "1",
                                                nullptr,
                                                json::array({1})};
          d[i] = rng.pick(odd);
          return fmt::format("json: {}/{} = {}", s.path, i, d[i].dump());
        }
        default: {
          json v = rng.chance(50) ? json(1e38) : json(-1e38);
          for (json& x : d) x = v;
          return fmt::format("json: every value of {} = {}", s.path, v.dump());
        }
      }
    }
    case 11: {  // dtype
      auto dts = slots_where(doc, [](const Slot& s) { return s.key == "dtype"; });
      if (dts.empty()) return "";
      static const std::vector<std::string> names = {
          "int8",   "uint8", "int32",     "int64", "float16",  "float64", "bfloat16", "bool",       "uint1",
          "handle", "void",  "float32x4", "",      "float999", "int0",    "float-32", "custom[x]32"};
      const Slot& s = rng.pick(dts);
      *s.v = rng.pick(names);
      return fmt::format("json: {} = {}", s.path, s.v->dump());
    }
    case 12: {  // layout
      auto ls = slots_where(doc, [](const Slot& s) { return s.key == "layout" || s.key == "out_layout"; });
      if (ls.empty()) return "";
      static const std::vector<std::string> names = {
          "NCHW",    "NHWC", "NCHW16c", "NCHW8c", "NCHW0c", "NCHW3c",  "NCHW-1c", "NCHW99999999999c",
          "OIHW16o", "CHWN", "XYZW",    "",       "NC",     "NCHWc16", "NCHW16C"};
      const Slot& s = rng.pick(ls);
      *s.v = rng.pick(names);
      return fmt::format("json: {} = {}", s.path, s.v->dump());
    }
    case 13: {  // the rank of a shape or an int list
      auto arrs = slots_where(doc, [](const Slot& s) {
        return s.v->is_array() && s.key != "data" && !s.v->empty() && (*s.v)[0].is_number_integer();
      });
      if (arrs.empty()) return "";
      const Slot& s = rng.pick(arrs);
      static const std::vector<size_t> ranks = {0, 1, 3, 5, 9, 64};
      size_t r = rng.pick(ranks);
      json a = json::array();
      for (size_t i = 0; i < r; ++i) a.push_back(i < s.v->size() ? (*s.v)[i] : json(1 + int64_t(rng.below(3))));
      *s.v = a;
      return fmt::format("json: {} = {}", s.path, a.dump());
    }
    case 14: {  // fused groups
      auto nodes = op_nodes(doc);
      if (nodes.empty()) return "";
      if (!doc.contains("groups") || !doc["groups"].is_array() || doc["groups"].empty() || rng.chance(20)) {
        json groups = json::array();
        for (json* n : nodes)
          groups.push_back({{"name", "g_" + node_name(*n)},
                            {"nodes", json::array({node_name(*n)})},
                            {"anchor", node_name(*n)},
                            {"pattern", "opaque"}});
        bool reversed = rng.chance(50);
        if (reversed) std::reverse(groups.begin(), groups.end());
        doc["groups"] = groups;
        return fmt::format("json: groups: one per op node{}", reversed ? ", in reverse order" : "");
      }
      json& groups = doc["groups"];
      json& g = groups[size_t(rng.below(groups.size()))];
      if (!g.is_object()) return "";
      std::string gname = g.contains("name") ? g["name"].dump() : "?";
      switch (rng.below(5)) {
        case 0:
          if (g.contains("nodes") && g["nodes"].is_array() && !g["nodes"].empty()) g["nodes"].erase(size_t(0));
          return fmt::format("json: group {} loses its first member", gname);
        case 1: {
          std::string m = node_name(*rng.pick(nodes));
          if (g.contains("nodes") && g["nodes"].is_array()) g["nodes"].push_back(m);
          return fmt::format("json: group {} gains member '{}'", gname, m);
        }
        case 2: {
          std::string a = rng.chance(50) ? "no_such_node" : node_name(*rng.pick(nodes));
          g["anchor"] = a;
          return fmt::format("json: group {} anchor '{}'", gname, a);
        }
        case 3: {
          static const std::vector<std::string> pats = {
              "elemwise", "broadcast", "injective", "comm_reduce", "out_elemwise_fusable", "opaque", "tuple", ""};
          std::string p = rng.pick(pats);
          g["pattern"] = p;
          return fmt::format("json: group {} pattern '{}'", gname, p);
        }
        default:
          if (groups.size() > 1) {
            size_t i = size_t(rng.below(groups.size())), j = size_t(rng.below(groups.size()));
            std::swap(groups[i], groups[j]);
            return fmt::format("json: groups {} and {} swapped", i, j);
          }
          groups.push_back(g);
          return fmt::format("json: group {} duplicated", gname);
      }
    }
    case 17:
    case 18: {  // a plausible change: a small dim or attribute value (the file stays readable)
      auto small = slots_where(doc, [](const Slot& s) {
        return s.v->is_number_integer() && s.parent && s.parent->is_array() &&
               (s.path.find("/shape/") != std::string::npos || s.path.find("/attrs/") != std::string::npos);
      });
      if (small.empty()) return "";
      const Slot& s = rng.pick(small);
      int64_t v = int64_t(rng.below(10));
      if (rng.chance(20)) v = int64_t(rng.pick(std::vector<int64_t>{13, 16, 31, 64, 127, 255}));
      *s.v = v;
      return fmt::format("json: {} = {}", s.path, v);
    }
    case 19: {  // recorded types dropped everywhere, an input reshaped: inference decides
      for (json* n : all_nodes(doc)) n->erase("types");
      auto dims = slots_where(doc, [](const Slot& s) { return s.path.starts_with("/nodes/0/type/shape/"); });
      if (dims.empty()) return "json: recorded types dropped";
      const Slot& s = rng.pick(dims);
      *s.v = int64_t(1 + rng.below(40));
      return fmt::format("json: recorded types dropped, {} = {}", s.path, s.v->dump());
    }
    case 20:
    case 21: {  // a transform of a value (mostly a constant: constant folding), spliced in before its consumer
      std::vector<std::pair<json*, size_t>> uses;  // (consumer, input position)
      std::map<std::string, size_t> rank;          // of constants (4 for other values: a guess)
      for (json* n : all_nodes(doc))
        if (n->value("kind", "") == "constant" && n->contains("type") && (*n)["type"].is_object() &&
            (*n)["type"].contains("shape") && (*n)["type"]["shape"].is_array())
          rank[node_name(*n)] = (*n)["type"]["shape"].size();
      bool constants = rng.chance(70);
      for (json* n : op_nodes(doc))
        if (n->contains("inputs") && (*n)["inputs"].is_array())
          for (size_t k = 0; k < (*n)["inputs"].size(); ++k)
            if ((*n)["inputs"][k].is_string() && rank.count((*n)["inputs"][k].get<std::string>()) == size_t(constants))
              uses.push_back({n, k});
      if (uses.empty()) return "";
      auto [consumer, k] = rng.pick(uses);
      std::string c = (*consumer)["inputs"][k].get<std::string>();
      size_t r = constants ? rank[c] : 4;
      auto value = [&]() -> int64_t { return rng.chance(60) ? int64_t(rng.below(6)) - 1 : rng.pick(extreme_ints()); };
      json node = {{"name", "fuzz_" + c}, {"inputs", json::array({c})}};
      switch (rng.below(6)) {
        case 0: {
          json pads = json::array();
          for (size_t i = 0; i < 2 * r; ++i) pads.push_back(value());
          node["op"] = "pad";
          node["attrs"] = {{"pads", pads}};
          break;
        }
        case 1: {
          size_t copies = rng.pick(std::vector<size_t>{2, 3, 100, 5000});
          node["op"] = "concat";
          node["inputs"] = json::array();
          for (size_t i = 0; i < copies; ++i) node["inputs"].push_back(c);
          node["attrs"] = {{"axis", int64_t(rng.below(r + 2)) - 1}};
          break;
        }
        case 2: {
          json ns = json::array();
          for (size_t i = 0, n = size_t(rng.below(5)); i < n; ++i) ns.push_back(value());
          node["op"] = "reshape";
          node["attrs"] = {{"newshape", ns}};
          break;
        }
        case 3: {
          json axes = json::array();
          for (size_t i = 0; i < r; ++i) axes.push_back(int64_t(rng.below(r + 1)));
          node["op"] = "transpose";
          node["attrs"] = {{"axes", axes}};
          break;
        }
        case 4: {
          node["op"] = rng.chance(50) ? "unsqueeze" : "squeeze";
          node["attrs"] = {{"axes", json::array({value()})}};
          break;
        }
        default: {
          node["op"] = "layout_transform";
          static const std::vector<std::string> ls = {"NCHW", "NCHW8c", "NCHW16c", "CHW", "C", "CHW8c", "NC", "NCHW3c"};
          node["attrs"] = {{"src_layout", rng.pick(ls)}, {"dst_layout", rng.pick(ls)}};
          break;
        }
      }
      std::string desc = node.dump();
      if (desc.size() > 160) desc = desc.substr(0, 160) + "…";
      (*consumer)["inputs"][k] = node["name"];
      doc["nodes"].push_back(std::move(node));
      return fmt::format("json: node '{}' reads {} in place of '{}'", node_name(*consumer), desc, c);
    }
    default: {  // an input's type or a constant's values made to disagree with the graph
      auto nodes = all_nodes(doc);
      if (nodes.empty()) return "";
      json& n = *rng.pick(nodes);
      if (n.contains("types") && n["types"].is_array() && !n["types"].empty() && rng.chance(50)) {
        n.erase("types");
        return fmt::format("json: node '{}' loses its recorded types", node_name(n));
      }
      if (n.contains("kind") && n["kind"].is_string()) {
        static const std::vector<std::string> kinds = {"input", "constant", "op", "Input", ""};
        std::string k = rng.pick(kinds);
        n["kind"] = k;
        return fmt::format("json: node '{}' kind '{}'", node_name(n), k);
      }
      n["kind"] = "input";
      return fmt::format("json: op node '{}' marked as an input", node_name(n));
    }
  }
}

}  // namespace

void mutate_json(Mutant& m, Rng& rng, const std::vector<std::string>& ops, int kind) {
  json doc = m.deep ? json() : json::parse(m.bytes, nullptr, false);
  if (m.deep || doc.is_discarded()) {
    mutate_bytes(m, rng);
    return;
  }
  std::string deep, dup, what;
  for (int tries = 0; tries < 20 && what.empty(); ++tries)
    what = mutate_doc(doc, rng, ops, &deep, &dup, tries ? -1 : kind);
  if (what.empty()) {
    mutate_bytes(m, rng);
    return;
  }
  std::string text = doc.dump(rng.chance(50) ? 1 : -1);
  auto replace = [&](const std::string& marker, const std::string& with) {
    size_t at = text.find(marker);
    if (at != std::string::npos) text.replace(at, marker.size(), with);
  };
  if (!deep.empty()) {
    replace(json(kDeepMarker).dump(), deep);
    m.deep = true;
  }
  if (!dup.empty()) {
    replace(json(kDupMarker).dump() + ":null", dup);
    replace(json(kDupMarker).dump() + ": null", dup);
  }
  m.bytes = std::move(text);
  m.steps.push_back(what);
}

}  // namespace loom::fuzz
