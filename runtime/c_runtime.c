/* loom's C runtime: the ABI generated code calls (thread-local error slot, the thread pool
 * behind parallel loops, workspace memory). One source, built two ways:
 *
 *  - into libloom, for JIT-ed code (LOOM_RT_LIBLOOM is defined): the ABI functions have
 *    default visibility, and runtime/thread_pool.cc wraps the pool as loom::runtime::ThreadPool;
 *  - into every library written by export_library: CMake embeds this file as a string
 *    (loom_module_runtime_source.h) and export_library compiles it with the target's C compiler
 *    and -fvisibility=hidden next to the generated object. Only loom_get_last_error and
 *    __loom_get_last_error are exported there; the functions generated code calls stay hidden,
 *    so two libraries in one process never share them and never bind to libloom's copies.
 *
 * Plain C11 + POSIX threads: it needs nothing but libc (and libpthread on old glibc). */
#define _POSIX_C_SOURCE 200809L
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LOOM_RT_HIDDEN __attribute__((visibility("hidden")))
#define LOOM_RT_EXPORT __attribute__((visibility("default")))
#ifdef LOOM_RT_LIBLOOM
#define LOOM_RT_ABI LOOM_RT_EXPORT /* resolved by JIT-ed code and called by libloom's users */
#else
#define LOOM_RT_ABI LOOM_RT_HIDDEN
#endif

#define LOOM_RT_ERR_ARGUMENT -1
#define LOOM_RT_ERR_RUNTIME -2
#define LOOM_RT_MAX_ERROR 2048
#define LOOM_RT_MAX_THREADS 1024
#define LOOM_RT_ALIGNMENT 64
/* Tasks per pool thread of a parallel loop (loom_parallel_launch with num_tasks = 0): the
 * tasks are taken from a shared counter, so a thread whose core is briefly taken by another
 * process or thread pool leaves its remaining share to the others. */
#define LOOM_RT_TASKS_PER_THREAD 8
/* Busy-wait iterations before a waiting thread blocks: parallel loops are often launched back
 * to back, but an idle pool must not take cores from other work for long. */
#define LOOM_RT_SPIN_ITERATIONS (1 << 13)

#ifdef LOOM_RT_LIBLOOM
/* libloom's build checks the definitions below against the public declarations. */
#include "loom/runtime/c_runtime_api.h"
_Static_assert(LOOM_RT_ERR_ARGUMENT == LOOM_ERR_ARGUMENT && LOOM_RT_ERR_RUNTIME == LOOM_ERR_RUNTIME,
               "status codes differ from c_runtime_api.h");
#else
typedef int32_t (*loom_parallel_lambda)(int32_t task_id, int32_t num_tasks, void* cdata);
#endif

/* ------------------------------------------------------------------ errors */

static _Thread_local char t_last_error[LOOM_RT_MAX_ERROR];

LOOM_RT_EXPORT const char* loom_get_last_error(void) { return t_last_error; }

#ifndef LOOM_RT_LIBLOOM
/* The same slot under a name no other runtime defines: loaders look this one up. */
LOOM_RT_EXPORT const char* __loom_get_last_error(void) { return t_last_error; }
#endif

LOOM_RT_ABI void loom_set_last_error(const char* msg) {
  if (msg == NULL) msg = "";
  size_t n = strlen(msg);
  if (n >= LOOM_RT_MAX_ERROR) n = LOOM_RT_MAX_ERROR - 1;
  memmove(t_last_error, msg, n);
  t_last_error[n] = '\0';
}

/* ------------------------------------------------------------------ memory */

LOOM_RT_ABI void* loom_workspace_alloc(uint64_t nbytes) {
  if (nbytes > UINT64_MAX - LOOM_RT_ALIGNMENT || nbytes > (uint64_t)SIZE_MAX - LOOM_RT_ALIGNMENT) {
    snprintf(t_last_error, LOOM_RT_MAX_ERROR, "loom_workspace_alloc: size %llu too large", (unsigned long long)nbytes);
    return NULL;
  }
  uint64_t size = nbytes == 0 ? LOOM_RT_ALIGNMENT : (nbytes + LOOM_RT_ALIGNMENT - 1) / LOOM_RT_ALIGNMENT * LOOM_RT_ALIGNMENT;
  void* p = aligned_alloc(LOOM_RT_ALIGNMENT, (size_t)size);
  if (p == NULL)
    snprintf(t_last_error, LOOM_RT_MAX_ERROR, "loom_workspace_alloc: out of memory allocating %llu bytes",
             (unsigned long long)size);
  return p;
}

LOOM_RT_ABI void loom_workspace_free(void* ptr) { free(ptr); }

