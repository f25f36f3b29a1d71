#include "common/process_util.h"

#include <elf.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include "loom/runtime/error.h"

extern char** environ;

namespace loom::test {

namespace fs = std::filesystem;

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int run(const std::vector<std::string>& argv, const std::vector<std::string>& env, std::string* out,
        double timeout_s) {
  std::string log = (fs::temp_directory_path() / "loom-run-XXXXXX").string();
  int fd = mkstemp(log.data());
  if (fd < 0) {
    *out = std::strerror(errno);
    return -1;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fd, 1);
  posix_spawn_file_actions_adddup2(&fa, fd, 2);
  std::vector<char*> a, e;
  for (auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
  a.push_back(nullptr);
  for (auto& s : env) e.push_back(const_cast<char*>(s.c_str()));
  e.push_back(nullptr);
  pid_t pid;
  int err = posix_spawnp(&pid, a[0], &fa, nullptr, a.data(), e.data());
  posix_spawn_file_actions_destroy(&fa);
  close(fd);
  if (err) {
    *out = std::strerror(err);
    unlink(log.c_str());
    return -1;
  }
  int st = 0;
  bool timed_out = false;
  if (timeout_s > 0) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    while (waitpid(pid, &st, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
        timed_out = true;
        break;
      }
      usleep(10000);
    }
  } else {
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
  }
  *out = read_file(log);
  unlink(log.c_str());
  if (timed_out) return kTimedOut;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int run(const std::vector<std::string>& argv, const std::vector<std::string>& env, std::string* out,
        const RunLimits& limits) {
  if (argv.empty()) {
    *out = "no program to run";
    return -1;
  }
  // Resolved before fork: the child of a threaded process may only make async-signal-safe calls.
  std::string exe = argv[0];
  if (exe.find('/') == std::string::npos) {
    std::string path = std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin";
    std::istringstream dirs(path);
    for (std::string d; std::getline(dirs, d, ':');)
      if (!d.empty() && access((d + "/" + exe).c_str(), X_OK) == 0) {
        exe = d + "/" + exe;
        break;
      }
  }
  std::string log = (fs::temp_directory_path() / "loom-run-XXXXXX").string();
  int fd = mkostemp(log.data(), O_CLOEXEC);
  if (fd < 0) {
    *out = std::strerror(errno);
    return -1;
  }
  std::vector<char*> a, e;
  for (auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
  a.push_back(nullptr);
  for (auto& s : env) e.push_back(const_cast<char*>(s.c_str()));
  e.push_back(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    if (limits.address_space > 0) {
      rlimit rl{rlim_t(limits.address_space), rlim_t(limits.address_space)};
      if (setrlimit(RLIMIT_AS, &rl) != 0) _exit(127);
    }
    dup2(fd, 1);
    dup2(fd, 2);
    execve(exe.c_str(), a.data(), e.data());
    _exit(127);
  }
  int fork_errno = errno;
  close(fd);
  if (pid < 0) {
    *out = std::strerror(fork_errno);
    unlink(log.c_str());
    return -1;
  }
  setpgid(pid, pid);  // also here, so that the group exists before any kill below
  int st = 0;
  bool timed_out = false;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(limits.timeout_s);
  for (;;) {
    pid_t r = waitpid(pid, &st, limits.timeout_s > 0 ? WNOHANG : 0);
    if (r == pid || (r < 0 && errno != EINTR)) break;
    if (r == 0 && std::chrono::steady_clock::now() > deadline) {
      kill(-pid, SIGKILL);
      while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
      }
      timed_out = true;
      break;
    }
    if (r == 0) usleep(10000);
  }
  kill(-pid, SIGKILL);  // whatever the program left running in its group
  *out = read_file(log);
  unlink(log.c_str());
  if (timed_out) return kTimedOut;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

std::vector<std::string> host_env() {
  std::vector<std::string> env;
  for (char** p = environ; *p; ++p) env.emplace_back(*p);
  return env;
}

void compile_c_program(const std::string& source, const std::string& exe) {
  std::string out;
  int st = run({"cc", "-std=c11", "-O1", source, "-o", exe, "-ldl"}, host_env(), &out);
  if (st != 0) throw Error("cannot compile " + source + ": " + out);
}

ElfInfo read_elf(const fs::path& p) {
  std::string b = read_file(p);
  ElfInfo info;
  if (b.size() < sizeof(Elf64_Ehdr) || std::memcmp(b.data(), ELFMAG, SELFMAG) != 0 || b[EI_CLASS] != ELFCLASS64)
    throw Error(p.string() + " is not a 64-bit ELF file");
  Elf64_Ehdr eh;
  std::memcpy(&eh, b.data(), sizeof eh);
  info.machine = eh.e_machine;
  auto section = [&](size_t i) {
    Elf64_Shdr sh;
    std::memcpy(&sh, b.data() + eh.e_shoff + i * eh.e_shentsize, sizeof sh);
    return sh;
  };
  for (size_t i = 0; i < eh.e_shnum; ++i) {
    Elf64_Shdr sh = section(i);
    if (sh.sh_type != SHT_DYNAMIC && sh.sh_type != SHT_DYNSYM) continue;
    Elf64_Shdr str = section(sh.sh_link);
    const char* strtab = b.data() + str.sh_offset;
    if (sh.sh_type == SHT_DYNAMIC) {
      for (size_t o = 0; o + sizeof(Elf64_Dyn) <= sh.sh_size; o += sizeof(Elf64_Dyn)) {
        Elf64_Dyn d;
        std::memcpy(&d, b.data() + sh.sh_offset + o, sizeof d);
        if (d.d_tag == DT_NEEDED) info.needed.emplace_back(strtab + d.d_un.d_val);
      }
    } else {
      for (size_t o = sizeof(Elf64_Sym); o + sizeof(Elf64_Sym) <= sh.sh_size; o += sizeof(Elf64_Sym)) {
        Elf64_Sym s;
        std::memcpy(&s, b.data() + sh.sh_offset + o, sizeof s);
        int bind = ELF64_ST_BIND(s.st_info);
        if (s.st_shndx != SHN_UNDEF && (bind == STB_GLOBAL || bind == STB_WEAK) &&
            ELF64_ST_VISIBILITY(s.st_other) == STV_DEFAULT)
          info.exported.insert(strtab + s.st_name);
      }
    }
  }
  return info;
}

const fs::path& scratch_dir(const std::string& prefix) {
  static std::mutex mu;
  static std::map<std::string, fs::path>* dirs = new std::map<std::string, fs::path>();
  std::lock_guard<std::mutex> lock(mu);
  auto it = dirs->find(prefix);
  if (it != dirs->end()) return it->second;
  fs::path d = fs::temp_directory_path() / (prefix + "-" + std::to_string(getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  static pid_t owner = getpid();  // a forked child that exits must not remove them
  if (dirs->empty())
    std::atexit([] {
      std::error_code ec;
      if (getpid() == owner && !std::getenv("LOOM_KEEP_TEST_FILES"))
        for (const auto& [p, dir] : *dirs) fs::remove_all(dir, ec);
    });
  return (*dirs)[prefix] = d;
}

const std::string& export_loader() {
  static std::string exe = [] {
    std::string path = (scratch_dir("loom-test-tools") / "export_loader").string();
    compile_c_program(std::string(LOOM_SOURCE_DIR) + "/tests/codegen/export_loader.c", path);
    return path;
  }();
  return exe;
}

}  // namespace loom::test
