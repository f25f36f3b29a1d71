// Measurer: the parent side of the worker protocol (see measure_worker.cc for the child).
#include "loom/tuner/measure.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "measure_worker.h"

namespace loom::tuner {
namespace {

using records::ErrorCode;
using Clock = std::chrono::steady_clock;

double unix_time() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string describe_exit(int status) {
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    const char* abbrev = sigabbrev_np(sig);
    return fmt::format("worker killed by signal SIG{} ({})", abbrev ? abbrev : std::to_string(sig).c_str(),
                       strsignal(sig));
  }
  if (WIFEXITED(status)) return fmt::format("worker exited with status {}", WEXITSTATUS(status));
  return "worker ended";
}

struct WorkerProc {
  pid_t pid = -1;
  int fd = -1;
  std::string buf;
};

/// What waiting for one reply gave.
struct Reply {
  enum Kind { kLine, kDied, kTimeout } kind;
  std::string text;  // the line, or how the worker died
};

/// Waits up to `limit_s` for `pid` to end; kills it past that. Returns the wait status, or
/// nullopt on timeout.
std::optional<int> wait_with_timeout(pid_t pid, double limit_s) {
  auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(limit_s));
  for (;;) {
    int status = 0;
    pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return status;
    if (r < 0 && errno != EINTR) return 0;
    if (Clock::now() >= deadline) {
      ::kill(pid, SIGKILL);
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      return std::nullopt;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace

std::string cuda_worker_unavailable_reason() {
  static std::mutex mu;
  static std::optional<std::string> cached;
  std::lock_guard<std::mutex> lock(mu);
  if (cached) return *cached;
  int p[2];
  LOOM_CHECK(::pipe2(p, O_CLOEXEC) == 0, "measure: pipe failed: {}", std::strerror(errno));
  std::fflush(nullptr);
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(p[0]);
    ::close(p[1]);
    fail("measure: fork failed: {}", std::strerror(errno));
  }
  if (pid == 0) {
    ::close(p[0]);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    std::string why = detail::cuda_probe();
    size_t done = 0;
    while (done < why.size()) {
      ssize_t n = ::write(p[1], why.data() + done, why.size() - done);
      if (n <= 0) break;
      done += size_t(n);
    }
    _exit(0);
  }
  ::close(p[1]);
  std::optional<int> status = wait_with_timeout(pid, 120);
  std::string why;
  char chunk[4096];
  ssize_t n;
  while ((n = ::read(p[0], chunk, sizeof(chunk))) > 0) why.append(chunk, size_t(n));
  ::close(p[0]);
  if (!status) why = "probing the driver in a child process took longer than 120 s";
  else if (!WIFEXITED(*status) || WEXITSTATUS(*status) != 0) why = describe_exit(*status) + " while probing the driver";
  cached = why;
  return why;
}

namespace {
constexpr const char* kNoGpu = "no CUDA driver/GPU: ";
}  // namespace

struct Measurer::Impl {
  const Task* task;
  const MeasureOptions* opt;
  std::vector<WorkerProc> workers;
  // The reference of CUDA tasks, and the compiled one of large CPU tasks, computed by one process.
  detail::SharedReference* ref = nullptr;
  size_t ref_map_bytes = 0;
  pid_t ref_pid = -1;
  Clock::time_point ref_started;

  /// Maps the shared reference and forks the process that computes it.
  void start_reference() {
    ref_map_bytes = detail::SharedReference::kDataOffset + detail::reference_bytes(*task);
    void* p = ::mmap(nullptr, ref_map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    LOOM_CHECK(p != MAP_FAILED, "measure: cannot map {} bytes for the reference outputs: {}", ref_map_bytes,
               std::strerror(errno));
    ref = new (p) detail::SharedReference{};
    ref->state.store(detail::SharedReference::kPending);
    std::fflush(nullptr);
    std::cout.flush();
    std::cerr.flush();
    pid_t pid = ::fork();
    LOOM_CHECK(pid >= 0, "measure: fork failed: {}", std::strerror(errno));
    if (pid == 0) detail::reference_main(*task, *opt, ref);
    ref_pid = pid;
    ref_started = Clock::now();
  }

  /// Limit for computing the reference: the 4096³ matmul reference takes seconds on a
  /// many-core host, but a slow or loaded one may need minutes.
  double reference_limit_s() const { return std::max(600.0, 30 * opt->timeout_s); }

  /// Waits for the reference process (once); a failure is recorded in the shared state.
  void await_reference() {
    if (ref_pid <= 0) return;
    double left = reference_limit_s() - std::chrono::duration<double>(Clock::now() - ref_started).count();
    std::optional<int> status = wait_with_timeout(ref_pid, std::max(0.0, left));
    ref_pid = -1;
    std::string why;
    if (!status) why = fmt::format("took longer than {} s", reference_limit_s());
    else if (ref->state.load() == detail::SharedReference::kPending) why = "ended (" + describe_exit(*status) + ")";
    if (!why.empty()) {
      std::snprintf(ref->error, sizeof(ref->error), "the reference process %s", why.c_str());
      ref->state.store(detail::SharedReference::kFailed);
    }
  }

  void release_reference() {
    if (ref_pid > 0) {
      ::kill(ref_pid, SIGKILL);
      int status;
      while (::waitpid(ref_pid, &status, 0) < 0 && errno == EINTR) {
      }
      ref_pid = -1;
    }
    if (ref) ::munmap(ref, ref_map_bytes);
    ref = nullptr;
  }

  void spawn(size_t i) {
    int sv[2];
    LOOM_CHECK(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0, "measure: socketpair failed: {}",
               std::strerror(errno));
    std::fflush(nullptr);
    std::cout.flush();
    std::cerr.flush();
    pid_t pid = ::fork();
    LOOM_CHECK(pid >= 0, "measure: fork failed: {}", std::strerror(errno));
    if (pid == 0) {
      ::close(sv[0]);
      for (const WorkerProc& w : workers) {
        if (w.fd >= 0) ::close(w.fd);
      }
      detail::worker_main(sv[1], *task, *opt, ref);
    }
    ::close(sv[1]);
    workers[i] = WorkerProc{pid, sv[0], ""};
  }

  /// Kills worker i (if alive) and reaps it; returns how it ended.
  std::string reap(size_t i, bool kill_first) {
    WorkerProc& w = workers[i];
    std::string how = "worker ended";
    if (w.pid > 0) {
      if (kill_first) ::kill(w.pid, SIGKILL);
      int status = 0;
      while (::waitpid(w.pid, &status, 0) < 0 && errno == EINTR) {
      }
      how = describe_exit(status);
    }
    if (w.fd >= 0) ::close(w.fd);
    w = WorkerProc{};
    return how;
  }

  void replace(size_t i, bool kill_first) {
    reap(i, kill_first);
    spawn(i);
  }

  bool send(size_t i, const nlohmann::json& req) { return detail::send_all(workers[i].fd, req.dump() + "\n"); }

  /// Waits for one reply line from each worker in `ids`, each until its own deadline.
  std::vector<Reply> wait_all(const std::vector<size_t>& ids, const std::vector<Clock::time_point>& deadlines) {
    std::vector<Reply> out(ids.size(), Reply{Reply::kTimeout, ""});
    std::vector<bool> pending(ids.size(), true);
    size_t left = ids.size();
    auto take_line = [&](size_t k) {
      WorkerProc& w = workers[ids[k]];
      size_t nl = w.buf.find('\n');
      if (nl == std::string::npos) return false;
      out[k] = Reply{Reply::kLine, w.buf.substr(0, nl)};
      w.buf.erase(0, nl + 1);
      pending[k] = false;
      --left;
      return true;
    };
    for (size_t k = 0; k < ids.size(); ++k) take_line(k);
    while (left > 0) {
      auto now = Clock::now();
      std::vector<pollfd> fds;
      std::vector<size_t> which;
      int timeout_ms = -1;
      for (size_t k = 0; k < ids.size(); ++k) {
        if (!pending[k]) continue;
        if (now >= deadlines[k]) {
          out[k] = Reply{Reply::kTimeout, ""};
          pending[k] = false;
          --left;
          continue;
        }
        int ms = int(std::chrono::duration_cast<std::chrono::milliseconds>(deadlines[k] - now).count()) + 1;
        timeout_ms = timeout_ms < 0 ? ms : std::min(timeout_ms, ms);
        fds.push_back(pollfd{workers[ids[k]].fd, POLLIN, 0});
        which.push_back(k);
      }
      if (fds.empty()) break;
      int r = ::poll(fds.data(), fds.size(), timeout_ms);
      if (r < 0 && errno == EINTR) continue;
      LOOM_CHECK(r >= 0, "measure: poll failed: {}", std::strerror(errno));
      for (size_t f = 0; f < fds.size(); ++f) {
        if (!(fds[f].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        size_t k = which[f];
        char chunk[65536];
        ssize_t n = ::read(fds[f].fd, chunk, sizeof(chunk));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
          out[k] = Reply{Reply::kDied, ""};
          pending[k] = false;
          --left;
          continue;
        }
        workers[ids[k]].buf.append(chunk, size_t(n));
        take_line(k);
      }
    }
    return out;
  }
};

int measure_workers(const MeasureOptions& opt) {
  return opt.n_parallel > 0 ? opt.n_parallel : int(std::max(1u, std::thread::hardware_concurrency()));
}

Measurer::Measurer(Task task, MeasureOptions opt) : task_(std::move(task)), opt_(opt), impl_(new Impl) {
  LOOM_CHECK(opt_.repeat >= 1, "MeasureOptions: repeat must be at least 1, got {}", opt_.repeat);
  LOOM_CHECK(opt_.timeout_s > 0, "MeasureOptions: timeout_s must be positive, got {}", opt_.timeout_s);
  int n = measure_workers(opt_);
  impl_->task = &task_;
  impl_->opt = &opt_;
  if (task_.target().is_cuda()) {
    // Probed in a child: CUDA does not survive fork(), so this process must not initialize it.
    std::string why = cuda_worker_unavailable_reason();
    LOOM_CHECK(why.empty(), "{}{} (measuring {} for target '{}' needs a GPU in the forked workers; a process "
               "that used CUDA before creating the Measurer cannot give them one)",
               kNoGpu, why, task_.key(), task_.target().str());
    if (opt_.check_correctness) impl_->start_reference();
  } else if (opt_.check_correctness && task_.flop() > opt_.evaluate_flop_limit) {
    // A compiled reference (the default config; for an auto-scheduled task the pattern
    // schedule, which takes seconds on a 1024³ matmul) is computed once, by a process with
    // the reference's own time limit, rather than by each worker inside a candidate's run
    // limit: a worker killed for its timeout would lose it, and its successor start again.
    impl_->start_reference();
  }
  impl_->workers.resize(size_t(n));
  for (size_t i = 0; i < impl_->workers.size(); ++i) impl_->spawn(i);
}

Measurer::~Measurer() {
  impl_->release_reference();
  for (WorkerProc& w : impl_->workers) {
    if (w.fd >= 0) ::shutdown(w.fd, SHUT_RDWR);
  }
  for (size_t i = 0; i < impl_->workers.size(); ++i) {
    WorkerProc& w = impl_->workers[i];
    if (w.pid <= 0) continue;
    // Workers exit on EOF; one busy with a long run is killed after a grace period.
    bool gone = false;
    for (int t = 0; t < 100 && !gone; ++t) {
      int status;
      if (::waitpid(w.pid, &status, WNOHANG) == w.pid) gone = true;
      else std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (gone) {
      ::close(w.fd);
      w = WorkerProc{};
    } else {
      impl_->reap(i, true);
    }
  }
}

int Measurer::num_workers() const { return int(impl_->workers.size()); }

std::vector<records::MeasureResult> Measurer::measure(const std::vector<int64_t>& indices) {
  std::vector<ConfigEntity> configs;
  for (int64_t i : indices) configs.push_back(task_.space().get(i));
  return measure(configs);
}

std::vector<records::MeasureResult> Measurer::measure(const std::vector<ConfigEntity>& configs) {
  return process(configs, true);
}

std::vector<records::MeasureResult> Measurer::build(const std::vector<int64_t>& indices) {
  std::vector<ConfigEntity> configs;
  for (int64_t i : indices) configs.push_back(task_.space().get(i));
  return process(configs, false);
}

std::vector<records::MeasureResult> Measurer::process(const std::vector<ConfigEntity>& configs, bool run) {
  std::vector<records::MeasureResult> results(configs.size());
  const size_t nw = impl_->workers.size();
  auto timeout = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(opt_.timeout_s));
  auto fail_result = [](records::MeasureResult& r, ErrorCode c, std::string msg) {
    r.error = c;
    r.error_msg = std::move(msg);
    r.costs.clear();
  };
  auto parse = [](const std::string& line, records::MeasureResult& r) {
    try {
      auto j = nlohmann::json::parse(line);
      r.error = ErrorCode(j.at("error").get<int>());
      r.error_msg = j.value("msg", "");
      r.costs = j.at("costs").get<std::vector<double>>();
    } catch (const std::exception& e) {
      r.error = ErrorCode::kUnknown;
      r.error_msg = std::string("malformed worker reply: ") + e.what();
      r.costs.clear();
    }
  };

  for (size_t start = 0; start < configs.size(); start += nw) {
    size_t m = std::min(nw, configs.size() - start);
    std::vector<Clock::time_point> t0(m);
    std::vector<size_t> ids;
    std::vector<Clock::time_point> deadlines;
    std::vector<bool> built(m, false);
    // Build phase: one candidate per worker, concurrently.
    for (size_t j = 0; j < m; ++j) {
      const ConfigEntity& e = configs[start + j];
      t0[j] = Clock::now();
      if (!impl_->send(j, {{"op", "build"}, {"index", e.index()}})) {
        impl_->replace(j, true);
        t0[j] = Clock::now();
        if (!impl_->send(j, {{"op", "build"}, {"index", e.index()}})) {
          fail_result(results[start + j], ErrorCode::kUnknown, "cannot reach a measuring worker");
          continue;
        }
      }
      ids.push_back(j);
      deadlines.push_back(t0[j] + timeout);
    }
    std::vector<Reply> replies = impl_->wait_all(ids, deadlines);
    for (size_t k = 0; k < ids.size(); ++k) {
      size_t j = ids[k];
      records::MeasureResult& r = results[start + j];
      switch (replies[k].kind) {
        case Reply::kLine:
          parse(replies[k].text, r);
          built[j] = r.error == ErrorCode::kNoError;
          break;
        case Reply::kTimeout:
          impl_->replace(j, true);
          fail_result(r, ErrorCode::kBuildTimeout, fmt::format("building took longer than {} s", opt_.timeout_s));
          break;
        case Reply::kDied: {
          std::string how = impl_->reap(j, false);
          impl_->spawn(j);
          fail_result(r, ErrorCode::kCompile, how + " while building");
          break;
        }
      }
      r.all_cost = std::chrono::duration<double>(Clock::now() - t0[j]).count();
    }
    // Run phase: one candidate at a time.
    if (run) impl_->await_reference();
    for (size_t j = 0; j < m; ++j) {
      if (!built[j] || !run) {
        results[start + j].timestamp = unix_time();
        continue;
      }
      records::MeasureResult& r = results[start + j];
      auto t1 = Clock::now();
      Reply reply{Reply::kDied, ""};
      if (impl_->send(j, {{"op", "run"}})) reply = impl_->wait_all({j}, {t1 + timeout})[0];
      switch (reply.kind) {
        case Reply::kLine: parse(reply.text, r); break;
        case Reply::kTimeout:
          impl_->replace(j, true);
          fail_result(r, ErrorCode::kRunTimeout, fmt::format("running took longer than {} s", opt_.timeout_s));
          break;
        case Reply::kDied: {
          std::string how = impl_->reap(j, false);
          impl_->spawn(j);
          fail_result(r, ErrorCode::kRuntime, how + " while running");
          break;
        }
      }
      r.all_cost += std::chrono::duration<double>(Clock::now() - t1).count();
      r.timestamp = unix_time();
    }
  }
  return results;
}

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof(buf) - 1) != 0) return "";
  return buf;
}

std::string host_cpu_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      size_t colon = line.find(':');
      if (colon == std::string::npos) continue;
      size_t b = line.find_first_not_of(" \t", colon + 1);
      return b == std::string::npos ? "" : line.substr(b);
    }
  }
  return "";
}

}  // namespace loom::tuner
