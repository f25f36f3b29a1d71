/* The runtime compiled into every library written by export_library: the thread-local
 * error slot, a small pthread pool for parallel loops, and workspace memory.
 *
 * This file is not part of libloom. CMake embeds it as a string (loom_module_runtime_source.h)
 * and export_library compiles it with the target's C compiler, -fvisibility=hidden, next to
 * the generated object. Only loom_get_last_error and __loom_get_last_error are exported; the
 * functions generated code calls (loom_set_last_error, loom_parallel_launch,
 * loom_workspace_alloc/free) stay hidden, so two libraries in one process never share them
 * and never bind to libloom's copies.
 *
 * Plain C11 + POSIX threads: it needs nothing but libc (and libpthread on old glibc). */
#define _POSIX_C_SOURCE 200809L
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LOOM_RT_HIDDEN __attribute__((visibility("hidden")))
#define LOOM_RT_EXPORT __attribute__((visibility("default")))

#define LOOM_RT_ERR_ARGUMENT -1
#define LOOM_RT_ERR_RUNTIME -2
#define LOOM_RT_MAX_ERROR 2048
#define LOOM_RT_MAX_THREADS 1024
#define LOOM_RT_ALIGNMENT 64

typedef int32_t (*loom_parallel_lambda)(int32_t task_id, int32_t num_tasks, void* cdata);

/* ------------------------------------------------------------------ errors */

static _Thread_local char t_last_error[LOOM_RT_MAX_ERROR];

LOOM_RT_EXPORT const char* loom_get_last_error(void) { return t_last_error; }

/* The same slot under a name no other runtime defines: loaders look this one up. */
LOOM_RT_EXPORT const char* __loom_get_last_error(void) { return t_last_error; }

LOOM_RT_HIDDEN void loom_set_last_error(const char* msg) {
  if (msg == NULL) msg = "";
  size_t n = strlen(msg);
  if (n >= LOOM_RT_MAX_ERROR) n = LOOM_RT_MAX_ERROR - 1;
  memmove(t_last_error, msg, n);
  t_last_error[n] = '\0';
}

/* ------------------------------------------------------------------ memory */

