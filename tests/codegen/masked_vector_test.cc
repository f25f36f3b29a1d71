// Vector loads and stores of every element type and every lane count from 1 to 17, dense
// and guarded (a predicate per lane: llvm.masked.load / llvm.masked.store), compiled for
// the host and compared with te::evaluate or a scalar loop.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "loom/loom.h"
#include "loom/lower/passes.h"
#include "loom/lower/stmt.h"

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

const std::vector<DataType>& element_types() {
  static const std::vector<DataType> types{DataType::Float(16), DataType::Float(32), DataType::Float(64),
                                           DataType::Int(8),    DataType::Int(16),   DataType::Int(32),
                                           DataType::Int(64),   DataType::UInt(8),   DataType::Bool()};
  return types;
}

/// A value of element i that `t` holds exactly, of both signs where `t` has them.
double sample(DataType t, int64_t i) {
  if (t.is_bool()) return double((i * 7 + 3) % 3 != 0);
  if (t.is_uint()) return double((i * 37 + 11) % 251);
  if (t.is_float()) return double((i * 13 + 5) % 31 - 15) * 0.25;
  return double((i * 37 + 11) % 201 - 100);
}

NDArray filled(DataType t, int64_t n, int64_t seed) {
  NDArray a = NDArray::empty({n}, t);
  for (int64_t i = 0; i < n; ++i) a.set(i, sample(t, i + seed));
  return a;
}

std::string where(DataType t, int lanes, int64_t n, int64_t i) {
  return t.str() + " x" + std::to_string(lanes) + ", n=" + std::to_string(n) + ", element " + std::to_string(i);
}

/// out[i] = x[i] > y[i] ? x[i] : x[i] > 0 ? y[i] : 0 for i < n (for bool, x[i] ? y[i] : x[i]):
/// comparisons with a register and a constant, loads predicated by them and (for bool) the
/// i1 <-> i8 conversions of memory, all on `lanes`-wide vectors. n not a multiple of
/// `lanes` leaves the last vector guarded.
void check_elementwise(DataType t, int lanes, int64_t n) {
  te::Tensor x = te::placeholder({n}, t, "x");
  te::Tensor y = te::placeholder({n}, t, "y");
  te::Tensor out = te::compute(
      {n},
      [&](Var i) {
        if (t.is_bool()) return te::select(x(i), y(i), x(i));
        Expr zero = te::make_const(t, int64_t{0});
        return te::select(x(i) > y(i), x(i), te::select(x(i) > zero, y(i), zero));
      },
      "out");
  schedule::Schedule s = schedule::create_schedule({out});
  auto [o, i] = s[out].split(s[out].axis(0), Expr(lanes));
  s[out].vectorize(i);
  runtime::Module m = codegen::build(s, {x, y, out}, Target("llvm"), "sel");
  NDArray xa = filled(t, n, 0), ya = filled(t, n, 5), got = NDArray::empty({n}, t);
  for (int64_t k = 0; k < n; ++k) got.set(k, t.is_bool() ? 1 : 99);
  m.get_function("sel").call({xa.dltensor(), ya.dltensor(), got.dltensor()});
  NDArray want = te::evaluate({out}, {{x, xa}, {y, ya}})[0];
  for (int64_t k = 0; k < n; ++k) ASSERT_EQ(got.get(k), want.get(k)) << where(t, lanes, n, k);
}

TEST(MaskedVector, EveryTypeAndLaneCountThroughSchedule) {
  for (DataType t : element_types()) {
    for (int lanes = 1; lanes <= 17; ++lanes) {
      check_elementwise(t, lanes, 3 * lanes);      // dense, unguarded
      check_elementwise(t, lanes, 3 * lanes - 1);  // the last vector guarded, one lane off
      if (lanes > 2) check_elementwise(t, lanes, 2 * lanes + 1);  // the last vector one lane on
    }
  }
}

// ---- hand-written loop IR: predicated loads and stores with arbitrary lane masks

