// A module over a shared library written by export_library and opened with dlopen.
//
// Contract with the code generator (codegen's export_library writes these symbols, with
// default visibility, into every exported library):
//   const char* loom_module_function_names(void);
//       The function names, each followed by '\n'.
//   const char* loom_module_info(void);
//       JSON: {"functions":[{"name":"matmul","args":[...]}, ...], ...}. Returned by
//       info_json(); also the fallback source of names when the list above is missing.
//   int32_t __loom_packed_<NAME>(DLTensor** args, int32_t num_args);
//       The packed entry of function NAME: 0 on success, else a LOOM_ERR_* status.
//   const char* __loom_get_last_error(void);
//       The library's own last-error message. A self-contained library embeds its own copy
//       of the runtime, so its errors are recorded there, not in this process's
//       loom_get_last_error(); after a failing call the message is copied across.
//   const unsigned char __loom_device_blobs[];   (optional)
//       Device code (PTX, cubin) for the device runtime to load at first call: magic
//       "LOOMDEV\0", u32 version 1, u32 count, u64 total size, then `count` 40-byte entries
//       {u32 kind (1 ptx, 2 cubin, 3 fatbin), u32 flags, u64 name_offset, u64 name_size,
//       u64 data_offset, u64 data_size}, little-endian, offsets from the container's start
//       (docs/deploy.md). Absent in CPU-only libraries; checked when present.
// The library stays open for as long as the module or any PackedFunc taken from it lives.
#include <dlfcn.h>
#include <elf.h>

#include <bit>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string_view>

#include "loom/runtime/c_runtime_api.h"
#include "loom/runtime/error.h"
#include "loom/runtime/module.h"
#include "regular_file.h"

namespace loom::runtime {

namespace {

using NamesFn = const char* (*)();
using PackedEntry = int32_t (*)(DLTensor**, int32_t);
using ErrorFn = const char* (*)();

struct Library {
  void* handle = nullptr;
  std::string path;
  ~Library() {
    if (handle) dlclose(handle);
  }
};

/// Reads a JSON string starting at the opening quote s[i]; advances i past the closing quote.
std::string read_json_string(std::string_view s, size_t& i) {
  std::string out;
  for (++i; i < s.size() && s[i] != '"'; ++i) {
    if (s[i] == '\\' && i + 1 < s.size()) {
      ++i;
      char c = s[i];
      out += c == 'n' ? '\n' : c == 't' ? '\t' : c;
    } else {
      out += s[i];
    }
  }
  ++i;
  return out;
}

/// The "name" of each object directly inside the top-level "functions" array.
std::vector<std::string> function_names_from_info(std::string_view s) {
  std::vector<std::string> names;
  int depth = 0, functions_depth = -1;
  std::string last_key;
  for (size_t i = 0; i < s.size();) {
    char c = s[i];
    if (c == '"') {
      std::string str = read_json_string(s, i);
      size_t j = i;
      while (j < s.size() && (s[j] == ' ' || s[j] == '\n' || s[j] == '\t' || s[j] == '\r')) ++j;
      bool is_key = j < s.size() && s[j] == ':';
      if (is_key) {
        last_key = str;
      } else {
        if (functions_depth >= 0 && depth == functions_depth + 2 && last_key == "name") names.push_back(str);
        last_key.clear();
      }
      continue;
    }
    if (c == '[' || c == '{') {
      if (c == '[' && depth == 1 && last_key == "functions") functions_depth = depth;
      ++depth;
      last_key.clear();
    } else if (c == ']' || c == '}') {
      --depth;
      if (depth == functions_depth) functions_depth = -1;
    }
    ++i;
  }
  return names;
}

/// One entry of the __loom_device_blobs container.
struct DeviceBlob {
  uint32_t kind = 0;
  std::string name;
  std::string data;
};

uint64_t read_le(const unsigned char* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes; i-- > 0;) v = (v << 8) | p[i];
  return v;
}

/// Parses the container; throws loom::Error naming the library when it is malformed.
std::vector<DeviceBlob> parse_device_blobs(const unsigned char* p, const std::string& path) {
  constexpr uint64_t kHeader = 24, kEntry = 40;
  LOOM_CHECK(std::memcmp(p, "LOOMDEV\0", 8) == 0, "Module::load: {}: __loom_device_blobs has a bad magic number",
             path);
  uint64_t version = read_le(p + 8, 4), count = read_le(p + 12, 4), total = read_le(p + 16, 8);
  LOOM_CHECK(version == 1, "Module::load: {}: device code container version {} is not supported (this loom reads 1)",
             path, version);
  LOOM_CHECK(total >= kHeader && count <= (total - kHeader) / kEntry,
             "Module::load: {}: device code container is truncated ({} entries in {} bytes)", path, count, total);
  std::vector<DeviceBlob> out;
  for (uint64_t i = 0; i < count; ++i) {
    const unsigned char* e = p + kHeader + kEntry * i;
    uint64_t name_off = read_le(e + 8, 8), name_size = read_le(e + 16, 8);
    uint64_t data_off = read_le(e + 24, 8), data_size = read_le(e + 32, 8);
    LOOM_CHECK(name_off <= total && name_size <= total - name_off && data_off <= total && data_size <= total - data_off,
               "Module::load: {}: device code entry {} lies outside its container", path, i);
    out.push_back({uint32_t(read_le(e, 4)), std::string(reinterpret_cast<const char*>(p + name_off), name_size),
                   std::string(reinterpret_cast<const char*>(p + data_off), data_size)});
  }
  return out;
}

class DSOModuleNode : public ModuleNode {
 public:
  explicit DSOModuleNode(std::shared_ptr<Library> lib) : lib_(std::move(lib)) {
    if (auto names = reinterpret_cast<NamesFn>(dlsym(lib_->handle, "loom_module_function_names"))) {
      std::string_view all = names();
      while (!all.empty()) {
        size_t nl = all.find('\n');
        std::string_view name = all.substr(0, nl);
        if (!name.empty()) names_.emplace_back(name);
        all = nl == std::string_view::npos ? std::string_view() : all.substr(nl + 1);
      }
    } else if (auto info = reinterpret_cast<NamesFn>(dlsym(lib_->handle, "loom_module_info"))) {
      names_ = function_names_from_info(info());
    } else {
      fail("{} is not a loom module: it exports neither loom_module_function_names nor loom_module_info",
           lib_->path);
    }
    error_fn_ = reinterpret_cast<ErrorFn>(dlsym(lib_->handle, "__loom_get_last_error"));
    if (auto* blobs = static_cast<const unsigned char*>(dlsym(lib_->handle, "__loom_device_blobs")))
      device_blobs_ = parse_device_blobs(blobs, lib_->path);
  }

