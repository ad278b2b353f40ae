/* chase: pointer chasing (mcf-like).  SIZE/8 64-bit slots hold a random
 * cyclic permutation (Sattolo's algorithm: one cycle through every slot);
 * the work follows it, i = a[i], for --ops hops (default 4 x slots), each
 * hop a dependent load.  With --threads N the array is split into N
 * contiguous parts, each its own cycle built and chased by its own thread
 * (so the checksum depends on N).  work = hops. */
#include "common.h"

#include <stdio.h>
#include <stdlib.h>

struct part {
    uint64_t *a;
    uint64_t begin, end;
    uint64_t seed;
    unsigned index;
    uint64_t hops;
    uint64_t sum;   /* order-dependent hash of the visited slots */
    uint64_t last;
    char pad[64];
};

static void *build_part(void *arg)
{
    struct part *p = arg;
    uint64_t *a = p->a + p->begin, len = p->end - p->begin;
    struct rng g;
    rng_seed(&g, p->seed, 0x100 + p->index);
    for (uint64_t i = 0; i < len; i++) {
        REF(&a[i], 1);
        a[i] = p->begin + i;
    }
    for (uint64_t i = len - 1; i > 0; i--) {   /* Sattolo: j < i */
        uint64_t j = rng_below(&g, i);
        REF(&a[i], 1);
        REF(&a[j], 1);
        uint64_t t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
    return NULL;
}

static void *chase_part(void *arg)
{
    struct part *p = arg;
    const uint64_t *a = p->a;
    uint64_t i = p->begin, sum = 0;
    for (uint64_t h = 0; h < p->hops; h++) {
        REF(&a[i], 0);
        i = a[i];
        sum = sum * 0x100000001b3ULL + i;
    }
    p->sum = sum;
    p->last = i;
    return NULL;
}

int run_chase(const struct opts *o, struct result *r)
{
    uint64_t t0 = now_ns();
    uint64_t n = o->size / sizeof(uint64_t);
    size_t bytes = n * sizeof(uint64_t);
    unsigned nt = o->threads;
    if (nt > n / 2)
        nt = (unsigned)(n / 2);
    uint64_t ops = o->ops ? o->ops : 4 * n;

    uint64_t *a = xmalloc(o, "slots", bytes);
    report_object(o, "slots", a, bytes);
    struct part *parts = xcalloc(o, "thread table", nt, sizeof *parts);
    for (unsigned t = 0; t < nt; t++) {
        parts[t].a = a;
        parts[t].begin = part_begin(n, nt, t);
        parts[t].end = part_begin(n, nt, t + 1);
        parts[t].seed = o->seed;
        parts[t].index = t;
        parts[t].hops = part_begin(ops, nt, t + 1) - part_begin(ops, nt, t);
    }
    run_threads(nt, build_part, parts, sizeof *parts);
    uint64_t t1 = now_ns();
    setup_done(o);
    uint64_t t2 = now_ns();

    run_threads(nt, chase_part, parts, sizeof *parts);
    uint64_t cs = cs_add(0, n);
    for (unsigned t = 0; t < nt; t++) {
        cs = cs_add(cs, parts[t].sum);
        cs = cs_add(cs, parts[t].last);
    }
    uint64_t t3 = now_ns();

    r->work = ops;
    r->checksum = cs;
    r->setup_ns = t1 - t0;
    r->work_ns = t3 - t2;
    snprintf(r->extra, sizeof r->extra, "\"slots\":%llu", (unsigned long long)n);
    free(parts);
    free(a);
    return EXIT_OK;
}
