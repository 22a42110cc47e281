/* A pause in a spin-wait loop (less power and less pressure on the other thread's core resources). */
#ifndef TP_CPU_RELAX_H
#define TP_CPU_RELAX_H

static inline void tp_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield");
#endif
}

#endif
