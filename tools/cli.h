// What the `loom` subcommands share: their description (for parsing and --help), option
// parsing with usage errors, and the options naming a workload.
#pragma once
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "loom/records/record.h"
#include "loom/tuner/build_best.h"
#include "loom/tuner/task.h"

namespace loom::cli {

/// A mistake in how a command was called (unknown or missing option, malformed value):
/// reported with a pointer to the command's --help, exit status 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Exit statuses: 0 success, 1 the command failed, 2 it was called wrongly.
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

/// One option: how it is written, its value's name ("" for a flag) and its help line.
struct Option {
  std::string name;         // "--trials"
  std::string value;        // "N"; empty: a flag
  std::string help;         // one line; mention the default
  bool repeated = false;    // may be given several times
  std::string alias = "";   // "-o"
};

class Args;

/// A subcommand: its options, its help and what it does. A command with `subcommands`
/// dispatches on its first argument (`loom records summary …`).
struct Command {
  std::string program = "loom";  // what prefixes `name` in usage and errors ("" for none)
  std::string name;         // "tune", "records summary"
  std::string synopsis;     // one line for the command list
  std::string usage;        // "--op NAME --shape LIST --log FILE [options]"
  std::string description;  // printed after the usage line by --help
  std::vector<Option> options;
  std::string positional;   // metavariable of positional arguments ("FILE..."); empty: none
  std::function<int(const Args&)> run;
  std::vector<Command> subcommands;
  /// "loom tune" (program and name)
  std::string prog() const { return program.empty() ? name : program + " " + name; }
};

/// Parsed arguments of one command. Accessors throw UsageError naming the option.
class Args {
 public:
  Args(const Command* cmd) : cmd_(cmd) {}
  bool help() const { return help_; }
  bool has(const std::string& name) const { return values_.count(name) != 0; }
  std::string str(const std::string& name, const std::string& def = "") const;
  /// The value; "--NAME VALUE is required" when absent.
  std::string required(const std::string& name) const;
  std::vector<std::string> all(const std::string& name) const;
  int64_t integer(const std::string& name, int64_t def, int64_t lo, int64_t hi = INT64_MAX) const;
  double number(const std::string& name, double def, double lo) const;
  /// The value of a --NAME that must be one of `choices`.
  std::string choice(const std::string& name, const std::string& def, const std::vector<std::string>& choices) const;
  const std::vector<std::string>& positional() const { return positional_; }
  /// "loom tune"
  std::string prog() const { return cmd_->prog(); }

  template <typename... T>
  [[noreturn]] void usage_error(fmt::format_string<T...> f, T&&... args) const {
    throw UsageError(fmt::format(f, std::forward<T>(args)...));
  }

 private:
  friend Args parse(const Command& cmd, const std::vector<std::string>& argv);
  const Command* cmd_;
  bool help_ = false;
  std::map<std::string, std::vector<std::string>> values_;
  std::vector<std::string> positional_;
};

/// Parses `argv` (the arguments after the command's name) against `cmd.options`; accepts
/// `--name value`, `--name=value` and `--help`/`-h`.
Args parse(const Command& cmd, const std::vector<std::string>& argv);
/// What `loom CMD --help` prints.
std::string help_text(const Command& cmd);
/// Parses and runs `cmd` (or prints its help), mapping errors to exit statuses: UsageError
/// 2, loom::Error and other exceptions 1, each reported on stderr as "loom CMD: error: …".
int run_command(const Command& cmd, const std::vector<std::string>& argv);

// ---- the workload options of tune, build, bench and show

/// "unknown op 'matmu'; did you mean 'matmul'?" (the nearest template or registry operator
/// names or aliases), or a pointer to `loom ops` when none is near.
std::string unknown_op_message(const std::string& op);
/// --op, --shape, --input, --auto, --dtype, --attr (and --target when `with_target`).
std::vector<Option> workload_options(bool with_target = true);
/// What the workload options' help says about templates and the auto-scheduler (for the
/// commands' descriptions).
extern const char* const kWorkloadHelp;
/// "1024,1024,1024" → {1024, 1024, 1024}; UsageError naming `option` when malformed.
/// Makes every tuning log read by this process skip (and report, naming the line) records
/// that name no config of their template's config space (tuner::install_record_check).
void check_config_indices();
std::vector<int64_t> parse_int_list(const std::string& option, const std::string& text);
/// The workload the options name, checked by its template for `target_kind` (UsageError
/// naming the option that is wrong).
records::Workload workload_from(const Args& a, const std::string& target_kind = "llvm");
/// The task the options name on --target (default llvm): the op's template with --shape,
/// or, for a registry operator without a template on the target (or with --auto), an
/// auto-scheduled task of the operator on the --input types with the --attr attributes.
/// UsageError naming the option that is wrong.
tuner::Task task_from(const Args& a);
/// The name of the task's function in built modules (tuner::function_name).
using tuner::function_name;

// ---- choosing a config

/// The config a build, bench or show uses: the best record of the logs, or the default.
struct Chosen {
  tuner::Instance instance;
  int64_t index = -1;
  std::optional<records::Record> record;  // none: the template's default config
  /// For a record: "config N", or that its recorded steps were replayed (and why).
  std::string how;
};
/// The best record for `task` in `logs` (skipped lines and the fallback warning go to `warn`).
Chosen choose_config(const tuner::Task& task, const std::vector<std::string>& logs, std::ostream* warn);
/// The default config of `task`.
Chosen default_config(const tuner::Task& task);

// ---- formatting

/// "tile_y=[-1, 8, 4] vec=vec …" from a record's knobs (labels where the template gave them).
std::string format_knobs(const records::ConfigRecord& c);
/// "4.2 s", "3m12s", "1h02m".
std::string format_seconds(double s);
/// Throws loom::Error "no CUDA driver/GPU: <why>; --target cuda needs an NVIDIA GPU" when this
/// process cannot use a GPU (require_gpu, which initializes CUDA here) or when the measuring
/// worker processes could not (require_gpu_workers, probed in a child so that this process
/// may still fork them).
void require_gpu();
void require_gpu_workers();
/// Throws UsageError "--NAME: cannot read PATH" when a file does not exist.
void require_file(const std::string& option, const std::string& path);

// ---- the subcommands (tools/cmd_*.cc)

Command ops_command();
Command lower_command();
Command tune_command();
Command build_command();
Command bench_command();
Command show_command();
Command records_command();
Command run_model_command();  // `loom run`
Command compile_command();
Command import_command();
Command tune_model_command();

}  // namespace loom::cli
