// Lowering for target cuda, checked on the IR and on the split into host and kernels: thread
// binding, cooperative fetching into shared memory, virtual threads, barriers, verification.
// Needs no GPU.
#include <gtest/gtest.h>

#include <barrier>
#include <cmath>
#include <functional>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "loom/lower/ir_mutator.h"
#include "loom/lower/ir_visitor.h"
#include "loom/lower/passes.h"
#include "loom/loom.h"
#include "loom/te/arith.h"

namespace loom {
namespace {

using lowering::DeviceFunc;
using lowering::LoweredFunc;
using te::IterVar;
using te::Tensor;
using te::Var;
using lowering::Stmt;
using te::Expr;

int count(const std::string& s, const std::string& what) {
  int n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

int count_barriers(const lowering::Stmt& s) {
  int n = 0;
  lowering::post_order_visit(s, [&](const lowering::Stmt& x) {
    const auto* e = x.as<lowering::EvaluateNode>();
    const auto* c = e ? e->value.as<te::CallNode>() : nullptr;
    n += c && c->name == lowering::kSyncThreads;
  });
  return n;
}

int stores_to(const lowering::Stmt& s, const std::string& buf) {
  int n = 0;
  lowering::post_order_visit(s, [&](const lowering::Stmt& x) {
    const auto* st = x.as<lowering::StoreNode>();
    n += st && st->buffer_var.name() == buf;
  });
  return n;
}

const lowering::AllocateNode* find_alloc(const lowering::Stmt& s, const std::string& buf) {
  const lowering::AllocateNode* out = nullptr;
  lowering::post_order_visit(s, [&](const lowering::Stmt& x) {
    if (const auto* a = x.as<lowering::AllocateNode>(); a && a->buffer_var.name() == buf) out = a;
  });
  return out;
}

int64_t extent_of(const DeviceFunc& k, const std::string& tag) {
  for (const auto& [t, e] : k.thread_extents)
    if (t == tag) return te::as_const_int(e).value_or(-1);
  return -1;
}

LoweredFunc lower_cuda(const schedule::Schedule& s, const std::vector<Tensor>& args, std::ostream* print = nullptr) {
  lowering::LowerOptions opts;
  opts.target = Target("cuda");
  opts.print_after_all = print;
  return lowering::lower(s, args, "f", opts);
}

struct Elementwise {
  Tensor A, B, C;
  schedule::Schedule s;
};
Elementwise make_add(int n) {
  Elementwise e;
  e.A = te::placeholder({n}, DataType::Float(32), "A");
  e.B = te::placeholder({n}, DataType::Float(32), "B");
  Tensor A = e.A, B = e.B;
  e.C = te::compute({n}, [&](Var i) { return A(i) + B(i); }, "C");
  e.s = schedule::create_schedule({e.C});
  return e;
}

TEST(GpuLower, ElementwiseBoundToBlocksAndThreads) {
  Elementwise e = make_add(1024);
  auto [bx, tx] = e.s[e.C].split(e.s[e.C].axis(0), 64);
  e.s[e.C].bind(bx, te::thread_axis("blockIdx.x"));
  e.s[e.C].bind(tx, te::thread_axis("threadIdx.x"));
  std::ostringstream print;
  LoweredFunc f = lower_cuda(e.s, {e.A, e.B, e.C}, &print);
  ASSERT_EQ(f.device_funcs.size(), 1u);
  const DeviceFunc& k = f.device_funcs[0];
  EXPECT_EQ(k.name, "f_kernel0");
  EXPECT_EQ(extent_of(k, "blockIdx.x"), 16);
  EXPECT_EQ(extent_of(k, "threadIdx.x"), 64);
  ASSERT_EQ(k.thread_vars.size(), 2u);
  EXPECT_EQ(k.thread_vars[0].name(), "blockIdx.x");
  EXPECT_EQ(k.thread_vars[1].name(), "threadIdx.x");
  ASSERT_EQ(k.buffer_params.size(), 3u);
  EXPECT_EQ(k.buffer_params[0].name(), "A");
  EXPECT_EQ(k.buffer_params[2].name(), "C");
  EXPECT_EQ(k.buffer_dtypes[0], DataType::Float(32));
  EXPECT_TRUE(k.scalar_params.empty());
  EXPECT_EQ(k.shared_bytes, 0);
  EXPECT_EQ(count_barriers(k.body), 0);
  std::string body = lowering::to_string(k.body);
  EXPECT_EQ(count(body, "thread_extent"), 0) << body;
  EXPECT_EQ(count(body, "for ("), 0) << body;
  EXPECT_EQ(stores_to(k.body, "C"), 1) << body;
  std::string host = lowering::to_string(f.body);
  EXPECT_NE(host.find("loom.launch_kernel(\"f_kernel0\", A, B, C)"), std::string::npos) << host;
  EXPECT_EQ(count(host, "C["), 0) << host;
  EXPECT_NE(host.find("loom.dltensor_device_type(A.handle) == 2"), std::string::npos) << host;
  std::string passes = print.str();
  for (const char* p : {"after inject_virtual_thread", "after thread_sync", "after make_packed_api",
                        "after split_host_device", "kernel f_kernel0"})
    EXPECT_NE(passes.find(p), std::string::npos) << p;
  EXPECT_EQ(passes.find("after loop_partition"), std::string::npos);
}

TEST(GpuLower, NonDividingSplitIsGuardedAndSeveralStagesAreSeveralKernels) {
  Elementwise e = make_add(1000);
  Tensor C = e.C;
  Tensor D = te::compute({1000}, [&](Var i) { return C(i) * 2.0f; }, "D");
  schedule::Schedule s = schedule::create_schedule({D});
  for (const Tensor& t : {C, D}) {
    auto [bx, tx] = s[t].split(s[t].axis(0), 128);
    s[t].bind(bx, te::thread_axis("blockIdx.x"));
    s[t].bind(tx, te::thread_axis("threadIdx.x"));
  }
  LoweredFunc f = lower_cuda(s, {e.A, e.B, D});
  ASSERT_EQ(f.device_funcs.size(), 2u);
  EXPECT_EQ(extent_of(f.device_funcs[0], "blockIdx.x"), 8);
  EXPECT_NE(lowering::to_string(f.device_funcs[0].body).find("likely"), std::string::npos);
  // The intermediate C is a temporary of the host, a buffer parameter of both kernels.
  ASSERT_EQ(f.device_funcs[0].buffer_params.size(), 3u);
  EXPECT_EQ(f.device_funcs[0].buffer_params[2].name(), "C");
  ASSERT_EQ(f.device_funcs[1].buffer_params.size(), 2u);
  EXPECT_EQ(f.device_funcs[1].buffer_params[0].name(), "D");
  EXPECT_EQ(f.device_funcs[1].buffer_params[1].name(), "C");
  std::string host = lowering::to_string(f.body);
  EXPECT_LT(host.find("f_kernel0"), host.find("f_kernel1")) << host;
}

TEST(GpuLower, UnboundStageIsAnError) {
  Elementwise e = make_add(64);
  try {
    lower_cuda(e.s, {e.A, e.B, e.C});
    FAIL() << "expected an error";
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("stage 'C' is not bound to GPU threads"), std::string::npos) << err.what();
  }
  // The same schedule still lowers for the CPU.
  EXPECT_NO_THROW(lowering::lower(e.s, {e.A, e.B, e.C}, "f"));
}

TEST(GpuLower, VerifierRejectsTooManyThreads) {
  Elementwise e = make_add(4096);
  auto [bx, tx] = e.s[e.C].split(e.s[e.C].axis(0), 2048);
  e.s[e.C].bind(bx, te::thread_axis("blockIdx.x"));
  e.s[e.C].bind(tx, te::thread_axis("threadIdx.x"));
  try {
    lower_cuda(e.s, {e.A, e.B, e.C});
    FAIL() << "expected an error";
  } catch (const Error& err) {
    std::string m = err.what();
    EXPECT_NE(m.find("f_kernel0"), std::string::npos) << m;
    EXPECT_NE(m.find("threadIdx.x = 2048"), std::string::npos) << m;
  }

  Tensor A = te::placeholder({64, 64}, DataType::Float(32), "A");
  Tensor B = te::compute({64, 64}, [&](Var i, Var j) { return A(i, j) + 1.0f; }, "B");
  schedule::Schedule s = schedule::create_schedule({B});
  s[B].bind(s[B].axis(0), te::thread_axis("threadIdx.y"));
  auto [jo, ji] = s[B].split(s[B].axis(1), 32);
  s[B].bind(jo, te::thread_axis("blockIdx.x"));
  s[B].bind(ji, te::thread_axis("threadIdx.x"));
  s[B].reorder({jo, s[B].axis(0), ji});
  try {
    lower_cuda(s, {A, B});
    FAIL() << "expected an error";
  } catch (const Error& err) {
    std::string m = err.what();
    EXPECT_NE(m.find("2048 threads per block exceed the limit max_threads_per_block = 1024"), std::string::npos) << m;
  }
}

/// TVM's GPU matmul pattern: block tiles in shared memory fetched cooperatively by all
/// threads at each step of the reduction, a local accumulator tile per thread, virtual
/// threads interleaving vthread² sub-tiles.
struct GpuMatmul {
  Tensor A, B, C, AA, BB, CL;
  schedule::Schedule s;
};
GpuMatmul make_gpu_matmul(int n, int k_len, int block, int nthread, int nvthread, int kfactor, int align = 0) {
  GpuMatmul m;
  m.A = te::placeholder({n, k_len}, DataType::Float(32), "A");
  m.B = te::placeholder({k_len, n}, DataType::Float(32), "B");
  IterVar k = te::reduce_axis({0, k_len}, "k");
  Tensor A = m.A, B = m.B;
  m.C = te::compute({n, n}, [&](Var i, Var j) { return te::sum(A(i, k) * B(k, j), {k}); }, "C");
  schedule::Schedule s = schedule::create_schedule({m.C});
  m.AA = s.cache_read(m.A, "shared", std::vector<Tensor>{m.C});
  m.BB = s.cache_read(m.B, "shared", std::vector<Tensor>{m.C});
  m.CL = s.cache_write(m.C, "local");
  IterVar bxv = te::thread_axis("blockIdx.x"), byv = te::thread_axis("blockIdx.y");
  IterVar txv = te::thread_axis("threadIdx.x"), tyv = te::thread_axis("threadIdx.y");
  IterVar vy = te::thread_axis("vthread"), vx = te::thread_axis("vthread");
  auto C = s[m.C];
  auto [by, yi] = C.split(C.axis(0), block);
  auto [bx, xi] = C.split(C.axis(1), block);
  C.reorder({by, bx, yi, xi});
  auto [tyz, yi2] = C.split_nparts(yi, nvthread);
  auto [txz, xi2] = C.split_nparts(xi, nvthread);
  auto [ty, yi3] = C.split_nparts(yi2, nthread);
  auto [tx, xi3] = C.split_nparts(xi2, nthread);
  C.reorder({by, bx, tyz, txz, ty, tx, yi3, xi3});
  C.bind(by, byv);
  C.bind(bx, bxv);
  C.bind(tyz, vy);
  C.bind(txz, vx);
  C.bind(ty, tyv);
  C.bind(tx, txv);
  auto CL = s[m.CL];
  CL.compute_at(C, tx);
  auto [ko, ki] = CL.split(CL.reduce_axis(0), kfactor);
  CL.reorder({ko, ki, CL.axis(0), CL.axis(1)});
  for (const Tensor& t : {m.AA, m.BB}) {
    auto st = s[t];
    st.compute_at(CL, ko);
    if (align) st.storage_align(st.axis(0), align, 1);
    IterVar fused = st.fuse(st.axis(0), st.axis(1));
    auto [fy, rest] = st.split_nparts(fused, nthread);
    auto [fx, inner] = st.split_nparts(rest, nthread);
    st.bind(fy, tyv);
    st.bind(fx, txv);
  }
  m.s = s;
  return m;
}


/// Runs one kernel on the CPU: one std::thread per GPU thread of a block, blocks one after
/// another, loom.sync_threads a std::barrier. Every value is a double. Shared memory records
/// per element the thread and barrier epoch of its last write and read, so that a read of
/// another thread's write (or a write over another thread's read) with no barrier between
/// them is reported as a race: the barriers thread_sync placed are checked, not assumed.
class KernelEmulator {
 public:
  KernelEmulator(const DeviceFunc& k, std::map<const te::VarNode*, std::vector<double>*> globals)
      : k_(k), globals_(std::move(globals)) {}

