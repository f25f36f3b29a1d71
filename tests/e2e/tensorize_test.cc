// Stage::tensorize with the u8·s8 → s32 dot-product intrinsic, compiled for every code path
// of its lowering (VNNI, the exact AVX-512BW and AVX2 vpmaddubsw/vpmaddwd sequences, plain
// vector code) and compared exactly with te::evaluate, with and without tails; and the
// errors of a nest that does not compute what the intrinsic declares.
#include <loom/codegen/build.h>
#include <loom/codegen/intrinsics.h>
#include <loom/te/tensor_intrinsics.h>

#include "common/test_util.h"

namespace loom {
namespace {

using te::IterVar;
using te::Tensor;
using te::Var;

/// C[m, n] = Σ_k int32(A[m, k]) · int32(W[n/16, k/4, n%16, k%4]): A uint8 [M, K], W int8
/// packed [ceil(N/16), ceil(K/4), 16, 4].
struct Int8Matmul {
  Tensor A, W, C;
  IterVar k;
  std::vector<Tensor> args() const { return {A, W, C}; }
};

Int8Matmul int8_matmul(int64_t M, int64_t N, int64_t K, int block = 16, DataType a_type = DataType::UInt(8)) {
  Int8Matmul mm;
  mm.A = te::placeholder({M, K}, a_type, "A");
  mm.W = te::placeholder({(N + block - 1) / block, (K + 3) / 4, block, 4}, DataType::Int(8), "W");
  mm.k = te::reduce_axis({0, K}, "k");
  const IterVar k = mm.k;
  const Tensor A = mm.A, W = mm.W;
  mm.C = te::compute(
      {M, N},
      [&](Var m, Var n) {
        return te::sum(te::cast(DataType::Int(32), A(m, k)) *
                           te::cast(DataType::Int(32), W(te::floordiv(n, block), te::floordiv(k, 4),
                                                         te::floormod(n, block), te::floormod(k, 4))),
                       {k});
      },
      "C");
  return mm;
}

/// Inputs over the types' whole ranges; with `saturating`, A is mostly 255 and W mostly
/// 127 or -128, where vpmaddubsw's int16 pair sums (255·127·2) would saturate.
std::map<Tensor, runtime::NDArray> int8_inputs(const std::vector<Tensor>& args, uint64_t seed, bool saturating) {
  std::map<Tensor, runtime::NDArray> in;
  for (const Tensor& t : args) {
    if (t.op()->kind != te::OpKind::kPlaceholder) continue;
    std::vector<int64_t> shape;
    for (const te::Expr& d : t.shape()) shape.push_back(*te::as_const_int(d));
    auto a = runtime::NDArray::empty(shape, t.dtype());
    const bool u = t.dtype().is_uint();
    a.fill_random(seed++, u ? 0 : -128, u ? 255 : 127);
    if (saturating) {
      for (int64_t i = 0; i < a.numel(); ++i)
        if (i % 7 != 3) a.set(i, u ? 255 : (i % 2 ? 127 : -128));
    }
    in[t] = a;
  }
  return in;
}

/// "" if `s` built for `target` computes what te::evaluate does, exactly, on full-range and
/// on saturating inputs.
std::string check_exact(const Schedule& s, const std::vector<Tensor>& args, const Target& target,
                        bool check_accesses = false) {
  try {
    lowering::LowerOptions opts;
    opts.target = target;
    opts.check_accesses = check_accesses;
    runtime::Module m = codegen::build(s, args, "f", opts);
    for (bool saturating : {false, true}) {
      auto in = int8_inputs(args, 7, saturating);
      std::vector<Tensor> outs;
      for (const Tensor& t : args)
        if (t.op()->kind != te::OpKind::kPlaceholder) outs.push_back(t);
      std::vector<runtime::NDArray> want = te::evaluate(outs, in);
      std::vector<runtime::NDArray> arrays;
      std::vector<DLTensor*> dl;
      for (const Tensor& t : args) {
        if (t.op()->kind == te::OpKind::kPlaceholder) {
          arrays.push_back(in.at(t));
        } else {
          arrays.push_back(runtime::NDArray::empty(want[0].shape(), t.dtype()));
          for (int64_t i = 0; i < arrays.back().numel(); ++i) arrays.back().set(i, 12345);
        }
        dl.push_back(arrays.back().dltensor());
      }
      m.get_function("f").call(dl);
      std::string err = test::compare_arrays(arrays.back(), want[0], {0, 0},
                                             fmt::format("{} ({} inputs)", target.str(),
                                                         saturating ? "saturating" : "full-range"));
      if (!err.empty()) return err;
    }
    return "";
  } catch (const std::exception& e) {
    return std::string("exception: ") + e.what();
  }
}

bool host_has(const char* feature) {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (std::string(feature) == "avx512vnni") return __builtin_cpu_supports("avx512vnni");
  if (std::string(feature) == "avx512bw") return __builtin_cpu_supports("avx512bw");
  if (std::string(feature) == "avx2") return __builtin_cpu_supports("avx2");
#endif
  return false;
}

/// Targets for each code path of the dot product, with the host features each needs to
/// run. Each is the host's CPU with features taken away (a named CPU may have features a
/// virtual machine's CPU lacks), except the plain one.
struct PathTarget {
  const char* target;
  const char* needs;  // host feature, or nullptr
  const char* path;
};
const PathTarget kPaths[] = {
    {"llvm", "avx512vnni", "vpdpbusd (AVX-512 VNNI)"},
    {"llvm -mattr=-avx512vnni,-avxvnni", "avx512bw", "exact vpmaddubsw/vpmaddwd, 512-bit"},
    {"llvm -mattr=-avx512f,-avxvnni", "avx2", "exact vpmaddubsw/vpmaddwd, 256-bit"},
    {"llvm -mcpu=haswell", "avx2", "exact vpmaddubsw/vpmaddwd, 256-bit (haswell)"},
    {"llvm -mcpu=x86-64", nullptr, "plain vector code"},
};

/// m, n.outer, k.outer, n.inner, k.inner with n.inner tensorized: the update at every
/// k.outer, the reset in the initialization nest.
Schedule dot_schedule(const Int8Matmul& mm, int block) {
  Schedule s = create_schedule({mm.C});
  schedule::Stage c = s[mm.C];
  auto [no, ni] = c.split(c.axis(1), block);
  auto [ko, ki] = c.split(mm.k, 4);
  c.reorder({c.axis(0), no, ko, ni, ki});
  c.tensorize(ni, te::dot_u8s8s32(block));
  return s;
}

struct Shape {
  int64_t M, N, K;
};
// The first fills whole tiles; the others leave tails in N (not a multiple of 16) and K
// (not a multiple of 4), which run outside the intrinsic.
const Shape kShapes[] = {{6, 32, 16}, {5, 40, 18}, {3, 17, 7}};

TEST(Tensorize, DotEveryCodePathExact) {
  for (const PathTarget& p : kPaths) {
    if (p.needs && !host_has(p.needs)) {
      std::cout << "[ skipped ] " << p.path << ": this host lacks " << p.needs << "\n";
      continue;
    }
    for (const Shape& sh : kShapes) {
      auto mm = int8_matmul(sh.M, sh.N, sh.K);
      EXPECT_EQ(check_exact(dot_schedule(mm, 16), mm.args(), Target(p.target)), "")
          << p.path << ", shape " << sh.M << "x" << sh.N << "x" << sh.K;
    }
  }
}

TEST(Tensorize, DotOnTheHostTarget) {
  for (const Shape& sh : kShapes) {
    auto mm = int8_matmul(sh.M, sh.N, sh.K);
    EXPECT_EQ(check_exact(dot_schedule(mm, 16), mm.args(), Target("llvm")), "") << sh.M << "x" << sh.N << "x" << sh.K;
  }
}

TEST(Tensorize, EachPathEmitsItsInstructions) {
  // Compiled only (it need not run here): the machine code of each path.
  auto mm = int8_matmul(4, 32, 8);
  std::string ir = lowering::to_string(lower(dot_schedule(mm, 16), mm.args(), "f"));
  EXPECT_NE(ir.find("loom.dot_u8s8s32"), std::string::npos) << ir;
  auto asm_of = [&](const char* target) { return build(dot_schedule(mm, 16), mm.args(), Target(target), "f").source("asm"); };
  std::string vnni = asm_of("llvm -mcpu=cascadelake");
  EXPECT_NE(vnni.find("vpdpbusd"), std::string::npos);
  EXPECT_EQ(vnni.find("vpmaddubsw"), std::string::npos);
  std::string bw = asm_of("llvm -mcpu=skylake-avx512");
  EXPECT_EQ(bw.find("vpdpbusd"), std::string::npos);
  EXPECT_NE(bw.find("vpmaddubsw\t%zmm"), std::string::npos);
  EXPECT_NE(bw.find("vpmaddwd"), std::string::npos);
  std::string avx2 = asm_of("llvm -mcpu=haswell");
  EXPECT_NE(avx2.find("vpmaddubsw\t%ymm"), std::string::npos);
  EXPECT_EQ(avx2.find("zmm"), std::string::npos);
  EXPECT_TRUE(codegen::target_has_feature(Target("llvm -mcpu=cascadelake"), "avx512vnni"));
  EXPECT_FALSE(codegen::target_has_feature(Target("llvm -mcpu=haswell"), "avx512vnni"));
  EXPECT_FALSE(codegen::target_has_feature(Target("llvm -mattr=-avx512vnni"), "avx512vnni"));
  EXPECT_TRUE(codegen::target_has_feature(Target("llvm -mcpu=haswell"), "avx2"));
}

TEST(Tensorize, EightLanes) {
  if (!host_has("avx2")) GTEST_SKIP() << "this host lacks avx2";
  for (const Shape& sh : kShapes) {
    auto mm = int8_matmul(sh.M, sh.N, sh.K, 8);
    EXPECT_EQ(check_exact(dot_schedule(mm, 8), mm.args(), Target("llvm -mcpu=haswell")), "");
    EXPECT_EQ(check_exact(dot_schedule(mm, 8), mm.args(), Target("llvm")), "");
  }
}

TEST(Tensorize, WholeReductionInsideTheIntrinsic) {
  // K = 4: the reduction loop is inside the tensorized nest, which then initializes too.
  for (int64_t N : {32, 20}) {
    auto mm = int8_matmul(3, N, 4);
    Schedule s = create_schedule({mm.C});
    schedule::Stage c = s[mm.C];
    auto [no, ni] = c.split(c.axis(1), 16);
    c.reorder({c.axis(0), no, ni, mm.k});
    c.tensorize(ni, te::dot_u8s8s32(16));
    std::string ir = lowering::to_string(lower(s, mm.args(), "f"));
    EXPECT_NE(ir.find("loom.dot_u8s8s32"), std::string::npos) << ir;
    EXPECT_EQ(check_exact(s, mm.args(), Target("llvm")), "") << ir;
    EXPECT_EQ(check_exact(s, mm.args(), Target("llvm -mcpu=x86-64")), "");
  }
}

TEST(Tensorize, WithCacheWriteCacheReadAndComputeAt) {
  // A register tile: the accumulator in a local cache computed at the output's column
  // block, the weights' block fetched into a local cache per k.outer step, rows unrolled.
  for (const Shape& sh : kShapes) {
    auto mm = int8_matmul(sh.M, sh.N, sh.K);
    Schedule s = create_schedule({mm.C});
    Tensor CC = s.cache_write(mm.C, "local");
    Tensor WL = s.cache_read(mm.W, "local", std::vector<Tensor>{CC});
    schedule::Stage c = s[mm.C], acc = s[CC];
    auto [mo, mi] = c.split(c.axis(0), 2);
    auto [no, ni] = c.split(c.axis(1), 32);
    c.reorder({mo, no, mi, ni});
    c.vectorize(ni);
    acc.compute_at(c, no);
    auto [ano, ani] = acc.split(acc.axis(1), 16);
    auto [ko, ki] = acc.split(acc.reduce_axis(0), 4);
    acc.reorder({ko, acc.axis(0), ano, ani, ki});
    acc.unroll(acc.axis(0));
    acc.tensorize(ani, te::dot_u8s8s32(16));
    s[WL].compute_at(acc, ko);
    EXPECT_EQ(check_exact(s, mm.args(), Target("llvm")), "") << sh.M << "x" << sh.N << "x" << sh.K;
    EXPECT_EQ(check_exact(s, mm.args(), Target("llvm -mcpu=haswell")), "") << sh.M << "x" << sh.N << "x" << sh.K;
  }
}

std::string lower_error(const Schedule& s, const std::vector<Tensor>& args) {
  try {
    lower(s, args, "f");
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

void expect_contains(const std::string& msg, const std::string& part) {
  EXPECT_NE(msg.find(part), std::string::npos) << "message: " << msg << "\nexpected to contain: " << part;
}

/// C[m, n] = Σ_{r<3} Σ_k int32(P[m + r, k]) · int32(W[n/16, k/4, n%16, k%4]), P = A padded by
/// one row at each end with `fill` and inlined: a 1-D convolution over rows, as the int8
/// convolutions read their zero padding. The rows r are outside the intrinsic.
struct PaddedRows {
  Tensor A, W, P, C;
  Schedule s;
  std::vector<Tensor> args() const { return {A, W, C}; }
};

PaddedRows padded_rows(const Shape& sh, int fill) {
  PaddedRows p;
  p.A = te::placeholder({sh.M, sh.K}, DataType::UInt(8), "A");
  p.W = te::placeholder({(sh.N + 15) / 16, (sh.K + 3) / 4, 16, 4}, DataType::Int(8), "W");
  p.P = te::ops::pad(p.A, {1, 0}, {1, 0}, te::make_const(DataType::UInt(8), fill));
  IterVar r = te::reduce_axis({0, 3}, "r"), k = te::reduce_axis({0, sh.K}, "k");
  const Tensor P = p.P, W = p.W;
  p.C = te::compute(
      {sh.M, sh.N},
      [&](Var m, Var n) {
        return te::sum(te::cast(DataType::Int(32), P(m + r, k)) *
                           te::cast(DataType::Int(32), W(te::floordiv(n, 16), te::floordiv(k, 4), te::floormod(n, 16),
                                                         te::floormod(k, 4))),
                       {r, k});
      },
      "C");
  p.s = create_schedule({p.C});
  p.s[p.P].compute_inline();
  schedule::Stage c = p.s[p.C];
  auto [no, ni] = c.split(c.axis(1), 16);
  auto [ko, ki] = c.split(k, 4);
  c.reorder({c.axis(0), no, r, ko, ni, ki});
  c.tensorize(ni, te::dot_u8s8s32(16));
  return p;
}

TEST(Tensorize, ZeroPaddedInputSkipsThePadding) {
  // The update reads select(0 <= m + r - 1 < M, A[..], 0): the intrinsic runs on A under that
  // condition (loop_partition then bounds r per row), exact on every code path, with tails.
  for (const PathTarget& p : kPaths) {
    if (p.needs && !host_has(p.needs)) continue;
    for (const Shape& sh : kShapes) {
      PaddedRows pr = padded_rows(sh, 0);
      EXPECT_EQ(check_exact(pr.s, pr.args(), Target(p.target)), "")
          << p.path << ", shape " << sh.M << "x" << sh.N << "x" << sh.K;
    }
  }
  PaddedRows whole = padded_rows(kShapes[0], 0);
  std::string ir = lowering::to_string(lower(whole.s, whole.args(), "f"));
  EXPECT_NE(ir.find("loom.dot_u8s8s32"), std::string::npos) << ir;
  EXPECT_EQ(ir.find("select("), std::string::npos) << ir;
}

TEST(Tensorize, PaddingOtherThanZeroIsNotSkipped) {
  // Padded with 3, the products with the padding count: the select stays and does not match.
  PaddedRows pr = padded_rows(kShapes[0], 3);
  std::string msg = lower_error(pr.s, pr.args());
  expect_contains(msg, "stage 'C' at axis 'j.inner' does not match intrinsic 'dot_u8s8s32_16x4'");
  expect_contains(msg, "select(");
  expect_contains(msg, "not a load");
}

TEST(Tensorize, FloatPaddingIsNotSkipped) {
  // In floating point 0·w is NaN where w is infinite or NaN, so a float update keeps the
  // select of its zero-padded input, which does not match the intrinsic's load.
  Tensor a = te::placeholder({4}, DataType::Float(32), "a"), w = te::placeholder({16, 4}, DataType::Float(32), "w");
  IterVar kd = te::reduce_axis({0, 4}, "k");
  Tensor c = te::compute({16}, [&](Var i) { return te::sum(a(kd) * w(i, kd), {kd}); }, "c");
  auto impl = [](const std::vector<te::BufferRegion>&, const te::BufferRegion&) -> te::Expr {
    return te::make<te::BroadcastNode>(te::Expr(0.0f), 16);
  };
  te::TensorIntrin fdot = te::decl_tensor_intrin("fdot_16x4", c, {a, w}, {}, impl, impl);

  Tensor A = te::placeholder({6, 8}, DataType::Float(32), "A"), W = te::placeholder({32, 8}, DataType::Float(32), "W");
  Tensor P = te::ops::pad(A, {1, 0}, {1, 0});
  IterVar r = te::reduce_axis({0, 3}, "r"), k = te::reduce_axis({0, 8}, "k");
  Tensor C = te::compute({6, 32}, [&](Var m, Var n) { return te::sum(P(m + r, k) * W(n, k), {r, k}); }, "C");
  Schedule s = create_schedule({C});
  s[P].compute_inline();
  auto [no, ni] = s[C].split(s[C].axis(1), 16);
  auto [ko, ki] = s[C].split(k, 4);
  s[C].reorder({s[C].axis(0), no, r, ko, ni, ki});
  s[C].tensorize(ni, fdot);
  std::string msg = lower_error(s, {A, W, C});
  expect_contains(msg, "does not match intrinsic 'fdot_16x4'");
  expect_contains(msg, "not a load");
}

TEST(Tensorize, FullTilesRunOnlyTheIntrinsic) {
  // Whole tiles: no loop of the dot product is left; with tails the loops stay for them.
  auto whole = int8_matmul(4, 32, 16);
  std::string ir = lowering::to_string(lower(dot_schedule(whole, 16), whole.args(), "f"));
  EXPECT_EQ(ir.find("k.inner"), std::string::npos) << ir;
  auto tails = int8_matmul(4, 40, 18);
  ir = lowering::to_string(lower(dot_schedule(tails, 16), tails.args(), "f"));
  EXPECT_NE(ir.find("k.inner"), std::string::npos) << ir;
  EXPECT_NE(ir.find("loom.dot_u8s8s32"), std::string::npos) << ir;
}

TEST(Tensorize, WithRunTimeAccessChecks) {
  // LowerOptions::check_accesses asserts every element access it cannot prove in bounds (here
  // it proves them all); a tensorized nest drops the assertions of its loops.
  auto mm = int8_matmul(5, 40, 18);
  Schedule s = dot_schedule(mm, 16);
  EXPECT_EQ(check_exact(s, mm.args(), Target("llvm"), true), "");
  lowering::LowerOptions opts;
  opts.check_accesses = true;
  std::string ir = lowering::to_string(lower(s, mm.args(), "f", opts));
  EXPECT_NE(ir.find("loom.dot_u8s8s32"), std::string::npos) << ir;
}

/// A user's tensor intrinsic without reduction: 16 floats times 2, its body one vector
/// multiply of the input region stored to the output region.
te::TensorIntrin times_two() {
  Tensor in = te::placeholder({16}, DataType::Float(32), "in");
  Tensor out = te::compute({16}, [&](Var i) { return in(i) * 2.0f; }, "out");
  auto body = [](const std::vector<te::BufferRegion>& r, const te::BufferRegion&) -> te::Expr {
    return te::make<te::MulNode>(DataType::Float(32, 16), r[0].vload(0, 16),
                                 te::make<te::BroadcastNode>(te::Expr(2.0f), 16));
  };
  return te::decl_tensor_intrin("times_two_16", out, {in}, body);
}

TEST(Tensorize, UserIntrinsicWithABody) {
  for (int64_t n : {64, 40}) {
    Tensor A = te::placeholder({3, n}, DataType::Float(32), "A");
    Tensor C = te::compute({3, n}, [&](Var i, Var j) { return A(i, j) * 2.0f; }, "C");
    Schedule s = create_schedule({C});
    auto [jo, ji] = s[C].split(s[C].axis(1), 16);
    s[C].tensorize(ji, times_two());
    std::string ir = lowering::to_string(lower(s, {A, C}, "f"));
    EXPECT_NE(ir.find("x16(2f)"), std::string::npos) << ir;
    EXPECT_MATCHES_REFERENCE(s, (std::vector<Tensor>{A, C})) << ir;
  }
  // Times 3 is not what it declares.
  Tensor A = te::placeholder({3, 32}, DataType::Float(32), "A");
  Tensor C = te::compute({3, 32}, [&](Var i, Var j) { return A(i, j) * 3.0f; }, "C");
  Schedule s = create_schedule({C});
  auto [jo, ji] = s[C].split(s[C].axis(1), 16);
  s[C].tensorize(ji, times_two());
  try {
    lower(s, {A, C}, "f");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("they differ at 3f (stage) against 2f (intrinsic): a different constant"),
              std::string::npos)
        << e.what();
  }
}

TEST(Tensorize, WrongExtentIsNamed) {
  auto mm = int8_matmul(4, 32, 16);
  Schedule s = create_schedule({mm.C});
  schedule::Stage c = s[mm.C];
  auto [no, ni] = c.split(c.axis(1), 16);
  auto [ko, ki] = c.split(mm.k, 8);
  c.reorder({c.axis(0), no, ko, ni, ki});
  c.tensorize(ni, te::dot_u8s8s32(16));
  std::string msg = lower_error(s, mm.args());
  expect_contains(msg, "stage 'C' at axis 'j.inner' does not match intrinsic 'dot_u8s8s32_16x4'");
  expect_contains(msg, "loop 'k.inner' has extent 8 where the intrinsic's axis 'k' has 4");
}

TEST(Tensorize, WrongLoopOrderIsNamed) {
  auto mm = int8_matmul(4, 32, 16);
  Schedule s = create_schedule({mm.C});
  schedule::Stage c = s[mm.C];
  auto [no, ni] = c.split(c.axis(1), 16);
  auto [ko, ki] = c.split(mm.k, 4);
  c.reorder({c.axis(0), no, ko, ki, ni});
  c.tensorize(ki, te::dot_u8s8s32(16));
  std::string msg = lower_error(s, mm.args());
  expect_contains(msg, "loop 'k.inner' has extent 4 where the intrinsic's axis 'i' has 16");
}

TEST(Tensorize, WrongTypeIsNamed) {
  auto mm = int8_matmul(4, 32, 16, 16, DataType::Int(8));  // signed data: not u8·s8
  std::string msg = lower_error(dot_schedule(mm, 16), mm.args());
  expect_contains(msg, "it loads int8, the intrinsic uint8");
}

TEST(Tensorize, WrongExpressionIsNamed) {
  Tensor A = te::placeholder({4, 16}, DataType::UInt(8), "A");
  Tensor W = te::placeholder({2, 4, 16, 4}, DataType::Int(8), "W");
  IterVar k = te::reduce_axis({0, 16}, "k");
  Tensor C = te::compute(
      {4, 32},
      [&](Var m, Var n) {
        return te::sum(te::cast(DataType::Int(32), A(m, k)) * te::cast(DataType::Int(32), W(n / 16, k / 4, n % 16, k % 4)) +
                           1,
                       {k});
      },
      "C");
  Int8Matmul mm{A, W, C, k};
  std::string msg = lower_error(dot_schedule(mm, 16), mm.args());
  expect_contains(msg, "in the update, the stage computes");
  expect_contains(msg, "they differ at");
}

TEST(Tensorize, UnpackedLayoutIsRejectedByTheImplementation) {
  // W [K, N]: the 16x4 block of b is not contiguous.
  Tensor A = te::placeholder({4, 16}, DataType::UInt(8), "A");
  Tensor W = te::placeholder({16, 32}, DataType::Int(8), "W");
  IterVar k = te::reduce_axis({0, 16}, "k");
  Tensor C = te::compute(
      {4, 32},
      [&](Var m, Var n) { return te::sum(te::cast(DataType::Int(32), A(m, k)) * te::cast(DataType::Int(32), W(k, n)), {k}); },
      "C");
  Int8Matmul mm{A, W, C, k};
  std::string msg = lower_error(dot_schedule(mm, 16), mm.args());
  expect_contains(msg, "'b' (buffer 'W') must be one dense block of 16x4 bytes");
  expect_contains(msg, "strides are (1, 32)");
}

TEST(Tensorize, ScheduleMisuse) {
  auto mm = int8_matmul(4, 32, 16);
  Schedule s = create_schedule({mm.C});
  schedule::Stage c = s[mm.C];
  auto [no, ni] = c.split(c.axis(1), 16);
  c.tensorize(ni, te::dot_u8s8s32(16));
  EXPECT_THROW(c.tensorize(no, te::dot_u8s8s32(16)), Error);  // one per stage
  c.split(ni, 4);                                              // tensorized, then split
  expect_contains(lower_error(s, mm.args()), "axis 'j.inner' was split or fused after it was tensorized");
  EXPECT_THROW(c.tensorize(c.axis(1), te::dot_u8s8s32(16)), Error);  // not a leaf
  EXPECT_THROW(c.tensorize(no, nullptr), Error);
}

TEST(Tensorize, DeclarationErrors) {
  Tensor a = te::placeholder({4}, DataType::UInt(8), "a");
  IterVar k = te::reduce_axis({0, 4}, "k");
  Tensor c = te::compute({16}, [&](Var i) { return te::sum(te::cast(DataType::Int(32), a(k)), {k}); }, "c");
  auto impl = [](const std::vector<te::BufferRegion>&, const te::BufferRegion&) { return te::Expr(0); };
  EXPECT_THROW(te::decl_tensor_intrin("x", c, {}, {}, impl, impl), Error);       // input not listed
  EXPECT_THROW(te::decl_tensor_intrin("x", c, {a}, impl), Error);                // reduction without reset/update
  Tensor d = te::compute({16}, [&](Var i) { return te::cast(DataType::Int(32), a(i % 4)); }, "d");
  EXPECT_THROW(te::decl_tensor_intrin("x", d, {a}, impl), Error);                // index not an axis
  EXPECT_NO_THROW(te::decl_tensor_intrin("x", c, {a}, {}, impl, impl));
  EXPECT_THROW(te::dot_u8s8s32(1), Error);
}

}  // namespace
}  // namespace loom
