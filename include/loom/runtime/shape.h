// Checked arithmetic on shapes: element and byte counts that cannot wrap.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "loom/runtime/data_type.h"

namespace loom::runtime {

/// Product of `shape`; throws loom::Error naming `what` and the shape when a dimension is
/// negative or the product exceeds `limit`. An empty shape (a scalar) has one element.
int64_t checked_element_count(const std::vector<int64_t>& shape, const std::string& what,
                              int64_t limit = INT64_MAX);

/// Bytes of a `dtype` array of `shape` (lanes included); throws loom::Error naming `what`
/// and the shape when the count does not fit in int64.
int64_t checked_byte_count(const std::vector<int64_t>& shape, DataType dtype, const std::string& what);

/// "[a, b, c]".
std::string shape_str(const std::vector<int64_t>& shape);

}  // namespace loom::runtime
