// .npy files: round trips of every supported dtype, files as numpy writes them (versions 1
// and 2), and the errors a damaged or unsupported file gives.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "loom/runtime/error.h"
#include "loom/runtime/npy.h"

namespace loom::runtime {
namespace {

namespace fs = std::filesystem;

fs::path scratch_dir() { return fs::temp_directory_path() / fmt::format("loom-npy-test-{}", getpid()); }

fs::path scratch(const std::string& name) {
  fs::create_directories(scratch_dir());
  return scratch_dir() / name;
}

class CleanUp : public ::testing::Environment {
 public:
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(scratch_dir(), ec);
  }
};
const auto* const clean_up = ::testing::AddGlobalTestEnvironment(new CleanUp);

void write_bytes(const fs::path& p, const std::string& bytes) { std::ofstream(p, std::ios::binary) << bytes; }

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

/// A file as numpy.save writes it: magic, version, little-endian header length, the header
/// padded with spaces to a multiple of 64 bytes and ending in '\n', then the data.
std::string numpy_file(const std::string& dict, const std::string& data, int version = 1) {
  size_t prefix = version == 1 ? 10 : 12;
  std::string header = dict;
  size_t total = prefix + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out("\x93NUMPY", 6);
  out += char(version);
  out += char(0);
  uint32_t n = uint32_t(header.size());
  out += char(n & 0xff);
  out += char((n >> 8) & 0xff);
  if (version != 1) out += std::string{char((n >> 16) & 0xff), char(n >> 24)};
  return out + header + data;
}

std::string error_of(const fs::path& p) {
  try {
    load_npy(p.string());
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Npy, RoundTripsEveryDtype) {
  for (const char* t : {"float32", "float64", "float16", "int8", "int16", "int32", "int64", "uint8", "uint16",
                        "uint32", "uint64", "bool"}) {
    DataType dt = DataType::parse(t);
    for (std::vector<int64_t> shape : std::vector<std::vector<int64_t>>{{2, 3, 5}, {7}, {}, {0, 4}}) {
      NDArray a = NDArray::empty(shape, dt);
      a.fill_random(3, 0, dt.is_bool() ? 1 : 5);
      fs::path p = scratch(fmt::format("{}_{}.npy", t, shape.size()));
      save_npy(p.string(), a);
      std::string bytes = read_bytes(p);
      ASSERT_EQ((bytes.size() - a.nbytes()) % 64, 0u) << t << ": the header is padded to 64 bytes";
      NDArray b = load_npy(p.string());
      EXPECT_EQ(b.dtype(), dt) << t;
      EXPECT_EQ(b.shape(), shape) << t;
      EXPECT_EQ(std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()), 0) << t;
    }
  }
}

TEST(Npy, WritesNumpysHeader) {
  NDArray a = NDArray::from_vector({1, 2, 3, 4, 5, 6}, {2, 3}, DataType::Float(32));
  fs::path p = scratch("header.npy");
  save_npy(p.string(), a);
  std::string f = read_bytes(p);
  std::string data(static_cast<const char*>(a.raw_data()), a.nbytes());
  EXPECT_EQ(f, numpy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", data));
  NDArray v = NDArray::from_vector({1, 2}, {2}, DataType::Int(64));
  save_npy(p.string(), v);
  EXPECT_NE(read_bytes(p).find("'shape': (2,), }"), std::string::npos);
}

TEST(Npy, ReadsNumpyFilesOfVersions1And2) {
  float vals[3] = {1.5f, -2, 3};
  std::string data(reinterpret_cast<const char*>(vals), sizeof vals);
  for (int version : {1, 2}) {
    fs::path p = scratch(fmt::format("v{}.npy", version));
    write_bytes(p, numpy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", data, version));
    NDArray a = load_npy(p.string());
    EXPECT_EQ(a.shape(), (std::vector<int64_t>{3}));
    EXPECT_EQ(a.get(0), 1.5);
    EXPECT_EQ(a.get(1), -2);
  }
  fs::path p = scratch("u8.npy");
  write_bytes(p, numpy_file("{'descr': '|u1', 'fortran_order': False, 'shape': (1, 2), }", "\x07\x09"));
  NDArray b = load_npy(p.string());
  EXPECT_EQ(b.dtype(), DataType::UInt(8));
  EXPECT_EQ(b.get(1), 9);
}

TEST(Npy, Errors) {
  std::string f4 = std::string(12, '\0');
  struct Case {
    std::string bytes, msg;
  };
  std::vector<Case> cases = {
      {"hello world, not numpy", "not a .npy file"},
      {numpy_file("{'descr': '>f4', 'fortran_order': False, 'shape': (3,), }", f4), "dtype '>f4' is big-endian"},
      {numpy_file("{'descr': '<f4', 'fortran_order': True, 'shape': (3,), }", f4), "is in Fortran order"},
      {numpy_file("{'descr': '<c8', 'fortran_order': False, 'shape': (3,), }", f4), "unsupported dtype '<c8'"},
      {numpy_file("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (3,), }", f4), "unsupported dtype"},
      {numpy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", f4),
       "truncated: float32[4] needs 16 bytes of data, the file holds 12"},
      {numpy_file("{'descr': '<f4', 'fortran_order': False, }", f4), "the header has no 'shape'"},
      {numpy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (3,x), }", f4), "malformed shape '(3,x)'"},
      {numpy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", f4).substr(0, 30), "truncated header"},
      {numpy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", f4, 9), "format version 9"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    fs::path p = scratch(fmt::format("bad{}.npy", i));
    write_bytes(p, cases[i].bytes);
    std::string err = error_of(p);
    EXPECT_NE(err.find(cases[i].msg), std::string::npos) << "case " << i << ": '" << err << "'";
    EXPECT_NE(err.find(p.string()), std::string::npos) << "case " << i << " names the file: " << err;
  }
  EXPECT_NE(error_of(scratch("missing.npy")).find("cannot open"), std::string::npos);
}

}  // namespace
}  // namespace loom::runtime
