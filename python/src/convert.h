// Conversions and small handle types shared by the binding files.
#pragma once
#include <string>

#include "bindings.h"
#include "loom/te/expr.h"
#include "loom/te/op_registry.h"
#include "loom/te/tensor.h"
#include "loom/te/tensor_intrin.h"

namespace loom::python {

/// A Python int, float, bool, loom.te.Expr or IterVar as an expression (int32 for ints that fit);
/// anything else throws loom::Error naming its type.
te::Expr to_expr(nb::handle h);
/// The Python type name of `h`, for messages.
std::string py_type_name(nb::handle h);
/// Operator attributes from a dict of ints, floats, bools, strings and lists of numbers;
/// anything else throws loom::Error naming the attribute.
te::ops::Attrs to_attrs(nb::dict d);

/// te::Operation (a shared pointer to a const node) as a Python object.
struct Operation {
  te::Operation op;
};
/// te::TensorIntrin likewise.
struct TensorIntrin {
  te::TensorIntrin intrin;
};
}  // namespace loom::python
