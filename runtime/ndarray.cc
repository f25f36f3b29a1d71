// NDArray: owned, 64-byte aligned storage behind a DLTensor.
#include "loom/runtime/ndarray.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <random>

#include "loom/runtime/error.h"
#include "loom/runtime/float16.h"
#include "loom/runtime/shape.h"

namespace loom::runtime {

namespace {

std::string device_name(DLDevice dev) {
  switch (dev.device_type) {
    case kDLCPU: return "kDLCPU";
    case kDLCUDA: return "kDLCUDA";
    case kDLCUDAHost: return "kDLCUDAHost";
    case kDLCUDAManaged: return "kDLCUDAManaged";
    case kDLROCM: return "kDLROCM";
    case kDLOpenCL: return "kDLOpenCL";
    case kDLVulkan: return "kDLVulkan";
    case kDLMetal: return "kDLMetal";
    default: return fmt::format("device type {}", int(dev.device_type));
  }
}

struct DeviceRegistry {
  std::mutex mu;
  std::vector<std::pair<DLDeviceType, DeviceAPI>> apis;
};

DeviceRegistry& registry() {
  static DeviceRegistry* r = new DeviceRegistry();
  return *r;
}

/// The registered API of a non-CPU device; throws if its runtime is not loaded.
DeviceAPI device_api(DLDevice dev) {
  auto& r = registry();
  std::lock_guard<std::mutex> lk(r.mu);
  for (const auto& [t, api] : r.apis)
    if (t == dev.device_type) return api;
  fail("device {} arrays need a runtime for that device, and none is registered", device_name(dev));
}

size_t round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

}  // namespace

void register_device_api(DLDeviceType type, DeviceAPI api) {
  LOOM_CHECK(type != kDLCPU, "register_device_api: kDLCPU memory is managed by NDArray itself");
  LOOM_CHECK(api.alloc && api.free && api.copy, "register_device_api: every operation must be given");
  auto& r = registry();
  std::lock_guard<std::mutex> lk(r.mu);
  for (auto& [t, a] : r.apis)
    if (t == type) {
      a = api;
      return;
    }
  r.apis.emplace_back(type, api);
}

struct NDArray::Node {
  std::vector<int64_t> shape;
  DataType dtype;
  DLDevice dev{kDLCPU, 0};
  size_t nbytes = 0;
  DLTensor tensor{};

