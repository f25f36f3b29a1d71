// The size of a file that is about to be read or mapped whole, refusing what is not a regular
// file (a directory, or a device such as /dev/zero that would be read forever). Internal to
// libloom's runtime (not installed).
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <system_error>

#include "loom/runtime/error.h"

namespace loom::runtime::detail {

/// The size of `path` in bytes; throws loom::Error "<who>: cannot open '<path>': no such file"
/// / "not a regular file (a directory | a device, socket or pipe)" / the size's read error.
inline uint64_t regular_file_size(const std::string& path, const char* who) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::file_status st = fs::status(path, ec);
  LOOM_CHECK(fs::exists(st), "{}: cannot open '{}': no such file", who, path);
  LOOM_CHECK(fs::is_regular_file(st), "{}: cannot open '{}': not a regular file ({})", who, path,
             fs::is_directory(st) ? "a directory" : "a device, socket or pipe");
  const uint64_t size = fs::file_size(path, ec);
  LOOM_CHECK(!ec, "{}: cannot read the size of '{}': {}", who, path, ec.message());
  return size;
}

}  // namespace loom::runtime::detail
