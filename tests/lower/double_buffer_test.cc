// inject_double_buffer on statements built by hand, its barriers after thread_sync, and the
// double_buffer primitive through lower() for cuda (IR) and llvm (ignored, still correct).
#include <gtest/gtest.h>

#include <sstream>

#include "common/test_util.h"
#include "loom/lower/ir_visitor.h"
#include "loom/lower/passes.h"
#include "loom/te/arith.h"

namespace loom::lowering {
namespace {

using te::make;

const DataType f32 = DataType::Float(32);

Var buf(const std::string& name) { return Var(name, DataType::Handle()); }
Expr load(const Var& b, Expr idx) { return make<te::LoadNode>(f32, b, std::move(idx), Expr()); }
Stmt store(const Var& b, Expr v, Expr idx) { return make_stmt<StoreNode>(b, std::move(v), std::move(idx), Expr()); }
Stmt loop(const Var& v, Expr mn, Expr ext, Stmt body, ForKind kind = ForKind::kSerial) {
  return make_stmt<ForNode>(v, std::move(mn), std::move(ext), kind, std::move(body));
}
Stmt shared_alloc(const Var& b, int64_t n, Stmt body, bool marked = true) {
  Stmt s = make_stmt<AllocateNode>(b, f32, std::vector<Expr>{Expr(int(n))}, "shared", std::move(body));
  if (marked) s = make_stmt<AttrStmtNode>(te::IterVar(), b, attr::kDoubleBuffer, Expr(1), s);
  return make_stmt<AttrStmtNode>(te::IterVar(), b, attr::kStorageScope, te::make<te::StringImmNode>("shared"), s);
}
Stmt thread(const te::IterVar& iv, int64_t ext, Stmt body) {
  return make_stmt<AttrStmtNode>(iv, Var(), attr::kThreadExtent, Expr(int(ext)), std::move(body));
}

bool is_barrier(const Stmt& s) {
  const auto* e = s.as<EvaluateNode>();
  const auto* c = e ? e->value.as<te::CallNode>() : nullptr;
  return c && c->name == kSyncThreads;
}
int count_barriers(const Stmt& s) {
  int n = 0;
  post_order_visit(s, [&](const Stmt& x) { n += is_barrier(x); });
  return n;
}
std::vector<const StoreNode*> stores_to(const Stmt& s, const Var& b) {
  std::vector<const StoreNode*> out;
  post_order_visit(s, [&](const Stmt& x) {
    if (const auto* st = x.as<StoreNode>(); st && st->buffer_var.same_as(b)) out.push_back(st);
  });
  return out;
}
const ForNode* find_loop(const Stmt& s, const Var& v) {
  const ForNode* out = nullptr;
  post_order_visit(s, [&](const Stmt& x) {
    if (const auto* f = x.as<ForNode>(); f && f->loop_var.same_as(v)) out = f;
  });
  return out;
}
int count(const std::string& s, const std::string& what) {
  int n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

/// thread tx (8) { for k in 0..4 { alloc S[8] shared { S[tx] = In[k * 8 + tx];
///   for j in 0..8: Out[tx] = Out[tx] + S[j] } } }
struct Kernel {
  te::IterVar tx = te::thread_axis("threadIdx.x");
  Var S = buf("S"), In = buf("In"), Out = buf("Out"), k{"k"}, j{"j"};
  Stmt make(ForKind kind = ForKind::kSerial, bool marked = true) const {
    Expr t = tx.var();
    Stmt fetch = store(S, load(In, k * 8 + t), t);
    Stmt compute = loop(j, 0, 8, store(Out, load(Out, t) + load(S, j), t));
    return thread(tx, 8, loop(k, 0, 4, shared_alloc(S, 8, seq({fetch, compute}), marked), kind));
  }
};

TEST(InjectDoubleBuffer, FetchOfNextStepIntoTheOtherHalf) {
  // A fetch with an else branch is not staged through registers: it writes the other half
  // directly, at the start of the step.
  Kernel kn;
  Expr t = kn.tx.var();
  Stmt fetch = make_stmt<IfThenElseNode>(t < 4, store(kn.S, load(kn.In, kn.k * 8 + t), t), store(kn.S, Expr(0.0f), t));
  Stmt compute = loop(kn.j, 0, 8, store(kn.Out, load(kn.Out, t) + load(kn.S, kn.j), t));
  Stmt in = thread(kn.tx, 8, loop(kn.k, 0, 4, shared_alloc(kn.S, 8, seq({fetch, compute}))));
  Stmt out = inject_double_buffer(in);
  std::string text = to_string(out);
  // One allocation of twice the size, around the loop.
  const AllocateNode* a = nullptr;
  post_order_visit(out, [&](const Stmt& x) {
    if (const auto* al = x.as<AllocateNode>()) a = al;
  });
  ASSERT_NE(a, nullptr) << text;
  EXPECT_EQ(te::as_const_int(te::simplify(a->size())), 16) << text;
  EXPECT_NE(find_loop(a->body, kn.k), nullptr) << text;
  EXPECT_EQ(text.find("prefetch"), std::string::npos) << text;
  // The prologue (k = 0, half 0) before the loop; the fetch of k + 1 inside, guarded.
  auto st = stores_to(out, kn.S);
  ASSERT_EQ(st.size(), 4u) << text;
  EXPECT_EQ(te::to_string(st[0]->index), te::to_string(kn.tx.var())) << text;
  EXPECT_EQ(te::to_string(st[0]->value), "In[threadIdx.x]") << text;
  const ForNode* k = find_loop(out, kn.k);
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(stores_to(k->body, kn.S).size(), 2u) << text;
  EXPECT_NE(text.find("if ((k < 3))"), std::string::npos) << text;
  EXPECT_NE(te::to_string(st[2]->value).find("(k + 1)*8"), std::string::npos) << text;
  EXPECT_NE(te::to_string(st[2]->index).find("floormod(k + 1, 2)*8"), std::string::npos) << text;
  // Reads of the current half.
  EXPECT_NE(text.find("S[(floormod(k, 2)*8) + j]"), std::string::npos) << text;
  EXPECT_EQ(count(text, "double_buffer_scope"), 1) << text;
}

TEST(InjectDoubleBuffer, CopiesAreStagedThroughRegisters) {
  // A plain copy: the loads of step k + 1 go to a local array first thing in the step, the
  // stores of that array into the other half after the compute.
  Kernel kn;
  Stmt out = inject_double_buffer(kn.make());
  std::string text = to_string(out);
  const AllocateNode* regs = nullptr;
  post_order_visit(out, [&](const Stmt& x) {
    if (const auto* al = x.as<AllocateNode>(); al && al->buffer_var.name() == "S.prefetch") regs = al;
  });
  ASSERT_NE(regs, nullptr) << text;
  EXPECT_EQ(regs->scope, "local");
  EXPECT_EQ(te::as_const_int(te::simplify(regs->size())), 1) << text;
  const ForNode* k = find_loop(regs->body, kn.k);
  ASSERT_NE(k, nullptr) << text;
  const auto* body = k->body.as<SeqStmtNode>();
  ASSERT_NE(body, nullptr) << text;
  ASSERT_EQ(body->seq.size(), 3u) << text;
  // Step 1: registers = In of step k + 1.
  auto first = stores_to(body->seq[0], regs->buffer_var);
  ASSERT_EQ(first.size(), 1u) << text;
  EXPECT_NE(te::to_string(first[0]->value).find("(k + 1)*8"), std::string::npos) << text;
  EXPECT_TRUE(stores_to(body->seq[0], kn.S).empty()) << text;
  // Step 2: the compute on the current half; step 3: the other half = registers.
  EXPECT_NE(to_string(body->seq[1]).find("S[(floormod(k, 2)*8) + j]"), std::string::npos) << text;
  auto last = stores_to(body->seq[2], kn.S);
  ASSERT_EQ(last.size(), 1u) << text;
  EXPECT_EQ(te::to_string(last[0]->value), "S.prefetch[0]") << text;
  EXPECT_NE(te::to_string(last[0]->index).find("floormod(k + 1, 2)*8"), std::string::npos) << text;
  EXPECT_NE(to_string(body->seq[2]).find("double_buffer_scope"), std::string::npos) << text;
  EXPECT_EQ(count(text, "if ((k < 3))"), 2) << text;
}

TEST(InjectDoubleBuffer, ThreadSyncNeedsOneBarrierPerIteration) {
  Kernel kn;
  Stmt plain = thread_sync(strip_double_buffer(kn.make()));
  const ForNode* k0 = find_loop(plain, kn.k);
  ASSERT_NE(k0, nullptr);
  EXPECT_EQ(count_barriers(k0->body), 2) << plain;  // RAW after the fetch, WAR at the end

  Stmt out = thread_sync(inject_double_buffer(kn.make()));
  std::string text = to_string(out);
  const ForNode* k = find_loop(out, kn.k);
  ASSERT_NE(k, nullptr) << text;
  EXPECT_EQ(count_barriers(k->body), 1) << text;
  const auto* body = k->body.as<SeqStmtNode>();
  ASSERT_NE(body, nullptr) << text;
  EXPECT_TRUE(is_barrier(body->seq.back())) << text;  // at the end of the iteration
  EXPECT_EQ(count_barriers(out), 2) << text;           // and one after the prologue
  EXPECT_EQ(count(text, "double_buffer_scope"), 0) << text;
}

TEST(InjectDoubleBuffer, UnmatchedPatternsAreLeftAlone) {
  Kernel kn;
  // Not double-buffered, or the loop is not serial: same IR.
  Stmt unmarked = kn.make(ForKind::kSerial, false);
  EXPECT_TRUE(inject_double_buffer(unmarked).same_as(unmarked));
  Stmt unrolled = kn.make(ForKind::kUnrolled);
  EXPECT_EQ(to_string(inject_double_buffer(unrolled)), to_string(strip_double_buffer(unrolled)));
  // Not fetched inside a loop.
  Expr t = kn.tx.var();
  Stmt no_loop = thread(kn.tx, 8, shared_alloc(kn.S, 8, seq({store(kn.S, load(kn.In, t), t),
                                                              store(kn.Out, load(kn.S, 7 - t), t)})));
  EXPECT_EQ(to_string(inject_double_buffer(no_loop)), to_string(strip_double_buffer(no_loop)));
  // The buffer is read before it is written in the loop body.
  Stmt read_first = thread(
      kn.tx, 8,
      loop(kn.k, 0, 4,
           shared_alloc(kn.S, 8, seq({store(kn.Out, load(kn.S, t), t), store(kn.S, load(kn.In, kn.k * 8 + t), t)}))));
  EXPECT_EQ(to_string(inject_double_buffer(read_first)), to_string(strip_double_buffer(read_first)));
}

struct Matmul {
  te::Tensor A, B, C, AA, BB;
  schedule::Schedule s;
};
/// C = A B with A and B staged through shared tiles fetched at each step ko of the reduction.
Matmul make_matmul(int n, int kl, bool gpu) {
  Matmul m;
  m.A = te::placeholder({n, kl}, f32, "A");
  m.B = te::placeholder({kl, n}, f32, "B");
  te::IterVar r = te::reduce_axis({0, kl}, "k");
  te::Tensor A = m.A, B = m.B;
  m.C = te::compute({n, n}, [&](Var i, Var j) { return te::sum(A(i, r) * B(r, j), {r}); }, "C");
  schedule::Schedule s = schedule::create_schedule({m.C});
  m.AA = s.cache_read(m.A, gpu ? "shared" : "global", std::vector<te::Tensor>{m.C});
  m.BB = s.cache_read(m.B, gpu ? "shared" : "global", std::vector<te::Tensor>{m.C});
  auto C = s[m.C];
  auto [io, ii] = C.split(C.axis(0), 8);
  auto [jo, ji] = C.split(C.axis(1), 8);
  auto [ko, ki] = C.split(C.reduce_axis(0), 4);
  C.reorder({io, jo, ko, ii, ji, ki});
  if (gpu) {
    C.bind(io, te::thread_axis("blockIdx.y"));
    C.bind(jo, te::thread_axis("blockIdx.x"));
    C.bind(ii, te::thread_axis("threadIdx.y"));
    C.bind(ji, te::thread_axis("threadIdx.x"));
  }
  for (const te::Tensor& t : {m.AA, m.BB}) {
    s[t].compute_at(C, ko);
    if (gpu) {
      auto [a0, a1] = s[t].split(s[t].fuse(s[t].axis(0), s[t].axis(1)), 8);
      s[t].bind(a1, te::thread_axis("threadIdx.x"));
      (void)a0;
    }
    s[t].double_buffer();
  }
  m.s = s;
  return m;
}

TEST(DoubleBufferLowering, CudaPipelineDoublesTheSharedTiles) {
  Matmul m = make_matmul(32, 16, true);
  LowerOptions opts;
  opts.target = Target("cuda");
  std::ostringstream print;
  opts.print_after_all = &print;
  LoweredFunc f = lower(m.s, {m.A, m.B, m.C}, "f", opts);
  ASSERT_EQ(f.device_funcs.size(), 1u);
  const DeviceFunc& k = f.device_funcs[0];
  std::string body = to_string(k.body);
  EXPECT_EQ(k.shared_bytes, 2 * (8 * 4 + 4 * 8) * 4) << body;
  EXPECT_NE(print.str().find("after inject_double_buffer"), std::string::npos);
  EXPECT_NE(body.find("if ((k.outer < 3))"), std::string::npos) << body;
  EXPECT_NE(body.find("A.shared[(((floormod(k.outer + 1, 2)*32)"), std::string::npos) << body;
  EXPECT_NE(body.find("A.shared[((floormod(k.outer, 2)*32)"), std::string::npos) << body;
  // The prologue's loop, the next fetch staged through 4 registers (its loop unrolled), the read.
  EXPECT_EQ(count(body, "A.shared["), 1 + 4 + 1) << body;
  EXPECT_EQ(count(body, "A.shared.prefetch["), 4 + 4) << body;
}

TEST(DoubleBufferLowering, CpuIgnoresDoubleBuffer) {
  Matmul m = make_matmul(24, 12, false);
  std::ostringstream print;
  LowerOptions opts;
  opts.print_after_all = &print;
  LoweredFunc f = lower(m.s, {m.A, m.B, m.C}, "f", opts);
  EXPECT_EQ(to_string(f.body).find("double_buffer"), std::string::npos);
  EXPECT_EQ(print.str().find("after inject_double_buffer"), std::string::npos);
  EXPECT_EQ(test::compare_with_reference(m.s, {m.A, m.B, m.C}), "");
}

}  // namespace
}  // namespace loom::lowering
