// Unit tests of the GPU passes on statements built by hand: virtual thread injection,
// barrier placement, host/device split, GPU verification, thread binding check.
#include <gtest/gtest.h>

#include <set>

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
Stmt loop(const Var& v, Expr mn, Expr ext, Stmt body) {
  return make_stmt<ForNode>(v, std::move(mn), std::move(ext), ForKind::kSerial, std::move(body));
}
Stmt alloc(const Var& b, int64_t n, const std::string& scope, Stmt body) {
  return make_stmt<AllocateNode>(b, f32, std::vector<Expr>{Expr(int(n))}, scope, std::move(body));
}
Stmt thread(const te::IterVar& iv, int64_t ext, Stmt body) {
  return make_stmt<AttrStmtNode>(iv, Var(), attr::kThreadExtent, Expr(int(ext)), std::move(body));
}
Stmt barrier() { return make_stmt<EvaluateNode>(te::call(DataType::Int(32), kSyncThreads, {})); }

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
std::vector<const StoreNode*> stores(const Stmt& s) {
  std::vector<const StoreNode*> out;
  post_order_visit(s, [&](const Stmt& x) {
    if (const auto* st = x.as<StoreNode>()) out.push_back(st);
  });
  // post_order_visit of a sequence visits parts in order, so these are in program order.
  return out;
}

// ---------------------------------------------------------------- inject_virtual_thread
TEST(InjectVirtualThread, ExpandsLocalBuffersAndReplicatesDependentWork) {
  te::IterVar vt = te::thread_axis("vthread");
  Var out = buf("Out"), in = buf("In"), local = buf("L"), shared = buf("S"), i("i"), j("j"), v("v");
  // attr vthread = 2 { let v = vthread; S[j] = In[j] (independent); alloc L[4] local {
  //   for i in 0..4: L[i] = S[v * 4 + i]; for i in 0..4: Out[v * 4 + i] = L[i] } }
  Stmt fill = loop(j, 0, 8, store(shared, load(in, j), j));
  Stmt body = seq({loop(i, 0, 4, store(local, load(shared, v * 4 + i), i)),
                   loop(i, 0, 4, store(out, load(local, i) * 2.0f, v * 4 + i))});
  Stmt s = alloc(shared, 8, "shared",
                 thread(vt, 2, make_stmt<LetStmtNode>(v, vt.var(), seq({fill, alloc(local, 4, "local", body)}))));
  Stmt r = simplify(inject_virtual_thread(s));
  std::string text = to_string(r);
  EXPECT_EQ(text.find("vthread"), std::string::npos) << text;
  // L is one buffer of 2 x 4, vthread t at [4t, 4t + 4).
  const AllocateNode* l = nullptr;
  post_order_visit(r, [&](const Stmt& x) {
    if (const auto* a = x.as<AllocateNode>(); a && a->buffer_var.same_as(local)) l = a;
  });
  ASSERT_NE(l, nullptr) << text;
  EXPECT_EQ(te::as_const_int(te::simplify(l->size())), 8);
  auto st = stores(r);
  ASSERT_EQ(st.size(), 5u) << text;  // the fill once, the two others twice
  EXPECT_TRUE(st[0]->buffer_var.same_as(shared));
  EXPECT_EQ(te::to_string(st[1]->index), "i") << text;
  EXPECT_EQ(te::to_string(st[2]->index), "(i + 4)") << text;
  EXPECT_NE(text.find("L[i] = S[i]"), std::string::npos) << text;
  EXPECT_NE(text.find("L[(i + 4)] = S[i + 4]"), std::string::npos) << text;
  EXPECT_NE(text.find("Out[(i + 4)] = (L[i + 4]*2f)"), std::string::npos) << text;
  // The shared buffer, allocated outside, is not expanded.
  EXPECT_NE(text.find("allocate S"), std::string::npos) << text;
}

