// "softmax": out[N,M] = exp(x - max) / sum(exp(x - max)) along each row of x[N,M], float32.
//
// Rows run in parallel. The exponentials (read by both the sum and the output) are either a
// stage of their own with the row max computed at its row, or inlined into both readers
// with the row maxima computed first (exp_inline); the sum is computed at the output's row.
// Elementwise loops are split by a knob and their inner parts vectorized; the reductions'
// inner parts are unrolled or not.
#include "templates.h"

namespace loom::tuner {
namespace {

using te::Tensor;

std::vector<Tensor> compute(const records::Workload& w) {
  Tensor x = te::placeholder({w.shape[0], w.shape[1]}, DataType::Float(32), "x");
  return {x, te::ops::softmax(x, -1, "softmax")};
}

SplitOptions vector_split(int64_t extent) {
  SplitOptions o;
  o.policy = SplitOptions::kPowerOfTwo;
  o.max_factor = 64;
  (void)extent;
  return o;
}

schedule::Schedule schedule_softmax(ConfigContext& cfg, const std::vector<Tensor>& args, const Target&) {
  Tensor out = args[1];
  const int64_t M = *te::as_const_int(out.shape()[1]);
  cfg.split("tile_out", M, vector_split(M));
  cfg.split("tile_exp", M, vector_split(M));
  SplitOptions red;
  red.policy = SplitOptions::kPowerOfTwo;
  red.max_factor = 16;
  cfg.split("tile_reduce", M, red);
  cfg.annotate("unroll_reduce", {"unroll", "none"});
  const int64_t exp_inline = cfg.choice("exp_inline", {0, 1});

  Tensor maxelem = tmpl::find_input(out, "softmax_maxelem");
  Tensor e = tmpl::find_input(out, "softmax_exp");
  Tensor expsum = tmpl::find_input(out, "softmax_expsum");
  Schedule s = create_schedule({out});
  schedule::Stage so = s[out];
  te::IterVar row = so.axis(0);
  auto op = cfg.apply_split("tile_out", so, so.axis(1));
  so.vectorize(op[1]);
  so.parallel(row);
  schedule::Stage se = s[e], smax = s[maxelem], ssum = s[expsum];
  ssum.compute_at(so, row);
  if (exp_inline) {
    se.compute_inline();
    smax.parallel(smax.axis(0));
  } else {
    te::IterVar erow = se.axis(0);
    auto ep = cfg.apply_split("tile_exp", se, se.axis(1));
    se.vectorize(ep[1]);
    se.parallel(erow);
    smax.compute_at(se, erow);
  }
  for (schedule::Stage sr : {smax, ssum}) {
    auto rp = cfg.apply_split("tile_reduce", sr, sr.reduce_axis(0));
    cfg.apply_annotate("unroll_reduce", sr, rp[1]);
  }
  return s;
}

}  // namespace

Template softmax_template() {
  Template t;
  t.name = "softmax";
  t.shape_doc = "N,M";
  t.doc = "row softmax of x[N,M], float32";
  t.check = [](const records::Workload& w) { tmpl::check_shape(w, {"N", "M"}); };
  t.flop = [](const records::Workload& w) { return 5.0 * double(w.shape[0]) * double(w.shape[1]); };
  t.compute = compute;
  t.schedule = schedule_softmax;
  t.default_config = [](const ConfigSpace& sp) {
    tmpl::Preferences p;
    p.values["tile_out"] = {-1, 16};
    p.values["tile_exp"] = {-1, 16};
    p.values["tile_reduce"] = {-1, 4};
    p.labels["unroll_reduce"] = "unroll";
    p.values["exp_inline"] = {0};
    return tmpl::closest_config(sp, p);
  };
  return t;
}

}  // namespace loom::tuner
