// The kernels the auto-scheduler's rules are tested on (auto_rules_test.cc for CPUs,
// auto_cuda_rules_test.cc for the GPU rules on the CUDA emulation), each on shapes that do
// and do not divide the tiles.
#pragma once
#include <algorithm>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "loom/schedule/trace.h"
#include "loom/te/ops.h"
#include "loom/tuner/search_space.h"

namespace loom::tuner::auto_cases {

using te::IterVar;
using te::Tensor;
using te::Var;

inline const DataType f32 = DataType::Float(32);

/// A kernel for the rules: its arguments (inputs, then outputs) and what describe() must say.
struct Case {
  std::string name;
  std::function<std::vector<Tensor>(bool divides)> make;
  std::vector<std::string> roles;  // substrings of SearchSpace::describe()
};

inline Tensor ph(std::vector<te::Expr> shape, const char* name) { return te::placeholder(std::move(shape), f32, name); }

inline std::vector<Case> cases() {
  return {
      {"matmul",
       [](bool d) {
         const int64_t m = d ? 64 : 37, n = d ? 32 : 29, k = d ? 32 : 23;
         Tensor A = ph({m, k}, "A"), B = ph({k, n}, "B");
         return std::vector<Tensor>{A, B, te::ops::matmul(A, B)};
       },
       {"matmul: multi-level tiled, through a cache_write"}},
      {"dense_bias_gelu",
       [](bool d) {
         const int64_t m = d ? 32 : 19, n = d ? 64 : 45, k = d ? 32 : 27;
         Tensor X = ph({m, k}, "X"), W = ph({n, k}, "W"), b = ph({n}, "b");
         Tensor y = te::ops::dense(X, W, b);
         Tensor g = te::compute({m, n}, [&](Var i, Var j) {
           te::Expr z = y(i, j);
           return 0.5f * z * (1.0f + te::erf(z * 0.70710678f));
         }, "gelu");
         return std::vector<Tensor>{X, W, b, g};
       },
       {"dense: multi-level tiled, computed in the tiles of gelu", "gelu: epilogue of dense", "bias_add: inline"}},
      {"residual_of_two_matmuls",
       [](bool d) {
         const int64_t m = d ? 32 : 21, n = d ? 16 : 13, k = d ? 16 : 11;
         Tensor A = ph({m, k}, "A"), B = ph({k, n}, "B"), C = ph({k, n}, "C");
         Tensor p = te::ops::matmul(A, B, false, false, "p"), q = te::ops::matmul(A, C, false, false, "q");
         Tensor r = te::compute({m, n}, [&](Var i, Var j) { return p(i, j) + q(i, j); }, "residual");
         return std::vector<Tensor>{A, B, C, r};
       },
       {"p: multi-level tiled, through a cache_write", "q: multi-level tiled, computed in the tiles of residual"}},
      {"softmax",
       [](bool d) {
         Tensor X = ph({d ? 8 : 7, d ? 64 : 45}, "X");
         return std::vector<Tensor>{X, te::ops::softmax(X, -1)};
       },
       {"softmax_maxelem: reduction", "softmax_exp: placed", "softmax_expsum: reduction", "softmax: injective"}},
      {"softmax_outer_axis",
       [](bool d) {
         Tensor X = ph({d ? 32 : 27, d ? 16 : 13}, "X");
         return std::vector<Tensor>{X, te::ops::softmax(X, 0)};
       },
       {"softmax: injective"}},
      {"layer_norm",
       [](bool d) {
         const int64_t n = d ? 64 : 50;
         Tensor X = ph({d ? 8 : 5, n}, "X"), g = ph({n}, "gamma"), b = ph({n}, "beta");
         return std::vector<Tensor>{X, g, b, te::ops::layer_norm(X, g, b)};
       },
       {"layer_norm_mean: reduction", "layer_norm_var: reduction"}},
      {"elementwise_chain",
       [](bool d) {
         Tensor X = ph({d ? 32 : 33, d ? 64 : 65}, "X"), Y = ph({d ? 64 : 65}, "Y");
         Tensor e = te::compute(X.shape(), [&](Var i, Var j) { return te::exp(X(i, j) * 0.5f); }, "scaled_exp");
         Tensor a = te::compute(X.shape(), [&](Var i, Var j) { return e(i, j) + Y(j); }, "add_row");
         Tensor t = te::compute(X.shape(), [&](Var i, Var j) { return te::tanh(a(i, j)); }, "chain");
         return std::vector<Tensor>{X, Y, t};
       },
       {"scaled_exp: inline", "add_row: inline", "chain: injective"}},
      {"transpose",
       [](bool d) {
         Tensor X = ph({2, d ? 16 : 11, 4, d ? 16 : 9}, "X");
         return std::vector<Tensor>{X, te::ops::transpose(X, {0, 2, 1, 3})};
       },
       {"transpose: injective"}},
      {"row_and_column_sums",
       [](bool d) {
         Tensor X = ph({d ? 16 : 13, d ? 64 : 37}, "X");
         Tensor rows = te::ops::reduce(X, te::ops::ReduceKind::kSum, {1}, false, "rows");
         Tensor cols = te::ops::reduce(X, te::ops::ReduceKind::kMax, {0}, false, "cols");
         return std::vector<Tensor>{X, rows, cols};
       },
       {"rows: reduction", "cols: reduction"}},
      {"sum_all",
       [](bool d) {
         Tensor X = ph({d ? 64 : 61, d ? 64 : 67}, "X");
         return std::vector<Tensor>{X, te::ops::reduce(X, te::ops::ReduceKind::kSum, {}, false, "total")};
       },
       {"total: reduction"}},
      {"global_avg_pool",
       [](bool d) {
         Tensor X = ph({1, d ? 32 : 21, 7, 7}, "X");
         return std::vector<Tensor>{X, te::ops::global_avg_pool2d(X)};
       },
       {"reduction"}},
      {"max_pool_padded",
       [](bool d) {
         Tensor X = ph({1, 4, d ? 16 : 13, d ? 16 : 11}, "X");
         return std::vector<Tensor>{X, te::ops::max_pool2d(X, {3, 3}, {2, 2}, {1, 1})};
       },
       {"reduction"}},
      {"conv2d_padded",
       [](bool d) {
         Tensor X = ph({1, d ? 8 : 5, d ? 14 : 9, d ? 14 : 11}, "X"), W = ph({d ? 16 : 7, d ? 8 : 5, 3, 3}, "W");
         return std::vector<Tensor>{X, W, te::ops::conv2d_nchw(X, W, {1, 1}, {1, 1})};
       },
       {"conv2d_nchw: multi-level tiled, through a cache_write", "pad: placed"}},
  };
}

/// The rules' default config, then random canonical configs of the rules' sketches (seeded).
inline std::vector<int64_t> configs(const SearchSpace& sp, uint64_t seed, int n) {
  std::vector<int64_t> out{sp.default_index()};
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> pick(0, sp.space().size() - 1);
  for (int tries = 0; int(out.size()) < n && tries < 50 * n; ++tries) {
    const int64_t c = sp.canonical(pick(rng));
    if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  }
  return out;
}

/// Config `index` of `sp`, and its steps (through their JSON form) replayed on a fresh build of
/// the case's computation; nullopt when the rules reject the config.
struct Replayed {
  Instance original;
  Instance replayed;
};
inline std::optional<Replayed> replay_config(const SearchSpace& sp, const Case& c, bool divides, int64_t index) {
  Replayed r;
  try {
    r.original = sp.instantiate(sp.space().get(index));
  } catch (const InstantiationError&) {
    return std::nullopt;
  }
  const std::string json = schedule::steps_to_json(sp.steps(sp.space().get(index)));
  r.replayed.args = c.make(divides);
  r.replayed.schedule = schedule::create_schedule(outputs_of(r.replayed.args));
  schedule::apply_steps(r.replayed.schedule, schedule::steps_from_json(json));
  return r;
}

}  // namespace loom::tuner::auto_cases
