// Converter of ONNX's Einsum (opset 12 on): the equation is parsed at import and lowered to
// registry operators. Each operand first has its repeated labels (diagonals) taken with take
// and the labels no one else needs summed with reduce_sum; operands then combine left to
// right, a pair with labels to contract through matmul/batch_matmul (batch labels first, the
// contracted ones innermost, so the matmul templates apply; transposes only where the
// operand's order does not already fit), a pair without through a broadcasting multiply;
// a final transpose gives the output's order.
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <optional>

#include "onnx_importer.h"

namespace loom::graph_opt::onnx_frontend {
namespace {

/// Labels are letters (their char codes) or, for the dims "..." stands for, 256 + the dim's
/// position among the broadcast ellipsis dims.
using Label = int;
using Labels = std::vector<Label>;

struct Operand {
  Value value;
  Labels labels;                 // one per dim of value
  std::vector<int64_t> shape;
};

std::string label_str(Label l) { return l < 256 ? std::string(1, char(l)) : fmt::format("...{}", l - 256); }

/// One term of the equation: letters and at most one "...".
struct Term {
  std::string letters_before, letters_after;
  bool ellipsis = false;
};

Term parse_term(Importer& im, const std::string& t, const std::string& eq) {
  Term r;
  size_t e = t.find("...");
  if (e != std::string::npos) {
    r.ellipsis = true;
    r.letters_before = t.substr(0, e);
    r.letters_after = t.substr(e + 3);
    if (r.letters_after.find('.') != std::string::npos)
      im.invalid(fmt::format("equation '{}': term '{}' has more than one ellipsis", eq, t));
  } else {
    r.letters_before = t;
  }
  for (const std::string* part : {&r.letters_before, &r.letters_after})
    for (char c : *part)
      if (!std::isalpha(static_cast<unsigned char>(c)))
        im.invalid(fmt::format("equation '{}': term '{}' has '{}', not a letter or '...'", eq, t, c));
  return r;
}

/// The labels of a term for a rank-`rank` operand whose "..." covers the last `ell` of the
/// `max_ell` broadcast dims.
Labels term_labels(const Term& t, size_t ell, size_t max_ell) {
  Labels ls(t.letters_before.begin(), t.letters_before.end());
  for (size_t k = 0; k < ell; ++k) ls.push_back(256 + int(max_ell - ell + k));
  ls.insert(ls.end(), t.letters_after.begin(), t.letters_after.end());
  return ls;
}

class EinsumLowering {
 public:
  explicit EinsumLowering(Importer& im) : im_(im) {}

