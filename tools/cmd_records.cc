// `loom records`: summaries, best records, merging, distilling, plotting tuning logs, and the
// configs that do well across workloads.
#include <filesystem>
#include <fstream>
#include <iostream>

#include "cli.h"
#include "loom/loom.h"
#include "loom/records/log_tools.h"
#include "loom/records/plot.h"

namespace loom::cli {
namespace {

std::vector<std::string> input_logs(const Args& a) {
  if (a.positional().empty()) a.usage_error("no log files given");
  for (const std::string& f : a.positional()) require_file("", f);
  return a.positional();
}

int summary(const Args& a) {
  auto rows = records::summary(input_logs(a), &std::cerr);
  if (rows.empty()) {
    std::cout << "no records\n";
    return 0;
  }
  std::cout << records::format_summary(rows);
  return 0;
}

int best(const Args& a) {
  records::ApplyHistoryBest best(input_logs(a));
  if (a.has("--json")) {
    for (const records::Record& r : best.all()) std::cout << r.to_json() << "\n";
    return 0;
  }
  if (best.size() == 0) {
    std::cout << "no valid records\n";
    return 0;
  }
  for (const records::Record& r : best.all()) {
    std::cout << fmt::format("{}  {}\n  {:.2f} GFLOP/s, {:.4f} ms, config {} ({}): {}\n", r.workload.key(), r.target,
                             r.gflops(), r.result.mean_cost() * 1e3, r.config.index, r.tuner,
                             format_knobs(r.config));
  }
  return 0;
}

int merge(const Args& a) {
  auto in = input_logs(a);
  std::string out = a.required("--output");
  records::MergeStats s = records::merge(in, out, &std::cerr);
  std::cout << fmt::format("{}: {} records written of {} read ({} duplicate trials dropped)\n", out, s.written, s.read,
                           s.duplicates);
  return 0;
}

int distill(const Args& a) {
  auto in = input_logs(a);
  std::string out = a.required("--output");
  int64_t n = records::distill(in, out, &std::cerr);
  std::cout << fmt::format("{}: {} best records written\n", out, n);
  return 0;
}

int plot(const Args& a) {
  auto in = input_logs(a);
  std::string out = a.required("--output");
  std::vector<records::TrialCurve> curves;
  for (const std::string& f : in) {
    std::vector<records::TrialCurve> cs = records::trial_curves(f, &std::cerr);
    if (in.size() > 1)
      for (records::TrialCurve& c : cs) c.label = std::filesystem::path(f).filename().string() + ": " + c.label;
    curves.insert(curves.end(), cs.begin(), cs.end());
  }
  std::ofstream os(out);
  LOOM_CHECK(os, "cannot write '{}'", out);
  os << records::plot_trials_svg(curves, a.str("--title"));
  os.close();
  LOOM_CHECK(os, "writing '{}' failed", out);
  std::cout << fmt::format("{}: {} curve{}\n", out, curves.size(), curves.size() == 1 ? "" : "s");
  for (const records::TrialCurve& c : curves) {
    std::cout << fmt::format("  {}: {} trials drawn{}; ", c.label, c.points.size(),
                             c.failed ? fmt::format(", {} failed not drawn", c.failed) : "");
    if (c.best_config >= 0)
      std::cout << fmt::format("best {:.2f} GFLOP/s, config {} (median of {})\n", c.best_gflops, c.best_config,
                               c.best_measurements);
    else
      std::cout << "no valid trial\n";
  }
  return 0;
}

int portable(const Args& a) {
  std::vector<std::string> workloads;
  std::vector<records::PortableConfig> configs = records::portable_configs(input_logs(a), &workloads, &std::cerr);
  const int64_t top = a.integer("--top", 10, 0);
  std::cout << fmt::format("{} configs measured validly in all {} workloads, ranked by the geometric mean of speed "
                           "relative to each workload's best:\n",
                           configs.size(), workloads.size());
  std::string header = fmt::format("{:>4}  {:>7}", "rank", "geomean");
  for (size_t w = 0; w < workloads.size(); ++w) {
    std::cout << fmt::format("  w{}: {}\n", w + 1, workloads[w]);
    header += fmt::format("  {:>5}", fmt::format("w{}", w + 1));
  }
  std::cout << header << "  knobs\n";
  for (size_t i = 0; i < configs.size() && (top == 0 || int64_t(i) < top); ++i) {
    std::string line = fmt::format("{:>4}  {:>7.3f}", i + 1, configs[i].geomean);
    for (double r : configs[i].ratios) line += fmt::format("  {:>5.2f}", r);
    std::cout << line << "  " << format_knobs(configs[i].config) << "\n";
  }
  return 0;
}

Command sub(std::string name, std::string synopsis, std::string usage, std::string description,
            std::vector<Option> options, std::function<int(const Args&)> run) {
  Command c;
  c.name = "records " + name;
  c.synopsis = std::move(synopsis);
  c.usage = std::move(usage);
  c.description = std::move(description);
  c.options = std::move(options);
  c.positional = "FILE...";
  c.run = std::move(run);
  return c;
}

}  // namespace

Command records_command() {
  const Option output{"--output", "OUT", "the file to write (required)", false, "-o"};
  Command c;
  c.name = "records";
  c.synopsis = "inspect and combine tuning logs: summary, best, merge, distill, plot, portable";
  c.usage = "<summary|best|merge|distill|plot|portable> FILE... [options]";
  c.description =
      "Tuning logs are JSON lines, one trial a line. Malformed lines (a trial without an error has at\n"
      "least one time) and records that name no config of their template's space are reported, as\n"
      "FILE:LINE: skipped: why, and skipped, by these commands and by build, show, compile and tune.\n"
      "A config measured more than once (`loom tune --confirm`) ranks by the median of its records\n"
      "(the slower middle one for an even count; an error counts as infinitely slow).\n"
      "Run `loom records CMD --help` for one command's options.";
  c.subcommands = {
      sub("summary",
          "one row per workload and target: trials, errors, confirm re-measurements, best GFLOP/s, trials to 95%, "
          "configs within 95%",
          "FILE...",
          "The confirm step's re-measurements (tuner \"confirm\") are counted apart and are not trials: they\n"
          "move their config's median, not the trial count or the trial that first reached 95%.",
          {}, summary),
      sub("best", "the best config of each workload and target (its median record), with its knob values",
          "FILE... [--json]", "With --json, prints the records themselves, one JSON line each.",
          {{"--json", "", "print the records as JSON lines"}}, best),
      sub("merge", "merge logs into one, one record per config (its median)", "FILE... -o OUT",
          "Keeps every config's median record (valid or not) in order of first appearance, so the\n"
          "merged log ranks configs as the inputs do; OUT may be one of the inputs.",
          {output}, merge),
      sub("distill", "keep only the best config's median record of each workload and target", "FILE... -o OUT",
          "The result is what `loom build` needs from the logs, and much smaller.", {output}, distill),
      sub("plot", "plot every trial's GFLOP/s and the best so far against trial number as an SVG",
          "FILE... -o curve.svg [--title T]",
          "One curve per workload and target of each log: every valid trial a point (failed trials are\n"
          "not drawn; the legend counts them) and a line of the best config so far as `loom build` ranks\n"
          "configs, by the median of their records, the confirm step's re-measurements included (so the\n"
          "line ends at the value `loom records best` prints, and may fall when a config's\n"
          "re-measurements are slower). The title names the workload and target when there is one.",
          {output, {"--title", "T", "text for the chart's title (after the workload when the chart has one)"}}, plot),
      sub("portable", "the configs that do well on every workload of the logs (a template's default, say)",
          "FILE... [--top K]",
          "Takes the configs, by knob values, with a valid median record for every workload and target\n"
          "in the logs (whole-space logs of several shapes of one template: `loom tune --tuner grid`),\n"
          "and ranks them by the geometric mean over workloads of (the workload's best median cost /\n"
          "the config's median cost). Prints that mean, each workload's ratio and the knob values.",
          {{"--top", "K", "print the K best (default 10; 0: all)"}}, portable),
  };
  return c;
}

}  // namespace loom::cli
