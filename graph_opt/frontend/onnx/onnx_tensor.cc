// ONNX element types and TensorProto data as loom dtypes and arrays.
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "onnx_importer.h"

namespace loom::graph_opt::onnx_frontend {

namespace {

using TP = onnx::TensorProto;

struct TypeInfo {
  int code;
  const char* name;
  std::optional<DataType> dtype;
};

// ONNX's TensorProto.DataType codes (onnx.proto; codes past 16 are newer than the installed
// headers and are named here so that messages say which type a model used).
const TypeInfo kTypes[] = {
    {1, "FLOAT", DataType::Float(32)},   {2, "UINT8", DataType::UInt(8)},     {3, "INT8", DataType::Int(8)},
    {4, "UINT16", DataType::UInt(16)},   {5, "INT16", DataType::Int(16)},     {6, "INT32", DataType::Int(32)},
    {7, "INT64", DataType::Int(64)},     {8, "STRING", std::nullopt},         {9, "BOOL", DataType::Bool()},
    {10, "FLOAT16", DataType::Float(16)}, {11, "DOUBLE", DataType::Float(64)}, {12, "UINT32", DataType::UInt(32)},
    {13, "UINT64", DataType::UInt(64)},  {14, "COMPLEX64", std::nullopt},     {15, "COMPLEX128", std::nullopt},
    {16, "BFLOAT16", std::nullopt},      {17, "FLOAT8E4M3FN", std::nullopt},  {18, "FLOAT8E4M3FNUZ", std::nullopt},
    {19, "FLOAT8E5M2", std::nullopt},    {20, "FLOAT8E5M2FNUZ", std::nullopt}, {21, "UINT4", std::nullopt},
    {22, "INT4", std::nullopt},          {23, "FLOAT4E2M1", std::nullopt},    {24, "FLOAT8E8M0", std::nullopt},
    {25, "UINT2", std::nullopt},         {26, "INT2", std::nullopt},
};

const TypeInfo* find_type(int code) {
  for (const TypeInfo& t : kTypes)
    if (t.code == code) return &t;
  return nullptr;
}

template <typename Src>
void fill_from(runtime::NDArray a, const Src& values, int64_t n, const std::string& what) {
  LOOM_CHECK(int64_t(values.size()) == n, "{}: holds {} values but its dims say {}", what, values.size(), n);
  for (int64_t i = 0; i < n; ++i) a.set(i, double(values[int(i)]));
}

/// Bytes of external data (location/offset/length relative to base_dir).
std::string read_external(const TP& t, const std::string& base_dir, const std::string& what) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : t.external_data()) {
    if (kv.key() == "location") location = kv.value();
    else if (kv.key() == "offset" || kv.key() == "length") {
      int64_t v = 0;
      try {
        size_t used = 0;
        v = std::stoll(kv.value(), &used);
        LOOM_CHECK(used == kv.value().size() && v >= 0, "bad");
      } catch (const std::exception&) {
        fail("{}: external data {} '{}' is not a non-negative integer", what, kv.key(), kv.value());
      }
      (kv.key() == "offset" ? offset : length) = v;
    }
  }
  LOOM_CHECK(!location.empty(), "{}: external data without a location", what);
  LOOM_CHECK(!base_dir.empty(), "{}: external data '{}' but the model was not read from a file", what, location);
  std::filesystem::path rel(location);
  LOOM_CHECK(rel.is_relative() && rel.lexically_normal().string().rfind("..", 0) != 0,
             "{}: external data location '{}' lies outside the model's folder", what, location);
  std::filesystem::path path = std::filesystem::path(base_dir) / rel;
  std::ifstream in(path, std::ios::binary);
  LOOM_CHECK(in.good(), "{}: cannot open external data file {}", what, path.string());
  in.seekg(0, std::ios::end);
  const int64_t size = int64_t(in.tellg());
  if (length < 0) length = size - offset;
  LOOM_CHECK(offset <= size && length <= size - offset, "{}: external data {} has {} bytes, offset {} + length {} reach past it",
             what, path.string(), size, offset, length);
  std::string bytes(size_t(length), '\0');
  in.seekg(offset);
  in.read(bytes.data(), length);
  LOOM_CHECK(in.good() || length == 0, "{}: reading external data {} failed", what, path.string());
  return bytes;
}

}  // namespace

