// The LLVM CPU code generator on hand-written loop IR: every function goes through
// make_packed_api, is compiled and JIT-linked, run on NDArrays and checked element-wise.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "loom/codegen/build.h"
#include "loom/lower/passes.h"
#include "loom/runtime/c_runtime_api.h"
#include "loom/runtime/ndarray.h"

namespace loom {
namespace {

using lowering::BufferArg;
using lowering::ForKind;
using lowering::LoweredFunc;
using lowering::make_stmt;
using lowering::Stmt;
using runtime::NDArray;
using te::Expr;
using te::Var;

const DataType f32 = DataType::Float(32);
const DataType i32 = DataType::Int(32);

BufferArg buffer(const std::string& name, DataType t, std::vector<int64_t> shape) {
  BufferArg a;
  a.name = name;
  a.handle = Var(name + "_handle", DataType::Handle());
  a.data = Var(name, DataType::Handle());
  a.dtype = t;
  for (int64_t s : shape) a.shape.push_back(te::make_const(DataType::Int(32), s));
  return a;
}

Expr load(const BufferArg& a, Expr index, int lanes = 1) {
  return te::make<te::LoadNode>(a.dtype.with_lanes(lanes), a.data, std::move(index), Expr());
}
Stmt store(const BufferArg& a, Expr value, Expr index, Expr pred = Expr()) {
  return make_stmt<lowering::StoreNode>(a.data, std::move(value), std::move(index), std::move(pred));
}
Stmt loop(const Var& v, Expr extent, Stmt body, ForKind kind = ForKind::kSerial) {
  return make_stmt<lowering::ForNode>(v, Expr(0), std::move(extent), kind, std::move(body));
}
Expr ramp(Expr base, int stride, int lanes) { return te::make<te::RampNode>(std::move(base), Expr(stride), lanes); }
template <te::ExprKind K>
Expr bin(DataType t, Expr a, Expr b) {
  return te::make<te::BinaryNode<K>>(t, std::move(a), std::move(b));
}
Expr intrin(DataType t, const std::string& name, std::vector<Expr> args) {
  return te::make<te::CallNode>(t, name, std::move(args));
}

runtime::Module build(const std::string& name, std::vector<BufferArg> args, Stmt body,
                      const Target& target = Target("llvm")) {
  LoweredFunc f;
  f.name = name;
  f.args = std::move(args);
  f.body = std::move(body);
  return codegen::build({lowering::make_packed_api(f)}, target);
}

NDArray filled(std::vector<int64_t> shape, DataType t, std::function<double(int64_t)> fn) {
  NDArray a = NDArray::empty(std::move(shape), t);
  for (int64_t i = 0; i < a.numel(); ++i) a.set(i, fn(i));
  return a;
}

/// C[i] = A[i] + B[i] over n elements, with the loop of the given kind.
runtime::Module vector_add(int64_t n, ForKind kind, const std::string& name = "vadd") {
  BufferArg A = buffer("A", f32, {n}), B = buffer("B", f32, {n}), C = buffer("C", f32, {n});
  Var i("i");
  Stmt body = loop(i, Expr(int(n)), store(C, bin<te::ExprKind::Add>(f32, load(A, i), load(B, i)), i), kind);
  return build(name, {A, B, C}, body);
}

TEST(Codegen, VectorAdd) {
  const int64_t n = 1003;
  runtime::Module m = vector_add(n, ForKind::kSerial);
  NDArray a = filled({n}, f32, [](int64_t i) { return 0.5 * double(i); });
  NDArray b = filled({n}, f32, [](int64_t i) { return 1.0 - double(i); });
  NDArray c = filled({n}, f32, [](int64_t) { return 0.0; });
  m.get_function("vadd")(a, b, c);
  for (int64_t i = 0; i < n; ++i) ASSERT_FLOAT_EQ(c.data<float>()[i], a.data<float>()[i] + b.data<float>()[i]) << i;

  EXPECT_EQ(m->type_key(), "llvm");
  EXPECT_EQ(m.function_names(), std::vector<std::string>{"vadd"});
  std::string ll = m.source("ll");
  EXPECT_NE(ll.find("define"), std::string::npos);
  EXPECT_NE(ll.find("__loom_packed_vadd"), std::string::npos);
  EXPECT_NE(m.source("asm").find("vadd"), std::string::npos);
  auto info = nlohmann::json::parse(m.info_json());
  ASSERT_EQ(info["functions"].size(), 1u);
  EXPECT_EQ(info["functions"][0]["name"], "vadd");
  EXPECT_EQ(info["functions"][0]["args"][2]["name"], "C");
  EXPECT_EQ(info["functions"][0]["args"][2]["dtype"], "float32");
  EXPECT_EQ(info["functions"][0]["args"][2]["shape"][0], n);
  EXPECT_EQ(info["target"], "llvm");
  EXPECT_TRUE(info.contains("version"));
  // export_library works now (tests/codegen/export_test.cc covers it); a bad path is an Error.
  EXPECT_THROW(m.export_library("/nonexistent-dir/loom_codegen_test.so"), Error);
  EXPECT_THROW(m.get_function("nope"), Error);
}

TEST(Codegen, ParallelLoopWithCapturedValues) {
  // B[i] = A[i] * scale + offset, parallel over i, where scale and offset are let-bound
  // outside the loop and so must travel through the closure.
  const int64_t n = 10007;
  BufferArg A = buffer("A", f32, {n}), B = buffer("B", f32, {n});
  Var i("i"), scale("scale", f32), offset("offset", i32);
  Expr value = bin<te::ExprKind::Add>(f32, bin<te::ExprKind::Mul>(f32, load(A, i), scale), te::cast(f32, offset));
  Stmt body = make_stmt<lowering::LetStmtNode>(
      scale, Expr(3.0f),
      make_stmt<lowering::LetStmtNode>(offset, Expr(7), loop(i, Expr(int(n)), store(B, value, i), ForKind::kParallel)));
  runtime::Module m = build("par", {A, B}, body);
  EXPECT_NE(m.source("ll").find("loom_parallel_launch"), std::string::npos);
  NDArray a = filled({n}, f32, [](int64_t i) { return double(i % 97) - 40.0; });
  NDArray b = filled({n}, f32, [](int64_t) { return -1.0; });
  m.get_function("par")(a, b);
  for (int64_t k = 0; k < n; ++k) ASSERT_FLOAT_EQ(b.data<float>()[k], a.data<float>()[k] * 3.0f + 7.0f) << k;
}

TEST(Codegen, NestedParallelRunsSerialAndErrorsPropagate) {
  // Outer parallel loop, inner "parallel" loop (runs serial), and an assert inside the
  // parallel body that fails for one row.
  const int64_t rows = 37, cols = 19;
  BufferArg A = buffer("A", f32, {rows * cols}), B = buffer("B", f32, {rows * cols});
  Var r("r"), c("c");
  Expr idx = r * Expr(int(cols)) + c;
  Stmt inner = loop(c, Expr(int(cols)), store(B, bin<te::ExprKind::Mul>(f32, load(A, idx), Expr(2.0f)), idx), ForKind::kParallel);
  Stmt checked = make_stmt<lowering::AssertStmtNode>(load(A, r * Expr(int(cols))) >= Expr(0.0f),
                                                  "row must start with a non-negative value", inner);
  runtime::Module m = build("nested", {A, B}, loop(r, Expr(int(rows)), checked, ForKind::kParallel));
  NDArray a = filled({rows * cols}, f32, [](int64_t i) { return double(i); });
  NDArray b = filled({rows * cols}, f32, [](int64_t) { return 0.0; });
  m.get_function("nested")(a, b);
  for (int64_t k = 0; k < rows * cols; ++k) ASSERT_FLOAT_EQ(b.data<float>()[k], 2.0f * float(k));

  a.set(5 * cols, -1.0);
  int32_t status = m.get_function("nested").call_status({a.dltensor(), b.dltensor()});
  EXPECT_NE(status, 0);
  EXPECT_NE(std::string(loom_get_last_error()).find("row must start with a non-negative value"), std::string::npos);
}

TEST(Codegen, ExportedParallelTaskFailurePropagates) {
  // The same kind of failing assert, in a parallel loop of an exported library: its embedded
  // pool reports the first failing task's status and message, and keeps working afterwards.
  const int64_t rows = 41, cols = 3;
  BufferArg A = buffer("A", f32, {rows * cols}), B = buffer("B", f32, {rows * cols});
  Var r("r"), c("c");
  Expr idx = r * Expr(int(cols)) + c;
  Stmt checked = make_stmt<lowering::AssertStmtNode>(load(A, r * Expr(int(cols))) >= Expr(0.0f), "row must be non-negative",
                                                  loop(c, Expr(int(cols)), store(B, load(A, idx), idx)));
  runtime::Module jit = build("rows", {A, B}, loop(r, Expr(int(rows)), checked, ForKind::kParallel));
  std::string path = (std::filesystem::temp_directory_path() / fmt::format("loom_codegen_test_rows_{}.so", getpid())).string();
  jit.export_library(path);
  runtime::Module lib = runtime::Module::load(path);
  std::filesystem::remove(path);
  NDArray a = filled({rows * cols}, f32, [](int64_t i) { return double(i); });
  NDArray b = filled({rows * cols}, f32, [](int64_t) { return 0.0; });
  for (int64_t bad : {int64_t(0), int64_t(17), rows - 1}) {
    a.set(bad * cols, -1.0);
    loom_set_last_error("");
    EXPECT_NE(lib.get_function("rows").call_status({a.dltensor(), b.dltensor()}), 0) << "row " << bad;
    EXPECT_NE(std::string(loom_get_last_error()).find("row must be non-negative"), std::string::npos) << "row " << bad;
    a.set(bad * cols, double(bad * cols));
  }
  EXPECT_EQ(lib.get_function("rows").call_status({a.dltensor(), b.dltensor()}), 0);
  for (int64_t k = 0; k < rows * cols; ++k) ASSERT_FLOAT_EQ(b.data<float>()[k], float(k));
}

TEST(Codegen, VectorizedRampLoadStoreGatherAndPredicate) {
  // Contiguous vector loads/stores, a stride-2 gather and a predicated store of the tail.
  const int64_t n = 100;  // 12 full vectors of 8 and a tail of 4
  BufferArg A = buffer("A", f32, {2 * n}), B = buffer("B", f32, {n}), C = buffer("C", f32, {n});
  const DataType v8 = f32.with_lanes(8);
  Var i("i");
  Expr base = i * Expr(8);
  Expr contiguous = load(A, ramp(base, 1, 8), 8);
  Expr strided = load(A, ramp(base * Expr(2), 2, 8), 8);
  Expr twice = bin<te::ExprKind::Mul>(v8, contiguous, te::make<te::BroadcastNode>(Expr(2.0f), 8));
  Expr lane_ok = bin<te::ExprKind::LT>(DataType::Bool(8), ramp(base, 1, 8), te::make<te::BroadcastNode>(Expr(int(n)), 8));
  Stmt body = lowering::seq({
      make_stmt<lowering::IfThenElseNode>(base + Expr(8) <= Expr(int(n)), store(B, twice, ramp(base, 1, 8)), Stmt()),
      store(C, strided, ramp(base, 1, 8), lane_ok),
  });
  runtime::Module m = build("vec", {A, B, C}, loop(i, Expr(int((n + 7) / 8)), body));
  EXPECT_NE(m.source("ll").find("<8 x float>"), std::string::npos);
  NDArray a = filled({2 * n}, f32, [](int64_t i) { return double(i) * 0.25; });
  NDArray b = filled({n}, f32, [](int64_t) { return -5.0; });
  NDArray c = filled({n}, f32, [](int64_t) { return -5.0; });
  m.get_function("vec")(a, b, c);
  for (int64_t k = 0; k < n; ++k) {
    float want_b = k < (n / 8) * 8 ? 2.0f * a.data<float>()[k] : -5.0f;
    ASSERT_FLOAT_EQ(b.data<float>()[k], want_b) << k;
    ASSERT_FLOAT_EQ(c.data<float>()[k], a.data<float>()[2 * k]) << k;
  }
}

TEST(Codegen, ShortConstantStrideLoadsAreDenseLoadsAndShuffles) {
  // B[i] = A[s*i] for 8 lanes at a time, the last vector ending at A's last element: strides up
  // to 4 (codegen_llvm.h's kMaxDenseLoadStride) load the span and shuffle, longer ones gather.
  for (int s : {2, 3, 4, 5}) {
    SCOPED_TRACE(s);
    const int64_t n = 64;
    BufferArg A = buffer("A", f32, {(n - 1) * s + 1}), B = buffer("B", f32, {n});
    Var i("i");
    Expr base = i * Expr(8);
    Stmt body = loop(i, Expr(int(n / 8)), store(B, load(A, ramp(base * Expr(s), s, 8), 8), ramp(base, 1, 8)));
    runtime::Module m = build("strided", {A, B}, body);
    const std::string ll = m.source("ll");
    const bool dense = s <= 4;
    EXPECT_EQ(ll.find("shufflevector") != std::string::npos, dense) << ll;
    EXPECT_EQ(ll.find("masked.gather") != std::string::npos, !dense) << ll;
    NDArray a = filled({(n - 1) * s + 1}, f32, [](int64_t k) { return double(k) * 0.5 - 3.0; });
    NDArray b = filled({n}, f32, [](int64_t) { return -1.0; });
    m.get_function("strided")(a, b);
    for (int64_t k = 0; k < n; ++k) ASSERT_FLOAT_EQ(b.data<float>()[k], a.data<float>()[k * s]) << k;

    // Predicated: lanes k < n - 3 load, the others read 0. The last vector has both kinds.
    Expr lane_ok = bin<te::ExprKind::LT>(DataType::Bool(8), ramp(base, 1, 8),
                                         te::make<te::BroadcastNode>(Expr(int(n - 3)), 8));
    Expr masked = te::make<te::LoadNode>(f32.with_lanes(8), A.data, ramp(base * Expr(s), s, 8), lane_ok);
    runtime::Module mp = build("strided_pred", {A, B}, loop(i, Expr(int(n / 8)), store(B, masked, ramp(base, 1, 8))));
    EXPECT_NE(mp.source("ll").find("masked.gather"), std::string::npos);
    mp.get_function("strided_pred")(a, b);
    for (int64_t k = 0; k < n; ++k)
      ASSERT_FLOAT_EQ(b.data<float>()[k], k < n - 3 ? a.data<float>()[k * s] : 0.0f) << k;
  }
}

TEST(Codegen, AllocateOnStackAndInWorkspace) {
  // Per row: tmp[j] = A[row, j] * 2 (stack buffer, reused every row), then B[row, j] =
  // tmp[cols-1-j] + big[j] where big is a workspace allocation over 64 KiB.
  const int64_t rows = 8, cols = 16, big_n = 40000;
  BufferArg A = buffer("A", f32, {rows * cols}), B = buffer("B", f32, {rows * cols});
  Var tmp("tmp", DataType::Handle()), big("big", DataType::Handle());
  Var r("r"), j("j"), k("k");
  auto ld = [](const Var& buf, Expr idx) { return te::make<te::LoadNode>(f32, buf, std::move(idx), Expr()); };
  auto st = [](const Var& buf, Expr v, Expr idx) { return make_stmt<lowering::StoreNode>(buf, std::move(v), std::move(idx), Expr()); };
  Stmt fill_big = loop(k, Expr(int(big_n)), st(big, te::cast(f32, k), k));
  Stmt per_row = lowering::seq({
      loop(j, Expr(int(cols)), st(tmp, bin<te::ExprKind::Mul>(f32, load(A, r * Expr(int(cols)) + j), Expr(2.0f)), j)),
      loop(j, Expr(int(cols)),
           store(B, bin<te::ExprKind::Add>(f32, ld(tmp, Expr(int(cols - 1)) - j), ld(big, j * Expr(1000))),
                 r * Expr(int(cols)) + j)),
  });
  Stmt with_tmp = make_stmt<lowering::AllocateNode>(tmp, f32, std::vector<Expr>{Expr(int(cols))}, "local", per_row);
  Stmt body = make_stmt<lowering::AllocateNode>(big, f32, std::vector<Expr>{Expr(int(big_n))}, "global",
                                             lowering::seq({fill_big, loop(r, Expr(int(rows)), with_tmp, ForKind::kParallel)}));
  runtime::Module m = build("alloc", {A, B}, body);
  std::string ll = m.source("ll");
  EXPECT_NE(ll.find("loom_workspace_alloc"), std::string::npos);
  EXPECT_NE(ll.find("loom_workspace_free"), std::string::npos);
  NDArray a = filled({rows * cols}, f32, [](int64_t i) { return double(i) - 50.0; });
  NDArray b = filled({rows * cols}, f32, [](int64_t) { return 0.0; });
  m.get_function("alloc")(a, b);
  for (int64_t rr = 0; rr < rows; ++rr)
    for (int64_t jj = 0; jj < cols; ++jj)
      ASSERT_FLOAT_EQ(b.data<float>()[rr * cols + jj], 2.0f * a.data<float>()[rr * cols + (cols - 1 - jj)] + float(jj * 1000))
          << rr << "," << jj;
}

TEST(Codegen, FloatIntrinsics) {
  const int64_t n = 64;
  const char* names[] = {"exp", "tanh", "sigmoid", "sqrt", "log", "fabs", "floor", "ceil", "round", "trunc", "erf"};
  const int kinds = int(std::size(names));
  BufferArg A = buffer("A", f32, {n}), B = buffer("B", f32, {kinds * n}), V = buffer("V", f32, {2 * n});
  Var i("i"), w("w");
  std::vector<Stmt> stmts;
  for (int k = 0; k < kinds; ++k) {
    Expr arg = std::string(names[k]) == "sqrt" || std::string(names[k]) == "log" ? intrin(f32, "fabs", {load(A, i)}) : load(A, i);
    stmts.push_back(store(B, intrin(f32, names[k], {arg}), i + Expr(int(k * n))));
  }
  // Vector forms: exp and tanh over 8 lanes (libmvec calls on x86-64 GNU/Linux, else libm per lane).
  const DataType v8 = f32.with_lanes(8);
  Stmt vec = loop(w, Expr(int(n / 8)), lowering::seq({
      store(V, intrin(v8, "exp", {load(A, ramp(w * Expr(8), 1, 8), 8)}), ramp(w * Expr(8), 1, 8)),
      store(V, intrin(v8, "tanh", {load(A, ramp(w * Expr(8), 1, 8), 8)}), ramp(w * Expr(8) + Expr(int(n)), 1, 8)),
  }));
  runtime::Module m = build("intrin", {A, B, V}, lowering::seq({loop(i, Expr(int(n)), lowering::seq(stmts)), vec}));
  NDArray a = filled({n}, f32, [](int64_t i) { return (double(i) - 31.5) / 8.0; });
  NDArray b = filled({kinds * n}, f32, [](int64_t) { return 0.0; });
  NDArray v = filled({2 * n}, f32, [](int64_t) { return 0.0; });
  m.get_function("intrin")(a, b, v);
  auto ref = [](const std::string& name, double x) {
    if (name == "exp") return std::exp(x);
    if (name == "tanh") return std::tanh(x);
    if (name == "sigmoid") return 1.0 / (1.0 + std::exp(-x));
    if (name == "sqrt") return std::sqrt(std::fabs(x));
    if (name == "log") return std::log(std::fabs(x));
    if (name == "fabs") return std::fabs(x);
    if (name == "floor") return std::floor(x);
    if (name == "ceil") return std::ceil(x);
    if (name == "round") return std::nearbyint(x);
    if (name == "trunc") return std::trunc(x);
    return std::erf(x);
  };
  for (int k = 0; k < kinds; ++k)
    for (int64_t j = 0; j < n; ++j) {
      double x = a.data<float>()[j];
      double want = ref(names[k], x);
      ASSERT_NEAR(b.data<float>()[k * n + j], want, 1e-5 + 1e-5 * std::fabs(want)) << names[k] << "(" << x << ")";
    }
  for (int64_t j = 0; j < n; ++j) {
    double x = a.data<float>()[j];
    ASSERT_NEAR(v.data<float>()[j], std::exp(x), 1e-5 + 1e-5 * std::exp(x)) << x;
    ASSERT_NEAR(v.data<float>()[n + j], std::tanh(x), 1e-6) << x;
  }
}

TEST(Codegen, IntegerAndMiscIntrinsics) {
  // Every non-float-math entry of the intrinsic table on int32 and float32 values.
  const int64_t n = 37;
  const char* int_names[] = {"bitwise_and", "bitwise_or", "bitwise_xor", "shift_left", "shift_right", "bitwise_not",
                             "fabs", "fma", "likely"};
  const int kinds = int(std::size(int_names));
  BufferArg A = buffer("A", i32, {n}), B = buffer("B", i32, {kinds * n});
  BufferArg X = buffer("X", f32, {n}), Y = buffer("Y", f32, {4 * n});
  Var i("i");
  Expr a = load(A, i), sh = bin<te::ExprKind::Mod>(i32, i, Expr(5));
  std::vector<Stmt> stmts;
  for (int k = 0; k < kinds; ++k) {
    std::string name = int_names[k];
    std::vector<Expr> args = {a};
    if (name == "shift_left" || name == "shift_right") args = {a, sh};
    else if (name.starts_with("bitwise_") && name != "bitwise_not") args = {a, Expr(0x5a)};
    else if (name == "fma") args = {a, Expr(3), Expr(-7)};
    stmts.push_back(store(B, intrin(i32, name, args), i + Expr(int(k * n))));
  }
  Expr x = load(X, i);
  stmts.push_back(store(Y, intrin(f32, "pow", {intrin(f32, "fabs", {x}), Expr(1.5f)}), i));
  stmts.push_back(store(Y, intrin(f32, "fma", {x, Expr(2.0f), Expr(0.25f)}), i + Expr(int(n))));
  stmts.push_back(store(Y, te::make<te::CastNode>(f32, intrin(DataType::Bool(), "isnan", {x})), i + Expr(int(2 * n))));
  stmts.push_back(store(Y, intrin(f32, "reinterpret", {intrin(i32, "reinterpret", {x})}), i + Expr(int(3 * n))));
  runtime::Module m = build("intrin_misc", {A, B, X, Y}, loop(i, Expr(int(n)), lowering::seq(stmts)));
  NDArray av = filled({n}, i32, [](int64_t j) { return double((j - 18) * 1237); });
  NDArray bv = filled({kinds * n}, i32, [](int64_t) { return 0.0; });
  NDArray xv = filled({n}, f32, [](int64_t j) { return j == 5 ? std::nan("") : (double(j) - 17.5) / 4.0; });
  NDArray yv = filled({4 * n}, f32, [](int64_t) { return -1.0; });
  m.get_function("intrin_misc")(av, bv, xv, yv);
  for (int64_t j = 0; j < n; ++j) {
    int32_t v = av.data<int32_t>()[j], s = int32_t(j % 5);
    int32_t want[] = {v & 0x5a, v | 0x5a, v ^ 0x5a, int32_t(uint32_t(v) << s), v >> s, ~v, v < 0 ? -v : v, v * 3 - 7, v};
    for (int k = 0; k < kinds; ++k) ASSERT_EQ(bv.data<int32_t>()[k * n + j], want[k]) << int_names[k] << "(" << v << ")";
    float f = xv.data<float>()[j];
    const float* y = yv.data<float>();
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(y[j]) && std::isnan(y[n + j]) && std::isnan(y[3 * n + j]));
      EXPECT_EQ(y[2 * n + j], 1.0f);
    } else {
      EXPECT_NEAR(y[j], std::pow(std::fabs(f), 1.5f), 1e-5 * (1 + std::fabs(y[j]))) << f;
      EXPECT_NEAR(y[n + j], f * 2.0f + 0.25f, 1e-6) << f;
      EXPECT_EQ(y[2 * n + j], 0.0f) << f;
      EXPECT_EQ(y[3 * n + j], f);
    }
  }
}

