// Tensor intrinsics: an instruction (or short sequence) that computes a whole small tensor
// operation, declared by a te computation stating what it computes and by its
// implementation, what the code generator emits instead of the loop nest.
// `Stage::tensorize(axis, intrin)` puts one in place of the loops under `axis`; lowering
// (lower/tensorize.cc) checks that those loops compute exactly what the declaration states.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "loom/te/tensor.h"

namespace loom::te {

/// The region of a buffer that a tensor intrinsic's tensor is bound to in a matched loop
/// nest: element (i_0, …, i_{d-1}) of the intrinsic's tensor is element
/// elem_offset + Σ_k i_k·strides[k] of `data`.
struct BufferRegion {
  Var data;                    // the buffer (its handle variable); undefined if not bound
  DataType dtype;              // element type
  Expr elem_offset;            // flat index of element (0, …, 0)
  std::vector<Expr> strides;   // one per dimension of the intrinsic's tensor, in elements
  std::vector<int64_t> shape;  // the intrinsic's tensor's shape
  std::string name;            // the buffer's name, for messages

  bool defined() const { return data.defined(); }
  /// A handle to element elem_offset + `offset`.
  Expr access_ptr(Expr offset = 0) const;
  /// `lanes` consecutive elements from elem_offset + `offset`, as one vector load.
  Expr vload(Expr offset, int lanes) const;
  /// True if the region is one contiguous row-major block (strides those of `shape`).
  bool is_dense() const;
  /// The strides as text, "(64, 4, 1)".
  std::string strides_str() const;
};

/// What the code generator computes in place of a matched nest, given the regions bound to
/// the intrinsic's inputs (in declaration order) and to its output. A void-typed expression
/// is evaluated for its effect (a call that writes memory); an expression of n lanes is the
/// new value of the output region, stored as one vector: the region must be dense and hold
/// n elements. It may throw loom::Error when the regions do not suit it (a stride it cannot
/// handle); lowering adds the stage and axis to the message.
using TensorIntrinImpl = std::function<Expr(const std::vector<BufferRegion>& inputs, const BufferRegion& output)>;

/// A declared tensor intrinsic.
struct TensorIntrinNode {
  std::string name;
  /// What it computes: a compute over placeholders only, every axis of constant extent >= 2,
  /// every input indexed by one of its axes per dimension.
  Tensor output;
  /// The placeholders `output` reads, in the order the implementation receives them.
  std::vector<Tensor> inputs;
  /// Computes the output region from nothing (for a reduction: reset, then update, when
  /// absent).
  TensorIntrinImpl body;
  /// Reductions: sets the output region to the reduction's initial value. Its inputs are
  /// unbound (BufferRegion::defined() is false): it runs where the loop nest initializes.
  TensorIntrinImpl reset;
  /// Reductions: folds the inputs' contribution into the output region.
  TensorIntrinImpl update;
  /// One line for messages and documentation.
  std::string doc;

  bool is_reduction() const;
};
using TensorIntrin = std::shared_ptr<const TensorIntrinNode>;

/// Declares a tensor intrinsic; throws loom::Error naming what is wrong with the
/// declaration. A reduction needs reset and update (body is optional); anything else needs
/// body.
TensorIntrin decl_tensor_intrin(std::string name, Tensor output, std::vector<Tensor> inputs, TensorIntrinImpl body,
                                TensorIntrinImpl reset = {}, TensorIntrinImpl update = {}, std::string doc = "");

}  // namespace loom::te
