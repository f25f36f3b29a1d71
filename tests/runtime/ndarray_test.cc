#include "loom/runtime/ndarray.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "loom/runtime/error.h"
#include "loom/runtime/float16.h"

using loom::DataType;
using loom::runtime::NDArray;

TEST(NDArray, EmptyIsAlignedAndDescribedByDLTensor) {
  for (int64_t n : {0, 1, 3, 17, 1000}) {
    NDArray a = NDArray::empty({n, 3}, DataType::Float(32));
    EXPECT_EQ(reinterpret_cast<uintptr_t>(a.raw_data()) % 64, 0u);
    EXPECT_EQ(a.numel(), n * 3);
    EXPECT_EQ(a.nbytes(), size_t(n * 3 * 4));
    DLTensor* t = a.dltensor();
    EXPECT_EQ(t->data, a.raw_data());
    EXPECT_EQ(t->ndim, 2);
    EXPECT_EQ(t->shape[0], n);
    EXPECT_EQ(t->shape[1], 3);
    EXPECT_EQ(t->strides, nullptr);
    EXPECT_EQ(t->byte_offset, 0u);
    EXPECT_EQ(t->device.device_type, kDLCPU);
    EXPECT_EQ(DataType(t->dtype), DataType::Float(32));
  }
  NDArray s = NDArray::empty({}, DataType::Int(8));
  EXPECT_EQ(s.ndim(), 0);
  EXPECT_EQ(s.numel(), 1);
}

TEST(NDArray, NegativeDimensionThrows) {
  EXPECT_THROW(NDArray::empty({2, -1}, DataType::Float(32)), loom::Error);
}

TEST(NDArray, ByteCountThatWrapsIsAnErrorNamingTheShape) {
  auto message = [](std::vector<int64_t> shape, DataType t) -> std::string {
    try {
      NDArray::empty(std::move(shape), t);
    } catch (const loom::Error& e) {
      return e.what();
    }
    return "";
  };
  // 2^62 elements of 4 bytes: 2^64 bytes, which wrapped to 0 and "succeeded".
  std::string e = message({int64_t(1) << 31, int64_t(1) << 31}, DataType::Float(32));
  EXPECT_NE(e.find("NDArray::empty: shape [2147483648, 2147483648] of float32 needs more than 2^63 bytes"),
            std::string::npos)
      << e;
  e = message({int64_t(1) << 40, int64_t(1) << 40}, DataType::Int(8));
  EXPECT_NE(e.find("shape [1099511627776, 1099511627776] has more than"), std::string::npos) << e;
  e = message({int64_t(1) << 60}, DataType::Float(32));  // fits int64 bytes, but no memory has it
  EXPECT_NE(e.find("out of memory"), std::string::npos) << e;
  EXPECT_NE(e.find("[1152921504606846976]"), std::string::npos) << e;
  e = message({2, -1}, DataType::Float(32));
  EXPECT_NE(e.find("dimension 1 of shape [2, -1] is -1"), std::string::npos) << e;
  EXPECT_EQ(NDArray::empty({0, int64_t(1) << 62}, DataType::Float(32)).nbytes(), 0u);  // empty arrays are fine
}

TEST(NDArray, NonCpuDeviceNeedsDeviceRuntime) {
  try {
    NDArray::empty({4}, DataType::Float(32), DLDevice{kDLVulkan, 0});
    FAIL() << "expected loom::Error";
  } catch (const loom::Error& e) {
    EXPECT_NE(std::string(e.what()).find("kDLVulkan"), std::string::npos) << e.what();
  }
}

TEST(NDArray, GetSetRoundTripEveryType) {
  struct Case {
    const char* type;
    std::vector<double> values;
  };
  std::vector<Case> cases = {
      {"float32", {0.0, -1.5, 3.25, 1e30, -1e-30}},
      {"float64", {0.1, -2.718281828459045, 1e300}},
      {"float16", {0.0, 1.0, -2.5, 65504.0, 0.0999755859375, 6.103515625e-05, 5.9604644775390625e-08}},
      {"int8", {-128, 127, 0, -5}},
      {"int16", {-32768, 32767, 12}},
      {"int32", {-2147483648.0, 2147483647.0, 7}},
      {"int64", {-9007199254740992.0, 9007199254740992.0, -3}},
      {"uint8", {0, 255, 17}},
      {"uint16", {0, 65535}},
      {"uint32", {0, 4294967295.0}},
      {"uint64", {0, 9007199254740992.0}},
      {"bool", {0, 1, 1, 0}},
  };
  for (const auto& c : cases) {
    DataType t = DataType::parse(c.type);
    NDArray a = NDArray::empty({int64_t(c.values.size())}, t);
    for (size_t i = 0; i < c.values.size(); ++i) a.set(int64_t(i), c.values[i]);
    for (size_t i = 0; i < c.values.size(); ++i) {
      double expect = c.values[i];
      if (t == DataType::Float(32)) expect = double(float(expect));
      EXPECT_EQ(a.get(int64_t(i)), expect) << c.type << "[" << i << "]";
    }
  }
}