TEST(Codegen, IntrinsicMisuseIsAnError) {
  BufferArg A = buffer("A", f32, {4});
  Var i("i");
  auto message = [&](Expr value) -> std::string {
    try {
      build("bad_intrin", {A}, loop(i, Expr(4), store(A, std::move(value), i)));
    } catch (const Error& e) {
      return e.what();
    }
    return "(no error)";
  };
  EXPECT_NE(message(intrin(f32, "no_such_intrinsic", {load(A, i)})).find("unknown intrinsic 'no_such_intrinsic' in function 'bad_intrin'"),
            std::string::npos);
  EXPECT_NE(message(intrin(f32, "pow", {load(A, i)})).find("intrinsic 'pow' takes 2 argument(s), got 1"), std::string::npos);
  EXPECT_NE(message(intrin(f32, "loom.dltensor_ndim", {load(A, i)})).find("loom.dltensor_ndim expects a handle"),
            std::string::npos);
  EXPECT_NE(message(te::make<te::CastNode>(f32, intrin(i32, "exp", {Expr(1)}))).find("exp of a non-float value (int32)"),
            std::string::npos);
}

TEST(Codegen, IntegerDivisionOfNegatives) {
  // floordiv/floormod/truncdiv/truncmod/min/max on int32 with divisors of both signs.
  const int64_t n = 41;
  BufferArg A = buffer("A", i32, {n}), D = buffer("D", i32, {n}), O = buffer("O", i32, {6 * n});
  Var i("i");
  Expr a = load(A, i), d = load(D, i);
  Stmt body = lowering::seq({
      store(O, bin<te::ExprKind::FloorDiv>(i32, a, d), i),
      store(O, bin<te::ExprKind::FloorMod>(i32, a, d), i + Expr(int(n))),
      store(O, bin<te::ExprKind::Div>(i32, a, d), i + Expr(int(2 * n))),
      store(O, bin<te::ExprKind::Mod>(i32, a, d), i + Expr(int(3 * n))),
      store(O, bin<te::ExprKind::FloorDiv>(i32, a, Expr(4)), i + Expr(int(4 * n))),
      store(O, bin<te::ExprKind::Max>(i32, bin<te::ExprKind::Min>(i32, a, Expr(5)), Expr(-5)), i + Expr(int(5 * n))),
  });
  runtime::Module m = build("idiv", {A, D, O}, loop(i, Expr(int(n)), body));
  NDArray av = filled({n}, i32, [](int64_t i) { return double(i - 20); });
  NDArray dv = filled({n}, i32, [](int64_t i) { return i % 2 ? 3.0 : -3.0; });
  NDArray o = filled({6 * n}, i32, [](int64_t) { return 0.0; });
  m.get_function("idiv")(av, dv, o);
  auto fdiv = [](int64_t x, int64_t y) { int64_t q = x / y; return (x % y != 0 && ((x < 0) != (y < 0))) ? q - 1 : q; };
  const int32_t* out = o.data<int32_t>();
  for (int64_t k = 0; k < n; ++k) {
    int64_t x = k - 20, y = k % 2 ? 3 : -3;
    ASSERT_EQ(out[k], fdiv(x, y)) << x << " floordiv " << y;
    ASSERT_EQ(out[n + k], x - fdiv(x, y) * y) << x << " floormod " << y;
    ASSERT_EQ(out[2 * n + k], x / y);
    ASSERT_EQ(out[3 * n + k], x % y);
    ASSERT_EQ(out[4 * n + k], fdiv(x, 4));
    ASSERT_EQ(out[5 * n + k], std::max<int64_t>(std::min<int64_t>(x, 5), -5));
  }
  EXPECT_EQ(out[1], -7);  // -19 floordiv 3
  EXPECT_EQ(out[n + 1], 2);  // -19 floormod 3
}

