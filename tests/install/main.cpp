// The DESIGN.md API example, built against an installed loom: schedules, lowers, compiles
// and runs a matmul, checks it against a plain loop, and round-trips export_library/load.
#include <loom/loom.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

using namespace loom;

namespace {

constexpr int M = 1024, K = 512, N = 256;

bool check(const char* what, const runtime::NDArray& a, const runtime::NDArray& b, const runtime::NDArray& c) {
  const float* pa = a.data<float>();
  const float* pb = b.data<float>();
  const float* pc = c.data<float>();
  double err = 0, scale = 0;
  for (size_t i = 0; i < size_t(M); ++i) {
    for (size_t j = 0; j < size_t(N); ++j) {
      float ref = 0;
      for (size_t kk = 0; kk < size_t(K); ++kk) ref += pa[i * K + kk] * pb[kk * N + j];
      err = std::max(err, double(std::fabs(pc[i * N + j] - ref)));
      scale = std::max(scale, double(std::fabs(ref)));
    }
  }
  double rel = err / std::max(scale, 1e-30);
  std::printf("%s: max relative error %.2e\n", what, rel);
  return rel < 1e-4;
}

}  // namespace

int main(int argc, char** argv) try {
  std::string lib = argc > 1 ? argv[1] : (std::filesystem::temp_directory_path() / "loom_install_test.so").string();

  te::Tensor A = te::placeholder({M, K}, DataType::Float(32), "A");
  te::Tensor B = te::placeholder({K, N}, DataType::Float(32), "B");
  te::IterVar k = te::reduce_axis({0, K}, "k");
  te::Tensor C = te::compute({M, N}, [&](te::Var i, te::Var j) {
    return te::sum(A(i, k) * B(k, j), {k});
  }, "C");

  Schedule s = create_schedule({C});
  auto [io, ii] = s[C].split(s[C].axis(0), 32);
  auto [jo, ji] = s[C].split(s[C].axis(1), 16);
  s[C].reorder({io, jo, k, ii, ji});
  s[C].vectorize(ji);
  s[C].parallel(io);
  std::cout << lower(s, {A, B, C}, "matmul");

  runtime::Module m = build(s, {A, B, C}, Target("llvm"), "matmul");
  runtime::NDArray a = runtime::NDArray::empty({M, K}, DataType::Float(32));
  runtime::NDArray b = runtime::NDArray::empty({K, N}, DataType::Float(32));
  runtime::NDArray c = runtime::NDArray::empty({M, N}, DataType::Float(32));
  a.fill_random(1);
  b.fill_random(2);
  DLTensor* view = a.dltensor();
  if (view->data != a.data<float>() || view->ndim != 2 || view->shape[0] != M || view->shape[1] != K) {
    std::fprintf(stderr, "FAILED: dltensor() is not a view of the array\n");
    return 1;
  }
  m.get_function("matmul")(a, b, c);
  if (!check("jit", a, b, c)) return 1;

  m.export_library(lib);
  runtime::Module back = runtime::Module::load(lib);
  runtime::NDArray c2 = runtime::NDArray::empty({M, N}, DataType::Float(32));
  back.get_function("matmul")(a, b, c2);
  if (!check("loaded library", a, b, c2)) return 1;
  std::printf("OK\n");
  return 0;
} catch (const loom::Error& e) {
  std::fprintf(stderr, "loom error: %s\n", e.what());
  return 1;
}