BufferArg buffer(const std::string& name, DataType t, int64_t n) {
  BufferArg a;
  a.name = name;
  a.handle = Var(name + "_handle", DataType::Handle());
  a.data = Var(name, DataType::Handle());
  a.dtype = t;
  a.shape.push_back(te::make_const(DataType::Int(32), n));
  return a;
}

/// Lane l of a vector starting at element `base` is on when (base + l) % 3 != 1 and
/// base + l < n: a mask with holes in the middle as well as a cut-off tail.
Expr lane_mask(Expr base, int lanes, int64_t n) {
  Expr idx = te::make<te::RampNode>(base, Expr(1), lanes);
  Expr bn = te::make<te::BroadcastNode>(Expr(int(n)), lanes);
  Expr three = te::make<te::BroadcastNode>(Expr(3), lanes);
  Expr one = te::make<te::BroadcastNode>(Expr(1), lanes);
  Expr in = te::make<te::BinaryNode<te::ExprKind::LT>>(DataType::Bool(lanes), idx, bn);
  Expr m3 = te::make<te::BinaryNode<te::ExprKind::FloorMod>>(DataType::Int(32, lanes), idx, three);
  Expr hole = te::make<te::BinaryNode<te::ExprKind::NE>>(DataType::Bool(lanes), m3, one);
  return te::make<te::BinaryNode<te::ExprKind::And>>(DataType::Bool(lanes), in, hole);
}

/// For each vector v: C[v] = A[v] where the mask holds (a masked load, zero elsewhere), and
/// D[v] = A[v] stored only where the mask holds (a masked store; D keeps its old values
/// elsewhere); the same through stride 2, G[v] = B[2 v] (a masked strided load or gather) and
/// S[2 v] = A[v] (a masked scatter).
void check_masked_ir(DataType t, int lanes) {
  const int64_t vectors = 3, n = vectors * lanes - (lanes > 1 ? 1 : 0);
  const int64_t size = vectors * lanes;
  BufferArg A = buffer("A", t, size), C = buffer("C", t, size), D = buffer("D", t, size);
  BufferArg B = buffer("B", t, 2 * size), G = buffer("G", t, size), S = buffer("S", t, 2 * size);
  Var v("v");
  Expr base = te::make<te::BinaryNode<te::ExprKind::Mul>>(DataType::Int(32), v, Expr(lanes));
  Expr index = lanes == 1 ? base : te::make<te::RampNode>(base, Expr(1), lanes);
  Expr mask = lanes == 1 ? te::make<te::BinaryNode<te::ExprKind::And>>(
                               DataType::Bool(), te::make<te::BinaryNode<te::ExprKind::LT>>(DataType::Bool(), base, Expr(int(n))),
                               te::make<te::BinaryNode<te::ExprKind::NE>>(
                                   DataType::Bool(), te::make<te::BinaryNode<te::ExprKind::FloorMod>>(DataType::Int(32), base, Expr(3)),
                                   Expr(1)))
                         : lane_mask(base, lanes, n);
  Expr masked = te::make<te::LoadNode>(t.with_lanes(lanes), A.data, index, mask);
  Expr plain = te::make<te::LoadNode>(t.with_lanes(lanes), A.data, index, Expr());
  Expr base2 = te::make<te::BinaryNode<te::ExprKind::Mul>>(DataType::Int(32), base, Expr(2));
  Expr index2 = lanes == 1 ? base2 : te::make<te::RampNode>(base2, Expr(2), lanes);
  Expr strided = te::make<te::LoadNode>(t.with_lanes(lanes), B.data, index2, mask);
  Stmt body = make_stmt<lowering::SeqStmtNode>(std::vector<Stmt>{
      make_stmt<lowering::StoreNode>(C.data, masked, index, Expr()), make_stmt<lowering::StoreNode>(D.data, plain, index, mask),
      make_stmt<lowering::StoreNode>(G.data, strided, index, Expr()), make_stmt<lowering::StoreNode>(S.data, plain, index2, mask)});
  LoweredFunc f;
  f.name = "masked";
  f.args = {A, C, D, B, G, S};
  f.body = make_stmt<lowering::ForNode>(v, Expr(0), Expr(int(vectors)), ForKind::kSerial, body);
  runtime::Module m = codegen::build({lowering::make_packed_api(f)}, Target("llvm"));
  NDArray a = filled(t, size, 1), c = filled(t, size, 2), d = filled(t, size, 3);
  NDArray b = filled(t, 2 * size, 4), g = filled(t, size, 5), sc = filled(t, 2 * size, 6);
  NDArray d0 = filled(t, size, 3), s0 = filled(t, 2 * size, 6);
  m.get_function("masked").call({a.dltensor(), c.dltensor(), d.dltensor(), b.dltensor(), g.dltensor(), sc.dltensor()});
  for (int64_t i = 0; i < size; ++i) {
    const bool on = i < n && i % 3 != 1;
    ASSERT_EQ(c.get(i), on ? a.get(i) : 0.0) << "masked load, " << where(t, lanes, n, i);
    ASSERT_EQ(d.get(i), on ? a.get(i) : d0.get(i)) << "masked store, " << where(t, lanes, n, i);
    ASSERT_EQ(g.get(i), on ? b.get(2 * i) : 0.0) << "masked strided load, " << where(t, lanes, n, i);
    ASSERT_EQ(sc.get(2 * i), on ? a.get(i) : s0.get(2 * i)) << "masked scatter, " << where(t, lanes, n, i);
    ASSERT_EQ(sc.get(2 * i + 1), s0.get(2 * i + 1)) << "masked scatter wrote between, " << where(t, lanes, n, i);
  }
}