TEST(InjectVirtualThread, NestedVirtualThreadsMultiply) {
  te::IterVar vy = te::thread_axis("vthread"), vx = te::thread_axis("vthread");
  Var out = buf("Out"), local = buf("L");
  Stmt inner = alloc(local, 1, "local",
                     seq({store(local, te::cast(f32, vy.var() * 2 + vx.var()), 0),
                          store(out, load(local, 0), vy.var() * 2 + vx.var())}));
  Stmt r = inject_virtual_thread(thread(vy, 2, thread(vx, 2, inner)));
  auto st = stores(r);
  EXPECT_EQ(st.size(), 8u) << r;
  const AllocateNode* l = nullptr;
  post_order_visit(r, [&](const Stmt& x) {
    if (const auto* a = x.as<AllocateNode>()) l = a;
  });
  ASSERT_NE(l, nullptr);
  EXPECT_EQ(te::as_const_int(te::simplify(l->size())), 4) << r;
  std::set<int64_t> out_idx;
  for (const StoreNode* s : st) {
    if (s->buffer_var.same_as(out)) out_idx.insert(te::as_const_int(te::simplify(s->index)).value_or(-1));
  }
  EXPECT_EQ(out_idx, (std::set<int64_t>{0, 1, 2, 3})) << r;
}

// ---------------------------------------------------------------- thread_sync
TEST(ThreadSync, BarrierAfterFetchAndAtTheEndOfTheReductionStep) {
  te::IterVar tx = te::thread_axis("threadIdx.x");
  Var a = buf("A"), sh = buf("S"), acc = buf("Acc"), ko("ko"), ki("ki");
  Stmt fetch = store(sh, load(a, ko * 32 + tx.var()), tx.var());
  Stmt compute = loop(ki, 0, 32, store(acc, load(acc, 0) + load(sh, ki), 0));
  Stmt s = thread(tx, 32, alloc(sh, 32, "shared", alloc(acc, 1, "local", loop(ko, 0, 4, seq({fetch, compute})))));
  Stmt r = thread_sync(s);
  EXPECT_EQ(count_barriers(r), 2) << r;
  const ForNode* k = nullptr;
  post_order_visit(r, [&](const Stmt& x) {
    if (const auto* f = x.as<ForNode>(); f && f->loop_var.same_as(ko)) k = f;
  });
  ASSERT_NE(k, nullptr);
  const auto* body = k->body.as<SeqStmtNode>();
  ASSERT_NE(body, nullptr) << r;
  ASSERT_EQ(body->seq.size(), 4u) << r;
  EXPECT_TRUE(body->seq[0].as<StoreNode>() != nullptr) << r;
  EXPECT_TRUE(is_barrier(body->seq[1])) << r;
  EXPECT_TRUE(body->seq[2].as<ForNode>() != nullptr) << r;
  EXPECT_TRUE(is_barrier(body->seq[3])) << r;
}

TEST(ThreadSync, NoBarrierWithoutSharedMemoryOrConflicts) {
  te::IterVar tx = te::thread_axis("threadIdx.x");
  Var a = buf("A"), b = buf("B"), l = buf("L"), sh = buf("S");
  Stmt plain = thread(tx, 32, alloc(l, 1, "local", seq({store(l, load(a, tx.var()), 0), store(b, load(l, 0), tx.var())})));
  EXPECT_TRUE(thread_sync(plain).same_as(plain));
  // Only written (or only read) shared memory needs no barrier either.
  Stmt writes = thread(tx, 32, alloc(sh, 32, "shared", seq({store(sh, 1.0f, tx.var()), store(sh, 2.0f, tx.var())})));
  EXPECT_EQ(count_barriers(thread_sync(writes)), 0);
  // Write then read: one barrier between them.
  Stmt raw = thread(tx, 32, alloc(sh, 32, "shared", seq({store(sh, load(a, tx.var()), tx.var()),
                                                          store(b, load(sh, 31 - tx.var()), tx.var())})));
  Stmt r = thread_sync(raw);
  EXPECT_EQ(count_barriers(r), 1) << r;
  std::string text = to_string(r);
  EXPECT_LT(text.find("S[threadIdx.x] ="), text.find("loom.sync_threads")) << text;
  EXPECT_LT(text.find("loom.sync_threads"), text.find("B[threadIdx.x] =")) << text;
}