LOOM_RT_HIDDEN void* loom_workspace_alloc(uint64_t nbytes) {
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

LOOM_RT_HIDDEN void loom_workspace_free(void* ptr) { free(ptr); }

/* ------------------------------------------------------------------ thread pool
 *
 * One launch at a time (launch_mu). The caller publishes a job under a new generation and
 * runs tasks itself; woken workers join the job (active++) and take task ids from a shared
 * counter. The caller returns once its own tasks are done and no joined worker is still
 * inside the job. A new job is published only when no worker is inside the previous one,
 * so a late joiner never sees a half-written job. A launch from inside a task (nested
 * parallelism) runs inline. */

typedef struct {
  pthread_mutex_t launch_mu;
  pthread_mutex_t mu;
  pthread_cond_t work_cv, done_cv;
  int num_threads; /* including the caller */
  int num_workers;
  pthread_t* workers;
  unsigned long generation;
  int stop;
  int active;
  /* the current job */
  loom_parallel_lambda f;
  void* cdata;
  int num_tasks;
  atomic_int next_task;
  /* its first failure by task id */
  int err_task, err_status;
  char err_msg[LOOM_RT_MAX_ERROR];
} loom_rt_pool;

static loom_rt_pool g_pool = {.launch_mu = PTHREAD_MUTEX_INITIALIZER,
                              .mu = PTHREAD_MUTEX_INITIALIZER,
                              .work_cv = PTHREAD_COND_INITIALIZER,
                              .done_cv = PTHREAD_COND_INITIALIZER};
static pthread_mutex_t g_init_mu = PTHREAD_MUTEX_INITIALIZER;
static atomic_int g_started;
static _Thread_local int t_inside_task;

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

/* Runs tasks of the current job until none is left; records the first failure. */
static void run_tasks(loom_rt_pool* p, loom_parallel_lambda f, void* cdata, int num_tasks) {
  for (int t = atomic_fetch_add(&p->next_task, 1); t < num_tasks; t = atomic_fetch_add(&p->next_task, 1)) {
    int32_t s = f(t, num_tasks, cdata);
    if (s != 0) {
      pthread_mutex_lock(&p->mu);
      if (t < p->err_task) {
        p->err_task = t;
        p->err_status = s;
        memcpy(p->err_msg, t_last_error, LOOM_RT_MAX_ERROR);
      }
      pthread_mutex_unlock(&p->mu);
    }
  }
}

static void* worker_main(void* arg) {
  loom_rt_pool* p = (loom_rt_pool*)arg;
  t_inside_task = 1;
  pthread_mutex_lock(&p->mu);
  unsigned long seen = p->generation;
  for (;;) {
    while (p->generation == seen && !p->stop) pthread_cond_wait(&p->work_cv, &p->mu);
    if (p->stop) break;
    seen = p->generation;
    loom_parallel_lambda f = p->f;
    void* cdata = p->cdata;
    int num_tasks = p->num_tasks;
    p->active++;
    pthread_mutex_unlock(&p->mu);
    run_tasks(p, f, cdata, num_tasks);
    pthread_mutex_lock(&p->mu);
    if (--p->active == 0) pthread_cond_broadcast(&p->done_cv);
  }
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

static void pool_reset_after_fork(void) {
  /* Only the forking thread survives in the child: start over with fresh locks. */
  pthread_mutex_init(&g_pool.launch_mu, NULL);
  pthread_mutex_init(&g_pool.mu, NULL);
  pthread_cond_init(&g_pool.work_cv, NULL);
  pthread_cond_init(&g_pool.done_cv, NULL);
  pthread_mutex_init(&g_init_mu, NULL);
  g_pool.workers = NULL;
  g_pool.num_workers = 0;
  g_pool.active = 0;
  g_pool.stop = 0;
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
    int n = default_num_threads();
    g_pool.workers = (pthread_t*)calloc((size_t)n, sizeof(pthread_t));
    g_pool.num_workers = 0;
    if (g_pool.workers != NULL) {
      for (int i = 1; i < n; ++i) {
        if (pthread_create(&g_pool.workers[g_pool.num_workers], NULL, worker_main, &g_pool) != 0) break;
        g_pool.num_workers++;
      }
    }
    g_pool.num_threads = g_pool.num_workers + 1;
    atomic_store(&g_started, 1);
  }
  pthread_mutex_unlock(&g_init_mu);
}

/* Joins the workers before the library's code is unmapped (dlclose) or the process exits. */
__attribute__((destructor)) static void pool_stop(void) {
  if (!atomic_load(&g_started)) return;
  pthread_mutex_lock(&g_pool.mu);
  g_pool.stop = 1;
  pthread_cond_broadcast(&g_pool.work_cv);
  pthread_mutex_unlock(&g_pool.mu);
  for (int i = 0; i < g_pool.num_workers; ++i) pthread_join(g_pool.workers[i], NULL);
  free(g_pool.workers);
  g_pool.workers = NULL;
  g_pool.num_workers = 0;
  atomic_store(&g_started, 0);
}

LOOM_RT_HIDDEN int32_t loom_num_threads(void) {
  pool_start();
  return g_pool.num_threads;
}

static int32_t run_inline(loom_parallel_lambda f, void* cdata, int32_t n) {
  for (int32_t t = 0; t < n; ++t) {
    int32_t s = f(t, n, cdata);
    if (s != 0) return s;
  }
  return 0;
}

LOOM_RT_HIDDEN int32_t loom_parallel_launch(loom_parallel_lambda f, void* cdata, int32_t num_tasks) {
  if (f == NULL) {
    loom_set_last_error("loom_parallel_launch: null task function");
    return LOOM_RT_ERR_ARGUMENT;
  }
  if (num_tasks < 0) {
    snprintf(t_last_error, LOOM_RT_MAX_ERROR, "loom_parallel_launch: negative task count %d", (int)num_tasks);
    return LOOM_RT_ERR_ARGUMENT;
  }
  if (t_inside_task) return run_inline(f, cdata, num_tasks == 0 ? 1 : num_tasks);
  pool_start();
  loom_rt_pool* p = &g_pool;
  int32_t n = num_tasks == 0 ? p->num_threads : num_tasks;
  if (n <= 1 || p->num_workers == 0) {
    t_inside_task = 1;
    int32_t s = run_inline(f, cdata, n);
    t_inside_task = 0;
    return s;
  }
  pthread_mutex_lock(&p->launch_mu);
  pthread_mutex_lock(&p->mu);
  while (p->active > 0) pthread_cond_wait(&p->done_cv, &p->mu);
  p->f = f;
  p->cdata = cdata;
  p->num_tasks = n;
  atomic_store(&p->next_task, 0);
  p->err_task = INT_MAX;
  p->err_status = 0;
  p->generation++;
  pthread_cond_broadcast(&p->work_cv);
  pthread_mutex_unlock(&p->mu);

  t_inside_task = 1;
  run_tasks(p, f, cdata, n);
  t_inside_task = 0;

  pthread_mutex_lock(&p->mu);
  while (p->active > 0) pthread_cond_wait(&p->done_cv, &p->mu);
  int32_t status = 0;
  if (p->err_task != INT_MAX) {
    status = p->err_status;
    memcpy(t_last_error, p->err_msg, LOOM_RT_MAX_ERROR);
  }
  pthread_mutex_unlock(&p->mu);
  pthread_mutex_unlock(&p->launch_mu);
  return status;
}
