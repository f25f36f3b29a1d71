// The built-in schedule templates and the helpers they share (private to the tuner).
#pragma once
#include <map>
#include <string>
#include <vector>

#include "loom/codegen/build.h"
#include "loom/lower/lower.h"
#include "loom/runtime/data_type.h"
#include "loom/runtime/error.h"
#include "loom/runtime/module.h"
#include "loom/runtime/ndarray.h"
#include "loom/runtime/target.h"
#include "loom/schedule/schedule.h"
#include "loom/te/evaluate.h"
#include "loom/te/expr.h"
#include "loom/te/ops.h"
#include "loom/te/tensor.h"
#include "loom/tuner/task.h"

// The everyday names of <loom/loom.h>, which the tuner cannot include (it also brings the
// graph level, above the tuner).
namespace loom {
using lowering::lower;
using codegen::build;
using schedule::create_schedule;
using schedule::Schedule;
using schedule::Stage;
}  // namespace loom

namespace loom::tuner {

/// Every built-in template: the registry adds them once, on its first use (tuner/task.cc).
/// This explicit list is the only way built-in templates register: a static initializer in
/// a template's file would be dropped by the linker from a static libloom when nothing else
/// refers to that file, and would run in an unspecified order relative to the registry.
std::vector<Template> builtin_templates();

/// The search space of template `t` for workload `w` on `target` (template_space.cc): checks
/// the workload and defines the template's knobs.
std::shared_ptr<const SearchSpace> make_template_space(const Template& t, const records::Workload& w,
                                                       const Target& target);

Template matmul_template();
Template batch_matmul_template();
Template dense_template();
Template dense_pack_template();
Template dense_bias_relu_template();
Template conv2d_nchw_template();
Template conv2d_nchwc_template();
Template conv2d_nchwc_winograd_template();
Template depthwise_conv2d_nchw_template();
Template depthwise_conv2d_nchwc_template();
Template softmax_template();
Template attention_template();
/// The CUDA attention (target kind "cuda"), tuner/templates/attention_cuda.cc.
Template attention_cuda_template();
/// The GPU templates (target kind "cuda"): matmul, dense, batch_matmul, conv2d_nchw,
/// depthwise_conv2d_nchw (aliases matmul_cuda, conv2d_nchw_cuda, depthwise_conv2d_nchw_cuda,
/// their names in older logs).
std::vector<Template> cuda_templates();
/// The tensorized templates: matmul_int8 and conv2d_nchwc_int8 (te::dot_u8s8s32, CPU) and
/// matmul_tensorcore (WMMA, cuda) and matmul_mma (mma.sync, cuda).
std::vector<Template> tensorize_templates();
Template matmul_int8_template();
Template conv2d_nchwc_int8_template();
Template matmul_tensorcore_template();
Template matmul_mma_template();

namespace tmpl {

/// Output channels and columns are packed in blocks of this many floats (one AVX-512 vector).
inline constexpr int64_t kBlock = 16;

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// Checks that `w` has float32 dtype and `names.size()` sizes in [1, 2^31-1] (names like {"M","N","K"}).
void check_shape(const records::Workload& w, const std::vector<std::string>& names);
/// An integer attribute of `w` (default `def` when absent); throws if not an integer in [lo, 2^31-1].
int64_t int_attr(const records::Workload& w, const std::string& key, int64_t def, int64_t lo);

/// The tensor named `name` among the inputs of `t`'s operation, searched transitively.
te::Tensor find_input(const te::Tensor& t, const std::string& name);

/// Preferred values for a default config: split knobs take the value whose inner parts are
/// closest (in log scale) to the given ones; choice/reorder knobs an equal value; annotate
/// knobs the given label. Knobs without a preference keep their first value.
struct Preferences {
  std::map<std::string, std::vector<int64_t>> values;
  std::map<std::string, std::string> labels;
};
int64_t closest_config(const ConfigSpace& space, const Preferences& prefs);
/// The closest config for which `valid` holds (the template would instantiate it), summing
/// the knobs' distances; the unconstrained closest one when it is valid (or none is).
int64_t closest_config(const ConfigSpace& space, const Preferences& prefs,
                       const std::function<bool(const ConfigEntity&)>& valid);

/// tile_y candidates: [-1, mid, inner] with mid·inner dividing `extent` and inner at most 16
/// (in that order), and besides inner 6 with a tail for every power-of-two mid.
SplitOptions row_split_options(int64_t extent);
/// tile_x candidates: [-1, outer, bn] with bn a multiple of kBlock up to 64 and outer a power
/// of two, both fitting into `extent` rounded up to kBlock.
SplitOptions block_split_options(int64_t extent);

/// The blocked-GEMM schedule shared by matmul, batch_matmul and dense: `out` is tiled
/// (tile_y over `y`, tile_x over `x`), its outer tiles fused (with `batch`, if defined) and
/// run in parallel; `acc`, the stage that accumulates over `acc_k`, is computed at the
/// register tile, its k loop split by tile_k with the inner part unrolled (unroll_k), the
/// tile's rows unrolled and its columns vectorized in blocks of kBlock.
void schedule_gemm(ConfigContext& cfg, schedule::Stage out, const te::IterVar& batch, const te::IterVar& y,
                   const te::IterVar& x, int64_t M, int64_t N, int64_t K, schedule::Stage acc,
                   const std::vector<te::IterVar>& acc_outer, const te::IterVar& acc_y, const te::IterVar& acc_x,
                   const te::IterVar& acc_k);
/// Default knob values of schedule_gemm for a product of `rows` x `cols` outputs (0, 0: the
/// square case): columns outermost, in 48-wide panels, where there are fewer rows than
/// columns (the activations smaller than the weight).
Preferences gemm_preferences(int64_t rows = 0, int64_t cols = 0);

/// Sizes of a 2-D convolution workload with shape [N, C, H, W, K, R, S] and attrs stride
/// and pad (both spatial dimensions alike), and its output size.
struct ConvDims {
  int64_t N, C, H, W, K, R, S, stride, pad, OH, OW;
  double flop() const { return 2.0 * double(N) * double(K) * double(OH) * double(OW) * double(C) * double(R) * double(S); }
};
ConvDims conv_dims(const records::Workload& w);
/// Checks a conv2d workload: float32, seven positive sizes, a kernel that fits the padded
/// input, no attributes but stride, pad and those in `extra_attrs`.
void check_conv(const records::Workload& w, const std::vector<std::string>& extra_attrs = {});

/// A template's schedule function with a fused epilogue (Template::schedule_epilogue).
using EpilogueSchedule =
    std::function<Schedule(ConfigContext& cfg, const te::Tensor& anchor, const te::Tensor& output, const Target& target)>;
/// Template::schedule for the bare computation: `f` with the output of `compute` as both
/// the anchor and the output.
std::function<Schedule(ConfigContext&, const std::vector<te::Tensor>&, const Target&)> bare(EpilogueSchedule f);

/// A schedule of `output` whose epilogue stages (those strictly between `anchor` and
/// `output`) are inlined into `output`. Throws naming the stage when one is not elementwise
/// or broadcast ("elemwise"/"broadcast" tags), or when `output` does not have the anchor's
/// shape.
Schedule create_epilogue_schedule(const te::Tensor& anchor, const te::Tensor& output);

/// The stages of an anchor's output tile in a schedule from create_epilogue_schedule: `out`
/// writes the kernel's output (the anchor itself, or the epilogue's last stage with the
/// rest inlined into it) and `acc` computes the anchor in registers: a "local" cache_write
/// of the bare anchor, or the anchor itself in "local" scope when an epilogue follows. A
/// template tiles `out` and computes `acc` at the tile, the same code either way: the
/// epilogue then runs on the tile's accumulators before the store.
struct OutputTile {
  schedule::Stage out, acc;
};
OutputTile output_tile(Schedule& s, const te::Tensor& anchor, const te::Tensor& output);

/// Unrolls the loops of `out`'s register tile (those inside the loop `acc` is computed at), so
/// that the epilogue reads the accumulators at constant offsets and they stay in registers: a
/// rolled tile loop keeps them in memory, and LLVM leaves a long epilogue (SiLU's
/// x·sigmoid(x)) rolled, which halved a convolution's speed.
void unroll_tile(schedule::Stage out, const std::vector<te::IterVar>& tile);

/// Every permutation of 0..n-1, in lexicographic order (for reorder knobs).
std::vector<std::vector<int64_t>> permutations(int n);

/// Inner factors for a register-tile split of `extent`: its divisors up to `max` and the
/// powers of two up to `max` (which leave a tail).
SplitOptions tile_options(int64_t extent, int64_t max);

/// The "pad" stage feeding `out`, if there is one (te::ops::pad): knob pad_inline with
/// `values` (1: inlined into its consumer; 0: computed at the root, outer two axes fused and
/// parallel, innermost vectorized when it is a 16-lane channel block). True when inlined.
bool schedule_pad(ConfigContext& cfg, Schedule& s, const te::Tensor& out, const std::vector<int64_t>& values);

/// A packing stage [.., blocks, K, kBlock]: vectorized innermost, outer axes fused and parallel.
void schedule_pack(schedule::Stage pack);
/// A packing stage [.., blocks, K, kBlock] that reads its source transposed (element v of a
/// block from row block*kBlock + v): copied in kBlock × kBlock squares, each source row's
/// kBlock elements in turn, so that the reads stream through cache lines instead of
/// touching kBlock rows a power-of-two stride apart (which share one cache set) per
/// element. Outer axes fused and parallel.
void schedule_transpose_pack(schedule::Stage pack);

}  // namespace tmpl
}  // namespace loom::tuner