TEST(Codegen, CastsHalfAndBool) {
  // H = float16(A); B = float32(H) + 1; M = A > 0 (bool in memory, one byte each);
  // I = int32(M) + int32(A).
  const int64_t n = 32;
  const DataType f16 = DataType::Float(16), b1 = DataType::Bool();
  BufferArg A = buffer("A", f32, {n}), H = buffer("H", f16, {n}), B = buffer("B", f32, {n}), M = buffer("M", b1, {n}),
            I = buffer("I", i32, {n});
  Var i("i");
  Stmt body = lowering::seq({
      store(H, te::make<te::CastNode>(f16, load(A, i)), i),
      store(B, bin<te::ExprKind::Add>(f32, te::make<te::CastNode>(f32, load(H, i)), Expr(1.0f)), i),
      store(M, bin<te::ExprKind::GT>(b1, load(A, i), Expr(0.0f)), i),
      store(I, bin<te::ExprKind::Add>(i32, te::make<te::CastNode>(i32, load(M, i)), te::make<te::CastNode>(i32, load(A, i))), i),
  });
  runtime::Module m = build("casts", {A, H, B, M, I}, loop(i, Expr(int(n)), body));
  NDArray a = filled({n}, f32, [](int64_t i) { return (double(i) - 16.0) * 0.75; });
  NDArray h = NDArray::empty({n}, f16), b = NDArray::empty({n}, f32), mk = NDArray::empty({n}, b1), iv = NDArray::empty({n}, i32);
  m.get_function("casts")(a, h, b, mk, iv);
  for (int64_t k = 0; k < n; ++k) {
    float x = a.data<float>()[k];  // multiples of 0.75 are exact in float16
    ASSERT_FLOAT_EQ(b.data<float>()[k], x + 1.0f) << k;
    ASSERT_EQ(mk.data<uint8_t>()[k], x > 0 ? 1 : 0) << k;
    ASSERT_EQ(iv.data<int32_t>()[k], (x > 0 ? 1 : 0) + int32_t(x)) << k;
  }
}

