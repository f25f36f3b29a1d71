// Vector math (codegen/llvm/vector_math.cc): float32 transcendentals of vector code as glibc
// libmvec calls at the widths the target's features allow, measured against a double-precision
// reference in ulps over dense sweeps of each function's range and its special values.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>

#include "loom/codegen/check_target.h"
#include "loom/loom.h"
#include "loom/lower/vector_access.h"

namespace loom {
namespace {

using runtime::Module;
using runtime::NDArray;

const DataType f32 = DataType::Float(32);
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kMax = std::numeric_limits<float>::max();
constexpr float kMinNormal = std::numeric_limits<float>::min();
constexpr float kDenormMin = std::numeric_limits<float>::denorm_min();

/// Floats in increasing order as consecutive integers (-0 and +0 both 0).
int64_t ordinal(float f) {
  const int32_t bits = std::bit_cast<int32_t>(f);
  return bits >= 0 ? int64_t(bits) : -int64_t(bits & 0x7fffffff);
}
float from_ordinal(int64_t o) {
  return o >= 0 ? std::bit_cast<float>(uint32_t(o)) : std::bit_cast<float>(uint32_t(-o) | 0x80000000u);
}

/// n floats from lo to hi evenly spaced in ordinal (every binade alike) and n evenly spaced
/// in value.
std::vector<float> sweep(float lo, float hi, int n) {
  std::vector<float> out;
  const int64_t a = ordinal(lo), b = ordinal(hi);
  for (int i = 0; i < n; ++i) out.push_back(from_ordinal(a + (b - a) * i / (n - 1)));
  for (int i = 0; i < n; ++i) out.push_back(float(double(lo) + (double(hi) - double(lo)) * i / (n - 1)));
  return out;
}

/// The error of float `got` against the exact value `want` in units of float's last place at
/// `want` (2^-149 among the denormals). Infinities are compared as the float next to
/// FLT_MAX: a result that overflows where `want` rounds to FLT_MAX is 1 ulp off. NaN against
/// a number, or a number against NaN, is infinitely wrong.
double ulp_error(float got, double want) {
  if (std::isnan(want) || std::isnan(got)) return std::isnan(want) && std::isnan(got) ? 0 : INFINITY;
  const float rounded = float(want);
  if (std::isinf(got) || std::isinf(rounded)) return double(std::llabs(ordinal(got) - ordinal(rounded)));
  int e = 0;
  std::frexp(want, &e);  // |want| in [2^(e-1), 2^e)
  const double ulp = want == 0 ? std::ldexp(1.0, -149) : std::ldexp(1.0, std::max(e - 1, -126) - 23);
  return std::fabs(double(got) - want) / ulp;
}

/// Whether this host's libmvec exports `symbol` (exp2f, log2f, tanhf and erff need glibc
/// 2.35); where it does not, the JIT's code keeps libm per lane for that function.
bool host_libmvec_has(const std::string& symbol) {
  static void* lib = dlopen("libmvec.so.1", RTLD_NOW | RTLD_LOCAL);
  return lib != nullptr && dlsym(lib, symbol.c_str()) != nullptr;
}

double sigmoid_ref(double x) { return x >= 0 ? 1 / (1 + std::exp(-x)) : std::exp(x) / (1 + std::exp(x)); }

/// A function under test: its intrinsic, its reference, its inputs (two for pow) and the
/// bound asserted on every width.
struct Function {
  std::string name;
  double bound_ulp;
  double (*ref)(double, double);
  std::vector<float> x, y;
};

std::vector<float> with_specials(std::vector<float> v, std::initializer_list<float> edges) {
  for (float s : {0.0f, -0.0f, kInf, -kInf, kNaN, kDenormMin, -kDenormMin, kMinNormal - kDenormMin,
                  -(kMinNormal - kDenormMin), kMinNormal, -kMinNormal, kMax, -kMax, 1.0f, -1.0f, 0.5f, -0.5f})
    v.push_back(s);
  for (float e : edges) {
    v.push_back(e);
    v.push_back(std::nextafter(e, kInf));
    v.push_back(std::nextafter(e, -kInf));
  }
  return v;
}

/// Every function the code generator computes with libmvec, with the bound asserted on
/// every width: glibc's manual claims at most 4 ulp for libmvec; measured maxima on this
/// suite are printed by the test (docs/benchmarks.md, vector math, lists them).
const std::vector<Function>& functions() {
  static const std::vector<Function> fs = [] {
    constexpr int n = 1 << 16;
    std::vector<Function> v;
    auto unary = [&](std::string name, double bound, double (*ref)(double, double), std::vector<float> x) {
      v.push_back({std::move(name), bound, ref, std::move(x), {}});
    };
    // Past the overflow (88.72) and the last denormal (-103.97) of e^x.
    unary("exp", 4, [](double x, double) { return std::exp(x); },
          with_specials(sweep(-110.0f, 100.0f, n), {88.72283935546875f, -87.33654022216797f, -103.27892303466797f,
                                                    -103.97207641601562f, -104.0f, 1e-10f}));
    unary("exp2", 4, [](double x, double) { return std::exp2(x); },
          with_specials(sweep(-160.0f, 140.0f, n), {128.0f, -126.0f, -149.0f, -150.0f, 0.5f}));
    unary("log", 4, [](double x, double) { return std::log(x); },
          with_specials(sweep(kDenormMin, kMax, n), {1.0f, 2.0f, 0.999999f, 1e-40f}));
    unary("log2", 4, [](double x, double) { return std::log2(x); },
          with_specials(sweep(kDenormMin, kMax, n), {1.0f, 2.0f, 0.999999f, 1e-40f}));
    unary("sin", 4, [](double x, double) { return std::sin(x); },
          with_specials(sweep(-kMax, kMax, n), {3.14159274f, 1e5f, 1e20f, 6.2831855f}));
    unary("cos", 4, [](double x, double) { return std::cos(x); },
          with_specials(sweep(-kMax, kMax, n), {1.57079637f, 1e5f, 1e20f, 4.712389f}));
    unary("tanh", 4, [](double x, double) { return std::tanh(x); },
          with_specials(sweep(-kMax, kMax, n), {9.010913f, -9.010913f, 1e-20f, 0.55f, 20.0f}));
    unary("erf", 4, [](double x, double) { return std::erf(x); },
          with_specials(sweep(-kMax, kMax, n), {3.9192059f, -3.9192059f, 1e-20f, 0.84375f, 6.0f}));
    unary("sigmoid", 4, [](double x, double) { return sigmoid_ref(x); },
          with_specials(sweep(-kMax, kMax, n), {-88.0f, -103.9f, -87.3f, 16.635532f, 88.7f, 1e-20f}));
    // pow: bases over 2^-20..2^20 and 0..4 against exponents that keep most results finite,
    // then the special cases of C's pow.
    Function p{"pow", 4, [](double x, double y) { return std::pow(x, y); }, {}, {}};
    std::vector<float> base = sweep(std::ldexp(1.0f, -20), std::ldexp(1.0f, 20), n / 2);
    std::vector<float> base2 = sweep(0.0f, 4.0f, n / 2);
    base.insert(base.end(), base2.begin(), base2.end());
    for (size_t i = 0; i < base.size(); ++i) {
      p.x.push_back(base[i]);
      const double t = double((i * 2654435761u) % 100003) / 100002.0;  // scattered over [0, 1]
      p.y.push_back(i < base.size() / 2 ? float(-6 + 12 * t) : float(-40 + 80 * t));
    }
    const std::pair<float, float> special[] = {
        {0, 0},       {-0.0f, -1}, {0, -1},   {0, 3},     {-2, 3},   {-2, 0.5f}, {-2, -2},  {kInf, -1},
        {-kInf, 3},   {1, kNaN},   {kNaN, 0}, {-1, kInf}, {2, 128},  {2, 127},   {2, -149}, {2, -150},
        {0.5f, kInf}, {2, -kInf},  {kNaN, 1}, {10, 38},   {10, 39},  {-8, 1.0f / 3}, {1.0000001f, 1e9f},
    };
    for (auto [x, y] : special) {
      p.x.push_back(x);
      p.y.push_back(y);
    }
    v.push_back(std::move(p));
    return v;
  }();
  return fs;
}

te::Expr apply(const std::string& name, te::Expr x, te::Expr y) {
  if (name == "exp") return te::exp(x);
  if (name == "log") return te::log(x);
  if (name == "tanh") return te::tanh(x);
  if (name == "erf") return te::erf(x);
  if (name == "sigmoid") return te::sigmoid(x);
  if (name == "pow") return te::pow(x, y);
  return te::call(x.dtype(), name, {x});
}

/// One function with every Function's stage: inputs of `n` (rounded up to `lanes`) floats
/// each, their results vectorized by `lanes`.
struct Kernel {
  Module module;
  std::vector<te::Tensor> args;  // per function: x, (y,) out
};

Kernel build_all(const Target& target, int lanes, int64_t n) {
  std::vector<te::Tensor> args, outs;
  for (const Function& f : functions()) {
    te::Tensor x = te::placeholder({n}, f32, f.name + "_x");
    te::Tensor y = te::placeholder({n}, f32, f.name + "_y");
    const bool binary = !f.y.empty();
    te::Tensor out = te::compute({n}, [&](te::Var i) { return apply(f.name, x(i), binary ? y(i) : te::Expr()); },
                                 f.name + "_out");
    args.push_back(x);
    if (binary) args.push_back(y);
    args.push_back(out);
    outs.push_back(out);
  }
  Schedule s = create_schedule(outs);
  for (const te::Tensor& out : outs) {
    auto [o, i] = s[out].split(s[out].axis(0), lanes);
    s[out].vectorize(i);
  }
  return {build(s, args, target, "vector_math"), args};
}

/// Runs every function on its inputs (repeated to `n`) and returns, per function, the largest
/// error in ulps and the input where it occurs.
struct Worst {
  double ulp = 0;
  float x = 0, y = 0, got = 0;
};
std::map<std::string, Worst> measure(const Kernel& k, int64_t n) {
  std::vector<NDArray> arrays;
  std::vector<const Function*> order;
  for (const Function& f : functions()) {
    auto fill = [&](const std::vector<float>& v) {
      NDArray a = NDArray::empty({n}, f32);
      for (int64_t i = 0; i < n; ++i) a.data<float>()[i] = v[size_t(i) % v.size()];
      arrays.push_back(a);
    };
    fill(f.x);
    if (!f.y.empty()) fill(f.y);
    arrays.push_back(NDArray::empty({n}, f32));
    order.push_back(&f);
  }
  std::vector<DLTensor*> call_args;
  for (const NDArray& a : arrays) call_args.push_back(a.dltensor());
  k.module.get_function("vector_math").call(call_args);
  std::map<std::string, Worst> out;
  size_t a = 0;
  for (const Function* f : order) {
    const float* x = arrays[a++].data<float>();
    const float* y = f->y.empty() ? nullptr : arrays[a++].data<float>();
    const float* r = arrays[a++].data<float>();
    Worst w;
    for (int64_t i = 0; i < n; ++i) {
      const double want = f->ref(x[i], y ? y[i] : 0.0);
      const double e = ulp_error(r[i], want);
      if (!(e <= w.ulp)) w = {e, x[i], y ? y[i] : 0.0f, r[i]};
    }
    out[f->name] = w;
  }
  return out;
}

size_t longest_input() {
  size_t n = 0;
  for (const Function& f : functions()) n = std::max(n, f.x.size());
  return n;
}

struct Width {
  std::string target;
  int lanes;
  std::string variant;  // the libmvec ISA letter and lanes the calls use, "" for none
};

/// Each width by target features, all of which run on an AVX-512 host; a host without a
/// width's features skips it.
const Width kWidths[] = {
    {"llvm -mcpu=x86-64-v4", 16, "eN16"},       // AVX-512F
    {"llvm -mcpu=x86-64-v3", 8, "dN8"},         // AVX2
    {"llvm -mcpu=sandybridge", 8, "cN8"},       // AVX without AVX2
    {"llvm -mcpu=x86-64", 4, "bN4"},            // SSE2
    {"llvm -mcpu=x86-64-v3 -vector_math=none", 8, ""},  // libm per lane, as before
};

class VectorMathWidth : public testing::TestWithParam<Width> {};

TEST_P(VectorMathWidth, EveryFunctionWithinItsBoundOverDenseSweepsAndSpecialValues) {
#if !(defined(__x86_64__) && defined(__linux__))
  GTEST_SKIP() << "libmvec is x86-64 GNU/Linux only";
#endif
  const Width& w = GetParam();
  const Target target(w.target);
  if (std::string why = codegen::host_incompatibility(target); !why.empty()) GTEST_SKIP() << why;
  const int64_t n = int64_t((longest_input() + 15) / 16 * 16);
  Kernel k = build_all(target, w.lanes, n);
  const std::string ir = k.module.source("ll");
  for (const Function& f : functions()) {
    const std::string libm = f.name == "sigmoid" ? "expf" : f.name + "f";
    const std::string symbol = fmt::format("_ZGV{}{}_{}", w.variant, f.y.empty() ? "v" : "vv", libm);
    if (!w.variant.empty() && host_libmvec_has(symbol))
      EXPECT_NE(ir.find("@" + symbol + "("), std::string::npos) << f.name << ": no call of " << symbol;
  }
  if (w.variant.empty()) EXPECT_EQ(ir.find("@_ZGV"), std::string::npos) << "-vector_math=none calls libmvec";
  for (const auto& [name, worst] : measure(k, n)) {
    const Function& f = *std::find_if(functions().begin(), functions().end(), [&](const Function& g) { return g.name == name; });
    std::cout << fmt::format("[ ulp ] {:<40} {:<8} max {:.3f} ulp at x={:a} y={:a} (got {:a})\n", w.target, name,
                             worst.ulp, worst.x, worst.y, worst.got);
    EXPECT_LE(worst.ulp, f.bound_ulp) << name << " on " << w.target << ": x=" << worst.x << " y=" << worst.y
                                      << " got " << worst.got << " want " << f.ref(worst.x, worst.y);
  }
}

std::string width_name(const testing::TestParamInfo<Width>& info) {
  static const char* const names[] = {"Avx512_16", "Avx2_8", "Avx_8", "Sse2_4", "None"};
  return names[info.index];
}
INSTANTIATE_TEST_SUITE_P(Widths, VectorMathWidth, testing::ValuesIn(kWidths), width_name);

/// Lanes that are no width of the target: chunks of the widest variant, then one narrower or
/// padded call; every lane must still be right, including a tail the loop computes alone.
TEST(VectorMath, LanesThatAreNotAWidthAreChunkedOrPadded) {
#if !(defined(__x86_64__) && defined(__linux__))
  GTEST_SKIP() << "libmvec is x86-64 GNU/Linux only";
#endif
  struct Case {
    std::string target;
    int lanes;
    std::vector<std::string> calls;  // symbols the code calls
  };
  const Case cases[] = {
      {"llvm -mcpu=x86-64-v4", 12, {"_ZGVeN16v_expf"}},
      {"llvm -mcpu=x86-64-v4", 20, {"_ZGVeN16v_expf", "_ZGVbN4v_expf"}},
      {"llvm -mcpu=x86-64-v4", 32, {"_ZGVeN16v_expf"}},
      {"llvm -mcpu=x86-64-v3", 3, {"_ZGVbN4v_expf"}},
      {"llvm -mcpu=x86-64-v3", 6, {"_ZGVdN8v_expf"}},
      {"llvm -mcpu=x86-64-v3", 12, {"_ZGVdN8v_expf", "_ZGVbN4v_expf"}},
      {"llvm -mcpu=x86-64", 6, {"_ZGVbN4v_expf"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.target + ", lanes " + std::to_string(c.lanes));
    const Target target(c.target);
    const int64_t n = 101;  // not a multiple of any lanes above
    te::Tensor x = te::placeholder({n}, f32, "x");
    te::Tensor out = te::compute({n}, [&](te::Var i) { return te::exp(x(i)) + te::tanh(x(i)); }, "out");
    Schedule s = create_schedule({out});
    auto [o, i] = s[out].split(s[out].axis(0), c.lanes);
    s[out].vectorize(i);
    Module m = build(s, {x, out}, target, "f");
    const std::string ir = m.source("ll");
    for (const std::string& sym : c.calls) EXPECT_NE(ir.find("@" + sym + "("), std::string::npos) << sym << "\n" << ir;
    if (!codegen::host_incompatibility(target).empty()) continue;
    NDArray a = NDArray::empty({n}, f32), r = NDArray::empty({n}, f32);
    for (int64_t j = 0; j < n; ++j) a.data<float>()[j] = float(j - 50) / 7.0f;
    m.get_function("f")(a, r);
    for (int64_t j = 0; j < n; ++j) {
      const double xv = a.data<float>()[j];
      const double want = std::exp(xv) + std::tanh(xv);
      EXPECT_NEAR(r.data<float>()[j], want, 4e-7 * std::fabs(want) + 1e-6) << "lane " << j << " x=" << xv;
    }
  }
}

TEST(VectorMath, OtherTriplesFloat64AndNoneKeepLibmPerLane) {
  te::Tensor x = te::placeholder({64}, f32, "x");
  te::Tensor xd = te::placeholder({64}, DataType::Float(64), "xd");
  te::Tensor out = te::compute({64}, [&](te::Var i) { return te::exp(x(i)); }, "out");
  te::Tensor outd = te::compute({64}, [&](te::Var i) { return te::exp(xd(i)); }, "outd");
  Schedule s = create_schedule({out, outd});
  for (const te::Tensor& t : {out, outd}) {
    auto [o, i] = s[t].split(s[t].axis(0), 8);
    s[t].vectorize(i);
  }
  for (const char* t : {"llvm -mtriple=aarch64-linux-gnu", "llvm -mtriple=x86_64-apple-darwin",
                        "llvm -mtriple=x86_64-pc-windows-msvc", "llvm -vector_math=none"}) {
    SCOPED_TRACE(t);
    EXPECT_EQ(lowering::vector_math_library(Target(t)), "");
    Module m = build(s, {x, xd, out, outd}, Target(t), "f");
    EXPECT_EQ(m.source("ll").find("_ZGV"), std::string::npos) << m.source("ll");
  }
#if defined(__x86_64__) && defined(__linux__)
  // float64 stays one libm call per lane on x86-64 too (loom calls libmvec for float32 only).
  Module m = build(s, {x, xd, out, outd}, Target("llvm -mcpu=x86-64-v3"), "f");
  const std::string ir = m.source("ll");
  EXPECT_NE(ir.find("@_ZGVdN8v_expf("), std::string::npos) << ir;
  EXPECT_EQ(ir.find("_ZGVdN4v_exp("), std::string::npos) << ir;
#endif
}

/// A loop the schedule leaves scalar: LLVM's loop vectorizer finds libmvec through the
/// TargetLibraryInfo mapping (add_vector_math_mappings), for every length, tail included.
TEST(VectorMath, LoopVectorizerCallsLibmvecForAScalarLoop) {
#if !(defined(__x86_64__) && defined(__linux__))
  GTEST_SKIP() << "libmvec is x86-64 GNU/Linux only";
#endif
  const Target target("llvm -mcpu=x86-64-v3");
  if (std::string why = codegen::host_incompatibility(target); !why.empty()) GTEST_SKIP() << why;
  for (int64_t n : {int64_t(1000), int64_t(1003)}) {
    SCOPED_TRACE(n);
    te::Tensor x = te::placeholder({n}, f32, "x");
    te::Tensor out = te::compute({n}, [&](te::Var i) { return te::exp(x(i)); }, "out");
    Schedule s = create_schedule({out});
    Module m = build(s, {x, out}, target, "f");
    const std::string ir = m.source("ll");
    EXPECT_NE(ir.find("@_ZGVdN8v_expf("), std::string::npos) << ir;
    NDArray a = NDArray::empty({n}, f32), r = NDArray::empty({n}, f32);
    for (int64_t j = 0; j < n; ++j) a.data<float>()[j] = float(j - n / 2) / 16.0f;
    m.get_function("f")(a, r);
    for (int64_t j = 0; j < n; ++j) {
      const double xv = a.data<float>()[j];
      EXPECT_LE(ulp_error(r.data<float>()[j], std::exp(xv)), 4) << "x=" << xv;
    }
    // -vector_math=none: the vectorizer has no mapping and keeps expf per element.
    Module none = build(s, {x, out}, Target("llvm -mcpu=x86-64-v3 -vector_math=none"), "f");
    EXPECT_EQ(none.source("ll").find("_ZGV"), std::string::npos);
  }
}

TEST(VectorMath, TargetOptionIsChecked) {
  EXPECT_EQ(lowering::vector_math_library(Target("llvm -mtriple=x86_64-linux-gnu")), "libmvec");
  EXPECT_EQ(lowering::vector_math_library(Target("llvm -mtriple=x86_64-unknown-linux-gnu -vector_math=libmvec")),
            "libmvec");
  EXPECT_EQ(lowering::vector_math_library(Target("llvm -mtriple=x86_64-linux-gnux32")), "");
  EXPECT_EQ(lowering::vector_math_library(Target("llvm -mtriple=x86_64-linux-musl")), "");
  EXPECT_EQ(lowering::vector_math_library(Target("cuda")), "");
  // x86-64 without SSE2 has no vector registers for libmvec's calling convention.
  EXPECT_EQ(lowering::vector_math_library(Target("llvm -mtriple=x86_64-linux-gnu -mattr=-sse2")), "");
  EXPECT_EQ(lowering::vector_math_library(Target("llvm -mtriple=x86_64-linux-gnu -mattr=+avx2,-sse")), "");
  try {
    Target t("llvm -vector_math=svml");
    FAIL() << "expected loom::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("-vector_math must be libmvec"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace loom
