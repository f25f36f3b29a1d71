// The quantization operators (quantize, dequantize, requantize) through the registry and
// te::evaluate against naive loops: per tensor and per channel, every quantized type's
// saturation, halves rounded to even, and the errors that name what is wrong.
#include <gtest/gtest.h>

#include <cmath>

#include "loom/te/evaluate.h"
#include "loom/te/op_registry.h"
#include "loom/te/ops.h"

namespace loom::te {
namespace {

using runtime::NDArray;

Tensor reg(const std::string& op, const std::vector<Tensor>& in, const std::string& dtype) {
  const ops::OpDef& d = ops::get_op(op);
  return d.compute(in, ops::normalize_attrs(d, {{"dtype", dtype}})).at(0);
}

NDArray filled(std::vector<int64_t> shape, DataType t, const std::function<double(int64_t)>& f) {
  NDArray a = NDArray::empty(shape, t);
  for (int64_t i = 0; i < a.numel(); ++i) a.set(i, f(i));
  return a;
}

TEST(QuantizeOps, QuantizePerChannelSaturatesAndRoundsHalvesToEven) {
  // x [2, 3, 5] with one scale and zero point per channel (axis 1): 3 does not divide 5.
  Tensor x = placeholder({2, 3, 5}, DataType::Float(32), "x"), s = placeholder({1, 3, 1}, DataType::Float(32), "s");
  NDArray xa = filled({2, 3, 5}, DataType::Float(32), [](int64_t i) { return (i - 15) * 7.25; });
  NDArray sa = filled({1, 3, 1}, DataType::Float(32), [](int64_t c) { return c == 0 ? 0.5 : c == 1 ? 2.0 : 0.25; });
  for (DataType t : {DataType::UInt(8), DataType::Int(8), DataType::Int(16), DataType::UInt(16)}) {
    SCOPED_TRACE(t.str());
    Tensor z = placeholder({1, 3, 1}, t, "z");
    NDArray za = filled({1, 3, 1}, t, [&](int64_t c) { return t.is_uint() ? 3.0 * c : -2.0 * c; });
    NDArray y = evaluate({reg("quantize", {x, s, z}, t.str())}, {{x, xa}, {s, sa}, {z, za}}).at(0);
    ASSERT_EQ(y.dtype(), t);
    const double lo = t == DataType::UInt(8) || t == DataType::UInt(16) ? 0 : t.bits() == 8 ? -128 : -32768;
    const double hi = t == DataType::UInt(8) ? 255 : t == DataType::Int(8) ? 127 : t == DataType::Int(16) ? 32767 : 65535;
    for (int64_t i = 0; i < xa.numel(); ++i) {
      const int64_t c = (i / 5) % 3;
      const double want = std::clamp(std::nearbyint(xa.get(i) / sa.get(c)) + za.get(c), lo, hi);
      EXPECT_EQ(y.get(i), want) << "element " << i;
    }
  }
  // Halves go to even: 2.5 -> 2, 3.5 -> 4, -2.5 -> -2.
  Tensor h = placeholder({3}, DataType::Float(32), "h"), one = placeholder({1}, DataType::Float(32), "one");
  Tensor zero = placeholder({1}, DataType::Int(8), "zero");
  NDArray got = evaluate({reg("quantize", {h, one, zero}, "int8")},
                         {{h, filled({3}, DataType::Float(32), [](int64_t i) { return i == 0 ? 2.5 : i == 1 ? 3.5 : -2.5; })},
                          {one, filled({1}, DataType::Float(32), [](int64_t) { return 1.0; })},
                          {zero, filled({1}, DataType::Int(8), [](int64_t) { return 0.0; })}})
                    .at(0);
  EXPECT_EQ(got.get(0), 2);
  EXPECT_EQ(got.get(1), 4);
  EXPECT_EQ(got.get(2), -2);
}

TEST(QuantizeOps, DequantizeAndRequantize) {
  Tensor q = placeholder({4, 7}, DataType::UInt(8), "q"), s = placeholder({4, 1}, DataType::Float(32), "s");
  Tensor z = placeholder({1}, DataType::UInt(8), "z");
  NDArray qa = filled({4, 7}, DataType::UInt(8), [](int64_t i) { return (i * 37) % 256; });
  NDArray sa = filled({4, 1}, DataType::Float(32), [](int64_t r) { return 0.01 * (r + 1); });
  NDArray za = filled({1}, DataType::UInt(8), [](int64_t) { return 128.0; });
  NDArray y = evaluate({reg("dequantize", {q, s, z}, "float32")}, {{q, qa}, {s, sa}, {z, za}}).at(0);
  for (int64_t i = 0; i < qa.numel(); ++i)
    EXPECT_FLOAT_EQ(float(y.get(i)), (float(qa.get(i)) - 128.0f) * float(sa.get(i / 7))) << i;

  Tensor acc = placeholder({2, 3, 5}, DataType::Int(32), "acc"), m = placeholder({1, 3, 1}, DataType::Float(32), "m");
  Tensor yz = placeholder({1}, DataType::Int(8), "yz");
  NDArray aa = filled({2, 3, 5}, DataType::Int(32), [](int64_t i) { return (i - 13) * 1021.0; });
  NDArray ma = filled({1, 3, 1}, DataType::Float(32), [](int64_t c) { return 0.003 * (c + 1); });
  NDArray yza = filled({1}, DataType::Int(8), [](int64_t) { return -5.0; });
  NDArray r = evaluate({reg("requantize", {acc, m, yz}, "int8")}, {{acc, aa}, {m, ma}, {yz, yza}}).at(0);
  for (int64_t i = 0; i < aa.numel(); ++i) {
    const float prod = float(aa.get(i)) * float(ma.get((i / 5) % 3));
    EXPECT_EQ(r.get(i), std::clamp(std::nearbyint(double(prod)) - 5.0, -128.0, 127.0)) << i;
  }
}

TEST(QuantizeOps, ErrorsNameWhatIsWrong) {
  Tensor x = placeholder({4, 6}, DataType::Float(32), "x"), s = placeholder({5}, DataType::Float(32), "s");
  Tensor z = placeholder({1}, DataType::UInt(8), "z");
  try {
    reg("quantize", {x, s, z}, "uint8");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("scale 5 does not broadcast to the data's shape 4x6"), std::string::npos)
        << e.what();
  }
  Tensor s1 = placeholder({1}, DataType::Float(32), "s1");
  EXPECT_THROW(reg("quantize", {x, s1, z}, "int32"), Error);
  EXPECT_THROW(reg("dequantize", {x, s1, z}, "float32"), Error);  // data must be integers
  Tensor acc = placeholder({4}, DataType::Int(64), "acc");
  EXPECT_THROW(reg("requantize", {acc, s1, z}, "uint8"), Error);  // the accumulator must be int32
}

}  // namespace
}  // namespace loom::te