TEST(Codegen, AssertFailureReturnsStatusAndMessage) {
  const int64_t n = 4;
  BufferArg A = buffer("A", f32, {n});
  Var i("i");
  Stmt body = make_stmt<lowering::AssertStmtNode>(load(A, Expr(0)) > Expr(0.0f), "first element must be positive",
                                               loop(i, Expr(int(n)), store(A, Expr(1.0f), i)));
  runtime::Module m = build("check", {A}, body);
  NDArray a = filled({n}, f32, [](int64_t) { return -1.0; });
  runtime::PackedFunc f = m.get_function("check");
  EXPECT_EQ(f.call_status({a.dltensor()}), LOOM_ERR_ARGUMENT);
  EXPECT_STREQ(loom_get_last_error(), "first element must be positive");
  EXPECT_FLOAT_EQ(a.data<float>()[1], -1.0f);
  try {
    f(a);
    FAIL() << "expected loom::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("first element must be positive"), std::string::npos);
  }
  a.set(0, 2.0);
  f(a);
  EXPECT_FLOAT_EQ(a.data<float>()[3], 1.0f);
}

TEST(Codegen, WrongArgumentsAreRejected) {
  runtime::Module m = vector_add(16, ForKind::kSerial);
  runtime::PackedFunc f = m.get_function("vadd");
  NDArray a = NDArray::empty({16}, f32), b = NDArray::empty({16}, f32), c = NDArray::empty({16}, f32);
  EXPECT_EQ(f.call_status({a.dltensor(), b.dltensor()}), LOOM_ERR_ARGUMENT);
  EXPECT_STREQ(loom_get_last_error(), "vadd: expected 3 arguments, got 2");
  EXPECT_EQ(f.call_status({}), LOOM_ERR_ARGUMENT);
  EXPECT_STREQ(loom_get_last_error(), "vadd: expected 3 arguments, got 0");
  // Checks added by make_packed_api: null, shape and dtype.
  EXPECT_NE(f.call_status({a.dltensor(), nullptr, c.dltensor()}), 0);
  EXPECT_NE(std::string(loom_get_last_error()).find("null"), std::string::npos);
  NDArray wrong_shape = NDArray::empty({17}, f32);
  EXPECT_THROW(f(a, wrong_shape, c), Error);
  NDArray wrong_type = NDArray::empty({16}, i32);
  EXPECT_THROW(f(a, b, wrong_type), Error);
}

