// A user's own operators, written with te and tuned without a schedule template: a 1-D
// convolution (with its zero padding) and a group normalization. Each becomes a tuning task
// from its tensors and the target alone (tuner::Task::create_auto: the auto-scheduler derives
// the search space from the computation), is tuned with the XGBoost tuner, built with its best
// record, checked against the reference evaluator te::evaluate, exported as a shared library
// and loaded back.
//
//   build/examples/auto_schedule [--trials N] [--out DIR]
#include <loom/loom.h>
#include <loom/te/evaluate.h>
#include <loom/tuner/build_best.h>
#include <loom/tuner/tuner.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

using namespace loom;
namespace fs = std::filesystem;

namespace {

/// conv1d: out[n, k, l] = sum over c, r of data[n, c, l + r - 1] * weight[k, c, r] (zero padding 1).
std::vector<te::Tensor> conv1d(int64_t n, int64_t c, int64_t len, int64_t k, int64_t taps) {
  const DataType f32 = DataType::Float(32);
  te::Tensor data = te::placeholder({n, c, len}, f32, "data");
  te::Tensor weight = te::placeholder({k, c, taps}, f32, "weight");
  const int64_t pad = taps / 2;
  te::Tensor padded = te::compute({n, c, len + 2 * pad}, [&](te::Var b, te::Var ch, te::Var x) {
    return te::select(x >= te::Expr(pad) && x < te::Expr(len + pad), data(b, ch, x - te::Expr(pad)),
                      te::make_zero(f32));
  }, "padded");
  te::IterVar rc = te::reduce_axis({0, c}, "rc"), rr = te::reduce_axis({0, taps}, "rr");
  te::Tensor out = te::compute({n, k, len}, [&](te::Var b, te::Var o, te::Var x) {
    return te::sum(padded(b, rc, x + rr) * weight(o, rc, rr), {rc, rr});
  }, "conv1d");
  return {data, weight, out};
}

/// group_norm: x [N, C, HW] normalized over each group of C / groups channels and HW, then
/// scaled and shifted per channel.
std::vector<te::Tensor> group_norm(int64_t n, int64_t c, int64_t hw, int64_t groups) {
  const DataType f32 = DataType::Float(32);
  const int64_t per = c / groups;
  te::Tensor x = te::placeholder({n, c, hw}, f32, "x");
  te::Tensor gamma = te::placeholder({c}, f32, "gamma"), beta = te::placeholder({c}, f32, "beta");
  const te::Expr count = te::make_const(f32, double(per * hw));
  te::IterVar r1 = te::reduce_axis({0, per}, "r1"), s1 = te::reduce_axis({0, hw}, "s1");
  te::Tensor total = te::compute({n, groups}, [&](te::Var b, te::Var g) {
    return te::sum(x(b, g * te::Expr(per) + r1, s1), {r1, s1});
  }, "total");
  auto mean = [&](te::Expr b, te::Expr g) { return total(b, g) / count; };
  te::IterVar r2 = te::reduce_axis({0, per}, "r2"), s2 = te::reduce_axis({0, hw}, "s2");
  te::Tensor squares = te::compute({n, groups}, [&](te::Var b, te::Var g) {
    te::Expr d = x(b, g * te::Expr(per) + r2, s2) - mean(b, g);
    return te::sum(d * d, {r2, s2});
  }, "squares");
  te::Tensor y = te::compute({n, c, hw}, [&](te::Var b, te::Var ch, te::Var i) {
    te::Expr g = te::floordiv(ch, te::Expr(per));
    te::Expr inv_std = te::make_const(f32, 1.0) / te::sqrt(squares(b, g) / count + te::make_const(f32, 1e-5));
    return (x(b, ch, i) - mean(b, g)) * inv_std * gamma(ch) + beta(ch);
  }, "group_norm");
  return {x, gamma, beta, y};
}

double max_rel_err(const runtime::NDArray& got, const runtime::NDArray& ref) {
  const float* a = got.data<float>();
  const float* b = ref.data<float>();
  double err = 0, scale = 0;
  for (int64_t i = 0; i < ref.numel(); ++i) {
    err = std::max(err, double(std::fabs(a[i] - b[i])));
    scale = std::max(scale, double(std::fabs(b[i])));
  }
  return std::isnan(err) ? INFINITY : err / std::max(scale, 1e-30);
}

/// Tunes the computation `args` (inputs, then the output) as task `name`, exports the best
/// kernel to DIR/lib<name>.so, loads it back and checks it against te::evaluate.
bool tune_and_check(const std::string& name, const std::vector<te::Tensor>& args, int trials, const fs::path& dir) {
  tuner::Task task = tuner::Task::create_auto(name, args, Target("llvm"));
  std::printf("%s: %s\n", name.c_str(), task.search_space().describe().c_str());
  std::printf("%s: %lld configs, %.3f GFLOP a run\n", name.c_str(), static_cast<long long>(task.space().size()),
              task.flop() * 1e-9);

  const std::string log = (dir / (name + ".jsonl")).string();
  fs::remove(log);
  tuner::TuneOptions opt;
  opt.n_trial = trials;
  opt.log_file = log;
  tuner::TuneSummary s = tuner::XGBTuner(task).tune(opt);
  std::printf("%s: %d trials (%d errors), best %.2f GFLOP/s\n", name.c_str(), s.trials, s.errors, s.best_gflops());

  // The best record's schedule, as a self-contained library, loaded back.
  runtime::Module m = tuner::build_best(task, records::ApplyHistoryBest(log), &std::cerr, name);
  const std::string lib = (dir / ("lib" + name + ".so")).string();
  m.export_library(lib);
  runtime::Module back = runtime::Module::load(lib);

  std::map<te::Tensor, runtime::NDArray> inputs;
  std::vector<DLTensor*> call;
  uint64_t seed = 1;
  for (size_t i = 0; i + 1 < args.size(); ++i) {
    std::vector<int64_t> shape;
    for (const te::Expr& d : args[i].shape()) shape.push_back(*te::as_const_int(d));
    runtime::NDArray a = runtime::NDArray::empty(shape, DataType::Float(32));
    a.fill_random(seed++);
    inputs[args[i]] = a;
    call.push_back(a.dltensor());
  }
  runtime::NDArray ref = te::evaluate({args.back()}, inputs)[0];
  runtime::NDArray out = runtime::NDArray::empty(ref.shape(), DataType::Float(32));
  call.push_back(out.dltensor());
  back.get_function(name).call(call);
  const double err = max_rel_err(out, ref);
  std::printf("%s: exported %s, loaded back: max relative error vs te::evaluate %.2e\n", name.c_str(), lib.c_str(), err);
  return err < 1e-4;
}

}  // namespace

int main(int argc, char** argv) try {
  int trials = 16;
  fs::path dir = fs::temp_directory_path() / "loom_example_auto_schedule";
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--trials") && i + 1 < argc) trials = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--out") && i + 1 < argc) dir = argv[++i];
    else {
      std::fprintf(stderr, "usage: %s [--trials N] [--out DIR]\n", argv[0]);
      return 2;
    }
  }
  fs::create_directories(dir);
  // Shapes that do not divide the vector width or the tiles, as a user's often do not.
  bool ok = tune_and_check("conv1d", conv1d(1, 24, 250, 40, 3), trials, dir);
  ok = tune_and_check("group_norm", group_norm(2, 48, 100, 6), trials, dir) && ok;
  std::printf(ok ? "OK\n" : "FAILED: a tuned kernel differs from te::evaluate\n");
  return ok ? 0 : 1;
} catch (const loom::Error& e) {
  std::fprintf(stderr, "loom error: %s\n", e.what());
  return 1;
}
