/* kv: an in-memory key-value store (memcached-like) under a skewed load.
 *
 * Open-addressing hash table (linear probing) of SIZE bytes: an index of
 * 8-byte keys ("kv_keys") and a parallel array of fixed 64-byte values
 * ("kv_values"), 72 bytes per slot, filled to 70 % at setup.  The work
 * serves --ops requests (default 4 x keys): 90 % GET (read the 64-byte value)
 * and 10 % SET (overwrite it), over keys drawn from Zipf(0.99) by popularity
 * rank.  Rank r is key r, placed by a seeded hash, so hot keys are scattered
 * over the table.  Zipf sampling is Hörmann & Derflinger's rejection-inversion
 * (no CDF table).  work = operations. */
#include "common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define VALUE_WORDS 8      /* 64 bytes */
#define LOAD_PERCENT 70
#define GET_PERCENT 90
#define ZIPF_S 0.99

struct value { uint64_t w[VALUE_WORDS]; };

/* ---- Zipf(s) on {1..n}: rejection-inversion (Hörmann & Derflinger 1996) ---- */
struct zipf {
    double s, n;
    double h_int_x1, h_int_n, sval;
};

static double helper1(double x)   /* log1p(x)/x */
{
    return fabs(x) > 1e-8 ? log1p(x) / x : 1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x));
}

static double helper2(double x)   /* expm1(x)/x */
{
    return fabs(x) > 1e-8 ? expm1(x) / x : 1.0 + x * 0.5 * (1.0 + x / 3.0 * (1.0 + 0.25 * x));
}

static double zh(const struct zipf *z, double x)
{
    return exp(-z->s * log(x));
}

static double zh_int(const struct zipf *z, double x)
{
    double lx = log(x);
    return helper2((1.0 - z->s) * lx) * lx;
}

static double zh_int_inv(const struct zipf *z, double x)
{
    double t = x * (1.0 - z->s);
    if (t < -1.0)
        t = -1.0;
    return exp(helper1(t) * x);
}

static void zipf_init(struct zipf *z, uint64_t n, double s)
{
    z->s = s;
    z->n = (double)n;
    z->h_int_x1 = zh_int(z, 1.5) - 1.0;
    z->h_int_n = zh_int(z, z->n + 0.5);
    z->sval = 2.0 - zh_int_inv(z, zh_int(z, 2.5) - zh(z, 2.0));
}

static uint64_t zipf_sample(const struct zipf *z, struct rng *g)
{
    for (;;) {
        double u = z->h_int_n + rng_double(g) * (z->h_int_x1 - z->h_int_n);
        double x = zh_int_inv(z, u);
        double k = floor(x + 0.5);
        if (k < 1.0)
            k = 1.0;
        else if (k > z->n)
            k = z->n;
        if (k - x <= z->sval || u >= zh_int(z, k + 0.5) - zh(z, k))
            return (uint64_t)k;
    }
}

/* ---- the table ---- */
struct kv {
    uint64_t *keys;       /* 0 = empty, else key (1..nkeys) */
    struct value *values;
    uint64_t cap;
    uint64_t salt;
};

static inline uint64_t kv_home(const struct kv *t, uint64_t key)
{
    return fastrange64(mix64(key * 0x9fb21c651e98df25ULL ^ t->salt), t->cap);
}

/* Slot of key, or UINT64_MAX if absent. */
static inline uint64_t kv_find(const struct kv *t, uint64_t key)
{
    uint64_t i = kv_home(t, key);
    for (;;) {
        REF(&t->keys[i], 0);
        uint64_t k = t->keys[i];
        if (k == key)
            return i;
        if (k == 0)
            return UINT64_MAX;
        if (++i == t->cap)
            i = 0;
    }
}

static inline uint64_t kv_insert_slot(const struct kv *t, uint64_t key)
{
    uint64_t i = kv_home(t, key);
    while ((REF(&t->keys[i], 0), t->keys[i] != 0 && t->keys[i] != key))
        if (++i == t->cap)
            i = 0;
    return i;
}

static inline void make_value(struct value *v, uint64_t key, uint64_t version, uint64_t salt)
{
    uint64_t base = mix64(key ^ salt) + version * 0x9e3779b97f4a7c15ULL;
    for (int j = 0; j < VALUE_WORDS; j++) {
        REF(&v->w[j], 1);
        v->w[j] = mix64(base + (uint64_t)j);
    }
}

int run_kv(const struct opts *o, struct result *r)
{
    uint64_t t0 = now_ns();
    const uint64_t slot_bytes = sizeof(uint64_t) + sizeof(struct value);
    struct kv t;
    t.cap = o->size / slot_bytes;
    t.salt = mix64(o->seed ^ 0x6b76737461626c65ULL);
    uint64_t nkeys = t.cap * LOAD_PERCENT / 100;
    if (nkeys < 16)
        die(EXIT_USAGE, "kv: --size too small");
    t.keys = xcalloc(o, "kv_keys", t.cap, sizeof(uint64_t));
    report_object(o, "kv_keys", t.keys, t.cap * sizeof(uint64_t));
    t.values = xmalloc(o, "kv_values", t.cap * sizeof(struct value));
    report_object(o, "kv_values", t.values, t.cap * sizeof(struct value));

    /* Populate: keys 1..nkeys (key = popularity rank). */
    for (uint64_t key = 1; key <= nkeys; key++) {
        uint64_t i = kv_insert_slot(&t, key);
        REF(&t.keys[i], 1);
        t.keys[i] = key;
        make_value(&t.values[i], key, 0, t.salt);
    }
    struct zipf z;
    zipf_init(&z, nkeys, ZIPF_S);
    struct rng g;
    rng_seed(&g, o->seed, 5);
    uint64_t t1 = now_ns();
    setup_done(o);
    uint64_t t2 = now_ns();

    uint64_t ops = o->ops ? o->ops : 4 * nkeys;
    uint64_t gets = 0, sets = 0, misses = 0, cs = cs_add(0, nkeys);
    for (uint64_t op = 0; op < ops; op++) {
        uint64_t key = zipf_sample(&z, &g);
        int is_get = rng_below(&g, 100) < GET_PERCENT;
        uint64_t i = kv_find(&t, key);
        if (i == UINT64_MAX) {
            misses++;
            continue;
        }
        if (is_get) {
            const struct value *v = &t.values[i];
            uint64_t fold = 0;
            for (int j = 0; j < VALUE_WORDS; j++) {
                REF(&v->w[j], 0);
                fold = fold * 31 + v->w[j];
            }
            cs = cs_add(cs, fold);
            gets++;
        } else {
            make_value(&t.values[i], key, op + 1, t.salt);
            cs = cs_add(cs, key);
            sets++;
        }
    }
    uint64_t t3 = now_ns();

    r->work = ops;
    r->checksum = cs;
    r->setup_ns = t1 - t0;
    r->work_ns = t3 - t2;
    snprintf(r->extra, sizeof r->extra,
             "\"keys\":%llu,\"table_slots\":%llu,\"gets\":%llu,\"sets\":%llu,\"misses\":%llu",
             (unsigned long long)nkeys, (unsigned long long)t.cap, (unsigned long long)gets,
             (unsigned long long)sets, (unsigned long long)misses);
    free(t.values);
    free(t.keys);
    if (misses) {
        fprintf(stderr, "swaplab-workload: kv: %llu GETs/SETs missed a pre-populated key\n",
                (unsigned long long)misses);
        return EXIT_CHECK;
    }
    return EXIT_OK;
}
