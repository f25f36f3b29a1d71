// NDArray: an owned, 64-byte aligned tensor described by a DLPack DLTensor.
#pragma once
#include <dlpack/dlpack.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "loom/runtime/data_type.h"

namespace loom::runtime {

inline constexpr size_t kAllocAlignment = 64;

/// Memory operations of a non-CPU device, registered by that device's runtime when it loads
/// (runtime/cuda). Without one, arrays on the device cannot be created or copied.
struct DeviceAPI {
  void* (*alloc)(DLDevice dev, size_t nbytes);
  void (*free)(DLDevice dev, void* ptr);
  /// Copies nbytes; either side may be host (kDLCPU) or the device.
  void (*copy)(const void* src, DLDevice src_dev, void* dst, DLDevice dst_dev, size_t nbytes);
};
void register_device_api(DLDeviceType type, DeviceAPI api);

/// A dense row-major tensor. Copies share storage; `copy()` makes a deep copy.
class NDArray {
 public:
  NDArray() = default;
  /// Uninitialized host (or device) memory of the given shape and dtype.
  static NDArray empty(std::vector<int64_t> shape, DataType dtype, DLDevice dev = {kDLCPU, 0});
  /// A host array filled from `values` (converted to dtype).
  static NDArray from_vector(const std::vector<double>& values, std::vector<int64_t> shape, DataType dtype);

  bool defined() const { return node_ != nullptr; }
  DLTensor* dltensor() const;
  void* raw_data() const;
  template <typename T>
  T* data() const { return static_cast<T*>(raw_data()); }
  const std::vector<int64_t>& shape() const;
  int ndim() const { return int(shape().size()); }
  int64_t numel() const;
  size_t nbytes() const;
  DataType dtype() const;
  DLDevice device() const;

  /// Element i of the flattened array converted to double (host arrays).
  double get(int64_t i) const;
  void set(int64_t i, double v);
  /// Fills with uniform values in [lo, hi) from a seeded generator (host arrays).
  void fill_random(uint64_t seed, double lo = -1.0, double hi = 1.0);
  NDArray copy() const;
  /// Copies between host and device arrays of the same shape and dtype.
  void copy_from(const NDArray& other);

 private:
  struct Node;
  std::shared_ptr<Node> node_;
};

}  // namespace loom::runtime
