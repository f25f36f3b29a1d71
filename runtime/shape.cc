// Checked arithmetic on shapes.
#include "loom/runtime/shape.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "loom/runtime/error.h"

namespace loom::runtime {

std::string shape_str(const std::vector<int64_t>& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

int64_t checked_element_count(const std::vector<int64_t>& shape, const std::string& what, int64_t limit) {
  int64_t n = 1;
  for (size_t i = 0; i < shape.size(); ++i)
    LOOM_CHECK(shape[i] >= 0, "{}: dimension {} of shape {} is {} (must be >= 0)", what, i, shape_str(shape), shape[i]);
  for (int64_t d : shape)
    if (d == 0) return 0;
  for (int64_t d : shape)
    LOOM_CHECK(!__builtin_mul_overflow(n, d, &n) && n <= limit, "{}: shape {} has more than {} elements", what,
               shape_str(shape), limit == INT64_MAX ? std::string("2^63-1") : std::to_string(limit));
  return n;
}

int64_t checked_byte_count(const std::vector<int64_t>& shape, DataType dtype, const std::string& what) {
  int64_t n = checked_element_count(shape, what);
  int64_t bytes = 0;
  LOOM_CHECK(!__builtin_mul_overflow(n, int64_t(dtype.bytes()) * dtype.lanes(), &bytes),
             "{}: shape {} of {} needs more than 2^63 bytes", what, shape_str(shape), dtype.str());
  return bytes;
}

}  // namespace loom::runtime
