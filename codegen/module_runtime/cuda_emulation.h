// CUDA's execution model for the host C++ compiler: what codegen/cuda/emulate_cuda.cc puts
// in front of loom's generated CUDA C to run its kernels on the CPU, without a GPU.
//
// A launch runs its blocks one after another. The threads of a block are fibers (ucontext)
// on one OS thread, run one at a time in a fixed order, each until it reaches
// __syncthreads(), a warp-collective operation or its end; when every thread of the block
// waits at the barrier (or every live lane of a warp at a warp collective), they all go on.
// Running the same launch with the opposite order of threads and blocks and comparing the
// results finds accesses that no barrier orders (a race gives different results).
//
// __shared__ arrays: emulate_cuda.cc rewrites each declaration into a call of shared_array(),
// which gives all threads of a block the same array, filled with 0xff bytes (NaN for floats)
// when the block starts, and ending at a page the process may not touch. Faults (an access
// past the end of a global or shared array, which both end at such a page) are caught and
// reported with the address. Local arrays are the fiber's own (stack) memory.
//
// Modeled: the thread and block indices, __syncthreads, shared memory, the vector types, the
// math functions loom emits, __half, and the warp-collective device functions of loom's
// mma.sync intrinsics (ldmatrix, mma.sync m16n8k16: each lane publishes its address or
// registers, the warp meets, each lane takes its elements in the PTX fragment layouts). Not
// modeled (emulate_cuda.cc refuses kernels that use them): WMMA fragments, other inline PTX,
// asynchronous copies; those are checked by ptxas and on a GPU. The model does not reproduce the GPU's floating-point rounding of fast-math functions.
//
// Not part of libloom: CMake embeds this file as a string (loom_cuda_emulation_source.h).
#pragma once
#define LOOM_CUDA_EMULATION 1

#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
#define __launch_bounds__(...)
#define __align__(n) alignas(n)
#define __grid_constant__
// Every __shared__ declaration must have been rewritten (emulate_cuda.cc).
#define __shared__ LOOM_EMULATION_SHARED_DECLARATION_NOT_REWRITTEN

struct dim3 {
  unsigned x, y, z;
};

