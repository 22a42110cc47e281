/* Tables read at random over megabytes (the word cache's index and arena, a BPE model's vocab and merges):
 * huge pages where the kernel gives them to those who ask, so a lookup seldom misses the TLB as well. */
#ifndef TP_HUGE_H
#define TP_HUGE_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#define TP_HUGE_MIN ((size_t)2 << 20) /* a smaller table takes no huge page */

/* Asks for huge pages over the whole pages of [at, at + bytes), before they are first written. */
static inline void tp_ask_huge(void *at, size_t bytes) {
#ifdef MADV_HUGEPAGE
    long page = sysconf(_SC_PAGESIZE);
    if (bytes < TP_HUGE_MIN || page <= 0) return;
    uintptr_t start = ((uintptr_t)at + (uintptr_t)page - 1) & ~((uintptr_t)page - 1);
    uintptr_t end = ((uintptr_t)at + bytes) & ~((uintptr_t)page - 1);
    if (end > start) madvise((void *)start, end - start, MADV_HUGEPAGE);
#else
    (void)at; (void)bytes;
#endif
}

/* A table of `bytes`, or NULL: from malloc below TP_HUGE_MIN, else pages of its own (huge where the kernel
 * gives them); tp_huge_free takes the same count back. */
static inline void *tp_huge_alloc(size_t bytes) {
    if (bytes < TP_HUGE_MIN) return malloc(bytes ? bytes : 1);
    void *at = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (at == MAP_FAILED) return NULL;
    tp_ask_huge(at, bytes);
    return at;
}

static inline void tp_huge_free(void *at, size_t bytes) {
    if (bytes < TP_HUGE_MIN) free(at);
    else if (at) munmap(at, bytes);
}

#endif
