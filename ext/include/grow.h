/* Growing arrays: one doubling policy for the engine, the pipeline and the trainer. */
#ifndef HF_TAGTOK_GROW_H
#define HF_TAGTOK_GROW_H

#include <stddef.h>
#include <stdlib.h>

/* The capacity to grow to from cap for need elements: doubling from 64, so growth is amortised. */
static inline size_t grow_capacity(size_t cap, size_t need) {
    cap = cap ? cap : 64;
    while (cap < need) cap *= 2;
    return cap;
}

/* realloc *array (any pointer type) to count elements of size bytes; on failure it is left as it was. */
static inline int grow_to(void *array, size_t count, size_t size) {
    void *bigger = realloc(*(void **)array, count * size);
    if (!bigger) return -1;
    *(void **)array = bigger;
    return 0;
}

/* Room for need elements in *array, whose capacity *cap is updated; -1 (array unchanged) on failure. */
static inline int grow_reserve(void *array, size_t *cap, size_t need, size_t size) {
    if (need <= *cap) return 0;
    size_t bigger = grow_capacity(*cap, need);
    if (grow_to(array, bigger, size)) return -1;
    *cap = bigger;
    return 0;
}

#endif
