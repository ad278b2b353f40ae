/* swaplab-workload: shared helpers. */
#define _GNU_SOURCE
#include "common.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void rng_seed(struct rng *r, uint64_t seed, uint64_t stream)
{
    uint64_t sm = seed ^ mix64(stream + 0x5eed5eed5eed5eedULL);
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&sm);
    if ((r->s[0] | r->s[1] | r->s[2] | r->s[3]) == 0)
        r->s[0] = 1;
}

uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

void die(int code, const char *fmt, ...)
{
    va_list ap;
    fflush(stdout);
    fputs("swaplab-workload: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(code);
}

int parse_u64(const char *s, uint64_t *out)
{
    if (!s || !*s || *s == '-' || *s == '+')
        return -1;
    for (const char *p = s; *p; p++)
        if (*p < '0' || *p > '9')
            return -1;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end)
        return -1;
    *out = v;
    return 0;
}

/* "4096", "64M", "1.5G", "64MiB", "2k": powers of 1024. */
int parse_size(const char *s, uint64_t *out)
{
    if (!s || !*s)
        return -1;
    const char *p = s;
    uint64_t ip = 0;
    int digits = 0;
    while (*p >= '0' && *p <= '9') {
        if (ip > (UINT64_MAX - 9) / 10)
            return -1;
        ip = ip * 10 + (uint64_t)(*p - '0');
        p++;
        digits++;
    }
    uint64_t frac_num = 0, frac_den = 1;
    if (*p == '.') {
        p++;
        while (*p >= '0' && *p <= '9') {
            if (frac_den < 1000000000000ULL) {
                frac_num = frac_num * 10 + (uint64_t)(*p - '0');
                frac_den *= 10;
            }
            p++;
            digits++;
        }
    }
    if (!digits)
        return -1;
    int shift = 0;
    switch (*p) {
    case '\0': break;
    case 'k': case 'K': shift = 10; p++; break;
    case 'm': case 'M': shift = 20; p++; break;
    case 'g': case 'G': shift = 30; p++; break;
    case 't': case 'T': shift = 40; p++; break;
    case 'b': case 'B': break;
    default: return -1;
    }
    if (shift && (*p == 'i' || *p == 'I'))
        p++;
    if (*p == 'b' || *p == 'B')
        p++;
    if (*p)
        return -1;
    if (shift == 0 && frac_num)
        return -1; /* fractional bytes */
    if (ip > (UINT64_MAX >> shift))
        return -1;
    uint64_t v = ip << shift;
    if (frac_num) {
        uint64_t f = (uint64_t)(((__uint128_t)frac_num << shift) / frac_den);
        if (v > UINT64_MAX - f)
            return -1;
        v += f;
    }
    if (v == 0)
        return -1;
    *out = v;
    return 0;
}

void fmt_bytes(uint64_t bytes, char *buf, size_t len)
{
    static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024.0 && u < 6) {
        v /= 1024.0;
        u++;
    }
    if (u == 0)
        snprintf(buf, len, "%llu B", (unsigned long long)bytes);
    else
        snprintf(buf, len, "%.1f %s", v, units[u]);
}

static void nomem(const struct opts *o, const char *what, size_t bytes, int err)
{
    char b[32];
    fmt_bytes(bytes, b, sizeof b);
    die(EXIT_NOMEM, "%s: cannot allocate %s (%zu bytes) for %s: %s; try a smaller --size",
        o->workload, b, bytes, what, strerror(err ? err : ENOMEM));
}

void *xmalloc(const struct opts *o, const char *what, size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p)
        nomem(o, what, bytes, errno);
    return p;
}

void *xcalloc(const struct opts *o, const char *what, size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size)
        nomem(o, what, SIZE_MAX, ENOMEM);
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        nomem(o, what, n * size, errno);
    return p;
}

void report_object(const struct opts *o, const char *name, const void *p, size_t bytes)
{
    if (!o->objects)
        return;
    uintptr_t s = (uintptr_t)p;
    fprintf(stderr, "{\"object\":\"%s\",\"start\":\"0x%lx\",\"end\":\"0x%lx\",\"bytes\":%zu}\n",
            name, (unsigned long)s, (unsigned long)(s + bytes), bytes);
    fflush(stderr);
}

void setup_done(const struct opts *o)
{
    if (!o->stop)
        return;
    fflush(stdout);
    fflush(stderr);
    raise(SIGSTOP);
}

void run_threads(unsigned n, void *(*fn)(void *), void *args, size_t stride)
{
    if (n <= 1) {
        fn(args);
        return;
    }
    pthread_t *tids = calloc(n, sizeof *tids);
    if (!tids)
        die(EXIT_NOMEM, "cannot allocate thread table");
    for (unsigned i = 1; i < n; i++) {
        int e = pthread_create(&tids[i], NULL, fn, (char *)args + (size_t)i * stride);
        if (e)
            die(EXIT_FAIL, "cannot start thread %u of %u: %s", i + 1, n, strerror(e));
    }
    fn(args);
    for (unsigned i = 1; i < n; i++)
        pthread_join(tids[i], NULL);
    free(tids);
}