/* ------------------------------------------------------------------ thread pool
 *
 * One launch at a time (launch_mu). The caller publishes a job under a new generation, runs
 * task 0 and then takes further task ids from a shared counter; workers that join the job do
 * the same. Workers spin briefly on the generation, then sleep on a condition variable. When
 * the tasks run out the caller closes the job to late joiners and waits only for the workers
 * that joined, so a job's fields are never rewritten while a worker can still read them, and
 * a worker that is asleep or descheduled costs no latency: the caller takes its tasks.
 * A launch from inside a task (nested parallelism) runs its tasks serially inline. */

#define LOOM_RT_CLOSED ((uint64_t)1 << 31)
#define LOOM_RT_JOINED_MASK (LOOM_RT_CLOSED - 1)

typedef struct {
  pthread_mutex_t launch_mu; /* one launch (or resize) at a time */
  pthread_mutex_t mu;        /* sleeping and waking */
  pthread_cond_t wake_cv, done_cv;
  int num_threads; /* including the caller */
  int num_workers;
  pthread_t* workers;

  /* The job of the current generation; rewritten only when every worker that joined has left. */
  loom_parallel_lambda f;
  void* cdata;
  int num_tasks;
  atomic_int max_joined; /* workers worth joining: num_tasks - 1 at most */
  atomic_int next_task;
  atomic_int left; /* workers that joined and are done */

  /* The first failure by task id. */
  pthread_mutex_t err_mu;
  int err_task, err_status;
  char err_msg[LOOM_RT_MAX_ERROR];

  /* generation << 32 | closed bit | number of workers that joined. A worker joins with a CAS
   * that fails once the caller has closed the job. */
  _Atomic uint64_t state;
  atomic_int stop;
  atomic_int sleepers;
  atomic_int caller_waiting;
} loom_rt_pool;

static loom_rt_pool g_pool = {.launch_mu = PTHREAD_MUTEX_INITIALIZER,
                              .mu = PTHREAD_MUTEX_INITIALIZER,
                              .wake_cv = PTHREAD_COND_INITIALIZER,
                              .done_cv = PTHREAD_COND_INITIALIZER,
                              .err_mu = PTHREAD_MUTEX_INITIALIZER};
static pthread_mutex_t g_init_mu = PTHREAD_MUTEX_INITIALIZER;
static atomic_int g_started;
static int g_requested_threads; /* 0: LOOM_NUM_THREADS, else every online CPU */
static _Thread_local int t_inside_task;

static uint32_t generation_of(uint64_t s) { return (uint32_t)(s >> 32); }

static void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

static int default_num_threads(void) {
  const char* env = getenv("LOOM_NUM_THREADS");
  if (env != NULL && *env != '\0') {
    char* end = NULL;
    long n = strtol(env, &end, 10);
    if (end != NULL && *end == '\0' && n >= 1) return n > LOOM_RT_MAX_THREADS ? LOOM_RT_MAX_THREADS : (int)n;
  }
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  if (n < 1) n = 1;
  return n > LOOM_RT_MAX_THREADS ? LOOM_RT_MAX_THREADS : (int)n;
}

static void record_failure(loom_rt_pool* p, int task, int status) {
  pthread_mutex_lock(&p->err_mu);
  if (task < p->err_task) {
    p->err_task = task;
    p->err_status = status;
    memcpy(p->err_msg, t_last_error, LOOM_RT_MAX_ERROR);
  }
  pthread_mutex_unlock(&p->err_mu);
}

static void run_one(loom_rt_pool* p, int task) {
  int32_t s = p->f(task, p->num_tasks, p->cdata);
  if (s != 0) record_failure(p, task, s);
}

static void run_tasks(loom_rt_pool* p) {
  for (int t = atomic_fetch_add(&p->next_task, 1); t < p->num_tasks; t = atomic_fetch_add(&p->next_task, 1))
    run_one(p, t);
}

static void* worker_main(void* arg) {
  loom_rt_pool* p = &g_pool;
  /* The generation current when the worker was created: a job published before the thread
   * gets going must still be picked up. */
  uint32_t seen = (uint32_t)(uintptr_t)arg;
  t_inside_task = 1;
  for (;;) {
    uint64_t s = atomic_load_explicit(&p->state, memory_order_acquire);
    for (int i = 0; i < LOOM_RT_SPIN_ITERATIONS && generation_of(s) == seen &&
                    !atomic_load_explicit(&p->stop, memory_order_relaxed);
         ++i) {
      cpu_relax();
      if ((i & 1023) == 1023) sched_yield();
      s = atomic_load_explicit(&p->state, memory_order_acquire);
    }
    if (generation_of(s) == seen && !atomic_load(&p->stop)) {
      pthread_mutex_lock(&p->mu);
      atomic_fetch_add(&p->sleepers, 1);
      while (generation_of(s = atomic_load(&p->state)) == seen && !atomic_load(&p->stop))
        pthread_cond_wait(&p->wake_cv, &p->mu);
      atomic_fetch_sub(&p->sleepers, 1);
      pthread_mutex_unlock(&p->mu);
    }
    if (atomic_load(&p->stop)) return NULL;
    seen = generation_of(s);
    int joined = 0;
    while (!joined && generation_of(s) == seen && !(s & LOOM_RT_CLOSED) &&
           (int)(s & LOOM_RT_JOINED_MASK) < atomic_load_explicit(&p->max_joined, memory_order_relaxed))
      joined = atomic_compare_exchange_weak(&p->state, &s, s + 1);
    if (!joined) continue;
    run_tasks(p);
    atomic_fetch_add(&p->left, 1);
    if (atomic_load(&p->caller_waiting)) {
      pthread_mutex_lock(&p->mu);
      pthread_cond_signal(&p->done_cv);
      pthread_mutex_unlock(&p->mu);
    }
  }
}

