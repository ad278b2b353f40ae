/* The benchmarks' operation timer (bench-vma, bench-touch): rdtsc
 * (lfence-ordered) calibrated against CLOCK_MONOTONIC on x86-64,
 * clock_gettime(CLOCK_MONOTONIC) elsewhere, and its own cost (the median of
 * back-to-back readings), which the benchmarks subtract from every latency. */
#ifndef SWAPLAB_WORKLOAD_TIMER_H
#define SWAPLAB_WORKLOAD_TIMER_H

#include "common.h"

#include <stdlib.h>

#if defined(__x86_64__)
static inline uint64_t ticks(void)
{
    uint32_t lo, hi;
    __asm__ __volatile__("lfence\n\trdtsc\n\tlfence" : "=a"(lo), "=d"(hi)::"memory");
    return ((uint64_t)hi << 32) | lo;
}
static const char *const TIMER = "rdtsc";
#else
static inline uint64_t ticks(void)
{
    return now_ns();
}
static const char *const TIMER = "clock_gettime";
#endif

static inline int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Ticks per second: rdtsc against CLOCK_MONOTONIC over ~50 ms. */
static inline double calibrate(void)
{
#if defined(__x86_64__)
    uint64_t n0 = now_ns(), t0 = ticks();
    while (now_ns() - n0 < 50000000ULL)
        ;
    uint64_t n1 = now_ns(), t1 = ticks();
    return (double)(t1 - t0) * 1e9 / (double)(n1 - n0);
#else
    return 1e9;
#endif
}

/* The timer's own cost in ticks: median of back-to-back readings. */
static inline uint64_t timer_overhead(void)
{
    enum { R = 20001 };
    static uint64_t d[R];
    for (int i = 0; i < R; i++) {
        uint64_t a = ticks();
        uint64_t b = ticks();
        d[i] = b - a;
    }
    qsort(d, R, sizeof d[0], cmp_u64);
    return d[R / 2];
}

#endif
