// Peer libraries `loom bench` compares with: OpenBLAS for the GEMM-like templates, oneDNN for
// convolutions, the int8 templates (its u8s8s32 matmul and convolution), softmax and the
// float32 activations (its softmax and eltwise primitives), each optional at build time.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "loom/graph_opt/graph.h"
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
/// A peer of a whole network: `run` reads the graph's inputs and writes its outputs (plain
/// row-major arrays, in the graph's order).
struct GraphPeer {
  std::string name;  // "oneDNN 2.6, 64 primitives layer by layer (…)"
  std::function<void(const std::vector<runtime::NDArray>& inputs, const std::vector<runtime::NDArray>& outputs)> run;
};
/// `g` run layer by layer with oneDNN primitives in their own layouts (peers_graph.cc): each
/// convolution with its bias and the relu / clip / residual add after it as post-ops
/// (eltwise, and sum into the residual), pools,
/// inner products, reorders where layouts change. `g` is an unfused NCHW graph (batch norms
/// folded: optimize at level 2 with fusion off). None, with `why_not`, without oneDNN or for
/// an operator it has no primitive for.
std::optional<GraphPeer> graph_peer(const graph_opt::Graph& g, std::string* why_not);

/// Sets the peer libraries' thread counts (OpenBLAS, and oneDNN's OpenMP).
void set_peer_threads(int n);

/// The kernels OpenBLAS runs ("SkylakeX", "Haswell"; "" without OpenBLAS). OpenBLAS 0.3.21
/// does not recognize newer CPUs (Sapphire Rapids) and falls back to its SSE3 "Prescott"
/// kernels, about 5x slower: a peer at a fraction of its speed. When OPENBLAS_CORETYPE is
/// unset and the kernels are older than this CPU runs (AVX-512: SkylakeX, AVX2: Haswell),
/// this sets it and re-executes the program with `argv` (OpenBLAS picks its kernels when it
/// is loaded, before main); call it first thing in main.
std::string openblas_native_kernels(char** argv);

}  // namespace loom::cli