TEST(ThreadSync, BarrierIsHoistedOutOfThreadDependentBranch) {
  te::IterVar tx = te::thread_axis("threadIdx.x");
  Var a = buf("A"), b = buf("B"), sh = buf("S");
  Stmt write = store(sh, load(a, tx.var()), tx.var());
  Stmt guarded = make_stmt<IfThenElseNode>(tx.var() < 16, store(b, load(sh, tx.var() + 16), tx.var()), Stmt());
  Stmt r = thread_sync(thread(tx, 32, alloc(sh, 32, "shared", seq({write, guarded}))));
  EXPECT_EQ(count_barriers(r), 1) << r;
  const IfThenElseNode* branch = nullptr;
  post_order_visit(r, [&](const Stmt& x) {
    if (const auto* i = x.as<IfThenElseNode>()) branch = i;
  });
  ASSERT_NE(branch, nullptr);
  EXPECT_EQ(count_barriers(branch->then_case), 0) << r;
  // Written and read inside the same thread-dependent branch: no place for a barrier.
  Stmt bad = make_stmt<IfThenElseNode>(tx.var() < 16, seq({write, store(b, load(sh, tx.var() + 1), tx.var())}), Stmt());
  EXPECT_THROW(thread_sync(thread(tx, 32, alloc(sh, 32, "shared", bad))), Error);
}

// ---------------------------------------------------------------- split_host_device, verify_gpu
LoweredFunc two_kernels(int64_t threads) {
  te::IterVar bx = te::thread_axis("blockIdx.x"), tx = te::thread_axis("threadIdx.x"), tx2 = te::thread_axis("threadIdx.x");
  Var a = buf("A"), b = buf("B"), t = buf("T"), n("n"), i("i");
  Tensor ta = te::placeholder({1024}, f32, "A"), tb = te::placeholder({1024}, f32, "B");
  LoweredFunc f;
  f.name = "g";
  f.args.push_back({"A", Var("A.handle", DataType::Handle()), a, f32, {1024}, ta});
  f.args.push_back({"B", Var("B.handle", DataType::Handle()), b, f32, {1024}, tb});
  Expr idx = bx.var() * int(threads) + tx.var();
  Stmt k0 = thread(bx, 1024 / threads, thread(tx, threads, store(t, load(a, idx) + te::cast(f32, n), idx)));
  // A second loop bound to threadIdx.x through another IterVar with the same extent.
  Stmt k1 = thread(bx, 1024 / threads,
                   thread(tx, threads, thread(tx2, threads, store(b, load(t, bx.var() * int(threads) + tx2.var()), idx))));
  f.body = make_stmt<LetStmtNode>(n, 3, alloc(t, 1024, "global", seq({k0, k1})));
  return f;
}

TEST(SplitHostDevice, KernelsParamsAndExtents) {
  LoweredFunc f = split_host_device(two_kernels(256));
  ASSERT_EQ(f.device_funcs.size(), 2u);
  const DeviceFunc& k0 = f.device_funcs[0];
  EXPECT_EQ(k0.name, "g_kernel0");
  ASSERT_EQ(k0.buffer_params.size(), 2u);
  EXPECT_EQ(k0.buffer_params[0].name(), "A");
  EXPECT_EQ(k0.buffer_params[1].name(), "T");  // a host temporary after the arguments
  EXPECT_EQ(k0.buffer_dtypes[1], f32);
  ASSERT_EQ(k0.scalar_params.size(), 1u);
  EXPECT_EQ(k0.scalar_params[0].name(), "n");
  ASSERT_EQ(k0.thread_extents.size(), 2u);
  EXPECT_EQ(k0.thread_extents[0].first, "blockIdx.x");
  EXPECT_EQ(te::as_const_int(k0.thread_extents[0].second), 4);
  EXPECT_EQ(k0.thread_extents[1].first, "threadIdx.x");
  EXPECT_EQ(te::as_const_int(k0.thread_extents[1].second), 256);
  const DeviceFunc& k1 = f.device_funcs[1];
  ASSERT_EQ(k1.buffer_params.size(), 2u);
  EXPECT_EQ(k1.buffer_params[0].name(), "B");
  EXPECT_EQ(k1.buffer_params[1].name(), "T");
  EXPECT_TRUE(k1.scalar_params.empty());
  // Both threadIdx.x vars are now one.
  ASSERT_EQ(k1.thread_vars.size(), 2u);
  std::string body = to_string(k1.body);
  EXPECT_EQ(body.find("attr"), std::string::npos) << body;
  int uses = 0;
  struct V : IRVisitor {
    const te::VarNode* tx;
    int* n;
    using IRVisitor::visit;
    void visit_(const te::VarNode* op) override { *n += op == tx; }
  } v;
  v.tx = k1.thread_vars[1].get();
  v.n = &uses;
  v.visit(k1.body);
  EXPECT_EQ(uses, 2) << body;
  std::string host = to_string(f.body);
  EXPECT_NE(host.find("loom.launch_kernel(\"g_kernel0\", A, T, n)"), std::string::npos) << host;
  EXPECT_NE(host.find("loom.launch_kernel(\"g_kernel1\", B, T)"), std::string::npos) << host;
  EXPECT_EQ(host.find("threadIdx"), std::string::npos) << host;
  EXPECT_NO_THROW(verify_gpu(f));
}

