// The measuring worker: builds, times and checks candidates on behalf of Measurer.
//
// CUDA tasks: inputs and outputs are copied to device arrays (kDLCUDA), the candidate is
// timed with CUDA events (runtime::cuda_time) and its outputs, copied back, are compared
// with the SharedReference the parent had computed once on the host.
#include "measure_worker.h"

#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <map>
#include <new>
#include <nlohmann/json.hpp>
#include <optional>

#include "loom/codegen/build.h"
#include "loom/runtime/cuda.h"
#include "loom/te/evaluate.h"

namespace loom::tuner::detail {
namespace {

using records::ErrorCode;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::vector<int64_t> const_shape(const te::Tensor& t) {
  std::vector<int64_t> shape;
  for (const te::Expr& d : t.shape()) {
    auto c = te::as_const_int(d);
    LOOM_CHECK(c.has_value(), "measure: tensor '{}' has a non-constant shape", t.name());
    shape.push_back(*c);
  }
  return shape;
}

bool is_input(const te::Tensor& t) { return t.op()->kind == te::OpKind::kPlaceholder; }

nlohmann::json reply(ErrorCode code, const std::string& msg) {
  constexpr size_t kMaxMsg = 4000;
  std::string m = msg.size() > kMaxMsg ? msg.substr(0, kMaxMsg) + "…" : msg;
  return {{"error", int(code)}, {"msg", m}, {"costs", nlohmann::json::array()}};
}


}  // namespace

schedule::Schedule reference_cpu_schedule(const std::vector<te::Tensor>& outs) {
  schedule::Schedule s = schedule::create_schedule(outs);
  std::vector<schedule::Stage> stages = s.stages();
  for (schedule::Stage st : stages) {
    const te::OperationNode& op = *st->op;
    if (op.kind != te::OpKind::kCompute || op.axis.empty()) continue;
    std::vector<te::IterVar> spatial, reduce;
    for (size_t i = 0; i < op.axis.size(); ++i) spatial.push_back(st.axis(i));
    for (size_t i = 0; i < op.reduce_axis.size(); ++i) reduce.push_back(st.reduce_axis(i));
    size_t outer = spatial.size() > 1 ? spatial.size() - 1 : 1;
    if (!reduce.empty() && spatial.size() > 1) {
      std::vector<te::IterVar> order(spatial.begin(), spatial.begin() + std::ptrdiff_t(outer));
      order.insert(order.end(), reduce.begin(), reduce.end());
      order.push_back(spatial.back());
      st.reorder(order);
    }
    std::vector<te::IterVar> fused(spatial.begin(), spatial.begin() + std::ptrdiff_t(outer));
    st.parallel(fused.size() > 1 ? st.fuse(fused) : fused[0]);
  }
  return s;
}

namespace {

class Worker {
 public:
  Worker(const Task& task, const MeasureOptions& opt, const SharedReference* shared = nullptr)
      : task_(task), opt_(opt), shared_(shared), cuda_(task.target().is_cuda()) {}

  /// The reference outputs of a CPU task as an unshared worker computes them (reference()):
  /// te::evaluate, or the default config compiled. Throws loom::Error when that fails.
  std::vector<runtime::NDArray> cpu_reference() {
    const std::vector<runtime::NDArray>& r = reference();
    if (!ref_error_.empty()) throw Error(ref_error_);
    return r;
  }

  /// The reference outputs of a CUDA task, computed on the host: te::evaluate for tasks of
  /// at most evaluate_flop_limit, else reference_cpu_schedule compiled for the host.
  std::vector<runtime::NDArray> host_reference() {
    std::vector<te::Tensor> args = task_.compute();
    std::map<te::Tensor, runtime::NDArray> in;
    for (size_t i = 0; i < args.size(); ++i)
      if (is_input(args[i])) in[args[i]] = input(i, args[i]);
    std::vector<te::Tensor> outs = outputs_of(args);
    if (task_.flop() <= opt_.evaluate_flop_limit) return te::evaluate(outs, in);
    runtime::Module m = codegen::build(reference_cpu_schedule(outs), args, Target("llvm"), "reference");
    std::vector<runtime::NDArray> arrays = make_arrays(args);
    m.get_function("reference").call(dl(arrays));
    std::vector<runtime::NDArray> out;
    for (size_t i = 0; i < args.size(); ++i)
      if (!is_input(args[i])) out.push_back(arrays[i]);
    return out;
  }

