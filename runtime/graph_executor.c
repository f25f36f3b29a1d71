/* The graph executor (include/loom/runtime/graph_executor.h): checks the caller's tensors,
 * binds them, the arena and the constants to the plan's tensors, and calls the kernels in
 * order. One source, built two ways like runtime/c_runtime.c:
 *
 *  - into libloom (LOOM_RT_LIBLOOM is defined), where in-process graph modules call it;
 *  - into every graph library written by export_library: CMake embeds this file and the
 *    headers it includes as strings, and export_library compiles it with -fvisibility=hidden
 *    next to the generated plan tables, which call it.
 *
 * Plain C11 + POSIX threads. */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "loom/runtime/c_runtime_api.h"
#include "loom/runtime/graph_executor.h"

#ifdef LOOM_RT_LIBLOOM
#define LOOM_GRAPH_API __attribute__((visibility("default")))
#else
#define LOOM_GRAPH_API __attribute__((visibility("hidden")))
#endif

#define LOOM_GRAPH_ALIGNMENT 64
#define LOOM_GRAPH_MAX_MESSAGE 2048

static void graph_error(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

static void graph_error(const char* fmt, ...) {
  char buf[LOOM_GRAPH_MAX_MESSAGE];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  loom_set_last_error(buf);
}

/* ------------------------------------------------------------------ the prepared state */

/* What a run needs besides the caller's tensors: the arena, a DLTensor view per tensor
 * (inputs and outputs are pointed at the caller's data by each run), and each kernel's
 * argument array over the views. */
typedef struct {
  void* arena;
  DLTensor* views;
  DLTensor** argv;      /* every kernel's arguments, one after the other */
  DLTensor*** kernel_argv; /* kernel k's arguments start at kernel_argv[k] */
} graph_prepared;

static void prepared_free(graph_prepared* p) {
  if (p == NULL) return;
  free(p->arena);
  free(p->views);
  free(p->argv);
  free(p->kernel_argv);
  free(p);
}

/* NULL with the error set when memory runs out. */
static graph_prepared* prepare(const loom_graph_plan* plan) {
  graph_prepared* p = calloc(1, sizeof(graph_prepared));
  if (p == NULL) goto oom;
  size_t total_args = 0;
  for (int32_t k = 0; k < plan->num_kernels; ++k) total_args += (size_t)plan->kernels[k].num_args;
  p->views = calloc((size_t)plan->num_tensors + 1, sizeof(DLTensor));
  p->argv = calloc(total_args + 1, sizeof(DLTensor*));
  p->kernel_argv = calloc((size_t)plan->num_kernels + 1, sizeof(DLTensor**));
  if (p->views == NULL || p->argv == NULL || p->kernel_argv == NULL) goto oom;
  if (plan->arena_bytes > 0) {
    uint64_t size = (plan->arena_bytes + LOOM_GRAPH_ALIGNMENT - 1) / LOOM_GRAPH_ALIGNMENT * LOOM_GRAPH_ALIGNMENT;
    if (size < plan->arena_bytes || size > (uint64_t)SIZE_MAX) goto oom;
    p->arena = aligned_alloc(LOOM_GRAPH_ALIGNMENT, (size_t)size);
    if (p->arena == NULL) goto oom;
  }
  for (int32_t i = 0; i < plan->num_tensors; ++i) {
    const loom_graph_tensor* t = &plan->tensors[i];
    DLTensor* v = &p->views[i];
    v->device.device_type = kDLCPU;
    v->device.device_id = 0;
    v->ndim = t->ndim;
    v->dtype = t->dtype;
    v->shape = (int64_t*)t->shape; /* kernels read shapes, never write them */
    v->strides = NULL;
    v->byte_offset = 0;
    if (t->kind == LOOM_GRAPH_CONSTANT) v->data = (void*)((const unsigned char*)plan->constants + t->offset);
    else if (t->kind == LOOM_GRAPH_INTERMEDIATE) v->data = (unsigned char*)p->arena + t->offset;
  }
  size_t at = 0;
  for (int32_t k = 0; k < plan->num_kernels; ++k) {
    p->kernel_argv[k] = &p->argv[at];
    for (int32_t a = 0; a < plan->kernels[k].num_args; ++a) p->argv[at++] = &p->views[plan->kernels[k].args[a]];
  }
  return p;
oom:
  graph_error("%s: out of memory preparing the graph (arena of %llu bytes)", plan->name,
              (unsigned long long)plan->arena_bytes);
  prepared_free(p);
  return NULL;
}

LOOM_GRAPH_API void loom_graph_state_init(loom_graph_state* s) {
  pthread_mutex_init(&s->mu, NULL);
  s->prepared = NULL;
}

LOOM_GRAPH_API void loom_graph_state_release(loom_graph_state* s) {
  if (s == NULL) return;
  pthread_mutex_lock(&s->mu);
  prepared_free((graph_prepared*)s->prepared);
  s->prepared = NULL;
  pthread_mutex_unlock(&s->mu);
}

/* ------------------------------------------------------------------ argument checks */

/* Checks the caller's tensor for argument i, plan tensor t; 0 with the error set if bad. */
static int check_arg(const loom_graph_plan* plan, const char* role, int32_t index, const loom_graph_tensor* t,
                     const DLTensor* a) {
  const char* n = plan->name;
  if (a == NULL) {
    graph_error("%s: %s %d ('%s') is null", n, role, index, t->name);
    return 0;
  }
  if (a->device.device_type != kDLCPU) {
    graph_error("%s: %s %d ('%s') is on device type %d: it must be on the CPU (device type kDLCPU)", n, role, index,
                t->name, (int)a->device.device_type);
    return 0;
  }
  if (a->ndim != t->ndim) {
    graph_error("%s: %s %d ('%s') has the wrong number of dimensions: must be %d, got %d", n, role, index, t->name,
                t->ndim, a->ndim);
    return 0;
  }
  if (a->dtype.code != t->dtype.code || a->dtype.bits != t->dtype.bits || a->dtype.lanes != t->dtype.lanes) {
    graph_error("%s: %s %d ('%s') has the wrong dtype: must be %s", n, role, index, t->name, t->dtype_name);
    return 0;
  }
  if (t->ndim > 0 && a->shape == NULL) {
    graph_error("%s: %s %d ('%s') has a null shape array", n, role, index, t->name);
    return 0;
  }
  for (int32_t d = 0; d < t->ndim; ++d) {
    if (a->shape[d] != t->shape[d]) {
      graph_error("%s: %s %d ('%s') has the wrong shape: dimension %d must be %lld, got %lld", n, role, index,
                  t->name, d, (long long)t->shape[d], (long long)a->shape[d]);
      return 0;
    }
  }
  if (a->strides != NULL) {
    int64_t stride = 1;
    for (int32_t d = t->ndim - 1; d >= 0; --d) {
      if (a->strides[d] != stride) {
        graph_error("%s: %s %d ('%s') must be compact row-major: stride of dimension %d must be %lld", n, role, index,
                    t->name, d, (long long)stride);
        return 0;
      }
      stride *= t->shape[d];
    }
  }
  if (a->byte_offset != 0) {
    graph_error("%s: %s %d ('%s') must have byte_offset 0", n, role, index, t->name);
    return 0;
  }
  if (a->data == NULL && t->nbytes != 0) {
    graph_error("%s: %s %d ('%s') has no data", n, role, index, t->name);
    return 0;
  }
  uint64_t align = ((uint64_t)t->dtype.bits + 7) / 8;
  if (align < 1) align = 1;
  if (align > 1 && (align & (align - 1)) == 0 && ((uintptr_t)a->data) % align != 0) {
    graph_error("%s: %s %d ('%s') data pointer must be aligned to %llu bytes", n, role, index, t->name,
                (unsigned long long)align);
    return 0;
  }
  return 1;
}

static int overlaps(const DLTensor* a, uint64_t na, const DLTensor* b, uint64_t nb) {
  if (na == 0 || nb == 0) return 0;
  uintptr_t a0 = (uintptr_t)a->data, b0 = (uintptr_t)b->data;
  return a0 < b0 + nb && b0 < a0 + na;
}

/* The argument tensors: inputs then outputs. Outputs must not overlap the inputs (a kernel
 * may write an output before a later one reads an input) nor each other. */
static int check_args(const loom_graph_plan* plan, DLTensor** args, int32_t num_args) {
  int32_t expected = plan->num_inputs + plan->num_outputs;
  if (num_args != expected) {
    graph_error("%s: expected %d arguments (%d inputs, then %d outputs), got %d", plan->name, expected,
                plan->num_inputs, plan->num_outputs, num_args);
    return 0;
  }
  if (num_args > 0 && args == NULL) {
    graph_error("%s: the argument array is null", plan->name);
    return 0;
  }
  for (int32_t i = 0; i < plan->num_inputs; ++i)
    if (!check_arg(plan, "input", i, &plan->tensors[plan->inputs[i]], args[i])) return 0;
  for (int32_t j = 0; j < plan->num_outputs; ++j)
    if (!check_arg(plan, "output", j, &plan->tensors[plan->outputs[j]], args[plan->num_inputs + j])) return 0;
  for (int32_t j = 0; j < plan->num_outputs; ++j) {
    const DLTensor* o = args[plan->num_inputs + j];
    uint64_t no = plan->tensors[plan->outputs[j]].nbytes;
    for (int32_t i = 0; i < plan->num_inputs; ++i) {
      if (overlaps(o, no, args[i], plan->tensors[plan->inputs[i]].nbytes)) {
        graph_error("%s: output %d ('%s') overlaps input %d ('%s'): outputs must not share memory with inputs",
                    plan->name, j, plan->tensors[plan->outputs[j]].name, i, plan->tensors[plan->inputs[i]].name);
        return 0;
      }
    }
    for (int32_t k = 0; k < j; ++k) {
      if (overlaps(o, no, args[plan->num_inputs + k], plan->tensors[plan->outputs[k]].nbytes)) {
        graph_error("%s: output %d ('%s') overlaps output %d ('%s'): outputs must not share memory", plan->name, j,
                    plan->tensors[plan->outputs[j]].name, k, plan->tensors[plan->outputs[k]].name);
        return 0;
      }
    }
  }
  return 1;
}

/* ------------------------------------------------------------------ running */

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Runs the kernels over `p` with the caller's tensors bound; seconds (if not NULL) gets each
 * kernel's time. */
static int32_t run_prepared(const loom_graph_plan* plan, graph_prepared* p, DLTensor** args, double* seconds) {
  /* Inputs, and views of inputs (reshapes that run no kernel), read the caller's buffer of their slot. */
  for (int32_t i = 0; i < plan->num_tensors; ++i)
    if (plan->tensors[i].kind == LOOM_GRAPH_INPUT) p->views[i].data = args[plan->tensors[i].slot]->data;
  for (int32_t j = 0; j < plan->num_outputs; ++j) {
    const loom_graph_tensor* t = &plan->tensors[plan->outputs[j]];
    if (t->kind == LOOM_GRAPH_OUTPUT && t->slot == j) p->views[plan->outputs[j]].data = args[plan->num_inputs + j]->data;
  }
  for (int32_t k = 0; k < plan->num_kernels; ++k) {
    const loom_graph_kernel* kern = &plan->kernels[k];
    double t0 = seconds ? now_seconds() : 0;
    int32_t status = kern->fn ? kern->fn(p->kernel_argv[k], kern->num_args) : LOOM_ERR_RUNTIME;
    if (seconds) seconds[k] = now_seconds() - t0;
    if (status != 0) {
      char msg[LOOM_GRAPH_MAX_MESSAGE];
      const char* why = kern->fn ? loom_get_last_error() : "no entry point";
      snprintf(msg, sizeof msg, "%s", why && *why ? why : "failed without a message");
      graph_error("%s: kernel %d of %d ('%s') failed: %s", plan->name, k, plan->num_kernels, kern->name, msg);
      return status;
    }
  }
  /* Outputs that no kernel writes into the caller's buffer: an input, a constant, or the
   * same value as an earlier output. */
  for (int32_t j = 0; j < plan->num_outputs; ++j) {
    const loom_graph_tensor* t = &plan->tensors[plan->outputs[j]];
    if (t->kind == LOOM_GRAPH_OUTPUT && t->slot == j) continue;
    const void* src = t->kind == LOOM_GRAPH_INPUT    ? args[t->slot]->data
                      : t->kind == LOOM_GRAPH_OUTPUT ? args[plan->num_inputs + t->slot]->data
                                                     : p->views[plan->outputs[j]].data;
    if (t->nbytes > 0) memcpy(args[plan->num_inputs + j]->data, src, (size_t)t->nbytes);
  }
  return 0;
}

static int32_t run_plan(const loom_graph_plan* plan, DLTensor** args, int32_t num_args, double* seconds) {
  if (plan == NULL) {
    loom_set_last_error("loom_graph_run: null plan");
    return LOOM_ERR_ARGUMENT;
  }
  if (!check_args(plan, args, num_args)) return LOOM_ERR_ARGUMENT;
  loom_graph_state* st = plan->state;
  /* The state's prepared arena when it is free; else (another thread is running this plan)
   * one for this call. */
  if (st != NULL && pthread_mutex_trylock(&st->mu) == 0) {
    if (st->prepared == NULL) st->prepared = prepare(plan);
    int32_t status = st->prepared ? run_prepared(plan, (graph_prepared*)st->prepared, args, seconds) : LOOM_ERR_RUNTIME;
    pthread_mutex_unlock(&st->mu);
    return status;
  }
  graph_prepared* p = prepare(plan);
  if (p == NULL) return LOOM_ERR_RUNTIME;
  int32_t status = run_prepared(plan, p, args, seconds);
  prepared_free(p);
  return status;
}

LOOM_GRAPH_API int32_t loom_graph_run(const loom_graph_plan* plan, DLTensor** args, int32_t num_args) {
  return run_plan(plan, args, num_args, NULL);
}

LOOM_GRAPH_API int32_t loom_graph_profile(const loom_graph_plan* plan, DLTensor** args, int32_t num_args) {
  if (plan == NULL) {
    loom_set_last_error("loom_graph_profile: null plan");
    return LOOM_ERR_ARGUMENT;
  }
  int32_t expected = plan->num_inputs + plan->num_outputs + 1;
  if (num_args != expected) {
    graph_error("%s: expected %d arguments (%d inputs, %d outputs, then the kernel times), got %d", plan->name,
                expected, plan->num_inputs, plan->num_outputs, num_args);
    return LOOM_ERR_ARGUMENT;
  }
  if (args == NULL) {
    graph_error("%s: the argument array is null", plan->name);
    return LOOM_ERR_ARGUMENT;
  }
  const DLTensor* t = args[num_args - 1];
  if (t == NULL || t->device.device_type != kDLCPU || t->ndim != 1 || t->shape == NULL ||
      t->shape[0] != plan->num_kernels || t->dtype.code != kDLFloat || t->dtype.bits != 64 || t->dtype.lanes != 1 ||
      (t->data == NULL && plan->num_kernels > 0) || t->byte_offset != 0 || (t->strides != NULL && t->strides[0] != 1) ||
      ((uintptr_t)t->data) % 8 != 0) {
    graph_error("%s: the last argument (the kernel times) must be a float64[%d] CPU tensor", plan->name,
                plan->num_kernels);
    return LOOM_ERR_ARGUMENT;
  }
  /* The times are written while kernels run: they must not share memory with any argument. */
  if (!check_args(plan, args, num_args - 1)) return LOOM_ERR_ARGUMENT;
  uint64_t nt = (uint64_t)plan->num_kernels * sizeof(double);
  for (int32_t i = 0; i < plan->num_inputs + plan->num_outputs; ++i) {
    int is_input = i < plan->num_inputs;
    int32_t index = is_input ? i : i - plan->num_inputs;
    const loom_graph_tensor* a = &plan->tensors[is_input ? plan->inputs[index] : plan->outputs[index]];
    if (overlaps(t, nt, args[i], a->nbytes)) {
      graph_error("%s: the kernel times (the last argument) overlap %s %d ('%s'): they must not share memory with "
                  "the inputs or outputs",
                  plan->name, is_input ? "input" : "output", index, a->name);
      return LOOM_ERR_ARGUMENT;
    }
  }
  return run_plan(plan, args, num_args - 1, (double*)t->data);
}
