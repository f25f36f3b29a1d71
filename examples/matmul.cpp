// A matrix multiply written and scheduled with loom, compiled for the CPU, checked against
// a plain loop, exported as a shared library and loaded back.
//
//   build/examples/matmul [path-of-library-to-write]
#include <loom/loom.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

using namespace loom;

namespace {

constexpr int M = 1024, K = 512, N = 256;  // shapes are int32 expressions, as users write them

/// Largest |c - c_ref| over the output, divided by the largest |c_ref|.
double max_rel_err(const float* c, const std::vector<float>& ref) {
  double err = 0, scale = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    err = std::max(err, double(std::fabs(c[i] - ref[i])));
    scale = std::max(scale, double(std::fabs(ref[i])));
  }
  return err / std::max(scale, 1e-30);
}

}  // namespace

int main(int argc, char** argv) try {
  std::string lib = argc > 1 ? argv[1] : (std::filesystem::temp_directory_path() / "loom_example_matmul.so").string();

  // What to compute.
  te::Tensor A = te::placeholder({M, K}, DataType::Float(32), "A");
  te::Tensor B = te::placeholder({K, N}, DataType::Float(32), "B");
  te::IterVar k = te::reduce_axis({0, K}, "k");
  te::Tensor C = te::compute({M, N}, [&](te::Var i, te::Var j) {
    return te::sum(A(i, k) * B(k, j), {k});
  }, "C");

  // How to compute it.
  Schedule s = create_schedule({C});
  auto [io, ii] = s[C].split(s[C].axis(0), 32);
  auto [jo, ji] = s[C].split(s[C].axis(1), 16);
  s[C].reorder({io, jo, k, ii, ji});
  s[C].vectorize(ji);
  s[C].parallel(io);
  std::cout << lower(s, {A, B, C}, "matmul") << "\n";

  runtime::Module m = build(s, {A, B, C}, Target("llvm"), "matmul");
  runtime::NDArray a = runtime::NDArray::empty({M, K}, DataType::Float(32));
  runtime::NDArray b = runtime::NDArray::empty({K, N}, DataType::Float(32));
  runtime::NDArray c = runtime::NDArray::empty({M, N}, DataType::Float(32));
  a.fill_random(1);
  b.fill_random(2);

  // The same product as a plain loop.
  const float* pa = a.data<float>();
  const float* pb = b.data<float>();
  std::vector<float> ref(size_t(M) * N, 0.0f);
  for (size_t i = 0; i < M; ++i)
    for (size_t kk = 0; kk < K; ++kk)
      for (size_t j = 0; j < N; ++j) ref[i * N + j] += pa[i * K + kk] * pb[kk * N + j];

  runtime::PackedFunc f = m.get_function("matmul");
  f(a, b, c);
  double err = max_rel_err(c.data<float>(), ref);
  std::printf("matmul %dx%dx%d: max relative error vs plain loop %.2e\n", M, N, K, err);
  if (!(err < 1e-4)) {
    std::fprintf(stderr, "FAILED: result differs from the plain loop\n");
    return 1;
  }

  constexpr int kRuns = 10;
  auto t0 = std::chrono::steady_clock::now();
  for (int r = 0; r < kRuns; ++r) f(a, b, c);
  double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / kRuns;
  std::printf("matmul: %.3f ms, %.1f GFLOP/s\n", sec * 1e3, 2.0 * M * N * K / sec * 1e-9);

  // Deploy: a self-contained library, loaded back and run again.
  m.export_library(lib);
  runtime::Module back = runtime::Module::load(lib);
  runtime::NDArray c2 = runtime::NDArray::empty({M, N}, DataType::Float(32));
  back.get_function("matmul")(a, b, c2);
  double err2 = max_rel_err(c2.data<float>(), ref);
  std::printf("exported %s, loaded back: max relative error %.2e\n", lib.c_str(), err2);
  if (!(err2 < 1e-4)) {
    std::fprintf(stderr, "FAILED: the loaded library computes a different result\n");
    return 1;
  }
  std::printf("OK\n");
  return 0;
} catch (const loom::Error& e) {
  std::fprintf(stderr, "loom error: %s\n", e.what());
  return 1;
}
