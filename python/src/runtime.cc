// loom.build, modules and their functions (called on NumPy arrays or any DLPack object, without
// copying), export_library / load_module, and the arrays of loom.nd.
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <chrono>

#include "bindings.h"
// NumPy's C API in this file only (its table is a static of this translation unit).
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

#include "convert.h"
#include "loom/codegen/build.h"
#include "loom/runtime/module.h"
#include "loom/runtime/ndarray.h"

namespace loom::python {
namespace {

using runtime::Module;
using runtime::PackedFunc;

/// A compiled function; keeps its module alive.
struct Function {
  PackedFunc f;
  Module module;
};

using AnyArray = nb::ndarray<nb::ro>;

/// NumPy's C API, imported on first use; false when NumPy cannot be imported.
bool numpy_api() {
  static bool ok = [] {
    if (_import_array() >= 0) return true;
    PyErr_Clear();
    return false;
  }();
  return ok;
}

/// The DLPack type of a NumPy array's elements, or false (complex, long double, objects...).
bool numpy_dtype(PyArrayObject* a, DLDataType* out) {
  uint8_t bits = uint8_t(PyArray_ITEMSIZE(a) * 8);
  int t = PyArray_TYPE(a);
  if (t == NPY_BOOL) *out = DataType::Bool().to_dlpack();
  else if (PyTypeNum_ISSIGNED(t)) *out = DLDataType{kDLInt, bits, 1};
  else if (PyTypeNum_ISUNSIGNED(t)) *out = DLDataType{kDLUInt, bits, 1};
  else if (t == NPY_HALF || t == NPY_FLOAT || t == NPY_DOUBLE) *out = DLDataType{kDLFloat, bits, 1};
  else return false;
  return true;
}

/// The DLTensors of call arguments, pointing into the callers' arrays (no copy). NumPy arrays
/// are read from their fields (NumPy's C API: the cheap path); anything else through DLPack.
class CallArgs {
 public:
  static_assert(sizeof(npy_intp) == sizeof(int64_t), "NumPy's shapes are read as int64_t");
  CallArgs(const std::string& fname, const nb::tuple& args) : fname_(fname) {
    size_t n = args.size();
    DLTensor* tensors = inline_;
    if (n > kInline) {
      heap_.resize(n);
      tensors = heap_.data();
    }
    ptrs_.resize(n);
    const bool numpy = numpy_api();
    for (size_t i = 0; i < n; ++i) {
      nb::handle h = args[i];
      DLTensor& t = tensors[i];
      ptrs_[i] = &t;
      if (numpy && PyArray_Check(h.ptr()) && from_numpy(h, i, t)) continue;
      if (arrays_.empty()) arrays_.reserve(n);  // DLPack handles stay put: their shapes are pointed to
      arrays_.emplace_back();
      AnyArray& a = arrays_.back();
      if (!nb::try_cast(h, a, false) && numpy && PyArray_Check(h.ptr()))
        fail("{}: argument {} is a NumPy array of dtype {}, which loom does not take (byte-swapped, or a type "
             "without a DLPack code)", fname, i, std::string(nb::steal<nb::str>(PyObject_Str(nb::object(h.attr("dtype")).ptr())).c_str()));
      if (!a.is_valid())
        fail("{}: argument {} is a {}, not an array (a NumPy array, loom.nd.NDArray or an object with __dlpack__)",
             fname, i, py_type_name(h));
      t.data = a.data_handle();
      t.byte_offset = a.byte_offset();
      t.device = DLDevice{DLDeviceType(a.device_type()), a.device_id()};
      t.ndim = int32_t(a.ndim());
      t.dtype = DLDataType{a.dtype().code, a.dtype().bits, a.dtype().lanes};
      t.shape = const_cast<int64_t*>(a.shape_ptr());
      t.strides = nullptr;
      if (a.stride_ptr()) check_dense(i, t.ndim, a.shape_ptr(), a.stride_ptr(), 1);
    }
  }
  CallArgs(const CallArgs&) = delete;
  CallArgs& operator=(const CallArgs&) = delete;
  const std::vector<DLTensor*>& ptrs() const { return ptrs_; }

