// JSON forms of what ranks exchange: machines, measure options, tasks and results.
#include "protocol.h"

namespace loom::tuner::distributed::protocol {

using nlohmann::json;

json to_json(const MachineInfo& m) {
  return {{"host", m.host}, {"cpu_model", m.cpu_model}, {"cpu", m.cpu}, {"features", m.features}, {"cores", m.cores}};
}

MachineInfo machine_from_json(const json& j) {
  MachineInfo m;
  m.host = j.at("host").get<std::string>();
  m.cpu_model = j.at("cpu_model").get<std::string>();
  m.cpu = j.at("cpu").get<std::string>();
  m.features = j.at("features").get<std::string>();
  m.cores = j.at("cores").get<int>();
  return m;
}

json to_json(const MeasureOptions& o) {
  return {{"number", o.number},
          {"repeat", o.repeat},
          {"min_repeat_ms", o.min_repeat_ms},
          {"flush_cache", o.flush_cache},
          {"rotate_inputs", o.rotate_inputs},
          {"timeout_s", o.timeout_s},
          {"n_parallel", o.n_parallel},
          {"check_correctness", o.check_correctness},
          {"rtol", o.rtol},
          {"atol", o.atol},
          {"seed", o.seed},
          {"worker_memory_bytes", o.worker_memory_bytes},
          {"evaluate_flop_limit", o.evaluate_flop_limit}};
}

MeasureOptions measure_options_from_json(const json& j) {
  MeasureOptions o;
  o.number = j.at("number").get<int>();
  o.repeat = j.at("repeat").get<int>();
  o.min_repeat_ms = j.at("min_repeat_ms").get<double>();
  o.flush_cache = j.at("flush_cache").get<bool>();
  o.rotate_inputs = j.value("rotate_inputs", false);
  o.timeout_s = j.at("timeout_s").get<double>();
  o.n_parallel = j.at("n_parallel").get<int>();
  o.check_correctness = j.at("check_correctness").get<bool>();
  o.rtol = j.at("rtol").get<double>();
  o.atol = j.at("atol").get<double>();
  o.seed = j.at("seed").get<uint64_t>();
  o.worker_memory_bytes = j.at("worker_memory_bytes").get<int64_t>();
  o.evaluate_flop_limit = j.at("evaluate_flop_limit").get<double>();
  return o;
}

json task_json(const Task& task) {
  const records::Workload& w = task.workload();
  return {{"op", w.op}, {"shape", w.shape}, {"dtype", w.dtype}, {"attrs", w.attrs}, {"target", task.target().str()}};
}

Task task_from_json(const json& j) {
  records::Workload w;
  w.op = j.at("op").get<std::string>();
  w.shape = j.at("shape").get<std::vector<int64_t>>();
  w.dtype = j.at("dtype").get<std::string>();
  w.attrs = j.at("attrs").get<std::map<std::string, std::string>>();
  return Task::create(w, Target(j.at("target").get<std::string>()));
}

json to_json(const records::MeasureResult& r) {
  return {{"costs", r.costs}, {"error", int(r.error)}, {"msg", r.error_msg}, {"all_cost", r.all_cost},
          {"timestamp", r.timestamp}};
}

records::MeasureResult result_from_json(const json& j) {
  records::MeasureResult r;
  r.costs = j.at("costs").get<std::vector<double>>();
  r.error = records::ErrorCode(j.at("error").get<int>());
  r.error_msg = j.at("msg").get<std::string>();
  r.all_cost = j.at("all_cost").get<double>();
  r.timestamp = j.at("timestamp").get<double>();
  return r;
}

}  // namespace loom::tuner::distributed::protocol
