// NumPy's .npy files for NDArrays: what `loom run` reads inputs from and writes outputs to.
#pragma once
#include <string>

#include "loom/runtime/ndarray.h"

namespace loom::runtime {

/// Reads a .npy file (format versions 1-3): little-endian (or byte-sized) bool, int8-64,
/// uint8-64, float16/32/64 in C order. Throws loom::Error naming the file and what is wrong
/// (not a .npy file, truncated, big-endian, Fortran order, an unsupported dtype).
NDArray load_npy(const std::string& path);

/// Writes a host array as a version 1.0 .npy file (C order, little-endian).
void save_npy(const std::string& path, const NDArray& array);

/// The numpy descriptor of `t`: "<f4", "|u1", "|b1"; throws for types numpy lacks.
std::string npy_descr(DataType t);

}  // namespace loom::runtime