  nlohmann::json build(int64_t index) {
    built_.reset();
    Instance inst;
    try {
      inst = task_.instantiate(index);
    } catch (const std::bad_alloc&) {
      return reply(ErrorCode::kInstantiation, "out of memory while instantiating");
    } catch (const std::exception& e) {
      return reply(ErrorCode::kInstantiation, e.what());
    }
    try {
      runtime::Module m = codegen::build(inst.schedule, inst.args, task_.target(), "candidate");
      built_ = Built{m, m.get_function("candidate"), inst.args};
    } catch (const std::bad_alloc&) {
      return reply(ErrorCode::kCompile, "out of memory while compiling");
    } catch (const std::exception& e) {
      return reply(ErrorCode::kCompile, e.what());
    }
    return reply(ErrorCode::kNoError, "");
  }

  nlohmann::json run() {
    if (!built_) return reply(ErrorCode::kUnknown, "run requested without a built candidate");
    try {
      return cuda_ ? run_built_cuda() : run_built();
    } catch (const std::bad_alloc&) {
      return reply(ErrorCode::kRuntime, "out of memory while running");
    } catch (const std::exception& e) {
      return reply(ErrorCode::kRuntime, e.what());
    }
  }

 private:
  struct Built {
    runtime::Module module;
    runtime::PackedFunc func;
    std::vector<te::Tensor> args;
  };

  /// Seeded inputs, one per placeholder position of the argument list (equal for every
  /// config of the task, since they share the workload's compute).
  const runtime::NDArray& input(size_t pos, const te::Tensor& t) {
    auto it = inputs_.find(pos);
    if (it != inputs_.end()) return it->second;
    auto a = runtime::NDArray::empty(const_shape(t), t.dtype());
    DataType dt = t.dtype();
    uint64_t seed = opt_.seed + pos;
    if (dt.is_float()) a.fill_random(seed, -1.0, 1.0);
    else if (dt.is_bool()) a.fill_random(seed, 0, 1);
    else if (dt.bits() == 8) a.fill_random(seed, dt.is_uint() ? 0 : -128, dt.is_uint() ? 255 : 127);
    else if (dt.is_uint()) a.fill_random(seed, 0, 7);
    else a.fill_random(seed, -4, 4);
    return inputs_.emplace(pos, a).first->second;
  }

  /// Arguments for `args`: the shared inputs and fresh outputs filled with a marker value.
  std::vector<runtime::NDArray> make_arrays(const std::vector<te::Tensor>& args) {
    std::vector<runtime::NDArray> arrays;
    for (size_t i = 0; i < args.size(); ++i) {
      if (is_input(args[i])) {
        arrays.push_back(input(i, args[i]));
      } else {
        auto o = runtime::NDArray::empty(const_shape(args[i]), args[i].dtype());
        double marker = args[i].dtype().is_float() ? std::nan("") : 123;
        for (int64_t j = 0; j < o.numel(); ++j) o.set(j, marker);
        arrays.push_back(o);
      }
    }
    return arrays;
  }

  static std::vector<DLTensor*> dl(const std::vector<runtime::NDArray>& arrays) {
    std::vector<DLTensor*> out;
    for (const auto& a : arrays) out.push_back(a.dltensor());
    return out;
  }

  /// The reference outputs, computed on first use (see Measurer).
  const std::vector<runtime::NDArray>& reference() {
    if (ref_done_) return ref_;
    ref_done_ = true;
    if (shared_) {
      read_shared_reference();
      return ref_;
    }
    try {
      // The template's computation, unscheduled: evaluated directly, or built with the
      // default config (or the reference schedule if the template rejects its own default),
      // so that one bad config does not fail every other config's check.
      Instance d{schedule::Schedule(), task_.compute()};
      if (task_.flop() <= opt_.evaluate_flop_limit) {
        std::map<te::Tensor, runtime::NDArray> in;
        std::vector<te::Tensor> outs;
        for (size_t i = 0; i < d.args.size(); ++i) {
          if (is_input(d.args[i])) in[d.args[i]] = input(i, d.args[i]);
          else outs.push_back(d.args[i]);
        }
        ref_ = te::evaluate(outs, in);
      } else {
        try {
          d = task_.instantiate_default();
        } catch (const InstantiationError&) {
          d.schedule = reference_cpu_schedule(outputs_of(d.args));
        }
        runtime::Module m = codegen::build(d.schedule, d.args, task_.target(), "reference");
        std::vector<runtime::NDArray> arrays = make_arrays(d.args);
        m.get_function("reference").call(dl(arrays));
        for (size_t i = 0; i < d.args.size(); ++i) {
          if (!is_input(d.args[i])) ref_.push_back(arrays[i]);
        }
      }
    } catch (const std::exception& e) {
      ref_error_ = e.what();
      ref_.clear();
    }
    return ref_;
  }

