// .npy files: a magic string, a version, a Python-literal header dict, then the raw data.
#include "loom/runtime/npy.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "loom/runtime/error.h"
#include "loom/runtime/shape.h"
#include "regular_file.h"

namespace loom::runtime {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;

/// The value of `key` in the header dict, as text up to the next top-level ',' or '}'.
std::string header_field(const std::string& header, const std::string& key, const std::string& path) {
  size_t k = header.find("'" + key + "'");
  if (k == std::string::npos) k = header.find("\"" + key + "\"");
  LOOM_CHECK(k != std::string::npos, "load_npy: {}: the header has no '{}': {}", path, key, header);
  size_t colon = header.find(':', k);
  LOOM_CHECK(colon != std::string::npos, "load_npy: {}: malformed header: {}", path, header);
  size_t b = colon + 1;
  while (b < header.size() && header[b] == ' ') ++b;
  int depth = 0;
  size_t e = b;
  for (; e < header.size(); ++e) {
    char c = header[e];
    if (c == '(' || c == '[') ++depth;
    else if (c == ')' || c == ']') --depth;
    else if ((c == ',' || c == '}') && depth == 0) break;
  }
  std::string v = header.substr(b, e - b);
  while (!v.empty() && v.back() == ' ') v.pop_back();
  return v;
}

std::vector<int64_t> parse_shape(const std::string& text, const std::string& path) {
  LOOM_CHECK(text.size() >= 2 && text.front() == '(' && text.back() == ')', "load_npy: {}: malformed shape '{}'",
             path, text);
  std::vector<int64_t> shape;
  std::istringstream in(text.substr(1, text.size() - 2));
  for (std::string item; std::getline(in, item, ',');) {
    size_t b = item.find_first_not_of(' '), e = item.find_last_not_of(' ');
    if (b == std::string::npos) continue;  // the trailing comma of "(5,)"
    item = item.substr(b, e - b + 1);
    if (!item.empty() && item.back() == 'L') item.pop_back();  // Python 2's long
    char* end = nullptr;
    long long d = std::strtoll(item.c_str(), &end, 10);
    LOOM_CHECK(!item.empty() && end && *end == '\0' && d >= 0, "load_npy: {}: malformed shape '{}'", path, text);
    shape.push_back(d);
  }
  return shape;
}

DataType parse_descr(const std::string& quoted, const std::string& path) {
  LOOM_CHECK(quoted.size() >= 2 && (quoted.front() == '\'' || quoted.front() == '"'),
             "load_npy: {}: unsupported dtype {} (a structured array?)", path, quoted);
  std::string d = quoted.substr(1, quoted.size() - 2);
  LOOM_CHECK(d.size() >= 3, "load_npy: {}: unsupported dtype '{}'", path, d);
  char order = d[0], kind = d[1];
  int bytes = std::atoi(d.c_str() + 2);
  LOOM_CHECK(order != '>' || bytes == 1, "load_npy: {}: dtype '{}' is big-endian; only little-endian data is read",
             path, d);
  LOOM_CHECK(order == '<' || order == '|' || order == '=' || order == '>', "load_npy: {}: unsupported dtype '{}'", path,
             d);
  if (kind == 'b' && bytes == 1) return DataType::Bool();
  if (kind == 'f' && (bytes == 2 || bytes == 4 || bytes == 8)) return DataType::Float(8 * bytes);
  if (kind == 'i' && (bytes == 1 || bytes == 2 || bytes == 4 || bytes == 8)) return DataType::Int(8 * bytes);
  if (kind == 'u' && (bytes == 1 || bytes == 2 || bytes == 4 || bytes == 8)) return DataType::UInt(8 * bytes);
  fail("load_npy: {}: unsupported dtype '{}' (bool, int8-64, uint8-64 and float16/32/64 are read)", path, d);
}

}  // namespace

std::string npy_descr(DataType t) {
  LOOM_CHECK(t.lanes() == 1, "npy: vector type {} has no numpy equivalent", t.str());
  if (t.is_bool()) return "|b1";
  char kind = t.is_float() ? 'f' : t.is_int() ? 'i' : t.is_uint() ? 'u' : 0;
  LOOM_CHECK(kind != 0, "npy: type {} has no numpy equivalent", t.str());
  return fmt::format("{}{}{}", t.bytes() == 1 ? '|' : '<', kind, t.bytes());
}

