// GraphPlan's checks, constant packing, and GraphExecutor: the plan as graph_executor.c's
// C tables.
#include "loom/runtime/graph_plan.h"

#include <algorithm>
#include <cstring>

#include "loom/runtime/error.h"
#include "loom/runtime/shape.h"

namespace loom::runtime {

const char* to_string(GraphTensorKind k) {
  switch (k) {
    case GraphTensorKind::kInput: return "input";
    case GraphTensorKind::kOutput: return "output";
    case GraphTensorKind::kConstant: return "constant";
    case GraphTensorKind::kIntermediate: return "intermediate";
  }
  return "?";
}

int64_t GraphTensor::nbytes() const { return checked_byte_count(shape, dtype, fmt::format("tensor '{}'", name)); }

namespace {

constexpr uint64_t kConstantAlignment = 64;

std::string describe(const GraphPlan& p, int32_t id) {
  return fmt::format("{} {} '{}'", to_string(p.tensors[id].kind), id, p.tensors[id].name);
}

/// Kernel index that writes each tensor (-1: none), and the last kernel reading it.
struct Lifetimes {
  std::vector<int> def, last_use;
};

/// The tensor that owns `id`'s bytes: its source if it is a view, else itself.
int32_t storage_of(const GraphPlan& p, int32_t id) {
  const int32_t src = p.tensors[size_t(id)].view_of;
  return src >= 0 ? src : id;
}

Lifetimes lifetimes(const GraphPlan& p) {
  Lifetimes l{std::vector<int>(p.tensors.size(), -1), std::vector<int>(p.tensors.size(), -1)};
  for (size_t k = 0; k < p.kernels.size(); ++k) {
    const GraphKernel& kern = p.kernels[k];
    for (size_t a = 0; a < kern.args.size(); ++a) {
      int32_t t = storage_of(p, kern.args[a]);
      if (kern.writes[a]) l.def[t] = int(k);
      else l.last_use[t] = int(k);
    }
  }
  return l;
}

}  // namespace

void GraphPlan::validate() const {
  const int32_t n = int32_t(tensors.size());
  auto check_id = [&](int32_t id, const std::string& where) {
    LOOM_CHECK(id >= 0 && id < n, "graph plan: {} names tensor {}, but the plan has {} tensors", where, id, n);
  };
  for (int32_t i = 0; i < n; ++i) {
    const GraphTensor& t = tensors[i];
    int64_t bytes = t.nbytes();
    if (t.kind == GraphTensorKind::kConstant) {
      LOOM_CHECK(t.value.defined(), "graph plan: {} has no value", describe(*this, i));
      LOOM_CHECK(t.value.device().device_type == kDLCPU && t.value.dtype() == t.dtype && t.value.shape() == t.shape,
                 "graph plan: the value of {} is {}{} on device type {}, expected {}{} on the CPU", describe(*this, i),
                 t.value.dtype().str(), shape_str(t.value.shape()), int(t.value.device().device_type), t.dtype.str(),
                 shape_str(t.shape));
    }
    if (t.kind == GraphTensorKind::kIntermediate) {
      int64_t align = std::max(1, t.dtype.element_of().bytes());
      LOOM_CHECK(t.arena_offset >= 0 && t.arena_offset % align == 0,
                 "graph plan: {} has arena offset {}, which is not a non-negative multiple of its element size {}",
                 describe(*this, i), t.arena_offset, align);
      LOOM_CHECK(t.arena_offset <= arena_bytes && bytes <= arena_bytes - t.arena_offset,
                 "graph plan: {} (bytes [{}, {})) lies outside the arena of {} bytes", describe(*this, i),
                 t.arena_offset, t.arena_offset + bytes, arena_bytes);
    }
  }
  LOOM_CHECK(arena_bytes >= 0, "graph plan: negative arena size {}", arena_bytes);
  for (int32_t i = 0; i < n; ++i) {
    const GraphTensor& t = tensors[i];
    if (t.view_of < 0) continue;
    check_id(t.view_of, describe(*this, i) + " as a view");
    const GraphTensor& src = tensors[t.view_of];
    LOOM_CHECK((t.kind == GraphTensorKind::kIntermediate || t.kind == GraphTensorKind::kInput) && t.kind == src.kind &&
                   src.view_of < 0 && t.view_of != i,
               "graph plan: {} views {}; a view is an intermediate of an intermediate, or an input of an input, "
               "that is no view",
               describe(*this, i), describe(*this, t.view_of));
    LOOM_CHECK(t.nbytes() == src.nbytes() && (t.kind == GraphTensorKind::kInput || t.arena_offset == src.arena_offset),
               "graph plan: {} ({} bytes at arena offset {}) views {} ({} bytes at offset {}); a view has its "
               "source's bytes",
               describe(*this, i), t.nbytes(), t.arena_offset, describe(*this, t.view_of), src.nbytes(), src.arena_offset);
  }

  LOOM_CHECK(!outputs.empty(), "graph plan: the plan has no outputs");
  std::vector<int> input_slot(n, -1), output_uses(n, 0);
  for (size_t i = 0; i < inputs.size(); ++i) {
    check_id(inputs[i], fmt::format("input {}", i));
    LOOM_CHECK(tensors[inputs[i]].kind == GraphTensorKind::kInput, "graph plan: input {} is {}, not an input tensor", i,
               describe(*this, inputs[i]));
    LOOM_CHECK(input_slot[inputs[i]] < 0, "graph plan: {} is listed as input {} and {}", describe(*this, inputs[i]),
               input_slot[inputs[i]], i);
    input_slot[inputs[i]] = int(i);
  }
  for (size_t j = 0; j < outputs.size(); ++j) {
    check_id(outputs[j], fmt::format("output {}", j));
    LOOM_CHECK(tensors[outputs[j]].kind != GraphTensorKind::kIntermediate,
               "graph plan: output {} is {}, whose arena storage later kernels may reuse; make it an output tensor", j,
               describe(*this, outputs[j]));
    output_uses[outputs[j]]++;
  }
  for (int32_t i = 0; i < n; ++i) {
    if (tensors[i].kind == GraphTensorKind::kInput)
      LOOM_CHECK(input_slot[i] >= 0 || (tensors[i].view_of >= 0 && input_slot[tensors[i].view_of] >= 0),
                 "graph plan: {} is not among the plan's inputs nor a view of one", describe(*this, i));
    if (tensors[i].kind == GraphTensorKind::kOutput)
      LOOM_CHECK(output_uses[i] > 0, "graph plan: {} is not among the plan's outputs", describe(*this, i));
  }

  std::vector<int> writer(n, -1);
  for (size_t k = 0; k < kernels.size(); ++k) {
    const GraphKernel& kern = kernels[k];
    std::string who = fmt::format("kernel {} ('{}')", k, kern.name);
    LOOM_CHECK(kern.writes.size() == kern.args.size(), "graph plan: {} has {} arguments but {} write flags", who,
               kern.args.size(), kern.writes.size());
    for (size_t a = 0; a < kern.args.size(); ++a) check_id(kern.args[a], fmt::format("{} argument {}", who, a));
    for (size_t a = 0; a < kern.args.size(); ++a) {
      int32_t t = kern.args[a];
      if (kern.writes[a]) {
        GraphTensorKind kind = tensors[t].kind;
        LOOM_CHECK(kind == GraphTensorKind::kOutput || kind == GraphTensorKind::kIntermediate,
                   "graph plan: {} writes {} (argument {}), which is read-only", who, describe(*this, t), a);
        LOOM_CHECK(tensors[t].view_of < 0, "graph plan: {} writes {} (argument {}), a view of {}", who,
                   describe(*this, t), a, describe(*this, tensors[t].view_of));
        LOOM_CHECK(writer[t] < 0, "graph plan: {} is written by kernel {} and again by {}", describe(*this, t),
                   writer[t], who);
        for (size_t b = 0; b < kern.args.size(); ++b)
          LOOM_CHECK(b == a || kern.args[b] != t, "graph plan: {} both reads and writes {} (arguments {} and {})", who,
                     describe(*this, t), std::min(a, b), std::max(a, b));
        writer[t] = int(k);
      }
    }
    for (size_t a = 0; a < kern.args.size(); ++a) {
      int32_t t = kern.args[a];
      GraphTensorKind kind = tensors[t].kind;
      if (!kern.writes[a] && (kind == GraphTensorKind::kOutput || kind == GraphTensorKind::kIntermediate))
        LOOM_CHECK(writer[storage_of(*this, t)] >= 0 && writer[storage_of(*this, t)] < int(k),
                   "graph plan: {} reads {} (argument {}) before any kernel writes it", who, describe(*this, t), a);
    }
  }
  for (int32_t i = 0; i < n; ++i)
    if (tensors[i].kind == GraphTensorKind::kOutput)
      LOOM_CHECK(writer[i] >= 0, "graph plan: no kernel writes {}", describe(*this, i));

  // Arena sharing: two intermediates live at one kernel must not share a byte.
  Lifetimes life = lifetimes(*this);
  std::vector<int32_t> live;
  for (int32_t i = 0; i < n; ++i)
    if (tensors[i].kind == GraphTensorKind::kIntermediate && tensors[i].view_of < 0 && writer[i] >= 0) live.push_back(i);
  for (size_t x = 0; x < live.size(); ++x) {
    for (size_t y = x + 1; y < live.size(); ++y) {
      int32_t a = live[x], b = live[y];
      int a_end = std::max(life.def[a], life.last_use[a]), b_end = std::max(life.def[b], life.last_use[b]);
      bool same_time = life.def[a] <= b_end && life.def[b] <= a_end;
      int64_t a0 = tensors[a].arena_offset, a1 = a0 + tensors[a].nbytes();
      int64_t b0 = tensors[b].arena_offset, b1 = b0 + tensors[b].nbytes();
      bool same_bytes = a0 < b1 && b0 < a1;
      LOOM_CHECK(!(same_time && same_bytes),
                 "graph plan: {} (arena bytes [{}, {}), kernels {}..{}) and {} (bytes [{}, {}), kernels {}..{}) "
                 "share memory while both are live",
                 describe(*this, a), a0, a1, life.def[a], a_end, describe(*this, b), b0, b1, life.def[b], b_end);
    }
  }
}

int64_t GraphPlan::unplanned_bytes() const {
  int64_t total = 0;
  for (const auto& t : tensors)
    if (t.kind == GraphTensorKind::kIntermediate && t.view_of < 0) total += t.nbytes();
  return total;
}

PackedConstants pack_constants(const GraphPlan& plan) {
  PackedConstants out;
  out.offsets.assign(plan.tensors.size(), 0);
  uint64_t size = 0;
  for (size_t i = 0; i < plan.tensors.size(); ++i) {
    const GraphTensor& t = plan.tensors[i];
    if (t.kind != GraphTensorKind::kConstant) continue;
    out.offsets[i] = size;
    size += (uint64_t(t.nbytes()) + kConstantAlignment - 1) / kConstantAlignment * kConstantAlignment;
  }
  out.blob = NDArray::empty({int64_t(size)}, DataType::UInt(8));
  for (size_t i = 0; i < plan.tensors.size(); ++i) {
    const GraphTensor& t = plan.tensors[i];
    if (t.kind != GraphTensorKind::kConstant) continue;
    auto* dst = static_cast<unsigned char*>(out.blob.raw_data()) + out.offsets[i];
    size_t n = size_t(t.nbytes());
    if (n) std::memcpy(dst, t.value.raw_data(), n);
    size_t padded = (n + kConstantAlignment - 1) / kConstantAlignment * kConstantAlignment;
    std::memset(dst + n, 0, padded - n);  // deterministic bytes in exported libraries
  }
  return out;
}

GraphExecutor::GraphExecutor(GraphPlan plan, std::vector<loom_graph_kernel_fn> entries) : plan_(std::move(plan)) {
  plan_.validate();
  LOOM_CHECK(entries.size() == plan_.kernels.size(), "graph executor: {} kernel entries for {} kernels", entries.size(),
             plan_.kernels.size());
  constants_ = pack_constants(plan_);
  for (auto& t : plan_.tensors) t.value = NDArray();

  const size_t n = plan_.tensors.size();
  shapes_.resize(n);
  dtype_names_.resize(n);
  tensors_.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const GraphTensor& t = plan_.tensors[i];
    shapes_[i] = t.shape;
    shapes_[i].push_back(0);  // never empty: a scalar's shape pointer is not null
    dtype_names_[i] = t.dtype.str();
    loom_graph_tensor& c = tensors_[i];
    c.name = t.name.c_str();
    c.kind = int32_t(t.kind);
    c.ndim = int32_t(t.shape.size());
    c.dtype = t.dtype.to_dlpack();
    c.dtype_name = dtype_names_[i].c_str();
    c.shape = shapes_[i].data();
    c.nbytes = uint64_t(t.nbytes());
    c.offset = t.kind == GraphTensorKind::kConstant       ? constants_.offsets[i]
               : t.kind == GraphTensorKind::kIntermediate ? uint64_t(t.arena_offset)
                                                          : 0;
    c.slot = -1;
  }
  for (size_t i = 0; i < plan_.inputs.size(); ++i) tensors_[plan_.inputs[i]].slot = int32_t(i);
  for (size_t i = 0; i < plan_.tensors.size(); ++i)
    if (plan_.tensors[i].kind == GraphTensorKind::kInput && plan_.tensors[i].view_of >= 0)
      tensors_[i].slot = tensors_[size_t(plan_.tensors[i].view_of)].slot;
  for (size_t j = plan_.outputs.size(); j-- > 0;)
    if (plan_.tensors[plan_.outputs[j]].kind == GraphTensorKind::kOutput) tensors_[plan_.outputs[j]].slot = int32_t(j);

