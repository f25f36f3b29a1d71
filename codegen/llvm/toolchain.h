// The C toolchain export_library links with: finding the target's C compiler, compiling the
// embedded runtimes and generated C, and linking a shared library into place.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include "loom/runtime/target.h"

namespace loom::codegen {

/// A fresh directory under the system temp dir, removed with everything in it.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

/// Runs argv (no shell) and returns its exit status (128 + the signal when killed, -1 when it
/// cannot start); its stdout and stderr go to the file `log`, then to `output`.
int run_command(const std::vector<std::string>& argv, const std::filesystem::path& log, std::string* output);
/// Full path of an executable: as given if it has a '/', else searched on PATH; "" if none.
std::string find_program(const std::string& name);
/// Writes `bytes` to `path`; throws loom::Error prefixed with `what` when it cannot.
void write_file(const std::filesystem::path& path, const std::string& bytes, const char* what);
std::string read_file(const std::filesystem::path& path);

/// The C compiler command that compiles and links for `target`: $LOOM_CC, else for the host
/// the compiler loom was built with or cc/gcc/clang on PATH, else `<triple>-gcc`. Empty, with
/// `why` saying what to install, when there is none.
std::vector<std::string> find_c_compiler(const Target& target, std::string* why);

/// Compiles C11 `source` with `cc` (-std=c11 -O2 -fPIC -fvisibility=hidden -pthread, and
/// -I each of `include_dirs`) and returns the object; throws with the compiler's output,
/// naming `what`.
std::string compile_c_object(const std::vector<std::string>& cc, const std::string& source,
                             const std::vector<std::filesystem::path>& include_dirs, const std::string& what);

/// The embedded runtime (runtime/c_runtime.c) compiled with `cc`, once per process and compiler.
const std::string& runtime_object(const std::vector<std::string>& cc);
/// The embedded graph executor (runtime/graph_executor.c) compiled with `cc`, once per
/// process and compiler.
const std::string& graph_executor_object(const std::vector<std::string>& cc);
/// Writes the headers the graph executor includes (graph_executor.h, c_runtime_api.h,
/// dlpack/dlpack.h) under `dir`, for compiling C that uses them.
void write_graph_executor_headers(const std::filesystem::path& dir);

/// Links `objects` (bytes) with `cc` into the shared library `path`, exporting exactly
/// `exports` (a version script hides the rest), and renames it into place; `libs` are extra
/// link flags (e.g. "-ldl"). Throws naming the command and its output on failure.
void link_shared_library(const std::vector<std::string>& cc, const std::vector<std::string>& objects,
                         const std::vector<std::string>& exports, const std::string& path,
                         const std::vector<std::string>& libs = {});

/// Throws unless `path` can be written as a library: its directory exists and it is not one.
void check_library_path(const std::string& path);

}  // namespace loom::codegen
