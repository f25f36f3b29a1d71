// float32 matmul on the CPU: a hand-scheduled loom kernel next to OpenBLAS (cblas_sgemm) and
// loom's unscheduled loop nest, at several sizes and thread counts.
//
// The loom schedule is the shape of TVM's "How to optimize GEMM on CPU": B is first packed
// into [ceil(N/bn), K, bn] by a compute stage of its own ("packedB") so that the inner loop
// reads it contiguously; C is tiled bm x bn, each tile accumulated in a "local" cache stage
// computed at the tile loop, with the reduction split by kfactor and unrolled outside the
// innermost tile loops, the innermost 16 columns vectorized (one AVX-512 register) and the
// fused tile loop run in parallel. Shapes the tiles do not divide are computed padded to
// whole tiles and cropped by a final stage.
//
//   bench/matmul_cpu [--sizes 512,1024,2048,1000x1000x999] [--threads 1,2] [--json out.json]
#include <cblas.h>
#include <loom/loom.h>
#include <loom/runtime/thread_pool.h>

#include "bench_common.h"
#include "peers.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

extern "C" void openblas_set_num_threads(int num_threads);

using namespace loom;
using bench::parse_int;
using bench::split_list;

namespace {

struct Shape {
  int m, n, k;
  std::string str() const { return fmt::format("{}x{}x{}", m, n, k); }
  double flops() const { return 2.0 * m * n * k; }
};

struct Options {
  std::vector<Shape> sizes = {{512, 512, 512}, {1024, 1024, 1024}, {2048, 2048, 2048}, {1000, 1000, 999}};
  std::vector<int> threads = {1, 2};
  std::string json;
  int repeat = 7;
  int naive_max = 1024;  // the unscheduled loop nest is timed only up to this M=N=K volume
  int bm = 64, bn = 64, kfactor = 8;
  bool print_ir = false;
};

constexpr int kVector = 16;  // float lanes of one AVX-512 register

void usage(const char* argv0) {
  std::printf(
      "usage: %s [options]\n"
      "  --sizes LIST     comma-separated sizes, N (M=N=K) or MxNxK (default 512,1024,2048,1000x1000x999)\n"
      "  --threads LIST   comma-separated thread counts for loom and OpenBLAS (default 1,2)\n"
      "  --json FILE      also write the results as JSON to FILE\n"
      "  --repeat R       timed runs per measurement after one warm-up; the median is reported (default 7)\n"
      "  --naive-max N    time the unscheduled loop nest only when M*N*K <= N^3 (default 1024; 0: never)\n"
      "  --tile BMxBN     tile of C computed per task (default 64x64; BN a multiple of 16)\n"
      "  --kfactor F      reduction split factor, unrolled (default 8)\n"
      "  --print-ir       print the lowered loop IR of the tuned schedule\n"
      "  --help           this message\n",
      argv0);
}

Options parse_args(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      LOOM_CHECK(i + 1 < argc, "matmul_cpu: {} needs a value (see --help)", a);
      return argv[++i];
    };
    if (a == "--help" || a == "-h") {
      usage(argv[0]);
      std::exit(0);
    } else if (a == "--sizes") {
      o.sizes.clear();
      for (const std::string& item : split_list(value(), ',')) {
        std::vector<std::string> d = split_list(item, 'x');
        LOOM_CHECK(d.size() == 1 || d.size() == 3, "matmul_cpu: size '{}' is neither N nor MxNxK", item);
        if (d.size() == 1) {
          int n = parse_int(d[0], "size");
          o.sizes.push_back({n, n, n});
        } else {
          o.sizes.push_back({parse_int(d[0], "M"), parse_int(d[1], "N"), parse_int(d[2], "K")});
        }
      }
    } else if (a == "--threads") {
      o.threads.clear();
      for (const std::string& item : split_list(value(), ',')) o.threads.push_back(parse_int(item, "thread count"));
    } else if (a == "--json") {
      o.json = value();
    } else if (a == "--repeat") {
      o.repeat = parse_int(value(), "repeat count");
    } else if (a == "--naive-max") {
      std::string v = value();
      o.naive_max = v == "0" ? 0 : parse_int(v, "naive-max");
    } else if (a == "--tile") {
      std::vector<std::string> d = split_list(value(), 'x');
      LOOM_CHECK(d.size() == 2, "matmul_cpu: --tile wants BMxBN, e.g. 32x32");
      o.bm = parse_int(d[0], "tile rows");
      o.bn = parse_int(d[1], "tile columns");
      LOOM_CHECK(o.bn % kVector == 0, "matmul_cpu: tile columns {} must be a multiple of {}", o.bn, kVector);
    } else if (a == "--kfactor") {
      o.kfactor = parse_int(value(), "kfactor");
    } else if (a == "--print-ir") {
      o.print_ir = true;
    } else {
      loom::fail("matmul_cpu: unknown argument '{}' (see --help)", a);
    }
  }
  LOOM_CHECK(!o.sizes.empty() && !o.threads.empty(), "matmul_cpu: --sizes and --threads must not be empty");
  return o;
}

