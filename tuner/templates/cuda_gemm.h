// The CUDA float32 GEMM tile schedule shared by the "cuda" matmul, dense and batch_matmul
// templates (tuner/templates/cuda_gemm.cc), declared apart from templates.h so that the GPU
// templates keep to their own files.
#pragma once
#include "templates.h"

namespace loom::tuner {

/// matmul, dense and batch_matmul for target kind "cuda": float32, one thread block per
/// output tile (cuda_gemm.cc).
std::vector<Template> cuda_gemm_templates();

namespace tmpl {

/// One config of the GEMM tile schedule. A block of warps_m × warps_n warps computes a
/// block_m() × block_n() tile of the output; each warp's 32 lanes are lanes_m × lanes_n and
/// each lane holds thread_m × thread_n accumulators, in runs of 4 consecutive columns and
/// rows, the runs thread_m / 4 (and thread_n / 4) apart by a warp's span (virtual threads),
/// so that the lanes of a warp read consecutive 16-byte vectors of shared memory. The
/// reduction advances tile_k at a time.
struct CudaGemmTile {
  int64_t warps_m = 2, warps_n = 4, lanes_m = 8, thread_m = 8, thread_n = 8, tile_k = 8;
  bool pad = true;            // shared rows padded by 4 floats (no bank conflicts)
  bool double_buffer = true;  // two shared buffers, the next tile's loads in registers
  int64_t lanes_n() const { return 32 / lanes_m; }
  int64_t threads() const { return warps_m * warps_n * 32; }
  int64_t block_m() const { return thread_m * warps_m * lanes_m; }
  int64_t block_n() const { return thread_n * warps_n * lanes_n(); }
  /// Bytes of shared memory the tiles of A and B take.
  int64_t shared_bytes() const {
    const int64_t p = pad ? 4 : 0;
    return (double_buffer ? 2 : 1) * tile_k * (block_m() + p + block_n() + p) * 4;
  }
};

/// Defines the knobs (warps_m, warps_n, lanes_m, thread_m, thread_n, tile_k, pad,
/// double_buffer) and returns the config's tile; throws InstantiationError for tiles the
/// schedule cannot run (over 256 threads, over 48 KiB of shared memory).
CudaGemmTile cuda_gemm_tile(ConfigContext& cfg);

/// One operand of the GEMM: the tensor the reduction reads and which of its dimensions is the
/// reduction's (the other, last or first, is the output's row or column; a batch dimension
/// may lead).
struct GemmOperand {
  te::Tensor tensor;
  int k_dim = 0;
};

/// Schedules the GEMM `acc` (a reduction over one axis of A·B products, computed in
/// registers: an OutputTile's acc) at the tile `out` writes: `out`'s axes m and n (and batch,
/// if defined, bound to blockIdx.z) tiled by `tile`, A and B fetched into shared memory
/// k-major by every thread (16-byte vectors where the rows allow), double-buffered with the
/// next tile's loads staged in registers, read from there into registers 4 values at a time;
/// every stage of the tile is computed padded, so a tile that overshoots M, N or K needs no
/// guard but at its store.
void schedule_cuda_gemm(Schedule& s, const CudaGemmTile& tile, schedule::Stage out, const te::IterVar& batch,
                        const te::IterVar& m, const te::IterVar& n, schedule::Stage acc, const GemmOperand& a,
                        const GemmOperand& b);

/// The preferences of a default config: 8 warps of 8×4 lanes with 8×8 accumulators each
/// (a 128×128 tile), 8 deep, padded, double-buffered.
Preferences cuda_gemm_preferences();

}  // namespace tmpl
}  // namespace loom::tuner