  /// "" when the kernel ran without races or errors, else what went wrong.
  std::string run() {
    int64_t grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
    std::vector<std::pair<const te::VarNode*, std::pair<bool, int>>> tvars;
    for (size_t i = 0; i < k_.thread_extents.size(); ++i) {
      const std::string& tag = k_.thread_extents[i].first;
      int dim = tag.back() - 'x';
      bool is_block = tag.rfind("blockIdx", 0) == 0;
      (is_block ? grid : block)[dim] = te::as_const_int(k_.thread_extents[i].second).value();
      tvars.push_back({k_.thread_vars[i].get(), {is_block, dim}});
    }
    int64_t nthreads = block[0] * block[1] * block[2];
    for (int64_t b = 0; b < grid[0] * grid[1] * grid[2]; ++b) {
      int64_t bidx[3] = {b % grid[0], b / grid[0] % grid[1], b / (grid[0] * grid[1])};
      shared_.clear();
      std::barrier sync(nthreads);
      std::vector<std::thread> threads;
      for (int64_t t = 0; t < nthreads; ++t) {
        int64_t tidx[3] = {t % block[0], t / block[0] % block[1], t / (block[0] * block[1])};
        Env env;
        env.thread = t;
        for (const auto& [v, where] : tvars) env.vars[v] = double(where.first ? bidx[where.second] : tidx[where.second]);
        threads.emplace_back([this, env = std::move(env), &sync]() mutable {
          env.sync = &sync;
          try {
            exec(k_.body, env);
          } catch (const std::exception& e) {
            std::lock_guard<std::mutex> g(mu_);
            if (error_.empty()) error_ = e.what();
          }
          sync.arrive_and_drop();
        });
      }
      for (auto& th : threads) th.join();
      if (!error_.empty()) return error_;
    }
    return error_;
  }

