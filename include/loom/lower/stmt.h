// Statements of the loop IR: what a schedule lowers to and what the passes transform.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "loom/te/expr.h"
#include "loom/te/tensor.h"

namespace loom::lowering {

using te::Expr;
using te::Range;
using te::Tensor;
using te::Var;

enum class StmtKind : uint8_t {
  LetStmt, AttrStmt, AssertStmt,
  ProducerStore, ProducerRealize,  // multi-dimensional, before storage flattening
  Store, Allocate,                 // flat buffers, after
  For, While, IfThenElse, Seq, Evaluate,
};

struct StmtNode : std::enable_shared_from_this<StmtNode> {
  explicit StmtNode(StmtKind k) : kind(k) {}
  virtual ~StmtNode() = default;
  const StmtKind kind;
};

/// Handle to a statement node.
class Stmt {
 public:
  Stmt() = default;
  Stmt(std::shared_ptr<const StmtNode> n) : node_(std::move(n)) {}  // NOLINT
  bool defined() const { return node_ != nullptr; }
  const StmtNode* get() const { return node_.get(); }
  const StmtNode* operator->() const { return node_.get(); }
  StmtKind kind() const { return node_->kind; }
  template <typename T>
  const T* as() const {
    return node_ && node_->kind == T::kKind ? static_cast<const T*>(node_.get()) : nullptr;
  }
  bool same_as(const Stmt& o) const { return node_ == o.node_; }

 private:
  std::shared_ptr<const StmtNode> node_;
};

inline Stmt to_stmt(const StmtNode* n) { return Stmt(n->shared_from_this()); }

struct LetStmtNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::LetStmt;
  LetStmtNode(Var v, Expr val, Stmt b) : StmtNode(kKind), var(std::move(v)), value(std::move(val)), body(std::move(b)) {}
  Var var;
  Expr value;
  Stmt body;
};

/// Attribute keys of AttrStmt.
namespace attr {
inline constexpr const char* kThreadExtent = "thread_extent";    // node: IterVar name; value: extent
inline constexpr const char* kVirtualThread = "virtual_thread";  // value: number of vthreads
inline constexpr const char* kStorageScope = "storage_scope";    // node: buffer var
inline constexpr const char* kRealizeScope = "realize_scope";
inline constexpr const char* kPragmaPrefix = "pragma_";          // pragma_unroll_explicit, …
/// On a parallel loop: one task per pool thread rather than the pool's 8 (codegen passes
/// LOOM_PARALLEL_TASK_PER_THREAD): for loops whose whole work is a few microseconds.
inline constexpr const char* kParallelTaskPerThread = "parallel_task_per_thread";
/// On a loop (Stage::pragma): loops inside it whose unrolled body would hold at most this many
/// stores are unrolled (lower/unroll_loops.cc; TVM's auto_unroll_max_step).
inline constexpr const char* kAutoUnrollMaxStep = "auto_unroll_max_step";
inline constexpr const char* kDoubleBuffer = "double_buffer_scope";
inline constexpr const char* kComputeScope = "compute_scope";    // body of one stage
/// Around the loop of an axis a stage tensorizes (node: that IterVar): value 0 on the loops
/// that compute, 1 on the loops that initialize a reduction. lower/tensorize.cc replaces it.
inline constexpr const char* kTensorize = "tensorize_scope";
}  // namespace attr

/// Annotates its body with (node, key, value). `node` names what it is about: an IterVar
/// for thread extents, a buffer Var for storage scopes, else undefined.
struct AttrStmtNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::AttrStmt;
  AttrStmtNode(te::IterVar iv, Var v, std::string k, Expr val, Stmt b)
      : StmtNode(kKind), iter_var(std::move(iv)), var(std::move(v)), key(std::move(k)), value(std::move(val)), body(std::move(b)) {}
  te::IterVar iter_var;  // for thread_extent / virtual_thread
  Var var;               // for buffer-scoped attributes
  std::string key;
  Expr value;
  Stmt body;
};

struct AssertStmtNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::AssertStmt;
  AssertStmtNode(Expr c, std::string m, Stmt b) : StmtNode(kKind), condition(std::move(c)), message(std::move(m)), body(std::move(b)) {}
  Expr condition;
  std::string message;
  Stmt body;
};

struct ProducerStoreNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::ProducerStore;
  ProducerStoreNode(Tensor t, Expr v, std::vector<Expr> idx) : StmtNode(kKind), tensor(std::move(t)), value(std::move(v)), indices(std::move(idx)) {}
  Tensor tensor;
  Expr value;
  std::vector<Expr> indices;
};