TEST(Codegen, SeveralFunctionsInOneModule) {
  const int64_t n = 8;
  std::vector<LoweredFunc> funcs;
  for (int k = 0; k < 2; ++k) {
    BufferArg A = buffer("A", f32, {n});
    Var i("i");
    LoweredFunc f;
    f.name = k == 0 ? "fill_one" : "fill_two";
    f.args = {A};
    f.body = loop(i, Expr(int(n)), store(A, Expr(float(k + 1)), i));
    funcs.push_back(lowering::make_packed_api(f));
  }
  runtime::Module m = codegen::build(funcs, Target("llvm"));
  EXPECT_EQ(m.function_names(), (std::vector<std::string>{"fill_one", "fill_two"}));
  NDArray a = NDArray::empty({n}, f32);
  m.get_function("fill_two")(a);
  EXPECT_FLOAT_EQ(a.data<float>()[7], 2.0f);
  m.get_function("fill_one")(a);
  EXPECT_FLOAT_EQ(a.data<float>()[7], 1.0f);
  EXPECT_THROW(codegen::build({funcs[0], funcs[0]}, Target("llvm")), Error);
  LoweredFunc bad = funcs[0];
  bad.name = "fill-one";
  EXPECT_THROW(codegen::build({bad}, Target("llvm")), Error);
}

