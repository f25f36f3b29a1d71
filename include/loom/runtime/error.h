// loom::Error: the one exception type for user mistakes and failed operations.
#pragma once
#include <fmt/format.h>
#include <stdexcept>
#include <string>

namespace loom {

/// Thrown for a user mistake (bad schedule, shape mismatch at a call, …) or a failed
/// operation (compile error, missing file). The message names what was wrong and where.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& msg) : std::runtime_error(msg) {}
};

/// Throws loom::Error with a fmt-formatted message.
template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> f, Args&&... args) {
  throw Error(fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace loom

/// Checks a user-facing precondition; throws loom::Error with the formatted message.
#define LOOM_CHECK(cond, ...)                 \
  do {                                        \
    if (!(cond)) ::loom::fail(__VA_ARGS__);   \
  } while (0)

/// Checks an internal invariant; a failure is a bug in loom, reported with its location.
#define LOOM_ICHECK(cond)                                                                  \
  do {                                                                                     \
    if (!(cond))                                                                           \
      ::loom::fail("internal error: check '{}' failed at {}:{}", #cond, __FILE__, __LINE__); \
  } while (0)
