// The trigonometric intrinsics beyond sin and cos (tan, asin, acos, atan, sinh, cosh, asinh,
// acosh, atanh): compiled by the LLVM code generator for float32 and float64, scalar and
// vectorized (8 lanes over 101 elements, a tail included), against the C library; and the
// CUDA C code generator's spelling of each (the float, double and half forms).
#include <gtest/gtest.h>

#include <cmath>

#include "loom/codegen/cuda.h"
#include "loom/loom.h"

namespace loom {
namespace {

using runtime::Module;
using runtime::NDArray;

struct Fn {
  const char* name;
  double (*f)(double);
  double lo, hi;
};

const Fn kFns[] = {
    {"tan", [](double x) { return std::tan(x); }, -1.5, 1.5},
    {"asin", [](double x) { return std::asin(x); }, -1, 1},
    {"acos", [](double x) { return std::acos(x); }, -1, 1},
    {"atan", [](double x) { return std::atan(x); }, -20, 20},
    {"sinh", [](double x) { return std::sinh(x); }, -5, 5},
    {"cosh", [](double x) { return std::cosh(x); }, -5, 5},
    {"asinh", [](double x) { return std::asinh(x); }, -20, 20},
    {"acosh", [](double x) { return std::acosh(x); }, 1, 20},
    {"atanh", [](double x) { return std::atanh(x); }, -0.999, 0.999},
};

TEST(TrigIntrinsics, LlvmMatchesTheCLibrary) {
  const int64_t n = 101;
  for (const Fn& fn : kFns) {
    for (DataType t : {DataType::Float(32), DataType::Float(64)}) {
      for (int lanes : {1, 8}) {
        SCOPED_TRACE(std::string(fn.name) + " " + t.str() + " lanes " + std::to_string(lanes));
        te::Tensor x = te::placeholder({n}, t, "x");
        te::Tensor out = te::compute(
            {n}, [&](te::Var i) { return te::call(t, fn.name, {x(i)}); }, "out");
        Schedule s = create_schedule({out});
        if (lanes > 1) {
          auto [o, i] = s[out].split(s[out].axis(0), lanes);
          s[out].vectorize(i);
        }
        Module m = build(s, {x, out}, Target("llvm"), "f");
        NDArray a = NDArray::empty({n}, t), r = NDArray::empty({n}, t);
        for (int64_t j = 0; j < n; ++j) a.set(j, fn.lo + (fn.hi - fn.lo) * double(j) / double(n - 1));
        m.get_function("f")(a, r);
        const double tol = t.bits() == 32 ? 4e-6 : 1e-14;
        for (int64_t j = 0; j < n; ++j) {
          const double xv = a.get(j), want = fn.f(xv);
          if (std::isinf(want)) EXPECT_EQ(r.get(j), want) << "x=" << xv;
          else EXPECT_NEAR(r.get(j), want, tol * (1 + std::fabs(want))) << "x=" << xv;
        }
      }
    }
  }
}

TEST(TrigIntrinsics, CudaSpellsEachFunction) {
  for (const Fn& fn : kFns) {
    for (DataType t : {DataType::Float(32), DataType::Float(64), DataType::Float(16)}) {
      SCOPED_TRACE(std::string(fn.name) + " " + t.str());
      te::Tensor x = te::placeholder({256}, t, "x");
      te::Tensor out = te::compute(
          {256}, [&](te::Var i) { return te::call(t, fn.name, {x(i)}); }, "out");
      Schedule s = create_schedule({out});
      auto [bo, bi] = s[out].split(s[out].axis(0), 64);
      s[out].bind(bo, te::thread_axis("blockIdx.x"));
      s[out].bind(bi, te::thread_axis("threadIdx.x"));
      lowering::LoweredFunc f = lower(s, {x, out}, "f", lowering::LowerOptions{.target = Target("cuda")});
      const std::string src = codegen::cuda_source(f);
      const std::string call = t.bits() == 64 ? std::string(fn.name) + "(" : std::string(fn.name) + "f(";
      EXPECT_NE(src.find(call), std::string::npos) << src;
      if (t.bits() == 16) EXPECT_NE(src.find("__half2float("), std::string::npos) << src;
    }
  }
}

}  // namespace
}  // namespace loom
