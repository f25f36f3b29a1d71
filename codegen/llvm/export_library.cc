// export_library: object emission through the module's TargetMachine, the embedded C
// runtime, linking with the target's C compiler, and the generated C header.
#include "export_library.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/GlobalVariable.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/TargetParser/Triple.h>

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>

#include "jit_module.h"
#include "loom/runtime/error.h"
#include "loom_module_runtime_source.h"
#include "optimize.h"
#include "target_machine.h"
#include "vector_math.h"

#ifndef LOOM_VERSION
#define LOOM_VERSION "unknown"
#endif
#ifndef LOOM_C_COMPILER
#define LOOM_C_COMPILER ""
#endif

extern char** environ;

namespace loom::codegen {

namespace fs = std::filesystem;

namespace {

// ------------------------------------------------------------------ files and processes

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

/// A fresh directory under the system temp dir, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "loom-export-XXXXXX").string();
    LOOM_CHECK(mkdtemp(tmpl.data()) != nullptr, "export_library: cannot create a temporary directory: {}",
               std::strerror(errno));
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

/// Runs argv (no shell) and returns its exit status; stdout and stderr go to `output`.
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

/// Full path of an executable: as given if it has a '/', else searched on PATH.
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

// ------------------------------------------------------------------ toolchain

/// The C compiler that compiles the runtime and links for `target`; empty with `why` set
/// when there is none.
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

/// The embedded runtime compiled once per process and compiler command.
std::string runtime_object(const std::vector<std::string>& cc, const TempDir& tmp) {
  static std::mutex mu;
  static std::map<std::string, std::string> cache;
  std::lock_guard<std::mutex> lock(mu);
  std::string key = join(cc);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  fs::path src = tmp.path() / "loom_module_runtime.c";
  fs::path obj = tmp.path() / "loom_module_runtime.o";
  write_file(src, kModuleRuntimeSource, "export_library");
  std::vector<std::string> cmd = cc;
  for (const char* a : {"-std=c11", "-O2", "-fPIC", "-fvisibility=hidden", "-pthread", "-c"}) cmd.push_back(a);
  cmd.insert(cmd.end(), {src.string(), "-o", obj.string()});
  std::string out;
  int status = run_command(cmd, tmp.path() / "rt.log", &out);
  LOOM_CHECK(status == 0, "export_library: compiling the embedded runtime failed (status {}): {}\n{}", status,
             join(cmd), out);
  return cache[key] = read_file(obj);
}

// ------------------------------------------------------------------ object contents

/// `const char* name(void)` returning a constant string, with default visibility.
void add_string_getter(llvm::Module& m, const std::string& name, const std::string& value) {
  llvm::LLVMContext& ctx = m.getContext();
  auto* init = llvm::ConstantDataArray::getString(ctx, value, true);
  auto* gv = new llvm::GlobalVariable(m, init->getType(), true, llvm::GlobalValue::PrivateLinkage, init, name + ".str");
  gv->setUnnamedAddr(llvm::GlobalValue::UnnamedAddr::Global);
  auto* ptr = llvm::PointerType::getUnqual(ctx);
  auto* fn = llvm::Function::Create(llvm::FunctionType::get(ptr, false), llvm::Function::ExternalLinkage, name, m);
  fn->addFnAttr(llvm::Attribute::NoUnwind);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", fn));
  b.CreateRet(gv);
}

/// The module's info_json() plus what the target resolved to (the host CPU for "llvm").
std::string export_info_json(const LLVMModuleNode& node) {
  nlohmann::json j = nlohmann::json::parse(node.info_json());
  llvm::TargetMachine* tm = get_target_machine(node.target());
  j["triple"] = tm->getTargetTriple().str();
  j["cpu"] = tm->getTargetCPU().str();
  return j.dump();
}

std::string function_names_text(const LLVMModuleNode& node) {
  std::string out;
  for (const auto& f : node.functions()) out += f.name + "\n";
  return out;
}

std::string shape_text(const FunctionInfo::Arg& a) {
  std::string out = "[";
  for (size_t i = 0; i < a.shape.size(); ++i) out += (i ? ", " : "") + a.shape[i];
  return out + "]";
}

fs::path header_path(const std::string& path) {
  fs::path p(path);
  if (p.extension() == ".so") return fs::path(p).replace_extension(".h");
  return fs::path(path + ".h");
}

}  // namespace

std::string c_param_name(const std::string& name, size_t index, std::set<std::string>* used) {
  static const std::set<std::string> reserved = {
      "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else", "enum", "extern",
      "float", "for", "goto", "if", "inline", "int", "long", "register", "restrict", "return", "short", "signed",
      "sizeof", "static", "struct", "switch", "typedef", "union", "unsigned", "void", "volatile", "while", "bool",
      "true", "false", "class", "new", "delete", "this", "template", "operator", "private", "public", "args",
      "num_args"};
  std::string out;
  for (char c : name) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0])) || reserved.count(out) || out[0] == '_' ||
      used->count(out))
    out = fmt::format("arg{}", index);
  used->insert(out);
  return out;
}


