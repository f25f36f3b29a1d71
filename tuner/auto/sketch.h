// The machinery the sketch rules share (tuner/auto/rules/, one file per rule).
//
// A space is made in two passes over the stages, outputs first: the rules give every stage a
// role (the first rule that matches wins, as in Ansor's sketch policy), then each stage's rule
// defines that stage's knobs (its decisions: tile sizes, compute location, vector length,
// unroll steps, reduction strategy). A config is applied by a Generator: stages inlined first,
// then each stage's rule, outputs first, calls the schedule primitives on a fresh schedule
// (so the schedule's trace is the config's steps), reading the knobs it needs. Knobs a config
// does not read are set to their first value by canonical(); a knob value that means the same
// as another (a compute location past the last candidate loop) is normalized to it.
#pragma once
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "loom/runtime/target.h"
#include "loom/schedule/schedule.h"
#include "loom/tuner/auto/compute_dag.h"
#include "loom/tuner/space.h"

namespace loom::tuner::autosched {

/// What a stage is to the generated schedule.
enum class Role : uint8_t {
  kInput,      // a placeholder
  kInline,     // always inlined (strictly inlinable)
  kPlaced,     // an injective stage with a compute location to choose (inline, root, a loop)
  kTiled,      // multi-level tiled ("SSRSRS"), computed in the tiles of its epilogue
  kEpilogue,   // the elementwise consumer a tiled stage is fused into: it follows the tiles
  kReduction,  // a reduction without data reuse (plain, vectorized across a kept axis, rfactor)
  kInjective,  // an injective stage at the root (outputs): tiled, parallel, vectorized
};
const char* to_string(Role r);

/// How a reduction without data reuse is scheduled (its "mode" knob).
enum class ReductionMode : int64_t {
  kPlain = 0,    // reduce loops inside the spatial loops
  kVecKept = 1,  // accumulators in a cache, vectorized across the innermost spatial axis
  kRfInner = 2,  // rfactor of the inner part of the innermost reduce axis: vector partial sums
  kRfOuter = 3,  // rfactor of the outer part: partial sums computed in parallel
};

/// A stage's role and the knobs its rule defined (by the rule's name for them: "S0", "at", …).
struct StagePlan {
  Role role = Role::kInput;
  const class SketchRule* rule = nullptr;
  int epilogue = -1;  // kTiled: the stage it is fused into; -1: a cache_write copy of it
  int anchor = -1;    // kEpilogue: the tiled stage whose tiles it follows
  int host = -1;      // GPU kReduction: the injective stage whose blocks it may be computed in
  std::map<std::string, int> knobs;  // what → knob index in the space
};

/// The rules' view while the space is being defined.
class SketchBuilder {
 public:
  SketchBuilder(const ComputeDag& dag, const Target& target, ConfigSpace* space);
  const ComputeDag& dag;
  const Target& target;
  std::vector<StagePlan> plans;
  /// Vector lanes of the target for the computation's widest element type.
  int lanes = 1;

  /// Effective consumers of stage `i`: its consumers, with inlined ones (kInline) replaced by
  /// theirs, each once.
  std::vector<int> effective_consumers(int i) const;
  /// Defines knob "<label>.<what>" of stage `i` with these values (split values
  /// [-1, inner parts…], or single-integer choices) and `preferred` (index into values) as
  /// the value of the rules' own default config.
  void define_split(int i, const std::string& what, int64_t extent, std::vector<std::vector<int64_t>> values,
                    size_t preferred = 0);
  void define_choice(int i, const std::string& what, std::vector<int64_t> values, size_t preferred = 0);
  /// The rules' default config: the preferred value of every knob (by knob index).
  const std::vector<int>& preferred() const { return preferred_; }
  /// Counts a knob the space is given (the sketch knob, defined outside the rules).
  void count_knob(size_t values) { budget(values); }

