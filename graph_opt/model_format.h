// The model file format's constants, shared by its reader and writer (docs/graph.md).
#pragma once
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>

#include <fmt/format.h>

namespace loom::graph_opt::detail {

inline constexpr char kFormat[] = "loom.graph";
/// The first 8 bytes of a weights file.
inline constexpr char kWeightsMagic[8] = {'L', 'O', 'O', 'M', 'W', 'G', 'T', '1'};
/// Constants start at multiples of this in the weights file.
inline constexpr int64_t kWeightsAlign = 64;

/// FNV-1a, 64 bits: the checksum of a constant's bytes (and CSE's content hash).
inline uint64_t fnv1a(const void* data, size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

/// JSON has no NaN or infinity: the model file writes them as these strings (constants' data,
/// float attributes), and the reader takes them back.
inline const char* nonfinite_text(double v) { return v != v ? "nan" : v > 0 ? "inf" : "-inf"; }
inline bool nonfinite_value(const std::string& s, double* v) {
  if (s == "nan") *v = std::numeric_limits<double>::quiet_NaN();
  else if (s == "inf") *v = std::numeric_limits<double>::infinity();
  else if (s == "-inf") *v = -std::numeric_limits<double>::infinity();
  else return false;
  return true;
}

/// A checksum as the model file writes it: 16 hex digits.
inline std::string checksum_text(uint64_t v) { return fmt::format("{:016x}", v); }

}  // namespace loom::graph_opt::detail