// ------------------------------------------------------------------ device blobs

std::string encode_device_blobs(const std::vector<DeviceBlob>& blobs) {
  // Little-endian, offsets from the start of the container (docs/deploy.md):
  //   0  char[8] magic "LOOMDEV\0"   8  u32 version (1)   12  u32 count   16  u64 total size
  //   24 + 40*i: entry i = u32 kind, u32 flags (0), u64 name_offset, u64 name_size,
  //                        u64 data_offset, u64 data_size
  //   then each entry's NUL-terminated name and its payload, payloads 16-byte aligned.
  auto put = [](std::string& s, uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) s.push_back(char((v >> (8 * i)) & 0xff));
  };
  constexpr size_t kHeader = 24, kEntry = 40;
  std::string payload;
  std::vector<std::array<uint64_t, 4>> offs;
  size_t base = kHeader + kEntry * blobs.size();
  for (const auto& b : blobs) {
    uint64_t name_off = base + payload.size();
    payload += b.name;
    payload.push_back('\0');
    while ((base + payload.size()) % 16) payload.push_back('\0');
    uint64_t data_off = base + payload.size();
    payload += b.data;
    offs.push_back({name_off, b.name.size(), data_off, b.data.size()});
  }
  std::string out("LOOMDEV\0", 8);
  put(out, 1, 4);
  put(out, blobs.size(), 4);
  put(out, base + payload.size(), 8);
  for (size_t i = 0; i < blobs.size(); ++i) {
    put(out, blobs[i].kind, 4);
    put(out, 0, 4);
    for (uint64_t v : offs[i]) put(out, v, 8);
  }
  return out + payload;
}

// ------------------------------------------------------------------ object, header, library

std::string emit_export_object(const LLVMModuleNode& node, const std::vector<DeviceBlob>& blobs,
                               bool* calls_libmvec) {
  llvm::LLVMContext ctx;
  std::unique_ptr<llvm::Module> m = from_bitcode(node.bitcode(), ctx);
  if (calls_libmvec) *calls_libmvec = calls_vector_math_library(*m);
  add_string_getter(*m, "loom_module_info", export_info_json(node));
  add_string_getter(*m, "loom_module_function_names", function_names_text(node));
  if (!blobs.empty()) {
    std::string bytes = encode_device_blobs(blobs);
    auto* init = llvm::ConstantDataArray::getRaw(bytes, bytes.size(), llvm::Type::getInt8Ty(ctx));
    auto* gv = new llvm::GlobalVariable(*m, init->getType(), true, llvm::GlobalValue::ExternalLinkage, init,
                                        "__loom_device_blobs");
    gv->setAlignment(llvm::Align(16));
    gv->setSection(".loom_device");
  }
  return emit_machine_code(*m, get_target_machine(node.target()), llvm::CodeGenFileType::ObjectFile);
}

void export_object(const LLVMModuleNode& node, const std::string& path, const std::vector<DeviceBlob>& blobs) {
  write_file(path, emit_export_object(node, blobs), "export_object");
}

std::string c_header_name(const std::string& library_file) {
  return header_path(fs::path(library_file).filename().string()).filename().string();
}

namespace {

std::string guard_name(const std::string& library_file) {
  std::string out = "LOOM_MODULE_";
  for (char c : c_header_name(library_file))
    out += std::isalnum(static_cast<unsigned char>(c)) ? char(std::toupper(static_cast<unsigned char>(c))) : '_';
  return out + "_";
}

}  // namespace

std::string c_header_begin(const std::string& library_file) {
  std::string h = fmt::format("#ifndef {0}\n#define {0}\n\n#include <stdint.h>\n#include <dlpack/dlpack.h>\n\n",
                              guard_name(library_file));
  h += "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n";
  h += "#ifndef LOOM_ERR_ARGUMENT\n#define LOOM_OK 0\n#define LOOM_ERR_ARGUMENT -1\n#define LOOM_ERR_RUNTIME -2\n#endif\n\n";
  return h;
}

