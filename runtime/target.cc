// Target parsing and the host queries that do not need LLVM.
#include "loom/runtime/target.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include <sstream>
#include <vector>

#include "loom/runtime/error.h"

namespace loom {

namespace {

const std::vector<std::string>& known_kinds() {
  static const std::vector<std::string> kinds = {"llvm", "cuda"};
  return kinds;
}

/// The options each kind understands.
const std::vector<std::string>& known_options(const std::string& kind) {
  static const std::vector<std::string> llvm = {"mcpu", "mtriple", "mattr", "vector_math"};
  static const std::vector<std::string> cuda = {"arch", "fast_math"};
  return kind == "cuda" ? cuda : llvm;
}

/// The triple this library was compiled for.
std::string host_triple() {
#if defined(__x86_64__) && defined(__linux__)
  return "x86_64-unknown-linux-gnu";
#elif defined(__aarch64__) && defined(__linux__)
  return "aarch64-unknown-linux-gnu";
#elif defined(__x86_64__) && defined(__APPLE__)
  return "x86_64-apple-darwin";
#elif defined(__aarch64__) && defined(__APPLE__)
  return "arm64-apple-darwin";
#else
  return "unknown-unknown-unknown";
#endif
}

/// Float vector width of the CPU this process runs on.
int host_vector_bits() {
#if defined(__x86_64__) || defined(__i386__)
  if (__builtin_cpu_supports("avx512f")) return 512;
  if (__builtin_cpu_supports("avx2") || __builtin_cpu_supports("avx")) return 256;
  return 128;
#else
  return 128;
#endif
}

/// Float vector width of a named x86 CPU; 0 if the name is not in the table.
int cpu_vector_bits(const std::string& cpu) {
  static const std::pair<const char*, int> table[] = {
      {"x86-64-v4", 512}, {"skylake-avx512", 512}, {"cascadelake", 512}, {"icelake-server", 512},
      {"sapphirerapids", 512}, {"znver4", 512}, {"x86-64-v3", 256}, {"haswell", 256},
      {"skylake", 256}, {"znver2", 256}, {"znver3", 256}, {"x86-64", 128}, {"x86-64-v2", 128},
  };
  for (const auto& [name, bits] : table)
    if (cpu == name) return bits;
  return 0;
}

bool is_arm_triple(const std::string& triple) {
  return triple.starts_with("aarch64") || triple.starts_with("arm64") || triple.starts_with("arm");
}

}  // namespace

Target::Target(const std::string& s) {
  std::istringstream in(s);
  std::string tok;
  if (!(in >> kind_)) fail("empty target string (expected a kind: llvm or cuda, e.g. \"llvm -mcpu=x86-64-v3\")");
  bool known = false;
  for (const auto& k : known_kinds()) known |= (k == kind_);
  if (!known) fail("unknown target kind '{}' in \"{}\" (known kinds: {})", kind_, s, fmt::join(known_kinds(), ", "));
  while (in >> tok) {
    size_t eq = tok.find('=');
    if (tok.size() < 2 || tok[0] != '-' || eq == std::string::npos || eq == 1 || eq + 1 == tok.size())
      fail("malformed target option '{}' in \"{}\" (expected -key=value)", tok, s);
    size_t start = tok[1] == '-' ? 2 : 1;
    std::string key = tok.substr(start, eq - start);
    if (key.empty()) fail("malformed target option '{}' in \"{}\" (empty key)", tok, s);
    if (opts_.count(key)) fail("target option -{} given twice in \"{}\"", key, s);
    const std::vector<std::string>& allowed = known_options(kind_);
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end())
      fail("unknown option -{} for target kind '{}' in \"{}\" (its options: -{})", key, kind_, s,
           fmt::join(allowed, ", -"));
    opts_[key] = tok.substr(eq + 1);
  }
  if (has("vector_math") && get("vector_math") != "libmvec" && get("vector_math") != "none")
    fail("target \"{}\": -vector_math must be libmvec (glibc's vector math library, the default on x86-64 "
         "GNU/Linux) or none (one libm call per lane), got '{}'",
         s, get("vector_math"));
}

Target Target::host() { return Target("llvm"); }

std::string Target::get(const std::string& key, const std::string& def) const {
  auto it = opts_.find(key);
  return it == opts_.end() ? def : it->second;
}

std::string Target::mcpu() const { return get("mcpu"); }

std::string Target::mtriple() const { return get("mtriple", host_triple()); }

int Target::vector_bits() const {
  if (is_arm_triple(mtriple())) return 128;
  std::string cpu = mcpu();
  int bits = 0;
  if (cpu.empty() || cpu == "native") {
    bits = has("mtriple") && mtriple() != host_triple() ? 128 : host_vector_bits();
  } else {
    bits = cpu_vector_bits(cpu);
    if (bits == 0) bits = 128;
  }
  std::string attrs = get("mattr");
  if (attrs.find("+avx512f") != std::string::npos) bits = std::max(bits, 512);
  else if (attrs.find("+avx2") != std::string::npos || attrs.find("+avx") != std::string::npos)
    bits = std::max(bits, 256);
  // Disabling a feature disables those built on it (LLVM's implications): -avx takes AVX2 and
  // AVX-512 with it, -avx512f every AVX-512 extension.
  std::istringstream entries(attrs);
  for (std::string f; std::getline(entries, f, ',');) {
    if (f == "-avx512f") bits = std::min(bits, 256);
    if (f == "-avx") bits = std::min(bits, 128);
  }
  return bits;
}

std::string Target::str() const {
  std::string out = kind_;
  for (const auto& [k, v] : opts_) out += fmt::format(" -{}={}", k, v);
  return out;
}

}  // namespace loom