  ~Node() {
    if (!tensor.data) return;
    if (dev.device_type == kDLCPU) std::free(tensor.data);
    else device_api(dev).free(dev, tensor.data);
  }
};

NDArray NDArray::empty(std::vector<int64_t> shape, DataType dtype, DLDevice dev) {
  LOOM_CHECK(!dtype.is_void() && dtype.bits() > 0, "NDArray::empty: data type {} has no storage", dtype.str());
  int64_t nbytes = checked_byte_count(shape, dtype, "NDArray::empty");
  auto n = std::make_shared<Node>();
  n->shape = std::move(shape);
  n->dtype = dtype;
  n->dev = dev;
  n->nbytes = size_t(nbytes);
  size_t alloc = round_up(std::max<size_t>(n->nbytes, 1), kAllocAlignment);
  void* data;
  if (dev.device_type == kDLCPU) {
    data = std::aligned_alloc(kAllocAlignment, alloc);
    LOOM_CHECK(data != nullptr, "NDArray::empty: out of memory allocating {} bytes for shape {}", alloc, shape_str(n->shape));
  } else {
    data = device_api(dev).alloc(dev, alloc);
    LOOM_CHECK(data != nullptr, "NDArray::empty: out of memory allocating {} bytes on {}", alloc, device_name(dev));
  }
  DLTensor& t = n->tensor;
  t.data = data;
  t.device = dev;
  t.ndim = int32_t(n->shape.size());
  t.dtype = dtype.to_dlpack();
  t.shape = n->shape.data();
  t.strides = nullptr;
  t.byte_offset = 0;
  NDArray a;
  a.node_ = std::move(n);
  return a;
}

NDArray NDArray::from_vector(const std::vector<double>& values, std::vector<int64_t> shape, DataType dtype) {
  NDArray a = empty(std::move(shape), dtype);
  LOOM_CHECK(int64_t(values.size()) == a.numel() * dtype.lanes(),
             "NDArray::from_vector: {} values given for {} elements of type {}", values.size(),
             a.numel() * dtype.lanes(), dtype.str());
  for (size_t i = 0; i < values.size(); ++i) a.set(int64_t(i), values[i]);
  return a;
}

#define LOOM_NDARRAY_DEFINED(what) LOOM_CHECK(node_ != nullptr, "NDArray::{}: the array is undefined", what)

DLTensor* NDArray::dltensor() const {
  LOOM_NDARRAY_DEFINED("dltensor");
  return &node_->tensor;
}

void* NDArray::raw_data() const {
  LOOM_NDARRAY_DEFINED("data");
  return node_->tensor.data;
}

const std::vector<int64_t>& NDArray::shape() const {
  LOOM_NDARRAY_DEFINED("shape");
  return node_->shape;
}

int64_t NDArray::numel() const {
  int64_t n = 1;
  for (int64_t d : shape()) n *= d;
  return n;
}

size_t NDArray::nbytes() const {
  LOOM_NDARRAY_DEFINED("nbytes");
  return node_->nbytes;
}

DataType NDArray::dtype() const {
  LOOM_NDARRAY_DEFINED("dtype");
  return node_->dtype;
}

DLDevice NDArray::device() const {
  LOOM_NDARRAY_DEFINED("device");
  return node_->dev;
}

namespace {

/// Converts to an integer type the way a C cast would, without undefined behaviour on
/// out-of-range or non-finite values (those saturate; NaN becomes 0).
template <typename T>
T to_integer(double v) {
  if (std::isnan(v)) return T(0);
  double t = std::trunc(v);
  if constexpr (std::is_signed_v<T>) {
    if (t <= -9223372036854775808.0) return T(std::numeric_limits<int64_t>::min());
    if (t >= 9223372036854775808.0) return T(std::numeric_limits<int64_t>::max());
    return T(int64_t(t));
  } else {
    if (t < 0) return T(int64_t(std::max(t, -9223372036854775808.0)));
    if (t >= 18446744073709551616.0) return T(std::numeric_limits<uint64_t>::max());
    return T(uint64_t(t));
  }
}

}  // namespace

double NDArray::get(int64_t i) const {
  LOOM_NDARRAY_DEFINED("get");
  LOOM_CHECK(node_->dev.device_type == kDLCPU, "NDArray::get: the array is on {}; copy it to the host first",
             device_name(node_->dev));
  DataType t = node_->dtype;
  int64_t n = numel() * t.lanes();
  LOOM_CHECK(i >= 0 && i < n, "NDArray::get: index {} out of range [0, {})", i, n);
  const void* p = static_cast<const char*>(node_->tensor.data) + i * t.bytes();
  switch (t.code()) {
    case DataType::kFloat:
      if (t.bits() == 16) return half_to_float(*static_cast<const uint16_t*>(p));
      if (t.bits() == 32) return *static_cast<const float*>(p);
      if (t.bits() == 64) return *static_cast<const double*>(p);
      break;
    case DataType::kInt:
      if (t.bits() == 8) return *static_cast<const int8_t*>(p);
      if (t.bits() == 16) return *static_cast<const int16_t*>(p);
      if (t.bits() == 32) return *static_cast<const int32_t*>(p);
      if (t.bits() == 64) return double(*static_cast<const int64_t*>(p));
      break;
    case DataType::kUInt:
      if (t.bits() == 8) return *static_cast<const uint8_t*>(p);
      if (t.bits() == 16) return *static_cast<const uint16_t*>(p);
      if (t.bits() == 32) return *static_cast<const uint32_t*>(p);
      if (t.bits() == 64) return double(*static_cast<const uint64_t*>(p));
      break;
    case DataType::kBool:
      return *static_cast<const uint8_t*>(p) != 0 ? 1.0 : 0.0;
    default:
      break;
  }
  fail("NDArray::get: elements of type {} cannot be read as numbers", t.str());
}

void NDArray::set(int64_t i, double v) {
  LOOM_NDARRAY_DEFINED("set");
  LOOM_CHECK(node_->dev.device_type == kDLCPU, "NDArray::set: the array is on {}; set a host array and copy it",
             device_name(node_->dev));
  DataType t = node_->dtype;
  int64_t n = numel() * t.lanes();
  LOOM_CHECK(i >= 0 && i < n, "NDArray::set: index {} out of range [0, {})", i, n);
  void* p = static_cast<char*>(node_->tensor.data) + i * t.bytes();
  switch (t.code()) {
    case DataType::kFloat:
      if (t.bits() == 16) { *static_cast<uint16_t*>(p) = float_to_half(float(v)); return; }
      if (t.bits() == 32) { *static_cast<float*>(p) = float(v); return; }
      if (t.bits() == 64) { *static_cast<double*>(p) = v; return; }
      break;
    case DataType::kInt:
      if (t.bits() == 8) { *static_cast<int8_t*>(p) = to_integer<int8_t>(v); return; }
      if (t.bits() == 16) { *static_cast<int16_t*>(p) = to_integer<int16_t>(v); return; }
      if (t.bits() == 32) { *static_cast<int32_t*>(p) = to_integer<int32_t>(v); return; }
      if (t.bits() == 64) { *static_cast<int64_t*>(p) = to_integer<int64_t>(v); return; }
      break;
    case DataType::kUInt:
      if (t.bits() == 8) { *static_cast<uint8_t*>(p) = to_integer<uint8_t>(v); return; }
      if (t.bits() == 16) { *static_cast<uint16_t*>(p) = to_integer<uint16_t>(v); return; }
      if (t.bits() == 32) { *static_cast<uint32_t*>(p) = to_integer<uint32_t>(v); return; }
      if (t.bits() == 64) { *static_cast<uint64_t*>(p) = to_integer<uint64_t>(v); return; }
      break;
    case DataType::kBool:
      *static_cast<uint8_t*>(p) = v != 0.0 ? 1 : 0;
      return;
    default:
      break;
  }
  fail("NDArray::set: elements of type {} cannot be written as numbers", t.str());
}

void NDArray::fill_random(uint64_t seed, double lo, double hi) {
  LOOM_NDARRAY_DEFINED("fill_random");
  LOOM_CHECK(lo <= hi, "NDArray::fill_random: empty range [{}, {})", lo, hi);
  DataType t = node_->dtype;
  int64_t n = numel() * t.lanes();
  std::mt19937_64 rng(seed);
  if (t.is_float()) {
    std::uniform_real_distribution<double> dist(lo, hi);
    for (int64_t i = 0; i < n; ++i) set(i, dist(rng));
  } else if (t.is_bool()) {
    std::uniform_int_distribution<int> dist(0, 1);
    for (int64_t i = 0; i < n; ++i) set(i, dist(rng));
  } else if (t.is_integer()) {
    double a = std::ceil(lo), b = std::floor(hi);
    if (t.is_uint()) a = std::max(a, 0.0);
    LOOM_CHECK(a <= b, "NDArray::fill_random: no {} value in [{}, {}]", t.str(), lo, hi);
    std::uniform_int_distribution<int64_t> dist(to_integer<int64_t>(a), to_integer<int64_t>(b));
    for (int64_t i = 0; i < n; ++i) set(i, double(dist(rng)));
  } else {
    fail("NDArray::fill_random: elements of type {} are not numbers", t.str());
  }
}

NDArray NDArray::copy() const {
  LOOM_NDARRAY_DEFINED("copy");
  NDArray out = empty(node_->shape, node_->dtype, node_->dev);
  out.copy_from(*this);
  return out;
}

void NDArray::copy_from(const NDArray& other) {
  LOOM_NDARRAY_DEFINED("copy_from");
  LOOM_CHECK(other.defined(), "NDArray::copy_from: the source array is undefined");
  LOOM_CHECK(other.shape() == shape(), "NDArray::copy_from: shape [{}] differs from [{}]",
             fmt::join(other.shape(), ", "), fmt::join(shape(), ", "));
  LOOM_CHECK(other.dtype() == dtype(), "NDArray::copy_from: type {} differs from {}", other.dtype().str(),
             dtype().str());
  if (other.node_ == node_ || node_->nbytes == 0) return;
  DLDevice src = other.device(), dst = device();
  if (src.device_type == kDLCPU && dst.device_type == kDLCPU) {
    std::memcpy(node_->tensor.data, other.node_->tensor.data, node_->nbytes);
    return;
  }
  DeviceAPI api = device_api(src.device_type != kDLCPU ? src : dst);
  api.copy(other.node_->tensor.data, src, node_->tensor.data, dst, node_->nbytes);
}

}  // namespace loom::runtime