 private:
  struct Cell {
    int64_t writer = -1, write_epoch = -1, reader = -1, read_epoch = -1;
  };
  struct SharedBuf {
    std::vector<double> data;
    std::vector<Cell> cells;
  };
  struct Env {
    int64_t thread = 0, epoch = 0;
    std::map<const te::VarNode*, double> vars;
    std::map<const te::VarNode*, std::vector<double>> local;
    std::barrier<>* sync = nullptr;
  };

  double eval(const Expr& e, Env& env) {
    using K = te::ExprKind;
    auto bin = [&](auto* op, auto f) { return f(eval(op->a, env), eval(op->b, env)); };
    switch (e.kind()) {
      case K::IntImm: return double(e.as<te::IntImmNode>()->value);
      case K::FloatImm: return e.as<te::FloatImmNode>()->value;
      case K::Var: {
        auto it = env.vars.find(e.as<te::VarNode>());
        if (it == env.vars.end()) throw std::runtime_error("unbound var " + e.as<te::VarNode>()->name);
        return it->second;
      }
      case K::Add: return bin(e.as<te::AddNode>(), [](double a, double b) { return a + b; });
      case K::Sub: return bin(e.as<te::SubNode>(), [](double a, double b) { return a - b; });
      case K::Mul: return bin(e.as<te::MulNode>(), [](double a, double b) { return a * b; });
      case K::Div: {
        double r = bin(e.as<te::DivNode>(), [](double a, double b) { return a / b; });
        return e.dtype().is_float() ? r : std::trunc(r);
      }
      case K::Mod: return bin(e.as<te::ModNode>(), [](double a, double b) { return std::fmod(a, b); });
      case K::FloorDiv: return bin(e.as<te::FloorDivNode>(), [](double a, double b) { return std::floor(a / b); });
      case K::FloorMod:
        return bin(e.as<te::FloorModNode>(), [](double a, double b) { return a - std::floor(a / b) * b; });
      case K::Min: return bin(e.as<te::MinNode>(), [](double a, double b) { return std::min(a, b); });
      case K::Max: return bin(e.as<te::MaxNode>(), [](double a, double b) { return std::max(a, b); });
      case K::EQ: return bin(e.as<te::EQNode>(), [](double a, double b) { return double(a == b); });
      case K::NE: return bin(e.as<te::NENode>(), [](double a, double b) { return double(a != b); });
      case K::LT: return bin(e.as<te::LTNode>(), [](double a, double b) { return double(a < b); });
      case K::LE: return bin(e.as<te::LENode>(), [](double a, double b) { return double(a <= b); });
      case K::GT: return bin(e.as<te::GTNode>(), [](double a, double b) { return double(a > b); });
      case K::GE: return bin(e.as<te::GENode>(), [](double a, double b) { return double(a >= b); });
      case K::And: return bin(e.as<te::AndNode>(), [](double a, double b) { return double(a && b); });
      case K::Or: return bin(e.as<te::OrNode>(), [](double a, double b) { return double(a || b); });
      case K::Not: return double(!eval(e.as<te::NotNode>()->a, env));
      case K::Select: {
        const auto* op = e.as<te::SelectNode>();
        return eval(op->cond, env) ? eval(op->true_value, env) : eval(op->false_value, env);
      }
      case K::Cast: {
        double v = eval(e.as<te::CastNode>()->value, env);
        return e.dtype().is_float() ? v : std::trunc(v);
      }
      case K::Call: {
        const auto* op = e.as<te::CallNode>();
        if (op->name == "likely") return eval(op->args[0], env);
        throw std::runtime_error("emulator: unsupported call " + op->name);
      }
      case K::Load: {
        const auto* op = e.as<te::LoadNode>();
        if (op->predicate.defined() && !eval(op->predicate, env)) return 0;
        return access(op->buffer_var.get(), int64_t(eval(op->index, env)), env, nullptr);
      }
      default: throw std::runtime_error("emulator: unsupported expression " + te::to_string(e));
    }
  }

