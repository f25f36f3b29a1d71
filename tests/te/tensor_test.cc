// Tensors and operations: placeholder, compute, reductions and the op graph.
#include <gtest/gtest.h>

#include "loom/te/expr_functor.h"
#include "loom/te/tensor.h"

namespace loom::te {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(TensorTest, PlaceholderShapeAndType) {
  Tensor A = placeholder({16, int64_t(8)}, DataType::Float(16), "A");
  EXPECT_EQ(A.name(), "A");
  EXPECT_EQ(A.ndim(), 2u);
  EXPECT_EQ(A.dtype(), DataType::Float(16));
  EXPECT_EQ(A.op()->kind, OpKind::kPlaceholder);
  EXPECT_EQ(A.shape()[1].dtype(), DataType::Int(32));  // int64 constants narrowed
  EXPECT_EQ(as_const_int(A.shape()[1]), 8);
  EXPECT_TRUE(A.op()->input_tensors().empty());
}

TEST(TensorTest, ExtentsMustBePositiveAndFitInt32Indices) {
  const DataType f32 = DataType::Float(32);
  std::string e = error_of([&] { placeholder({-4}, f32, "A"); });
  EXPECT_NE(e.find("placeholder 'A': extent of dimension 0 is -4 (extents must be >= 1)"), std::string::npos) << e;
  e = error_of([&] { placeholder({4, 0}, f32, "Z"); });
  EXPECT_NE(e.find("placeholder 'Z': extent of dimension 1 is 0"), std::string::npos) << e;
  e = error_of([&] { placeholder({int64_t(9223372036854775807LL), 64}, f32, "H"); });
  EXPECT_NE(e.find("placeholder 'H': extent of dimension 0 is 9223372036854775807, larger than the largest extent"),
            std::string::npos)
      << e;
  e = error_of([&] { placeholder({65536, 65536}, f32, "W"); });
  EXPECT_NE(e.find("placeholder 'W' (flat indices are int32): shape [65536, 65536] has more than 2147483647 elements"),
            std::string::npos)
      << e;
  Tensor A = placeholder({8}, f32, "A");
  e = error_of([&] { compute({int64_t(3) << 31}, [&](Var i) { return A(0); }, "C"); });
  EXPECT_NE(e.find("compute 'C': extent of dimension 0 is 6442450944"), std::string::npos) << e;
  e = error_of([&] { reduce_axis({0, -1}, "k"); });
  EXPECT_NE(e.find("reduce_axis 'k': the extent is -1"), std::string::npos) << e;
  EXPECT_EQ(error_of([&] { placeholder({2147483647}, DataType::Int(8), "Big"); }), "");
}

TEST(TensorTest, ElementReadChecksIndexCount) {
  Tensor A = placeholder({4, 4}, DataType::Float(32), "A");
  Var i("i");
  Expr e = A(i, int64_t(2));
  auto* load = e.as<ProducerLoadNode>();
  ASSERT_NE(load, nullptr);
  EXPECT_EQ(load->indices[1].dtype(), DataType::Int(32));
  EXPECT_EQ(e.dtype(), DataType::Float(32));
  std::string msg = error_of([&] { A(i); });
  EXPECT_NE(msg.find("'A'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("2"), std::string::npos) << msg;
  EXPECT_NE(msg.find("1"), std::string::npos) << msg;
  EXPECT_THROW(A(i, Var("f", DataType::Float(32))), Error);
}

TEST(TensorTest, ComputeMakesOneAxisPerDimension) {
  Tensor A = placeholder({3, 5}, DataType::Float(32), "A");
  Var seen_i, seen_j;
  Tensor B = compute({3, 5}, [&](Var i, Var j) {
    seen_i = i;
    seen_j = j;
    return A(i, j) * 2.0f;
  }, "B", "elemwise");
  const Operation& op = B.op();
  EXPECT_EQ(op->kind, OpKind::kCompute);
  EXPECT_EQ(op->tag, "elemwise");
  ASSERT_EQ(op->axis.size(), 2u);
  EXPECT_TRUE(op->axis[0].var().same_as(seen_i));
  EXPECT_TRUE(op->axis[1].var().same_as(seen_j));
  EXPECT_EQ(op->axis[0].name(), "i");
  EXPECT_EQ(op->axis[1].name(), "j");
  EXPECT_TRUE(is_zero(op->axis[1].dom().min));
  EXPECT_EQ(as_const_int(op->axis[1].dom().extent), 5);
  EXPECT_EQ(op->axis[0].type(), IterVarType::kDataPar);
  EXPECT_TRUE(op->reduce_axis.empty());
  EXPECT_EQ(as_const_int(B.shape()[1]), 5);
  ASSERT_EQ(op->input_tensors().size(), 1u);
  EXPECT_TRUE(op->input_tensors()[0] == A);
}

TEST(TensorTest, ManyDimensionsGetNumberedAxes) {
  Tensor T = compute({1, 2, 3, 4, 5}, [](Var a, Var b, Var c, Var d, Var e) { return a + b + c + d + e; }, "T");
  ASSERT_EQ(T.op()->axis.size(), 5u);
  EXPECT_EQ(T.op()->axis[4].name(), "ax4");
  EXPECT_EQ(T.dtype(), DataType::Int(32));
}

TEST(TensorTest, ReductionAxesComeFromTheBody) {
  Tensor A = placeholder({8, 4}, DataType::Float(32), "A");
  Tensor B = placeholder({4, 6}, DataType::Float(32), "B");
  IterVar k = reduce_axis({0, 4}, "k");
  EXPECT_EQ(k.type(), IterVarType::kCommReduce);
  Tensor C = compute({8, 6}, [&](Var i, Var j) { return sum(A(i, k) * B(k, j), {k}); }, "C");
  ASSERT_EQ(C.op()->reduce_axis.size(), 1u);
  EXPECT_TRUE(C.op()->reduce_axis[0] == k);
  auto* r = C.op()->body[0].as<ReduceNode>();
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->value_index, 0);
  EXPECT_TRUE(is_one(r->condition));
  auto inputs = C.op()->input_tensors();
  ASSERT_EQ(inputs.size(), 2u);
  EXPECT_TRUE(inputs[0] == A);
  EXPECT_TRUE(inputs[1] == B);
}

TEST(TensorTest, NestedReductionIsRejected) {
  Tensor A = placeholder({8, 4}, DataType::Float(32), "A");
  IterVar k = reduce_axis({0, 4}, "k");
  std::string msg = error_of([&] {
    compute({8}, [&](Var i) { return sum(A(i, k), {k}) + 1.0f; }, "C");
  });
  EXPECT_NE(msg.find("compute 'C': a reduction must be the whole body, found it nested in"), std::string::npos) << msg;
}

TEST(TensorTest, ReduceNeedsReduceAxes) {
  Tensor A = placeholder({8, 4}, DataType::Float(32), "A");
  IterVar t = thread_axis("threadIdx.x");
  EXPECT_EQ(t.type(), IterVarType::kThreadIndex);
  EXPECT_EQ(t->thread_tag, "threadIdx.x");
  EXPECT_THROW(sum(A(0, t), {t}), Error);
}

TEST(TensorTest, TupleReducerMakesOneReducePerValue) {
  auto argmax = comm_reducer(
      [](const std::vector<Var>& x, const std::vector<Var>& y) {
        Expr keep = x[1] >= y[1];
        return std::vector<Expr>{select(keep, x[0], y[0]), select(keep, x[1], y[1])};
      },
      [](const std::vector<DataType>& t) { return std::vector<Expr>{make_const(t[0], -1), min_value(t[1])}; },
      {DataType::Int(32), DataType::Float(32)});
  Tensor X = placeholder({4, 7}, DataType::Float(32), "X");
  IterVar r = reduce_axis({0, 7}, "r");
  auto outs = compute_multi({4}, [&](const std::vector<Var>& v) {
    return reduce(argmax, {Expr(r), X(v[0], r)}, {r});
  }, "argmax");
  ASSERT_EQ(outs.size(), 2u);
  EXPECT_EQ(outs[0].dtype(), DataType::Int(32));
  EXPECT_EQ(outs[1].dtype(), DataType::Float(32));
  EXPECT_EQ(outs[1].value_index(), 1);
  EXPECT_TRUE(outs[0].op() == outs[1].op());
  EXPECT_FALSE(outs[0] == outs[1]);
  EXPECT_TRUE(outs[0] < outs[1]);
  EXPECT_EQ(outs[0].op()->reduce_axis.size(), 1u);
}

TEST(TensorTest, TensorIdentityIsOpAndIndex) {
  Tensor A = placeholder({4}, DataType::Float(32), "A");
  Tensor again = output(A.op(), 0);
  EXPECT_TRUE(A == again);
  EXPECT_FALSE(A < again);
  EXPECT_FALSE(again < A);
  Tensor B = placeholder({4}, DataType::Float(32), "A");
  EXPECT_TRUE(A != B);
  EXPECT_THROW(output(A.op(), 1), Error);
}

TEST(TensorTest, PostDfsOrderPutsInputsFirst) {
  Tensor A = placeholder({4}, DataType::Float(32), "A");
  Tensor B = compute({4}, [&](Var i) { return A(i) + 1.0f; }, "B");
  Tensor C = compute({4}, [&](Var i) { return A(i) * B(i); }, "C");
  Tensor D = compute({4}, [&](Var i) { return B(i) - C(i); }, "D");
  auto order = post_dfs_order({D});
  ASSERT_EQ(order.size(), 4u);
  EXPECT_EQ(order[0]->name, "A");
  EXPECT_EQ(order[1]->name, "B");
  EXPECT_EQ(order[2]->name, "C");
  EXPECT_EQ(order[3]->name, "D");
  EXPECT_EQ(post_dfs_order({D, C, B}).size(), 4u);
}

TEST(TensorTest, BuiltinReducers) {
  Tensor A = placeholder({4, 4}, DataType::Int(32), "A");
  IterVar k = reduce_axis({0, 4}, "k");
  Var i("i");
  auto identity_of = [](const Expr& e) { return e.as<ReduceNode>()->combiner->identity[0]; };
  EXPECT_EQ(as_const_int(identity_of(sum(A(i, k), {k}))), 0);
  EXPECT_EQ(as_const_int(identity_of(prod(A(i, k), {k}))), 1);
  EXPECT_EQ(as_const_int(identity_of(max_reduce(A(i, k), {k}))), INT32_MIN);
  EXPECT_EQ(as_const_int(identity_of(min_reduce(A(i, k), {k}))), INT32_MAX);
  Expr cond = sum(A(i, k), {k}, k < 2).as<ReduceNode>()->condition;
  EXPECT_EQ(to_string(cond), "(k < 2)");
}

TEST(TensorTest, ReplaceTensorsRebuildsOnlyWhatReadsThem) {
  Tensor A = placeholder({4, 3}, DataType::Float(32), "A");
  Tensor B = placeholder({4, 3}, DataType::Float(32), "B");
  Tensor up = compute({4, 3}, [&](Var i, Var j) { return B(i, j) * 2.0f; }, "up", "elemwise");
  Tensor mid = compute({4, 3}, [&](Var i, Var j) { return A(i, j) + up(i, j); }, "mid", "broadcast");
  IterVar k = reduce_axis({0, 3}, "k");
  Tensor out = compute({4}, [&](Var i) { return sum(mid(i, k), {k}); }, "out");
  Tensor A2 = placeholder({4, 3}, DataType::Float(32), "A2");
  std::vector<Tensor> r = replace_tensors({out}, {{A, A2}});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_NE(r[0], out);
  EXPECT_EQ(r[0]->op->name, "out");
  EXPECT_EQ(r[0]->op->reduce_axis.size(), 1u);
  Tensor mid2 = r[0]->op->input_tensors()[0];
  EXPECT_NE(mid2, mid);
  EXPECT_EQ(mid2->op->tag, "broadcast");
  auto in = mid2->op->input_tensors();
  ASSERT_EQ(in.size(), 2u);
  EXPECT_EQ(in[0], A2);
  EXPECT_EQ(in[1], up) << "upstream of the replacement stays shared";
  // An output that is a key is replaced itself; unrelated outputs are untouched.
  std::vector<Tensor> r2 = replace_tensors({mid, up}, {{mid, A2}});
  EXPECT_EQ(r2[0], A2);
  EXPECT_EQ(r2[1], up);
  Tensor wrong = placeholder({4, 2}, DataType::Float(32), "wrong");
  EXPECT_THROW(replace_tensors({out}, {{A, wrong}}), Error);
  EXPECT_THROW(replace_tensors({out}, {{A, placeholder({4, 3}, DataType::Int(32), "i")}}), Error);
}

}  // namespace
}  // namespace loom::te
