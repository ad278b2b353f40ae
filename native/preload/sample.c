/* Sampling of allocations below the threshold (SWAPLAB_HEAP_SAMPLE); the
 * fast paths that count bytes down are in hooks.c. */
#include "preload.h"

/* ---- sampling of allocations below the threshold (SWAPLAB_HEAP_SAMPLE) ----
 *
 * Each thread counts down t_left bytes, drawn from an exponential
 * distribution of mean g_sample; the allocation that takes it to zero or
 * below is sampled and a new count is drawn.  By the exponential's lack of
 * memory an allocation of s bytes is then sampled with probability
 * 1 - exp(-s/R) whatever came before it.  The hot path is one TLS
 * subtraction and compare.
 *
 * Sampled live addresses are kept in a fixed open-addressing table
 * (SMP_CAP slots, at most half used, under L_smp; no malloc) so that their
 * free or realloc is logged.  free() of any small block first reads one
 * counter of a 16 Ki-entry counting filter (32 KiB, mostly in cache; a
 * multiplicative hash of the address, no lock):
 * zero means "not sampled" and costs nothing more; only a non-zero counter
 * takes the lock.  When the table is full no more allocations are sampled
 * until some sampled ones are freed (g_smp_full counts the skipped ones). */
#define SMP_FILT (1u << 14)
uint64_t g_sample;          /* R in bytes; 0 = off */
uint64_t g_sample_seed;
static uint64_t g_smp[SMP_CAP];    /* addresses; 0 = empty */
static uint16_t g_sfilt[SMP_FILT]; /* per-hash counts of g_smp (atomic) */
size_t g_smp_n;             /* entries (atomic reads) */
uint64_t g_smp_full;        /* samples skipped: table full (atomic) */
TLS int64_t t_left;
static TLS uint64_t t_rng;
TLS int t_sinit;

static inline uint32_t smp_fh(uint64_t a)
{
    return (uint32_t)(((a >> 4) * 0x9e3779b97f4a7c15ull) >> 50);
}

static inline size_t smp_slot(uint64_t a)
{
    return (size_t)(mix64(a) & (SMP_CAP - 1));
}

/* ln(x) for x > 0 without libm: x = m * 2^e with m in [1, 2), then
 * ln m = 2 atanh(z), z = (m-1)/(m+1) <= 1/3; 12 terms: error < 1e-12. */
static double ln_approx(double x)
{
    uint64_t b;
    memcpy(&b, &x, 8);
    int e = (int)((b >> 52) & 0x7ff) - 1023;
    b = (b & ((1ull << 52) - 1)) | (1023ull << 52);
    double m;
    memcpy(&m, &b, 8);
    double z = (m - 1) / (m + 1), z2 = z * z, t = z, sum = 0;
    for (int k = 1; k < 25; k += 2) {
        sum += t / k;
        t *= z2;
    }
    return 2 * sum + e * 0.69314718055994530942;
}

/* An exponentially distributed byte count of mean g_sample (at least 1). */
int64_t smp_draw(void)
{
    if (!t_sinit) {
        static uint64_t threads; /* the n-th thread to sample: its own stream */
        uint64_t n = __atomic_fetch_add(&threads, 1, __ATOMIC_RELAXED);
        t_rng = mix64(g_sample_seed ^ (n << 20) ^ 0x2545f4914f6cdd1dull);
        t_sinit = 1;
    }
    t_rng += 0x9e3779b97f4a7c15ull;
    uint64_t r = mix64(t_rng);
    double u = ((double)(r >> 11) + 0.5) / 9007199254740992.0; /* (0, 1) */
    double v = -ln_approx(u) * (double)g_sample;
    if (v < 1)
        v = 1;
    if (v > 4e18)
        v = 4e18;
    return (int64_t)v;
}

/* 1 and the entry removed if a is a sampled live address. */
int smp_take(uint64_t a)
{
    if (!__atomic_load_n(&g_sfilt[smp_fh(a)], __ATOMIC_RELAXED))
        return 0;
    int found = 0;
    pthread_mutex_lock(&L_smp);
    size_t i = smp_slot(a);
    while (g_smp[i]) {
        if (g_smp[i] == a) {
            found = 1;
            break;
        }
        i = (i + 1) & (SMP_CAP - 1);
    }
    if (found) {
        __atomic_fetch_sub(&g_sfilt[smp_fh(a)], 1, __ATOMIC_RELAXED);
        __atomic_store_n(&g_smp_n, g_smp_n - 1, __ATOMIC_RELAXED);
        size_t j = i; /* backward-shift deletion */
        for (;;) {
            j = (j + 1) & (SMP_CAP - 1);
            if (!g_smp[j])
                break;
            size_t k = smp_slot(g_smp[j]);
            int stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
            if (stays)
                continue;
            g_smp[i] = g_smp[j];
            i = j;
        }
        g_smp[i] = 0;
    }
    pthread_mutex_unlock(&L_smp);
    return found;
}

/* Adds a; 0 when the table is full. */
static int smp_put(uint64_t a)
{
    int ok = 1;
    pthread_mutex_lock(&L_smp);
    if ((g_smp_n + 1) * 2 > SMP_CAP || __atomic_load_n(&g_sfilt[smp_fh(a)], __ATOMIC_RELAXED) ==
                                           UINT16_MAX) {
        ok = 0;
    } else {
        size_t i = smp_slot(a);
        while (g_smp[i] && g_smp[i] != a)
            i = (i + 1) & (SMP_CAP - 1);
        if (!g_smp[i]) { /* (a live address we missed the free of stays one entry) */
            g_smp[i] = a;
            __atomic_fetch_add(&g_sfilt[smp_fh(a)], 1, __ATOMIC_RELAXED);
            __atomic_store_n(&g_smp_n, g_smp_n + 1, __ATOMIC_RELAXED);
        }
    }
    pthread_mutex_unlock(&L_smp);
    return ok;
}

void on_sample(void *p, uint64_t size, uint32_t func)
{
    int saved = errno;
    t_guard++;
    uint64_t a = (uint64_t)(uintptr_t)p;
    if (smp_put(a)) {
        uint32_t id;
        struct site_hints sh; /* hints never apply to sampled objects */
        capture(&id, &sh);
        struct rec_sample r = {REC_SAMPLE, sizeof r, my_tid(), func, now_ns(), a, size, id, 0,
                               g_sample};
        log_append(&r, sizeof r);
    } else {
        __atomic_fetch_add(&g_smp_full, 1, __ATOMIC_RELAXED);
    }
    t_guard--;
    errno = saved;
}
