// Helpers of the int8 templates (int8.h).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "int8.h"

namespace loom::tuner {

std::vector<Template> tensorize_templates() {
  return {matmul_int8_template(), conv2d_nchwc_int8_template(), matmul_tensorcore_template(),
          matmul_mma_template()};
}

namespace int8 {

namespace {

double float_attr(const records::Workload& w, const std::string& key, double def) {
  auto it = w.attrs.find(key);
  if (it == w.attrs.end()) return def;
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(it->second, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  LOOM_CHECK(used == it->second.size() && used > 0 && std::isfinite(v),
             "{}: attribute {} must be a finite number, got '{}'", w.op, key, it->second);
  return v;
}

}  // namespace

Requant check_workload(const records::Workload& w, const std::vector<std::string>& names,
                       const std::vector<std::string>& attrs) {
  LOOM_CHECK(w.dtype == "int8",
             "{}: dtype must be int8 (uint8 data, int8 weights, int32 accumulation; pass --dtype int8), got '{}'", w.op,
             w.dtype);
  LOOM_CHECK(w.shape.size() == names.size(), "{}: shape must be [{}] ({} sizes), got {} sizes", w.op,
             fmt::join(names, ", "), names.size(), w.shape.size());
  for (size_t i = 0; i < names.size(); ++i)
    LOOM_CHECK(w.shape[i] >= 1 && w.shape[i] <= INT32_MAX, "{}: size {} must be in [1, 2^31-1], got {}", w.op,
               names[i], w.shape[i]);
  std::vector<std::string> known = attrs;
  known.insert(known.end(), {"out_dtype", "scale", "zero_point"});
  for (const auto& [k, v] : w.attrs)
    LOOM_CHECK(std::find(known.begin(), known.end(), k) != known.end(), "{}: unknown attribute '{}' (expected {})",
               w.op, k, fmt::join(known, ", "));

  Requant q;
  auto it = w.attrs.find("out_dtype");
  const std::string out = it == w.attrs.end() ? "int32" : it->second;
  LOOM_CHECK(out == "int32" || out == "int8" || out == "uint8",
             "{}: attribute out_dtype must be int32, int8 or uint8, got '{}'", w.op, out);
  q.out = DataType::parse(out);
  if (!q.enabled()) {
    LOOM_CHECK(!w.attrs.count("scale") && !w.attrs.count("zero_point"),
               "{}: scale and zero_point requantize the output: they need out_dtype int8 or uint8", w.op);
    return q;
  }
  q.scale = float_attr(w, "scale", 1.0);
  LOOM_CHECK(q.scale > 0 && q.scale < 65536, "{}: attribute scale must lie in (0, 65536), got {}", w.op, q.scale);
  q.zero_point = tmpl::int_attr(w, "zero_point", 0, out == "int8" ? -128 : 0);
  LOOM_CHECK(q.zero_point <= (out == "int8" ? 127 : 255), "{}: zero_point {} is outside the range of {}", w.op,
             q.zero_point, out);
  int e = 0;
  const double f = std::frexp(q.scale, &e);  // scale = f·2^e, f in [0.5, 1)
  q.multiplier = std::llround(std::ldexp(f, 31));
  q.shift = 31 - e;
  if (q.multiplier == (int64_t(1) << 31)) {
    q.multiplier >>= 1;
    --q.shift;
  }
  LOOM_CHECK(q.shift >= 1 && q.shift <= 61, "{}: attribute scale {} is too small", w.op, q.scale);
  return q;
}

namespace {

SplitOptions without_tails(SplitOptions o, int64_t extent) {
  std::vector<std::vector<int64_t>> whole;
  for (const auto& c : o.candidates)
    if (extent % c.back() == 0) whole.push_back(c);
  if (!whole.empty()) o.candidates = std::move(whole);
  return o;
}

}  // namespace

SplitOptions row_options(int64_t extent) { return without_tails(tmpl::row_split_options(extent), extent); }

SplitOptions tile_options(int64_t extent, int64_t max) { return without_tails(tmpl::tile_options(extent, max), extent); }

SplitOptions block_options(int64_t extent) {
  return without_tails(tmpl::block_split_options(extent), tmpl::ceil_div(extent, kLanes) * kLanes);
}

te::Expr requantize(const Requant& q, const te::Expr& acc) {
  const DataType i64 = DataType::Int(64);
  te::Expr v = te::cast(i64, acc) * te::make_const(i64, q.multiplier) + te::make_const(i64, int64_t(1) << (q.shift - 1));
  te::Expr r = te::floordiv(v, te::make_const(i64, int64_t(1) << q.shift)) + te::make_const(i64, q.zero_point);
  const int64_t lo = q.out.is_int() ? -128 : 0, hi = q.out.is_int() ? 127 : 255;
  r = te::min(te::max(r, te::make_const(i64, lo)), te::make_const(i64, hi));
  return te::cast(q.out, r);
}

}  // namespace int8
}  // namespace loom::tuner
