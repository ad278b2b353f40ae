/* qsort: quicksort SIZE bytes of random 64-bit integers in place.
 * Own quicksort (median-of-3 pivot, Hoare partition, insertion sort below
 * 16 elements, recursion on the smaller side only) so no temporary buffer
 * is allocated (glibc qsort may mergesort through a SIZE-sized copy). */
#include "common.h"

#include <stdio.h>
#include <stdlib.h>

#define INSERTION_MAX 16
#define CHECK_SAMPLES 4096

static void insertion_sort(uint64_t *a, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        REF(&a[i], 0);
        uint64_t v = a[i];
        size_t j = i;
        while (j > 0 && (REF(&a[j - 1], 0), a[j - 1] > v)) {
            REF(&a[j], 1);
            a[j] = a[j - 1];
            j--;
        }
        REF(&a[j], 1);
        a[j] = v;
    }
}

static inline void swap64(uint64_t *x, uint64_t *y)
{
    REF(x, 0);
    REF(y, 0);
    REF(x, 1);
    REF(y, 1);
    uint64_t t = *x;
    *x = *y;
    *y = t;
}

static void quicksort(uint64_t *a, size_t n)
{
    while (n > INSERTION_MAX) {
        /* median of first, middle, last -> a[mid] */
        size_t mid = n / 2, last = n - 1;
        REF(&a[mid], 0);
        REF(&a[0], 0);
        if (a[mid] < a[0]) swap64(&a[mid], &a[0]);
        REF(&a[last], 0);
        REF(&a[0], 0);
        if (a[last] < a[0]) swap64(&a[last], &a[0]);
        REF(&a[last], 0);
        REF(&a[mid], 0);
        if (a[last] < a[mid]) swap64(&a[last], &a[mid]);
        REF(&a[mid], 0);
        uint64_t pivot = a[mid];
        /* Hoare partition */
        size_t i = 0, j = last;
        for (;;) {
            while ((REF(&a[i], 0), a[i] < pivot)) i++;
            while ((REF(&a[j], 0), a[j] > pivot)) j--;
            if (i >= j)
                break;
            swap64(&a[i], &a[j]);
            i++;
            j--;
        }
        /* [0, j] <= pivot <= [j+1, n) */
        size_t left = j + 1, right = n - left;
        if (left < right) {
            quicksort(a, left);
            a += left;
            n = right;
        } else {
            quicksort(a + left, right);
            n = left;
        }
    }
    insertion_sort(a, n);
}

int run_qsort(const struct opts *o, struct result *r)
{
    uint64_t t0 = now_ns();
    size_t n = o->size / sizeof(uint64_t);
    size_t bytes = n * sizeof(uint64_t);
    uint64_t *a = xmalloc(o, "array", bytes);
    report_object(o, "array", a, bytes);

    struct rng g;
    rng_seed(&g, o->seed, 1);
    for (size_t i = 0; i < n; i++) {
        REF(&a[i], 1);
        a[i] = rng_next(&g);
    }
    uint64_t t1 = now_ns();
    setup_done(o);
    uint64_t t2 = now_ns();

    quicksort(a, n);

    /* Check sortedness (full pass) and hash evenly spaced samples. */
    size_t unsorted = 0;
    for (size_t i = 1; i < n; i++) {
        REF(&a[i - 1], 0);
        REF(&a[i], 0);
        unsorted += a[i - 1] > a[i];
    }
    uint64_t cs = cs_add(0, n);
    size_t samples = n < CHECK_SAMPLES ? n : CHECK_SAMPLES;
    for (size_t k = 0; k < samples; k++) {
        REF(&a[(size_t)(((__uint128_t)k * n) / samples)], 0);
        cs = cs_add(cs, a[(size_t)(((__uint128_t)k * n) / samples)]);
    }
    REF(&a[n - 1], 0);
    cs = cs_add(cs, a[n - 1]);
    uint64_t t3 = now_ns();

    r->work = n;
    r->checksum = cs;
    r->setup_ns = t1 - t0;
    r->work_ns = t3 - t2;
    snprintf(r->extra, sizeof r->extra, "\"sorted\":%s", unsorted ? "false" : "true");
    r->exit_code = EXIT_OK;
    free(a);
    if (unsorted) {
        fprintf(stderr, "swaplab-workload: qsort: result not sorted (%zu inversions between neighbours)\n",
                unsorted);
        return EXIT_CHECK;
    }
    return EXIT_OK;
}