 private:
  /// How many of a knob's `n` values the space can take without reaching 2^kMaxLog2Configs
  /// configs, and counts them.
  size_t budget(size_t n);
  ConfigSpace& space_;
  std::vector<int> preferred_;
  double log2_size_ = 0;
};

/// Split values of an extent (each [-1, inner parts…], outer part first).
/// Multi-level tiles [-1, f1, f2, f3]: f3 and f2 from the powers of two and divisors up to 64,
/// f1 from the powers of two and divisors of the extent, f1·f2·f3 at most the extent; with
/// `max_innermost` > 0, the innermost part at most that.
std::vector<std::vector<int64_t>> tile_values(int64_t extent, int parts, int64_t max_innermost = 0);
/// [-1, f] with f a power of two or a divisor of the extent, up to `max_factor`.
std::vector<std::vector<int64_t>> factor_values(int64_t extent, int64_t max_factor);
/// The index of the value of `values` whose inner parts are closest to `want` (log scale).
size_t closest_value(const std::vector<std::vector<int64_t>>& values, const std::vector<int64_t>& want);

/// Auto-scheduled spaces stay below 2^kMaxLog2Configs configs: knobs defined past it keep fewer
/// values (the preferred one and others evenly spaced; rules read choices by value, so a
/// thinned "loc" knob keeps its meaning).
inline constexpr double kMaxLog2Configs = 60;
/// Stages of work below this (spatial × reduce points) run on one thread.
inline constexpr int64_t kParallelMinWork = 16384;
/// Below this, a parallel loop runs one task per pool thread (fewer wake-ups).
inline constexpr int64_t kTaskPerThreadBelow = int64_t(1) << 20;
/// Compute-location candidates a "loc" knob offers besides the root (and inline).
inline constexpr int kMaxLocations = 8;
/// The innermost tile (S3) of a multi-level tiled stage's spatial axis other than the vectorized
/// one is at most this: its accumulators are meant to stay in registers.
inline constexpr int64_t kMaxRegisterRows = 16;
/// A vectorized loop may be at most this many target vector registers wide.
inline constexpr int kMaxVectorRegisters = 4;

/// Applies one config: the schedule being made and the knob values it reads.
class Generator {
 public:
  Generator(const ComputeDag& dag, const std::vector<StagePlan>& plans, const Target& target, int lanes,
            const ConfigEntity& config);

  const ComputeDag& dag;
  const std::vector<StagePlan>& plans;
  const Target& target;
  const int lanes;
  schedule::Schedule s;

  /// Knob values of stage `i` (by the rule's name for them), marked read.
  int choice_index(int i, const std::string& what);
  int64_t choice(int i, const std::string& what);
  const std::vector<int64_t>& split(int i, const std::string& what);
  /// Declares that the value of choice knob (i, what) this config has means the same as
  /// `value` (canonical() rewrites it).
  void normalize(int i, const std::string& what, int64_t value);
  /// Knob choices as canonical() makes them: unread knobs at 0, normalized ones rewritten.
  std::vector<int> canonical_choices() const;

  /// Where each stage of the computation is in the schedule: `top` is the stage placed at the
  /// root or at a loop (a cache_write's copy, the stage reducing an rfactor's partials, or the
  /// stage itself), `body` the stage that reads the producers (the cache, the rfactor stage or
  /// the stage itself), each with the loops producers may be computed at, outermost first.
  struct Placement {
    schedule::Stage top, body;
    std::vector<te::IterVar> top_loops, body_loops;
    /// The loop of top that body is computed at (undefined when body is top).
    te::IterVar body_at;
    /// Where top is computed: at loop `at` of `at_stage`, which belongs to stage `host`
    /// (-1: at the root).
    int host = -1;
    schedule::Stage at_stage;
    te::IterVar at;
    bool inlined = false;
    /// A tiled stage's epilogue (or copy): the loops ending its first and second tile levels,
    /// where the tiled stage may be computed ("at" = 1, 2).
    std::vector<te::IterVar> tile_levels;
  };
  std::vector<Placement> place;

