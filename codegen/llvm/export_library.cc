// export_library: object emission through the module's TargetMachine, the generated C
// header, and the library linked with the embedded C runtime (toolchain.h).
#include "export_library.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/GlobalVariable.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>

#include <nlohmann/json.hpp>

#include <array>
#include <cctype>
#include <filesystem>
#include <set>

#include "jit_module.h"
#include "loom/codegen/build.h"
#include "loom/runtime/error.h"
#include "optimize.h"
#include "target_machine.h"
#include "toolchain.h"
#include "vector_math.h"

#ifndef LOOM_VERSION
#define LOOM_VERSION "unknown"
#endif

namespace loom::codegen {

namespace fs = std::filesystem;

namespace {

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

std::string c_string_literal(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\' || c == '?') out += '\\', out += char(c);  // '?': no trigraphs under -std=c11
    else if (c < 32 || c > 126) out += fmt::format("\\{:03o}", c);
    else out += char(c);
  }
  return out + "\"";
}

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
  for (const auto& f : node.functions()) {
    std::string why = export_name_problem(f.name);
    LOOM_CHECK(why.empty(), "export_library('{}'): the function name {}", path, why);
  }
  check_library_path(path);
  fs::path out(path);
  bool calls_libmvec = false;
  std::string object = emit_export_object(node, blobs, &calls_libmvec);
  std::string why;
  std::vector<std::string> cc = find_c_compiler(node.target(), &why);
  if (cc.empty()) {
    fs::path obj = fs::path(out).replace_extension(".o");
    write_file(obj, object, "export_library");
    fail("{}; the object file was written to {}", why, obj.string());
  }
  std::vector<std::string> exports;
  for (const auto& f : node.functions()) exports.insert(exports.end(), {f.name, "__loom_packed_" + f.name});
  exports.insert(exports.end(), {"loom_get_last_error", "__loom_get_last_error", "loom_module_info",
                                 "loom_module_function_names"});
  if (!blobs.empty()) exports.push_back("__loom_device_blobs");
  // glibc's vector math (vector_math.h): part of libc6 like libm. Its archive cannot go into a
  // shared object (it refers to the static libc's _dl_x86_cpu_features), so it is linked.
  std::vector<std::string> libs;
  if (calls_libmvec) libs.push_back("-lmvec");
  link_shared_library(cc, {object, runtime_object(cc)}, exports, path, libs);
  write_file(header_path(path), c_header(node, out.filename().string()), "export_library");
}

void export_c_library(const std::string& c_source, const std::vector<std::string>& exports,
                      const std::string& header, const std::string& path) {
  check_library_path(path);
  std::string why;
  std::vector<std::string> cc = find_c_compiler(Target("llvm"), &why);
  LOOM_CHECK(!cc.empty(), "{}", why);
  std::string object = compile_c_object(cc, c_source, {}, fmt::format("the generated C source of {}", path));
  std::vector<std::string> all = exports;
  all.insert(all.end(), {"loom_get_last_error", "__loom_get_last_error"});
  link_shared_library(cc, {object, runtime_object(cc)}, all, path, {"-ldl"});
  write_file(header_path(path), header, "export_library");
}

}  // namespace loom::codegen