  /// Reads (value == nullptr) or writes one element.
  double access(const te::VarNode* buf, int64_t i, Env& env, const double* value) {
    auto check = [&](size_t n) {
      if (i < 0 || size_t(i) >= n) throw std::runtime_error(fmt::format("{}[{}] out of bounds ({})", buf->name, i, n));
    };
    if (auto it = env.local.find(buf); it != env.local.end()) {
      check(it->second.size());
      return value ? (it->second[i] = *value) : it->second[i];
    }
    std::lock_guard<std::mutex> g(mu_);
    if (auto it = shared_.find(buf); it != shared_.end()) {
      SharedBuf& s = it->second;
      check(s.data.size());
      Cell& c = s.cells[i];
      if (value) {
        if (c.read_epoch == env.epoch && c.reader != env.thread && c.reader != -1)
          throw std::runtime_error(fmt::format("race: {}[{}] written by thread {} after a read by thread {} in the "
                                               "same barrier interval", buf->name, i, env.thread, c.reader));
        c.writer = env.thread;
        c.write_epoch = env.epoch;
        return s.data[i] = *value;
      }
      if (c.write_epoch == env.epoch && c.writer != env.thread)
        throw std::runtime_error(fmt::format("race: {}[{}] read by thread {} after a write by thread {} with no "
                                             "barrier between", buf->name, i, env.thread, c.writer));
      if (c.read_epoch == env.epoch && c.reader != env.thread) c.reader = -2;  // several readers
      else if (c.reader != -2 || c.read_epoch != env.epoch) c.reader = env.thread;
      c.read_epoch = env.epoch;
      return s.data[i];
    }
    auto it = globals_.find(buf);
    if (it == globals_.end()) throw std::runtime_error("emulator: unknown buffer " + buf->name);
    check(it->second->size());
    return value ? ((*it->second)[i] = *value) : (*it->second)[i];
  }