  /// A loop a stage may be computed at: of stage `host` (its top or body stage).
  struct Location {
    int host = -1;
    schedule::Stage stage;
    te::IterVar loop;
  };
  /// The locations stage `i` may be computed at, given where its consumers are, at most
  /// kMaxLocations: loops of its only consumer's body, then loops of the root stage all its
  /// consumers are computed in, outside where they are.
  std::vector<Location> locations(int i) const;
  /// Computes stage `i`'s top at `loc` (compute_at) and records it.
  void compute_at(int i, const Location& loc);
  /// Records stage i's stages and loops once its rule has scheduled it (body = top, the same
  /// loops, when `body` is undefined).
  void set_loops(int i, schedule::Stage top, std::vector<te::IterVar> top_loops, schedule::Stage body = {},
                 std::vector<te::IterVar> body_loops = {}, te::IterVar body_at = {});

  /// The operation's tensor `value` as the schedule knows it.
  te::Tensor tensor(int i, int value = 0) const;
  /// Throws InstantiationError when a vector of `lanes` elements of `t` is wider than
  /// kMaxVectorRegisters registers of the target.
  void check_vector(int64_t lanes, DataType t) const;
  /// Splits `axis` of `st` by the inner parts of split value `f` ([-1, f1, …, fk]), innermost
  /// first; returns the parts, outermost first.
  std::vector<te::IterVar> split_by(schedule::Stage st, const te::IterVar& axis, const std::vector<int64_t>& f);
  /// Fuses `loops` (adjacent, outermost first) and marks the result parallel when the stage
  /// does at least kParallelMinWork of work and the loops run more than one iteration; returns
  /// the fused loop (undefined for none).
  te::IterVar parallelize(schedule::Stage st, const std::vector<te::IterVar>& loops, int64_t work,
                          int64_t iterations);
  /// The value index of knob `k` (by index in the space), marked read.
  int knob(int k);

