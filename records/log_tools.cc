// Whole-log tools: summary, merge, distill, portable configs, best-so-far curves and their SVG chart.
#include "loom/records/log_tools.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <unordered_map>

#include <fmt/ranges.h>

#include "svg.h"

namespace loom::records {

using svg::nice_step;
using svg::tick_label;
using svg::xml_escape;

std::vector<Record> read_logs(const std::vector<std::string>& paths, std::ostream* warn) {
  std::vector<Record> out;
  for (const auto& p : paths) {
    LogContents c = read_log(p, warn);
    out.insert(out.end(), std::make_move_iterator(c.records.begin()), std::make_move_iterator(c.records.end()));
  }
  return out;
}

namespace {

/// Writes `records` as a log at `path`, replacing it atomically (temporary file + rename).
void write_log_file(const std::string& path, const std::vector<const Record*>& records) {
  std::string tmp = fmt::format("{}.tmp.{}", path, ::getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) fail("cannot create '{}': {}", tmp, std::strerror(errno));
    for (const Record* r : records) f << r->to_json() << '\n';
    f.flush();
    if (!f) {
      std::remove(tmp.c_str());
      fail("cannot write '{}': {}", tmp, std::strerror(errno));
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    std::remove(tmp.c_str());
    fail("cannot replace '{}': {}", path, std::strerror(err));
  }
}

/// Records grouped by `key_of`, groups in order of first appearance, records in log order.
template <typename KeyOf>
std::vector<std::vector<const Record*>> group(const std::vector<Record>& all, KeyOf key_of) {
  std::vector<std::vector<const Record*>> groups;
  std::unordered_map<std::string, size_t> slot;
  for (const Record& r : all) {
    auto [it, inserted] = slot.emplace(key_of(r), groups.size());
    if (inserted) groups.emplace_back();
    groups[it->second].push_back(&r);
  }
  return groups;
}

std::string config_key(const Record& r) { return fmt::format("{}\n{}\n{}", r.workload.key(), r.target, r.config.index); }

}  // namespace

std::vector<WorkloadSummary> summary(const std::vector<std::string>& paths, std::ostream* warn) {
  std::vector<Record> all = read_logs(paths, warn);
  std::vector<WorkloadSummary> rows;
  std::vector<std::vector<double>> gflops;  // per row, per trial
  std::unordered_map<std::string, size_t> index;
  for (const Record& r : all) {
    auto [it, inserted] = index.emplace(r.workload.key() + '\n' + r.target, rows.size());
    if (inserted) {
      rows.push_back(WorkloadSummary{});
      rows.back().key = r.workload.key();
      rows.back().target = r.target;
      gflops.emplace_back();
    }
    WorkloadSummary& s = rows[it->second];
    if (r.tuner == kConfirmTuner) {
      ++s.confirmations;
      continue;
    }
    ++s.trials;
    gflops[it->second].push_back(r.gflops());
    if (r.valid()) ++s.valid;
    else ++s.errors[r.result.error];
  }
  // Configs rank by their median record, as ApplyHistoryBest ranks them.
  std::vector<std::vector<std::pair<int64_t, const Record*>>> configs(rows.size());  // per row, first-seen order
  for (const auto& g : group(all, config_key)) {
    const Record& m = median_record(g);
    if (m.valid()) configs[index.at(m.workload.key() + '\n' + m.target)].emplace_back(m.config.index, &m);
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    WorkloadSummary& s = rows[i];
    for (const auto& [config, r] : configs[i]) {
      if (s.best_config < 0 || r->result.mean_cost() < s.best_cost) {
        s.best_cost = r->result.mean_cost();
        s.best_gflops = r->gflops();
        s.best_config = config;
      }
    }
    if (s.best_config < 0) continue;
    const auto& g = gflops[i];
    for (size_t t = 0; t < g.size(); ++t) {
      if (g[t] >= 0.95 * s.best_gflops) {
        s.trials_to_95 = int64_t(t) + 1;
        break;
      }
    }
    std::vector<std::pair<int64_t, double>> by_speed;
    for (const auto& [config, r] : configs[i]) by_speed.emplace_back(config, r->gflops());
    std::stable_sort(by_speed.begin(), by_speed.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    s.configs = int64_t(by_speed.size());
    for (const auto& [config, g] : by_speed) {
      if (g >= 0.95 * s.best_gflops) ++s.configs_within_95;
      if (s.top_configs.size() < 3) s.top_configs.push_back(config);
    }
  }
  return rows;
}

std::string format_summary(const std::vector<WorkloadSummary>& rows) {
  std::vector<std::vector<std::string>> cells = {
      {"workload", "target", "trials", "valid", "errors", "confirm", "best GFLOP/s", "best config", "trials to 95%",
       "configs within 95%", "top 3 configs"}};
  for (const auto& s : rows) {
    std::string errs;
    for (const auto& [code, n] : s.errors) errs += fmt::format("{}{}={}", errs.empty() ? "" : ",", to_string(code), n);
    cells.push_back({s.key, s.target, std::to_string(s.trials), std::to_string(s.valid), errs.empty() ? "-" : errs,
                     std::to_string(s.confirmations), s.valid ? fmt::format("{:.2f}", s.best_gflops) : "-",
                     s.valid ? std::to_string(s.best_config) : "-",
                     s.valid ? std::to_string(s.trials_to_95) : "-",
                     s.valid ? fmt::format("{}/{}", s.configs_within_95, s.configs) : "-",
                     s.valid ? fmt::format("{}", fmt::join(s.top_configs, ",")) : "-"});
  }
  std::vector<size_t> width(cells[0].size(), 0);
  for (const auto& row : cells)
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  std::string out;
  for (const auto& row : cells) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      const std::string& column = cells[0][c];
      const bool numeric = column != "workload" && column != "target" && column != "errors" && column != "top 3 configs";
      line += numeric ? fmt::format("{:>{}}", row[c], width[c]) : fmt::format("{:<{}}", row[c], width[c]);
      if (c + 1 < row.size()) line += "  ";
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + '\n';
  }
  return out;
}

std::vector<PortableConfig> portable_configs(const std::vector<std::string>& paths, std::vector<std::string>* workloads,
                                             std::ostream* warn) {
  std::vector<Record> all = read_logs(paths, warn);
  std::vector<std::string> names;
  std::unordered_map<std::string, size_t> slot;
  std::vector<std::map<std::string, const Record*>> by_knobs;  // per workload: knob values -> median record
  for (const auto& g : group(all, config_key)) {
    const Record& m = median_record(g);
    if (!m.valid()) continue;
    auto [it, inserted] = slot.emplace(m.workload.key() + '\n' + m.target, names.size());
    if (inserted) {
      names.push_back(m.workload.key() + " " + m.target);
      by_knobs.emplace_back();
    }
    by_knobs[it->second][fmt::format("{}", m.config.knobs)] = &m;
  }
  if (workloads) *workloads = names;
  std::vector<double> best(names.size(), INFINITY);
  for (size_t w = 0; w < names.size(); ++w)
    for (const auto& [knobs, r] : by_knobs[w]) best[w] = std::min(best[w], r->result.mean_cost());
  std::vector<PortableConfig> out;
  if (names.empty()) return out;
  for (const auto& [knobs, first] : by_knobs[0]) {
    PortableConfig c;
    c.config = first->config;
    double log_sum = 0;
    bool everywhere = true;
    for (size_t w = 0; w < names.size() && everywhere; ++w) {
      auto it = by_knobs[w].find(knobs);
      everywhere = it != by_knobs[w].end();
      if (!everywhere) break;
      c.ratios.push_back(best[w] / it->second->result.mean_cost());
      log_sum += std::log(c.ratios.back());
    }
    if (!everywhere) continue;
    c.geomean = std::exp(log_sum / double(names.size()));
    out.push_back(std::move(c));
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.geomean > b.geomean; });
  return out;
}

