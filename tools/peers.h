// Peer libraries `loom bench` compares with: OpenBLAS for the GEMM-like templates, oneDNN for
// convolutions, the int8 templates (its u8s8s32 matmul and convolution), softmax and the
// float32 activations (its softmax and eltwise primitives), each optional at build time.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "loom/records/record.h"
#include "loom/runtime/ndarray.h"

namespace loom::cli {

/// A peer implementation of a workload. `run` reads the inputs (as loom's function takes
/// them, in call order) and writes the output array (shaped like loom's).
struct Peer {
  std::string name;  // "OpenBLAS cblas_sgemm"
  std::string key;   // "openblas", for JSON
  std::function<void(const std::vector<runtime::NDArray>& inputs, const runtime::NDArray& out)> run;
  /// Optional, for a peer that works in layouts of its own (oneDNN's int8 primitives):
  /// `prepare` converts loom's inputs into them, `compute` runs the peer alone on them (what
  /// a benchmark times), `finish` converts its result into `out`, in loom's layout. `run`
  /// does all three.
  std::function<void(const std::vector<runtime::NDArray>& inputs)> prepare;
  std::function<void()> compute;
  std::function<void(const runtime::NDArray& out)> finish;
};

/// The peer for `w` in this build, or none; `why_not` then says why ("no peer for softmax",
/// "built without oneDNN").
std::optional<Peer> find_peer(const records::Workload& w, std::string* why_not);
/// Sets the peer libraries' thread counts (OpenBLAS, and oneDNN's OpenMP).
void set_peer_threads(int n);

}  // namespace loom::cli