TEST(NDArray, SetConvertsLikeACast) {
  NDArray b = NDArray::from_vector({0.0, 2.0, -0.5}, {3}, DataType::Bool());
  EXPECT_EQ(b.get(0), 0.0);
  EXPECT_EQ(b.get(1), 1.0);
  EXPECT_EQ(b.get(2), 1.0);
  EXPECT_EQ(b.data<uint8_t>()[1], 1);
  NDArray i = NDArray::from_vector({2.9, -2.9}, {2}, DataType::Int(32));
  EXPECT_EQ(i.data<int32_t>()[0], 2);
  EXPECT_EQ(i.data<int32_t>()[1], -2);
  NDArray f = NDArray::from_vector({1.0, 2.0, 3.0, 4.0}, {2, 2}, DataType::Float(32));
  EXPECT_EQ(f.data<float>()[3], 4.0f);
  EXPECT_THROW(NDArray::from_vector({1.0, 2.0}, {3}, DataType::Float(32)), loom::Error);
  EXPECT_THROW(f.get(4), loom::Error);
  EXPECT_THROW(f.set(-1, 0.0), loom::Error);
}

TEST(NDArray, Float16Conversion) {
  using loom::runtime::float_to_half;
  using loom::runtime::half_to_float;
  EXPECT_EQ(float_to_half(1.0f), 0x3c00);
  EXPECT_EQ(float_to_half(-2.0f), 0xc000);
  EXPECT_EQ(float_to_half(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_half(65520.0f), 0x7c00);  // rounds up to infinity
  EXPECT_EQ(float_to_half(65519.0f), 0x7bff);
  EXPECT_EQ(float_to_half(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_TRUE(std::isnan(half_to_float(float_to_half(std::nanf("")))));
  EXPECT_EQ(float_to_half(5.9604644775390625e-08f), 0x0001);  // smallest subnormal
  EXPECT_EQ(float_to_half(2.98023223876953125e-08f), 0x0000);  // half of it: tie to even (0)
  EXPECT_EQ(float_to_half(8.94069671630859375e-08f), 0x0002);   // 1.5 ulp: tie to even (2)
  // 1 + 2^-11 is halfway between 1 and the next half; ties to even gives 1.
  EXPECT_EQ(float_to_half(1.0f + 1.0f / 2048), 0x3c00);
  EXPECT_EQ(float_to_half(1.0f + 3.0f / 2048), 0x3c02);
  // Every finite half converts to float and back unchanged.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) continue;  // NaN
    ASSERT_EQ(float_to_half(half_to_float(uint16_t(h))), h) << std::hex << h;
  }
}

TEST(NDArray, FillRandomIsDeterministicAndInRange) {
  NDArray a = NDArray::empty({1000}, DataType::Float(32));
  NDArray b = NDArray::empty({1000}, DataType::Float(32));
  a.fill_random(42, -2.0, 3.0);
  b.fill_random(42, -2.0, 3.0);
  EXPECT_EQ(std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()), 0);
  bool any_neg = false;
  for (int64_t i = 0; i < a.numel(); ++i) {
    EXPECT_GE(a.get(i), -2.0);
    EXPECT_LT(a.get(i), 3.0);
    any_neg |= a.get(i) < 0;
  }
  EXPECT_TRUE(any_neg);
  b.fill_random(43, -2.0, 3.0);
  EXPECT_NE(std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()), 0);

  NDArray i = NDArray::empty({1000}, DataType::Int(8));
  i.fill_random(1, -3, 3);
  bool seen_lo = false, seen_hi = false;
  for (int64_t k = 0; k < i.numel(); ++k) {
    double v = i.get(k);
    EXPECT_EQ(v, std::floor(v));
    EXPECT_GE(v, -3);
    EXPECT_LE(v, 3);
    seen_lo |= v == -3;
    seen_hi |= v == 3;
  }
  EXPECT_TRUE(seen_lo && seen_hi);

  NDArray bl = NDArray::empty({200}, DataType::Bool());
  bl.fill_random(7);
  int ones = 0;
  for (int64_t k = 0; k < bl.numel(); ++k) {
    EXPECT_TRUE(bl.get(k) == 0 || bl.get(k) == 1);
    ones += int(bl.get(k));
  }
  EXPECT_GT(ones, 0);
  EXPECT_LT(ones, 200);

  NDArray h = NDArray::empty({100}, DataType::Float(16));
  h.fill_random(3);
  for (int64_t k = 0; k < h.numel(); ++k) EXPECT_LE(std::abs(h.get(k)), 1.0);
}

TEST(NDArray, CopyIsDeepAndCopyFromChecks) {
  NDArray a = NDArray::from_vector({1, 2, 3, 4, 5, 6}, {2, 3}, DataType::Float(64));
  NDArray shared = a;
  NDArray deep = a.copy();
  a.set(0, 100);
  EXPECT_EQ(shared.get(0), 100);
  EXPECT_EQ(deep.get(0), 1);
  EXPECT_NE(deep.raw_data(), a.raw_data());
  EXPECT_EQ(deep.shape(), a.shape());

  NDArray c = NDArray::empty({2, 3}, DataType::Float(64));
  c.copy_from(a);
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(c.get(i), a.get(i));
  EXPECT_THROW(c.copy_from(NDArray::empty({3, 2}, DataType::Float(64))), loom::Error);
  EXPECT_THROW(c.copy_from(NDArray::empty({2, 3}, DataType::Float(32))), loom::Error);
  EXPECT_THROW(c.copy_from(NDArray()), loom::Error);
}

TEST(NDArray, UndefinedArrayThrows) {
  NDArray a;
  EXPECT_FALSE(a.defined());
  EXPECT_THROW(a.dltensor(), loom::Error);
  EXPECT_THROW(a.shape(), loom::Error);
}
