// Differential fuzz of the auto-scheduler: random te computations (elementwise chains,
// broadcasts, transposes, pads and strided slices, reductions over random axes, matmul- and
// convolution-like reductions with data reuse, several outputs) under random decisions of the
// rules, each compiled and compared with te::evaluate. LOOM_AUTO_FUZZ_N sets the number of
// computations (default 1000), LOOM_AUTO_FUZZ_SEED the first seed; a mismatch prints the
// computation, the config and its steps. The GPU leg runs the GPU rules' decisions on target
// cuda through the CUDA emulation (codegen::build_cuda_emulated: a host compile per config,
// so fewer computations, LOOM_AUTO_FUZZ_GPU_N, default 40).
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <set>

#include "common/test_util.h"
#include "loom/lower/lower.h"
#include "loom/tuner/auto/auto_space.h"
#include "loom/tuner/auto/compute_dag.h"

namespace loom::tuner {
namespace {

using te::Expr;
using te::IterVar;
using te::Tensor;
using te::Var;

int env_int(const char* name, int def) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) : def;
}

std::vector<int64_t> shape_of(const Tensor& t) {
  std::vector<int64_t> s;
  for (const Expr& d : t.shape()) s.push_back(*te::as_const_int(d));
  return s;
}

std::vector<Expr> exprs(const std::vector<int64_t>& s) {
  std::vector<Expr> e;
  for (int64_t d : s) e.push_back(Expr(d));
  return e;
}

std::vector<Expr> vars(const std::vector<Var>& v) { return {v.begin(), v.end()}; }

/// Builds a random computation from one seed.
class RandomComputation {
 public:
  explicit RandomComputation(uint64_t seed) : rng_(seed) {}

  std::vector<Tensor> make() {
    const int n_inputs = 1 + pick(2);
    for (int i = 0; i < n_inputs; ++i) values_.push_back(input(random_shape()));
    const int n_ops = 2 + pick(5);
    for (int i = 0; i < n_ops; ++i) values_.push_back(op(values_[size_t(pick(int(values_.size())))]));
    // The last value is an output; sometimes a computed one before it too.
    std::vector<Tensor> outputs{values_.back()};
    if (coin(0.3)) {
      for (size_t i = values_.size() - 1; i-- > 0;)
        if (values_[i].op()->kind == te::OpKind::kCompute) {
          outputs.insert(outputs.begin(), values_[i]);
          break;
        }
    }
    // The inputs the outputs read, in the order they were made.
    std::set<const te::OperationNode*> used;
    for (const te::Operation& op : te::post_dfs_order(outputs)) used.insert(op.get());
    std::vector<Tensor> args;
    for (const Tensor& t : inputs_)
      if (used.count(t.op().get())) args.push_back(t);
    args.insert(args.end(), outputs.begin(), outputs.end());
    return args;
  }