 private:
  /// A NumPy array's DLTensor read from its fields (the cheap path); false to take DLPack's.
  bool from_numpy(nb::handle h, size_t i, DLTensor& t) const {
    auto* a = reinterpret_cast<PyArrayObject*>(h.ptr());
    DLDataType dt;
    if (!numpy_dtype(a, &dt) || !PyArray_ISNOTSWAPPED(a)) return false;
    t.data = PyArray_DATA(a);
    t.byte_offset = 0;
    t.device = DLDevice{kDLCPU, 0};
    t.ndim = PyArray_NDIM(a);
    t.dtype = dt;
    t.shape = reinterpret_cast<int64_t*>(PyArray_DIMS(a));
    t.strides = nullptr;
    if (!PyArray_IS_C_CONTIGUOUS(a))
      check_dense(i, t.ndim, t.shape, reinterpret_cast<int64_t*>(PyArray_STRIDES(a)), PyArray_ITEMSIZE(a));
    return true;
  }
  /// Throws unless the strides (in units of `unit`) are those of a dense row-major array.
  void check_dense(size_t i, int ndim, const int64_t* shape, const int64_t* strides, int64_t unit) const {
    int64_t expect = unit;
    for (int d = ndim - 1; d >= 0; --d) {
      if (shape[d] != 1 && strides[d] != expect) {
        std::string s = "(";
        for (int k = 0; k < ndim; ++k) s += (k ? ", " : "") + std::to_string(strides[k] / unit);
        fail("{}: argument {} is not a dense row-major array (strides {}); loom functions read and write arrays "
             "in place, so pass a C-contiguous one (numpy.ascontiguousarray)",
             fname_, i, s + ")");
      }
      expect *= shape[d];
    }
  }
  const std::string& fname_;
  static constexpr size_t kInline = 8;  // arguments held without allocating
  DLTensor inline_[kInline];
  std::vector<DLTensor> heap_;
  std::vector<DLTensor*> ptrs_;
  std::vector<AnyArray> arrays_;
};

void call(const Function& fn, nb::args args) {
  CallArgs a(fn.f.name(), args);
  nb::gil_scoped_release release;
  fn.f.call(a.ptrs());
}

Function get_function(const Module& m, const std::string& name) { return Function{m.get_function(name), m}; }

/// The module's only function (what calling a module runs).
Function entry(const Module& m) {
  std::vector<std::string> names = m.function_names();
  if (names.size() != 1) {
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
    fail("this module has {} functions ({}): call one by name, module[\"name\"](...)", names.size(), list);
  }
  return get_function(m, names[0]);
}

/// An array object with __dlpack__ and the buffer protocol, owning `a`.
nb::ndarray<nb::array_api> wrap(runtime::NDArray a) {
  auto* owner = new runtime::NDArray(std::move(a));
  nb::capsule cap(owner, [](void* p) noexcept { delete static_cast<runtime::NDArray*>(p); });
  std::vector<size_t> shape(owner->shape().begin(), owner->shape().end());
  DLDataType t = owner->dtype().to_dlpack();
  return nb::ndarray<nb::array_api>(owner->raw_data(), shape.size(), shape.data(), cap, nullptr, nb::dlpack::dtype{t.code, t.bits, t.lanes},
                       owner->device().device_type, owner->device().device_id);
}

}  // namespace

void bind_runtime(nb::module_& m) {
  nb::class_<Function>(m, "Function", "A compiled function; call it with arrays (inputs, then outputs).")
      .def_prop_ro("name", [](const Function& f) { return f.f.name(); })
      .def("__call__", &call)
      .def("__repr__", [](const Function& f) { return "Function(" + f.f.name() + ")"; });

  nb::class_<Module>(m, "Module", "Compiled functions, JIT-ed by build() or loaded from a library.")
      .def_prop_ro("type_key", [](const Module& mod) { return mod->type_key(); })
      .def_prop_ro("function_names", &Module::function_names)
      .def_prop_ro("entry_name", [](const Module& mod) { return entry(mod).f.name(); })
      .def("__getitem__", &get_function, nb::arg("name"))
      .def("get_function", &get_function, nb::arg("name"))
      .def("__call__", [](const Module& mod, nb::args args) { call(entry(mod), args); },
           "Calls the module's only function.")
      .def("export_library", [](const Module& mod, const std::string& path) {
        nb::gil_scoped_release release;
        mod.export_library(path);
      }, nb::arg("path"), "Writes a self-contained shared library (and its C header) to `path`.")
      .def("export_object", [](const Module& mod, const std::string& path) {
        nb::gil_scoped_release release;
        mod.export_object(path);
      }, nb::arg("path"))
      .def("get_source", [](const Module& mod, const std::string& kind) { return mod.source(kind); },
           nb::arg("kind") = "ll", "Generated source: \"ll\", \"asm\", \"cuda\" or \"ptx\" (\"\" if not kept).")
      .def_prop_ro("info_json", &Module::info_json);

  m.def("build", [](const schedule::Schedule& s, const std::vector<te::Tensor>& args, const std::string& target,
                    const std::string& name, bool check_bounds) {
    lowering::LowerOptions opt;
    opt.target = Target(target);
    opt.check_accesses = check_bounds;
    nb::gil_scoped_release release;
    return codegen::build(s, args, name, opt);
  }, nb::arg("schedule"), nb::arg("args"), nb::arg("target") = "llvm", nb::arg("name") = "default_function",
     nb::arg("check_bounds") = false);
  m.def("load_module", [](const std::string& path) {
    nb::gil_scoped_release release;
    return Module::load(path);
  }, nb::arg("path"), "Loads a library written by Module.export_library.");

  m.def("nd_empty", [](std::vector<int64_t> shape, const std::string& dtype) {
    return wrap(runtime::NDArray::empty(std::move(shape), DataType::parse(dtype)));
  }, nb::arg("shape"), nb::arg("dtype") = "float32", "A new 64-byte aligned host array (uninitialized).");
  m.def("nd_import", [](nb::handle obj) {
    nb::ndarray<> a;
    if (!nb::try_cast(obj, a, false)) fail("from_dlpack: a {} is not an array with __dlpack__", py_type_name(obj));
    return nb::ndarray<nb::array_api>(a);
  }, nb::arg("obj"), "The array of a DLPack object, sharing its memory.");
  m.def("array_data_pointer", [](nb::handle obj) {
    CallArgs a("data_pointer", nb::make_tuple(obj));
    const DLTensor* t = a.ptrs()[0];
    return uintptr_t(static_cast<char*>(t->data) + t->byte_offset);
  }, nb::arg("array"), "The address of the first element as a compiled function receives it (the same conversion as a call's).");

  m.def("bench_cpp_call", [](const Function& fn, nb::args args) {
    // The same call as Function.__call__ makes, timed in C++: what calling from C++ costs.
    size_t n = nb::cast<size_t>(args[args.size() - 1]);
    nb::list arrays;
    for (size_t i = 0; i + 1 < args.size(); ++i) arrays.append(args[i]);
    CallArgs a(fn.f.name(), nb::tuple(arrays));
    std::vector<DLTensor*> ptrs = a.ptrs();
    nb::gil_scoped_release release;
    auto t0 = std::chrono::steady_clock::now();
    for (size_t i = 0; i < n; ++i) fn.f.call(ptrs);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / double(n);
  }, "bench_cpp_call(function, *arrays, number): seconds per call of `function` made from C++.");
}

}  // namespace loom::python
