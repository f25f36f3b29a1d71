// The expression IR shared by tensor expressions and the lowered loop IR.
//
// Nodes are immutable and reference counted; `Expr` is a handle. Variables compare by
// identity; `structural_equal`/`structural_hash` compare by structure.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "loom/runtime/data_type.h"
#include "loom/runtime/error.h"

namespace loom::te {

enum class ExprKind : uint8_t {
  IntImm, FloatImm, StringImm, Var,
  Add, Sub, Mul, Div, Mod, FloorDiv, FloorMod, Min, Max,
  EQ, NE, LT, LE, GT, GE, And, Or, Not,
  Select, Cast, Call, Let,
  ProducerLoad,  // read of a te::Tensor element (before storage flattening)
  Reduce,        // commutative reduction over reduce axes (only at the top of a compute body)
  Load,          // read of a flat buffer (after storage flattening)
  Ramp, Broadcast,  // vector index and splat (after vectorization)
};

struct ExprNode : std::enable_shared_from_this<ExprNode> {
  ExprNode(ExprKind k, DataType t) : kind(k), dtype(t) {}
  virtual ~ExprNode() = default;
  const ExprKind kind;
  const DataType dtype;
};

class Var;
class IterVar;

/// Handle to an expression node. Converts implicitly from int (int32) and float/double
/// (float32), so `A(i, k) * 2 + 1.0f` reads as written.
class Expr {
 public:
  Expr() = default;
  Expr(std::shared_ptr<const ExprNode> n) : node_(std::move(n)) {}  // NOLINT
  Expr(int v);     // NOLINT
  Expr(int64_t v);  // NOLINT
  Expr(float v);   // NOLINT
  Expr(double v);  // NOLINT
  Expr(const IterVar& iv);  // NOLINT: an iteration variable used as a value

  bool defined() const { return node_.get() != nullptr; }
  const ExprNode* get() const { return node_.get(); }
  const ExprNode* operator->() const { return node_.get(); }
  DataType dtype() const { return node_->dtype; }
  ExprKind kind() const { return node_->kind; }
  template <typename T>
  const T* as() const {
    return node_ && node_->kind == T::kKind ? static_cast<const T*>(node_.get()) : nullptr;
  }
  /// Identity comparison (same node). Use structural_equal for structure.
  bool same_as(const Expr& o) const { return node_ == o.node_; }
  const std::shared_ptr<const ExprNode>& node() const { return node_; }

 private:
  std::shared_ptr<const ExprNode> node_;
};

/// Wraps a node pointer that is already owned by a shared_ptr (every node is).
inline Expr to_expr(const ExprNode* n) { return Expr(n->shared_from_this()); }

// ---------------------------------------------------------------- leaf nodes
struct IntImmNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::IntImm;
  IntImmNode(DataType t, int64_t v) : ExprNode(kKind, t), value(v) {}
  int64_t value;
};
struct FloatImmNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::FloatImm;
  FloatImmNode(DataType t, double v) : ExprNode(kKind, t), value(v) {}
  double value;
};
struct StringImmNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::StringImm;
  explicit StringImmNode(std::string v) : ExprNode(kKind, DataType::Handle()), value(std::move(v)) {}
  std::string value;
};
struct VarNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Var;
  VarNode(std::string n, DataType t) : ExprNode(kKind, t), name(std::move(n)) {}
  std::string name;
};

/// A variable. Two Vars are the same variable only if they share a node.
class Var : public Expr {
 public:
  Var() = default;
  explicit Var(std::string name, DataType t = DataType::Int(32));
  explicit Var(std::shared_ptr<const VarNode> n) : Expr(std::move(n)) {}
  const VarNode* get() const { return static_cast<const VarNode*>(Expr::get()); }
  const VarNode* operator->() const { return get(); }
  const std::string& name() const { return get()->name; }
};

// ---------------------------------------------------------------- operators
template <ExprKind K>
struct BinaryNode : ExprNode {
  static constexpr ExprKind kKind = K;
  BinaryNode(DataType t, Expr a_, Expr b_) : ExprNode(K, t), a(std::move(a_)), b(std::move(b_)) {}
  Expr a, b;
};
using AddNode = BinaryNode<ExprKind::Add>;
using SubNode = BinaryNode<ExprKind::Sub>;
using MulNode = BinaryNode<ExprKind::Mul>;
using DivNode = BinaryNode<ExprKind::Div>;  // truncating for ints, true division for floats
using ModNode = BinaryNode<ExprKind::Mod>;  // truncating remainder
using FloorDivNode = BinaryNode<ExprKind::FloorDiv>;
using FloorModNode = BinaryNode<ExprKind::FloorMod>;
using MinNode = BinaryNode<ExprKind::Min>;
using MaxNode = BinaryNode<ExprKind::Max>;
using EQNode = BinaryNode<ExprKind::EQ>;
using NENode = BinaryNode<ExprKind::NE>;
using LTNode = BinaryNode<ExprKind::LT>;
using LENode = BinaryNode<ExprKind::LE>;
using GTNode = BinaryNode<ExprKind::GT>;
using GENode = BinaryNode<ExprKind::GE>;
using AndNode = BinaryNode<ExprKind::And>;
using OrNode = BinaryNode<ExprKind::Or>;