 private:
  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }
  bool coin(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  int64_t extent() {
    static const int64_t kExtents[] = {1, 2, 3, 4, 5, 7, 8, 9, 12, 16, 17};
    return kExtents[pick(11)];
  }
  std::vector<int64_t> random_shape() {
    std::vector<int64_t> s(size_t(1 + pick(3)));
    for (int64_t& d : s) d = extent();
    return s;
  }
  Tensor input(std::vector<int64_t> shape) {
    Tensor t = te::placeholder(exprs(shape), DataType::Float(32), fmt::format("in{}", inputs_.size()));
    inputs_.push_back(t);
    return t;
  }
  std::string name(const char* what) { return fmt::format("{}{}", what, ++ops_); }

  Tensor op(const Tensor& t) {
    const std::vector<int64_t> s = shape_of(t);
    switch (pick(9)) {
      case 0: return unary(t);
      case 1: return binary(t);
      case 2: if (s.size() >= 2) return transpose(t); return unary(t);
      case 3: return pad(t);
      case 4: return reduce(t);
      case 5: if (s.size() == 2) return matmul(t); return reduce(t);
      case 6: if (s.size() == 2 && s[1] >= 3) return conv1d(t); return binary(t);
      case 7: return slice(t);
      default: return binary(t);
    }
  }

  Tensor unary(const Tensor& t) {
    const int k = pick(6);
    return te::compute(exprs(shape_of(t)), te::FCompute([&](const std::vector<Var>& v) -> Expr {
      Expr x = t(vars(v));
      switch (k) {
        case 0: return x * 1.5f + 0.25f;
        case 1: return te::exp(-te::abs(x));
        case 2: return te::tanh(x);
        case 3: return te::max(x, 0.0f);
        case 4: return x * x;
        default: return te::sqrt(te::abs(x) + 1.0f);
      }
    }), name("unary"));
  }

  /// t with a tensor of its shape, or of a suffix of its shape (broadcast).
  Tensor binary(const Tensor& t) {
    const std::vector<int64_t> s = shape_of(t);
    const size_t keep = coin(0.5) ? s.size() : size_t(pick(int(s.size())) + 1);
    const std::vector<int64_t> suffix(s.end() - std::ptrdiff_t(keep), s.end());
    Tensor other;
    for (const Tensor& v : values_)
      if (v != t && shape_of(v) == suffix && coin(0.7)) other = v;
    if (!other.defined()) other = input(suffix);
    const int k = pick(3);
    return te::compute(exprs(s), te::FCompute([&](const std::vector<Var>& v) -> Expr {
      std::vector<Expr> idx(v.end() - std::ptrdiff_t(keep), v.end());
      Expr a = t(vars(v)), b = other(idx);
      return k == 0 ? a + b : k == 1 ? a * b : te::max(a, b);
    }), name("binary"));
  }

  Tensor transpose(const Tensor& t) {
    const std::vector<int64_t> s = shape_of(t);
    std::vector<size_t> perm(s.size());
    for (size_t i = 0; i < perm.size(); ++i) perm[i] = i;
    std::shuffle(perm.begin(), perm.end(), rng_);
    std::vector<int64_t> out(s.size());
    for (size_t i = 0; i < s.size(); ++i) out[i] = s[perm[i]];
    return te::compute(exprs(out), te::FCompute([&](const std::vector<Var>& v) -> Expr {
      std::vector<Expr> idx(s.size());
      for (size_t i = 0; i < s.size(); ++i) idx[perm[i]] = v[i];
      return t(idx);
    }), name("transpose"));
  }

  Tensor pad(const Tensor& t) {
    const std::vector<int64_t> s = shape_of(t);
    const size_t d = size_t(pick(int(s.size())));
    const int64_t before = pick(3), after = pick(3);
    std::vector<int64_t> out = s;
    out[d] += before + after;
    return te::compute(exprs(out), te::FCompute([&](const std::vector<Var>& v) -> Expr {
      std::vector<Expr> idx = vars(v);
      Expr x = v[d];
      idx[d] = x - Expr(before);
      Expr in = x >= Expr(before) && x < Expr(before + s[d]);
      return te::select(in, t(idx), te::make_const(DataType::Float(32), 0.0));
    }), name("pad"));
  }

  Tensor slice(const Tensor& t) {
    const std::vector<int64_t> s = shape_of(t);
    const size_t d = size_t(pick(int(s.size())));
    std::vector<int64_t> out = s;
    out[d] = (s[d] + 1) / 2;
    return te::compute(exprs(out), te::FCompute([&](const std::vector<Var>& v) -> Expr {
      std::vector<Expr> idx = vars(v);
      idx[d] = v[d] * 2;
      return t(idx);
    }), name("slice"));
  }

  Tensor reduce(const Tensor& t) {
    const std::vector<int64_t> s = shape_of(t);
    std::vector<bool> red(s.size());
    bool any = false;
    for (size_t i = 0; i < s.size(); ++i) any |= (red[i] = coin(0.5));
    if (!any) red[size_t(pick(int(s.size())))] = true;
    std::vector<int64_t> out;
    std::vector<IterVar> axes;
    for (size_t i = 0; i < s.size(); ++i) {
      if (red[i]) axes.push_back(te::reduce_axis({0, s[i]}, fmt::format("r{}", i)));
      else out.push_back(s[i]);
    }
    const bool keep_one = out.empty();
    if (keep_one) out.push_back(1);
    const bool use_max = coin(0.4);
    return te::compute(exprs(out), te::FCompute([&](const std::vector<Var>& v) -> Expr {
      std::vector<Expr> idx;
      size_t j = 0, r = 0;
      for (size_t i = 0; i < s.size(); ++i) idx.push_back(red[i] ? Expr(axes[r++]) : Expr(v[j++]));
      return use_max ? te::max_reduce(t(idx), axes) : te::sum(t(idx), axes);
    }), name("reduce"));
  }

  Tensor matmul(const Tensor& t) {
    const std::vector<int64_t> s = shape_of(t);
    Tensor w = input({s[1], extent()});
    const int64_t n = shape_of(w)[1];
    IterVar k = te::reduce_axis({0, s[1]}, "k");
    return te::compute({Expr(s[0]), Expr(n)}, [&](Var i, Var j) { return te::sum(t(i, k) * w(k, j), {k}); },
                       name("matmul"));
  }

  Tensor conv1d(const Tensor& t) {
    const std::vector<int64_t> s = shape_of(t);
    const int64_t r = 2 + pick(2);
    Tensor w = input({s[0], r});
    IterVar k = te::reduce_axis({0, r}, "rk");
    return te::compute({Expr(s[0]), Expr(s[1] - r + 1)},
                       [&](Var c, Var x) { return te::sum(t(c, x + k) * w(c, k), {k}); }, name("conv"));
  }

  std::mt19937_64 rng_;
  std::vector<Tensor> values_, inputs_;
  int ops_ = 0;
};

