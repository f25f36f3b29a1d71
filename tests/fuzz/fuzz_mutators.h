// Mutations of model files for the model fuzzer (model_fuzz_slow_test.cc): byte-level ones for
// any file, structure-aware ones for loom's JSON models and for ONNX models. Every mutation
// is a pure function of its input and a Rng, so a (seed, case) pair always gives the same file.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace loom::fuzz {

/// SplitMix64: small, and the same sequence on every platform and standard library (unlike
/// the <random> distributions).
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t next();
  /// Uniform in [0, n); n > 0.
  uint64_t below(uint64_t n) { return next() % n; }
  bool chance(int percent) { return below(100) < uint64_t(percent); }
  template <class T>
  const T& pick(const std::vector<T>& v) {
    return v[size_t(below(v.size()))];
  }

 private:
  uint64_t s_;
};

/// One seed per (run seed, stream, case), so that a case does not depend on the others.
uint64_t case_seed(uint64_t seed, const std::string& stream, uint64_t index);

/// A mutated file and what was done to it, one description per mutation.
struct Mutant {
  std::string bytes;
  std::vector<std::string> steps;
  bool deep = false;  // deeply nested: later mutations are byte-level (no parsing it here)
};

/// One byte-level mutation (truncation, bit flips, byte insertion, deletion, duplication,
/// overwriting with boundary bytes) of `m.bytes`, described in `m.steps`.
void mutate_bytes(Mutant& m, Rng& rng);

/// One structure-aware mutation of a loom JSON model text (docs/graph.md): extreme dims,
/// wrong types, deep nesting, duplicate and missing fields, unknown, self and cyclic
/// references, swapped operators, bad dtypes and layouts, damaged constants and groups,
/// plausible small values, transforms (pad, concat, reshape, ...) spliced in before a use.
/// `ops` lists the registry's operators. `kind` in [0, kJsonMutationKinds) picks the mutation
/// (one that does not apply to the document falls back to a random one); -1: a random one.
/// Text that does not parse as JSON gets a byte-level mutation instead.
void mutate_json(Mutant& m, Rng& rng, const std::vector<std::string>& ops, int kind = -1);
inline constexpr int kJsonMutationKinds = 23;

/// Values a fuzzed integer field takes: zero, negative, 2^31 and its neighbours, 2^63-1, ...
const std::vector<int64_t>& extreme_ints();

/// A small valid ONNX model (Conv, Relu, Add, MaxPool, GlobalAveragePool, Reshape, Gemm on a
/// 1x3x8x8 input), serialized (written as protobuf wire format here, without ONNX's classes).
std::string onnx_seed_model();

/// One structure-aware mutation of a serialized ONNX model: huge and negative dims, wrong
/// data types, attributes of the wrong type or duplicated, inputs naming later or own outputs
/// (cycles), missing initializers, raw_data of the wrong size, opset 1 or 999, deeply nested
/// subgraphs, external data, fields of the wrong wire type, plausible small values, operators
/// (Pad, Expand, Tile, Concat, Reshape, Slice) spliced in before a use, and so the operators
/// of the later converters (NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss, Compress,
/// NonZero, Unique, NonMaxSuppression, FlexAttention with a modifier subgraph, valid or
/// broken). Bytes that do not parse as a ModelProto get a byte-level mutation instead. `kind`
/// as for mutate_json.
void mutate_onnx(Mutant& m, Rng& rng, int kind = -1);
inline constexpr int kOnnxMutationKinds = 24;

}  // namespace loom::fuzz