struct Kernel {
  runtime::PackedFunc f;
  runtime::Module module;  // keeps f's code alive
  double compile_s = 0;
};

/// C = A * B with A [M, K], B [K, N] as plain loops, no schedule.
Kernel build_naive(const Shape& sh) {
  auto t0 = std::chrono::steady_clock::now();
  te::Tensor A = te::placeholder({sh.m, sh.k}, DataType::Float(32), "A");
  te::Tensor B = te::placeholder({sh.k, sh.n}, DataType::Float(32), "B");
  te::IterVar k = te::reduce_axis({0, sh.k}, "k");
  te::Tensor C = te::compute({sh.m, sh.n}, [&](te::Var i, te::Var j) { return te::sum(A(i, k) * B(k, j), {k}); }, "C");
  Schedule s = create_schedule({C});
  Kernel r;
  r.module = build(s, {A, B, C}, Target("llvm"), "matmul_naive");
  r.f = r.module.get_function("matmul_naive");
  r.compile_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

int round_up(int x, int m) { return (x + m - 1) / m * m; }

/// The hand-written schedule described at the top of this file. When the tile or kfactor
/// does not divide the shape, the product is computed on the shape rounded up to whole
/// tiles (packedB is zero past K, A's reads are clamped) and a last stage crops it, so the
/// tiled loops stay free of bounds checks.
Kernel build_tuned(const Shape& sh, const Options& o) {
  auto t0 = std::chrono::steady_clock::now();
  const int bm = o.bm, bn = o.bn, M = sh.m, N = sh.n, K = sh.k;
  const int Mp = round_up(M, bm), Np = round_up(N, bn), Kp = round_up(K, o.kfactor);
  const bool padded = Mp != M || Np != N;
  te::Tensor A = te::placeholder({M, K}, DataType::Float(32), "A");
  te::Tensor B = te::placeholder({K, N}, DataType::Float(32), "B");
  auto clamp = [](te::Expr i, int n, int np) { return n == np ? i : te::min(i, n - 1); };

  te::Tensor packedB = te::compute({Np / bn, Kp, bn}, [&](te::Var x, te::Var kk, te::Var y) {
    te::Expr v = B(clamp(kk, K, Kp), clamp(x * bn + y, N, Np));
    return Kp == K ? v : te::select(kk < K, v, 0.0f);
  }, "packedB");
  te::IterVar k = te::reduce_axis({0, Kp}, "k");
  te::Tensor C = te::compute({Mp, Np}, [&](te::Var i, te::Var j) {
    te::Expr a = A(clamp(i, M, Mp), clamp(k, K, Kp));
    return te::sum(a * packedB(te::floordiv(j, bn), k, te::floormod(j, bn)), {k});
  }, padded ? "C.padded" : "C");
  te::Tensor out = C;
  if (padded) out = te::compute({M, N}, [&](te::Var i, te::Var j) { return C(i, j); }, "C");

  Schedule s = create_schedule({out});
  te::Tensor CC = s.cache_write(C, "local");

  // C: tiles in parallel; each tile copies its finished block out of CC.
  auto [mo, no, mi, ni] = s[C].tile(s[C].axis(0), s[C].axis(1), bm, bn);
  te::IterVar tile = s[C].fuse(mo, no);
  s[C].parallel(tile);
  auto [nio, nii] = s[C].split(ni, kVector);
  s[C].vectorize(nii);

  // CC: one bm x bn block per tile, k outside the tile's rows and columns.
  s[CC].compute_at(s[C], tile);
  te::IterVar mc = s[CC].axis(0), nc = s[CC].axis(1);
  auto [ko, ki] = s[CC].split(s[CC].reduce_axis(0), o.kfactor);
  auto [nco, nci] = s[CC].split(nc, kVector);
  s[CC].reorder({ko, mc, ki, nco, nci});
  s[CC].unroll(ki);
  s[CC].unroll(nco);
  s[CC].vectorize(nci);

  // packedB: blocks of columns in parallel, rows of bn contiguous floats vectorized.
  auto [yo, yi] = s[packedB].split(s[packedB].axis(2), kVector);
  s[packedB].vectorize(yi);
  s[packedB].parallel(s[packedB].axis(0));

  // The crop: rows in parallel, the widest vector that divides N.
  if (padded) {
    int lanes = kVector;
    while (N % lanes) lanes /= 2;
    s[out].parallel(s[out].axis(0));
    if (lanes > 1) s[out].vectorize(s[out].split(s[out].axis(1), lanes).second);
  }

  if (o.print_ir) std::cout << lowering::lower(s, {A, B, out}, "matmul") << "\n";
  Kernel r;
  r.module = build(s, {A, B, out}, Target("llvm"), "matmul");
  r.f = r.module.get_function("matmul");
  r.compile_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

void sgemm(const Shape& sh, const runtime::NDArray& a, const runtime::NDArray& b, runtime::NDArray& c) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, sh.m, sh.n, sh.k, 1.0f, a.data<float>(), sh.k,
              b.data<float>(), sh.n, 0.0f, c.data<float>(), sh.n);
}