  kernels_.resize(plan_.kernels.size());
  for (size_t k = 0; k < plan_.kernels.size(); ++k) {
    const GraphKernel& g = plan_.kernels[k];
    kernels_[k] = {g.name.c_str(), entries[k], int32_t(g.args.size()), g.args.data()};
  }
  loom_graph_state_init(&state_);
  c_plan_.name = plan_.name.c_str();
  c_plan_.num_tensors = int32_t(n);
  c_plan_.tensors = tensors_.data();
  c_plan_.num_kernels = int32_t(kernels_.size());
  c_plan_.kernels = kernels_.data();
  c_plan_.num_inputs = int32_t(plan_.inputs.size());
  c_plan_.inputs = plan_.inputs.data();
  c_plan_.num_outputs = int32_t(plan_.outputs.size());
  c_plan_.outputs = plan_.outputs.data();
  c_plan_.arena_bytes = uint64_t(plan_.arena_bytes);
  c_plan_.constants = constants_.blob.raw_data();
  c_plan_.constants_bytes = constants_.blob.nbytes();
  c_plan_.state = &state_;
}

GraphExecutor::~GraphExecutor() {
  loom_graph_state_release(&state_);
  pthread_mutex_destroy(&state_.mu);
}

int32_t GraphExecutor::run(DLTensor** args, int32_t num_args) const { return loom_graph_run(&c_plan_, args, num_args); }

int32_t GraphExecutor::profile(DLTensor** args, int32_t num_args) const {
  return loom_graph_profile(&c_plan_, args, num_args);
}

}  // namespace loom::runtime