struct NotNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Not;
  explicit NotNode(Expr a_) : ExprNode(kKind, a_.dtype()), a(std::move(a_)) {}
  Expr a;
};
struct SelectNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Select;
  SelectNode(Expr c, Expr t, Expr f) : ExprNode(kKind, t.dtype()), cond(std::move(c)), true_value(std::move(t)), false_value(std::move(f)) {}
  Expr cond, true_value, false_value;
};
struct CastNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Cast;
  CastNode(DataType t, Expr v) : ExprNode(kKind, t), value(std::move(v)) {}
  Expr value;
};
/// A call of an intrinsic by name ("exp", "likely", "loom.address_of", …): every name, its
/// arity, types and purity are declared in te/intrinsics.h, which lower() checks calls against.
struct CallNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Call;
  CallNode(DataType t, std::string n, std::vector<Expr> a) : ExprNode(kKind, t), name(std::move(n)), args(std::move(a)) {}
  std::string name;
  std::vector<Expr> args;
};
struct LetNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Let;
  LetNode(Var v, Expr val, Expr b) : ExprNode(kKind, b.dtype()), var(std::move(v)), value(std::move(val)), body(std::move(b)) {}
  Var var;
  Expr value, body;
};

// ---------------------------------------------------------------- iteration and tensors
/// Half-open range [min, min + extent).
struct Range {
  Range() = default;
  Range(Expr min_, Expr extent_) : min(std::move(min_)), extent(std::move(extent_)) {}
  /// Range from begin to end, as users write `{0, 512}`.
  static Range from_begin_end(Expr begin, Expr end);
  Expr min, extent;
};

enum class IterVarType : uint8_t {
  kDataPar,      // a spatial axis of a compute
  kCommReduce,   // a reduction axis
  kThreadIndex,  // a GPU thread/block index or virtual thread
  kOrdered,      // must run in order (scan-like)
  kOpaque,       // not to be reordered
};

struct IterVarNode {
  Range dom;  // undefined for axes whose range comes from bound inference
  Var var;
  IterVarType type = IterVarType::kDataPar;
  std::string thread_tag;  // "threadIdx.x", "blockIdx.y", "vthread", … for kThreadIndex
};

/// An iteration variable: a Var with its domain and role (spatial, reduce, thread).
class IterVar {
 public:
  IterVar() = default;
  explicit IterVar(std::shared_ptr<const IterVarNode> n) : node_(std::move(n)) {}
  IterVar(Range dom, Var var, IterVarType type, std::string thread_tag = "");
  bool defined() const { return node_ != nullptr; }
  const IterVarNode* operator->() const { return node_.get(); }
  const IterVarNode* get() const { return node_.get(); }
  const Var& var() const { return node_->var; }
  const Range& dom() const { return node_->dom; }
  IterVarType type() const { return node_->type; }
  const std::string& name() const { return node_->var.name(); }
  bool same_as(const IterVar& o) const { return node_ == o.node_; }
  bool operator==(const IterVar& o) const { return node_ == o.node_; }
  bool operator!=(const IterVar& o) const { return node_ != o.node_; }
  const std::shared_ptr<const IterVarNode>& node() const { return node_; }

 private:
  std::shared_ptr<const IterVarNode> node_;
};

struct TensorNode;
/// A tensor produced by an operation (placeholder or compute). Defined in tensor.h.
class Tensor;

struct ProducerLoadNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::ProducerLoad;
  ProducerLoadNode(DataType t, std::shared_ptr<const TensorNode> p, std::vector<Expr> idx)
      : ExprNode(kKind, t), producer(std::move(p)), indices(std::move(idx)) {}
  std::shared_ptr<const TensorNode> producer;
  std::vector<Expr> indices;
};

/// A commutative reducer: combine(lhs, rhs) -> result, with an identity element, over
/// one or more values (a tuple reducer such as argmax has two).
struct CommReducerNode {
  std::vector<Var> lhs, rhs;
  std::vector<Expr> result;
  std::vector<Expr> identity;
};
using CommReducer = std::shared_ptr<const CommReducerNode>;

struct ReduceNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Reduce;
  ReduceNode(DataType t, CommReducer c, std::vector<Expr> src, std::vector<IterVar> ax, Expr cond, int vi, std::vector<Expr> init_)
      : ExprNode(kKind, t), combiner(std::move(c)), source(std::move(src)), axis(std::move(ax)), condition(std::move(cond)), value_index(vi), init(std::move(init_)) {}
  CommReducer combiner;
  std::vector<Expr> source;   // one per reducer value
  std::vector<IterVar> axis;  // reduce axes
  Expr condition;             // only elements where true take part
  int value_index;            // which reducer value this expression yields
  std::vector<Expr> init;     // optional initial values (else the identity)
};

