// The vectorization report: every vector access of a lowered CPU function that is not a
// dense vector load or store, and every vector operation the code is computed lane by lane,
// classified as the LLVM code generator emits them (vector_access.h).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "loom/lower/lower.h"

namespace loom::lowering {

/// One vector access or operation that is not a plain vector instruction.
struct VectorReportEntry {
  enum class Kind {
    kGather,      // a load of lanes at a non-contiguous index vector: a masked gather
    kScatter,     // a store at a non-contiguous index vector: a masked scatter
    kStrided,     // a load with a constant stride 2..kMaxDenseLoadStride: loads and a shuffle
    kPredicated,  // a contiguous load/store with a lane mask: a masked load/store
    kScalarized,  // a vector operation computed one lane at a time
  };
  Kind kind;
  /// The stage whose code contains it: the buffer that the enclosing store writes (for an
  /// expression outside any store, the one buffer stored under it, else the function name).
  std::string stage;
  std::string buffer;  // the buffer read or written (empty for kScalarized)
  bool is_store = false;
  int lanes = 0;
  std::optional<int64_t> stride;  // the index's constant ramp stride, if it has one
  bool predicated = false;        // the access has a lane mask
  std::string index;              // the index expression (kScalarized: the expression)
  std::string note;               // how the code generator emits it
  int count = 1;                  // identical entries (e.g. in unrolled copies) merged into one
};

const char* to_string(VectorReportEntry::Kind k);

/// The report of one function.
struct VectorizationReport {
  std::string func;
  std::vector<VectorReportEntry> entries;
  int vector_accesses = 0;  // vector loads and stores in all, dense ones included

  /// Entries of one kind (of every kind when `kind` is unset) about `buffer`/`stage` when
  /// those are non-empty.
  std::vector<VectorReportEntry> find(std::optional<VectorReportEntry::Kind> kind, const std::string& buffer = "",
                                      const std::string& stage = "") const;
  /// A readable table, one row per entry, and a summary line.
  std::string to_string() const;
};

/// Classifies the vector accesses and operations of `f`, which is lowered for CPU target
/// `target` (a function with GPU kernels is rejected; the target decides which vector math
/// stays vector code, vector_access.h). Buffer names are those of the IR: for the names of
/// the schedule's tensors even where storage_rewrite merged temporaries, use
/// LowerOptions::vector_report.
VectorizationReport vectorization_report(const LoweredFunc& f, const Target& target = Target("llvm"));

}  // namespace loom::lowering
