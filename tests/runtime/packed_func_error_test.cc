// A failed PackedFunc call names the function once: messages that already begin with its
// name (every check loom generates) are not prefixed again.
#include <gtest/gtest.h>

#include "loom/runtime/c_runtime_api.h"
#include "loom/runtime/error.h"
#include "loom/runtime/module.h"

namespace loom::runtime {
namespace {

std::string error_of(const PackedFunc& f) {
  try {
    f.call({});
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

PackedFunc failing(const std::string& name, const std::string& msg) {
  return PackedFunc(name, [msg](DLTensor**, int32_t) -> int32_t {
    loom_set_last_error(msg.c_str());
    return -1;
  });
}

TEST(PackedFuncError, TheFunctionIsNamedOnce) {
  EXPECT_EQ(error_of(failing("matmul", "matmul: argument 0 ('A') must be on the GPU")),
            "matmul: argument 0 ('A') must be on the GPU");
  EXPECT_EQ(error_of(failing("matmul", "out of memory")), "matmul: out of memory");
  // Another function's name, or the name without the separator, is context to keep.
  EXPECT_EQ(error_of(failing("matmul", "matmul_inner: bad")), "matmul: matmul_inner: bad");
  EXPECT_EQ(error_of(failing("f", "")), "f: failed with status -1");
}

}  // namespace
}  // namespace loom::runtime