  void run() {
    std::string eq;
    for (char c : im_.attr_str("equation"))
      if (!std::isspace(static_cast<unsigned char>(c))) eq += c;
    const size_t arrow = eq.find("->");
    const std::string lhs = arrow == std::string::npos ? eq : eq.substr(0, arrow);
    std::vector<Term> terms;
    size_t start = 0;
    while (true) {
      size_t comma = lhs.find(',', start);
      terms.push_back(parse_term(im_, lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start), eq));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    const int n = im_.num_inputs();
    if (int(terms.size()) != n)
      im_.invalid(fmt::format("equation '{}' has {} input terms but the node has {} inputs", eq, terms.size(), n));

    // Ranks and the broadcast ellipsis dims.
    std::vector<std::vector<int64_t>> shapes;
    size_t max_ell = 0;
    for (int i = 0; i < n; ++i) {
      shapes.push_back(im_.input_shape(i));
      const size_t letters = terms[size_t(i)].letters_before.size() + terms[size_t(i)].letters_after.size();
      const size_t rank = shapes.back().size();
      if (terms[size_t(i)].ellipsis ? rank < letters : rank != letters)
        im_.invalid(fmt::format("equation '{}': term {} names {} dims{} but input {} has rank {} (shape {})", eq, i,
                                letters, terms[size_t(i)].ellipsis ? " and '...'" : "", i, rank,
                                shape_str(shapes.back())));
      if (terms[size_t(i)].ellipsis) max_ell = std::max(max_ell, rank - letters);
    }
    std::map<Label, int64_t> extent;
    for (int i = 0; i < n; ++i) {
      const Term& t = terms[size_t(i)];
      const size_t ell = t.ellipsis ? shapes[size_t(i)].size() - t.letters_before.size() - t.letters_after.size() : 0;
      Operand op{im_.input(i), term_labels(t, ell, max_ell), shapes[size_t(i)]};
      for (size_t d = 0; d < op.labels.size(); ++d) {
        const Label l = op.labels[d];
        const int64_t e = op.shape[d];
        auto [it, fresh] = extent.emplace(l, e);
        if (!fresh && it->second != e) {
          if (l < 256 || (it->second != 1 && e != 1))
            im_.invalid(fmt::format("equation '{}': label '{}' has extent {} in one place and {} in another", eq,
                                    label_str(l), it->second, e));
          it->second = std::max(it->second, e);
        }
      }
      operands_.push_back(std::move(op));
    }

    // The output labels.
    Labels out;
    if (arrow != std::string::npos) {
      const std::string rhs = eq.substr(arrow + 2);
      const Term t = parse_term(im_, rhs, eq);
      if (t.ellipsis && std::none_of(terms.begin(), terms.end(), [](const Term& x) { return x.ellipsis; }))
        im_.invalid(fmt::format("equation '{}': the output has '...' but no input does", eq));
      out = term_labels(t, t.ellipsis ? max_ell : 0, max_ell);
      Labels sorted = out;
      std::sort(sorted.begin(), sorted.end());
      if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
        im_.invalid(fmt::format("equation '{}': the output repeats a label", eq));
      for (Label l : out)
        if (!extent.count(l)) im_.invalid(fmt::format("equation '{}': output label '{}' is in no input", eq, label_str(l)));
    } else {
      // Implicit: the broadcast dims, then the letters used once, alphabetically.
      for (size_t k = 0; k < max_ell; ++k) out.push_back(256 + int(k));
      Labels once;
      for (int i = 0; i < n; ++i)
        for (Label l : operands_[size_t(i)].labels) {
          if (l >= 256) continue;
          int uses = 0;
          for (const Operand& o : operands_) uses += int(std::count(o.labels.begin(), o.labels.end(), l));
          if (uses == 1) once.push_back(l);
        }
      std::sort(once.begin(), once.end());
      out.insert(out.end(), once.begin(), once.end());
    }
    output_ = out;
    extent_ = extent;

    for (Operand& op : operands_) take_diagonals(op);
    for (size_t i = 0; i < operands_.size(); ++i) sum_unshared(i);
    Operand acc = operands_[0];
    for (size_t i = 1; i < operands_.size(); ++i) {
      acc = combine(acc, operands_[i], i + 1);
      // Labels the pair made private (in neither the output nor a later operand) go now.
      sum_private(acc, i + 1);
    }
    // Broadcast dims of extent 1 that the output keeps at their full extent.
    std::vector<int64_t> full;
    bool widen = false;
    for (size_t d = 0; d < acc.labels.size(); ++d) {
      full.push_back(extent_.at(acc.labels[d]));
      widen = widen || full.back() != acc.shape[d];
    }
    if (widen) {
      acc.value = im_.broadcast_to(acc.value, full);
      acc.shape = full;
    }
    // The output's order.
    std::vector<int64_t> perm;
    for (Label l : output_) {
      auto it = std::find(acc.labels.begin(), acc.labels.end(), l);
      LOOM_ICHECK(it != acc.labels.end());
      perm.push_back(it - acc.labels.begin());
    }
    Value v = permute(acc, perm);
    std::vector<int64_t> shape;
    for (Label l : output_) shape.push_back(extent_.at(l));
    im_.set_output(0, im_.reshape(v, shape), shape.empty());
  }

 private:
  /// Whether label `l` is needed after operand `from` (exclusive): in the output or in a later operand.
  bool needed_after(Label l, size_t from) const {
    if (std::find(output_.begin(), output_.end(), l) != output_.end()) return true;
    for (size_t k = from; k < operands_.size(); ++k)
      if (std::find(operands_[k].labels.begin(), operands_[k].labels.end(), l) != operands_[k].labels.end()) return true;
    return false;
  }

  Value permute(const Operand& op, const std::vector<int64_t>& perm) {
    bool identity = true;
    for (size_t d = 0; d < perm.size(); ++d) identity = identity && perm[d] == int64_t(d);
    if (identity || op.shape.size() <= 1) return op.value;
    return im_.op("transpose", {op.value}, {{"axes", perm}});
  }

