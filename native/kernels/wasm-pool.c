// The WebAssembly kernels' pool of threads, as the addon's (kernels.c): each part of a call goes to whichever
// thread claims it first, the caller included, so a worker still waking leaves its part to the caller instead of
// holding the call up; claims carry the call's generation, so a late worker claims nothing of a later call. A
// worker that finds no work spins for a while (a decode step calls the kernels every few microseconds), then
// waits in memory.atomic.wait32 until the next call. The caller never waits: it spins on the parts in progress
// (a worker's part at most). Workers are started by JavaScript (src/runtime/wasm-kernels.ts), each an instance
// of this module over the same memory, with a stack of its own, running svc_worker forever.
#include "wasm-pool.h"

#include <stdint.h>

#define EXPORT(name) __attribute__((export_name(name)))

// Rounds of a worker's spin before it waits (about a millisecond here).
enum { SPIN = 1 << 19 };

static struct {
  unsigned generation;  // bumped for each call that has work for the workers; sleeping workers wait on it
  int threads;          // the current call's threads: workers 0 .. threads - 2 take part
  int parts;
  PartFn fn;
  const void *job;
  uint64_t next;  // the current call's generation (high half) and its next unclaimed part
  int done;       // parts of the current call finished
  int workers;    // started so far
  int sleepers;   // workers waiting in memory.atomic.wait32
  int resting;    // set by svc_rest: spinning workers wait now, until the next call
  int by_workers; // parts the workers have run, for tests
} pool;

// Runs the parts of call g that no thread has claimed yet; returns how many it ran.
static int run_claimed(unsigned g, int parts, PartFn fn, const void *job) {
  int ran = 0;
  uint64_t v = __atomic_load_n(&pool.next, __ATOMIC_ACQUIRE);
  for (;;) {
    if ((unsigned)(v >> 32) != g || (int)(uint32_t)v >= parts) return ran;
    if (!__atomic_compare_exchange_n(&pool.next, &v, v + 1, 1, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) continue;
    fn(job, (int)(uint32_t)v, parts);
    __atomic_add_fetch(&pool.done, 1, __ATOMIC_ACQ_REL);
    ran++;
    v = __atomic_load_n(&pool.next, __ATOMIC_ACQUIRE);
  }
}

// A worker's loop, `id` from 0: never returns.
EXPORT("svc_worker") void svc_worker(int id) {
  __atomic_add_fetch(&pool.workers, 1, __ATOMIC_SEQ_CST);
  unsigned seen = 0;  // a worker that starts during a call may still claim some of its parts
  for (;;) {
    unsigned g;
    for (int i = 0; (g = __atomic_load_n(&pool.generation, __ATOMIC_SEQ_CST)) == seen; i++) {
      if ((i & 255) == 255 && (i >= SPIN || __atomic_load_n(&pool.resting, __ATOMIC_RELAXED))) {
        // counted before the generation is read again, so a caller that bumps it after that read sees a sleeper
        __atomic_add_fetch(&pool.sleepers, 1, __ATOMIC_SEQ_CST);
        while ((g = __atomic_load_n(&pool.generation, __ATOMIC_SEQ_CST)) == seen)
          __builtin_wasm_memory_atomic_wait32((int *)&pool.generation, (int)seen, -1);
        __atomic_sub_fetch(&pool.sleepers, 1, __ATOMIC_SEQ_CST);
        break;
      }
    }
    // the call's parts as of generation g, read until the generation holds still
    int threads, parts;
    PartFn fn;
    const void *job;
    do {
      seen = g;
      threads = __atomic_load_n(&pool.threads, __ATOMIC_ACQUIRE);
      parts = __atomic_load_n(&pool.parts, __ATOMIC_ACQUIRE);
      fn = __atomic_load_n(&pool.fn, __ATOMIC_ACQUIRE);
      job = __atomic_load_n(&pool.job, __ATOMIC_ACQUIRE);
    } while ((g = __atomic_load_n(&pool.generation, __ATOMIC_SEQ_CST)) != seen);
    if (id < threads - 1) __atomic_add_fetch(&pool.by_workers, run_claimed(g, parts, fn, job), __ATOMIC_RELAXED);
  }
}

// Spinning workers wait now (other threads are about to need the cores), until the next call.
EXPORT("svc_rest") void svc_rest(void) {
  __atomic_store_n(&pool.resting, 1, __ATOMIC_RELAXED);
}

// The parts the workers have run so far.
EXPORT("svc_worker_parts") int svc_worker_parts(void) {
  return __atomic_load_n(&pool.by_workers, __ATOMIC_RELAXED);
}

void svc_run_parts(const void *job, PartFn fn, int parts, int threads) {
  if (threads < 2 || parts < 2 || !__atomic_load_n(&pool.workers, __ATOMIC_ACQUIRE)) {
    for (int i = 0; i < parts; i++) fn(job, i, parts);
    return;
  }
  const unsigned g = pool.generation + 1;
  __atomic_store_n(&pool.resting, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&pool.threads, threads, __ATOMIC_RELEASE);
  __atomic_store_n(&pool.parts, parts, __ATOMIC_RELEASE);
  __atomic_store_n(&pool.fn, fn, __ATOMIC_RELEASE);
  __atomic_store_n(&pool.job, job, __ATOMIC_RELEASE);
  __atomic_store_n(&pool.done, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&pool.next, (uint64_t)g << 32, __ATOMIC_RELEASE);
  __atomic_store_n(&pool.generation, g, __ATOMIC_SEQ_CST);
  if (__atomic_load_n(&pool.sleepers, __ATOMIC_SEQ_CST)) __builtin_wasm_memory_atomic_notify((int *)&pool.generation, (unsigned)-1);
  run_claimed(g, parts, fn, job);
  while (__atomic_load_n(&pool.done, __ATOMIC_ACQUIRE) < parts) {}
}