  /// Copies the outputs out of the SharedReference (or takes its error).
  void read_shared_reference() {
    int state = shared_->state.load(std::memory_order_acquire);
    if (state != SharedReference::kReady) {
      ref_error_ = state == SharedReference::kFailed ? std::string(shared_->error) : "the reference is not ready";
      if (ref_error_.empty()) ref_error_ = "unknown error";
      return;
    }
    const unsigned char* p = shared_->data();
    for (const te::Tensor& t : outputs_of(task_.compute())) {
      auto a = runtime::NDArray::empty(const_shape(t), t.dtype());
      std::memcpy(a.raw_data(), p, a.nbytes());
      p += a.nbytes();
      ref_.push_back(a);
    }
  }

  /// "" when `got` matches the reference outputs, else the first mismatch.
  std::string check(const std::vector<runtime::NDArray>& arrays) {
    const auto& want = reference();
    if (!ref_error_.empty()) return "";  // reported by the caller
    size_t out_i = 0;
    for (size_t i = 0; i < built_->args.size(); ++i) {
      if (is_input(built_->args[i])) continue;
      LOOM_ICHECK(out_i < want.size());
      const runtime::NDArray& got = arrays[i];
      const runtime::NDArray& ref = want[out_i++];
      if (got.numel() != ref.numel())
        return fmt::format("output '{}' has {} elements, the reference {}", built_->args[i].name(), got.numel(),
                           ref.numel());
      const bool exact = !got.dtype().is_float();
      for (int64_t j = 0; j < got.numel(); ++j) {
        double g = got.get(j), w = ref.get(j);
        bool ok = exact ? g == w : std::isnan(w) ? std::isnan(g) : std::abs(g - w) <= opt_.atol + opt_.rtol * std::abs(w);
        if (!ok)
          return fmt::format("output '{}' element {} is {}, expected {}", built_->args[i].name(), j, g, w);
      }
    }
    return "";
  }

  void flush_cache() {
    constexpr size_t kFlushBytes = size_t(64) << 20;
    if (flush_.empty()) flush_.resize(kFlushBytes);
    ++flush_round_;
    std::memset(flush_.data(), flush_round_ & 0xff, flush_.size());
    volatile char sink = flush_[flush_round_ % flush_.size()];
    (void)sink;
  }

  /// Runs f `number` times, run i on argument set i modulo their number.
  double time_runs(const runtime::PackedFunc& f, const std::vector<std::vector<DLTensor*>>& sets, int64_t number) {
    auto t0 = Clock::now();
    for (int64_t i = 0; i < number; ++i) f.call(sets[size_t(i) % sets.size()]);
    return seconds_since(t0);
  }

  /// `arrays` and, with rotate_inputs, copies of it whose inputs are copies (kept in `keep`).
  std::vector<std::vector<DLTensor*>> argument_sets(const std::vector<runtime::NDArray>& arrays,
                                                    std::vector<runtime::NDArray>& keep) {
    std::vector<std::vector<DLTensor*>> sets{dl(arrays)};
    if (!opt_.rotate_inputs) return sets;
    constexpr size_t kRotateBytes = size_t(64) << 20;
    size_t input_bytes = 0;
    for (size_t i = 0; i < arrays.size(); ++i)
      if (is_input(built_->args[i])) input_bytes += arrays[i].nbytes();
    const size_t copies = std::clamp<size_t>(kRotateBytes / std::max<size_t>(input_bytes, 1), 1, 64);
    for (size_t c = 1; c < copies; ++c) {
      std::vector<runtime::NDArray> set = arrays;
      for (size_t i = 0; i < set.size(); ++i) {
        if (!is_input(built_->args[i])) continue;
        set[i] = runtime::NDArray::empty(arrays[i].shape(), arrays[i].dtype());
        std::memcpy(set[i].raw_data(), arrays[i].raw_data(), arrays[i].nbytes());
        keep.push_back(set[i]);
      }
      sets.push_back(dl(set));
    }
    return sets;
  }

