// Type inference of the convolution and pooling operators on inputs of the wrong rank and
// on window attributes past int32: errors naming the operator and the problem, never a
// wrapped extent.
#include <gtest/gtest.h>

#include "loom/runtime/error.h"
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

}  // namespace
}  // namespace loom::te::ops
