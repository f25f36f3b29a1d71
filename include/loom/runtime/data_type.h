// DataType: scalar or vector element type, bit-compatible with DLPack's DLDataType.
#pragma once
#include <dlpack/dlpack.h>

#include <cstdint>
#include <string>

namespace loom {

/// An element type: a code (int, uint, float, bool, handle), a bit width and a lane count.
/// bool is its own code (DLPack's kDLBool) and occupies one byte in memory.
class DataType {
 public:
  enum Code : uint8_t { kInt = kDLInt, kUInt = kDLUInt, kFloat = kDLFloat, kHandle = kDLOpaqueHandle, kBool = 6 };

  constexpr DataType() = default;
  constexpr DataType(Code code, int bits, int lanes = 1) : code_(code), bits_(uint8_t(bits)), lanes_(uint16_t(lanes)) {}
  explicit DataType(DLDataType t) : code_(Code(t.code)), bits_(t.bits), lanes_(t.lanes) {}

  static constexpr DataType Int(int bits, int lanes = 1) { return {kInt, bits, lanes}; }
  static constexpr DataType UInt(int bits, int lanes = 1) { return {kUInt, bits, lanes}; }
  static constexpr DataType Float(int bits, int lanes = 1) { return {kFloat, bits, lanes}; }
  static constexpr DataType Bool(int lanes = 1) { return {kBool, 8, lanes}; }
  static constexpr DataType Handle() { return {kHandle, 64, 1}; }
  static constexpr DataType Void() { return {kHandle, 0, 0}; }
  /// Parses "float32", "int8", "uint8", "bool", "float32x8", "handle".
  static DataType parse(const std::string& s);

  Code code() const { return code_; }
  int bits() const { return bits_; }
  int lanes() const { return lanes_; }
  int bytes() const { return (bits_ + 7) / 8; }

  bool is_int() const { return code_ == kInt; }
  bool is_uint() const { return code_ == kUInt; }
  bool is_float() const { return code_ == kFloat; }
  bool is_bool() const { return code_ == kBool; }
  bool is_handle() const { return code_ == kHandle && lanes_ != 0; }
  bool is_void() const { return code_ == kHandle && lanes_ == 0; }
  /// int or uint (not bool).
  bool is_integer() const { return code_ == kInt || code_ == kUInt; }
  bool is_scalar() const { return lanes_ == 1; }
  bool is_vector() const { return lanes_ > 1; }

  DataType element_of() const { return {code_, bits_, 1}; }
  DataType with_lanes(int lanes) const { return {code_, bits_, lanes}; }
  DataType with_bits(int bits) const { return {code_, bits, lanes_}; }

  DLDataType to_dlpack() const { return DLDataType{uint8_t(code_), bits_, lanes_}; }
  std::string str() const;

  bool operator==(const DataType& o) const { return code_ == o.code_ && bits_ == o.bits_ && lanes_ == o.lanes_; }
  bool operator!=(const DataType& o) const { return !(*this == o); }

 private:
  Code code_ = kInt;
  uint8_t bits_ = 32;
  uint16_t lanes_ = 1;
};

}  // namespace loom
