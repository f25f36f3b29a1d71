// Shapes whose element count does not fit in 64 bits are errors saying so, never a wrapped
// (negative or small) count in a message or a check (fuzz finding F4).
#include <gtest/gtest.h>

#include "loom/runtime/error.h"
#include "loom/runtime/shape.h"
#include "loom/te/op_registry.h"

namespace loom::te::ops {
namespace {

const DataType f32 = DataType::Float(32);

std::string infer_error(const std::string& op, const std::vector<TensorType>& in, const Attrs& attrs) {
  try {
    infer_type(op, in, attrs);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ShapeOverflow, ReshapeToAShapeWhoseCountWraps) {
  const std::vector<TensorType> x{{{2, 8}, f32, ""}};
  // 3 * 8 * (2^63-2) * 3 wraps to -144.
  std::string e = infer_error("reshape", x, {{"newshape", std::vector<int64_t>{3, 0, INT64_MAX - 1, 3}}});
  EXPECT_NE(e.find("reshape: the new shape 3x8x9223372036854775806x3 has more than 2^63-1 elements"), std::string::npos)
      << e;
  EXPECT_EQ(e.find("-144"), std::string::npos) << e;
  // (2^62+1) * 4 wraps to exactly x's 4 elements... of a [4] input.
  e = infer_error("reshape", {{{4}, f32, ""}}, {{"newshape", std::vector<int64_t>{(int64_t(1) << 62) + 1, 4}}});
  EXPECT_NE(e.find("has more than 2^63-1 elements"), std::string::npos) << e;
  EXPECT_EQ(infer_error("reshape", x, {{"newshape", std::vector<int64_t>{4, -1}}}), "");
}

TEST(ShapeOverflow, CheckedElementCount) {
  EXPECT_EQ(runtime::checked_element_count({2, 3, 4}, "t"), 24);
  EXPECT_EQ(runtime::checked_element_count({int64_t(1) << 62, 0}, "t"), 0);
  try {
    runtime::checked_element_count({1, 3, 16, int64_t(1) << 62}, "input 'x'");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("input 'x': shape [1, 3, 16, 4611686018427387904] has more than 2^63-1 elements"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace loom::te::ops
