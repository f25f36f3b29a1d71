// `loom records plot`: the trials of a log and the best config as ApplyHistoryBest ranks them,
// as an SVG chart.
#include "loom/records/plot.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "loom/records/record.h"
#include "svg.h"

namespace loom::records {

using svg::nice_step;
using svg::tick_label;
using svg::xml_escape;

std::vector<TrialCurve> trial_curves(const std::string& path, std::ostream* warn) {
  std::vector<TrialCurve> curves;
  std::map<std::string, size_t> index;  // workload key + target → curve
  std::vector<Workload> workloads;
  ApplyHistoryBest hist;
  for (Record& r : read_log(path, warn).records) {
    const std::string key = r.workload.key();
    auto [it, inserted] = index.emplace(key + '\n' + r.target, curves.size());
    if (inserted) {
      TrialCurve c;
      c.workload = key;
      c.target = r.target;
      c.label = key + " on " + r.target;
      curves.push_back(std::move(c));
      workloads.push_back(r.workload);
    }
    TrialCurve& c = curves[it->second];
    const bool trial = r.tuner != kConfirmTuner;
    if (trial) {
      ++c.trials;
      if (r.valid()) c.points.emplace_back(c.trials, r.gflops());
      else ++c.failed;
    }
    const Workload w = r.workload;
    const std::string target = r.target;
    hist.add(std::move(r));
    std::optional<Record> b = hist.best(w, target);
    const double now = b ? b->gflops() : 0;
    if (trial) c.best.push_back(now);
    else if (!c.best.empty()) c.best.back() = now;
  }
  for (size_t i = 0; i < curves.size(); ++i) {
    TrialCurve& c = curves[i];
    if (std::optional<Record> b = hist.best(workloads[i], c.target)) {
      c.best_gflops = b->gflops();
      c.best_config = b->config.index;
      c.best_measurements = hist.measurements(workloads[i], c.target, c.best_config).size();
    }
  }
  return curves;
}

std::string plot_trials_svg(const std::vector<TrialCurve>& curves, const std::string& title) {
  constexpr double W = 960, top = 60, bottom = 60, left = 80, right = 20, legend_line = 18;
  constexpr const char* colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  const double ph = 380, pw = W - left - right;
  const double H = top + ph + bottom + legend_line * double(2 * curves.size()) + 10;

  int64_t max_n = 1;
  double max_y = 0;
  for (const TrialCurve& c : curves) {
    max_n = std::max(max_n, c.trials);
    for (const auto& [t, v] : c.points) max_y = std::max(max_y, v);
    for (double v : c.best) max_y = std::max(max_y, v);
  }
  const double xstep = nice_step(double(max_n), 8);
  const double xmax = std::ceil(double(max_n) / xstep) * xstep;
  const double ystep = nice_step(max_y > 0 ? max_y : 1.0, 6);
  const double ymax = std::ceil((max_y > 0 ? max_y : 1.0) / ystep) * ystep;
  auto px = [&](double x) { return left + x / xmax * pw; };
  auto py = [&](double y) { return top + ph - y / ymax * ph; };

  std::string heading = title;
  if (curves.size() == 1) heading = curves[0].label + (title.empty() ? "" : " — " + title);
  else if (heading.empty()) heading = "GFLOP/s by trial";

  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n",
      W, H);
  s += fmt::format("<rect x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"white\"/>\n", W, H);
  s += fmt::format("<text class=\"title\" x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-size=\"15\">{}</text>\n",
                   left + pw / 2, top / 2, xml_escape(heading));

