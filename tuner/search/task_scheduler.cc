// The task scheduler: rounds of trials to the tasks of a network, by the gradient of the
// estimated end-to-end latency (Ansor's task scheduler).
#include "loom/tuner/task_scheduler.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <set>

#include "loom/tuner/features.h"

namespace loom::tuner {

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string format_seconds(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  if (s < 60) return fmt::format("{:.1f} s", s);
  if (s < 3600) return fmt::format("{}m{:02d}s", int(s) / 60, int(s) % 60);
  return fmt::format("{}h{:02d}m", int(s) / 3600, (int(s) % 3600) / 60);
}

std::string format_ms(double s) { return std::isfinite(s) ? fmt::format("{:.3f}", s * 1e3) : "-"; }

/// splitmix64: a small deterministic generator for breaking ties.
uint64_t next_random(uint64_t* state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

std::string to_string(SchedulerStrategy s) { return s == SchedulerStrategy::kGradient ? "gradient" : "round-robin"; }

SchedulerStrategy parse_strategy(const std::string& name) {
  if (name == "gradient") return SchedulerStrategy::kGradient;
  if (name == "round-robin") return SchedulerStrategy::kRoundRobin;
  fail("unknown task scheduling strategy '{}' (expected gradient or round-robin)", name);
}

TaskScheduler::TaskScheduler(std::vector<WeightedTask> tasks, TaskSchedulerOptions opt)
    : tasks_(std::move(tasks)), opt_(std::move(opt)) {
  LOOM_CHECK(!tasks_.empty(), "TaskScheduler: no tasks to tune");
  LOOM_CHECK(opt_.n_trial >= 0, "TaskScheduler: n_trial must not be negative, got {}", opt_.n_trial);
  LOOM_CHECK(opt_.round_trials >= 0, "TaskScheduler: round_trials must not be negative, got {}", opt_.round_trials);
  LOOM_CHECK(opt_.alpha >= 0 && opt_.alpha <= 1, "TaskScheduler: alpha must be in [0, 1], got {}", opt_.alpha);
  LOOM_CHECK(opt_.beta >= 1, "TaskScheduler: beta must be at least 1, got {}", opt_.beta);
  LOOM_CHECK(opt_.backward_window >= 1, "TaskScheduler: backward_window must be at least 1, got {}",
             opt_.backward_window);
  LOOM_CHECK(opt_.table_every >= 1, "TaskScheduler: table_every must be at least 1, got {}", opt_.table_every);
  std::set<std::string> keys;
  std::map<std::string, int> groups;  // template → group id
  for (const WeightedTask& t : tasks_) {
    LOOM_CHECK(t.weight >= 1, "TaskScheduler: task {} has weight {}; a weight counts kernels, at least 1",
               t.task.key(), t.weight);
    LOOM_CHECK(keys.insert(t.task.key() + "\n" + t.task.target().str()).second,
               "TaskScheduler: task {} on {} is given twice (give it once, with the sum of the weights)",
               t.task.key(), t.task.target().str());
    TaskProgress p;
    p.key = t.task.key();
    p.weight = t.weight;
    p.flop = t.task.flop();
    p.group = groups.emplace(t.task.workload().op, int(groups.size())).first->second;
    state_.push_back(std::move(p));
  }
  const int n = int(tasks_.size());
  round_trials_ = opt_.round_trials > 0 ? opt_.round_trials : std::clamp(opt_.n_trial / n, 1, 8);
  rng_state_ = opt_.tune.seed * 0x2545F4914F6CDD1Dull + 1;
}

TaskScheduler::~TaskScheduler() = default;

double TaskScheduler::elapsed() const { return now_s() - start_; }

double TaskScheduler::estimated_latency() const {
  double sum = 0;
  for (const TaskProgress& t : state_) sum += double(t.weight) * t.best_s;
  return sum;
}

void TaskScheduler::begin_tasks() {
  // The tasks of one template share a cost model's rows; they model one feature set, the one
  // chosen for the largest space among them.
  std::map<std::string, std::shared_ptr<SharedTrainingSet>> shared;
  if (opt_.tuner == "xgb" && opt_.share_model) {
    std::map<std::string, int64_t> largest;
    for (const WeightedTask& t : tasks_) {
      int64_t& l = largest[t.task.workload().op];
      l = std::max(l, t.task.space().size());
    }
    for (const auto& [op, size] : largest)
      shared[op] = std::make_shared<SharedTrainingSet>(resolve_feature_set(opt_.xgb.features, size));
  }
  if (opt_.tune.resume && !opt_.tune.log_file.empty() && std::filesystem::exists(opt_.tune.log_file) &&
      opt_.progress)
    records::read_log(opt_.tune.log_file, opt_.progress);  // reports skipped lines once
  for (size_t i = 0; i < tasks_.size(); ++i) {
    const Task& task = tasks_[i].task;
    std::unique_ptr<Tuner> t;
    if (opt_.tuner == "xgb") {
      XGBTunerOptions xo = opt_.xgb;
      if (auto it = shared.find(task.workload().op); it != shared.end()) xo.shared = it->second;
      t = std::make_unique<XGBTuner>(task, xo);
    } else {
      t = make_tuner(opt_.tuner, task);
    }
    TuneOptions to = opt_.tune;
    to.n_trial = 0;
    to.progress = nullptr;
    to.seed = opt_.tune.seed + uint64_t(i);
    if (opt_.measure_fn) {
      auto fn = opt_.measure_fn;
      to.measure_fn = [fn, i](const std::vector<int64_t>& configs) { return fn(i, configs); };
    }
    t->begin(to);
    TaskProgress& p = state_[i];
    const TuneSummary& s = t->summary();
    p.resumed = s.resumed;
    if (s.best) p.best_s = s.best->result.mean_cost();
    if (p.resumed > 0) {
      p.rounds = (p.resumed + round_trials_ - 1) / round_trials_;
      p.best_history.push_back(p.best_s);
    }
    p.done = t->done();
    tuners_.push_back(std::move(t));
  }
}

int TaskScheduler::run_round(size_t i, int n, const char* phase) {
  TaskProgress& p = state_[i];
  Tuner& t = *tuners_[i];
  const double before = p.best_s;
  const int measured = t.step(n);
  const TuneSummary& s = t.summary();
  p.trials = s.trials;
  p.errors = s.errors;
  if (s.best) p.best_s = s.best->result.mean_cost();
  ++p.rounds;
  p.best_history.push_back(p.best_s);
  trials_ += measured;
  ++rounds_;
  p.done = t.done() || measured == 0;
  if (!std::isfinite(p.best_s) && p.rounds >= 2 && !p.done) {
    // Two rounds and not one config built and ran: the task is left as it is.
    p.done = true;
    if (opt_.progress)
      *opt_.progress << fmt::format("[scheduler] task {} {}: no successful trial in {} rounds ({} errors); it "
                                    "gets no more trials\n",
                                    i, p.key, p.rounds, p.errors);
  }
  leave_group_if_dissimilar(i);
  write_latency("round", long(i), phase);
  if (opt_.progress) {
    const double est = estimated_latency();
    const double searched = now_s() - search_start_;
    const double eta = trials_ > 0 ? searched / trials_ * double(std::max(0, opt_.n_trial - trials_)) : NAN;
    *opt_.progress << fmt::format(
        "[scheduler] round {} ({}): task {} {}: {} trials ({} in all), best {} -> {} ms; estimate {} ms; {}/{} "
        "trials, {}, search ETA {}{}\n",
        rounds_, phase, i, p.key, measured, p.trials + p.resumed, format_ms(before), format_ms(p.best_s),
        format_ms(est), trials_, opt_.n_trial, format_seconds(elapsed()), format_seconds(eta),
        opt_.tune.confirm_top > 0 ? " (then the confirm step)" : "");
  }
  return measured;
}

double TaskScheduler::gradient(size_t i) const {
  const TaskProgress& t = state_[i];
  if (t.done) return 0;
  if (!std::isfinite(t.best_s)) return -std::numeric_limits<double>::infinity();  // measure it first
  // Backward: how much the best improved per round over the last rounds.
  double backward = 0;
  const std::vector<double>& h = t.best_history;
  const size_t w = size_t(opt_.backward_window);
  if (h.size() > w && std::isfinite(h[h.size() - 1 - w]))
    backward = (h.back() - h[h.size() - 1 - w]) / double(w);
  // Forward, optimistic: the next round improves as much as the average round did so far
  // (best / rounds), and no further than β times what the best-performing task of the same
  // template would need for this task's flops.
  double next = t.best_s - t.best_s / double(std::max(1, t.rounds));
  if (t.group >= 0 && t.flop > 0) {
    double best_throughput = 0;
    int members = 0;
    for (const TaskProgress& o : state_) {
      if (o.group != t.group) continue;
      ++members;
      if (std::isfinite(o.best_s) && o.best_s > 0 && o.flop > 0)
        best_throughput = std::max(best_throughput, o.flop / o.best_s);
    }
    if (members > 1 && best_throughput > 0) next = std::min(next, opt_.beta * t.flop / best_throughput);
  }
  const double forward = next - t.best_s;
  return double(t.weight) * (opt_.alpha * backward + (1 - opt_.alpha) * forward);
}

size_t TaskScheduler::choose() {
  const size_t n = tasks_.size();
  std::vector<size_t> alive;
  for (size_t i = 0; i < n; ++i)
    if (!state_[i].done) alive.push_back(i);
  if (alive.empty()) return n;
  if (opt_.strategy == SchedulerStrategy::kRoundRobin) {
    // The alive task with the fewest rounds, the first of them on a tie: each in turn.
    return *std::min_element(alive.begin(), alive.end(),
                             [&](size_t a, size_t b) { return state_[a].rounds < state_[b].rounds; });
  }
  std::vector<double> g;
  for (size_t i : alive) g.push_back(gradient(i));
  const double lo = *std::min_element(g.begin(), g.end());
  std::vector<size_t> ties;
  for (size_t k = 0; k < alive.size(); ++k)
    if (g[k] == lo || (std::isfinite(lo) && std::abs(g[k] - lo) <= 1e-12 * std::abs(lo))) ties.push_back(alive[k]);
  return ties[next_random(&rng_state_) % ties.size()];
}

void TaskScheduler::leave_group_if_dissimilar(size_t i) {
  // A task tuned many more rounds than the rest of its group that still runs below 1/β of
  // the group's best throughput is not like them: its forward guess stops using theirs.
  TaskProgress& t = state_[i];
  if (t.group < 0 || !std::isfinite(t.best_s) || t.flop <= 0) return;
  double best_throughput = 0;
  int others_rounds = -1;
  for (size_t j = 0; j < state_.size(); ++j) {
    const TaskProgress& o = state_[j];
    if (o.group != t.group) continue;
    if (std::isfinite(o.best_s) && o.best_s > 0 && o.flop > 0)
      best_throughput = std::max(best_throughput, o.flop / o.best_s);
    if (j != i) others_rounds = std::max(others_rounds, o.rounds);
  }
  if (others_rounds < 0) return;
  if (t.flop / t.best_s < best_throughput / opt_.beta && t.rounds > 5 + others_rounds) t.group = -1;
}

void TaskScheduler::write_latency(const char* event, long task, const char* phase) {
  if (opt_.latency_file.empty()) return;
  nlohmann::ordered_json j;
  j["event"] = event;
  j["round"] = rounds_;
  j["elapsed_s"] = std::round(elapsed() * 1000) / 1000;
  j["trials"] = trials_;
  const double est = estimated_latency();
  j["estimated_ms"] = std::isfinite(est) ? nlohmann::ordered_json(est * 1e3) : nlohmann::ordered_json(nullptr);
  int measured = 0;
  for (const TaskProgress& t : state_) measured += std::isfinite(t.best_s);
  j["tasks_measured"] = measured;
  j["tasks"] = state_.size();
  if (task >= 0) {
    const TaskProgress& t = state_[size_t(task)];
    j["phase"] = phase;
    j["task"] = task;
    j["workload"] = t.key;
    j["task_trials"] = t.trials + t.resumed;
    j["task_best_ms"] = std::isfinite(t.best_s) ? nlohmann::ordered_json(t.best_s * 1e3) : nlohmann::ordered_json(nullptr);
  } else {
    j["n_trial"] = opt_.n_trial;
    j["round_trials"] = round_trials_;
    j["strategy"] = to_string(opt_.strategy);
    j["resume"] = opt_.tune.resume;
    j["unix_time"] = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  }
  std::ofstream f(opt_.latency_file, std::ios::app);
  LOOM_CHECK(f.good(), "TaskScheduler: cannot append to the latency file '{}'", opt_.latency_file);
  f << j.dump() << '\n';
  LOOM_CHECK(f.good(), "TaskScheduler: writing the latency file '{}' failed", opt_.latency_file);
}

std::string TaskScheduler::table() const {
  const double est = estimated_latency();
  bool any_resumed = false, any_confirmed = false;
  for (const TaskProgress& t : state_) any_resumed |= t.resumed > 0, any_confirmed |= t.confirmed > 0;
  std::string out = fmt::format("  {:>4}  {:>6}  {:>6}{}{}  {:>10}  {:>8}  {:>6}  {}\n", "task", "weight", "trials",
                                any_resumed ? "  resumed" : "", any_confirmed ? "  confirm" : "", "best (ms)",
                                "GFLOP/s", "share", "workload");
  for (size_t i = 0; i < state_.size(); ++i) {
    const TaskProgress& t = state_[i];
    const bool ok = std::isfinite(t.best_s) && t.best_s > 0;
    std::string share = ok && std::isfinite(est) && est > 0 ? fmt::format("{:.1f}%", 100 * t.weight * t.best_s / est) : "-";
    out += fmt::format("  {:>4}  {:>6}  {:>6}{}{}  {:>10}  {:>8}  {:>6}  {}{}\n", i, t.weight, t.trials,
                       any_resumed ? fmt::format("  {:>7}", t.resumed) : "",
                       any_confirmed ? fmt::format("  {:>7}", t.confirmed) : "", format_ms(t.best_s),
                       ok ? fmt::format("{:.2f}", t.flop / t.best_s / 1e9) : "-", share, t.key,
                       t.done ? " (done)" : "");
  }
  int measured = 0;
  for (const TaskProgress& t : state_) measured += std::isfinite(t.best_s);
  out += fmt::format("  estimated end-to-end latency (Σ weight × best): {} ms{}; trials {}/{}, {} rounds, {}\n",
                     format_ms(est),
                     measured == int(state_.size()) ? ""
                                                    : fmt::format(" ({} of {} tasks without a result)",
                                                                  state_.size() - size_t(measured), state_.size()),
                     trials_, opt_.n_trial, rounds_, format_seconds(elapsed()));
  return out;
}

SchedulerSummary TaskScheduler::run() {
  LOOM_CHECK(tuners_.empty(), "TaskScheduler::run: a scheduler runs once");
  start_ = now_s();
  begin_tasks();
  search_start_ = now_s();
  write_latency("start", -1, "");
  if (opt_.progress) {
    int resumed = 0;
    for (const TaskProgress& t : state_) resumed += t.resumed;
    *opt_.progress << fmt::format(
        "[scheduler] {} tasks, {} trials in rounds of {} ({} after a round-robin warm-up){}{}\n", tasks_.size(),
        opt_.n_trial, round_trials_, to_string(opt_.strategy),
        resumed ? fmt::format("; {} trials resumed from {}", resumed, opt_.tune.log_file) : "",
        opt_.tune.confirm_top > 0
            ? fmt::format("; then the confirm step measures the {} best configs of each task again, until each has {} "
                          "measurements",
                          opt_.tune.confirm_top, opt_.tune.confirm_measurements)
            : "");
  }
  // Warm-up: a round for every task that has none yet, so every task has a latency.
  for (size_t i = 0; i < tasks_.size() && trials_ < opt_.n_trial; ++i)
    if (state_[i].rounds == 0 && !state_[i].done) run_round(i, std::min(round_trials_, opt_.n_trial - trials_), "warm-up");
  if (opt_.progress) *opt_.progress << "[scheduler] after the warm-up:\n" << table();

  const char* phase = opt_.strategy == SchedulerStrategy::kGradient ? "gradient" : "round-robin";
  while (trials_ < opt_.n_trial) {
    size_t i = choose();
    if (i >= tasks_.size()) break;  // every task is done
    run_round(i, std::min(round_trials_, opt_.n_trial - trials_), phase);
    if (opt_.progress && rounds_ % opt_.table_every == 0) *opt_.progress << table();
  }

  // Each task's confirm step: its fastest configs measured again, announced with its size
  // and the time it takes at the search's pace (it can be a large part of the job).
  const double confirm_start = now_s();
  const double search_s = confirm_start - search_start_;
  const double per_trial = trials_ > 0 ? search_s / trials_ : NAN;
  int planned = 0;
  for (const auto& t : tuners_) planned += t->planned_confirmations();
  if (opt_.progress) {
    *opt_.progress << fmt::format("[scheduler] search done: {} trials in {}; ", trials_, format_seconds(search_s));
    if (planned > 0)
      *opt_.progress << fmt::format("confirming the {} best configs of each task: {} measurements, ~{}{}\n",
                                    opt_.tune.confirm_top, planned, format_seconds(per_trial * planned),
                                    std::isfinite(per_trial)
                                        ? fmt::format(" (at the search's {:.2f} s per trial)", per_trial)
                                        : "");
    else
      *opt_.progress << (opt_.tune.confirm_top > 0 ? "nothing to confirm\n" : "no confirm step (confirm_top 0)\n");
  }
  int confirmed = 0;
  for (size_t i = 0; i < tasks_.size(); ++i) {
    TuneSummary s = tuners_[i]->finish();
    TaskProgress& p = state_[i];
    p.confirmed = s.confirmed;
    p.best_s = s.best ? s.best->result.mean_cost() : std::numeric_limits<double>::infinity();
    confirmed += s.confirmed;
    if (opt_.progress && s.confirmed > 0) {
      const double spent = now_s() - confirm_start;
      const double eta = spent / confirmed * double(std::max(0, planned - confirmed));
      // A config that drops out of the top while confirmed makes the next one confirmed too.
      const std::string count = confirmed <= planned ? fmt::format("{}/{} measurements", confirmed, planned)
                                                     : fmt::format("{} measurements ({} announced; configs that "
                                                                   "dropped out of the top had successors confirmed)",
                                                                   confirmed, planned);
      *opt_.progress << fmt::format("[scheduler] confirm: task {} {}: {} measurements, best {} ms (median of {}); {}, "
                                    "{}, confirm ETA {}\n",
                                    i, p.key, s.confirmed, format_ms(p.best_s), s.best_measurements.size(), count,
                                    format_seconds(spent), format_seconds(eta));
    }
  }
  write_latency("end", -1, "");
  if (opt_.progress) *opt_.progress << "[scheduler] done:\n" << table();

  SchedulerSummary sum;
  sum.tasks = state_;
  sum.trials = trials_;
  sum.rounds = rounds_;
  sum.elapsed_s = elapsed();
  sum.search_s = search_s;
  sum.confirm_s = now_s() - confirm_start;
  sum.confirmed = confirmed;
  sum.estimated_s = estimated_latency();
  return sum;
}

}  // namespace loom::tuner
