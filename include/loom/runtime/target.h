// Target: what code is generated for ("llvm", "llvm -mcpu=x86-64-v3", "cuda -arch=sm_90").
#pragma once
#include <map>
#include <string>

namespace loom {

/// A compilation target parsed from a string: a kind followed by -key=value options.
/// Known kinds: "llvm" (CPU; options -mcpu, -mtriple, -mattr, -vector_math) and "cuda"
/// (-arch, -fast_math); an unknown kind or option, or a malformed one, throws loom::Error.
/// Without -mcpu an "llvm" target for this host compiles for the host's CPU and features. On
/// x86, SSE4a stays off unless -mattr names it (docs/benchmarks.md says why).
/// -vector_math=libmvec (the default on x86-64 GNU/Linux) computes float32 vector exp, log,
/// tanh, erf, … with glibc's libmvec; -vector_math=none keeps one libm call per lane
/// (lower/vector_access.h).
class Target {
 public:
  Target() : Target("llvm") {}
  Target(const char* s) : Target(std::string(s)) {}  // NOLINT: implicit, as users write it
  Target(const std::string& s);                       // NOLINT

  /// The host CPU target: "llvm", which code generation resolves to the host's CPU.
  static Target host();

  const std::string& kind() const { return kind_; }
  bool is_cpu() const { return kind_ == "llvm"; }
  bool is_cuda() const { return kind_ == "cuda"; }
  /// Option value, or `def` when absent. Keys are given without the leading dash.
  std::string get(const std::string& key, const std::string& def = "") const;
  bool has(const std::string& key) const { return opts_.count(key) != 0; }
  /// CPU name for LLVM: -mcpu, or the host's when absent.
  std::string mcpu() const;
  /// Target triple for LLVM: -mtriple, or the host's when absent.
  std::string mtriple() const;
  /// Largest native vector width in bits for float operations (512 with AVX-512), from the
  /// CPU (a table of names; the host's when absent) and -mattr (+avx512f, +avx2/+avx,
  /// -avx512f, -avx).
  int vector_bits() const;
  /// Canonical text, options sorted: equal targets print equally.
  std::string str() const;

  bool operator==(const Target& o) const { return str() == o.str(); }

 private:
  std::string kind_;
  std::map<std::string, std::string> opts_;
};

}  // namespace loom
