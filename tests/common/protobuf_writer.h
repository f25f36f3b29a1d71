// Protobuf messages written field by field in the wire format, for tests that build ONNX
// models (onnx.proto's field numbers) without linking ONNX's protobuf classes, malformed ones
// included.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>

namespace loom::test {

/// A protobuf message being written: each call appends one field.
struct Pb {
  std::string b;
  void varint(uint64_t v) {
    while (v >= 0x80) {
      b += char((v & 0x7f) | 0x80);
      v >>= 7;
    }
    b += char(v);
  }
  /// A varint field (int64, enum, bool).
  Pb& i(int field, int64_t v) {
    varint(uint64_t(field) << 3);
    varint(uint64_t(v));
    return *this;
  }
  /// A 32-bit float field.
  Pb& f32(int field, float v) {
    varint(uint64_t(field) << 3 | 5);
    char raw[4];
    std::memcpy(raw, &v, 4);
    b.append(raw, 4);
    return *this;
  }
  /// A length-delimited field (string, bytes).
  Pb& s(int field, const std::string& v) {
    varint(uint64_t(field) << 3 | 2);
    varint(v.size());
    b += v;
    return *this;
  }
  /// An embedded message.
  Pb& m(int field, const Pb& v) { return s(field, v.b); }
};

}  // namespace loom::test
