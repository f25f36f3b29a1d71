// Model files from outside: nesting deeper than the reader allows (100,000 levels in any field
// is a loom::Error, not a stack overflow), integers checked against the type they become (no
// truncation), and error messages that quote a value at bounded length.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "../../records/json_limits.h"
#include "loom/graph_opt/builder.h"
#include "loom/graph_opt/serialize.h"

namespace loom::graph_opt {
namespace {

using nlohmann::json;

/// The message of the loom::Error that reading `text` throws ("" if none).
std::string error_of(const std::string& text) {
  try {
    from_json(text, "model.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::string nested(size_t depth, const std::string& inner = "1") {
  return std::string(depth, '[') + inner + std::string(depth, ']');
}

/// x: float32[2,3] → softmax(axis) → out, with each field replaceable by raw JSON text.
struct Model {
  std::string shape = "[2,3]";
  std::string inputs = R"(["x"])";
  std::string outputs = R"(["sm"])";
  std::string axis = "1";
  std::string version = "1";
  std::string text() const {
    return R"({"format": "loom.graph", "version": )" + version + R"(, "name": "m", "nodes": [
      {"name": "x", "kind": "input", "type": {"shape": )" + shape + R"(, "dtype": "float32"}},
      {"name": "sm", "op": "softmax", "inputs": )" + inputs + R"(, "attrs": {"axis": )" + axis + R"(}}],
      "outputs": )" + outputs + "}";
  }
};

TEST(JsonLimits, TheModelReadsAsWritten) {
  Graph g = from_json(Model().text(), "model.json");
  EXPECT_EQ(g.nodes.size(), 2u);
  Model m;
  m.inputs = R"([["x", 0]])";
  m.outputs = R"([["sm", 0.0]])";  // an integral float is that integer
  EXPECT_NO_THROW(from_json(m.text(), "model.json"));
}

TEST(JsonLimits, HundredThousandLevelsInAnyFieldIsAnError) {
  const std::string deep = nested(100000);
  struct Case {
    const char* field;
    Model model;
    const char* path;
  };
  std::vector<Case> cases(4);
  cases[0] = {"shape", {}, "at nodes[0].type.shape[0]×60"};
  cases[0].model.shape = deep;
  cases[1] = {"inputs", {}, "at nodes[1].inputs[0]×61"};
  cases[1].model.inputs = deep;
  cases[2] = {"outputs", {}, "at outputs[0]×63"};
  cases[2].model.outputs = deep;
  cases[3] = {"attrs", {}, "at nodes[1].attrs.axis[0]×60"};
  cases[3].model.axis = deep;
  for (const Case& c : cases) {
    std::string m = error_of(c.model.text());
    EXPECT_NE(m.find("model.json: JSON nested more than 64 levels deep at "), std::string::npos) << c.field << ": " << m;
    EXPECT_NE(m.find(c.path), std::string::npos) << c.field << ": " << m;
    EXPECT_LT(m.size(), 400u) << c.field;
  }
  // A whole document of brackets, and an object chain.
  EXPECT_NE(error_of(nested(1000000)).find("nested more than 64 levels"), std::string::npos);
  std::string objects;
  for (int i = 0; i < 100000; ++i) objects += R"({"a":)";
  objects += "1" + std::string(100000, '}');
  EXPECT_NE(error_of(objects).find("JSON nested more than 64 levels deep at a×64"), std::string::npos)
      << error_of(objects);
  Model m;
  m.shape = "[" + objects + "]";
  EXPECT_NE(error_of(m.text()).find("deep at nodes[0].type.shape[0].a×59"), std::string::npos) << error_of(m.text());
}

TEST(JsonLimits, NestingUpToTheLimitIsReadAndQuotedBriefly) {
  // 60 levels inside "axis" (64 in all): parsed, then refused as an attribute with a short quote.
  Model m;
  m.axis = nested(60);
  std::string e = error_of(m.text());
  EXPECT_NE(e.find("attribute 'axis'"), std::string::npos) << e;
  EXPECT_NE(e.find("must be an integer"), std::string::npos) << e;
  EXPECT_LT(e.size(), 300u) << e;
  m.axis = nested(61);
  EXPECT_NE(error_of(m.text()).find("nested more than 64 levels deep at nodes[1].attrs.axis"), std::string::npos);
}

TEST(JsonLimits, IntegerAttributesAreCheckedNotTruncated) {
  struct Case {
    std::string value, message;
  };
  std::vector<Case> cases = {
      {"4294967296", "attribute 'axis': 4294967296 does not fit in int32"},
      {"9223372036854775807", "attribute 'axis': 9223372036854775807 does not fit in int32"},
      {"-9223372036854775808", "attribute 'axis': -9223372036854775808 does not fit in int32"},
      {"18446744073709551615", "attribute 'axis': 18446744073709551615 does not fit in int32"},
      {"2147483648", "does not fit in int32"},
      {"1.5", "attribute 'axis': must be an integer, found 1.5"},
      {"1e300", "does not fit in int32"},
      {R"("3")", R"(attribute 'axis': must be an integer, found a string "3")"},
      {"true", "attribute 'axis': must be an integer, found true"},
      {"null", "must be an integer, found null"},
  };
  for (const Case& c : cases) {
    Model m;
    m.axis = c.value;
    std::string e = error_of(m.text());
    EXPECT_NE(e.find(c.message), std::string::npos) << c.value << ": " << e;
    EXPECT_NE(e.find("node 'sm'"), std::string::npos) << c.value << ": " << e;
  }
  // Within int32 the value is the attribute (-1: the last axis; 1.0 is the integer 1).
  for (const char* ok : {"-1", "1.0", "-2147483647"}) {
    Model m;
    m.axis = ok;
    if (std::string(ok) == "-2147483647") {
      EXPECT_NE(error_of(m.text()).find("axis"), std::string::npos);  // in range, but no such axis
    } else {
      EXPECT_EQ(error_of(m.text()), "") << ok;
    }
  }
}

TEST(JsonLimits, IntegerArraysAttributesAreChecked) {
  std::string text = R"({"version": 1, "nodes": [
      {"name": "x", "kind": "input", "type": {"shape": [2,3], "dtype": "float32"}},
      {"name": "t", "op": "transpose", "inputs": ["x"], "attrs": {"axes": [1, 4294967296]}}],
      "outputs": ["t"]})";
  std::string e = error_of(text);
  EXPECT_NE(e.find("attribute 'axes'[1]: 4294967296 does not fit in int32"), std::string::npos) << e;
}