/// Median wall time of `repeat` runs of f after one untimed warm-up run.
double median_seconds(const std::function<void()>& f, int repeat, bool warm_up = true) {
  if (warm_up) f();
  std::vector<double> t;
  for (int r = 0; r < repeat; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t.size() % 2 ? t[t.size() / 2] : 0.5 * (t[t.size() / 2 - 1] + t[t.size() / 2]);
}

/// max |c - ref| / max |ref|: a relative error that stays meaningful where ref is near 0.
double max_rel_err(const runtime::NDArray& c, const runtime::NDArray& ref) {
  const float* pc = c.data<float>();
  const float* pr = ref.data<float>();
  double err = 0, scale = 0;
  for (int64_t i = 0; i < ref.numel(); ++i) {
    double d = std::fabs(double(pc[i]) - double(pr[i]));
    if (std::isnan(d)) return std::numeric_limits<double>::infinity();
    err = std::max(err, d);
    scale = std::max(scale, double(std::fabs(pr[i])));
  }
  return err / std::max(scale, 1e-30);
}

/// Fills with NaN, so that an element the kernel fails to write cannot pass the check.
void poison(runtime::NDArray& c) {
  std::fill_n(c.data<float>(), c.numel(), std::numeric_limits<float>::quiet_NaN());
}

struct Row {
  Shape shape;
  int threads;
  double loom_gflops, blas_gflops, naive_gflops;  // naive < 0: not measured
  double loom_err, naive_err;
  double compile_s;
};

constexpr double kTolerance = 1e-4;

}  // namespace