  void exec(const lowering::Stmt& s, Env& env) {
    using lowering::StmtKind;
    if (!s.defined()) return;
    switch (s.kind()) {
      case StmtKind::Seq:
        for (const auto& p : s.as<lowering::SeqStmtNode>()->seq) exec(p, env);
        break;
      case StmtKind::For: {
        const auto* op = s.as<lowering::ForNode>();
        double mn = eval(op->min, env), ext = eval(op->extent, env);
        for (double v = mn; v < mn + ext; ++v) {
          env.vars[op->loop_var.get()] = v;
          exec(op->body, env);
        }
        break;
      }
      case StmtKind::LetStmt: {
        const auto* op = s.as<lowering::LetStmtNode>();
        env.vars[op->var.get()] = eval(op->value, env);
        exec(op->body, env);
        break;
      }
      case StmtKind::AttrStmt: exec(s.as<lowering::AttrStmtNode>()->body, env); break;
      case StmtKind::IfThenElse: {
        const auto* op = s.as<lowering::IfThenElseNode>();
        exec(eval(op->condition, env) ? op->then_case : op->else_case, env);
        break;
      }
      case StmtKind::Allocate: {
        const auto* op = s.as<lowering::AllocateNode>();
        size_t n = size_t(te::as_const_int(te::simplify(op->size())).value());
        if (op->scope == "shared") {
          std::lock_guard<std::mutex> g(mu_);
          auto [it, fresh] = shared_.try_emplace(op->buffer_var.get());
          if (fresh) {
            it->second.data.assign(n, std::nan(""));
            it->second.cells.assign(n, Cell{});
          }
        } else {
          env.local[op->buffer_var.get()].assign(n, std::nan(""));
        }
        exec(op->body, env);
        break;
      }
      case StmtKind::Store: {
        const auto* op = s.as<lowering::StoreNode>();
        if (op->predicate.defined() && !eval(op->predicate, env)) break;
        double v = eval(op->value, env);
        if (!op->value.dtype().is_float()) v = std::trunc(v);
        else v = double(float(v));
        access(op->buffer_var.get(), int64_t(eval(op->index, env)), env, &v);
        break;
      }
      case StmtKind::Evaluate: {
        if (lowering::is_no_op(s)) break;
        const auto* c = s.as<lowering::EvaluateNode>()->value.as<te::CallNode>();
        if (!c || c->name != lowering::kSyncThreads) throw std::runtime_error("emulator: unsupported evaluate");
        env.sync->arrive_and_wait();
        ++env.epoch;
        break;
      }
      default: throw std::runtime_error("emulator: unsupported statement");
    }
  }