  /// op with dims reordered to `labels` (a permutation of its labels).
  void reorder(Operand& op, const Labels& labels) {
    std::vector<int64_t> perm;
    std::vector<int64_t> shape;
    for (Label l : labels) {
      const int64_t d = std::find(op.labels.begin(), op.labels.end(), l) - op.labels.begin();
      perm.push_back(d);
      shape.push_back(op.shape[size_t(d)]);
    }
    op.value = permute(op, perm);
    op.labels = labels;
    op.shape = shape;
  }

  /// A label repeated within one operand: its diagonal, one dim (until no label repeats).
  void take_diagonals(Operand& op) {
    while (true) {
      std::optional<std::pair<size_t, size_t>> pair;
      for (size_t a = 0; a < op.labels.size() && !pair; ++a)
        for (size_t b = a + 1; b < op.labels.size() && !pair; ++b)
          if (op.labels[a] == op.labels[b]) pair = std::pair{a, b};
      if (!pair) return;
      const auto [a, b] = *pair;
      // The pair moved last, flattened, and every (e+1)-th element taken.
      const Label l = op.labels[a];
      const int64_t e = op.shape[a];
      Labels labels;
      std::vector<int64_t> perm, shape;
      for (size_t d = 0; d < op.labels.size(); ++d)
        if (d != a && d != b) {
          labels.push_back(op.labels[d]);
          perm.push_back(int64_t(d));
          shape.push_back(op.shape[d]);
        }
      perm.push_back(int64_t(a));
      perm.push_back(int64_t(b));
      std::vector<int64_t> flat = shape;
      flat.push_back(e * e);
      Value v = im_.reshape(permute(op, perm), flat);
      runtime::NDArray idx = runtime::NDArray::empty({e}, DataType::Int(64));
      for (int64_t k = 0; k < e; ++k) idx.data<int64_t>()[k] = k * (e + 1);
      v = im_.op("take", {v, im_.constant(idx, "diagonal")}, {{"axis", int64_t(flat.size() - 1)}});
      labels.push_back(l);
      shape.push_back(e);
      op = Operand{v, labels, shape};
    }
  }

  void sum_labels(Operand& op, const std::vector<bool>& drop) {
    std::vector<int64_t> axes, shape;
    Labels labels;
    for (size_t d = 0; d < op.labels.size(); ++d) {
      if (drop[d]) axes.push_back(int64_t(d));
      else {
        labels.push_back(op.labels[d]);
        shape.push_back(op.shape[d]);
      }
    }
    if (axes.empty()) return;
    op.value = im_.op("reduce_sum", {op.value}, {{"axes", axes}, {"keepdims", int64_t(1)}});
    op.value = im_.reshape(op.value, shape);
    op.labels = labels;
    op.shape = shape;
  }

  /// Sums operand i's labels that no other operand and not the output has.
  void sum_unshared(size_t i) {
    Operand& op = operands_[i];
    std::vector<bool> drop(op.labels.size(), false);
    for (size_t d = 0; d < op.labels.size(); ++d) {
      const Label l = op.labels[d];
      bool shared = std::find(output_.begin(), output_.end(), l) != output_.end();
      for (size_t k = 0; k < operands_.size() && !shared; ++k)
        if (k != i) shared = std::find(operands_[k].labels.begin(), operands_[k].labels.end(), l) != operands_[k].labels.end();
      drop[d] = !shared;
    }
    sum_labels(op, drop);
  }

  void sum_private(Operand& op, size_t from) {
    std::vector<bool> drop(op.labels.size(), false);
    for (size_t d = 0; d < op.labels.size(); ++d) drop[d] = !needed_after(op.labels[d], from);
    sum_labels(op, drop);
  }

  /// `op` broadcast so that label dims of extent 1 take the extent `other` has for them.
  void widen_to(Operand& op, const Operand& other) {
    std::vector<int64_t> shape = op.shape;
    bool widen = false;
    for (size_t d = 0; d < op.labels.size(); ++d) {
      auto it = std::find(other.labels.begin(), other.labels.end(), op.labels[d]);
      if (it == other.labels.end()) continue;
      const int64_t e = other.shape[size_t(it - other.labels.begin())];
      if (e != shape[d] && shape[d] == 1) {
        shape[d] = e;
        widen = true;
      }
    }
    if (!widen) return;
    op.value = im_.broadcast_to(op.value, shape);
    op.shape = shape;
  }