TEST(Codegen, WhileInt64LoopsAndScalarPredicates) {
  // cnt = 0; while (cnt < 10) { A[cnt] = cnt * 3; cnt += 1 }   (cnt: a one-element buffer)
  // for j: int64 in [5, 15): if-predicated B[j] = float(j) when j is even, and
  // C[j] = predicated load of B[j] (0 where odd).
  const int64_t n = 16;
  BufferArg A = buffer("A", i32, {n}), B = buffer("B", f32, {n}), C = buffer("C", f32, {n});
  Var cnt("cnt", DataType::Handle());
  Var j("j", DataType::Int(64));
  auto cnt_val = te::make<te::LoadNode>(i32, cnt, Expr(0), Expr());
  Stmt w = make_stmt<lowering::WhileNode>(
      cnt_val < Expr(10), lowering::seq({store(A, cnt_val * Expr(3), cnt_val),
                                      make_stmt<lowering::StoreNode>(cnt, cnt_val + Expr(1), Expr(0), Expr())}));
  Stmt counting = make_stmt<lowering::AllocateNode>(
      cnt, i32, std::vector<Expr>{Expr(1)}, "local", lowering::seq({make_stmt<lowering::StoreNode>(cnt, Expr(0), Expr(0), Expr()), w}));
  Expr even = bin<te::ExprKind::EQ>(DataType::Bool(), bin<te::ExprKind::FloorMod>(DataType::Int(64), j, te::make_const(DataType::Int(64), 2)),
                                    te::make_const(DataType::Int(64), 0));
  Stmt preds = make_stmt<lowering::ForNode>(
      j, te::make_const(DataType::Int(64), 5), te::make_const(DataType::Int(64), 10), ForKind::kSerial,
      lowering::seq({store(B, te::make<te::CastNode>(f32, j), j, even),
                  store(C, te::make<te::LoadNode>(f32, B.data, j, even), j)}));
  runtime::Module m = build("ctl", {A, B, C}, lowering::seq({counting, preds}));
  NDArray a = filled({n}, i32, [](int64_t) { return -1.0; });
  NDArray b = filled({n}, f32, [](int64_t) { return -1.0; });
  NDArray c = filled({n}, f32, [](int64_t) { return -1.0; });
  m.get_function("ctl")(a, b, c);
  for (int64_t k = 0; k < n; ++k) {
    ASSERT_EQ(a.data<int32_t>()[k], k < 10 ? int32_t(3 * k) : -1) << k;
    bool in = k >= 5 && k < 15;
    ASSERT_FLOAT_EQ(b.data<float>()[k], in && k % 2 == 0 ? float(k) : -1.0f) << k;
    ASSERT_FLOAT_EQ(c.data<float>()[k], in ? (k % 2 == 0 ? float(k) : 0.0f) : -1.0f) << k;
  }
}