 private:
  /// Where consumer `c` (which reads stage i's output through its body) sits in its root
  /// chain: the root stage and the last leaf position of that stage's top at which a producer
  /// may be computed (INT_MAX: any).
  std::pair<int, int> entry(int c) const;
  const ConfigSpace& space_;
  std::vector<int> choices_;
  std::vector<bool> read_;
  std::vector<int> normalized_;
};

/// A sketch rule: it gives stages a role, defines their knobs, and applies a config to them.
class SketchRule {
 public:
  virtual ~SketchRule() = default;
  virtual const char* name() const = 0;
  /// Whether the rule takes stage `i` (its consumers have their roles); if so it sets
  /// b.plans[i].role (and may claim a consumer, as fusion does).
  virtual bool match(SketchBuilder& b, int i) const = 0;
  /// Defines stage i's knobs (b.plans[i].knobs).
  virtual void define(SketchBuilder& b, int i) const = 0;
  /// Schedules stage i under the generator's config (its consumers are scheduled).
  virtual void apply(Generator& g, int i) const = 0;
};

/// The CPU rules, in the order they are tried.
const std::vector<const SketchRule*>& cpu_rules();
/// The GPU rules (target cuda), in the order they are tried (rules/gpu/).
const std::vector<const SketchRule*>& gpu_rules();
/// The rules of `target`.
const std::vector<const SketchRule*>& rules_for(const Target& target);

// The rules (one file each under rules/), and what they share.
const SketchRule& always_inline_rule();
const SketchRule& multi_level_tiling_rule();
const SketchRule& fuse_consumer_rule();
const SketchRule& reduction_rule();
const SketchRule& compute_location_rule();
const SketchRule& injective_rule();
const SketchRule& gpu_multi_level_tiling_rule();
const SketchRule& gpu_reduction_rule();
const SketchRule& gpu_injective_rule();

// ---------------------------------------------------------------- GPU (rules/gpu/)

/// Threads per block at most (GpuLimits::max_threads_per_block).
inline constexpr int64_t kGpuMaxThreads = 1024;
/// The widest vector load or store of a GPU thread, in bits (float4).
inline constexpr int kGpuVectorBits = 128;
/// Throws InstantiationError when a GPU vector of `lanes` elements of `t` is wider than
/// kGpuVectorBits.
void check_gpu_vector(int64_t lanes, DataType t);
/// Thread-count choices of a GPU stage whose threads cover `extent` points: the powers of two
/// from 32 to 1024, past the first that covers the extent dropped.
std::vector<int64_t> gpu_thread_values(int64_t extent);
/// gpu/reduction.cc: the injective stage whose blocks reduction `i` may be computed in (-1:
/// none): its only effective consumer (through other such reductions), an injective stage
/// whose leading spatial axes are the reduction's.
int gpu_reduction_host(const SketchBuilder& b, int i);
/// gpu/injective.cc: the leading axes of injective stage `i` that the reductions computed in
/// its blocks keep (0: no reduction can be).
size_t gpu_row_axes(const SketchBuilder& b, int i);
/// gpu/injective.cc: whether injective stage `i` runs one block per row (its "rows" knob):
/// the reductions hosted in it are computed at `*block` with `*threads` threads.
bool gpu_rows(Generator& g, int i, te::IterVar* block, int64_t* threads);

/// multi_level_tiling.cc: the spatial axes of `st` (a tiled stage, its epilogue or its copy:
/// their axes correspond) split by tiled stage `anchor`'s S<d> knobs into four levels each.
struct SpatialTiles {
  std::vector<te::IterVar> unit;                 // axes of extent 1, not split
  std::vector<std::vector<te::IterVar>> level;   // level[l][k]: level l of the k-th split axis
  int64_t vector = 1;                            // the innermost part of the last split axis
  int64_t outer_iterations = 1;                  // iterations of the first level's loops
};
SpatialTiles tile_spatial(Generator& g, int anchor, schedule::Stage st);
/// fuse_consumer.cc: the tiled stage `i` would be fused into this consumer (-1: none).
int fusible_consumer(const SketchBuilder& b, int i);
/// fuse_consumer.cc: the match of a multi-level tiling rule (CPU or GPU): a reduction with data
/// reuse becomes a tiled stage, and its fusible consumer, if any, its epilogue scheduled by
/// `epilogue_rule`. False (nothing set) for any other stage.
bool claim_tiled_stage(SketchBuilder& b, int i, const SketchRule& epilogue_rule);
/// fuse_consumer.cc: schedules the loops of `st` (an epilogue of tiled stage `anchor`, or its
/// cache_write copy) by the anchor's tiles: four levels per spatial axis, the first fused and
/// parallel, the last vectorized. Sets place[owner] top and top_loops.
void tile_epilogue(Generator& g, int anchor, int owner, schedule::Stage st);
/// add_cache_write.cc: cache_write of tiled stage `i` (no fusible consumer): the copy takes
/// its place; returns the cache stage.
schedule::Stage add_cache_write(Generator& g, int i);
/// add_rfactor.cc: a reduction by rfactor of the inner or outer part of its innermost reduce
/// axis (mode kRfInner / kRfOuter), at the root or at `loc`.
void apply_rfactor(Generator& g, int i, ReductionMode mode, const std::optional<Generator::Location>& loc);
/// injective.cc: the knobs and loops of an injective stage placed at the root.
void define_injective(SketchBuilder& b, int i);
/// At the root: tiles, vector split and the parallel fused outer loops; elsewhere only the
/// vector split. Records the stage's loops (Generator::set_loops).
void schedule_injective(Generator& g, int i, schedule::Stage st, bool at_root);
/// The innermost spatial axis of extent > 1 of stage `st` (-1: none).
int vector_axis(const StageInfo& st);
/// compute_location.cc: the "loc" knob of stage `i`: `first` values of the caller's own (root,
/// inline, …), then the loops of Generator::locations. choose_location returns the chosen
/// location, or nullopt for one of the first values (`*first_value` says which).
void define_location(SketchBuilder& b, int i, int first);
/// `root_value` is the first value that means the root: a value past the last location is
/// normalized to the last location, or to the root when there is none.
std::optional<Generator::Location> choose_location(Generator& g, int i, int first, int root_value, int* first_value);

}  // namespace loom::tuner::autosched
