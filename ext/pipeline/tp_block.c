#include "tp_block.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#define HEADER 16             /* before the block: its usable size (keeps malloc's alignment) */
#define KEPT_MIN ((size_t)1 << 18) /* smaller blocks go straight back: the heap reuses them itself */
#define KEPT_MAX ((size_t)32 << 20) /* nor is a larger one kept */
#define KEPT_BLOCKS 64
#define KEPT_BYTES ((size_t)128 << 20)

static struct {
    pthread_mutex_t mu;
    struct { uint8_t *at; size_t size; } blocks[KEPT_BLOCKS];
    size_t n, bytes;
} kept = {PTHREAD_MUTEX_INITIALIZER, {{0, 0}}, 0, 0};

static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void reset_in_child(void) { pthread_mutex_init(&kept.mu, NULL); }

static void register_atfork(void) { pthread_atfork(NULL, NULL, reset_in_child); }

/* bytes rounded up to a multiple of an eighth of its highest power of two */
static size_t size_class(size_t bytes) {
    size_t step = (size_t)1 << (63 - __builtin_clzll(bytes | 8)) >> 3;
    return (bytes + step - 1) / step * step;
}

/* The smallest kept block of size to 2 * size bytes (a small result never holds a big block), taken out of
 * the kept ones; NULL if none. */
static uint8_t *take_kept(size_t size) {
    uint8_t *at = NULL;
    pthread_mutex_lock(&kept.mu);
    size_t best = kept.n;
    for (size_t k = 0; k < kept.n; k++)
        if (kept.blocks[k].size >= size && kept.blocks[k].size / 2 <= size &&
            (best == kept.n || kept.blocks[k].size < kept.blocks[best].size)) best = k;
    if (best < kept.n) {
        at = kept.blocks[best].at;
        kept.bytes -= kept.blocks[best].size;
        kept.blocks[best] = kept.blocks[--kept.n];
    }
    pthread_mutex_unlock(&kept.mu);
    return at;
}

/* Whether the block was kept (else the caller frees it). */
static int keep(uint8_t *at, size_t size) {
    pthread_mutex_lock(&kept.mu);
    int room = kept.n < KEPT_BLOCKS && kept.bytes + size <= KEPT_BYTES;
    if (room) {
        kept.blocks[kept.n].at = at;
        kept.blocks[kept.n++].size = size;
        kept.bytes += size;
    }
    pthread_mutex_unlock(&kept.mu);
    return room;
}

void *tp_block_alloc(size_t bytes) {
    pthread_once(&atfork_once, register_atfork);
    if (bytes > SIZE_MAX - HEADER) return NULL;
    size_t size = bytes < KEPT_MIN || bytes > KEPT_MAX ? bytes : size_class(bytes);
    uint8_t *at = size >= KEPT_MIN && size <= KEPT_MAX ? take_kept(size) : NULL;
    if (!at) {
        if (!(at = malloc(HEADER + size))) return NULL;
        *(size_t *)at = size;
    }
    return at + HEADER;
}

void tp_block_free(void *block) {
    if (!block) return;
    uint8_t *at = (uint8_t *)block - HEADER;
    size_t size = *(size_t *)at;
    if (size < KEPT_MIN || size > KEPT_MAX || !keep(at, size)) free(at);
}

#define ZERO_MIN ((size_t)1 << 16) /* smaller zero blocks come from calloc */
#define ZERO_HEADER 64            /* before the block: its mapping's length (0: from calloc) */

void *tp_zero_alloc(size_t bytes) {
    if (bytes > SIZE_MAX - ZERO_HEADER - 4096) return NULL;
    size_t len = bytes + ZERO_HEADER;
    uint8_t *at;
    if (bytes < ZERO_MIN) {
        if (!(at = calloc(1, len))) return NULL;
        *(size_t *)at = 0;
    } else {
        len = (len + 4095) & ~(size_t)4095;
        if ((at = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)) == MAP_FAILED) return NULL;
        *(size_t *)at = len; /* the first page only */
    }
    return at + ZERO_HEADER;
}

void tp_zero_free(void *block) {
    if (!block) return;
    uint8_t *at = (uint8_t *)block - ZERO_HEADER;
    size_t len = *(size_t *)at;
    if (len) munmap(at, len);
    else free(at);
}
