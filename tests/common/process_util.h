// Test helpers for running programs in fresh processes and inspecting shared libraries.
#pragma once
#include <cstdint>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

namespace loom::test {

std::string read_file(const std::filesystem::path& p);

/// Exit status `run` returns for a program it killed after its timeout.
inline constexpr int kTimedOut = 124;

/// Runs argv (searched on PATH) with exactly `env` as its environment; returns the exit
/// status (128 + signal when killed, -1 when it could not start, kTimedOut when it ran past
/// `timeout_s` seconds and was killed, if `timeout_s` > 0), stdout+stderr in *out.
int run(const std::vector<std::string>& argv, const std::vector<std::string>& env, std::string* out,
        double timeout_s = 0);

/// What `run` may impose on the program it starts.
struct RunLimits {
  double timeout_s = 0;            // wall clock, killed past it (status kTimedOut); 0: none
  uint64_t address_space = 0;      // RLIMIT_AS in bytes, set in the child before exec; 0: inherited
};

/// `run` under `limits`: the program runs in a process group of its own, and a timeout
/// kills the whole group (the children it started too).
int run(const std::vector<std::string>& argv, const std::vector<std::string>& env, std::string* out,
        const RunLimits& limits);

/// This process's environment, as `run` takes it.
std::vector<std::string> host_env();

/// Compiles a C11 source with the system C compiler into `exe` (linked with -ldl); throws
/// loom::Error with the compiler's output on failure.
void compile_c_program(const std::string& source, const std::string& exe);

/// A scratch directory for the whole test binary, `<tmp>/<prefix>-<pid>`, made empty on
/// first use and removed at exit (kept when LOOM_KEEP_TEST_FILES is set).
const std::filesystem::path& scratch_dir(const std::string& prefix);

/// tests/codegen/export_loader.c (a loader that knows nothing of loom: it calls one packed
/// function of a library on arrays read from a file), compiled once per test binary.
const std::string& export_loader();

/// What a 64-bit ELF file asks of the dynamic loader and offers it.
struct ElfInfo {
  uint16_t machine = 0;
  std::vector<std::string> needed;  // DT_NEEDED entries
  std::set<std::string> exported;   // defined global/weak dynamic symbols of default visibility
};
ElfInfo read_elf(const std::filesystem::path& p);

}  // namespace loom::test
