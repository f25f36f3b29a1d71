// ONNX element types and TensorProto data as loom dtypes and arrays.
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "loom/runtime/shape.h"

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

/// Where a tensor's external data lies, checked against the file before anything is read.
struct ExternalRange {
  std::filesystem::path path;
  int64_t offset = 0;
};

/// The file and offset of `t`'s external data (location/offset/length relative to
/// base_dir): a regular file inside base_dir (symbolic links resolved) holding exactly the
/// `nbytes` bytes the tensor's dims and type need from `offset` on.
ExternalRange external_range(const TP& t, const std::string& base_dir, int64_t nbytes, const std::string& what) {
  namespace fs = std::filesystem;
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
  fs::path rel(location);
  LOOM_CHECK(rel.is_relative() && rel.lexically_normal().string().rfind("..", 0) != 0,
             "{}: external data location '{}' lies outside the model's folder", what, location);
  fs::path path = fs::path(base_dir) / rel;
  std::error_code ec;
  fs::file_status st = fs::status(path, ec);
  LOOM_CHECK(fs::exists(st), "{}: external data file {} does not exist", what, path.string());
  LOOM_CHECK(fs::is_regular_file(st), "{}: external data location {} is not a regular file ({})", what, path.string(),
             fs::is_directory(st) ? "a directory" : "a device, socket or pipe");
  fs::path real = fs::canonical(path, ec);
  LOOM_CHECK(!ec, "{}: cannot resolve external data file {}: {}", what, path.string(), ec.message());
  fs::path folder = fs::canonical(base_dir, ec);
  LOOM_CHECK(!ec, "{}: cannot resolve the model's folder {}: {}", what, base_dir, ec.message());
  auto [f, r] = std::mismatch(folder.begin(), folder.end(), real.begin(), real.end());
  LOOM_CHECK(f == folder.end(), "{}: external data location '{}' resolves to {}, outside the model's folder {}", what,
             location, real.string(), folder.string());
  const int64_t size = int64_t(fs::file_size(real, ec));
  LOOM_CHECK(!ec, "{}: cannot read the size of external data file {}: {}", what, path.string(), ec.message());
  LOOM_CHECK(offset <= size, "{}: external data offset {} is past the end of {} ({} bytes)", what, offset,
             path.string(), size);
  if (length < 0) length = size - offset;
  LOOM_CHECK(length <= size - offset, "{}: external data {} has {} bytes, offset {} + length {} reach past it", what,
             path.string(), size, offset, length);
  LOOM_CHECK(length == nbytes, "{}: external data of {} bytes (in {} from offset {}) for a tensor of {} bytes", what,
             length, path.string(), offset, nbytes);
  return {real, offset};
}

/// The number of values `t` holds in the typed field its data type uses.
int64_t typed_count(const TP& t) {
  switch (t.data_type()) {
    case TP::FLOAT: return t.float_data_size();
    case TP::DOUBLE: return t.double_data_size();
    case TP::INT64: return t.int64_data_size();
    case TP::UINT32:
    case TP::UINT64: return t.uint64_data_size();
    default: return t.int32_data_size();  // FLOAT16 (16-bit patterns), INT32, INT16, INT8, UINT16, UINT8, BOOL
  }
}

template <typename Src>
void fill_from(runtime::NDArray a, const Src& values, int64_t n) {
  for (int64_t i = 0; i < n; ++i) a.set(i, double(values[int(i)]));
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
  // The sizes the dims imply are checked against the data present before anything is allocated.
  const int64_t n = runtime::checked_element_count(shape, what);
  const int64_t nbytes = runtime::checked_byte_count(shape, dtype, what);
  if (t.data_location() == TP::EXTERNAL) {
    ExternalRange ext = external_range(t, base_dir, nbytes, what);
    runtime::NDArray a = runtime::NDArray::empty(shape, dtype);
    std::ifstream in(ext.path, std::ios::binary);
    LOOM_CHECK(in.good(), "{}: cannot open external data file {}", what, ext.path.string());
    in.seekg(ext.offset);
    in.read(static_cast<char*>(a.raw_data()), nbytes);
    LOOM_CHECK(in.gcount() == nbytes, "{}: reading external data {} failed after {} of {} bytes", what,
               ext.path.string(), in.gcount(), nbytes);
    return a;  // ONNX data is little-endian, as is this host
  }
  if (t.has_raw_data()) {
    const std::string& raw = t.raw_data();
    LOOM_CHECK(int64_t(raw.size()) == nbytes, "{}: {} bytes of data for {} {} elements ({} bytes)", what, raw.size(), n,
               onnx_type_name(t.data_type()), nbytes);
    runtime::NDArray a = runtime::NDArray::empty(shape, dtype);
    std::memcpy(a.raw_data(), raw.data(), size_t(nbytes));
    return a;
  }
  LOOM_CHECK(typed_count(t) == n, "{}: holds {} values but its dims {} say {}", what, typed_count(t), shape_str(shape),
             n);
  runtime::NDArray a = runtime::NDArray::empty(shape, dtype);
  switch (t.data_type()) {
    case TP::FLOAT: fill_from(a, t.float_data(), n); break;
    case TP::DOUBLE: fill_from(a, t.double_data(), n); break;
    case TP::INT64: fill_from(a, t.int64_data(), n); break;
    case TP::UINT32:
    case TP::UINT64: {
      if (dtype.bits() == 64) std::memcpy(a.raw_data(), t.uint64_data().data(), size_t(nbytes));
      else for (int64_t i = 0; i < n; ++i) a.data<uint32_t>()[i] = uint32_t(t.uint64_data(int(i)));
      break;
    }
    case TP::FLOAT16: {  // int32_data holds the 16-bit patterns
      for (int64_t i = 0; i < n; ++i) a.data<uint16_t>()[i] = uint16_t(t.int32_data(int(i)));
      break;
    }
    default: fill_from(a, t.int32_data(), n); break;  // INT32, INT16, INT8, UINT16, UINT8, BOOL
  }
  return a;
}

}  // namespace loom::graph_opt::onnx_frontend

namespace loom::graph_opt {

runtime::NDArray read_onnx_tensor(const std::string& path) {
  std::string bytes = onnx_frontend::read_model_file(path);
  onnx::TensorProto t;
  LOOM_CHECK(t.ParseFromString(bytes), "onnx: {} is not a serialized TensorProto", path);
  std::string dir = std::filesystem::path(path).parent_path().string();
  return onnx_frontend::tensor_to_array(t, dir.empty() ? "." : dir, "onnx: " + path);
}


}  // namespace loom::graph_opt