MergeStats merge(const std::vector<std::string>& paths, const std::string& out, std::ostream* warn) {
  std::vector<Record> all = read_logs(paths, warn);
  MergeStats st;
  st.read = int64_t(all.size());
  std::vector<const Record*> kept;
  for (const auto& g : group(all, config_key)) kept.push_back(&median_record(g));
  st.duplicates = st.read - int64_t(kept.size());
  write_log_file(out, kept);
  st.written = int64_t(kept.size());
  return st;
}

int64_t distill(const std::vector<std::string>& paths, const std::string& out, std::ostream* warn) {
  ApplyHistoryBest best;
  for (Record& r : read_logs(paths, warn)) best.add(std::move(r));
  const std::vector<Record> all = best.all();
  std::vector<const Record*> kept;
  for (const Record& r : all) kept.push_back(&r);
  write_log_file(out, kept);
  return int64_t(kept.size());
}

std::vector<double> best_curve(const std::string& path, const std::string& workload_key, std::ostream* warn) {
  std::vector<double> curve;
  double best = 0;
  for (const Record& r : read_log(path, warn).records) {
    if (!workload_key.empty() && r.workload.key() != workload_key) continue;
    if (r.tuner == kConfirmTuner) continue;
    best = std::max(best, r.gflops());
    curve.push_back(best);
  }
  return curve;
}