TEST(Codegen, FunctionOutlivesModuleHandle) {
  runtime::PackedFunc f;
  {
    runtime::Module m = vector_add(4, ForKind::kSerial);
    f = m.get_function("vadd");
  }
  NDArray a = filled({4}, f32, [](int64_t i) { return double(i); });
  NDArray c = NDArray::empty({4}, f32);
  f(a, a, c);
  EXPECT_FLOAT_EQ(c.data<float>()[3], 6.0f);
}

TEST(Codegen, CudaAndCrossTargets) {
  BufferArg A = buffer("A", f32, {4});
  Var i("i");
  Stmt body = loop(i, Expr(4), store(A, Expr(1.0f), i));
  try {
    build("k", {A}, body, Target("cuda"));
    FAIL() << "expected loom::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("has no GPU kernels"), std::string::npos);
  }
  // An explicit CPU compiles and runs; a foreign triple compiles but cannot run here.
  runtime::Module v3 = build("k", {A}, body, Target("llvm -mcpu=x86-64"));
  NDArray a = NDArray::empty({4}, f32);
  v3.get_function("k")(a);
  EXPECT_FLOAT_EQ(a.data<float>()[2], 1.0f);
  runtime::Module arm = build("k", {A}, body, Target("llvm -mtriple=aarch64-linux-gnu"));
  EXPECT_NE(arm.source("asm").find("k:"), std::string::npos);
  EXPECT_THROW(arm.get_function("k"), Error);
}

