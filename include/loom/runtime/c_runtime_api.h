/* The C ABI of loom's runtime: what generated code calls and what a deployed module
 * exports. Plain C so that a deployment can use it without C++. Implemented once, in
 * runtime/c_runtime.c, which libloom is built from and every exported library embeds. */
#ifndef LOOM_RUNTIME_C_RUNTIME_API_H_
#define LOOM_RUNTIME_C_RUNTIME_API_H_
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Status codes returned by generated functions. */
#define LOOM_OK 0
#define LOOM_ERR_ARGUMENT -1 /* a bad argument (null, shape, dtype, alignment, …) */
#define LOOM_ERR_RUNTIME -2  /* a failure while running (allocation, device) */

/* The message of the last failure on this thread ("" if none). */
const char* loom_get_last_error(void);
void loom_set_last_error(const char* msg);

/* A parallel task body: runs the share of work numbered task_id of num_tasks. Returns 0 or
 * an error status. */
typedef int32_t (*loom_parallel_lambda)(int32_t task_id, int32_t num_tasks, void* cdata);
/* Runs f for task ids 0..n-1 on the thread pool and waits; returns the first non-zero status
 * by task id. Idle threads take the next task id from a shared counter, so a thread that is
 * slowed (its core briefly taken) leaves the remaining tasks to the others. n = 0 is the
 * pool's choice for a parallel loop: 8 tasks per pool thread, or 1 with a single thread.
 * n = LOOM_PARALLEL_TASK_PER_THREAD (-1) is one task per pool thread: a contiguous half (third,
 * …) each, for loops too short to pay for 8 (each task costs a shared counter's cache line),
 * whose threads then read what the same split of a producer wrote. */
#define LOOM_PARALLEL_TASK_PER_THREAD -1
int32_t loom_parallel_launch(loom_parallel_lambda f, void* cdata, int32_t num_tasks);
/* Number of threads the pool runs parallel loops on. */
int32_t loom_num_threads(void);

/* Aligned scratch memory for temporaries too large for the stack. */
void* loom_workspace_alloc(uint64_t nbytes);
void loom_workspace_free(void* ptr);

#ifdef __cplusplus
}
#endif
#endif /* LOOM_RUNTIME_C_RUNTIME_API_H_ */
