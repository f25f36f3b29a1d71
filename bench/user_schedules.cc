// Schedules written by hand the way a TVM user writes them, next to loom's tuned template
// and OpenBLAS, in one run: every step of TVM's "How to optimize GEMM on CPU" tutorial
// (examples/gemm_tutorial.h) on a float32 matmul, 1 thread by default. The template is
// built from its best record in --log (tuner::build_best), else from its default config;
// the table says which.
//
//   bench/user_schedules [--size 1024 | MxNxK] [--threads 1] [--log matmul.jsonl]
//                        [--block ROWSxCOLS] [--repeat 5] [--print-ir] [--export FILE]
#include <cblas.h>
#include <loom/loom.h>
#include <loom/records/record.h>
#include <loom/runtime/thread_pool.h>
#include <loom/tuner/build_best.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "bench_common.h"
#include "peers.h"
#include "examples/gemm_tutorial.h"

extern "C" void openblas_set_num_threads(int num_threads);

using namespace loom;
namespace tut = examples::gemm_tutorial;

namespace {

constexpr double kTolerance = 1e-4;
constexpr int kDefaultPanel = 8;

struct Options {
  int m = 1024, n = 1024, k = 1024;
  int threads = 1;
  std::string log;
  int rows = 0, cols = 0;  // 0: from the target's vector width
  int repeat = 5;
  int panel = -1;  // -1: the default
  std::vector<int> steps;  // indices into the tutorial's steps; empty: all
  bool print_ir = false;
  std::string export_so;
};

void usage(const char* argv0) {
  std::printf(
      "usage: %s [options]\n"
      "  --size N|MxNxK   the matmul (default 1024: M=N=K=1024)\n"
      "  --threads T      threads of loom's pool and OpenBLAS (default 1)\n"
      "  --log FILE       tuning log of the matmul template; its best record is used, else the\n"
      "                   template's default config (the table says which)\n"
      "  --block RxC      register block of the write-cache steps (default: two vectors of columns\n"
      "                   and as many rows as the vector registers allow: 6x16 on AVX2)\n"
      "  --panel P        register blocks of rows per cached panel of A in the write-cache steps\n"
      "                   (0: none; default %d)\n"
      "  --steps LIST     comma-separated step numbers to time, 0 (default) .. 6 (parallel); default all\n"
      "  --repeat R       timed blocks per kernel; the median is reported (default 5)\n"
      "  --print-ir       print the lowered IR of the last step\n"
      "  --export FILE    export the last step as a shared library (objdump -d FILE shows its code)\n"
      "  --help           this message\n",
      argv0, kDefaultPanel);
}

Options parse_args(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      LOOM_CHECK(i + 1 < argc, "user_schedules: {} needs a value (see --help)", a);
      return argv[++i];
    };
    if (a == "--help" || a == "-h") {
      usage(argv[0]);
      std::exit(0);
    } else if (a == "--size") {
      std::vector<std::string> d = bench::split_list(value(), 'x');
      LOOM_CHECK(d.size() == 1 || d.size() == 3, "user_schedules: --size wants N or MxNxK");
      if (d.size() == 1) {
        o.m = o.n = o.k = bench::parse_int(d[0], "size");
      } else {
        o.m = bench::parse_int(d[0], "M");
        o.n = bench::parse_int(d[1], "N");
        o.k = bench::parse_int(d[2], "K");
      }
    } else if (a == "--threads") {
      o.threads = bench::parse_int(value(), "thread count");
    } else if (a == "--log") {
      o.log = value();
    } else if (a == "--block") {
      std::vector<std::string> d = bench::split_list(value(), 'x');
      LOOM_CHECK(d.size() == 2, "user_schedules: --block wants ROWSxCOLS, e.g. 6x16");
      o.rows = bench::parse_int(d[0], "block rows");
      o.cols = bench::parse_int(d[1], "block columns");
    } else if (a == "--panel") {
      std::string v = value();
      o.panel = v == "0" ? 0 : bench::parse_int(v, "panel");
    } else if (a == "--steps") {
      for (const std::string& item : bench::split_list(value(), ',')) {
        int n = item == "0" ? 0 : bench::parse_int(item, "step");
        LOOM_CHECK(n < int(tut::all_steps().size()), "user_schedules: there is no step {} (0..{})", n,
                   tut::all_steps().size() - 1);
        o.steps.push_back(n);
      }
    } else if (a == "--repeat") {
      o.repeat = bench::parse_int(value(), "repeat count");
    } else if (a == "--export") {
      o.export_so = value();
    } else if (a == "--print-ir") {
      o.print_ir = true;
    } else {
      loom::fail("user_schedules: unknown argument '{}' (see --help)", a);
    }
  }
  return o;
}

runtime::NDArray f32(std::vector<int64_t> shape, uint64_t seed = 0) {
  runtime::NDArray a = runtime::NDArray::empty(shape, DataType::Float(32));
  if (seed) a.fill_random(seed);
  return a;
}

struct Row {
  std::string name;
  std::function<void()> run;
  double gflops = 0;
};

}  // namespace

