// load_npy and `loom run --input` on files that are not .npy data: a device, a directory, a
// header whose shape needs more bytes than the file holds (refused before allocating) or
// more than 2^63 elements. Each error says which of these it is.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "common/cli_test_util.h"
#include "common/process_util.h"
#include "loom/runtime/error.h"
#include "loom/runtime/npy.h"

namespace loom::runtime {
namespace {

namespace fs = std::filesystem;

const fs::path& work_dir() { return test::scratch_dir("loom-npy-limits-test"); }

std::string error_of(const fs::path& p) {
  try {
    load_npy(p.string());
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

/// A version-1 .npy file with `header` (padded) and `data_bytes` zero bytes of data.
fs::path npy_file(const std::string& name, std::string header, size_t data_bytes) {
  header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::string bytes = std::string("\x93NUMPY\x01\x00", 8);
  bytes += char(header.size() & 0xff);
  bytes += char(header.size() >> 8);
  bytes += header + std::string(data_bytes, '\0');
  fs::path p = work_dir() / name;
  std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes;
  return p;
}

TEST(NpyLimits, DevicesAndDirectoriesAreNotRegularFiles) {
  EXPECT_NE(
      error_of("/dev/zero").find("load_npy: cannot open '/dev/zero': not a regular file (a device, socket or pipe)"),
      std::string::npos)
      << error_of("/dev/zero");
  EXPECT_NE(error_of(work_dir()).find("not a regular file (a directory)"), std::string::npos) << error_of(work_dir());
  EXPECT_NE(error_of(work_dir() / "missing.npy").find("no such file"), std::string::npos);
}

TEST(NpyLimits, AShapeLargerThanTheFileIsRefusedBeforeAllocating) {
  // 2^40 floats (4 TiB) claimed by a file of 16 data bytes.
  auto t0 = std::chrono::steady_clock::now();
  fs::path p = npy_file("huge.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776,), }", 16);
  std::string e = error_of(p);
  EXPECT_NE(e.find("truncated: float32[1099511627776] needs 4398046511104 bytes of data, the file holds 16"),
            std::string::npos)
      << e;
  EXPECT_EQ(e.find("out of memory"), std::string::npos) << e;
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5.0);

  p = npy_file("wraps.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4), }", 16);
  e = error_of(p);
  EXPECT_NE(e.find("shape [4611686018427387904, 4] has more than 2^63-1 elements"), std::string::npos) << e;

  p = npy_file("fits.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", 16);
  EXPECT_EQ(load_npy(p.string()).numel(), 4);
}

TEST(NpyLimits, LoomRunSaysWhyAnInputCannotBeRead) {
  ASSERT_TRUE(fs::exists(test::kLoom)) << test::kLoom << " was not built (target loom_cli)";
  fs::path model = work_dir() / "model.so";  // --input is checked before the library is opened
  std::ofstream(model) << "x";
  struct Case {
    std::string input, want;
  };
  for (const Case& c :
       {Case{"/dev/zero", "--input: cannot read '/dev/zero': not a regular file (a device, socket or pipe)"},
        Case{work_dir().string(), "it is a directory"},
        Case{(work_dir() / "missing.npy").string(), "(no such file)"}}) {
    std::string out;
    int rc = test::run({test::kLoom, "run", model.string(), "--input", c.input}, test::host_env(), &out, 60);
    EXPECT_EQ(rc, 2) << out;
    EXPECT_NE(out.find(c.want), std::string::npos) << out;
  }
}

}  // namespace
}  // namespace loom::runtime
