// "Did you mean …?" for a mistyped name: the known names nearest to it by edit distance.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace loom {

/// Levenshtein distance between `a` and `b` (insertions, deletions and substitutions of one
/// character each cost 1), ignoring ASCII case.
size_t edit_distance(std::string_view a, std::string_view b);

/// The names of `known` close enough to `name` to be what was meant, nearest first (ties in
/// the order of `known`), at most `max`: those within an edit distance of max(2, |name| / 3),
/// or if there are none, those starting with `name` when it has at least 3 characters. Empty
/// when none is, or when `name` is itself known.
std::vector<std::string> nearest_names(const std::string& name, const std::vector<std::string>& known,
                                       size_t max = 3);

/// "did you mean 'matmul'?" / "did you mean 'a' or 'b'?" from nearest_names; "" when
/// nothing is near.
std::string did_you_mean(const std::string& name, const std::vector<std::string>& known);

}  // namespace loom