/* Starts n - 1 workers; called with g_init_mu or launch_mu held. */
static void start_workers(loom_rt_pool* p, int n) {
  atomic_store(&p->stop, 0);
  p->workers = (pthread_t*)calloc((size_t)n, sizeof(pthread_t));
  p->num_workers = 0;
  uint32_t seen = generation_of(atomic_load(&p->state));
  if (p->workers != NULL) {
    for (int i = 1; i < n; ++i) {
      if (pthread_create(&p->workers[p->num_workers], NULL, worker_main, (void*)(uintptr_t)seen) != 0) break;
      p->num_workers++;
    }
  }
  p->num_threads = p->num_workers + 1;
}

static void stop_workers(loom_rt_pool* p) {
  pthread_mutex_lock(&p->mu);
  atomic_store(&p->stop, 1);
  pthread_cond_broadcast(&p->wake_cv);
  pthread_mutex_unlock(&p->mu);
  for (int i = 0; i < p->num_workers; ++i) pthread_join(p->workers[i], NULL);
  free(p->workers);
  p->workers = NULL;
  p->num_workers = 0;
}

static void pool_reset_after_fork(void) {
  /* Only the forking thread survives in the child: the workers are gone and the locks may be
   * held by threads that no longer exist. Start over with fresh locks; the workers' array is
   * abandoned. */
  pthread_mutex_init(&g_pool.launch_mu, NULL);
  pthread_mutex_init(&g_pool.mu, NULL);
  pthread_mutex_init(&g_pool.err_mu, NULL);
  pthread_cond_init(&g_pool.wake_cv, NULL);
  pthread_cond_init(&g_pool.done_cv, NULL);
  pthread_mutex_init(&g_init_mu, NULL);
  g_pool.workers = NULL;
  g_pool.num_workers = 0;
  atomic_store(&g_pool.stop, 0);
  atomic_store(&g_pool.sleepers, 0);
  atomic_store(&g_pool.caller_waiting, 0);
  atomic_store(&g_pool.state, (uint64_t)(generation_of(atomic_load(&g_pool.state)) + 1) << 32 | LOOM_RT_CLOSED);
  atomic_store(&g_started, 0);
}

static void pool_start(void) {
  if (atomic_load(&g_started)) return;
  pthread_mutex_lock(&g_init_mu);
  if (!atomic_load(&g_started)) {
    static int atfork_registered = 0;
    if (!atfork_registered) {
      pthread_atfork(NULL, NULL, pool_reset_after_fork);
      atfork_registered = 1;
    }
    start_workers(&g_pool, g_requested_threads > 0 ? g_requested_threads : default_num_threads());
    atomic_store(&g_started, 1);
  }
  pthread_mutex_unlock(&g_init_mu);
}

/* Joins the workers before the library's code is unmapped (dlclose) or the process exits. */
__attribute__((destructor)) static void pool_stop(void) {
  if (!atomic_load(&g_started)) return;
  stop_workers(&g_pool);
  atomic_store(&g_started, 0);
}

/* Runs a job of n > 1 tasks on the caller and whichever workers join; launch_mu is held.
 * Returns the status of the failed task with the lowest id (0 if none) and sets *failed_task. */
