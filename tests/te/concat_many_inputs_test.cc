// concat of many inputs: the compute picks the input with a balanced tree of selects (depth
// log2 n), so that folding it and predicating its loads stay linear in n (the model fuzzer
// found a concat of 5000 inputs taking minutes to fold, and one of 1000 taking 900 MB to
// compile, when it was a chain of n selects); consecutive copies of one input are one read
// modulo its extent (a concat of 5000 copies took 15 s of LLVM for 5000 loads).
#include <gtest/gtest.h>

#include <functional>

#include "loom/te/ops.h"
#include "naive_reference.h"

namespace {

using namespace loom::test::naive;

/// The deepest nesting of selects in `e`.
int select_depth(const te::Expr& e) {
  const auto* s = e.as<te::SelectNode>();
  if (!s) return 0;
  return 1 + std::max(select_depth(s->true_value), select_depth(s->false_value));
}

TEST(ConcatManyInputs, SelectsFormABalancedTree) {
  for (int n : {1, 2, 3, 7, 64, 1000}) {
    std::vector<Tensor> in;
    for (int i = 0; i < n; ++i) in.push_back(ph({2, 1 + i % 3}, "x" + std::to_string(i)));
    Tensor y = ops::concat(in, 1);
    int depth = select_depth(y->op->body.at(0));
    int log2 = 0;
    while ((1 << log2) < n) ++log2;
    EXPECT_EQ(depth, log2) << n << " inputs";
  }
}

TEST(ConcatManyInputs, PicksEveryInputAlongEachAxis) {
  // Uneven extents on the concat axis, on the first, a middle and the last axis.
  for (int axis : {0, 1, -1}) {
    std::vector<Tensor> in;
    std::vector<Ref> refs;
    Inputs inputs;
    int64_t total = 0;
    for (int i = 0; i < 9; ++i) {
      int64_t ext = 1 + (i * 5) % 4;
      Shape s = {3, 4, 5};
      s[size_t(axis < 0 ? axis + 3 : axis)] = ext;
      in.push_back(ph(s, "x" + std::to_string(i)));
      refs.push_back(inputs.add(in.back()));
      total += ext;
    }
    size_t ax = size_t(axis < 0 ? axis + 3 : axis);
    Tensor y = ops::concat(in, axis);
    Shape out = {3, 4, 5};
    out[ax] = total;
    ASSERT_EQ(shape_of(y), out);
    Ref want(out);
    for (int64_t f = 0; f < numel(out); ++f) {
      Shape idx = want.unravel(f);
      int64_t k = idx[ax];
      size_t t = 0;
      while (k >= refs[t].shape[ax]) k -= refs[t++].shape[ax];
      idx[ax] = k;
      want.v[size_t(f)] = refs[t].v[size_t(refs[t].ravel(idx))];
    }
    expect_close(inputs.eval(y), want);
  }
}

TEST(ConcatManyInputs, CopiesOfOneInputAreOneRunReadModuloItsExtent) {
  // [a, a, a, b, a, a, c] on axis 1: runs a×3, b, a×2, c, so a tree of depth 2 over 4 runs.
  Inputs inputs;
  Tensor a = ph({2, 3}, "a"), b = ph({2, 2}, "b"), c = ph({2, 1}, "c");
  Ref ra = inputs.add(a), rb = inputs.add(b), rc = inputs.add(c);
  Tensor y = ops::concat({a, a, a, b, a, a, c}, 1);
  EXPECT_EQ(select_depth(y->op->body.at(0)), 2);
  ASSERT_EQ(shape_of(y), (Shape{2, 18}));
  Ref want({2, 18});
  const std::vector<std::pair<const Ref*, int64_t>> parts = {{&ra, 3}, {&ra, 3}, {&ra, 3}, {&rb, 2},
                                                             {&ra, 3}, {&ra, 3}, {&rc, 1}};
  for (int64_t r = 0; r < 2; ++r) {
    int64_t col = 0;
    for (const auto& [ref, ext] : parts)
      for (int64_t k = 0; k < ext; ++k) want({r, col++}) = (*ref)({r, k});
  }
  expect_close(inputs.eval(y), want, 0.0);
  // 5000 copies (what the model fuzzer writes): one read, no selects.
  Tensor many = ops::concat(std::vector<Tensor>(5000, a), 1);
  EXPECT_EQ(select_depth(many->op->body.at(0)), 0);
  NDArray got = inputs.eval(many);
  for (int64_t col : {0, 1, 2, 3, 7, 14999})
    EXPECT_EQ(got.get(1 * 15000 + col), ra({1, col % 3})) << "column " << col;
}

}  // namespace