std::string c_header_end(const std::string& library_file) {
  std::string h;
  h += "/* The message of the last failure of a call into this library on this thread (\"\" if none). */\n";
  h += "const char* loom_get_last_error(void);\n";
  h += "/* JSON describing every function: name, arguments (name, dtype, shape), target, loom version. */\n";
  h += "const char* loom_module_info(void);\n";
  h += "/* The function names, each followed by a newline. */\n";
  h += "const char* loom_module_function_names(void);\n";
  h += "typedef const char* (*loom_get_last_error_fn)(void);\n";
  h += "typedef const char* (*loom_module_info_fn)(void);\n\n";
  h += "#ifdef __cplusplus\n}  /* extern \"C\" */\n#endif\n";
  h += fmt::format("#endif /* {} */\n", guard_name(library_file));
  return h;
}

std::string c_param_list(const std::vector<std::string>& params) {
  std::string out;
  for (size_t i = 0; i < params.size(); ++i) out += fmt::format("{}DLTensor* {}", i ? ", " : "", params[i]);
  return out.empty() ? "void" : out;
}

std::string c_header(const LLVMModuleNode& node, const std::string& library_file) {
  std::string lib = fs::path(library_file).filename().string();
  std::string h;
  h += fmt::format(
      "/* {}: C interface of {}, generated by loom {} (do not edit).\n"
      " * Target: {} (triple {}, cpu {})\n"
      " *\n"
      " * Every function takes DLPack tensors (DLTensor*) and returns 0, or a negative status:\n"
      " * LOOM_ERR_ARGUMENT (-1) for a bad argument, LOOM_ERR_RUNTIME (-2) for a failure while\n"
      " * running. loom_get_last_error() then describes it (per thread, per library).\n"
      " * Each argument must be a non-null tensor on the CPU (kDLCPU) with exactly the dtype and\n"
      " * shape listed, compact row-major (strides NULL or the compact strides), byte_offset 0,\n"
      " * and data aligned to its element size. Inputs are read; outputs are written in full.\n"
      " *\n"
      " * Use it by linking the library (-l) or with dlopen()/dlsym() and the *_fn typedefs. */\n",
      c_header_name(lib), lib, LOOM_VERSION, node.target().str(),
      get_target_machine(node.target())->getTargetTriple().str(), get_target_machine(node.target())->getTargetCPU().str());
  h += c_header_begin(lib);
  for (const auto& f : node.functions()) {
    std::set<std::string> used;
    std::vector<std::string> params;
    for (size_t i = 0; i < f.args.size(); ++i) params.push_back(c_param_name(f.args[i].name, i, &used));
    const std::string plist = c_param_list(params);
    h += fmt::format("/* {}({} argument{}):\n", f.name, f.args.size(), f.args.size() == 1 ? "" : "s");
    for (size_t i = 0; i < f.args.size(); ++i) {
      const auto& a = f.args[i];
      h += fmt::format(" *   {} {}: {}{}{}\n", i, params[i], a.dtype, shape_text(a), a.role.empty() ? "" : "  (" + a.role + ")");
    }
    h += " */\n";
    h += fmt::format("int32_t {}({});\n", f.name, plist);
    h += fmt::format("typedef int32_t (*{}_fn)({});\n", f.name, plist);
    h += fmt::format("/* The same with the arguments in an array: args[0..{}], num_args = {}. */\n",
                     f.args.empty() ? 0 : f.args.size() - 1, f.args.size());
    h += fmt::format("int32_t __loom_packed_{}(DLTensor** args, int32_t num_args);\n\n", f.name);
  }
  h += c_header_end(lib);
  return h;
}

