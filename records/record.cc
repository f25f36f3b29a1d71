// Record: error codes, workload keys, and the JSON form of one tuning-log line.
#include "loom/records/record.h"

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "json_limits.h"

#ifndef LOOM_VERSION
#define LOOM_VERSION "unknown"
#endif

namespace loom::records {

using nlohmann::json;

namespace {

constexpr const char* kErrorNames[] = {"no_error",      "instantiation", "compile",     "runtime",
                                       "wrong_answer",  "build_timeout", "run_timeout", "unknown"};
constexpr int kNumErrors = sizeof(kErrorNames) / sizeof(kErrorNames[0]);

const char* type_name(const json& j) {
  if (j.is_number_integer()) return "integer";
  if (j.is_number_float()) return "number";
  return j.type_name();
}

/// Typed field access that names the field (with its path) when it is missing or mistyped.
class Reader {
 public:
  Reader(const json& obj, std::string path) : obj_(obj), path_(std::move(path)) {}

  const json& field(const char* name) const {
    auto it = obj_.find(name);
    if (it == obj_.end()) fail("record field '{}' is missing", where(name));
    return *it;
  }
  Reader object(const char* name) const {
    const json& j = field(name);
    expect(j.is_object(), name, j, "an object");
    return Reader(j, where(name));
  }
  std::string str(const char* name) const {
    const json& j = field(name);
    expect(j.is_string(), name, j, "a string");
    return j.get<std::string>();
  }
  int64_t integer(const char* name) const { return as_integer(field(name), where(name)); }
  int32_t int32(const char* name) const {
    const json& j = field(name);
    expect(j.is_number(), name, j, "an integer");
    return detail::json_int<int32_t>(j, fmt::format("record field '{}'", where(name)));
  }
  double number(const char* name) const { return as_number(field(name), where(name)); }
  const json& array(const char* name) const {
    const json& j = field(name);
    expect(j.is_array(), name, j, "an array");
    return j;
  }
  std::vector<int64_t> int_array(const char* name) const { return int_list(array(name), where(name)); }

  static int64_t as_integer(const json& j, const std::string& what) {
    if (!j.is_number()) fail("record field '{}' is a {}, expected an integer", what, type_name(j));
    return detail::json_int<int64_t>(j, fmt::format("record field '{}'", what));
  }
  static double as_number(const json& j, const std::string& what) {
    if (!j.is_number()) fail("record field '{}' is a {}, expected a number", what, type_name(j));
    return j.get<double>();
  }
  static std::vector<int64_t> int_list(const json& arr, const std::string& what) {
    std::vector<int64_t> out;
    for (size_t i = 0; i < arr.size(); ++i) out.push_back(as_integer(arr[i], fmt::format("{}[{}]", what, i)));
    return out;
  }
  const json& raw() const { return obj_; }
  std::string where(const std::string& name) const { return path_.empty() ? name : path_ + "." + name; }