int main(int argc, char** argv) try {
  cli::openblas_native_kernels(argv);
  Options o = parse_args(argc, argv);
  const Target host = Target::host();
  const std::string cpu = host.mcpu().empty() ? "host" : host.mcpu();
  std::printf("loom matmul_cpu: float32, target %s (cpu %s), tile %dx%d, kfactor %d, median of %d runs after a warm-up\n",
              host.str().c_str(), cpu.c_str(), o.bm, o.bn, o.kfactor, o.repeat);
  std::printf("%-16s %7s %13s %17s %14s %14s %12s\n", "size", "threads", "loom GFLOP/s", "OpenBLAS GFLOP/s",
              "loom/OpenBLAS", "naive GFLOP/s", "max rel err");

  std::vector<Row> rows;
  bool ok = true;
  const int max_threads = *std::max_element(o.threads.begin(), o.threads.end());
  for (const Shape& sh : o.sizes) {
    runtime::NDArray a = runtime::NDArray::empty({sh.m, sh.k}, DataType::Float(32));
    runtime::NDArray b = runtime::NDArray::empty({sh.k, sh.n}, DataType::Float(32));
    runtime::NDArray c = runtime::NDArray::empty({sh.m, sh.n}, DataType::Float(32));
    runtime::NDArray ref = runtime::NDArray::empty({sh.m, sh.n}, DataType::Float(32));
    a.fill_random(1);
    b.fill_random(2);
    openblas_set_num_threads(max_threads);
    sgemm(sh, a, b, ref);

    Kernel tuned = build_tuned(sh, o);
    runtime::ThreadPool::global().resize(max_threads);
    poison(c);
    tuned.f(a, b, c);
    double loom_err = max_rel_err(c, ref);
    if (!(loom_err < kTolerance)) {
      std::fprintf(stderr, "matmul_cpu: %s: loom result differs from OpenBLAS (max rel err %.3e)\n", sh.str().c_str(),
                   loom_err);
      ok = false;
      continue;
    }

    // The unscheduled nest is serial and slow: one run per size, shared by every thread row.
    double naive_gflops = -1, naive_err = -1;
    if (double(sh.m) * sh.n * sh.k <= double(o.naive_max) * o.naive_max * o.naive_max) {
      Kernel naive = build_naive(sh);
      poison(c);
      double t = median_seconds([&] { naive.f(a, b, c); }, 1, /*warm_up=*/false);
      naive_err = max_rel_err(c, ref);
      naive_gflops = sh.flops() / t * 1e-9;
      if (!(naive_err < kTolerance)) {
        std::fprintf(stderr, "matmul_cpu: %s: naive loom result differs from OpenBLAS (max rel err %.3e)\n",
                     sh.str().c_str(), naive_err);
        ok = false;
      }
    }

    for (int nt : o.threads) {
      runtime::ThreadPool::global().resize(nt);
      openblas_set_num_threads(nt);
      double t_loom = median_seconds([&] { tuned.f(a, b, c); }, o.repeat);
      double t_blas = median_seconds([&] { sgemm(sh, a, b, c); }, o.repeat);
      Row r{sh, nt, sh.flops() / t_loom * 1e-9, sh.flops() / t_blas * 1e-9, naive_gflops, loom_err, naive_err,
            tuned.compile_s};
      std::printf("%-16s %7d %13.1f %17.1f %14.2f %14s %12.2e\n", sh.str().c_str(), nt, r.loom_gflops, r.blas_gflops,
                  r.loom_gflops / r.blas_gflops,
                  naive_gflops < 0 ? "-" : fmt::format("{:.2f}", naive_gflops).c_str(), loom_err);
      std::fflush(stdout);
      rows.push_back(r);
    }
  }

  if (!o.json.empty()) {
    std::ofstream out(o.json);
    LOOM_CHECK(out.good(), "matmul_cpu: cannot write '{}'", o.json);
    out << fmt::format(R"({{"benchmark": "matmul_cpu", "dtype": "float32", "cpu": "{}", "tile": [{}, {}], )"
                       R"("kfactor": {}, "repeat": {}, "results": [)",
                       cpu, o.bm, o.bn, o.kfactor, o.repeat);
    for (size_t i = 0; i < rows.size(); ++i) {
      const Row& r = rows[i];
      out << fmt::format(R"({}{{"m": {}, "n": {}, "k": {}, "threads": {}, "loom_gflops": {:.3f}, )"
                         R"("openblas_gflops": {:.3f}, "ratio": {:.4f}, "naive_gflops": {}, "loom_max_rel_err": {:.3e}, )"
                         R"("compile_s": {:.3f}}})",
                         i ? ", " : "", r.shape.m, r.shape.n, r.shape.k, r.threads, r.loom_gflops, r.blas_gflops,
                         r.loom_gflops / r.blas_gflops,
                         r.naive_gflops < 0 ? std::string("null") : fmt::format("{:.3f}", r.naive_gflops),
                         r.loom_err, r.compile_s);
    }
    out << "]}\n";
  }
  return ok ? 0 : 1;
} catch (const loom::Error& e) {
  std::fprintf(stderr, "matmul_cpu: loom error: %s\n", e.what());
  return 1;
}
