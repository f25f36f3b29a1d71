// Model files: JSON round trips (inline constants and a weights file, both models at full
// size) and malformed files, which must give a loom::Error naming the node and the file.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "graph_test_util.h"
#include "loom/graph_opt/passes.h"
#include "loom/graph_opt/serialize.h"

namespace loom::graph_opt {
namespace {

namespace fs = std::filesystem;
using runtime::NDArray;

fs::path scratch(const std::string& name) {
  fs::path p = fs::path(LOOM_BINARY_DIR) / "tests" / "graph_opt_scratch" / name;
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

void expect_same_graph(const Graph& a, const Graph& b) {
  EXPECT_EQ(to_text(a), to_text(b));
  ASSERT_EQ(a.nodes.size(), b.nodes.size());
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    if (!a.nodes[i].is_constant()) continue;
    int j = b.find(a.nodes[i].name);
    ASSERT_GE(j, 0) << a.nodes[i].name;
    const NDArray &x = a.nodes[i].value, &y = b.nodes[size_t(j)].value;
    ASSERT_EQ(x.nbytes(), y.nbytes()) << a.nodes[i].name;
    EXPECT_EQ(std::memcmp(x.raw_data(), y.raw_data(), x.nbytes()), 0) << a.nodes[i].name;
  }
}

std::string small_json() {
  GraphBuilder b("tiny");
  Value x = b.input("x", {{1, 2, 4, 4}, DataType::Float(32), "NCHW"});
  NDArray w = NDArray::empty({3, 2, 1, 1}, DataType::Float(32));
  w.fill_random(3);
  Value y = b.relu(b.conv2d(x, b.constant("w", w), {}, "conv"), "relu");
  b.output(y);
  return to_json(b.build());
}

/// The message of the loom::Error that parsing `text` throws ("" if none).
std::string parse_error(const std::string& text) {
  try {
    from_json(text, "model.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

/// Replaces the first occurrence of `from` in `s`.
std::string edit(std::string s, const std::string& from, const std::string& to) {
  size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

TEST(GraphJson, RoundTripsInline) {
  std::string text = small_json();
  Graph g = from_json(text, "tiny.json");
  EXPECT_EQ(to_json(g), text);
  Graph h = from_json(to_json(g, /*write_types=*/false));
  expect_same_graph(g, h);
}

TEST(GraphJson, RoundTripsBothModelsWithAWeightsFile) {
  fs::path dir = scratch("models");
  for (Graph g : {models::resnet18(), models::mobilenet_v2()}) {
    std::string json = (dir / (g.name + ".json")).string();
    std::string weights = save_graph(g, json);
    EXPECT_EQ(weights, (dir / (g.name + ".weights")).string());
    EXPECT_LT(fs::file_size(json), 400000u) << "weights belong in the weights file";
    expect_same_graph(load_graph(json), g);
  }
}

TEST(GraphJson, RoundTripsAFusedGraph) {
  Graph o = optimize(models::resnet18(test::small_model()));
  fs::path dir = scratch("fused");
  std::string json = (dir / "resnet18_fused.json").string();
  save_graph(o, json);
  Graph back = load_graph(json);
  expect_same_graph(back, o);
  ASSERT_EQ(back.groups.size(), o.groups.size());
  for (size_t k = 0; k < o.groups.size(); ++k) {
    EXPECT_EQ(back.groups[k].name, o.groups[k].name);
    EXPECT_EQ(back.groups[k].nodes, o.groups[k].nodes);
    EXPECT_EQ(back.groups[k].anchor, o.groups[k].anchor);
    EXPECT_EQ(back.groups[k].pattern, o.groups[k].pattern);
    EXPECT_EQ(back.groups[k].inputs, o.groups[k].inputs);
    EXPECT_EQ(back.groups[k].outputs, o.groups[k].outputs);
  }
  // Groups listed out of execution order are refused.
  Graph swapped = o;
  std::swap(swapped.groups[0], swapped.groups[1]);
  set_group_boundaries(swapped);
  std::string m;
  try {
    from_json(to_json(swapped), "swapped.json");
  } catch (const Error& e) {
    m = e.what();
  }
  EXPECT_NE(m.find("runs after it"), std::string::npos) << m;
}

TEST(GraphJson, NodesInAnyOrder) {
  std::string text = small_json();
  // The input node moved to the end: the reader sorts topologically.
  const std::string x = R"({"name":"x","kind":"input","type":{"shape":[1,2,4,4],"dtype":"float32","layout":"NCHW"}})";
  std::string moved = edit(text, "\n  " + x + ",", "");
  moved = edit(moved, "\n ],\n \"outputs\"", ",\n  " + x + "\n ],\n \"outputs\"");
  EXPECT_EQ(parse_error(moved), "");
  expect_same_graph(from_json(moved), from_json(text));
}

TEST(GraphJson, MalformedFilesNameTheNode) {
  std::string text = small_json();
  struct Case {
    const char* what;
    std::string text;
    std::vector<std::string> message;
  };
  std::vector<Case> cases = {
      {"not JSON", text.substr(0, text.size() / 2), {"model.json", "not valid JSON"}},
      {"op of the wrong kind", edit(text, R"("op": "relu")", R"("op": 7)"), {"node 'relu'", "\"op\""}},
      {"unknown op", edit(text, R"("op": "relu")", R"("op": "relu9")"),
       {"model.json", "node 'relu'", "unknown operator 'relu9'"}},
      {"mistyped op", edit(text, R"("op": "relu")", R"("op": "rleu")"),
       {"node 'relu'", "unknown operator 'rleu'; did you mean", "'relu'?"}},
      {"unknown attribute", edit(text, R"("groups":1,)", R"("groups":1,"stride_h":2,)"), {"node 'conv'", "stride_h"}},
      {"attribute of the wrong kind", edit(text, R"("groups":1,)", R"("groups":"one",)"), {"node 'conv'", "groups"}},
      {"missing name", edit(text, R"("name": "relu",)", ""), {"model.json", "\"name\""}},
      {"missing type", edit(text, R"("kind":"input","type":)", R"("kind":"input","typ":)"),
       {"model.json", "node 'x'", "missing field \"type\""}},
      {"dangling reference", edit(text, R"("inputs": ["conv"])", R"("inputs": ["conv2"])"), {"node 'relu'", "'conv2'"}},
      {"cycle", edit(text, R"("inputs": ["x","w"])", R"("inputs": ["relu","w"])"), {"cycle", "'conv'"}},
      {"wrong recorded shape", edit(text, R"("types": [{"shape":[1,3,4,4])", R"("types": [{"shape":[1,3,5,5])"),
       {"node 'conv'", "float32[1,3,5,5]"}},
      {"wrong input shape for the weights", edit(text, R"("shape":[1,2,4,4])", R"("shape":[1,5,4,4])"),
       {"node 'conv'"}},
      {"constant data of the wrong length", edit(text, R"("data": [)", R"("data": [0.5,)"), {"'w'", "\"data\""}},
      {"negative dim", edit(text, R"("shape":[1,2,)", R"("shape":[-1,2,)"), {"'x'", "positive"}},
      {"huge constant", edit(text, R"("shape":[3,2,1,1])", R"("shape":[2000000000,2000000000,1,1])"),
       {"'w'", "2^40"}},
      {"wrong number of inputs", edit(text, R"("inputs": ["conv"])", R"("inputs": ["conv","x"])"), {"node 'relu'"}},
      {"bad dtype", edit(text, R"("dtype":"float32","layout":"NCHW"}},)", R"("dtype":"float33","layout":"NCHW"}},)"),
       {"'x'", "float33"}},
      {"other version", edit(text, R"("version": 1)", R"("version": 2)"), {"version 2"}},
      {"dangling output", edit(text, R"("outputs": ["relu"])", R"("outputs": ["nothing"])"), {"'nothing'"}},
      {"weights file not given", edit(text, R"("data": [)", R"("offset": 64, "nbytes": 24, "x": [)"),
       {"'w'", "weights file"}},
  };
  for (const Case& c : cases) {
    std::string m = parse_error(c.text);
    EXPECT_FALSE(m.empty()) << c.what << ": no error";
    for (const std::string& part : c.message) EXPECT_NE(m.find(part), std::string::npos) << c.what << ": " << m;
  }
}

TEST(GraphJson, DamagedWeightsFilesNameTheNodeAndFile) {
  fs::path dir = scratch("damaged");
  Graph g = from_json(small_json());
  SaveOptions opt;
  opt.inline_limit = 0;  // every constant in the weights file
  std::string json = (dir / "tiny.json").string();
  std::string weights = save_graph(g, json, opt);
  expect_same_graph(load_graph(json), g);

  fs::resize_file(weights, fs::file_size(weights) - 4);  // truncated
  try {
    load_graph(json);
    FAIL() << "no error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("node 'w'"), std::string::npos) << m;
    EXPECT_NE(m.find("truncated"), std::string::npos) << m;
    EXPECT_NE(m.find(weights), std::string::npos) << m;
  }
  {
    std::fstream f(weights, std::ios::in | std::ios::out | std::ios::binary);  // a flipped byte
    f.seekp(70);
    f.put('\x55');
  }
  save_graph(g, json, opt);
  {
    std::fstream f(weights, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(66);
    f.put('\x7f');
  }
  try {
    load_graph(json);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("checksum"), std::string::npos) << e.what();
  }
  fs::remove(weights);
  EXPECT_THROW(load_graph(json), Error);
  EXPECT_THROW(load_graph((dir / "absent.json").string()), Error);
}

TEST(GraphJson, CorruptedTextNeverCrashes) {
  // Random truncations and byte flips: each must parse or throw loom::Error.
  std::string text = small_json();
  std::mt19937 rng(5);
  int errors = 0;
  for (int trial = 0; trial < 600; ++trial) {
    std::string t = text;
    if (trial % 3 == 0) {
      t.resize(rng() % t.size());
    } else if (trial % 3 == 1) {
      // A number replaced by an extreme one.
      size_t at = t.find_first_of("0123456789", rng() % t.size());
      if (at == std::string::npos) continue;
      const char* extremes[] = {"4294967297", "-9223372036854775808", "18446744073709551615", "1e308", "0", "-1"};
      t.replace(at, 1, extremes[rng() % 6]);
    } else {
      for (int k = 0; k < 3; ++k) t[rng() % t.size()] = "{}[]\",:0-9ae \x01"[rng() % 16];
    }
    try {
      from_json(t, "fuzz.json");
    } catch (const Error&) {
      ++errors;
    }
  }
  EXPECT_GT(errors, 300);
}

}  // namespace
}  // namespace loom::graph_opt
