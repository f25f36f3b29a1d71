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

/// This process's environment, as `run` takes it.
std::vector<std::string> host_env();

/// Compiles a C11 source with the system C compiler into `exe` (linked with -ldl); throws
/// loom::Error with the compiler's output on failure.
void compile_c_program(const std::string& source, const std::string& exe);

/// What a 64-bit ELF file asks of the dynamic loader and offers it.
struct ElfInfo {
  uint16_t machine = 0;
  std::vector<std::string> needed;  // DT_NEEDED entries
  std::set<std::string> exported;   // defined global/weak dynamic symbols of default visibility
};
ElfInfo read_elf(const std::filesystem::path& p);

}  // namespace loom::test