 private:
  void expect(bool ok, const char* name, const json& j, const char* want) const {
    if (!ok) fail("record field '{}' is a {}, expected {}", where(name), type_name(j), want);
  }
  const json& obj_;
  std::string path_;
};

}  // namespace

const char* to_string(ErrorCode c) {
  int i = static_cast<int>(c);
  return i >= 0 && i < kNumErrors ? kErrorNames[i] : "unknown";
}

ErrorCode error_code_from_string(const std::string& s) {
  for (int i = 0; i < kNumErrors; ++i)
    if (s == kErrorNames[i]) return static_cast<ErrorCode>(i);
  fail("unknown error code '{}' (known: {})", s, fmt::join(kErrorNames, ", "));
}

const char* loom_version() { return LOOM_VERSION; }

SchemaVersionError::SchemaVersionError(int version)
    : Error(fmt::format("schema version {}, this loom reads {} to {}", version, kOldestSchemaVersion, kSchemaVersion)),
      version_(version) {}

std::string Workload::key() const {
  std::string out = op + "(" + fmt::format("{}", fmt::join(shape, ",")) + ";" + dtype;
  if (!attrs.empty()) {
    out += ";";
    bool first = true;
    for (const auto& [k, v] : attrs) {  // std::map: sorted by name
      if (!first) out += ",";
      out += k + "=" + v;
      first = false;
    }
  }
  return out + ")";
}

double MeasureResult::mean_cost() const {
  if (error != ErrorCode::kNoError || costs.empty()) return std::numeric_limits<double>::infinity();
  double sum = 0;
  for (double c : costs) sum += c;
  return sum / double(costs.size());
}

double Record::gflops() const {
  if (!valid()) return 0;
  double t = result.mean_cost();
  if (!(t > 0) || !std::isfinite(t)) return 0;
  return flop / t / 1e9;
}

std::string Record::to_json() const {
  json attrs = json::object();
  for (const auto& [k, v] : workload.attrs) attrs[k] = v;
  json knobs = json::object();
  for (const auto& [k, v] : config.knobs) knobs[k] = v;
  json labels = json::object();
  for (const auto& [k, v] : config.labels) labels[k] = v;
  json j = json::object();
  j["v"] = version;
  j["workload"] = {{"op", workload.op}, {"shape", workload.shape}, {"dtype", workload.dtype}, {"attrs", attrs}};
  j["key"] = workload.key();
  j["target"] = target;
  j["cpu"] = target_cpu;
  j["features"] = target_features;
  if (!host.empty()) j["host"] = host;
  j["flop"] = flop;
  j["config"] = {{"index", config.index}, {"knobs", knobs}, {"labels", labels}};
  j["result"] = {{"costs", result.costs},
                 {"error", to_string(result.error)},
                 {"error_code", static_cast<int>(result.error)},
                 {"msg", result.error_msg},
                 {"all_cost", result.all_cost},
                 {"timestamp", result.timestamp}};
  j["tuner"] = tuner;
  j["loom_version"] = loom_version;
  if (!steps.empty()) {
    try {
      j["steps"] = json::parse(steps);
    } catch (const json::exception& e) {
      fail("record of {}: its steps are not JSON: {}", workload.key(), e.what());
    }
  }
  // Invalid UTF-8 (e.g. a compiler message) is replaced rather than failing the whole trial.
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

Record Record::from_json(const std::string& line) {
  json j;
  try {
    j = detail::parse_json(line, "");
  } catch (const json::parse_error& e) {
    if (e.byte >= line.size()) fail("truncated JSON (input ends at column {})", line.size());
    fail("malformed JSON at column {}", e.byte);
  } catch (const json::exception& e) {  // a number too large for a double, say
    fail("malformed JSON: {}", e.what());
  }
  if (!j.is_object()) fail("record is a JSON {}, expected an object", type_name(j));
  Reader top(j, "");
  int32_t v = top.int32("v");
  if (v < kOldestSchemaVersion || v > kSchemaVersion) throw SchemaVersionError(v);

  Record r;
  r.version = v;
  Reader w = top.object("workload");
  r.workload.op = w.str("op");
  r.workload.shape = w.int_array("shape");
  r.workload.dtype = w.str("dtype");
  Reader attrs = w.object("attrs");
  for (const auto& [k, val] : attrs.raw().items()) {
    if (!val.is_string()) fail("record field '{}' is a {}, expected a string", attrs.where(k), type_name(val));
    r.workload.attrs[k] = val.get<std::string>();
  }
  std::string key = top.str("key");
  if (key != r.workload.key())
    fail("record field 'key' is \"{}\" but the workload's key is \"{}\"", key, r.workload.key());
  r.target = top.str("target");
  r.target_cpu = top.str("cpu");
  r.target_features = top.str("features");
  if (top.raw().contains("host")) r.host = top.str("host");
  r.flop = top.number("flop");

  Reader c = top.object("config");
  r.config.index = c.integer("index");
  Reader knobs = c.object("knobs");
  for (const auto& [k, val] : knobs.raw().items()) {
    if (!val.is_array()) fail("record field '{}' is a {}, expected an array", knobs.where(k), type_name(val));
    r.config.knobs[k] = Reader::int_list(val, knobs.where(k));
  }
  Reader labels = c.object("labels");
  for (const auto& [k, val] : labels.raw().items()) {
    if (!val.is_string()) fail("record field '{}' is a {}, expected a string", labels.where(k), type_name(val));
    r.config.labels[k] = val.get<std::string>();
  }

  Reader res = top.object("result");
  const json& costs = res.array("costs");
  for (size_t i = 0; i < costs.size(); ++i)
  {
    double c = Reader::as_number(costs[i], fmt::format("result.costs[{}]", i));
    if (!std::isfinite(c) || c <= 0)
      fail("record field 'result.costs[{}]' is {}, expected a positive, finite time in seconds", i, c);
    r.result.costs.push_back(c);
  }
  std::string err = res.str("error");
  try {
    r.result.error = error_code_from_string(err);
  } catch (const Error& e) {
    fail("record field 'result.error': {}", e.what());
  }
  int64_t code = res.integer("error_code");
  if (code != static_cast<int>(r.result.error))
    fail("record field 'result.error_code' is {} but 'result.error' is \"{}\" (code {})", code, err,
         static_cast<int>(r.result.error));
  if (r.result.error == ErrorCode::kNoError && r.result.costs.empty())
    fail("record field 'result.costs' is empty but 'result.error' is \"no_error\" (a trial without an error has "
         "at least one time)");
  r.result.error_msg = res.str("msg");
  r.result.all_cost = res.number("all_cost");
  r.result.timestamp = res.number("timestamp");

  r.tuner = top.str("tuner");
  r.loom_version = top.str("loom_version");
  if (top.raw().contains("steps")) r.steps = top.array("steps").dump();
  return r;
}

}  // namespace loom::records