std::string describe(const std::vector<Tensor>& args) {
  std::string out;
  for (const te::Operation& op : te::post_dfs_order(outputs_of(args))) {
    if (op->kind == te::OpKind::kPlaceholder) {
      out += fmt::format("  {} = placeholder{}\n", op->name, te::output(op).shape().size());
      continue;
    }
    for (const Expr& b : op->body) out += fmt::format("  {} = {}\n", op->name, te::to_string(b));
  }
  return out;
}

TEST(AutoFuzz, RandomComputationsUnderRandomDecisionsMatchTheReference) {
  const int n = env_int("LOOM_AUTO_FUZZ_N", 1000);
  const uint64_t seed0 = uint64_t(env_int("LOOM_AUTO_FUZZ_SEED", 1));
  constexpr int kDecisions = 2;
  int mismatches = 0, rejected = 0, configs = 0, roles_tiled = 0, roles_reduction = 0;
  for (int c = 0; c < n; ++c) {
    const uint64_t seed = seed0 + uint64_t(c);
    std::vector<Tensor> args = RandomComputation(seed).make();
    std::shared_ptr<const SearchSpace> sp;
    try {
      sp = make_auto_space(args, Target("llvm"), AutoOptions{false});
    } catch (const Error& e) {
      ADD_FAILURE() << "seed " << seed << ": no space: " << e.what() << "\n" << describe(args);
      ++mismatches;
      continue;
    }
    const std::string roles = sp->describe();
    roles_tiled += roles.find("multi-level tiled") != std::string::npos;
    roles_reduction += roles.find(": reduction") != std::string::npos;
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<int64_t> pick(0, sp->space().size() - 1);
    // Two decisions each: random ones (another draw when a vector is too wide for the target).
    for (int decision = 0; decision < kDecisions; ++decision) {
      int64_t index = -1;
      Instance inst;
      for (int attempt = 0; attempt < 8 && index < 0; ++attempt) {
        const int64_t i = sp->canonical(pick(rng));
        try {
          inst = sp->instantiate(sp->space().get(i));
          index = i;
        } catch (const InstantiationError& e) {
          if (std::string(e.what()).find("wider than") == std::string::npos) {
            ADD_FAILURE() << "seed " << seed << " config " << i << " (" << sp->space().get(i).str()
                          << "): rejected: " << e.what() << "\n" << describe(args) << roles;
            ++mismatches;
            break;
          }
          ++rejected;
        }
      }
      if (index < 0) continue;
      ++configs;
      const std::string diff = test::compare_with_reference(inst.schedule, inst.args, seed);
      if (!diff.empty()) {
        ++mismatches;
        ADD_FAILURE() << "seed " << seed << ": " << diff << "\ncomputation:\n" << describe(args) << roles
                      << "\nconfig " << index << ": " << sp->space().get(index).str() << "\nsteps:\n"
                      << schedule::to_string(schedule::trace(inst.schedule));
      }
    }
  }
  EXPECT_EQ(mismatches, 0);
  // The generator reaches the rules it is for.
  if (n >= 200) {
    EXPECT_GT(roles_tiled, n / 20);
    EXPECT_GT(roles_reduction, n / 5);
  }
  std::printf("auto-scheduler fuzz: %d computations, %d configs compared, %d mismatches, %d configs rejected for "
              "vector width, %d computations with a multi-level tiled stage, %d with a reduction\n",
              n, configs, mismatches, rejected, roles_tiled, roles_reduction);
}