/// Declares the region of `tensor` that `body` computes, with its storage scope.
struct ProducerRealizeNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::ProducerRealize;
  ProducerRealizeNode(Tensor t, std::vector<Range> b, std::string s, Stmt bd)
      : StmtNode(kKind), tensor(std::move(t)), bounds(std::move(b)), scope(std::move(s)), body(std::move(bd)) {}
  Tensor tensor;
  std::vector<Range> bounds;
  std::string scope;  // "global", "shared", "local"
  Stmt body;
  /// storage_align per dimension: (factor, offset), 0 factor when none.
  std::vector<std::pair<int, int>> align;
  /// storage_order: the dimensions in the order they are laid out, outermost first (empty:
  /// 0, 1, …).
  std::vector<int> order;
};

struct StoreNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Store;
  StoreNode(Var buf, Expr v, Expr idx, Expr pred) : StmtNode(kKind), buffer_var(std::move(buf)), value(std::move(v)), index(std::move(idx)), predicate(std::move(pred)) {}
  Var buffer_var;
  Expr value;
  Expr index;
  Expr predicate;  // lanes to store (undefined: all)
};

struct AllocateNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Allocate;
  AllocateNode(Var buf, DataType t, std::vector<Expr> ext, std::string s, Stmt b)
      : StmtNode(kKind), buffer_var(std::move(buf)), dtype(t), extents(std::move(ext)), scope(std::move(s)), body(std::move(b)) {}
  Var buffer_var;
  DataType dtype;
  std::vector<Expr> extents;
  std::string scope;
  Stmt body;
  /// Number of elements (product of extents).
  Expr size() const;
};

enum class ForKind : uint8_t { kSerial, kParallel, kVectorized, kUnrolled, kThreadBinding };
const char* to_string(ForKind k);

struct ForNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::For;
  ForNode(Var v, Expr mn, Expr ext, ForKind k, Stmt b, std::string tag = "")
      : StmtNode(kKind), loop_var(std::move(v)), min(std::move(mn)), extent(std::move(ext)), for_kind(k), body(std::move(b)), thread_tag(std::move(tag)) {}
  Var loop_var;
  Expr min, extent;
  ForKind for_kind;
  Stmt body;
  std::string thread_tag;  // for kThreadBinding
  /// Pragmas and hints ("pragma_unroll_explicit" → 1, …).
  std::map<std::string, Expr> annotations;
};

struct WhileNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::While;
  WhileNode(Expr c, Stmt b) : StmtNode(kKind), condition(std::move(c)), body(std::move(b)) {}
  Expr condition;
  Stmt body;
};

struct IfThenElseNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::IfThenElse;
  IfThenElseNode(Expr c, Stmt t, Stmt e) : StmtNode(kKind), condition(std::move(c)), then_case(std::move(t)), else_case(std::move(e)) {}
  Expr condition;
  Stmt then_case, else_case;  // else_case may be undefined
};

struct SeqStmtNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Seq;
  explicit SeqStmtNode(std::vector<Stmt> s) : StmtNode(kKind), seq(std::move(s)) {}
  std::vector<Stmt> seq;
};

struct EvaluateNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Evaluate;
  explicit EvaluateNode(Expr v) : StmtNode(kKind), value(std::move(v)) {}
  Expr value;
};

template <typename Node, typename... Args>
Stmt make_stmt(Args&&... args) {
  return Stmt(std::make_shared<const Node>(std::forward<Args>(args)...));
}
/// A sequence, flattening nested sequences and dropping undefined parts; one element
/// is returned as itself.
Stmt seq(std::vector<Stmt> parts);
/// A no-op statement.
Stmt no_op();
bool is_no_op(const Stmt& s);

/// Structural equality of statements: the same kinds, fields and expressions (compared with
/// te::structural_equal). Variables a statement binds (a For's loop variable, a LetStmt's
/// variable, an Allocate's buffer) compare by position, so two nests that differ only in the
/// names or identities of their loop variables are equal; free variables and tensors compare
/// by identity.
bool structural_equal(const Stmt& a, const Stmt& b);
/// A hash consistent with structural_equal.
size_t structural_hash(const Stmt& s);

/// Readable text of a statement (indented C-like loops).
std::string to_string(const Stmt& s);
std::ostream& operator<<(std::ostream& os, const Stmt& s);

}  // namespace loom::lowering