TEST(JsonLimits, ReferenceIndicesAndVersionAreChecked) {
  struct Case {
    const char* what;
    Model model;
    const char* message;
  };
  std::vector<Case> cases(6);
  cases[0] = {"input index 2^32", {}, R"(the output index of ["x", …]: 4294967296 does not fit in int32)"};
  cases[0].model.inputs = R"([["x", 4294967296]])";
  cases[1] = {"output index 2^63-1", {}, R"(the output index of ["sm", …]: 9223372036854775807 does not fit)"};
  cases[1].model.outputs = R"([["sm", 9223372036854775807]])";
  cases[2] = {"output index 1.5", {}, "must be an integer, found 1.5"};
  cases[2].model.outputs = R"([["sm", 1.5]])";
  cases[3] = {"output index \"0\"", {}, "a value reference is a node name or [name, output index]"};
  cases[3].model.outputs = R"([["sm", "0"]])";
  cases[4] = {"version 2^64-1", {}, "field \"version\": 18446744073709551615 does not fit in int64"};
  cases[4].model.version = "18446744073709551615";
  cases[5] = {"version true", {}, "field \"version\": must be an integer, found true"};
  cases[5].model.version = "true";
  for (const Case& c : cases) {
    std::string e = error_of(c.model.text());
    EXPECT_NE(e.find(c.message), std::string::npos) << c.what << ": " << e;
  }
}