struct LoadNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Load;
  LoadNode(DataType t, Var buf, Expr idx, Expr pred) : ExprNode(kKind, t), buffer_var(std::move(buf)), index(std::move(idx)), predicate(std::move(pred)) {}
  Var buffer_var;  // handle variable of the buffer
  Expr index;      // element index (a Ramp for a vector load)
  Expr predicate;  // lanes to load (undefined: all)
};
struct RampNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Ramp;
  RampNode(Expr b, Expr s, int l) : ExprNode(kKind, b.dtype().with_lanes(l)), base(std::move(b)), stride(std::move(s)), lanes(l) {}
  Expr base, stride;
  int lanes;
};
struct BroadcastNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Broadcast;
  BroadcastNode(Expr v, int l) : ExprNode(kKind, v.dtype().with_lanes(l)), value(std::move(v)), lanes(l) {}
  Expr value;
  int lanes;
};

// ---------------------------------------------------------------- construction helpers
Expr make_const(DataType t, double v);
Expr make_const(DataType t, int64_t v);
inline Expr make_const(DataType t, int v) { return make_const(t, int64_t(v)); }
Expr make_zero(DataType t);
/// The constant value if `e` is an integer constant (or a broadcast of one).
std::optional<int64_t> as_const_int(const Expr& e);
std::optional<double> as_const_float(const Expr& e);
inline bool is_const_int(const Expr& e, int64_t v) { auto c = as_const_int(e); return c && *c == v; }
inline bool is_zero(const Expr& e) { return is_const_int(e, 0); }
inline bool is_one(const Expr& e) { return is_const_int(e, 1); }

Expr operator+(Expr a, Expr b);
Expr operator-(Expr a, Expr b);
Expr operator*(Expr a, Expr b);
/// Division as C does it: true division for floats, truncation for integers.
Expr operator/(Expr a, Expr b);
/// Truncating remainder for integers.
Expr operator%(Expr a, Expr b);
Expr operator-(Expr a);
Expr operator==(Expr a, Expr b);
Expr operator!=(Expr a, Expr b);
Expr operator<(Expr a, Expr b);
Expr operator<=(Expr a, Expr b);
Expr operator>(Expr a, Expr b);
Expr operator>=(Expr a, Expr b);
Expr operator&&(Expr a, Expr b);
Expr operator||(Expr a, Expr b);
Expr operator!(Expr a);
Expr floordiv(Expr a, Expr b);
Expr floormod(Expr a, Expr b);
Expr truncdiv(Expr a, Expr b);
Expr truncmod(Expr a, Expr b);
Expr min(Expr a, Expr b);
Expr max(Expr a, Expr b);
Expr select(Expr cond, Expr t, Expr f);
Expr cast(DataType t, Expr v);
Expr exp(Expr x);
Expr log(Expr x);
Expr sqrt(Expr x);
Expr tanh(Expr x);
Expr sigmoid(Expr x);
Expr abs(Expr x);
Expr floor(Expr x);
Expr ceil(Expr x);
Expr round(Expr x);
Expr pow(Expr x, Expr y);
Expr erf(Expr x);
Expr call(DataType t, const std::string& name, std::vector<Expr> args);
/// Largest / smallest finite value of a type (used as reduction identities).
Expr max_value(DataType t);
Expr min_value(DataType t);

/// Raw node constructors without type promotion or folding (used by passes).
template <typename Node, typename... Args>
Expr make(Args&&... args) {
  return Expr(std::make_shared<const Node>(std::forward<Args>(args)...));
}

// ---------------------------------------------------------------- structure
/// Structural equality: variables an expression binds itself (Let, a reducer's lhs/rhs)
/// compare by position, other variables by identity.
bool structural_equal(const Expr& a, const Expr& b);
/// The same, inside binders of an enclosing IR (a loop nest's loop variables): each pair of
/// `bound` (outermost first) is one variable on both sides and compares by position too.
bool structural_equal(const Expr& a, const Expr& b, const std::vector<std::pair<const VarNode*, const VarNode*>>& bound);
/// A hash consistent with structural_equal.
size_t structural_hash(const Expr& e);
/// A hash consistent with the bound form of structural_equal; `bound` lists one side's
/// enclosing binders, outermost first.
size_t structural_hash(const Expr& e, const std::vector<const VarNode*>& bound);
/// Mixes `v` into the hash `seed`.
inline size_t hash_combine(size_t seed, size_t v) { return seed ^ (v + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2)); }
/// Readable text, e.g. "((i*32) + ii)".
std::string to_string(const Expr& e);
std::ostream& operator<<(std::ostream& os, const Expr& e);

struct ExprPtrHash {
  size_t operator()(const Expr& e) const { return std::hash<const void*>()(e.get()); }
};
struct ExprPtrEqual {
  bool operator()(const Expr& a, const Expr& b) const { return a.same_as(b); }
};

}  // namespace loom::te