static int32_t pool_launch(loom_rt_pool* p, loom_parallel_lambda f, void* cdata, int n, int* failed_task) {
  p->f = f;
  p->cdata = cdata;
  p->num_tasks = n;
  atomic_store(&p->next_task, 1);
  atomic_store(&p->left, 0);
  atomic_store(&p->max_joined, p->num_workers < n - 1 ? p->num_workers : n - 1);
  p->err_task = INT_MAX;
  p->err_status = 0;
  atomic_store(&p->state, (uint64_t)(generation_of(atomic_load(&p->state)) + 1) << 32);
  if (atomic_load(&p->sleepers) > 0) {
    pthread_mutex_lock(&p->mu);
    pthread_cond_broadcast(&p->wake_cv);
    pthread_mutex_unlock(&p->mu);
  }

  t_inside_task = 1;
  run_one(p, 0);
  run_tasks(p);
  t_inside_task = 0;

  int joined = (int)(atomic_fetch_or(&p->state, LOOM_RT_CLOSED) & LOOM_RT_JOINED_MASK);
  for (int i = 0; i < LOOM_RT_SPIN_ITERATIONS && atomic_load_explicit(&p->left, memory_order_acquire) < joined; ++i) {
    cpu_relax();
    if ((i & 1023) == 1023) sched_yield();
  }
  if (atomic_load(&p->left) < joined) {
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->caller_waiting, 1);
    while (atomic_load(&p->left) < joined) pthread_cond_wait(&p->done_cv, &p->mu);
    atomic_store(&p->caller_waiting, 0);
    pthread_mutex_unlock(&p->mu);
  }
  if (failed_task != NULL) *failed_task = p->err_task;
  if (p->err_task != INT_MAX) memcpy(t_last_error, p->err_msg, LOOM_RT_MAX_ERROR);
  return p->err_status;
}

static int32_t run_inline(loom_parallel_lambda f, void* cdata, int32_t n, int* failed_task) {
  int was_inside = t_inside_task;
  t_inside_task = 1;
  int32_t status = 0;
  for (int32_t t = 0; t < n && status == 0; ++t) {
    status = f(t, n, cdata);
    if (status != 0 && failed_task != NULL) *failed_task = t;
  }
  t_inside_task = was_inside;
  return status;
}

/* Runs f for task ids 0..num_tasks-1 (num_tasks > 0) and waits; the caller runs task 0.
 * Returns the first failure's status by task id, its message in loom_get_last_error(), and
 * its task id in *failed_task (INT_MAX if none). */
LOOM_RT_HIDDEN int32_t loom_rt_pool_run(loom_parallel_lambda f, void* cdata, int32_t num_tasks, int* failed_task) {
  if (failed_task != NULL) *failed_task = INT_MAX;
  if (t_inside_task) return run_inline(f, cdata, num_tasks, failed_task);
  pool_start();
  if (num_tasks <= 1) return run_inline(f, cdata, num_tasks, failed_task);
  loom_rt_pool* p = &g_pool;
  pthread_mutex_lock(&p->launch_mu);
  if (p->num_workers == 0) {
    pthread_mutex_unlock(&p->launch_mu);
    return run_inline(f, cdata, num_tasks, failed_task);
  }
  int32_t status = pool_launch(p, f, cdata, num_tasks, failed_task);
  pthread_mutex_unlock(&p->launch_mu);
  return status;
}

/* Whether the calling thread is running a task of the pool. */
LOOM_RT_HIDDEN int loom_rt_inside_task(void) { return t_inside_task; }

/* Restarts the pool with n threads (1..LOOM_RT_MAX_THREADS; the caller checks). */
LOOM_RT_HIDDEN void loom_rt_pool_resize(int n) {
  pool_start();
  pthread_mutex_lock(&g_pool.launch_mu);
  g_requested_threads = n;
  if (n != g_pool.num_threads) {
    stop_workers(&g_pool);
    start_workers(&g_pool, n);
  }
  pthread_mutex_unlock(&g_pool.launch_mu);
}

/* Number of threads the pool runs parallel loops on. */
LOOM_RT_ABI int32_t loom_num_threads(void) {
  pool_start();
  return g_pool.num_threads;
}

/* Runs f for task ids 0..n-1 and waits. num_tasks = 0: the pool's choice for a parallel loop,
 * LOOM_RT_TASKS_PER_THREAD tasks per pool thread (one task with a single thread); -1: one
 * task per pool thread. */
LOOM_RT_ABI int32_t loom_parallel_launch(loom_parallel_lambda f, void* cdata, int32_t num_tasks) {
  if (f == NULL) {
    loom_set_last_error("loom_parallel_launch: null task function");
    return LOOM_RT_ERR_ARGUMENT;
  }
  if (num_tasks == -1) {
    if (t_inside_task) return run_inline(f, cdata, 1, NULL);
    num_tasks = loom_num_threads();
  }
  if (num_tasks < 0) {
    snprintf(t_last_error, LOOM_RT_MAX_ERROR, "loom_parallel_launch: negative task count %d", (int)num_tasks);
    return LOOM_RT_ERR_ARGUMENT;
  }
  if (num_tasks == 0) {
    if (t_inside_task) return run_inline(f, cdata, 1, NULL);
    int threads = loom_num_threads();
    num_tasks = threads == 1 ? 1 : threads * LOOM_RT_TASKS_PER_THREAD;
  }
  return loom_rt_pool_run(f, cdata, num_tasks, NULL);
}
