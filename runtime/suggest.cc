// Nearest known names by edit distance, for "did you mean" in error messages.
#include "loom/runtime/suggest.h"

#include <algorithm>
#include <cctype>
#include <numeric>

namespace loom {

size_t edit_distance(std::string_view a, std::string_view b) {
  auto lower = [](char c) { return char(std::tolower(static_cast<unsigned char>(c))); };
  std::vector<size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), size_t(0));
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];  // row[i-1][j-1]
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (lower(a[i - 1]) == lower(b[j - 1]) ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::vector<std::string> nearest_names(const std::string& name, const std::vector<std::string>& known, size_t max) {
  if (name.empty() || std::find(known.begin(), known.end(), name) != known.end()) return {};
  const size_t limit = std::max<size_t>(2, name.size() / 3);
  auto starts_with = [&](const std::string& k) {
    return name.size() >= 3 && k.size() > name.size() && edit_distance(k.substr(0, name.size()), name) == 0;
  };
  std::vector<std::pair<size_t, size_t>> near;  // (distance, index in known)
  for (size_t i = 0; i < known.size(); ++i)
    if (const size_t d = edit_distance(name, known[i]); d <= limit) near.emplace_back(d, i);
  // Without a close spelling, the names that `name` begins ("conv" for "conv2d_nchw").
  if (near.empty())
    for (size_t i = 0; i < known.size(); ++i)
      if (starts_with(known[i])) near.emplace_back(0, i);
  std::stable_sort(near.begin(), near.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<std::string> out;
  for (size_t k = 0; k < near.size() && out.size() < max; ++k)
    if (std::find(out.begin(), out.end(), known[near[k].second]) == out.end()) out.push_back(known[near[k].second]);
  return out;
}

std::string did_you_mean(const std::string& name, const std::vector<std::string>& known) {
  std::vector<std::string> near = nearest_names(name, known);
  if (near.empty()) return "";
  std::string list;
  for (size_t i = 0; i < near.size(); ++i)
    list += (i == 0 ? "" : i + 1 == near.size() ? " or " : ", ") + ("'" + near[i] + "'");
  return "did you mean " + list + "?";
}

}  // namespace loom