  /// "ptx": the PTX of every device module in the library, concatenated.
  std::string source(const std::string& kind) const override {
    uint32_t want = kind == "ptx" ? 1 : kind == "cubin" ? 2 : kind == "fatbin" ? 3 : 0;
    std::string out;
    for (const auto& b : device_blobs_)
      if (b.kind == want) out += b.data;
    return out;
  }

  std::string type_key() const override { return "dso"; }

  std::vector<std::string> function_names() const override { return names_; }

  PackedFunc get_function(const std::string& name) override {
    bool known = false;
    for (const auto& n : names_) known |= (n == name);
    if (!known) return {};
    std::string symbol = "__loom_packed_" + name;
    auto entry = reinterpret_cast<PackedEntry>(dlsym(lib_->handle, symbol.c_str()));
    LOOM_CHECK(entry != nullptr, "{}: function '{}' is listed but its entry {} is missing", lib_->path, name, symbol);
    return PackedFunc(name, [lib = lib_, entry, err = error_fn_](DLTensor** args, int32_t n) {
      int32_t status = entry(args, n);
      if (status != 0 && err) loom_set_last_error(err());
      return status;
    });
  }

  void export_library(const std::string& path) override {
    std::error_code ec;
    if (std::filesystem::exists(path) && std::filesystem::equivalent(path, lib_->path, ec)) return;
    std::filesystem::copy_file(lib_->path, path, std::filesystem::copy_options::overwrite_existing, ec);
    LOOM_CHECK(!ec, "export_library: cannot copy {} to {}: {}", lib_->path, path, ec.message());
  }

  std::string info_json() const override {
    if (auto info = reinterpret_cast<NamesFn>(dlsym(lib_->handle, "loom_module_info"))) return info();
    return "{}";
  }

