// The WebAssembly kernels' threads: the caller and workers that JavaScript starts, sharing the module's memory.
#ifndef SVC_WASM_POOL_H
#define SVC_WASM_POOL_H

// Part `part` of `parts` of a job.
typedef void (*PartFn)(const void *job, int part, int parts);

// Runs fn's parts 0 .. parts - 1 on the caller and up to threads - 1 workers, and returns when all are done.
void svc_run_parts(const void *job, PartFn fn, int parts, int threads);

// The range [*from, *to) of part `part` of `parts` over n items, in equal shares.
static inline void part_range(int n, int part, int parts, int *from, int *to) {
  *from = (int)((long long)n * part / parts);
  *to = (int)((long long)n * (part + 1) / parts);
}

#endif
