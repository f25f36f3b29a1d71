// make_packed_api: the checked entry of a packed call. Every argument arrives as a
// DLTensor*; the body first checks it against the function's expectations and then binds
// the data pointer the loops use.
//
// Alignment contract with the code generators: the data pointer is checked to be aligned to
// the element size (at least); compiled code must not assume more.
#include "loom/lower/passes.h"
#include "loom/te/arith.h"
#include "loom/te/tensor.h"

namespace loom::lowering {

namespace {

Expr intrin(DataType t, const char* name, std::vector<Expr> args) { return te::call(t, name, std::move(args)); }

Expr i64(int64_t v) { return te::make_const(DataType::Int(64), v); }
Expr i32(int64_t v) { return te::make_const(DataType::Int(32), v); }

}  // namespace

LoweredFunc make_packed_api(LoweredFunc f, int device_type) {
  LOOM_CHECK(!f.packed, "make_packed_api: function '{}' is already packed", f.name);
  std::vector<Stmt> prologue;
  auto check = [&](Expr cond, std::string msg) { prologue.push_back(make_stmt<AssertStmtNode>(cond, msg, no_op())); };
  for (size_t ai = 0; ai < f.args.size(); ++ai) {
    const BufferArg& a = f.args[ai];
    LOOM_CHECK(a.handle.defined() && a.data.defined(), "make_packed_api: argument {} of '{}' has no handle/data var",
               ai, f.name);
    std::string who = fmt::format("{}: argument {} ('{}')", f.name, ai, a.name);
    const Var& h = a.handle;
    check(!intrin(DataType::Bool(), "loom.handle_is_null", {h}), who + " is null");
    check(intrin(DataType::Int(32), "loom.dltensor_device_type", {h}) == i32(device_type),
          device_type == kDLCPU ? who + " must be on the CPU (device type kDLCPU)"
                                : fmt::format("{} must be on the GPU (device type {})", who,
                                              device_type == kDLCUDA ? "kDLCUDA" : std::to_string(device_type)));
    check(intrin(DataType::Int(32), "loom.dltensor_ndim", {h}) == i32(int64_t(a.shape.size())),
          fmt::format("{} has the wrong number of dimensions: must be {}", who, a.shape.size()));
    std::string dt = fmt::format("{} has the wrong dtype: must be {}", who, a.dtype.str());
    check(intrin(DataType::Int(32), "loom.dltensor_dtype_code", {h}) == i32(a.dtype.code()), dt);
    check(intrin(DataType::Int(32), "loom.dltensor_dtype_bits", {h}) == i32(a.dtype.bits()), dt);
    check(intrin(DataType::Int(32), "loom.dltensor_dtype_lanes", {h}) == i32(a.dtype.lanes()), dt);
    for (size_t d = 0; d < a.shape.size(); ++d) {
      Expr expected = te::simplify(te::cast(DataType::Int(64), a.shape[d]));
      check(intrin(DataType::Int(64), "loom.dltensor_shape", {h, i32(int64_t(d))}) == expected,
            fmt::format("{} has the wrong shape: dimension {} must be {}", who, d, te::to_string(a.shape[d])));
    }
    // Strides: null (compact) or exactly the compact row-major strides. Read only when
    // present, so a branch rather than an `||` that would evaluate both sides.
    std::vector<Stmt> stride_checks;
    Expr stride = i64(1);
    Expr shown = i32(1);  // the same product, in the shape's type, for the message
    for (size_t d = a.shape.size(); d-- > 0;) {
      Expr got = intrin(DataType::Int(64), "loom.dltensor_stride", {h, i32(int64_t(d))});
      stride_checks.insert(stride_checks.begin(),
                           make_stmt<AssertStmtNode>(got == stride,
                                                     fmt::format("{} must be compact row-major: stride of dimension {} "
                                                                 "must be {}",
                                                                 who, d, te::to_string(shown)),
                                                     no_op()));
      stride = te::simplify(stride * te::cast(DataType::Int(64), a.shape[d]));
      shown = te::simplify(shown * a.shape[d]);
    }
    if (!stride_checks.empty())
      prologue.push_back(make_stmt<IfThenElseNode>(!intrin(DataType::Bool(), "loom.dltensor_strides_is_null", {h}),
                                                   seq(std::move(stride_checks)), Stmt()));
    check(intrin(DataType::Int(64), "loom.dltensor_byte_offset", {h}) == i64(0), who + " must have byte_offset 0");
    int64_t align = std::max(1, a.dtype.element_of().bytes());
    check(te::floormod(intrin(DataType::Int(64), "loom.handle_to_int", {intrin(DataType::Handle(), "loom.dltensor_data", {h})}),
                       i64(align)) == i64(0),
          fmt::format("{} data pointer must be aligned to {} bytes", who, align));
  }
  // An output (an argument bound to a computed tensor) must not share memory with any other
  // argument: the compiled code takes the arguments not to alias, as graph libraries require of
  // theirs. Inputs may share memory with each other.
  auto is_output = [](const BufferArg& a) {
    return a.tensor.defined() && a.tensor.op()->kind != te::OpKind::kPlaceholder;
  };
  auto address = [](const BufferArg& a) {
    return intrin(DataType::Int(64), "loom.handle_to_int", {intrin(DataType::Handle(), "loom.dltensor_data", {a.handle})});
  };
  auto nbytes = [](const BufferArg& a) {
    Expr n = i64(int64_t(a.dtype.bytes()) * a.dtype.lanes());
    for (const Expr& d : a.shape) n = n * te::cast(DataType::Int(64), d);
    return te::simplify(n);
  };
  for (size_t o = 0; o < f.args.size(); ++o) {
    if (!is_output(f.args[o])) continue;
    for (size_t j = 0; j < f.args.size(); ++j) {
      if (j == o || (is_output(f.args[j]) && j > o)) continue;  // each pair of outputs once
      const BufferArg &out = f.args[o], &other = f.args[j];
      Expr no = nbytes(out), nj = nbytes(other);
      check(no == i64(0) || nj == i64(0) || address(out) + no <= address(other) || address(other) + nj <= address(out),
            fmt::format("{}: argument {} ('{}') overlaps argument {} ('{}'): an output must not share memory with "
                        "another argument",
                        f.name, o, out.name, j, other.name));
    }
  }
  Stmt body = f.body;
  for (size_t ai = f.args.size(); ai-- > 0;) {
    const BufferArg& a = f.args[ai];
    body = make_stmt<LetStmtNode>(a.data, intrin(DataType::Handle(), "loom.dltensor_data", {a.handle}), body);
  }
  prologue.push_back(body);
  f.body = seq(std::move(prologue));
  f.packed = true;
  return f;
}

}  // namespace loom::lowering
