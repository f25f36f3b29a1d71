// DataType text form: "float32", "int8", "uint8", "bool", "float32x8", "handle".
#include "loom/runtime/data_type.h"

#include <fmt/format.h>

#include <charconv>
#include <string_view>

#include "loom/runtime/error.h"

namespace loom {

namespace {

/// Parses a positive decimal integer filling all of `s`; -1 if `s` is not one.
int parse_positive(std::string_view s) {
  if (s.empty() || s.size() > 5) return -1;
  int v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v <= 0) return -1;
  return v;
}

bool valid_bits(DataType::Code code, int bits) {
  switch (code) {
    case DataType::kInt:
    case DataType::kUInt:
      return bits == 8 || bits == 16 || bits == 32 || bits == 64;
    case DataType::kFloat:
      return bits == 16 || bits == 32 || bits == 64;
    default:
      return false;
  }
}

}  // namespace

DataType DataType::parse(const std::string& text) {
  auto bad = [&](const char* why) -> DataType {
    fail("invalid data type '{}': {} (expected e.g. float32, int8, uint8, int32, int64, bool, float16, "
         "float32x8, handle)",
         text, why);
  };
  std::string_view s = text;
  if (s == "handle") return Handle();
  if (s == "void") return Void();

  int lanes = 1;
  if (size_t x = s.find('x'); x != std::string_view::npos) {
    lanes = parse_positive(s.substr(x + 1));
    if (lanes <= 0 || lanes > 65535) return bad("the lane count after 'x' must be a positive integer");
    s = s.substr(0, x);
  }
  if (s == "bool") return Bool(lanes);

  Code code;
  std::string_view rest;
  if (s.starts_with("uint")) {
    code = kUInt;
    rest = s.substr(4);
  } else if (s.starts_with("int")) {
    code = kInt;
    rest = s.substr(3);
  } else if (s.starts_with("float")) {
    code = kFloat;
    rest = s.substr(5);
  } else {
    return bad("unknown type name");
  }
  int bits = parse_positive(rest);
  if (bits < 0) return bad("missing or malformed bit width");
  if (!valid_bits(code, bits)) return bad("unsupported bit width");
  return DataType(code, bits, lanes);
}

std::string DataType::str() const {
  if (is_void()) return "void";
  std::string base;
  switch (code_) {
    case kInt: base = fmt::format("int{}", bits()); break;
    case kUInt: base = fmt::format("uint{}", bits()); break;
    case kFloat: base = fmt::format("float{}", bits()); break;
    case kBool: base = "bool"; break;
    case kHandle: return "handle";
    default: base = fmt::format("code{}_{}", int(code_), bits()); break;
  }
  if (lanes_ != 1) base += fmt::format("x{}", lanes());
  return base;
}

}  // namespace loom
