// Builds a tuned-looking matmul and a conv2d and exports each as a self-contained shared
// library with its C header: libmatmul.so/.h and libconv2d.so/.h in the given directory.
// main.c then uses them from plain C, with nothing of loom installed.
//
//   deploy_c_generate OUT_DIR ["llvm -mcpu=x86-64"]
#include <loom/loom.h>

#include <cstdio>
#include <string>

using namespace loom;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR [TARGET]\n", argv[0]);
    return 2;
  }
  std::string dir = argv[1];
  Target target(argc > 2 ? argv[2] : "llvm");
  try {
    // C[64, 48] = A[64, 32] * B[32, 48]: tiled, vectorized, parallel over row blocks.
    te::Tensor A = te::placeholder({64, 32}, DataType::Float(32), "A");
    te::Tensor B = te::placeholder({32, 48}, DataType::Float(32), "B");
    te::Tensor C = te::ops::matmul(A, B, false, false, "C");
    Schedule s = create_schedule({C});
    auto [io, ii] = s[C].split(s[C].axis(0), 16);
    auto [jo, ji] = s[C].split(s[C].axis(1), 8);
    s[C].reorder({io, jo, s[C].reduce_axis(0), ii, ji});
    s[C].vectorize(ji);
    s[C].parallel(io);
    build(s, {A, B, C}, target, "matmul").export_library(dir + "/libmatmul.so");

    // out[1, 4, 16, 16] = conv2d(data[1, 3, 16, 16], kernel[4, 3, 3, 3]), padding 1.
    te::Tensor D = te::placeholder({1, 3, 16, 16}, DataType::Float(32), "data");
    te::Tensor K = te::placeholder({4, 3, 3, 3}, DataType::Float(32), "kernel");
    te::Tensor O = te::ops::conv2d_nchw(D, K, {1, 1}, {1, 1}, {1, 1}, 1, "out");
    Schedule s2 = create_schedule({O});
    s2[O].parallel(s2[O].axis(1));
    build(s2, {D, K, O}, target, "conv2d").export_library(dir + "/libconv2d.so");
  } catch (const Error& e) {
    std::fprintf(stderr, "deploy_c_generate: %s\n", e.what());
    return 1;
  }
  std::printf("wrote %s/libmatmul.so, libmatmul.h, libconv2d.so, libconv2d.h for target \"%s\"\n", dir.c_str(),
              target.str().c_str());
  return 0;
}
