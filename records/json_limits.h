// Reading JSON that comes from outside (model files, tuning logs) within bounds: a nesting
// limit enforced while parsing, integers checked against the range of the type they become,
// and a bounded rendering of a value for error messages. Internal to libloom (not installed):
// records and graph_opt share it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <type_traits>

namespace loom::records::detail {

/// How deeply a JSON input may nest arrays and objects (a model file needs 5 levels, a log
/// line 4).
inline constexpr int kMaxJsonDepth = 64;

/// json::parse with a nesting limit: a document nested deeper than `max_depth` throws
/// loom::Error "<where>: JSON nested more than <max_depth> levels deep at <path>" as soon as
/// the parser reaches that depth (so neither time nor memory grow with the nesting). Syntax
/// errors throw nlohmann::json::parse_error as json::parse does.
nlohmann::json parse_json(const std::string& text, const std::string& where, int max_depth = kMaxJsonDepth);

/// `j` as compact JSON text of at most about `max_chars` characters ("…" marks a cut), made
/// without recursion, so any value, however large or deep, renders in bounded time.
std::string short_json(const nlohmann::json& j, size_t max_chars = 60);

/// The integer `v` holds, checked: throws loom::Error "<what>: must be an integer, found …"
/// for anything but a JSON number with an integral value (so not true, "3" or 1.5), and
/// "<what>: <v> does not fit in <type>" when it lies outside [lo, hi].
int64_t json_integer(const nlohmann::json& v, const std::string& what, int64_t lo, int64_t hi, const char* type);

/// json_integer over the whole range of T (int32_t or int64_t).
template <class T>
T json_int(const nlohmann::json& v, const std::string& what) {
  static_assert(std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t>);
  return T(json_integer(v, what, std::numeric_limits<T>::min(), std::numeric_limits<T>::max(),
                        sizeof(T) == 4 ? "int32" : "int64"));
}

}  // namespace loom::records::detail
