// Rule add_cache_write: a multi-level tiled stage with no elementwise consumer to fuse into
// computes into a cache (Ansor's RuleAddCacheWrite); the stage itself becomes the copy out of
// it, tiled as a fused consumer would be (fuse_consumer.cc), with the cache computed in its tiles.
#include "../sketch.h"

namespace loom::tuner::autosched {

schedule::Stage add_cache_write(Generator& g, int i) {
  te::Tensor cache = g.s.cache_write(g.tensor(i), "local");
  return g.s[cache];
}

}  // namespace loom::tuner::autosched
