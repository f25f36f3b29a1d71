// Tuning from Python: tasks, loom.tune (the CLI's progress; Ctrl-C stops it between batches
// with the log intact), ApplyHistoryBest, build_best, and the tools of `loom records`.
#include <Python.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <iostream>
#include <sstream>

#include "bindings.h"
#include "convert.h"
#include "loom/records/log_tools.h"
#include "loom/records/record.h"
#include "loom/tuner/auto/workload.h"
#include "loom/tuner/build_best.h"
#include "loom/tuner/measure.h"
#include "loom/tuner/task.h"
#include "loom/tuner/tuner.h"

namespace loom::python {
namespace {

using records::ApplyHistoryBest;
using records::Record;
using tuner::Task;

struct TuneOptionsPy {
  int trials = 200;
  std::string log;
  std::string tuner = "xgb";
  bool resume = false;
  int early_stopping = -1;
  int batch = 0;
  int jobs = 0;
  double timeout = 10;
  int repeat = 3;
  double min_repeat_ms = 100;
  bool check = true;
  int confirm = 5;
  uint64_t seed = 0;
  bool quiet = false;
};

tuner::TuneSummary tune(const Task& task, const TuneOptionsPy& o) {
  if (o.trials < 1) fail("tune: trials must be at least 1, not {}", o.trials);
  if (o.log.empty()) fail("tune: log= names the file every trial is appended to (required)");
  tuner::TuneOptions opt;
  opt.n_trial = o.trials;
  opt.log_file = o.log;
  opt.resume = o.resume;
  opt.early_stopping = o.early_stopping;
  opt.batch_size = o.batch;
  opt.seed = o.seed;
  opt.measure.n_parallel = o.jobs;
  opt.measure.timeout_s = o.timeout;
  opt.measure.repeat = o.repeat;
  opt.measure.min_repeat_ms = o.min_repeat_ms;
  opt.measure.check_correctness = o.check;
  opt.confirm_top = o.confirm;
  opt.progress = o.quiet ? nullptr : &std::cerr;
  std::unique_ptr<tuner::Tuner> t = tuner::make_tuner(o.tuner, task);
  {
    nb::gil_scoped_release release;
    t->begin(opt);
  }
  // Batches one at a time, so that a Ctrl-C (seen between batches) ends the job; every
  // measured trial is in the log already.
  const int batch = opt.batch_size > 0 ? opt.batch_size : tuner::measure_workers(opt.measure);
  int left = opt.n_trial;
  while (left > 0 && !t->done()) {
    if (PyErr_CheckSignals() != 0) {
      if (!o.quiet)
        std::cerr << "\ntune: interrupted after " << t->summary().trials << " trials; they are in " << opt.log_file << "\n";
      throw nb::python_error();
    }
    int measured;
    {
      nb::gil_scoped_release release;
      measured = t->step(std::min(batch, left));
    }
    if (measured == 0) break;
    left -= measured;
  }
  nb::gil_scoped_release release;
  return t->finish();
}

nb::dict summary_dict(const records::WorkloadSummary& s) {
  nb::dict d;
  d["key"] = s.key;
  d["target"] = s.target;
  d["trials"] = s.trials;
  d["valid"] = s.valid;
  d["confirmations"] = s.confirmations;
  d["best_gflops"] = s.best_gflops;
  d["best_cost"] = s.best_cost;
  d["best_config"] = s.best_config;
  d["trials_to_95"] = s.trials_to_95;
  d["configs"] = s.configs;
  d["top_configs"] = s.top_configs;
  nb::dict errors;
  for (const auto& [code, n] : s.errors) errors[records::to_string(code)] = n;
  d["errors"] = errors;
  return d;
}

}  // namespace

void bind_tuning(nb::module_& m) {
  nb::class_<Record>(m, "Record", "One trial of a tuning log.")
      .def_prop_ro("key", [](const Record& r) { return r.workload.key(); }, "The workload key, op(shape;dtype).")
      .def_prop_ro("op", [](const Record& r) { return r.workload.op; })
      .def_prop_ro("shape", [](const Record& r) { return r.workload.shape; })
      .def_prop_ro("dtype", [](const Record& r) { return r.workload.dtype; })
      .def_prop_ro("attrs", [](const Record& r) { return r.workload.attrs; })
      .def_prop_ro("target", [](const Record& r) { return r.target; })
      .def_prop_ro("config_index", [](const Record& r) { return r.config.index; })
      .def_prop_ro("knobs", [](const Record& r) { return r.config.knobs; })
      .def_prop_ro("costs", [](const Record& r) { return r.result.costs; })
      .def_prop_ro("mean_cost", [](const Record& r) { return r.result.mean_cost(); })
      .def_prop_ro("error", [](const Record& r) { return std::string(records::to_string(r.result.error)); })
      .def_prop_ro("error_msg", [](const Record& r) { return r.result.error_msg; })
      .def_prop_ro("tuner", [](const Record& r) { return r.tuner; })
      .def_prop_ro("steps", [](const Record& r) { return r.steps; },
                   "The schedule steps of an auto-scheduled record as a JSON array ('' for a template's).")
      .def_prop_ro("valid", &Record::valid)
      .def_prop_ro("gflops", &Record::gflops)
      .def("to_json", &Record::to_json)
      .def_static("from_json", &Record::from_json, nb::arg("line"))
      .def("__repr__", [](const Record& r) {
        return fmt::format("Record({} config {}: {})", r.workload.key(), r.config.index,
                           r.valid() ? fmt::format("{:.2f} GFLOP/s", r.gflops()) : records::to_string(r.result.error));
      });

  nb::class_<Task>(m, "Task",
                   "A tuning task: a workload and a target with the space that schedules it, a template's "
                   "(Task(op, shape)) or the auto-scheduler's (Task.from_tensors, Task.from_operator).")
      .def(nb::new_([](const std::string& op, std::vector<int64_t> shape, const std::string& target, const std::string& dtype,
                       std::map<std::string, std::string> attrs) {
             return Task::create(op, std::move(shape), Target(target), dtype, std::move(attrs));
           }), nb::arg("op"), nb::arg("shape"), nb::arg("target") = "llvm", nb::arg("dtype") = "float32",
           nb::arg("attrs") = std::map<std::string, std::string>{})
      .def_static("from_tensors", [](const std::vector<te::Tensor>& args, const std::string& name, const std::string& target) {
             if (args.empty()) fail("Task.from_tensors: args lists the computation's inputs then its outputs; it is empty");
             return Task::create_auto(name, args, Target(target));
           }, nb::arg("args"), nb::arg("name"), nb::arg("target") = "llvm",
           "An auto-scheduled task of any te computation, no template needed: `args` are its inputs then "
           "its outputs, in call order; `name` names it in records. A rebuild of the same computation (here "
           "or in another process) finds its records.")
      .def_static("from_operator", [](const std::string& op, nb::list inputs, nb::dict attrs, const std::string& target,
                                      const std::string& dtype) {
             const DataType t = DataType::parse(dtype);
             std::vector<te::ops::TensorType> types;
             for (nb::handle h : inputs) {
               if (nb::isinstance<nb::str>(h)) types.push_back(tuner::autosched::parse_tensor_type(nb::cast<std::string>(h)));
               else if (nb::isinstance<nb::list>(h) || nb::isinstance<nb::tuple>(h))
                 types.push_back({nb::cast<std::vector<int64_t>>(h), t, ""});
               else
                 fail("Task.from_operator('{}'): each input is a shape (a list of ints) or a type such as "
                      "'float32[128,768]', not a {}", op, py_type_name(h));
             }
             return Task::create_auto(tuner::autosched::OpGraph::single(op, std::move(types), to_attrs(attrs)), Target(target));
           }, nb::arg("op"), nb::arg("inputs"), nb::arg("attrs") = nb::dict(), nb::arg("target") = "llvm",
           nb::arg("dtype") = "float32",
           "An auto-scheduled task of a registry operator (loom ops lists them; the graph's names) on inputs "
           "of these shapes or types, as `loom tune --op NAME --input ...`; works for operators with a "
           "template too, to compare the two.")
      .def_prop_ro("is_auto", &Task::is_auto, "Whether the auto-scheduler made the space (not a template).")
      .def_prop_ro("key", &Task::key)
      .def_prop_ro("op", [](const Task& t) { return t.workload().op; })
      .def_prop_ro("shape", [](const Task& t) { return t.workload().shape; })
      .def_prop_ro("target", [](const Task& t) { return t.target().str(); })
      .def_prop_ro("flop", &Task::flop)
      .def_prop_ro("space_size", [](const Task& t) { return t.space().size(); })
      .def_prop_ro("space", [](const Task& t) { return t.space().str(); }, "The knobs, one a line.")
      .def_prop_ro("default_index", &Task::default_index)
      .def("config", [](const Task& t, int64_t i) { return t.space().get(i).str(); }, nb::arg("index"),
           "Config `index` as text: its knob values.")
      .def("instantiate", [](const Task& t, nb::handle index) {
        tuner::Instance in = index.is_none() ? t.instantiate_default() : t.instantiate(nb::cast<int64_t>(index));
        return std::make_pair(in.schedule, in.args);
      }, nb::arg("index") = nb::none(), "(schedule, args) of config `index` (None: the default config).")
      .def("__repr__", [](const Task& t) { return "Task(" + t.key() + ", " + t.target().str() + ")"; });
  m.def("template_names", &tuner::template_names);

  nb::class_<tuner::TuneSummary>(m, "TuneResult", "What loom.tune did.")
      .def_prop_ro("best", [](const tuner::TuneSummary& s) { return s.best; }, "The best config's record, or None.")
      .def_prop_ro("best_gflops", &tuner::TuneSummary::best_gflops)
      .def_ro("best_measurements", &tuner::TuneSummary::best_measurements)
      .def_ro("trials", &tuner::TuneSummary::trials)
      .def_ro("errors", &tuner::TuneSummary::errors)
      .def_ro("resumed", &tuner::TuneSummary::resumed)
      .def_ro("confirmed", &tuner::TuneSummary::confirmed)
      .def_ro("elapsed_s", &tuner::TuneSummary::elapsed_s)
      .def("__repr__", [](const tuner::TuneSummary& s) {
        return fmt::format("TuneResult({} trials, {} errors, best {:.2f} GFLOP/s)", s.trials, s.errors, s.best_gflops());
      });

  m.def("tune", [](const Task& task, int trials, std::string log, std::string tuner_name, bool resume, int early_stopping,
                   int batch, int jobs, double timeout, int repeat, double min_repeat_ms, bool check, int confirm,
                   uint64_t seed, bool quiet) {
    TuneOptionsPy o{trials, std::move(log), std::move(tuner_name), resume, early_stopping, batch, jobs, timeout,
                    repeat, min_repeat_ms, check, confirm, seed, quiet};
    return tune(task, o);
  }, nb::arg("task"), nb::arg("trials") = 200, nb::arg("log") = "", nb::arg("tuner") = "xgb", nb::arg("resume") = false,
     nb::arg("early_stopping") = -1, nb::arg("batch") = 0, nb::arg("jobs") = 0, nb::arg("timeout") = 10.0,
     nb::arg("repeat") = 3, nb::arg("min_repeat_ms") = 100.0, nb::arg("check") = true, nb::arg("confirm") = 5,
     nb::arg("seed") = 0, nb::arg("quiet") = false);

  nb::class_<ApplyHistoryBest>(m, "ApplyHistoryBest", "The best config of each workload in tuning logs.")
      .def(nb::new_([](const std::vector<std::string>& paths) {
        nb::gil_scoped_release release;
        return ApplyHistoryBest(paths);
      }), nb::arg("paths"))
      .def("query", [](const ApplyHistoryBest& b, const Task& t) { return tuner::best_record(t, b); }, nb::arg("task"),
           "The best record of `task`, or None.")
      .def("records", &ApplyHistoryBest::all, "The best record of every (workload, target).")
      .def("__len__", &ApplyHistoryBest::size);
  m.def("build_best", [](const Task& task, const ApplyHistoryBest* best, const std::string& name, bool check_bounds) {
    ApplyHistoryBest none;
    nb::gil_scoped_release release;
    return tuner::build_best(task, best ? *best : none, &std::cerr, name, check_bounds);
  }, nb::arg("task"), nb::arg("best").none() = nb::none(), nb::arg("name") = "", nb::arg("check_bounds") = false);

  m.def("records_read_log", [](const std::string& path) {
    records::LogContents c = records::read_log(path);
    return std::make_pair(c.records, c.warnings);
  }, nb::arg("path"));
  m.def("records_summary", [](const std::vector<std::string>& paths) {
    std::ostringstream warn;
    std::vector<records::WorkloadSummary> rows = records::summary(paths, &warn);
    nb::list out;
    for (const auto& s : rows) out.append(summary_dict(s));
    return std::make_pair(out, records::format_summary(rows));
  }, nb::arg("paths"));
  m.def("records_merge", [](const std::vector<std::string>& paths, const std::string& out) {
    records::MergeStats s = records::merge(paths, out, &std::cerr);
    nb::dict d;
    d["read"] = s.read;
    d["written"] = s.written;
    d["duplicates"] = s.duplicates;
    return d;
  }, nb::arg("paths"), nb::arg("out"));
  m.def("records_distill", [](const std::vector<std::string>& paths, const std::string& out) {
    return records::distill(paths, out, &std::cerr);
  }, nb::arg("paths"), nb::arg("out"));
  m.def("records_best_curve", [](const std::string& path, const std::string& key) {
    return records::best_curve(path, key, &std::cerr);
  }, nb::arg("path"), nb::arg("workload_key") = "");
  m.def("install_record_check", &tuner::install_record_check);
}

}  // namespace loom::python