void export_library(const LLVMModuleNode& node, const std::string& path, const std::vector<DeviceBlob>& blobs) {
  LOOM_CHECK(!path.empty(), "export_library: empty path");
  fs::path out(path);
  fs::path dir = out.has_parent_path() ? out.parent_path() : fs::path(".");
  LOOM_CHECK(fs::is_directory(dir), "export_library: directory '{}' of '{}' does not exist", dir.string(), path);
  LOOM_CHECK(!fs::is_directory(out), "export_library: cannot write the library to '{}': it is a directory", path);
  bool calls_libmvec = false;
  std::string object = emit_export_object(node, blobs, &calls_libmvec);

  std::string why;
  std::vector<std::string> cc = find_c_compiler(node.target(), &why);
  if (cc.empty()) {
    fs::path obj = fs::path(out).replace_extension(".o");
    write_file(obj, object, "export_library");
    fail("{}; the object file was written to {}", why, obj.string());
  }

  TempDir tmp;
  fs::path obj = tmp.path() / "module.o";
  fs::path rt = tmp.path() / "loom_module_runtime.o";
  fs::path map = tmp.path() / "exports.map";
  write_file(obj, object, "export_library");
  write_file(rt, runtime_object(cc, tmp), "export_library");
  std::string exports = "{\n  global:\n";
  for (const auto& f : node.functions()) exports += fmt::format("    {};\n    __loom_packed_{};\n", f.name, f.name);
  exports += "    loom_get_last_error;\n    __loom_get_last_error;\n    loom_module_info;\n"
             "    loom_module_function_names;\n";
  if (!blobs.empty()) exports += "    __loom_device_blobs;\n";
  exports += "  local: *;\n};\n";
  write_file(map, exports, "export_library");

  // Link next to the destination, then rename: a process that has the old file mapped keeps
  // its (unlinked) copy instead of seeing it rewritten under it.
  fs::path staged = dir / fmt::format(".{}.{}.tmp", out.filename().string(), getpid());
  std::vector<std::string> cmd = cc;
  cmd.insert(cmd.end(), {"-shared", "-o", staged.string(), obj.string(), rt.string(),
                         "-Wl,-Bsymbolic", "-Wl,--version-script=" + map.string(),
                         "-Wl,-soname," + out.filename().string(), "-Wl,--as-needed", "-Wl,-z,noexecstack",
                         "-Wl,-z,relro", "-Wl,-z,now", "-static-libgcc", "-pthread", "-lm"});
  // glibc's vector math (vector_math.h): part of libc6 like libm. Its archive cannot go into a
  // shared object (it refers to the static libc's _dl_x86_cpu_features), so it is linked.
  if (calls_libmvec) cmd.push_back("-lmvec");
  std::string log;
  int status = run_command(cmd, tmp.path() / "link.log", &log);
  if (status != 0) {
    std::error_code ec;
    fs::remove(staged, ec);
    fail("export_library: linking {} failed (status {}): {}\n{}", path, status, join(cmd), log);
  }
  move_into_place(staged, out, path);
  write_file(header_path(path), c_header(node, out.filename().string()), "export_library");
}

void export_c_library(const std::string& c_source, const std::vector<std::string>& exports,
                      const std::string& header, const std::string& path) {
  LOOM_CHECK(!path.empty(), "export_library: empty path");
  fs::path out(path);
  fs::path dir = out.has_parent_path() ? out.parent_path() : fs::path(".");
  LOOM_CHECK(fs::is_directory(dir), "export_library: directory '{}' of '{}' does not exist", dir.string(), path);
  LOOM_CHECK(!fs::is_directory(out), "export_library: cannot write the library to '{}': it is a directory", path);
  std::string why;
  std::vector<std::string> cc = find_c_compiler(Target("llvm"), &why);
  LOOM_CHECK(!cc.empty(), "{}", why);

  TempDir tmp;
  fs::path src = tmp.path() / "module.c";
  fs::path obj = tmp.path() / "module.o";
  fs::path rt = tmp.path() / "loom_module_runtime.o";
  fs::path map = tmp.path() / "exports.map";
  write_file(src, c_source, "export_library");
  std::vector<std::string> compile = cc;
  for (const char* a : {"-std=c11", "-O2", "-fPIC", "-fvisibility=hidden", "-pthread", "-c"}) compile.push_back(a);
  compile.insert(compile.end(), {src.string(), "-o", obj.string()});
  std::string log;
  int status = run_command(compile, tmp.path() / "cc.log", &log);
  LOOM_CHECK(status == 0, "export_library: compiling the generated C source of {} failed (status {}): {}\n{}", path,
             status, join(compile), log);
  write_file(rt, runtime_object(cc, tmp), "export_library");
  std::string map_text = "{\n  global:\n";
  for (const auto& e : exports) map_text += fmt::format("    {};\n", e);
  map_text += "    loom_get_last_error;\n    __loom_get_last_error;\n  local: *;\n};\n";
  write_file(map, map_text, "export_library");

  fs::path staged = dir / fmt::format(".{}.{}.tmp", out.filename().string(), getpid());
  std::vector<std::string> cmd = cc;
  cmd.insert(cmd.end(), {"-shared", "-o", staged.string(), obj.string(), rt.string(), "-Wl,-Bsymbolic",
                         "-Wl,--version-script=" + map.string(), "-Wl,-soname," + out.filename().string(),
                         "-Wl,--as-needed", "-Wl,-z,noexecstack", "-Wl,-z,relro", "-Wl,-z,now", "-static-libgcc",
                         "-pthread", "-lm", "-ldl"});
  status = run_command(cmd, tmp.path() / "link.log", &log);
  if (status != 0) {
    std::error_code ec;
    fs::remove(staged, ec);
    fail("export_library: linking {} failed (status {}): {}\n{}", path, status, join(cmd), log);
  }
  move_into_place(staged, out, path);
  write_file(header_path(path), header, "export_library");
}

}  // namespace loom::codegen