 private:
  std::shared_ptr<Library> lib_;
  std::vector<std::string> names_;
  ErrorFn error_fn_ = nullptr;
  std::vector<DeviceBlob> device_blobs_;
};

// The ELF machine of this process (0: not checked).
#if defined(__x86_64__)
constexpr uint16_t kHostMachine = EM_X86_64;
#elif defined(__aarch64__)
constexpr uint16_t kHostMachine = EM_AARCH64;
#else
constexpr uint16_t kHostMachine = 0;
#endif

std::string machine_name(uint16_t m) {
  switch (m) {
    case EM_386: return "x86 (32-bit)";
    case EM_X86_64: return "x86-64";
    case EM_ARM: return "ARM (32-bit)";
    case EM_AARCH64: return "AArch64";
    case EM_RISCV: return "RISC-V";
    case EM_PPC64: return "PowerPC 64";
    default: return fmt::format("machine {}", m);
  }
}

/// Refuses, naming the problem, a file dlopen cannot load safely: one that is not a regular
/// file, not a 64-bit little-endian ELF shared object for this machine, or whose program
/// headers or loadable segments reach past its end (dlopen maps those pages, and touching
/// them raises SIGBUS).
void check_elf_file(const std::string& path) {
  const uint64_t size = detail::regular_file_size(path, "Module::load");
  std::ifstream in(path, std::ios::binary);
  LOOM_CHECK(in.good(), "Module::load: cannot open '{}' for reading", path);
  const std::string not_lib = fmt::format("Module::load: cannot open '{}': not a shared library of this machine", path);
  Elf64_Ehdr eh{};
  in.read(reinterpret_cast<char*>(&eh), sizeof eh);
  const uint64_t got = uint64_t(in.gcount());
  LOOM_CHECK(got >= SELFMAG && std::memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0, "{}: not an ELF file", not_lib);
  LOOM_CHECK(got >= EI_NIDENT, "{}: truncated in the ELF header ({} bytes)", not_lib, size);
  LOOM_CHECK(eh.e_ident[EI_CLASS] == ELFCLASS64, "{}: a {} ELF file, this process is 64-bit", not_lib,
             eh.e_ident[EI_CLASS] == ELFCLASS32 ? "32-bit" : "bad-class");
  LOOM_CHECK(eh.e_ident[EI_DATA] == (std::endian::native == std::endian::little ? ELFDATA2LSB : ELFDATA2MSB),
             "{}: its byte order is not this machine's", not_lib);
  LOOM_CHECK(got == sizeof eh, "{}: truncated in the ELF header ({} bytes, the header is {})", not_lib, size,
             sizeof eh);
  LOOM_CHECK(kHostMachine == 0 || eh.e_machine == kHostMachine, "{}: built for {}, this is {}", not_lib,
             machine_name(eh.e_machine), machine_name(kHostMachine));
  LOOM_CHECK(eh.e_type == ET_DYN, "{}: ELF type {} ({}), not a shared object", not_lib, eh.e_type,
             eh.e_type == ET_EXEC ? "an executable" : eh.e_type == ET_REL ? "an object file" : "other");
  LOOM_CHECK(eh.e_phentsize == sizeof(Elf64_Phdr) && eh.e_phnum > 0,
             "{}: malformed ELF header ({} program headers of {} bytes)", not_lib, eh.e_phnum, eh.e_phentsize);
  const std::string truncated =
      fmt::format("Module::load: cannot open '{}': truncated or damaged: its {} bytes end", path, size);
  const uint64_t ph_bytes = uint64_t(eh.e_phnum) * sizeof(Elf64_Phdr);
  LOOM_CHECK(eh.e_phoff <= size && ph_bytes <= size - eh.e_phoff,
             "{} before its program headers (bytes {} to {})", truncated, eh.e_phoff, eh.e_phoff + ph_bytes);
  std::vector<Elf64_Phdr> ph(eh.e_phnum);
  in.seekg(std::streamoff(eh.e_phoff));
  in.read(reinterpret_cast<char*>(ph.data()), std::streamsize(ph_bytes));
  LOOM_CHECK(uint64_t(in.gcount()) == ph_bytes, "Module::load: reading the program headers of '{}' failed", path);
  int loads = 0;
  for (size_t i = 0; i < ph.size(); ++i) {
    const Elf64_Phdr& p = ph[i];
    if (p.p_type != PT_LOAD && p.p_type != PT_DYNAMIC) continue;
    loads += p.p_type == PT_LOAD;
    LOOM_CHECK(p.p_offset <= size && p.p_filesz <= size - p.p_offset,
               "{} before the end of its {} segment {} (bytes {} to {})", truncated,
               p.p_type == PT_LOAD ? "loadable" : "dynamic", i, p.p_offset, p.p_offset + p.p_filesz);
    LOOM_CHECK(p.p_filesz <= p.p_memsz || p.p_type != PT_LOAD,
               "{}: segment {} has more file bytes ({}) than memory ({})", not_lib, i, p.p_filesz, p.p_memsz);
  }
  LOOM_CHECK(loads > 0, "{}: it has no loadable segment", not_lib);
  if (eh.e_shoff != 0 && eh.e_shnum != 0) {
    const uint64_t sh_bytes = uint64_t(eh.e_shnum) * uint64_t(eh.e_shentsize);
    LOOM_CHECK(eh.e_shoff <= size && sh_bytes <= size - eh.e_shoff, "{} before its section headers (bytes {} to {})",
               truncated, eh.e_shoff, eh.e_shoff + sh_bytes);
  }
}

}  // namespace

std::shared_ptr<ModuleNode> load_dso_module(const std::string& path) {
  check_elf_file(path);
  // dlopen searches the library path for a bare name; a user means the file named.
  std::string open_path = path.find('/') == std::string::npos ? "./" + path : path;
  auto lib = std::make_shared<Library>();
  lib->path = path;
  lib->handle = dlopen(open_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib->handle) {
    const char* err = dlerror();
    fail("Module::load: cannot open '{}': {}", path, err ? err : "unknown dlopen error");
  }
  return std::make_shared<DSOModuleNode>(std::move(lib));
}

}  // namespace loom::runtime
