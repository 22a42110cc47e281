#define _GNU_SOURCE
#include "tp_pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "tp_cpu_relax.h"

static struct {
    pthread_mutex_t busy;              /* held by the caller of a run for its whole duration */
    pthread_mutex_t mu;                /* guards everything below */
    pthread_cond_t wake, done;
    int spawned, active;
    uint64_t pending, generation;
    uint64_t born[TP_POOL_MAX];        /* generation each worker starts waiting after */
    tp_task fn;
    void *ctx;
} pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER,
          PTHREAD_COND_INITIALIZER, 0, 0, 0, 0, {0}, 0, 0};

static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
static int n_threads_cached;

/* The child has only the forking thread: forget the parent's workers and any lock state. */
static void reset_in_child(void) {
    pthread_mutex_init(&pool.busy, NULL);
    pthread_mutex_init(&pool.mu, NULL);
    pthread_cond_init(&pool.wake, NULL);
    pthread_cond_init(&pool.done, NULL);
    pool.spawned = pool.active = pool.pending = 0;
}

static void register_atfork(void) { pthread_atfork(NULL, NULL, reset_in_child); }

int tp_pool_threads(void) {
    if (n_threads_cached) return n_threads_cached;
    int n = 0;
    const char *env = getenv("HF_TAGTOK_THREADS");
    if (env && *env) n = atoi(env);
    if (n <= 0) {
        cpu_set_t set;
        n = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : (int)sysconf(_SC_NPROCESSORS_ONLN);
    }
    if (n < 1) n = 1;
    if (n > TP_POOL_MAX) n = TP_POOL_MAX;
    return n_threads_cached = n;
}

/* A wait spins this many pauses (tens of microseconds) before it sleeps: a batch's second round, and often
 * the next call, come sooner than a sleeping thread wakes. */
#define SPINS 4096

/* Spin (at most SPINS pauses) while *word is `value` (is_value) or is not; the caller then checks again
 * under pool.mu. */
static void spin_while(const uint64_t *word, uint64_t value, int is_value) {
    for (int i = 0; i < SPINS && (__atomic_load_n(word, __ATOMIC_ACQUIRE) == value) == is_value; i++) tp_cpu_relax();
}

static void *worker(void *arg) {
    int slot = (int)(intptr_t)arg;
    pthread_mutex_lock(&pool.mu);
    uint64_t seen = pool.born[slot];
    for (;;) {
        if (pool.generation == seen) {
            pthread_mutex_unlock(&pool.mu);
            spin_while(&pool.generation, seen, 1);
            pthread_mutex_lock(&pool.mu);
        }
        while (pool.generation == seen) pthread_cond_wait(&pool.wake, &pool.mu);
        seen = pool.generation;
        int mine = slot < pool.active;
        tp_task fn = pool.fn;
        void *ctx = pool.ctx;
        pthread_mutex_unlock(&pool.mu);
        if (mine) fn(ctx, slot);
        pthread_mutex_lock(&pool.mu);
        if (mine && __atomic_sub_fetch(&pool.pending, 1, __ATOMIC_RELEASE) == 0) pthread_cond_signal(&pool.done);
    }
    return NULL;
}

/* Called with pool.mu held. Returns how many slots (caller included) are usable. */
static int spawn_up_to(int want) {
    while (pool.spawned + 1 < want) {
        int slot = pool.spawned + 1;
        pool.born[slot] = pool.generation;
        pthread_t thread;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        int failed = pthread_create(&thread, &attr, worker, (void *)(intptr_t)slot);
        pthread_attr_destroy(&attr);
        if (failed) break;
        pool.spawned++;
    }
    return pool.spawned + 1 < want ? pool.spawned + 1 : want;
}

/* One round of fn on `slots` threads (the caller is slot 0); pool.busy is held. */
static void run_round(tp_task fn, void *ctx, int slots) {
    if (slots <= 1) {
        fn(ctx, 0);
        return;
    }
    pthread_mutex_lock(&pool.mu);
    pool.fn = fn;
    pool.ctx = ctx;
    pool.active = slots;
    pool.pending = slots - 1;
    __atomic_store_n(&pool.generation, pool.generation + 1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&pool.wake);
    pthread_mutex_unlock(&pool.mu);
    fn(ctx, 0);
    spin_while(&pool.pending, 0, 0);
    pthread_mutex_lock(&pool.mu);
    while (pool.pending > 0) pthread_cond_wait(&pool.done, &pool.mu);
    pthread_mutex_unlock(&pool.mu);
}

void tp_pool_run_twice(tp_task first, void (*between)(void *ctx), tp_task second, void *ctx, int want) {
    pthread_once(&atfork_once, register_atfork);
    if (want > tp_pool_threads()) want = tp_pool_threads();
    if (pthread_mutex_trylock(&pool.busy) != 0) {
        first(ctx, -1);
        if (between) between(ctx);
        if (second) second(ctx, -1);
        return;
    }
    int slots = 1;
    if (want > 1) {
        pthread_mutex_lock(&pool.mu);
        slots = spawn_up_to(want);
        pthread_mutex_unlock(&pool.mu);
    }
    run_round(first, ctx, slots);
    if (between) between(ctx);
    if (second) run_round(second, ctx, slots);
    pthread_mutex_unlock(&pool.busy);
}

void tp_pool_run(tp_task fn, void *ctx, int want) { tp_pool_run_twice(fn, NULL, NULL, ctx, want); }