  nlohmann::json run_built() {
    std::vector<runtime::NDArray> arrays = make_arrays(built_->args);
    std::vector<DLTensor*> args = dl(arrays);
    built_->func.call(args);  // warm-up; its outputs are checked
    if (opt_.check_correctness) {
      std::string mismatch = check(arrays);
      if (!ref_error_.empty()) return reply(ErrorCode::kUnknown, "computing the reference failed: " + ref_error_);
      if (!mismatch.empty()) return reply(ErrorCode::kWrongAnswer, mismatch);
    }
    std::vector<runtime::NDArray> copies;
    const std::vector<std::vector<DLTensor*>> sets = argument_sets(arrays, copies);
    // Raise `number` until one repeat lasts min_repeat_ms.
    int64_t number = std::max(1, opt_.number);
    double min_s = opt_.min_repeat_ms / 1000.0;
    double t = time_runs(built_->func, sets, number);
    while (t < min_s && number < (int64_t(1) << 30)) {
      double scale = std::min(100.0, min_s / std::max(t, 1e-7) * 1.1);
      number = std::max(number + 1, int64_t(std::ceil(number * scale)));
      t = time_runs(built_->func, sets, number);
    }
    nlohmann::json costs = nlohmann::json::array();
    for (int r = 0; r < std::max(1, opt_.repeat); ++r) {
      if (opt_.flush_cache) flush_cache();
      costs.push_back(time_runs(built_->func, sets, number) / double(number));
    }
    nlohmann::json out = reply(ErrorCode::kNoError, "");
    out["costs"] = costs;
    out["number"] = number;
    return out;
  }

  /// Overwrites a 64 MiB device buffer, more than the L2 cache of current GPUs.
  void flush_device_cache() {
    constexpr int64_t kFlushFloats = int64_t(16) << 20;
    if (!flush_dev_.defined()) {
      flush_host_ = runtime::NDArray::empty({kFlushFloats}, DataType::Float(32));
      std::memset(flush_host_.raw_data(), 0, flush_host_.nbytes());
      flush_dev_ = runtime::NDArray::empty({kFlushFloats}, DataType::Float(32), DLDevice{kDLCUDA, 0});
    }
    flush_dev_.copy_from(flush_host_);
  }

  /// run_built for CUDA: device copies of the arguments, event timing; `number` is raised
  /// (to at most 2^24) until one repeat lasts min_repeat_ms.
  nlohmann::json run_built_cuda() {
    runtime::cuda_require("measuring a CUDA candidate");
    std::vector<runtime::NDArray> host = make_arrays(built_->args);
    std::vector<runtime::NDArray> dev;
    for (const runtime::NDArray& h : host) {
      dev.push_back(runtime::NDArray::empty(h.shape(), h.dtype(), DLDevice{kDLCUDA, 0}));
      dev.back().copy_from(h);
    }
    std::vector<DLTensor*> args = dl(dev);
    built_->func.call(args);  // warm-up; its outputs are checked
    runtime::cuda_synchronize();
    if (opt_.check_correctness) {
      for (size_t i = 0; i < host.size(); ++i)
        if (!is_input(built_->args[i])) host[i].copy_from(dev[i]);
      std::string mismatch = check(host);
      if (!ref_error_.empty()) return reply(ErrorCode::kUnknown, "computing the reference failed: " + ref_error_);
      if (!mismatch.empty()) return reply(ErrorCode::kWrongAnswer, mismatch);
    }
    auto f = [&] { built_->func.call(args); };
    int number = std::max(1, opt_.number);
    const double min_s = opt_.min_repeat_ms / 1000.0;
    double t = runtime::cuda_time(f, number, 1)[0] * number;
    while (t < min_s && number < (1 << 24)) {
      double scale = std::min(100.0, min_s / std::max(t, 1e-7) * 1.1);
      number = int(std::min<double>(1 << 24, std::max(number + 1.0, std::ceil(number * scale))));
      t = runtime::cuda_time(f, number, 1)[0] * number;
    }
    std::vector<double> per_run;
    if (opt_.flush_cache) {
      for (int r = 0; r < std::max(1, opt_.repeat); ++r) {
        flush_device_cache();
        per_run.push_back(runtime::cuda_time(f, number, 1)[0]);
      }
    } else {
      per_run = runtime::cuda_time(f, number, std::max(1, opt_.repeat));
    }
    nlohmann::json out = reply(ErrorCode::kNoError, "");
    out["costs"] = per_run;
    out["number"] = number;
    return out;
  }