namespace loom_emu {

enum class State { kReady, kBarrier, kWarpBarrier, kDone };

struct Fiber {
  ucontext_t ctx;
  dim3 tid;
  int linear = 0;
  State state = State::kReady;
  void* stack = nullptr;
};

/// A __shared__ array: its pages, the array ending at a guard page.
struct SharedArray {
  void* base = nullptr;
  size_t mapped = 0;
  unsigned char* data = nullptr;
  size_t bytes = 0;
};

constexpr size_t kStackBytes = 256 * 1024;
constexpr int kWarp = 32;

struct Engine {
  dim3 grid{1, 1, 1}, block{1, 1, 1}, block_idx{0, 0, 0};
  std::vector<Fiber> fibers;
  Fiber* cur = nullptr;
  ucontext_t main;
  void (*entry)(void**) = nullptr;
  void** params = nullptr;
  std::vector<SharedArray> shared;
  char error[1024] = {0};
  sigjmp_buf fault;
  volatile sig_atomic_t fault_signal = 0;
  void* volatile fault_address = nullptr;
};

inline Engine*& engine() {
  static Engine* e = nullptr;
  return e;
}

inline Fiber* current() { return engine()->cur; }

inline void fail(const char* what) {
  Engine* e = engine();
  if (!e->error[0]) snprintf(e->error, sizeof e->error, "%s", what);
}

/// Back to the scheduler until it lets this thread go on.
inline void block_until_released(State s) {
  Fiber* f = current();
  f->state = s;
  swapcontext(&f->ctx, &engine()->main);
}

inline void syncthreads() { block_until_released(State::kBarrier); }
/// All live lanes of the calling thread's warp reach this point before any goes on.
inline void syncwarp() { block_until_released(State::kWarpBarrier); }

inline size_t page_size() {
  static size_t p = size_t(sysconf(_SC_PAGESIZE));
  return p;
}

/// Shared array number `id` of the block (`n` elements of T, aligned to `align`).
template <typename T>
T* shared_array(int id, size_t n, size_t align) {
  Engine* e = engine();
  if (e->shared.size() <= size_t(id)) e->shared.resize(size_t(id) + 1);
  SharedArray& s = e->shared[size_t(id)];
  const size_t bytes = n * sizeof(T);
  if (!s.data) {
    const size_t page = page_size();
    const size_t body = (bytes + align + page - 1) / page * page;
    s.mapped = body + page;
    s.base = mmap(nullptr, s.mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (s.base == MAP_FAILED) {
      s.base = nullptr;
      fail("cannot map shared memory");
      return nullptr;
    }
    mprotect(static_cast<unsigned char*>(s.base) + body, page, PROT_NONE);
    // The array ends at the guard page (rounded down to its alignment).
    uintptr_t end = reinterpret_cast<uintptr_t>(s.base) + body;
    uintptr_t start = (end - bytes) / align * align;
    s.data = reinterpret_cast<unsigned char*>(start);
    s.bytes = bytes;
    memset(s.data, 0xff, bytes);
  }
  return reinterpret_cast<T*>(s.data);
}

inline void release_shared() {
  Engine* e = engine();
  for (SharedArray& s : e->shared)
    if (s.base) munmap(s.base, s.mapped);
  e->shared.clear();
}

inline void fiber_main(int index) {
  Engine* e = engine();
  Fiber& f = e->fibers[size_t(index)];
  e->entry(e->params);
  f.state = State::kDone;
  swapcontext(&f.ctx, &e->main);
}

inline void on_fault(int sig, siginfo_t* info, void*) {
  Engine* e = engine();
  e->fault_signal = sig;
  e->fault_address = info ? info->si_addr : nullptr;
  siglongjmp(e->fault, 1);
}

/// Runs the current block's fibers until all are done; false (with the error set) on a
/// barrier that not every thread reaches.
inline bool run_block(bool reverse) {
  Engine* e = engine();
  const int n = int(e->fibers.size());
  for (;;) {
    for (int k = 0; k < n; ++k) {
      Fiber& f = e->fibers[size_t(reverse ? n - 1 - k : k)];
      if (f.state != State::kReady) continue;
      e->cur = &f;
      swapcontext(&e->main, &f.ctx);
      e->cur = nullptr;
      if (e->error[0]) return false;
    }
    int done = 0, at_barrier = 0, at_warp = 0;
    for (const Fiber& f : e->fibers) {
      done += f.state == State::kDone;
      at_barrier += f.state == State::kBarrier;
      at_warp += f.state == State::kWarpBarrier;
    }
    if (done == n) return true;
    bool released = false;
    for (int w = 0; w * kWarp < n; ++w) {
      int lo = w * kWarp, hi = lo + kWarp < n ? lo + kWarp : n, waiting = 0, live = 0;
      for (int i = lo; i < hi; ++i) {
        live += e->fibers[size_t(i)].state != State::kDone;
        waiting += e->fibers[size_t(i)].state == State::kWarpBarrier;
      }
      if (waiting > 0 && waiting == live) {
        for (int i = lo; i < hi; ++i)
          if (e->fibers[size_t(i)].state == State::kWarpBarrier) e->fibers[size_t(i)].state = State::kReady;
        released = true;
      }
    }
    if (released) continue;
    if (at_barrier > 0 && at_barrier + done == n && at_warp == 0) {
      if (done > 0) {
        snprintf(e->error, sizeof e->error,
                 "__syncthreads() reached by %d threads of block (%u, %u, %u) while %d had exited", at_barrier,
                 e->block_idx.x, e->block_idx.y, e->block_idx.z, done);
        return false;
      }
      for (Fiber& f : e->fibers) f.state = State::kReady;
      continue;
    }
    snprintf(e->error, sizeof e->error,
             "deadlock in block (%u, %u, %u): %d threads at __syncthreads(), %d at a warp-collective operation, "
             "%d exited",
             e->block_idx.x, e->block_idx.y, e->block_idx.z, at_barrier, at_warp, done);
    return false;
  }
}

}  // namespace loom_emu

#define threadIdx (::loom_emu::current()->tid)
#define blockIdx (::loom_emu::engine()->block_idx)
#define blockDim (::loom_emu::engine()->block)
#define gridDim (::loom_emu::engine()->grid)
#define warpSize 32

inline void __syncthreads() { ::loom_emu::syncthreads(); }
inline void __syncwarp(unsigned = 0xffffffffu) { ::loom_emu::syncwarp(); }

/// Runs a launch of `entry` (a wrapper that calls the kernel with `params`). `reverse` runs
/// the blocks, and the threads of each block between barriers, in the opposite order.
/// Returns 0, or 1 with `error` set; `fault_address` receives the address of a memory fault.
extern "C" __attribute__((visibility("default"))) int loom_emu_launch(void (*entry)(void**), void** params,
                                                                      const unsigned* grid, const unsigned* block,
                                                                      int reverse, char* error, size_t error_size,
                                                                      void** fault_address) {
  using namespace loom_emu;
  Engine e;
  e.grid = dim3{grid[0], grid[1], grid[2]};
  e.block = dim3{block[0], block[1], block[2]};
  e.entry = entry;
  e.params = params;
  engine() = &e;
  const int nthreads = int(block[0] * block[1] * block[2]);
  e.fibers.resize(size_t(nthreads));
  for (Fiber& f : e.fibers) {
    f.stack = mmap(nullptr, kStackBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (f.stack == MAP_FAILED) {
      f.stack = nullptr;
      fail("cannot map a thread's stack");
    }
  }
  struct sigaction act, old_segv, old_bus, old_ill, old_fpe;
  memset(&act, 0, sizeof act);
  act.sa_sigaction = on_fault;
  act.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigemptyset(&act.sa_mask);
  sigaction(SIGSEGV, &act, &old_segv);
  sigaction(SIGBUS, &act, &old_bus);
  sigaction(SIGILL, &act, &old_ill);
  sigaction(SIGFPE, &act, &old_fpe);
  const long blocks = long(grid[0]) * grid[1] * grid[2];
  if (!e.error[0] && sigsetjmp(e.fault, 1) == 0) {
    for (long b = 0; b < blocks && !e.error[0]; ++b) {
      long lb = reverse ? blocks - 1 - b : b;
      e.block_idx = dim3{unsigned(lb % grid[0]), unsigned(lb / grid[0] % grid[1]), unsigned(lb / (long(grid[0]) * grid[1]))};
      for (SharedArray& s : e.shared)
        if (s.data) memset(s.data, 0xff, s.bytes);
      for (int t = 0; t < nthreads; ++t) {
        Fiber& f = e.fibers[size_t(t)];
        f.linear = t;
        f.tid = dim3{unsigned(t % int(block[0])), unsigned(t / int(block[0]) % int(block[1])),
                     unsigned(t / int(block[0] * block[1]))};
        f.state = State::kReady;
        getcontext(&f.ctx);
        f.ctx.uc_stack.ss_sp = f.stack;
        f.ctx.uc_stack.ss_size = kStackBytes;
        f.ctx.uc_link = nullptr;
        makecontext(&f.ctx, reinterpret_cast<void (*)()>(&fiber_main), 1, t);
      }
      run_block(reverse != 0);
    }
  } else if (e.fault_signal) {
    snprintf(e.error, sizeof e.error, "%s at address %p in block (%u, %u, %u)",
             e.fault_signal == SIGSEGV || e.fault_signal == SIGBUS ? "invalid memory access"
             : e.fault_signal == SIGFPE                           ? "arithmetic fault (integer division by zero)"
                                                                   : "illegal instruction",
             e.fault_address, e.block_idx.x, e.block_idx.y, e.block_idx.z);
    if (fault_address) *fault_address = e.fault_address;
  }
  sigaction(SIGSEGV, &old_segv, nullptr);
  sigaction(SIGBUS, &old_bus, nullptr);
  sigaction(SIGILL, &old_ill, nullptr);
  sigaction(SIGFPE, &old_fpe, nullptr);
  release_shared();
  for (Fiber& f : e.fibers)
    if (f.stack) munmap(f.stack, kStackBytes);
  engine() = nullptr;
  if (e.error[0]) {
    snprintf(error, error_size, "%s", e.error);
    return 1;
  }
  return 0;
}

// ---- vector types (aligned like CUDA's)
struct alignas(8) float2 {
  float x, y;
};
struct alignas(16) float4 {
  float x, y, z, w;
};
struct alignas(8) uint2 {
  unsigned x, y;
};
struct alignas(16) uint4 {
  unsigned x, y, z, w;
};
struct alignas(8) int2 {
  int x, y;
};
struct alignas(16) int4 {
  int x, y, z, w;
};

// ---- half precision: _Float16 rounds every operation to half, as __half arithmetic does
typedef _Float16 __half;
typedef _Float16 half;
inline __half __float2half(float x) { return (__half)x; }
inline float __half2float(__half x) { return (float)x; }
inline bool __hisnan(__half x) { return x != x; }

// ---- the math functions loom emits
inline float __int_as_float(int i) {
  float f;
  memcpy(&f, &i, 4);
  return f;
}
inline int __float_as_int(float f) {
  int i;
  memcpy(&i, &f, 4);
  return i;
}
inline double __longlong_as_double(long long i) {
  double d;
  memcpy(&d, &i, 8);
  return d;
}
inline float __expf(float x) { return expf(x); }
inline float __logf(float x) { return logf(x); }
inline float __log2f(float x) { return log2f(x); }
inline float __sinf(float x) { return sinf(x); }
inline float __cosf(float x) { return cosf(x); }
inline float __powf(float x, float y) { return powf(x, y); }
inline float __fdividef(float x, float y) { return x / y; }

// ---- loom's mma.sync intrinsics (codegen_cuda.cc's kMmaPrelude, in the PTX fragment layouts
// of mma.m16n8k16 with .f16 inputs): warp collectives over what each lane publishes.
namespace loom_emu {

/// What a lane publishes to its warp in a warp-collective operation.
struct LaneSlot {
  const __half* row = nullptr;
  unsigned regs[6] = {0};
};

/// The slots of the calling thread's warp, lane 0 first.
inline LaneSlot* warp_slots() {
  static std::vector<LaneSlot> slots;
  Engine* e = engine();
  if (slots.size() < e->fibers.size() + kWarp) slots.resize(e->fibers.size() + kWarp);
  return slots.data() + current()->linear / kWarp * kWarp;
}

inline unsigned pack_halves(__half lo, __half hi) {
  uint16_t a, b;
  memcpy(&a, &lo, 2);
  memcpy(&b, &hi, 2);
  return unsigned(a) | unsigned(b) << 16;
}

inline float half_of(unsigned reg, int h) {
  const uint16_t v = uint16_t(reg >> (16 * h));
  __half x;
  memcpy(&x, &v, 2);
  return float(x);
}

}  // namespace loom_emu

inline unsigned loom_lane_id() { return unsigned(::loom_emu::current()->linear % ::loom_emu::kWarp); }
inline void loom_mma_fill(float* c) { c[0] = c[1] = c[2] = c[3] = 0.0f; }

/// ldmatrix.x4: lane l gives the row address l % 16, column (l / 16) * 8; matrix j's rows are
/// the addresses of lanes 8j..8j+7, and lane t takes row t / 4, columns 2 (t % 4) and the next.
inline void loom_ldmatrix_x4(unsigned* f, const __half* tile, long long ld) {
  using namespace ::loom_emu;
  LaneSlot* w = warp_slots();
  const unsigned l = loom_lane_id();
  w[l].row = tile + (l % 16) * ld + (l / 16) * 8;
  syncwarp();
  for (int j = 0; j < 4; ++j) {
    const __half* row = w[8 * j + l / 4].row;
    f[j] = pack_halves(row[2 * (l % 4)], row[2 * (l % 4) + 1]);
  }
  syncwarp();
}

/// ldmatrix.x2.trans: rows of matrix j from lanes 8j..8j+7; lane t takes column t / 4 of rows
/// 2 (t % 4) and the next.
inline void loom_ldmatrix_x2_trans(unsigned* f, const __half* tile, long long ld) {
  using namespace ::loom_emu;
  LaneSlot* w = warp_slots();
  const unsigned l = loom_lane_id();
  w[l].row = tile + (l % 16) * ld;
  syncwarp();
  for (int j = 0; j < 2; ++j)
    f[j] = pack_halves(w[8 * j + 2 * (l % 4)].row[l / 4], w[8 * j + 2 * (l % 4) + 1].row[l / 4]);
  syncwarp();
}

/// mma.sync.m16n8k16.row.col.f32.f16.f16.f32: A[r][k] is half k % 2 of register r / 8 +
/// 2 (k / 8) of lane (r % 8) * 4 + (k % 8) / 2; B[k][n] half k % 2 of register k / 8 of lane
/// n * 4 + (k % 8) / 2; lane t's c[q] is C[t / 4 + 8 (q / 2)][2 (t % 4) + q % 2].
inline void loom_mma_m16n8k16(float* c, const unsigned* a, const unsigned* b) {
  using namespace ::loom_emu;
  LaneSlot* w = warp_slots();
  const unsigned l = loom_lane_id();
  for (int i = 0; i < 4; ++i) w[l].regs[i] = a[i];
  w[l].regs[4] = b[0];
  w[l].regs[5] = b[1];
  syncwarp();
  float d[4];
  for (int q = 0; q < 4; ++q) {
    const int r = int(l / 4) + 8 * (q / 2), n = 2 * int(l % 4) + q % 2;
    float s = c[q];
    for (int k = 0; k < 16; ++k)
      s += half_of(w[(r % 8) * 4 + (k % 8) / 2].regs[r / 8 + 2 * (k / 8)], k % 2) *
           half_of(w[n * 4 + (k % 8) / 2].regs[4 + k / 8], k % 2);
    d[q] = s;
  }
  syncwarp();
  for (int q = 0; q < 4; ++q) c[q] = d[q];
}

inline void loom_mma_store(float* dst, long long ld, const float* c) {
  const unsigned l = loom_lane_id(), r = l / 4, col = 2 * (l % 4);
  dst[r * ld + col] = c[0];
  dst[r * ld + col + 1] = c[1];
  dst[(r + 8) * ld + col] = c[2];
  dst[(r + 8) * ld + col + 1] = c[3];
}