TEST(JsonLimits, InlineConstantsMustFitTheirType) {
  auto model = [](const std::string& dtype, const std::string& value) {
    return R"({"version": 1, "nodes": [
        {"name": "c", "kind": "constant", "type": {"shape": [2], "dtype": ")" + dtype + R"("}, "data": [1, )" + value +
           R"(]}], "outputs": ["c"]})";
  };
  struct Case {
    const char* dtype;
    const char* value;
    const char* message;  // "" when it reads
  };
  std::vector<Case> cases = {
      {"int8", "127", ""},
      {"int8", "128", "data value 1: 128 does not fit in int8"},
      {"uint8", "-1", "data value 1: -1 does not fit in uint8"},
      {"int32", "4294967296", "data value 1: 4294967296 does not fit in int32"},
      {"int32", "2.5", "data value 1: must be an integer, found 2.5"},
      {"int64", "9223372036854775807", ""},
      {"int64", "9223372036854775808", "does not fit in int64"},
      {"uint64", "18446744073709551615", ""},
      {"bool", "2", "does not fit in bool"},
      {"float32", "1e39", "data value 1: 1e+39 does not fit in float32"},
      {"float16", "70000", "does not fit in float16"},
      {"float64", "1e300", ""},
  };
  for (const Case& c : cases) {
    std::string e = error_of(model(c.dtype, c.value));
    if (*c.message == 0) {
      EXPECT_EQ(e, "") << c.dtype << " " << c.value;
    } else {
      EXPECT_NE(e.find(c.message), std::string::npos) << c.dtype << " " << c.value << ": " << e;
      EXPECT_NE(e.find("node 'c'"), std::string::npos) << e;
    }
  }
  Graph g = from_json(model("int64", "9223372036854775807"));
  EXPECT_EQ(g.nodes[0].value.data<int64_t>()[1], INT64_MAX);
  g = from_json(model("uint64", "18446744073709551615"));
  EXPECT_EQ(g.nodes[0].value.data<uint64_t>()[1], UINT64_MAX);
}

TEST(JsonLimits, NonFiniteValuesRoundTrip) {
  // JSON has no NaN or infinity; the file holds them as strings and reads them back.
  const double inf = std::numeric_limits<double>::infinity();
  GraphBuilder b("nonfinite");
  Value x = b.input("x", {{4}, DataType::Float(32), ""});
  runtime::NDArray c = runtime::NDArray::empty({4}, DataType::Float(32));
  c.set(0, std::nan(""));
  c.set(1, inf);
  c.set(2, -inf);
  c.set(3, 1.5);
  b.output(b.clip(b.add(x, b.constant("c", c), "add"), -inf, inf, "clip"));
  std::string text = to_json(b.build());
  EXPECT_NE(text.find(R"(["nan","inf","-inf",1.5])"), std::string::npos) << text;
  Graph g = from_json(text);
  const runtime::NDArray& back = g.nodes[size_t(g.find("c"))].value;
  EXPECT_TRUE(std::isnan(back.get(0)));
  EXPECT_EQ(back.get(1), inf);
  EXPECT_EQ(back.get(2), -inf);
  EXPECT_EQ(back.get(3), 1.5);
  const Node& clip = g.nodes[size_t(g.find("clip"))];
  EXPECT_EQ(std::get<double>(clip.attrs.at("min")), -inf);
  EXPECT_EQ(std::get<double>(clip.attrs.at("max")), inf);
  // Other strings are not numbers.
  std::string bad = text;
  bad.replace(bad.find(R"("nan")"), 5, R"("NaN")");
  EXPECT_NE(error_of(bad).find(R"(data value 0 is "NaN", not a number)"), std::string::npos) << error_of(bad);
  // Integer constants have no such values.
  Model m;
  m.axis = R"("inf")";
  EXPECT_NE(error_of(m.text()).find("must be an integer"), std::string::npos);
}

TEST(JsonLimits, ShortJsonIsBoundedForAnyValue) {
  using records::detail::short_json;
  EXPECT_EQ(short_json(json::parse(R"({"a":[1,2.5,"x"],"b":null})")), R"({"a":[1,2.5,"x"],"b":null})");
  EXPECT_EQ(short_json(json::array()), "[]");
  // 100,000 levels, built without the recursive copy an initializer list would make.
  json deep = json::array();
  json* at = &deep;
  for (int i = 0; i < 100000; ++i) {
    at->push_back(json::array());
    at = &at->back();
  }
  std::string s = short_json(deep, 40);
  EXPECT_EQ(s, std::string(40, '[') + "…");
  json wide = json::array();
  for (int i = 0; i < 100000; ++i) wide.push_back(i);
  EXPECT_LE(short_json(wide, 50).size(), 50u + std::string("…").size());
  std::string big(1 << 20, 'x');
  EXPECT_LE(short_json(json(big), 50).size(), 50u + std::string("…").size());
  EXPECT_LE(short_json(json{{big, big}}, 50).size(), 50u + std::string("…").size());
}

TEST(JsonLimits, ParseJsonNamesThePathAndKeepsSyntaxErrors) {
  using records::detail::parse_json;
  EXPECT_EQ(parse_json(nested(64), "x").dump(), nested(64));
  try {
    parse_json(R"({"a": [0, {"b": )" + nested(70) + "}]}", "in.json");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("in.json: JSON nested more than 64 levels deep at a[1].b[0]×61", 0), 0u)
        << e.what();
  }
  EXPECT_THROW(parse_json("[1,", "x"), json::parse_error);
}

TEST(JsonLimits, CheckedIntegers) {
  using records::detail::json_int;
  using records::detail::json_integer;
  EXPECT_EQ(json_int<int32_t>(json(-2147483648LL), "v"), INT32_MIN);
  EXPECT_EQ(json_int<int64_t>(json::parse("-9223372036854775808"), "v"), INT64_MIN);
  EXPECT_EQ(json_int<int64_t>(json::parse("9223372036854775807"), "v"), INT64_MAX);
  EXPECT_EQ(json_int<int64_t>(json(3.0), "v"), 3);
  auto message = [](const json& j, int64_t lo, int64_t hi) {
    try {
      json_integer(j, "f", lo, hi, "T");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(message(json::parse("4294967296"), INT32_MIN, INT32_MAX), "f: 4294967296 does not fit in T");
  EXPECT_EQ(message(json::parse("9223372036854775808"), INT64_MIN, INT64_MAX),
            "f: 9223372036854775808 does not fit in T");
  EXPECT_EQ(message(json::parse("9.2233720368547758e18"), INT64_MIN, INT64_MAX),
            "f: 9.223372036854776e+18 does not fit in T");
  EXPECT_EQ(message(json(-1), 0, 10), "f: -1 does not fit in T");
  EXPECT_EQ(message(json(1.5), 0, 10), "f: must be an integer, found 1.5");
  EXPECT_EQ(message(json("3"), 0, 10), "f: must be an integer, found a string \"3\"");
  EXPECT_EQ(message(json(true), 0, 10), "f: must be an integer, found true");
  EXPECT_EQ(message(json::array({1}), 0, 10), "f: must be an integer, found an array [1]");
}

}  // namespace
}  // namespace loom::graph_opt
