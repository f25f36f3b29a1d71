// Bounded JSON input: the nesting limit, checked integers and short renderings (json_limits.h).
#include "json_limits.h"

#include <cmath>
#include <vector>

#include "loom/runtime/error.h"

namespace loom::records::detail {

using nlohmann::json;

namespace {

/// One open array or object while parsing: where the parser is inside it.
struct Frame {
  bool array = false;
  int64_t index = -1;  // arrays: the element being read
  std::string key;     // objects: the member being read
};

/// The path of the value the parser is at: `nodes[3].attrs.axis[0]`, a run of four or more
/// equal indices or keys written once with its count (`shape[0]×60`, `a×64`), cut to a
/// readable length.
std::string path_text(const std::vector<Frame>& frames) {
  std::vector<std::string> segs;
  for (const Frame& f : frames)
    segs.push_back(f.array ? fmt::format("[{}]", f.index) : f.key.size() <= 40 ? f.key : f.key.substr(0, 40) + "…");
  std::string out;
  for (size_t i = 0; i < segs.size();) {
    size_t j = i;
    while (j < segs.size() && segs[j] == segs[i] && frames[j].array == frames[i].array) ++j;
    if (j - i >= 4) {
      if (!frames[i].array && !out.empty()) out += '.';
      out += fmt::format("{}×{}", segs[i], j - i);
      i = j;
      continue;
    }
    if (!frames[i].array && !out.empty()) out += '.';
    out += segs[i++];
    if (out.size() > 160) {
      out += "…";
      break;
    }
  }
  return out.empty() ? "the top level" : out;
}

std::string scalar_text(const json& j, size_t max_chars) {
  if (j.is_string() && j.get_ref<const std::string&>().size() > max_chars)
    return json(j.get_ref<const std::string&>().substr(0, max_chars)).dump(-1, ' ', false, json::error_handler_t::replace);
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace

json parse_json(const std::string& text, const std::string& where, int max_depth) {
  std::vector<Frame> frames;
  auto enter_child = [&] {
    if (!frames.empty() && frames.back().array) ++frames.back().index;
  };
  json::parser_callback_t cb = [&](int /*depth*/, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        enter_child();
        if (int64_t(frames.size()) >= max_depth)
          fail("{}{}JSON nested more than {} levels deep at {}", where, where.empty() ? "" : ": ", max_depth,
               path_text(frames));
        frames.push_back({event == json::parse_event_t::array_start, -1, {}});
        break;
      case json::parse_event_t::key:
        if (!frames.empty() && parsed.is_string()) frames.back().key = parsed.get<std::string>();
        break;
      case json::parse_event_t::value:
        enter_child();
        break;
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        if (!frames.empty()) frames.pop_back();
        break;
    }
    return true;
  };
  return json::parse(text, cb);
}

std::string short_json(const json& j, size_t max_chars) {
  struct Open {
    const json* j;
    json::const_iterator it;
    bool first = true;
  };
  std::string out;
  std::vector<Open> stack;
  auto put = [&](const json& v) {
    if (v.is_structured()) {
      out += v.is_object() ? '{' : '[';
      stack.push_back({&v, v.cbegin(), true});
    } else {
      out += scalar_text(v, max_chars);
    }
  };
  put(j);
  // Every step adds at least one character, so this ends within max_chars steps.
  while (!stack.empty() && out.size() <= max_chars) {
    Open& o = stack.back();
    if (o.it == o.j->cend()) {
      out += o.j->is_object() ? '}' : ']';
      stack.pop_back();
      continue;
    }
    if (!o.first) out += ',';
    o.first = false;
    if (o.j->is_object()) out += scalar_text(json(o.it.key()), max_chars) + ':';
    const json& child = *o.it;
    ++o.it;
    put(child);  // may grow the stack: `o` is not used after this
  }
  if (out.size() > max_chars || !stack.empty()) {
    out.resize(std::min(out.size(), max_chars));
    out += "…";
  }
  return out;
}

int64_t json_integer(const json& v, const std::string& what, int64_t lo, int64_t hi, const char* type) {
  auto out_of_range = [&]() -> int64_t { fail("{}: {} does not fit in {}", what, v.dump(), type); };
  if (v.is_number_unsigned()) {
    uint64_t u = v.get<uint64_t>();
    if (hi < 0 || u > uint64_t(hi) || (lo > 0 && u < uint64_t(lo))) return out_of_range();
    return int64_t(u);
  }
  if (v.is_number_integer()) {
    int64_t x = v.get<int64_t>();
    if (x < lo || x > hi) return out_of_range();
    return x;
  }
  if (v.is_number_float()) {
    double d = v.get<double>();
    if (!std::isfinite(d) || d != std::trunc(d)) fail("{}: must be an integer, found {}", what, v.dump());
    // double(hi) + 1 is exact for int32 and rounds to 2^63 for int64: both the first value past hi.
    if (!(d >= double(lo) && d < double(hi) + 1.0)) return out_of_range();
    return int64_t(d);
  }
  const char* kind = v.is_string() ? "a string " : v.is_boolean() ? "" : v.is_null() ? "" : v.is_array() ? "an array " : "an object ";
  fail("{}: must be an integer, found {}{}", what, kind, short_json(v));
}

}  // namespace loom::records::detail
