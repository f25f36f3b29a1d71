// Type inference on shapes past the integer limits: convolution and pooling inputs of the
// wrong rank and window attributes past int32, and shapes whose element count does not fit
// in 64 bits (fuzz finding F4): errors naming the operator and the problem, never a wrapped
// extent or count.
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

TEST(ConvShapeChecks, DataOfTheWrongRank) {
  const TensorType w{{4, 3, 3, 3}, f32, ""};
  EXPECT_EQ(infer_error("conv2d", {{{1, 3, 8, 8}, f32, ""}, w}, {}), "");
  for (std::vector<int64_t> x : {std::vector<int64_t>{3}, {3, 8}, {1, 3, 8}, {1, 3, 8, 8, 8}}) {
    std::string e = infer_error("conv2d", {{x, f32, ""}, w}, {});
    EXPECT_NE(e.find("data must be 4-D ([N,C,H,W]) but is " + std::to_string(x.size()) + "-D"), std::string::npos) << e;
    // Asymmetric padding pads dims 2 and 3 first: the rank is checked there too.
    e = infer_error("conv2d", {{x, f32, ""}, w}, {{"padding", std::vector<int64_t>{0, 0, 1, 1}}});
    EXPECT_TRUE(e.find("conv2d") != std::string::npos && e.find("-D") != std::string::npos) << e;
  }
  std::string e = infer_error("conv2d", {{{1, 3, 8, 8}, f32, ""}, {{4, 3, 3}, f32, ""}}, {});
  EXPECT_NE(e.find("kernel must be 4-D"), std::string::npos) << e;
  for (const char* pool : {"max_pool2d", "avg_pool2d"}) {
    e = infer_error(pool, {{{3, 8}, f32, ""}}, {{"pool_size", std::vector<int64_t>{2, 2}}});
    EXPECT_NE(e.find(std::string(pool) + ": data is 3x8 but the layout is \"NCHW\""), std::string::npos) << e;
  }
  e = infer_error("global_avg_pool2d", {{{8}, f32, ""}}, {});
  EXPECT_NE(e.find("global_avg_pool2d: data is 8 but the layout is \"NCHW\""), std::string::npos) << e;
}

TEST(ConvShapeChecks, WindowAttributesPast2To31) {
  const std::vector<TensorType> in{{{1, 3, 8, 8}, f32, ""}, {{4, 3, 3, 3}, f32, ""}};
  const int64_t big = int64_t(1) << 62;
  std::string e = infer_error("conv2d", in, {{"padding", std::vector<int64_t>{big, big}}});
  EXPECT_NE(e.find("attribute 'padding' must be non-negative and below 2^31"), std::string::npos) << e;
  e = infer_error("conv2d", in, {{"strides", std::vector<int64_t>{big, 1}}});
  EXPECT_NE(e.find("attribute 'strides' must be positive and below 2^31"), std::string::npos) << e;
  e = infer_error("conv2d", in, {{"dilation", std::vector<int64_t>{1, big}}});
  EXPECT_NE(e.find("attribute 'dilation' must be positive and below 2^31"), std::string::npos) << e;
  e = infer_error("max_pool2d", {in[0]}, {{"pool_size", std::vector<int64_t>{big, 2}}});
  EXPECT_NE(e.find("attribute 'pool_size' must be positive and below 2^31"), std::string::npos) << e;
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
