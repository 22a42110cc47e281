/* One persistent pthread pool per process, sized to the machine, safe across fork.
 *
 * tp_pool_run(fn, ctx, want) calls fn(ctx, slot) once on each of up to `want` threads (the caller is
 * slot 0) and returns when all have returned; fn pulls its work items from ctx itself. Slots are
 * exclusive while a run lasts, so callers may keep per-slot scratch. When the pool is already busy
 * (another thread's batch), fn runs once on the caller with slot -1: "use private scratch".
 * A child process created by fork gets a fresh, empty pool (pthread_atfork), so it never waits on
 * threads that exist only in the parent. */
#ifndef TP_POOL_H
#define TP_POOL_H

typedef void (*tp_task)(void *ctx, int slot);

int tp_pool_threads(void); /* slots available: HF_TAGTOK_THREADS, else the CPUs this process may use */
void tp_pool_run(tp_task fn, void *ctx, int want);
/* fn = first on the threads, then between(ctx) once on the caller (may be NULL), then second on the same
 * slots; no other run can take the slots in between, so per-slot scratch written by `first` is still
 * this run's when `second` reads it. */
void tp_pool_run_twice(tp_task first, void (*between)(void *ctx), tp_task second, void *ctx, int want);

#define TP_POOL_MAX 64

#endif