TEST(AutoFuzz, RandomComputationsUnderRandomGpuDecisionsMatchTheReferenceOnTheEmulation) {
  const int n = env_int("LOOM_AUTO_FUZZ_GPU_N", 40);
  const uint64_t seed0 = uint64_t(env_int("LOOM_AUTO_FUZZ_SEED", 1));
  const Target cuda("cuda");
  int mismatches = 0, rejected = 0, configs = 0;
  for (int c = 0; c < n; ++c) {
    const uint64_t seed = seed0 + uint64_t(c);
    std::vector<Tensor> args = RandomComputation(seed).make();
    std::shared_ptr<const SearchSpace> sp;
    try {
      sp = make_auto_space(args, cuda, AutoOptions{false});
    } catch (const Error& e) {
      ADD_FAILURE() << "seed " << seed << ": no space: " << e.what() << "\n" << describe(args);
      ++mismatches;
      continue;
    }
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<int64_t> pick(0, sp->space().size() - 1);
    // One random decision (another draw when it breaks a GPU limit).
    int64_t index = -1;
    Instance inst;
    for (int attempt = 0; attempt < 8 && index < 0; ++attempt) {
      const int64_t i = sp->canonical(pick(rng));
      try {
        inst = sp->instantiate(sp->space().get(i));
        index = i;
      } catch (const InstantiationError&) {
        ++rejected;
      }
    }
    if (index < 0) continue;
    ++configs;
    const std::string diff = test::compare_emulated_with_reference(inst.schedule, inst.args, seed);
    if (!diff.empty()) {
      ++mismatches;
      ADD_FAILURE() << "seed " << seed << ": " << diff << "\ncomputation:\n" << describe(args) << sp->describe()
                    << "\nconfig " << index << ": " << sp->space().get(index).str() << "\nsteps:\n"
                    << schedule::to_string(schedule::trace(inst.schedule));
    }
  }
  EXPECT_EQ(mismatches, 0);
  EXPECT_GT(configs, n / 2);
  std::printf("auto-scheduler GPU fuzz (emulated): %d computations, %d configs compared, %d mismatches, %d configs "
              "rejected for GPU limits\n",
              n, configs, mismatches, rejected);
}

}  // namespace
}  // namespace loom::tuner
