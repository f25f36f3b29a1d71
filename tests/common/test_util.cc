#include "common/test_util.h"

#include <cmath>
#include <cstring>

#include "loom/codegen/cuda.h"
#include "loom/runtime/cuda.h"

namespace loom::test {

Tolerance tolerance_for(DataType t) {
  if (t.is_float()) return t.bits() == 16 ? Tolerance{2e-2, 2e-2} : Tolerance{1e-3, 1e-3};
  return {0, 0};
}

std::map<te::Tensor, runtime::NDArray> random_inputs(const std::vector<te::Tensor>& args, uint64_t seed) {
  std::map<te::Tensor, runtime::NDArray> inputs;
  for (const te::Tensor& t : args) {
    if (t.op()->kind != te::OpKind::kPlaceholder) continue;
    std::vector<int64_t> shape;
    for (const te::Expr& d : t.shape()) shape.push_back(*te::as_const_int(d));
    auto a = runtime::NDArray::empty(shape, t.dtype());
    DataType dt = t.dtype();
    if (dt.is_float()) a.fill_random(seed++, -1.0, 1.0);
    else if (dt.is_bool()) a.fill_random(seed++, 0, 1);
    else if (dt.is_uint()) a.fill_random(seed++, 0, 7);
    else a.fill_random(seed++, -4, 4);
    inputs[t] = a;
  }
  return inputs;
}

std::string compare_arrays(const runtime::NDArray& got, const runtime::NDArray& want, Tolerance tol,
                           const std::string& what) {
  if (got.numel() != want.numel()) return fmt::format("{}: {} elements, expected {}", what, got.numel(), want.numel());
  for (int64_t i = 0; i < got.numel(); ++i) {
    double g = got.get(i), w = want.get(i);
    bool ok = std::isnan(w) ? std::isnan(g) : std::abs(g - w) <= tol.atol + tol.rtol * std::abs(w);
    if (!ok) return fmt::format("{}: element {} is {}, expected {}", what, i, g, w);
  }
  return "";
}

std::string compare_with_reference(const schedule::Schedule& s, const std::vector<te::Tensor>& args, uint64_t seed,
                                   const Target& target) {
  try {
    auto inputs = random_inputs(args, seed);
    std::vector<te::Tensor> outputs;
    for (const te::Tensor& t : args) {
      if (t.op()->kind != te::OpKind::kPlaceholder) outputs.push_back(t);
    }
    std::vector<runtime::NDArray> want = te::evaluate(outputs, inputs);
    runtime::Module m = build(s, args, target, "f");
    // On a GPU target the arrays live on the device: inputs copied there, outputs back.
    const DLDevice dev = target.is_cuda() ? DLDevice{kDLCUDA, 0} : DLDevice{kDLCPU, 0};
    auto on_device = [&](const runtime::NDArray& h) {
      if (!target.is_cuda()) return h;
      runtime::NDArray d = runtime::NDArray::empty(h.shape(), h.dtype(), dev);
      d.copy_from(h);
      return d;
    };
    std::vector<runtime::NDArray> arrays;
    std::vector<DLTensor*> dl;
    size_t out_i = 0;
    std::vector<runtime::NDArray> got;
    for (const te::Tensor& t : args) {
      if (t.op()->kind == te::OpKind::kPlaceholder) {
        arrays.push_back(on_device(inputs.at(t)));
      } else {
        auto o = runtime::NDArray::empty(want[out_i].shape(), t.dtype());
        for (int64_t i = 0; i < o.numel(); ++i) o.set(i, 12345);  // catches unwritten elements
        arrays.push_back(on_device(o));
        got.push_back(arrays.back());
        ++out_i;
      }
      dl.push_back(arrays.back().dltensor());
    }
    m.get_function("f").call(dl);
    if (target.is_cuda()) runtime::cuda_synchronize();
    for (size_t i = 0; i < got.size(); ++i) {
      runtime::NDArray host = got[i];
      if (target.is_cuda()) {
        host = runtime::NDArray::empty(want[i].shape(), want[i].dtype());
        host.copy_from(got[i]);
      }
      std::string err = compare_arrays(host, want[i], tolerance_for(outputs[i].dtype()), outputs[i].name());
      if (!err.empty()) return err + "\n" + lowering::to_string(lowering::lower(s, args, "f", {target}));
    }
    return "";
  } catch (const std::exception& e) {
    return std::string("exception: ") + e.what();
  }
}

std::string compare_emulated_with_reference(const lowering::LoweredFunc& f, const std::vector<te::Tensor>& args,
                                            uint64_t seed, const Target& target) {
  try {
    auto inputs = random_inputs(args, seed);
    std::vector<te::Tensor> outputs;
    for (const te::Tensor& t : args)
      if (t.op()->kind != te::OpKind::kPlaceholder) outputs.push_back(t);
    std::vector<runtime::NDArray> want = te::evaluate(outputs, inputs);
    runtime::Module m = codegen::build_cuda_emulated({f}, target);
    std::vector<runtime::NDArray> arrays, got;
    std::vector<DLTensor*> dl;
    size_t out_i = 0;
    for (const te::Tensor& t : args) {
      if (t.op()->kind == te::OpKind::kPlaceholder) {
        arrays.push_back(inputs.at(t));
      } else {
        auto o = runtime::NDArray::empty(want[out_i].shape(), t.dtype());
        for (int64_t i = 0; i < o.numel(); ++i) o.set(i, 12345);  // catches unwritten elements
        arrays.push_back(o);
        got.push_back(o);
        ++out_i;
      }
      dl.push_back(arrays.back().dltensor());
    }
    m.get_function(f.name).call(dl);
    for (size_t i = 0; i < got.size(); ++i) {
      std::string err = compare_arrays(got[i], want[i], tolerance_for(outputs[i].dtype()), outputs[i].name());
      if (!err.empty()) return err;
    }
    return "";
  } catch (const std::exception& e) {
    return std::string("exception: ") + e.what();
  }
}

std::string compare_emulated_with_reference(const schedule::Schedule& s, const std::vector<te::Tensor>& args,
                                            uint64_t seed, const Target& target) {
  try {
    lowering::LowerOptions opts;
    opts.target = target;
    return compare_emulated_with_reference(lowering::lower(s, args, "f", opts), args, seed, target);
  } catch (const std::exception& e) {
    return std::string("exception: ") + e.what();
  }
}

std::string export_loader_input(const std::vector<runtime::NDArray>& args) {
  std::string in;
  auto put = [&](const void* p, size_t n) { in.append(static_cast<const char*>(p), n); };
  int32_t n = int32_t(args.size());
  put(&n, 4);
  for (const auto& a : args) {
    DLTensor* t = a.dltensor();
    int32_t hdr[4] = {t->dtype.code, t->dtype.bits, t->dtype.lanes, t->ndim};
    put(hdr, sizeof hdr);
    put(t->shape, sizeof(int64_t) * size_t(t->ndim));
    int64_t nb = int64_t(a.nbytes());
    put(&nb, 8);
    put(a.raw_data(), a.nbytes());
  }
  return in;
}

std::vector<std::string> export_loader_output(const std::string& file, size_t count) {
  std::vector<std::string> out;
  size_t off = 0;
  for (size_t i = 0; i < count; ++i) {
    int64_t nb = 0;
    LOOM_CHECK(off + 8 <= file.size(), "export_loader output: argument {} is missing", i);
    std::memcpy(&nb, file.data() + off, 8);
    off += 8;
    LOOM_CHECK(nb >= 0 && size_t(nb) <= file.size() - off, "export_loader output: argument {} is truncated", i);
    out.push_back(file.substr(off, size_t(nb)));
    off += size_t(nb);
  }
  return out;
}

}  // namespace loom::test