TEST(SplitHostDevice, SameTagWithDifferentExtentsIsAnError) {
  te::IterVar tx = te::thread_axis("threadIdx.x"), tx2 = te::thread_axis("threadIdx.x");
  Var a = buf("A");
  LoweredFunc f;
  f.name = "h";
  Tensor ta = te::placeholder({64}, f32, "A");
  f.args.push_back({"A", Var("A.handle", DataType::Handle()), a, f32, {64}, ta});
  f.body = thread(tx, 64, seq({store(a, 1.0f, tx.var()), thread(tx2, 32, store(a, 2.0f, tx2.var()))}));
  try {
    split_host_device(f);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'threadIdx.x' is bound with extent 64 and with extent 32"), std::string::npos)
        << e.what();
  }
}

TEST(VerifyGpu, Limits) {
  EXPECT_THROW(verify_gpu(split_host_device(two_kernels(2048))), Error);
  LoweredFunc ok = split_host_device(two_kernels(512));
  EXPECT_NO_THROW(verify_gpu(ok));
  GpuLimits small;
  small.max_threads_per_block = 256;
  try {
    verify_gpu(ok, small);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'g_kernel0': 512 threads per block exceed the limit max_threads_per_block = 256"),
              std::string::npos)
        << e.what();
  }
  // 64 KiB of shared memory, and 2 KiB of local arrays per thread.
  te::IterVar tx = te::thread_axis("threadIdx.x");
  Var a = buf("A"), sh = buf("S"), l = buf("L");
  LoweredFunc f;
  f.name = "s";
  f.body = thread(tx, 32, alloc(sh, 16384, "shared", store(sh, 1.0f, tx.var())));
  try {
    verify_gpu(split_host_device(f));
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'s_kernel0': 65536 bytes of shared memory exceed the limit"), std::string::npos)
        << e.what();
  }
  f.body = thread(tx, 32, alloc(l, 512, "local", store(l, 1.0f, tx.var())));
  try {
    verify_gpu(split_host_device(f));
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("2048 bytes of local arrays per thread"), std::string::npos) << e.what();
  }
}

TEST(CheckThreadBinding, StoreOutsideKernel) {
  Tensor A = te::placeholder({8}, f32, "A");
  Tensor B = te::compute({8}, [&](te::Var i) { return A(i) + 1.0f; }, "B");
  Var i("i");
  te::IterVar tx = te::thread_axis("threadIdx.x");
  Stmt bound = thread(tx, 8, make_stmt<ProducerStoreNode>(B, A(tx.var()), std::vector<Expr>{tx.var()}));
  EXPECT_NO_THROW(check_thread_binding(bound));
  Stmt unbound = loop(i, 0, 8, make_stmt<ProducerStoreNode>(B, A(i), std::vector<Expr>{i}));
  try {
    check_thread_binding(unbound);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("stage 'B' is not bound to GPU threads"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace loom::lowering
