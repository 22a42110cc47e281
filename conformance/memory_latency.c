/* Load latency against working-set size: a random cyclic pointer chase over 64-byte lines, so every
 * load depends on the one before and the prefetchers cannot guess the next line. `huge` asks for
 * transparent huge pages, to tell cache misses from TLB misses. docs/performance.md ("Where the cold
 * time goes") quotes its output.
 *
 *   gcc -O2 -o /tmp/memory_latency conformance/memory_latency.c && /tmp/memory_latency [huge]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define LINE 64
#define STEPS 20000000L

static double seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* A cycle through all n lines in random order: line i's first word holds the next line's index. */
static size_t *random_cycle(size_t n, int huge) {
    size_t bytes = n * LINE, align = (size_t)2 << 20;
    size_t *lines = NULL;
    if (posix_memalign((void **)&lines, align, bytes < align ? align : bytes)) return NULL;
    if (huge) madvise(lines, bytes, MADV_HUGEPAGE);
    size_t *order = malloc(n * sizeof(size_t));
    if (!order) { free(lines); return NULL; }
    for (size_t i = 0; i < n; i++) order[i] = i;
    for (size_t i = n - 1; i > 0; i--) {
        size_t j = (size_t)rand() % (i + 1), t = order[i];
        order[i] = order[j]; order[j] = t;
    }
    for (size_t i = 0; i < n; i++) lines[order[i] * (LINE / sizeof(size_t))] = order[(i + 1) % n] * (LINE / sizeof(size_t));
    free(order);
    return lines;
}

int main(int argc, char **argv) {
    int huge = argc > 1 && strcmp(argv[1], "huge") == 0;
    printf("working set  ns per load (%s pages)\n", huge ? "huge" : "4 KiB");
    for (size_t kib = 16; kib <= 64 * 1024; kib *= 2) {
        size_t *lines = random_cycle(kib * 1024 / LINE, huge);
        if (!lines) return 1;
        size_t at = 0;
        double start = seconds();
        for (long step = 0; step < STEPS; step++) at = lines[at];
        double ns = (seconds() - start) / STEPS * 1e9;
        printf("%8zu KiB  %6.1f%s\n", kib, ns, at == SIZE_MAX ? " " : "");
        free(lines);
    }
    return 0;
}
