// Graphs as JSON (the model file format of docs/graph.md), with large constants in a binary
// weights file next to it. Reading checks everything: a malformed file gives a loom::Error
// naming the file and the node, never a crash.
#pragma once
#include <cstdint>
#include <string>

#include "loom/graph_opt/graph.h"

namespace loom::graph_opt {

/// Format version written as "version"; readers refuse others.
inline constexpr int kGraphFormatVersion = 1;

struct SaveOptions {
  /// Constants of at most this many elements are written into the JSON as numbers; larger
  /// ones go to the weights file.
  int64_t inline_limit = 64;
  /// The weights file, relative to the JSON's folder; empty: "<json stem>.weights".
  std::string weights_file;
  /// Also write each node's output types (checked against inference when read).
  bool write_types = true;
};

/// Writes `g` to `json_path` (and, if any constant exceeds inline_limit, the weights file).
/// Returns the weights file's path ("" when none was written).
std::string save_graph(const Graph& g, const std::string& json_path, const SaveOptions& opt = {});
/// Reads a graph written by save_graph (or by hand): nodes may come in any order (they are
/// sorted topologically; a cycle is an error naming a node on it), every operator,
/// attribute, reference and constant is checked, types are inferred through the registry.
Graph load_graph(const std::string& json_path);

/// The JSON text of `g` with every constant inline (small graphs, tests).
std::string to_json(const Graph& g, bool write_types = true);
/// Parses JSON text; constants must be inline unless `weights_dir` names the folder where a
/// referenced weights file lies. `source` names the text in messages (a file name).
Graph from_json(const std::string& text, const std::string& source = "<json>", const std::string& weights_dir = "");

}  // namespace loom::graph_opt
