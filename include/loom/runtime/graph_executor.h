/* The graph executor's C ABI: a network compiled to a list of kernels, run in order over
 * one planned arena. Plain C11 + POSIX threads, so that an exported library embeds it (with
 * runtime/c_runtime.c) and a deployment needs neither LLVM nor loom's C++ runtime.
 * Implemented in runtime/graph_executor.c; libloom runs in-process graph modules with it.
 *
 * A plan is immutable tables (tensors, kernels, the run() signature) plus one mutable
 * loom_graph_state: the arena, allocated at the first run and reused, and a lock. A run
 * that finds the lock taken (another thread running the same plan) uses an arena of its own
 * for that call, so concurrent runs are safe. docs/deploy.md describes the exported ABI. */
#ifndef LOOM_RUNTIME_GRAPH_EXECUTOR_H_
#define LOOM_RUNTIME_GRAPH_EXECUTOR_H_
#include <dlpack/dlpack.h>
#include <pthread.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What a tensor of a plan is, and where its storage lives during a run. */
typedef enum {
  LOOM_GRAPH_INPUT = 0,        /* the caller's input buffer number `slot` */
  LOOM_GRAPH_OUTPUT = 1,       /* the caller's output buffer number `slot`, written by a kernel */
  LOOM_GRAPH_CONSTANT = 2,     /* `offset` bytes into the plan's constants blob */
  LOOM_GRAPH_INTERMEDIATE = 3, /* `offset` bytes into the arena */
} loom_graph_tensor_kind;

/* One tensor: dense, row-major, on the CPU. */
typedef struct {
  const char* name; /* the graph's value name, used in messages */
  int32_t kind;     /* loom_graph_tensor_kind */
  int32_t ndim;
  DLDataType dtype;
  const char* dtype_name; /* e.g. "float32", for messages */
  const int64_t* shape;
  uint64_t nbytes;
  uint64_t offset; /* INTERMEDIATE: arena byte offset; CONSTANT: blob byte offset; else 0 */
  int32_t slot;    /* INPUT: index among the inputs; OUTPUT: the output it is written into; else -1 */
} loom_graph_tensor;

/* A packed kernel entry, as exported functions have them: 0 or a negative status. */
typedef int32_t (*loom_graph_kernel_fn)(DLTensor** args, int32_t num_args);

typedef struct {
  const char* name; /* the compiled function's name, prefixed to its errors */
  loom_graph_kernel_fn fn;
  int32_t num_args;
  const int32_t* args; /* tensor ids, in the function's argument order */
} loom_graph_kernel;

/* The mutable part of a plan. Initialize with LOOM_GRAPH_STATE_INIT (or
 * loom_graph_state_init) and free with loom_graph_state_release. */
typedef struct {
  pthread_mutex_t mu; /* held by the run that uses `prepared` */
  void* prepared;     /* the arena and the tensor views, built by the first run */
} loom_graph_state;
#define LOOM_GRAPH_STATE_INIT {PTHREAD_MUTEX_INITIALIZER, 0}

typedef struct {
  const char* name; /* the entry's name ("run"), prefixed to argument errors */
  int32_t num_tensors;
  const loom_graph_tensor* tensors;
  int32_t num_kernels;
  const loom_graph_kernel* kernels;
  int32_t num_inputs;
  const int32_t* inputs; /* tensor ids; run()'s arguments are the inputs, then the outputs */
  int32_t num_outputs;
  /* Tensor ids. An output whose tensor is not the OUTPUT tensor of that slot (an input, a
   * constant, or an output listed twice) is copied into the caller's buffer after the
   * kernels ran. */
  const int32_t* outputs;
  uint64_t arena_bytes;
  const void* constants; /* 64-byte aligned */
  uint64_t constants_bytes;
  loom_graph_state* state;
} loom_graph_plan;

void loom_graph_state_init(loom_graph_state* s);
/* Frees the arena; the state can be used again (a later run allocates anew). */
void loom_graph_state_release(loom_graph_state* s);

/* Runs the plan: args are its inputs then its outputs, num_args their count. Checks every
 * argument before touching data (not null, on the CPU, dtype, shape, compact strides,
 * byte_offset 0, data aligned to the element size, outputs overlapping no input and no
 * other output); the error names the input or output. A failing kernel's error is prefixed
 * with the kernel's name. Returns 0, LOOM_ERR_ARGUMENT (-1) or LOOM_ERR_RUNTIME (-2) with
 * loom_get_last_error() set. */
int32_t loom_graph_run(const loom_graph_plan* plan, DLTensor** args, int32_t num_args);

/* The same, timing each kernel: args holds one more tensor at the end, float64[num_kernels]
 * on the CPU, which receives each kernel's wall time in seconds for this call. */
int32_t loom_graph_profile(const loom_graph_plan* plan, DLTensor** args, int32_t num_args);

#ifdef __cplusplus
}
#endif
#endif /* LOOM_RUNTIME_GRAPH_EXECUTOR_H_ */