  const Task& task_;
  MeasureOptions opt_;
  const SharedReference* shared_;
  bool cuda_;
  runtime::NDArray flush_host_, flush_dev_;
  std::optional<Built> built_;
  std::map<size_t, runtime::NDArray> inputs_;
  bool ref_done_ = false;
  std::vector<runtime::NDArray> ref_;
  std::string ref_error_;
  std::vector<char> flush_;
  size_t flush_round_ = 0;
};

int64_t default_memory_limit() {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  int64_t half = pages > 0 && page > 0 ? int64_t(pages) * page / 2 : int64_t(8) << 30;
  return std::min<int64_t>(half, int64_t(8) << 30);
}

void set_memory_limit(const MeasureOptions& opt) {
  int64_t limit = opt.worker_memory_bytes > 0 ? opt.worker_memory_bytes : default_memory_limit();
  rlimit rl{rlim_t(limit), rlim_t(limit)};
  setrlimit(RLIMIT_AS, &rl);
}

}  // namespace

bool send_all(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += size_t(n);
  }
  return true;
}

size_t reference_bytes(const Task& task) {
  size_t n = 0;
  for (const te::Tensor& t : outputs_of(task.compute())) {
    size_t numel = 1;
    for (int64_t d : const_shape(t)) numel *= size_t(d);
    n += numel * size_t((t.dtype().bits() * t.dtype().lanes() + 7) / 8);
  }
  return n;
}

void reference_main(const Task& task, const MeasureOptions& opt, SharedReference* ref) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() == 1) _exit(0);
  set_memory_limit(opt);
  try {
    Worker w(task, opt);
    std::vector<runtime::NDArray> outs = task.target().is_cuda() ? w.host_reference() : w.cpu_reference();
    size_t total = 0;
    for (const runtime::NDArray& a : outs) total += a.nbytes();
    LOOM_ICHECK(total == reference_bytes(task));
    unsigned char* p = ref->data();
    for (const runtime::NDArray& a : outs) {
      std::memcpy(p, a.raw_data(), a.nbytes());
      p += a.nbytes();
    }
    ref->state.store(SharedReference::kReady, std::memory_order_release);
  } catch (const std::exception& e) {
    std::snprintf(ref->error, sizeof(ref->error), "%s", e.what());
    ref->state.store(SharedReference::kFailed, std::memory_order_release);
  }
  _exit(0);
}

std::string cuda_probe() {
  try {
    if (!runtime::cuda_available()) return runtime::cuda_unavailable_reason();
    auto h = runtime::NDArray::from_vector({1, 2, 3, 4}, {4}, DataType::Float(32));
    auto d = runtime::NDArray::empty({4}, DataType::Float(32), DLDevice{kDLCUDA, 0});
    auto back = runtime::NDArray::empty({4}, DataType::Float(32));
    d.copy_from(h);
    back.copy_from(d);
    for (int64_t i = 0; i < 4; ++i)
      if (back.get(i) != h.get(i)) return "a host-device-host copy changed the data";
    return "";
  } catch (const std::exception& e) {
    return e.what();
  }
}

void worker_main(int fd, const Task& task, const MeasureOptions& opt, const SharedReference* ref) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() == 1) _exit(0);
  // The CUDA driver reserves far more address space than any sane limit; CUDA workers run
  // without one (their host memory is the task's arrays, their device memory the GPU's).
  if (!task.target().is_cuda()) set_memory_limit(opt);

  Worker w(task, opt, ref);
  std::string buf;
  char chunk[4096];
  for (;;) {
    size_t nl;
    while ((nl = buf.find('\n')) == std::string::npos) {
      ssize_t n = ::read(fd, chunk, sizeof(chunk));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) _exit(0);
      buf.append(chunk, size_t(n));
    }
    std::string line = buf.substr(0, nl);
    buf.erase(0, nl + 1);
    nlohmann::json out;
    try {
      auto req = nlohmann::json::parse(line);
      std::string op = req.at("op");
      auto t0 = Clock::now();
      if (op == "build") out = w.build(req.at("index").get<int64_t>());
      else if (op == "run") out = w.run();
      else out = reply(ErrorCode::kUnknown, "unknown request '" + op + "'");
      out["seconds"] = seconds_since(t0);
    } catch (const std::exception& e) {
      out = reply(ErrorCode::kUnknown, std::string("worker: ") + e.what());
    }
    if (!send_all(fd, out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n")) _exit(0);
  }
}

}  // namespace loom::tuner::detail