std::string plot_svg(const std::vector<std::pair<std::string, std::vector<double>>>& curves,
                     const std::string& title) {
  constexpr double W = 860, H = 500, left = 80, right = 200, top = 50, bottom = 60;
  constexpr const char* colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  const double pw = W - left - right, ph = H - top - bottom;

  size_t max_n = 1;
  double max_y = 0;
  for (const auto& [label, c] : curves) {
    max_n = std::max(max_n, c.size());
    for (double v : c)
      if (std::isfinite(v)) max_y = std::max(max_y, v);
  }
  double xstep = nice_step(double(max_n), 8);
  double xmax = std::ceil(double(max_n) / xstep) * xstep;
  double ystep = nice_step(max_y > 0 ? max_y : 1.0, 6);
  double ymax = std::ceil((max_y > 0 ? max_y : 1.0) / ystep) * ystep;
  auto px = [&](double x) { return left + x / xmax * pw; };
  auto py = [&](double y) { return top + ph - y / ymax * ph; };

  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n",
      W, H);
  s += fmt::format("<rect x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"white\"/>\n", W, H);
  s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-size=\"16\">{}</text>\n", left + pw / 2,
                   top / 2 + 6, xml_escape(title));

  // Grid, ticks and tick labels.
  for (double x = 0; x <= xmax + xstep * 1e-9; x += xstep) {
    s += fmt::format("<line x1=\"{0:.2f}\" y1=\"{1:.2f}\" x2=\"{0:.2f}\" y2=\"{2:.2f}\" stroke=\"#e0e0e0\"/>\n", px(x),
                     top, top + ph);
    s += fmt::format("<line x1=\"{0:.2f}\" y1=\"{1:.2f}\" x2=\"{0:.2f}\" y2=\"{2:.2f}\" stroke=\"black\"/>\n", px(x),
                     top + ph, top + ph + 5);
    s += fmt::format("<text x=\"{:.2f}\" y=\"{:.2f}\" text-anchor=\"middle\">{}</text>\n", px(x), top + ph + 19,
                     tick_label(x));
  }
  for (double y = 0; y <= ymax + ystep * 1e-9; y += ystep) {
    s += fmt::format("<line x1=\"{1:.2f}\" y1=\"{0:.2f}\" x2=\"{2:.2f}\" y2=\"{0:.2f}\" stroke=\"#e0e0e0\"/>\n", py(y),
                     left, left + pw);
    s += fmt::format("<line x1=\"{1:.2f}\" y1=\"{0:.2f}\" x2=\"{2:.2f}\" y2=\"{0:.2f}\" stroke=\"black\"/>\n", py(y),
                     left - 5, left);
    s += fmt::format("<text x=\"{:.2f}\" y=\"{:.2f}\" text-anchor=\"end\">{}</text>\n", left - 8, py(y) + 4,
                     tick_label(y));
  }
  // Axes and their labels.
  s += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"black\"/>\n", left, top, top + ph);
  s += fmt::format("<line x1=\"{0}\" y1=\"{2}\" x2=\"{1}\" y2=\"{2}\" stroke=\"black\"/>\n", left, left + pw,
                   top + ph);
  s += fmt::format("<text x=\"{:.2f}\" y=\"{:.2f}\" text-anchor=\"middle\">trial</text>\n", left + pw / 2, H - 15);
  s += fmt::format(
      "<text x=\"{0:.2f}\" y=\"{1:.2f}\" text-anchor=\"middle\" transform=\"rotate(-90 {0:.2f} {1:.2f})\">"
      "best GFLOP/s</text>\n",
      20.0, top + ph / 2);

  // One polyline per curve, then the legend.
  for (size_t i = 0; i < curves.size(); ++i) {
    const char* color = colors[i % (sizeof(colors) / sizeof(colors[0]))];
    std::string pts;
    const auto& c = curves[i].second;
    for (size_t t = 0; t < c.size(); ++t) {
      double v = std::isfinite(c[t]) ? c[t] : 0;
      pts += fmt::format("{}{:.2f},{:.2f}", pts.empty() ? "" : " ", px(double(t + 1)), py(v));
    }
    s += fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\" points=\"{}\"/>\n", color, pts);
  }
  for (size_t i = 0; i < curves.size(); ++i) {
    const char* color = colors[i % (sizeof(colors) / sizeof(colors[0]))];
    double ly = top + 10 + 20 * double(i);
    s += fmt::format("<line x1=\"{:.2f}\" y1=\"{:.2f}\" x2=\"{:.2f}\" y2=\"{:.2f}\" stroke=\"{}\" stroke-width=\"2\"/>\n",
                     left + pw + 15, ly, left + pw + 40, ly, color);
    s += fmt::format("<text x=\"{:.2f}\" y=\"{:.2f}\">{}</text>\n", left + pw + 46, ly + 4,
                     xml_escape(curves[i].first));
  }
  s += "</svg>\n";
  return s;
}

}  // namespace loom::records
