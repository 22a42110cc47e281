/* Growing the pipeline's scratch arrays. */
#ifndef TP_ALLOC_H
#define TP_ALLOC_H

#include <stddef.h>
#include <stdlib.h>

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

#endif