std::string onnx_type_name(int elem_type) {
  const TypeInfo* t = find_type(elem_type);
  return t ? t->name : fmt::format("type {}", elem_type);
}

DataType to_dtype(int elem_type, const std::string& where) {
  const TypeInfo* t = find_type(elem_type);
  if (elem_type == 0) fail("{}: element type is UNDEFINED (0)", where);
  if (!t) fail("{}: unknown ONNX element type {}", where, elem_type);
  if (!t->dtype) throw OnnxUnsupported(fmt::format("{}: element type {} is not supported (loom has no such dtype)", where, t->name));
  return *t->dtype;
}

int to_onnx_type(DataType d) {
  for (const TypeInfo& t : kTypes)
    if (t.dtype && *t.dtype == d) return t.code;
  fail("dtype {} has no ONNX element type", d.str());
}

runtime::NDArray tensor_to_array(const TP& t, const std::string& base_dir, const std::string& where) {
  const std::string what = t.name().empty() ? where + ": tensor" : fmt::format("{}: tensor '{}'", where, t.name());
  if (t.has_segment()) throw OnnxUnsupported(what + ": segmented tensors are not supported");
  DataType dtype = to_dtype(t.data_type(), what);
  std::vector<int64_t> shape(t.dims().begin(), t.dims().end());
  int64_t n = 1;
  for (int64_t d : shape) {
    LOOM_CHECK(d >= 0, "{}: negative dim in {}", what, shape_str(shape));
    LOOM_CHECK(d == 0 || n <= std::numeric_limits<int64_t>::max() / d, "{}: shape {} is too large", what, shape_str(shape));
    n *= d;
  }
  runtime::NDArray a = runtime::NDArray::empty(shape, dtype);
  const size_t nbytes = size_t(n) * size_t(dtype.bytes());
  auto copy_raw = [&](const std::string& raw) {
    LOOM_CHECK(raw.size() == nbytes, "{}: {} bytes of data for {} {} elements ({} bytes)", what, raw.size(), n,
               onnx_type_name(t.data_type()), nbytes);
    std::memcpy(a.raw_data(), raw.data(), nbytes);  // ONNX raw data is little-endian, as is this host
  };
  if (t.data_location() == TP::EXTERNAL) {
    copy_raw(read_external(t, base_dir, what));
    return a;
  }
  if (t.has_raw_data()) {
    copy_raw(t.raw_data());
    return a;
  }
  switch (t.data_type()) {
    case TP::FLOAT: fill_from(a, t.float_data(), n, what); break;
    case TP::DOUBLE: fill_from(a, t.double_data(), n, what); break;
    case TP::INT64: fill_from(a, t.int64_data(), n, what); break;
    case TP::UINT32:
    case TP::UINT64: {
      LOOM_CHECK(int64_t(t.uint64_data_size()) == n, "{}: holds {} values but its dims say {}", what, t.uint64_data_size(), n);
      if (dtype.bits() == 64) std::memcpy(a.raw_data(), t.uint64_data().data(), nbytes);
      else for (int64_t i = 0; i < n; ++i) a.data<uint32_t>()[i] = uint32_t(t.uint64_data(int(i)));
      break;
    }
    case TP::FLOAT16: {  // int32_data holds the 16-bit patterns
      LOOM_CHECK(int64_t(t.int32_data_size()) == n, "{}: holds {} values but its dims say {}", what, t.int32_data_size(), n);
      for (int64_t i = 0; i < n; ++i) a.data<uint16_t>()[i] = uint16_t(t.int32_data(int(i)));
      break;
    }
    default: fill_from(a, t.int32_data(), n, what); break;  // INT32, INT16, INT8, UINT16, UINT8, BOOL
  }
  return a;
}

}  // namespace loom::graph_opt::onnx_frontend

namespace loom::graph_opt {

runtime::NDArray read_onnx_tensor(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  LOOM_CHECK(in.good(), "onnx: cannot open {}", path);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  onnx::TensorProto t;
  LOOM_CHECK(t.ParseFromString(bytes), "onnx: {} is not a serialized TensorProto", path);
  return onnx_frontend::tensor_to_array(t, std::filesystem::path(path).parent_path().string(), "onnx: " + path);
}


}  // namespace loom::graph_opt