int main(int argc, char** argv) try {
  const std::string blas_core = cli::openblas_native_kernels(argv);
  Options o = parse_args(argc, argv);
  const Target target = Target::host();
  const int vector_bits = target.vector_bits();
  const int lanes = std::max(1, vector_bits / 32);
  const int regs = vector_bits >= 512 ? 32 : 16;
  tut::Params p = tut::register_block(lanes, regs);
  if (o.rows) p.rows = o.rows;
  if (o.cols) p.cols = o.cols;
  p.panel = o.panel >= 0 ? o.panel : kDefaultPanel;

  runtime::ThreadPool::global().resize(o.threads);
  openblas_set_num_threads(o.threads);
  const int M = o.m, N = o.n, K = o.k;
  const double flop = 2.0 * M * N * K;
  runtime::NDArray a = f32({M, K}, 1), b = f32({K, N}, 2), ref = f32({M, N});
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, a.data<float>(), K, b.data<float>(), N, 0.0f,
              ref.data<float>(), N);

  std::vector<Row> rows;
  std::vector<runtime::Module> modules;  // keep the kernels' code alive
  bool ok = true;
  auto check = [&](const std::string& name, const runtime::NDArray& c) {
    double err = bench::max_rel_err(c.data<float>(), ref.data<float>(), c.numel());
    if (!(err < kTolerance)) {
      std::fprintf(stderr, "user_schedules: %s differs from OpenBLAS (max rel err %.3e)\n", name.c_str(), err);
      ok = false;
    }
  };

  for (size_t si = 0; si < tut::all_steps().size(); ++si) {
    tut::Step step = tut::all_steps()[si];
    if (!o.steps.empty() && std::find(o.steps.begin(), o.steps.end(), int(si)) == o.steps.end()) continue;
    tut::Gemm g = tut::make_step(step, M, N, K, p);
    if (o.print_ir && step == tut::Step::kParallel) std::cout << lower(g.s, g.args(), "gemm") << "\n";
    runtime::Module m = build(g.s, g.args(), target, "gemm");
    runtime::PackedFunc f = m.get_function("gemm");
    if (!o.export_so.empty() && step == tut::Step::kParallel) m.export_library(o.export_so);
    modules.push_back(m);
    runtime::NDArray c = f32({M, N});
    bench::poison(c.data<float>(), c.numel());
    f(a, b, c);
    check(tut::step_name(step), c);
    rows.push_back({tut::step_name(step), [f, a, b, c] { f(a, b, c); }});
    std::fprintf(stderr, "[user_schedules] built %s\n", tut::step_name(step));
  }

  // loom's matmul template: the log's best record, else its default config.
  tuner::Task task = tuner::Task::create("matmul", {M, N, K}, target);
  records::ApplyHistoryBest best;
  if (!o.log.empty() && std::filesystem::exists(o.log)) best = records::ApplyHistoryBest(o.log);
  std::optional<records::Record> rec = best.best(task.workload(), task.target().str());
  runtime::Module tm = tuner::build_best(task, best, nullptr, "matmul");
  modules.push_back(tm);
  runtime::PackedFunc tf = tm.get_function("matmul");
  runtime::NDArray tc = f32({M, N});
  bench::poison(tc.data<float>(), tc.numel());
  tf(a, b, tc);
  check("template", tc);
  const std::string template_name =
      rec ? fmt::format("loom template (record {})", rec->config.index) : "loom template (default config)";
  rows.push_back({template_name, [tf, a, b, tc] { tf(a, b, tc); }});
  runtime::NDArray oc = f32({M, N});
  rows.push_back({"OpenBLAS cblas_sgemm", [=] {
                    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, a.data<float>(), K,
                                b.data<float>(), N, 0.0f, oc.data<float>(), N);
                  }});
  if (!ok) return 1;

  // The slow first steps run a second or more per call at 1024^3: time them in one block each.
  std::vector<std::function<void()>> fs;
  for (const Row& r : rows) fs.push_back(r.run);
  std::vector<double> t = bench::interleaved_times(fs, o.repeat, 20);
  for (size_t i = 0; i < rows.size(); ++i) rows[i].gflops = flop / t[i] * 1e-9;
  const double tmpl = rows[rows.size() - 2].gflops, blas = rows.back().gflops;

  std::printf("float32 matmul %dx%dx%d, %d thread%s, %s (%d-bit vectors), median of %d\n", M, N, K, o.threads,
              o.threads > 1 ? "s" : "", tuner::host_cpu_name().c_str(), vector_bits, o.repeat);
  std::printf("tutorial parameters: bn %d, kfactor %d; write-cache register block %d rows x %d columns (packing %d), "
              "panels of %d blocks (%d rows)\n",
              p.bn, p.kfactor, p.rows, p.cols, p.cols, p.panel, p.panel * p.rows);
  std::printf("OpenBLAS kernels: %s\n", blas_core.c_str());
  std::printf("template: %s\n\n", rec ? fmt::format("best record of {} (config {})", o.log, rec->config.index).c_str()
                                      : (o.log.empty() ? "default config (no --log)"
                                                       : fmt::format("default config (no record in {})", o.log).c_str()));
  std::printf("%-36s %10s %10s %12s\n", "step", "GFLOP/s", "/OpenBLAS", "/template");
  for (const Row& r : rows)
    std::printf("%-36s %10.1f %10.2f %12.2f\n", r.name.c_str(), r.gflops, r.gflops / blas, r.gflops / tmpl);
  return 0;
} catch (const loom::Error& e) {
  std::fprintf(stderr, "%s\n", e.what());
  return 1;
}