  const DeviceFunc& k_;
  std::map<const te::VarNode*, std::vector<double>*> globals_;
  std::map<const te::VarNode*, SharedBuf> shared_;
  std::mutex mu_;
  std::string error_;
};

/// Emulates every kernel of a lowered matmul C = A B on deterministic inputs; "" when C is
/// right and no race was seen.
std::string emulate_matmul(const LoweredFunc& f, int n, int k_len) {
  std::vector<double> a(size_t(n) * k_len), b(size_t(k_len) * n), c(size_t(n) * n, std::nan(""));
  for (size_t i = 0; i < a.size(); ++i) a[i] = double(int(i * 7 % 13) - 6) / 4;
  for (size_t i = 0; i < b.size(); ++i) b[i] = double(int(i * 5 % 11) - 5) / 2;
  std::map<const te::VarNode*, std::vector<double>*> globals{
      {f.args[0].data.get(), &a}, {f.args[1].data.get(), &b}, {f.args[2].data.get(), &c}};
  for (const DeviceFunc& k : f.device_funcs) {
    std::string err = KernelEmulator(k, globals).run();
    if (!err.empty()) return k.name + ": " + err;
  }
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      double want = 0;
      for (int r = 0; r < k_len; ++r) want += a[size_t(i) * k_len + r] * b[size_t(r) * n + j];
      double got = c[size_t(i) * n + j];
      if (!(std::abs(got - want) <= 1e-3 * (1 + std::abs(want))))
        return fmt::format("C[{}, {}] = {}, want {}", i, j, got, want);
    }
  return "";
}

TEST(GpuLower, MatmulCooperativeFetchVirtualThreads) {
  GpuMatmul m = make_gpu_matmul(128, 32, 64, 8, 2, 8);
  std::ostringstream print;
  LoweredFunc f = lower_cuda(m.s, {m.A, m.B, m.C}, &print);
  ASSERT_EQ(f.device_funcs.size(), 1u) << f;
  const DeviceFunc& k = f.device_funcs[0];
  std::string body = lowering::to_string(k.body);
  EXPECT_EQ(extent_of(k, "blockIdx.x"), 2);
  EXPECT_EQ(extent_of(k, "blockIdx.y"), 2);
  EXPECT_EQ(extent_of(k, "threadIdx.x"), 8);
  EXPECT_EQ(extent_of(k, "threadIdx.y"), 8);
  EXPECT_EQ(k.thread_extents.size(), 4u);
  // Shared tiles cover the whole block: 64 rows x 8 of A and 8 x 64 of B, float32.
  EXPECT_EQ(k.shared_bytes, (64 * 8 + 8 * 64) * 4) << body;
  const lowering::AllocateNode* aa = find_alloc(k.body, "A.shared");
  ASSERT_NE(aa, nullptr) << body;
  EXPECT_EQ(aa->scope, "shared");
  // The local accumulator: a 4x4 tile per virtual thread, 2x2 virtual threads.
  const lowering::AllocateNode* cl = find_alloc(k.body, "C.local");
  ASSERT_NE(cl, nullptr) << body;
  EXPECT_EQ(cl->scope, "local");
  EXPECT_EQ(te::as_const_int(te::simplify(cl->size())), 64) << body;
  EXPECT_EQ(body.find("vthread"), std::string::npos) << body;
  // Fetches run once per reduction step, the accumulation once per virtual thread.
  EXPECT_EQ(stores_to(k.body, "A.shared"), 1) << body;
  EXPECT_EQ(stores_to(k.body, "B.shared"), 1) << body;
  EXPECT_EQ(stores_to(k.body, "C.local"), 8) << body;  // init and update, x4
  EXPECT_EQ(stores_to(k.body, "C"), 4) << body;
  // Barriers: after the fetches and at the end of each step of ko, nowhere else.
  EXPECT_EQ(count_barriers(k.body), 2) << body;
  const lowering::ForNode* ko = nullptr;
  lowering::post_order_visit(k.body, [&](const lowering::Stmt& x) {
    if (const auto* fo = x.as<lowering::ForNode>(); fo && fo->loop_var.name() == "k.c.outer") ko = fo;
  });
  ASSERT_NE(ko, nullptr) << body;
  EXPECT_EQ(count_barriers(ko->body), 2) << body;
  // The steps of one iteration, in order, through the shared allocations.
  std::vector<Stmt> steps;
  std::function<void(const Stmt&)> flatten = [&](const Stmt& x) {
    if (const auto* sq = x.as<lowering::SeqStmtNode>()) {
      for (const Stmt& p : sq->seq) flatten(p);
    } else if (const auto* a = x.as<lowering::AttrStmtNode>()) {
      flatten(a->body);
    } else if (const auto* al = x.as<lowering::AllocateNode>()) {
      flatten(al->body);
    } else {
      steps.push_back(x);
    }
  };
  flatten(ko->body);
  ASSERT_EQ(steps.size(), 5u) << body;
  EXPECT_EQ(count_barriers(steps[4]), 1) << body;  // end of the iteration
  EXPECT_EQ(count_barriers(steps[2]), 1) << body;  // after both fetches
  EXPECT_EQ(stores_to(steps[3], "C.local"), 4) << body;
  const auto* seq = &steps;
  lowering::Stmt before = lowering::seq({(*seq)[0], (*seq)[1]});
  EXPECT_EQ(stores_to(before, "A.shared"), 1) << body;
  EXPECT_EQ(stores_to(before, "B.shared"), 1) << body;
  EXPECT_EQ(stores_to(before, "C.local"), 0) << body;
  ASSERT_EQ(k.buffer_params.size(), 3u);
  EXPECT_EQ(k.buffer_params[0].name(), "A");
  EXPECT_EQ(k.buffer_params[1].name(), "B");
  EXPECT_EQ(k.buffer_params[2].name(), "C");
  EXPECT_NE(print.str().find("after thread_sync"), std::string::npos);
  EXPECT_EQ(emulate_matmul(f, 128, 32), "");
}

TEST(GpuLower, EmulatorCatchesAMissingBarrier) {
  GpuMatmul m = make_gpu_matmul(64, 16, 32, 4, 2, 4);
  LoweredFunc f = lower_cuda(m.s, {m.A, m.B, m.C});
  ASSERT_EQ(f.device_funcs.size(), 1u);
  EXPECT_EQ(emulate_matmul(f, 64, 16), "");
  // Without the barrier at the end of each reduction step, the next fetch overwrites tiles
  // other threads still read.
  struct DropLast : lowering::IRMutator {
    int seen = 0;
    Stmt mutate_(const lowering::EvaluateNode* op) override {
      const auto* c = op->value.as<te::CallNode>();
      if (c && c->name == lowering::kSyncThreads && ++seen == 2) return lowering::no_op();
      return lowering::IRMutator::mutate_(op);
    }
  };
  LoweredFunc broken = f;
  broken.device_funcs[0].body = DropLast().mutate(f.device_funcs[0].body);
  EXPECT_EQ(count_barriers(broken.device_funcs[0].body), 1);
  std::string err = emulate_matmul(broken, 64, 16);
  EXPECT_NE(err.find("race"), std::string::npos) << err << "\n" << broken.device_funcs[0].body;
}

TEST(GpuLower, DoubleBufferedMatmulOneBarrierPerStep) {
  GpuMatmul m = make_gpu_matmul(128, 32, 64, 8, 2, 8);
  m.s[m.AA].double_buffer();
  m.s[m.BB].double_buffer();
  std::ostringstream print;
  LoweredFunc f = lower_cuda(m.s, {m.A, m.B, m.C}, &print);
  ASSERT_EQ(f.device_funcs.size(), 1u) << f;
  const DeviceFunc& k = f.device_funcs[0];
  std::string body = lowering::to_string(k.body);
  // Two halves of each tile.
  EXPECT_EQ(k.shared_bytes, 2 * (64 * 8 + 8 * 64) * 4) << body;
  const lowering::AllocateNode* aa = find_alloc(k.body, "A.shared");
  ASSERT_NE(aa, nullptr) << body;
  EXPECT_EQ(te::as_const_int(te::simplify(aa->size())), 2 * 64 * 8) << body;
  // A prologue fetch before the reduction loop (one store in a loop of 8 per thread), the
  // fetch of step k + 1 inside it staged through 8 registers: their loads at the start of the
  // step, their stores at its end (unrolled).
  EXPECT_EQ(stores_to(k.body, "A.shared"), 9) << body;
  EXPECT_EQ(stores_to(k.body, "B.shared"), 9) << body;
  const lowering::ForNode* ko = nullptr;
  lowering::post_order_visit(k.body, [&](const lowering::Stmt& x) {
    if (const auto* fo = x.as<lowering::ForNode>(); fo && fo->loop_var.name() == "k.c.outer") ko = fo;
  });
  ASSERT_NE(ko, nullptr) << body;
  EXPECT_EQ(stores_to(ko->body, "A.shared"), 8) << body;
  EXPECT_EQ(stores_to(ko->body, "B.shared"), 8) << body;
  EXPECT_EQ(stores_to(ko->body, "A.shared.prefetch"), 8) << body;
  EXPECT_EQ(stores_to(ko->body, "B.shared.prefetch"), 8) << body;
  EXPECT_NE(body.find("if ((k.c.outer < 3))"), std::string::npos) << body;
  EXPECT_NE(body.find("floormod(k.c.outer + 1, 2)"), std::string::npos) << body;
  EXPECT_EQ(body.find("double_buffer_scope"), std::string::npos) << body;
  // One barrier per step (at its end) and one after the prologue.
  EXPECT_EQ(count_barriers(ko->body), 1) << body;
  EXPECT_EQ(count_barriers(k.body), 2) << body;
  EXPECT_NE(print.str().find("after inject_double_buffer"), std::string::npos);
  EXPECT_EQ(emulate_matmul(f, 128, 32), "");

  // Without the barrier of each step, the fetch of step k + 2 overwrites the half that
  // other threads still read at step k, and the emulator sees it.
  struct DropLast : lowering::IRMutator {
    int seen = 0;
    Stmt mutate_(const lowering::EvaluateNode* op) override {
      const auto* c = op->value.as<te::CallNode>();
      if (c && c->name == lowering::kSyncThreads && ++seen == 2) return lowering::no_op();
      return lowering::IRMutator::mutate_(op);
    }
  };
  LoweredFunc broken = f;
  broken.device_funcs[0].body = DropLast().mutate(f.device_funcs[0].body);
  EXPECT_EQ(count_barriers(broken.device_funcs[0].body), 1);
  std::string err = emulate_matmul(broken, 128, 32);
  EXPECT_NE(err.find("race"), std::string::npos) << err;
}

TEST(GpuLower, DoubleBufferOnCpuIsIgnored) {
  // A fetch inside the reduction loop, double-buffered: lowered for llvm as if it were not.
  Tensor A = te::placeholder({32, 16}, DataType::Float(32), "A");
  Tensor B = te::placeholder({16, 32}, DataType::Float(32), "B");
  IterVar r = te::reduce_axis({0, 16}, "k");
  Tensor C = te::compute({32, 32}, [&](Var i, Var j) { return te::sum(A(i, r) * B(r, j), {r}); }, "C");
  schedule::Schedule s = schedule::create_schedule({C});
  Tensor AA = s.cache_read(A, "global", std::vector<Tensor>{C});
  auto [ko, ki] = s[C].split(s[C].reduce_axis(0), 4);
  (void)ki;
  s[AA].compute_at(s[C], ko);
  s[AA].double_buffer();
  LoweredFunc f = lowering::lower(s, {A, B, C}, "f");
  EXPECT_EQ(lowering::to_string(f.body).find("double_buffer"), std::string::npos) << f.body;
  EXPECT_EQ(stores_to(f.body, "A.global"), 1) << f.body;
}

TEST(GpuLower, StorageAlignPadsSharedRows) {
  GpuMatmul m = make_gpu_matmul(128, 32, 64, 8, 2, 8, /*align=*/8);
  LoweredFunc f = lower_cuda(m.s, {m.A, m.B, m.C});
  ASSERT_EQ(f.device_funcs.size(), 1u);
  // A.shared is 64 x 8 with its row stride padded from 8 to 9; B.shared 8 x 64 → 8 x 65.
  const lowering::AllocateNode* aa = find_alloc(f.device_funcs[0].body, "A.shared");
  ASSERT_NE(aa, nullptr);
  EXPECT_EQ(te::as_const_int(te::simplify(aa->size())), 64 * 9);
  EXPECT_EQ(f.device_funcs[0].shared_bytes, (64 * 9 + 8 * 65) * 4);
}

TEST(GpuLower, VerifierRejectsTooMuchSharedMemory) {
  // 128 x 64 tiles of A and B: 2 x 32 KiB of shared memory.
  GpuMatmul m = make_gpu_matmul(128, 64, 128, 16, 2, 64);
  try {
    lower_cuda(m.s, {m.A, m.B, m.C});
    FAIL() << "expected an error";
  } catch (const Error& err) {
    std::string msg = err.what();
    EXPECT_NE(msg.find("'f_kernel0': 65536 bytes of shared memory exceed the limit max_shared_bytes = 49152"),
              std::string::npos)
        << msg;
  }
  // Within the limit with a smaller reduction step.
  GpuMatmul ok = make_gpu_matmul(128, 64, 128, 16, 2, 16);
  LoweredFunc f = lower_cuda(ok.s, {ok.A, ok.B, ok.C});
  EXPECT_EQ(f.device_funcs.at(0).shared_bytes, 2 * 128 * 16 * 4);
}

}  // namespace
}  // namespace loom