NDArray load_npy(const std::string& path) {
  const uint64_t file_size = detail::regular_file_size(path, "load_npy");
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  LOOM_CHECK(in.good(), "load_npy: cannot open '{}': {}", path, errno ? std::strerror(errno) : "unknown error");
  char pre[10];
  in.read(pre, sizeof pre);
  LOOM_CHECK(in.gcount() == 10 && std::memcmp(pre, kMagic, kMagicSize) == 0,
             "load_npy: {}: not a .npy file (it does not start with \\x93NUMPY)", path);
  int major = static_cast<unsigned char>(pre[6]);
  LOOM_CHECK(major >= 1 && major <= 3, "load_npy: {}: .npy format version {} is not supported (1-3 are)", path, major);
  uint32_t header_len = 0;
  if (major == 1) {
    header_len = uint32_t(static_cast<unsigned char>(pre[8])) | uint32_t(static_cast<unsigned char>(pre[9])) << 8;
  } else {
    char more[2];
    in.read(more, 2);
    LOOM_CHECK(in.gcount() == 2, "load_npy: {}: truncated header", path);
    unsigned char b[4] = {static_cast<unsigned char>(pre[8]), static_cast<unsigned char>(pre[9]),
                          static_cast<unsigned char>(more[0]), static_cast<unsigned char>(more[1])};
    header_len = uint32_t(b[0]) | uint32_t(b[1]) << 8 | uint32_t(b[2]) << 16 | uint32_t(b[3]) << 24;
  }
  LOOM_CHECK(header_len < (1u << 24), "load_npy: {}: header of {} bytes is not plausible", path, header_len);
  std::string header(header_len, '\0');
  in.read(header.data(), header_len);
  LOOM_CHECK(size_t(in.gcount()) == header_len, "load_npy: {}: truncated header", path);

  DataType dtype = parse_descr(header_field(header, "descr", path), path);
  std::string fortran = header_field(header, "fortran_order", path);
  LOOM_CHECK(fortran == "False", "load_npy: {}: the array is in Fortran order; save it in C order "
                                 "(numpy.ascontiguousarray)", path);
  std::vector<int64_t> shape = parse_shape(header_field(header, "shape", path), path);
  // The data's size is checked against the file before the array is allocated.
  const int64_t nbytes = checked_byte_count(shape, dtype, "load_npy: " + path);
  const uint64_t data_start = uint64_t(in.tellg());
  LOOM_CHECK(file_size >= data_start && uint64_t(nbytes) <= file_size - data_start,
             "load_npy: {}: truncated: {}{} needs {} bytes of data, the file holds {}", path, dtype.str(),
             shape_str(shape), nbytes, file_size - std::min(file_size, data_start));
  NDArray a = NDArray::empty(shape, dtype);
  in.read(static_cast<char*>(a.raw_data()), std::streamsize(a.nbytes()));
  LOOM_CHECK(size_t(in.gcount()) == a.nbytes(), "load_npy: {}: reading the data failed after {} of {} bytes", path,
             in.gcount(), a.nbytes());
  return a;
}

void save_npy(const std::string& path, const NDArray& array) {
  LOOM_CHECK(array.defined(), "save_npy: {}: undefined array", path);
  LOOM_CHECK(array.device().device_type == kDLCPU, "save_npy: {}: the array is not on the CPU", path);
  std::string shape = "(";
  for (int64_t d : array.shape()) shape += fmt::format("{}, ", d);
  if (array.shape().size() > 1) shape.resize(shape.size() - 1), shape.back() = ')';
  else if (array.shape().size() == 1) shape.pop_back(), shape.back() = ',', shape += ")";
  else shape += ")";
  std::string header =
      fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", npy_descr(array.dtype()), shape);
  size_t total = kMagicSize + 4 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  LOOM_CHECK(out.good(), "save_npy: cannot open '{}' for writing", path);
  out.write(kMagic, kMagicSize);
  char version[2] = {1, 0};
  out.write(version, 2);
  uint16_t len = uint16_t(header.size());
  char len_bytes[2] = {char(len & 0xff), char(len >> 8)};
  out.write(len_bytes, 2);
  out.write(header.data(), std::streamsize(header.size()));
  out.write(static_cast<const char*>(array.raw_data()), std::streamsize(array.nbytes()));
  out.close();
  LOOM_CHECK(out.good(), "save_npy: cannot write '{}'", path);
}

}  // namespace loom::runtime
