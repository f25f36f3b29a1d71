// export_library: a CPU module to a self-contained shared library with a C ABI, its C
// header, and the object file it is linked from. The layout of what is written is
// documented in docs/deploy.md; runtime/dso_module.cc reads it back.
#pragma once
#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace loom::codegen {

class LLVMModuleNode;

/// Device code carried inside an exported library, loaded by the device runtime at first
/// call. Stored in the `__loom_device_blobs` container (docs/deploy.md).
struct DeviceBlob {
  enum Kind : uint32_t { kPTX = 1, kCubin = 2, kFatbin = 3 };
  Kind kind = kPTX;
  std::string name;  // the device module's name (usually the host function's)
  std::string data;
};

/// The container bytes for `blobs` (magic "LOOMDEV\0", version 1, entries, payload).
std::string encode_device_blobs(const std::vector<DeviceBlob>& blobs);

/// The relocatable object of `node` for its target: every function, its packed entry,
/// loom_module_info, loom_module_function_names and (when given) the device blobs. It does
/// not contain the embedded runtime; export_library links that in. `calls_libmvec`, if
/// given, is set to whether the object calls glibc's vector math library (linked as -lmvec).
std::string emit_export_object(const LLVMModuleNode& node, const std::vector<DeviceBlob>& blobs = {},
                               bool* calls_libmvec = nullptr);

/// Writes emit_export_object(node) to `path`.
void export_object(const LLVMModuleNode& node, const std::string& path, const std::vector<DeviceBlob>& blobs = {});

/// Writes the shared library `path` and its C header (path with ".so" replaced by ".h").
/// Links with the target's C compiler: $LOOM_CC, else for the host the compiler loom was
/// built with or `cc`, else for another triple `<triple>-gcc`; throws loom::Error naming
/// what to install when there is none (the object file is written next to `path` first).
void export_library(const LLVMModuleNode& node, const std::string& path, const std::vector<DeviceBlob>& blobs = {});

/// A library for the host from generated C source instead of an LLVM object (device
/// modules): `c_source` is compiled with the host's C compiler (-std=c11 -O2 -fPIC
/// -fvisibility=hidden) and linked like export_library, with the embedded runtime, exporting
/// `exports` and the runtime's error getters; `header` is written next to `path` (".so"
/// replaced by ".h"). The library depends only on libc, libm, libpthread and libdl.
void export_c_library(const std::string& c_source, const std::vector<std::string>& exports,
                      const std::string& header, const std::string& path);

/// The C header documenting and declaring every function of `node`.
std::string c_header(const LLVMModuleNode& node, const std::string& library_file);

/// The pieces every generated C header shares, CPU or CUDA. The header of library
/// `library_file` is named c_header_name(library_file) (".so" replaced by ".h", else ".h"
/// appended); after its leading comment come c_header_begin (include guard, includes,
/// extern "C", status codes), the functions' declarations, and c_header_end (the module-wide
/// declarations and the closing of the header).
std::string c_header_name(const std::string& library_file);
std::string c_header_begin(const std::string& library_file);
std::string c_header_end(const std::string& library_file);
/// "DLTensor* a, DLTensor* b" for the given parameter names ("void" for none).
std::string c_param_list(const std::vector<std::string>& params);

/// A C string literal for `s` (quotes, backslashes and non-printable bytes escaped).
std::string c_string_literal(const std::string& s);

/// A C identifier for argument `index` named `name` (which may hold dots or be a keyword),
/// unique among `used`, which it joins.
std::string c_param_name(const std::string& name, size_t index, std::set<std::string>* used);

}  // namespace loom::codegen
