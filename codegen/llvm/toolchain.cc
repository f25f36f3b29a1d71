// The C toolchain of export_library: compiler discovery, compiling C, linking into place.
#include "toolchain.h"

#include <llvm/TargetParser/Triple.h>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include "loom/runtime/error.h"
#include "loom_graph_executor_source.h"
#include "loom_module_runtime_source.h"
#include "target_machine.h"

#ifndef LOOM_C_COMPILER
#define LOOM_C_COMPILER ""
#endif

extern char** environ;

namespace loom::codegen {

namespace fs = std::filesystem;

TempDir::TempDir() {
  std::string tmpl = (fs::temp_directory_path() / "loom-export-XXXXXX").string();
  LOOM_CHECK(mkdtemp(tmpl.data()) != nullptr, "export_library: cannot create a temporary directory: {}",
             std::strerror(errno));
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

void write_file(const fs::path& path, const std::string& bytes, const char* what) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  LOOM_CHECK(out.good(), "{}: cannot open '{}' for writing", what, path.string());
  out.write(bytes.data(), std::streamsize(bytes.size()));
  out.close();
  LOOM_CHECK(out.good(), "{}: cannot write '{}'", what, path.string());
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int run_command(const std::vector<std::string>& argv, const fs::path& log, std::string* output) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int err = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (err != 0) {
    *output = fmt::format("cannot run '{}': {}", argv[0], std::strerror(err));
    return -1;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  *output = read_file(log);
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

namespace {

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : " ") + s;
  return out;
}

std::vector<std::string> split_words(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

}  // namespace

std::string find_program(const std::string& name) {
  if (name.empty()) return "";
  if (name.find('/') != std::string::npos) return access(name.c_str(), X_OK) == 0 ? name : "";
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "/usr/bin:/bin");
  for (std::string d; std::getline(dirs, d, ':');) {
    fs::path p = fs::path(d.empty() ? "." : d) / name;
    if (access(p.c_str(), X_OK) == 0) return p.string();
  }
  return "";
}

namespace {

/// Renames the linked library `staged` to `out` (as the user named it: `path`); on failure
/// removes `staged` and throws, saying why (a directory in the way, or the rename's error).
void move_into_place(const fs::path& staged, const fs::path& out, const std::string& path) {
  std::error_code ec;
  std::string why;
  if (fs::is_directory(out, ec)) why = "it is a directory";
  else if (fs::rename(staged, out, ec); ec) why = ec.message();
  if (why.empty()) return;
  std::error_code ignored;
  fs::remove(staged, ignored);
  fail("export_library: cannot move the library to '{}': {}", path, why);
}

/// `source` compiled with `cc` once per process, compiler and key.
const std::string& cached_object(const std::string& key, const std::vector<std::string>& cc,
                                 const std::string& source, bool graph_headers, const std::string& what) {
  static std::mutex mu;
  static std::map<std::string, std::string> cache;
  std::lock_guard<std::mutex> lock(mu);
  std::string k = key + "\n" + join(cc);
  auto it = cache.find(k);
  if (it != cache.end()) return it->second;
  TempDir tmp;
  std::vector<fs::path> includes;
  if (graph_headers) {
    write_graph_executor_headers(tmp.path() / "include");
    includes.push_back(tmp.path() / "include");
  }
  return cache[k] = compile_c_object(cc, source, includes, what);
}

}  // namespace

std::vector<std::string> find_c_compiler(const Target& target, std::string* why) {
  if (const char* env = std::getenv("LOOM_CC"); env && *env) {
    auto words = split_words(env);
    if (!find_program(words[0]).empty()) return words;
    *why = fmt::format("LOOM_CC is '{}', which is not an executable", env);
    return {};
  }
  if (runs_on_host(target)) {
    for (std::string c : {std::string(LOOM_C_COMPILER), std::string("cc"), std::string("gcc"), std::string("clang")})
      if (std::string p = find_program(c); !p.empty()) return {p};
    *why = "export_library: no C compiler to link with (install gcc or set LOOM_CC)";
    return {};
  }
  std::string given = target.get("mtriple");
  llvm::Triple t(llvm::Triple::normalize(given));
  std::vector<std::string> names = {given, t.str(),
                                    fmt::format("{}-{}-{}", t.getArchName().str(), t.getOSName().str(),
                                                t.getEnvironmentName().str())};
  for (const auto& n : names)
    for (const char* suffix : {"-gcc", "-cc"})
      if (std::string p = find_program(n + suffix); !p.empty()) return {p};
  std::string short_name = names.back();
  *why = fmt::format("export_library: no linker for {} (install gcc-{} or set LOOM_CC)", short_name, short_name);
  return {};
}

std::string compile_c_object(const std::vector<std::string>& cc, const std::string& source,
                             const std::vector<fs::path>& include_dirs, const std::string& what) {
  TempDir tmp;
  fs::path src = tmp.path() / "source.c";
  fs::path obj = tmp.path() / "source.o";
  write_file(src, source, "export_library");
  std::vector<std::string> cmd = cc;
  for (const char* a : {"-std=c11", "-O2", "-fPIC", "-fvisibility=hidden", "-pthread", "-c"}) cmd.push_back(a);
  for (const auto& d : include_dirs) cmd.push_back("-I" + d.string());
  cmd.insert(cmd.end(), {src.string(), "-o", obj.string()});
  std::string out;
  int status = run_command(cmd, tmp.path() / "cc.log", &out);
  LOOM_CHECK(status == 0, "export_library: compiling {} failed (status {}): {}\n{}", what, status, join(cmd), out);
  return read_file(obj);
}

const std::string& runtime_object(const std::vector<std::string>& cc) {
  return cached_object("runtime", cc, kModuleRuntimeSource, false, "the embedded runtime");
}

const std::string& graph_executor_object(const std::vector<std::string>& cc) {
  return cached_object("graph_executor", cc, kGraphExecutorSource, true, "the embedded graph executor");
}

void write_graph_executor_headers(const fs::path& dir) {
  for (const auto& h : kGraphExecutorHeaders) {
    fs::path p = dir / h.path;
    fs::create_directories(p.parent_path());
    write_file(p, h.text, "export_library");
  }
}

void check_library_path(const std::string& path) {
  LOOM_CHECK(!path.empty(), "export_library: empty path");
  fs::path out(path);
  fs::path dir = out.has_parent_path() ? out.parent_path() : fs::path(".");
  LOOM_CHECK(fs::is_directory(dir), "export_library: directory '{}' of '{}' does not exist", dir.string(), path);
  LOOM_CHECK(!fs::is_directory(out), "export_library: cannot write the library to '{}': it is a directory", path);
}

void link_shared_library(const std::vector<std::string>& cc, const std::vector<std::string>& objects,
                         const std::vector<std::string>& exports, const std::string& path,
                         const std::vector<std::string>& libs) {
  fs::path out(path);
  fs::path dir = out.has_parent_path() ? out.parent_path() : fs::path(".");
  TempDir tmp;
  std::vector<std::string> object_files;
  for (size_t i = 0; i < objects.size(); ++i) {
    fs::path o = tmp.path() / fmt::format("part{}.o", i);
    write_file(o, objects[i], "export_library");
    object_files.push_back(o.string());
  }
  std::string map = "{\n  global:\n";
  for (const auto& e : exports) map += fmt::format("    {};\n", e);
  map += "  local: *;\n};\n";
  fs::path map_file = tmp.path() / "exports.map";
  write_file(map_file, map, "export_library");

  // Link next to the destination, then rename: a process that has the old file mapped keeps
  // its (unlinked) copy instead of seeing it rewritten under it.
  fs::path staged = dir / fmt::format(".{}.{}.tmp", out.filename().string(), getpid());
  std::vector<std::string> cmd = cc;
  cmd.insert(cmd.end(), {"-shared", "-o", staged.string()});
  cmd.insert(cmd.end(), object_files.begin(), object_files.end());
  cmd.insert(cmd.end(), {"-Wl,-Bsymbolic", "-Wl,--version-script=" + map_file.string(),
                         "-Wl,-soname," + out.filename().string(), "-Wl,--as-needed", "-Wl,-z,noexecstack",
                         "-Wl,-z,relro", "-Wl,-z,now", "-static-libgcc", "-pthread", "-lm"});
  cmd.insert(cmd.end(), libs.begin(), libs.end());
  std::string log;
  int status = run_command(cmd, tmp.path() / "link.log", &log);
  if (status != 0) {
    std::error_code ec;
    fs::remove(staged, ec);
    fail("export_library: linking {} failed (status {}): {}\n{}", path, status, join(cmd), log);
  }
  move_into_place(staged, out, path);
}

}  // namespace loom::codegen
