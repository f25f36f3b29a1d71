// verify_gpu: rejects kernels that a GPU cannot launch or that cannot fit on it.
//
// Per kernel: each threadIdx/blockIdx extent against its limit, threads per block, static
// shared memory, and the per-thread "local" arrays. Local arrays live in registers only when
// they fit; the bound is the register file one thread may use (255 32-bit registers,
// GpuLimits::max_local_bytes = 1020 bytes), counting the arrays alone at the point of the
// kernel where the most are allocated at once (arrays of sibling statements, such as the
// copies of an unrolled loop's body, are not live together): a lower bound on real register
// use. Failures throw loom::Error naming the kernel and the limit; the tuner treats them as
// instantiation errors.
#include "loom/lower/ir_visitor.h"
#include "loom/lower/passes.h"
#include "loom/te/arith.h"

namespace loom::lowering {

namespace {

int64_t limit_of(const GpuLimits& l, const std::string& tag) {
  if (tag == "threadIdx.x") return l.max_thread_x;
  if (tag == "threadIdx.y") return l.max_thread_y;
  if (tag == "threadIdx.z") return l.max_thread_z;
  if (tag == "blockIdx.x") return l.max_grid_x;
  return l.max_grid_yz;
}

/// Bytes of local arrays allocated at once at the most crowded point of `s`.
class PeakLocalBytes : public IRVisitor {
 public:
  PeakLocalBytes(const DeviceFunc& k) : k_(k) {}
  int64_t peak = 0;
  using IRVisitor::visit;

 protected:
  void visit_(const AllocateNode* a) override {
    const bool fragments = a->scope.rfind("wmma.", 0) == 0 || a->scope.rfind("mma.", 0) == 0;
    LOOM_CHECK(a->scope == "shared" || a->scope == "local" || fragments,
               "verify_gpu: kernel '{}' allocates buffer '{}' in scope '{}' inside the kernel; only 'shared', "
               "'local' and the wmma.* and mma.* fragment scopes can be allocated there",
               k_.name, a->buffer_var.name(), a->scope);
    int64_t bytes = 0;
    if (a->scope != "shared") {
      auto n = te::as_const_int(te::simplify(a->size()));
      LOOM_CHECK(n.has_value(), "verify_gpu: kernel '{}': {} buffer '{}' needs a constant size", k_.name, a->scope,
                 a->buffer_var.name());
      // A fragment's elements are spread over the 32 threads of a warp.
      bytes = *n * a->dtype.bytes() * a->dtype.lanes() / (fragments ? 32 : 1);
    }
    live_ += bytes;
    peak = std::max(peak, live_);
    IRVisitor::visit_(a);
    live_ -= bytes;
  }

 private:
  const DeviceFunc& k_;
  int64_t live_ = 0;
};

}  // namespace

void verify_gpu(const LoweredFunc& f, const GpuLimits& limits) {
  for (const DeviceFunc& k : f.device_funcs) {
    int64_t threads = 1;
    for (const auto& [tag, e] : k.thread_extents) {
      auto ext = te::as_const_int(e);
      LOOM_CHECK(ext.has_value(), "verify_gpu: kernel '{}': extent of '{}' is not constant", k.name, tag);
      LOOM_CHECK(*ext >= 1 && *ext <= limit_of(limits, tag),
                 "verify_gpu: kernel '{}': {} = {} exceeds the limit {}", k.name, tag, *ext, limit_of(limits, tag));
      if (tag.rfind("threadIdx", 0) == 0) threads *= *ext;
    }
    LOOM_CHECK(threads <= limits.max_threads_per_block,
               "verify_gpu: kernel '{}': {} threads per block exceed the limit max_threads_per_block = {}", k.name,
               threads, limits.max_threads_per_block);
    LOOM_CHECK(k.shared_bytes <= limits.max_shared_bytes,
               "verify_gpu: kernel '{}': {} bytes of shared memory exceed the limit max_shared_bytes = {}", k.name,
               k.shared_bytes, limits.max_shared_bytes);
    PeakLocalBytes peak(k);
    peak.visit(k.body);
    const int64_t local = peak.peak;
    LOOM_CHECK(local <= limits.max_local_bytes,
               "verify_gpu: kernel '{}': {} bytes of local arrays per thread exceed the limit max_local_bytes = {} "
               "(255 registers)",
               k.name, local, limits.max_local_bytes);
  }
}

}  // namespace loom::lowering