TEST(MaskedVector, EveryTypeAndLaneCountWithHolesInTheMask) {
  for (DataType t : element_types())
    for (int lanes = 1; lanes <= 17; ++lanes) check_masked_ir(t, lanes);
}

/// elu and selu (x > 0 ? x : alpha (e^x - 1)) vectorized by `lanes` over n elements: the
/// compare's constant is spilled around the calls of exp and reloaded into the compare. This
/// exposed LLVM 19's miscompile of masked float16 vector compares (llvm-project #159723):
/// float16 elu over 5 lanes gave 0 for every x > 0.
void check_elu(DataType t, int lanes, int64_t n) {
  te::Tensor x = te::placeholder({n}, t, "x");
  te::Tensor e = te::ops::elu(x, 1.0, "e");
  te::Tensor s = te::ops::selu(x, 1.67326, 1.0507, "s");
  schedule::Schedule sch = schedule::create_schedule({e, s});
  for (const te::Tensor& out : {e, s}) {
    auto [o, i] = sch[out].split(sch[out].axis(0), Expr(lanes));
    sch[out].vectorize(i);
  }
  runtime::Module m = codegen::build(sch, {x, e, s}, Target("llvm"), "elu");
  NDArray xa = filled(t, n, 0), ge = NDArray::empty({n}, t), gs = NDArray::empty({n}, t);
  m.get_function("elu").call({xa.dltensor(), ge.dltensor(), gs.dltensor()});
  std::vector<NDArray> want = te::evaluate({e, s}, {{x, xa}});
  const double rel = t.bits() == 16 ? 2e-3 : t.bits() == 32 ? 1e-5 : 1e-12;
  for (int64_t k = 0; k < n; ++k) {
    for (auto [got, w, name] : {std::tuple{ge, want[0], "elu"}, std::tuple{gs, want[1], "selu"}}) {
      const double v = w.get(k);
      ASSERT_NEAR(got.get(k), v, rel * std::max(1.0, std::fabs(v))) << name << " of " << xa.get(k) << ", " << where(t, lanes, n, k);
    }
  }
}

TEST(MaskedVector, EluAndSeluEveryFloatTypeAndLaneCount) {
  for (DataType t : {DataType::Float(16), DataType::Float(32), DataType::Float(64)}) {
    for (int lanes = 1; lanes <= 17; ++lanes) {
      check_elu(t, lanes, 3 * lanes);
      check_elu(t, lanes, 3 * lanes - 1);
      if (lanes > 2) check_elu(t, lanes, 2 * lanes + 1);
    }
  }
}

}  // namespace
}  // namespace loom