  for (double x = 0; x <= xmax + xstep * 1e-9; x += xstep) {
    s += fmt::format("<line x1=\"{0:.2f}\" y1=\"{1:.2f}\" x2=\"{0:.2f}\" y2=\"{2:.2f}\" stroke=\"#e0e0e0\"/>\n", px(x),
                     top, top + ph);
    s += fmt::format("<text x=\"{:.2f}\" y=\"{:.2f}\" text-anchor=\"middle\">{}</text>\n", px(x), top + ph + 18,
                     tick_label(x));
  }
  for (double y = 0; y <= ymax + ystep * 1e-9; y += ystep) {
    s += fmt::format("<line x1=\"{1:.2f}\" y1=\"{0:.2f}\" x2=\"{2:.2f}\" y2=\"{0:.2f}\" stroke=\"#e0e0e0\"/>\n", py(y),
                     left, left + pw);
    s += fmt::format("<text x=\"{:.2f}\" y=\"{:.2f}\" text-anchor=\"end\">{}</text>\n", left - 8, py(y) + 4,
                     tick_label(y));
  }
  s += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"black\"/>\n", left, top, top + ph);
  s += fmt::format("<line x1=\"{0}\" y1=\"{2}\" x2=\"{1}\" y2=\"{2}\" stroke=\"black\"/>\n", left, left + pw, top + ph);
  s += fmt::format("<text x=\"{:.2f}\" y=\"{:.2f}\" text-anchor=\"middle\">trial</text>\n", left + pw / 2,
                   top + ph + 40);
  s += fmt::format(
      "<text x=\"{0:.2f}\" y=\"{1:.2f}\" text-anchor=\"middle\" transform=\"rotate(-90 {0:.2f} {1:.2f})\">"
      "GFLOP/s</text>\n",
      22.0, top + ph / 2);

  for (size_t i = 0; i < curves.size(); ++i) {
    const TrialCurve& c = curves[i];
    const char* color = colors[i % (sizeof(colors) / sizeof(colors[0]))];
    for (const auto& [t, v] : c.points)
      s += fmt::format("<circle class=\"trial\" data-trial=\"{}\" data-gflops=\"{:.3f}\" cx=\"{:.2f}\" cy=\"{:.2f}\" "
                       "r=\"2.5\" fill=\"{}\" fill-opacity=\"0.45\"/>\n",
                       t, v, px(double(t)), py(v), color);
    // The best as a step line: it holds its value until the next trial changes it.
    std::string pts;
    for (size_t t = 0; t < c.best.size(); ++t) {
      if (t > 0) pts += fmt::format(" {:.2f},{:.2f}", px(double(t + 1)), py(c.best[t - 1]));
      pts += fmt::format("{}{:.2f},{:.2f}", pts.empty() ? "" : " ", px(double(t + 1)), py(c.best[t]));
    }
    if (!pts.empty())
      s += fmt::format("<polyline class=\"best\" data-final-gflops=\"{:.3f}\" data-config=\"{}\" fill=\"none\" "
                       "stroke=\"{}\" stroke-width=\"2\" points=\"{}\"/>\n",
                       c.best_gflops, c.best_config, color, pts);
  }

  // Legend below the plot: two lines per curve.
  for (size_t i = 0; i < curves.size(); ++i) {
    const TrialCurve& c = curves[i];
    const char* color = colors[i % (sizeof(colors) / sizeof(colors[0]))];
    const double ly = top + ph + bottom + legend_line * double(2 * i) + 6;
    s += fmt::format("<line x1=\"{:.2f}\" y1=\"{:.2f}\" x2=\"{:.2f}\" y2=\"{:.2f}\" stroke=\"{}\" stroke-width=\"2\"/>\n",
                     left, ly, left + 24, ly, color);
    s += fmt::format("<circle cx=\"{:.2f}\" cy=\"{:.2f}\" r=\"2.5\" fill=\"{}\"/>\n", left + 12, ly, color);
    s += fmt::format("<text class=\"legend\" x=\"{:.2f}\" y=\"{:.2f}\">{}</text>\n", left + 32, ly + 4,
                     xml_escape(c.label));
    std::string best = c.best_config >= 0
                           ? fmt::format("best {:.2f} GFLOP/s, config {}, the median of {} measurement{} (what "
                                         "loom build picks)",
                                         c.best_gflops, c.best_config, c.best_measurements,
                                         c.best_measurements == 1 ? "" : "s")
                           : std::string("no valid trial");
    s += fmt::format("<text class=\"summary\" data-failed=\"{}\" x=\"{:.2f}\" y=\"{:.2f}\" fill=\"#444\">{} trials "
                     "({} failed, not drawn); {}</text>\n",
                     c.failed, left + 32, ly + 4 + legend_line, c.trials, c.failed, xml_escape(best));
  }
  s += "</svg>\n";
  return s;
}

}  // namespace loom::records
