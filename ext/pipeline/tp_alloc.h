/* Growing the pipeline's scratch arrays. */
#ifndef TP_ALLOC_H
#define TP_ALLOC_H

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#ifdef __linux__
#include <sys/mman.h>
#endif

/* The capacity to grow to from cap for need elements: doubling from 64, so growth is amortised. */
static inline size_t tp_capacity(size_t cap, size_t need) {
    cap = cap ? cap : 64;
    while (cap < need) cap *= 2;
    return cap;
}

/* realloc *array (any pointer type) to count elements of size bytes; on failure it is left as it was. */
static inline int tp_grow(void *array, size_t count, size_t size) {
    void *bigger = realloc(*(void **)array, count * size);
    if (!bigger) return -1;
    *(void **)array = bigger;
    return 0;
}

/* Memory for a big table read at random (the word caches): in 2 MB pages where the system offers them on
 * request, so a lookup misses the TLB less. Free with free(). */
#define TP_HUGE_PAGE ((size_t)2 << 20)
static inline void *tp_alloc_table(size_t size) {
    if (size < TP_HUGE_PAGE) return malloc(size);
    size = (size + TP_HUGE_PAGE - 1) & ~(TP_HUGE_PAGE - 1);
    void *p = aligned_alloc(TP_HUGE_PAGE, size);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (p) madvise(p, size, MADV_HUGEPAGE);
#endif
    return p;
}

/* tp_alloc_table of size bytes holding the first `used` bytes of old (freed); NULL on OOM (old kept). */
static inline void *tp_realloc_table(void *old, size_t used, size_t size) {
    void *p = tp_alloc_table(size);
    if (!p) return NULL;
    if (used) memcpy(p, old, used);
    free(old);
    return p;
}

#endif
