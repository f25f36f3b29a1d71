// Templates for the tuner tests: a small well-behaved one and ones that fail on purpose.
#pragma once
#include <chrono>
#include <cstdlib>
#include <thread>

#include "loom/loom.h"
#include "loom/tuner/task.h"

namespace loom::test {

inline std::vector<te::Tensor> vec_compute(int64_t n, const std::function<te::Expr(te::Tensor, te::Var)>& body) {
  te::Tensor A = te::placeholder({n}, DataType::Float(32), "A");
  te::Tensor C = te::compute({n}, [&](te::Var i) { return body(A, i); }, "C");
  return {A, C};
}

/// "test_faulty": C = 2A on n elements with a "mode" knob: 0 fine, 1 the schedule function
/// never returns (build timeout), 2 it aborts (the worker dies while building), 3 it
/// changes the computation slightly (wrong answer), 4 the template
/// rejects the config (instantiation error); a "split" knob tiles the loop. "test_picky":
/// C = 2A whose template rejects half of its configs.
inline void register_test_templates() {
  tuner::Template faulty;
  faulty.name = "test_faulty";
  faulty.shape_doc = "N";
  faulty.flop = [](const records::Workload& w) { return double(w.shape[0]); };
  faulty.compute = [](const records::Workload& w) {
    return vec_compute(w.shape[0], [](te::Tensor A, te::Var i) { return A(i) * 2.0f; });
  };
  faulty.schedule = [](tuner::ConfigContext& cfg, const std::vector<te::Tensor>& args, const Target&) {
    int64_t mode = cfg.choice("mode", {0, 1, 2, 3, 4});
    te::Tensor C = args[1];
    int64_t n = *te::as_const_int(C.shape()[0]);
    cfg.split("split", n, {});
    if (!cfg.defining()) {
      if (mode == 1) {
        for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
      }
      if (mode == 2) std::abort();
      if (mode == 4) throw tuner::InstantiationError("mode 4 is rejected");
      if (mode == 3) {
        // Emulates a schedule bug that changes what is computed: C's body (this instance's
        // own copy, since compute runs for every instantiation) becomes 2A + 0.01.
        auto* op = const_cast<te::OperationNode*>(C.op().get());
        op->body[0] = args[0](op->axis[0].var()) * 2.0f + 0.01f;
      }
    }
    Schedule s = create_schedule({C});
    cfg.apply_split("split", s[C], s[C].axis(0));
    return s;
  };
  tuner::register_template(faulty);

  // Reads far outside A: the compiled code faults at run time. The read is under a select
  // (always true) so that lower()'s static check, which leaves guarded reads alone, lets it by.
  tuner::Template segv;
  segv.name = "test_segv";
  segv.shape_doc = "N";
  segv.flop = [](const records::Workload& w) { return double(w.shape[0]); };
  segv.compute = [](const records::Workload& w) {
    return vec_compute(w.shape[0], [](te::Tensor A, te::Var i) {
      return te::select(i >= 0, A(i * 100000000 + 99999999), te::Expr(0.0f));
    });
  };
  segv.schedule = [](tuner::ConfigContext& cfg, const std::vector<te::Tensor>& args, const Target&) {
    cfg.choice("dummy", {0, 1, 2});
    return create_schedule({args[1]});
  };
  tuner::register_template(segv);

  // A reduction of 4e18 steps: runs far past any timeout.
  tuner::Template hang;
  hang.name = "test_hang";
  hang.shape_doc = "N";
  hang.flop = [](const records::Workload& w) { return double(w.shape[0]); };
  hang.compute = [](const records::Workload& w) {
    te::Tensor A = te::placeholder({w.shape[0]}, DataType::Float(32), "A");
    te::IterVar k1 = te::reduce_axis({0, 2000000000}, "k1"), k2 = te::reduce_axis({0, 2000000000}, "k2");
    te::Tensor C = te::compute(
        {w.shape[0]}, [&](te::Var i) { return te::sum(A(te::floormod(i + k1 + k2, w.shape[0])), {k1, k2}); }, "C");
    return std::vector<te::Tensor>{A, C};
  };
  hang.schedule = [](tuner::ConfigContext& cfg, const std::vector<te::Tensor>& args, const Target&) {
    cfg.choice("dummy", {0, 1});
    return create_schedule({args[1]});
  };
  tuner::register_template(hang);

  // C = 2A, split by a "split" knob; the template rejects every odd value of its "parity" knob.
  tuner::Template picky;
  picky.name = "test_picky";
  picky.shape_doc = "N";
  picky.flop = [](const records::Workload& w) { return double(w.shape[0]); };
  picky.compute = [](const records::Workload& w) {
    return vec_compute(w.shape[0], [](te::Tensor A, te::Var i) { return A(i) * 2.0f; });
  };
  picky.schedule = [](tuner::ConfigContext& cfg, const std::vector<te::Tensor>& args, const Target&) {
    int64_t parity = cfg.choice("parity", {0, 1, 2, 3, 4, 5, 6, 7});
    te::Tensor C = args[1];
    cfg.split("split", *te::as_const_int(C.shape()[0]), {});
    if (!cfg.defining() && parity % 2) throw tuner::InstantiationError("odd parity is rejected");
    Schedule s = create_schedule({C});
    cfg.apply_split("split", s[C], s[C].axis(0));
    return s;
  };
  tuner::register_template(picky);
}

}  // namespace loom::test