  /// a and b combined; `from` is the index of the first operand not yet combined.
  Operand combine(Operand a, Operand b, size_t from) {
    Labels batch, contract, a_only, b_only;
    for (Label l : a.labels) {
      const bool in_b = std::find(b.labels.begin(), b.labels.end(), l) != b.labels.end();
      if (!in_b) a_only.push_back(l);
      else if (needed_after(l, from)) batch.push_back(l);
      else contract.push_back(l);
    }
    for (Label l : b.labels)
      if (std::find(a.labels.begin(), a.labels.end(), l) == a.labels.end()) b_only.push_back(l);
    auto ext = [&](const Operand& o, Label l) {
      return o.shape[size_t(std::find(o.labels.begin(), o.labels.end(), l) - o.labels.begin())];
    };
    auto prod = [&](const Operand& o, const Labels& ls) {
      int64_t p = 1;
      for (Label l : ls) p *= ext(o, l);
      return p;
    };
    Labels result = batch;
    result.insert(result.end(), a_only.begin(), a_only.end());
    result.insert(result.end(), b_only.begin(), b_only.end());

    if (contract.empty()) {
      // Outer product over a_only and b_only, elementwise over batch: a broadcasting multiply.
      Labels la = batch, lb = batch;
      la.insert(la.end(), a_only.begin(), a_only.end());
      lb.insert(lb.end(), b_only.begin(), b_only.end());
      reorder(a, la);
      reorder(b, lb);
      std::vector<int64_t> sa = a.shape, sb;
      for (Label l : batch) sb.push_back(ext(b, l));
      for (size_t k = 0; k < a_only.size(); ++k) sb.push_back(1);
      for (Label l : b_only) sb.push_back(ext(b, l));
      for (size_t k = 0; k < b_only.size(); ++k) sa.push_back(1);
      std::vector<int64_t> shape;
      for (size_t k = 0; k < sa.size(); ++k) shape.push_back(std::max(sa[k], sb[k]));
      Value v = im_.op("multiply", {im_.reshape(a.value, sa), im_.reshape(b.value, sb)});
      return Operand{v, result, shape};
    }

    // Batch labels of extent 1 on one side: materialized to the other's extent.
    widen_to(a, b);
    widen_to(b, a);
    // a as [batch, a_only, contract]; b as [batch, contract, b_only] or, when its dims are
    // already so, [batch, b_only, contract] with transpose_b.
    Labels la = batch, lb_kn = batch, lb_nk = batch;
    la.insert(la.end(), a_only.begin(), a_only.end());
    la.insert(la.end(), contract.begin(), contract.end());
    lb_kn.insert(lb_kn.end(), contract.begin(), contract.end());
    lb_kn.insert(lb_kn.end(), b_only.begin(), b_only.end());
    lb_nk.insert(lb_nk.end(), b_only.begin(), b_only.end());
    lb_nk.insert(lb_nk.end(), contract.begin(), contract.end());
    const bool transpose_b = b.labels == lb_nk && b.labels != lb_kn;
    reorder(a, la);
    reorder(b, transpose_b ? lb_nk : lb_kn);
    const int64_t B = prod(a, batch), M = prod(a, a_only), K = prod(a, contract), N = prod(b, b_only);
    Value v;
    const te::ops::Attrs attrs = {{"transpose_b", int64_t(transpose_b ? 1 : 0)}};
    if (batch.empty()) {
      v = im_.op("matmul", {im_.reshape(a.value, {M, K}), im_.reshape(b.value, transpose_b ? std::vector<int64_t>{N, K}
                                                                                            : std::vector<int64_t>{K, N})},
                 attrs);
    } else {
      v = im_.op("batch_matmul",
                 {im_.reshape(a.value, {B, M, K}),
                  im_.reshape(b.value, transpose_b ? std::vector<int64_t>{B, N, K} : std::vector<int64_t>{B, K, N})},
                 attrs);
    }
    std::vector<int64_t> shape;
    for (Label l : batch) shape.push_back(ext(a, l));
    for (Label l : a_only) shape.push_back(ext(a, l));
    for (Label l : b_only) shape.push_back(ext(b, l));
    return Operand{im_.reshape(v, shape), result, shape};
  }

  Importer& im_;
  std::vector<Operand> operands_;
  Labels output_;
  std::map<Label, int64_t> extent_;
};

void einsum(Importer& im) {
  if (im.num_inputs() < 1) im.invalid("Einsum needs at least one input");
  EinsumLowering(im).run();
}

}  // namespace

void add_einsum_converters(std::map<std::string, Converter>& m) { m["Einsum"] = einsum; }

}  // namespace loom::graph_opt::onnx_frontend