/// The loom::Error message of `f`, or "" if it throws none.
template <typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Codegen, UnknownCpuOrFeatureIsAnErrorNotAnAbort) {
  BufferArg A = buffer("A", f32, {4});
  Var i("i");
  Stmt body = loop(i, Expr(4), store(A, Expr(1.0f), i));
  auto build_for = [&](const char* t) { return error_of([&] { build("k", {A}, body, Target(t)); }); };
  std::string e = build_for("llvm -mcpu=nosuchcpu");
  EXPECT_NE(e.find("unknown CPU 'nosuchcpu'"), std::string::npos) << e;
  EXPECT_NE(e.find("-mcpu=help"), std::string::npos) << e;  // where the valid names are listed
  e = build_for("llvm -mcpu=haswel");
  EXPECT_NE(e.find("haswell"), std::string::npos) << e;  // the closest valid names
  e = build_for("llvm -mattr=+nosuchfeature");
  EXPECT_NE(e.find("unknown CPU feature 'nosuchfeature'"), std::string::npos) << e;
  e = build_for("llvm -mattr=avx2");
  EXPECT_NE(e.find("must start with '+'"), std::string::npos) << e;
  e = build_for("llvm -mtriple=aarch64-linux-gnu -mcpu=skylake");
  EXPECT_NE(e.find("unknown CPU 'skylake' for triple 'aarch64"), std::string::npos) << e;
#if defined(__x86_64__)
  {
    e = build_for("llvm -mcpu=i386");
    EXPECT_NE(e.find("has no 64-bit mode"), std::string::npos) << e;
    e = build_for("llvm -mcpu=x86-64 -mattr=-64bit");
    EXPECT_NE(e.find("has no 64-bit mode"), std::string::npos) << e;
  }
#endif
  EXPECT_EQ(build_for("llvm -mcpu=x86-64-v2 -mattr=+avx2,-fma"), "");
  EXPECT_EQ(build_for("llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-v1 -mattr=+sve"), "");
}

TEST(Codegen, CompileTimeOfSmallMatmul) {
  // C[i, j] = sum_k A[i, k] * B[k, j] on 64x64x64; reports the compile time (no bound:
  // timing checks live in bench/).
  const int n = 64;
  auto make = [&] {
    BufferArg A = buffer("A", f32, {n * n}), B = buffer("B", f32, {n * n}), C = buffer("C", f32, {n * n});
    Var i("i"), j("j"), k("k");
    Expr ci = i * Expr(n) + j;
    Stmt inner = loop(k, Expr(n),
                      store(C, bin<te::ExprKind::Add>(f32, load(C, ci), bin<te::ExprKind::Mul>(f32, load(A, i * Expr(n) + k), load(B, k * Expr(n) + j))), ci));
    Stmt body = loop(i, Expr(n), loop(j, Expr(n), lowering::seq({store(C, Expr(0.0f), ci), inner})), ForKind::kParallel);
    return build("matmul", {A, B, C}, body);
  };
  make();  // warm-up: target machine and JIT creation
  const int reps = 10;
  auto t0 = std::chrono::steady_clock::now();
  runtime::Module m;
  for (int r = 0; r < reps; ++r) m = make();
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / reps;
  std::printf("[ info ] build of a 64x64x64 matmul: %.1f ms\n", ms);
  NDArray a = filled({n * n}, f32, [](int64_t i) { return double(i % 7) - 3.0; });
  NDArray b = filled({n * n}, f32, [](int64_t i) { return double(i % 5) - 2.0; });
  NDArray c = NDArray::empty({n * n}, f32);
  m.get_function("matmul")(a, b, c);
  for (int ii = 0; ii < n; ii += 7)
    for (int jj = 0; jj < n; jj += 5) {
      double want = 0;
      for (int kk = 0; kk < n; ++kk) want += double(a.data<float>()[ii * n + kk]) * b.data<float>()[kk * n + jj];
      ASSERT_NEAR(c.data<float>()[ii * n + jj], want, 1e-3) << ii << "," << jj;
    }
}

}  // namespace
}  // namespace loom
