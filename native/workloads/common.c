/* swaplab-workload: shared helpers. */
#define _GNU_SOURCE
#include "common.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

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

/* ---- --mlock / --madvise on the main object ---- */

static int read_u64_file(const char *path, uint64_t *v)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char buf[64] = "";
    int ok = fgets(buf, sizeof buf, f) != NULL;
    fclose(f);
    if (!ok || strncmp(buf, "max", 3) == 0)
        return -1;
    char *end;
    errno = 0;
    unsigned long long x = strtoull(buf, &end, 10);
    if (errno || end == buf)
        return -1;
    *v = x;
    return 0;
}

int cgroup_memory_dir(char *dir, size_t len, int *v2)
{
    FILE *f = fopen("/proc/self/cgroup", "r");
    if (!f)
        return -1;
    char line[4096];
    int found = -1;
    while (found && fgets(line, sizeof line, f)) {
        char *c1 = strchr(line, ':');
        char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2)
            continue;
        *c2 = '\0';
        char *path = c2 + 1;
        path[strcspn(path, "\n")] = '\0';
        const char *ctl = c1 + 1;
        char probe[4200];
        if (*ctl == '\0') {
            snprintf(dir, len, "/sys/fs/cgroup%s", path);
            *v2 = 1;
            snprintf(probe, sizeof probe, "%s/memory.max", dir);
        } else {
            char tmp[256];
            snprintf(tmp, sizeof tmp, "%s", ctl);
            int mem = 0;
            for (char *save = NULL, *t = strtok_r(tmp, ",", &save); t; t = strtok_r(NULL, ",", &save))
                mem |= !strcmp(t, "memory");
            if (!mem)
                continue;
            snprintf(dir, len, "/sys/fs/cgroup/memory%s", path);
            *v2 = 0;
            snprintf(probe, sizeof probe, "%s/memory.limit_in_bytes", dir);
        }
        if (access(probe, R_OK) == 0)
            found = 0;
    }
    fclose(f);
    return found;
}

/* The limit and usage of this process's memory cgroup (v1 or v2). */
static int cgroup_memory(uint64_t *limit, uint64_t *usage)
{
    char dir[4096], lim[4200], use[4200];
    int v2;
    if (cgroup_memory_dir(dir, sizeof dir, &v2))
        return -1;
    snprintf(lim, sizeof lim, "%s/%s", dir, v2 ? "memory.max" : "memory.limit_in_bytes");
    snprintf(use, sizeof use, "%s/%s", dir, v2 ? "memory.current" : "memory.usage_in_bytes");
    if (read_u64_file(lim, limit) || read_u64_file(use, usage) || *limit >= (1ULL << 60))
        return -1;
    return 0;
}

/* Headroom --mlock max leaves under the limit for everything else (the
 * unlocked rest of the object streams through it): an eighth of the limit,
 * at least 4 MiB. */
static uint64_t mlock_headroom(uint64_t limit)
{
    uint64_t h = limit / 8;
    return h < (4ULL << 20) ? 4ULL << 20 : h;
}

uint64_t hints_before_fill(const struct opts *o, void *p, size_t bytes)
{
    if (!o->mlock)
        return 0;
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    uint64_t want = o->mlock, limit = 0, usage = 0;
    if (want == MLOCK_MAX || want == MLOCK_HALF) {
        int max = want == MLOCK_MAX;
        if (cgroup_memory(&limit, &usage))
            die(EXIT_USAGE, "%s: --mlock %s: this process has no memory cgroup limit to size "
                "the lock by; give a size (e.g. --mlock 64M)", o->workload, max ? "max" : "half");
        uint64_t room = mlock_headroom(limit);
        want = limit > usage + room ? limit - usage - room : 0;
        /* half: half the limit, never more than max would lock */
        if (!max && limit / 2 < want)
            want = limit / 2;
    }
    uintptr_t s = ((uintptr_t)p + page - 1) & ~(uintptr_t)(page - 1);
    uintptr_t e = ((uintptr_t)p + bytes) & ~(uintptr_t)(page - 1);
    uint64_t avail = e > s ? e - s : 0;
    if (want > avail)
        want = avail;
    want &= ~(page - 1);
    if (want && mlock((void *)s, want))
        die(EXIT_FAIL, "%s: mlock of %llu bytes: %s (needs CAP_IPC_LOCK or a higher "
            "RLIMIT_MEMLOCK)", o->workload, (unsigned long long)want, strerror(errno));
    fprintf(stderr, "{\"mlock\":%llu,\"limit\":%llu,\"usage\":%llu}\n", (unsigned long long)want,
            (unsigned long long)limit, (unsigned long long)usage);
    return want;
}

void hints_after_fill(const struct opts *o, void *p, size_t bytes)
{
    if (!o->madvise)
        return;
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    uintptr_t s = ((uintptr_t)p + page - 1) & ~(uintptr_t)(page - 1);
    uintptr_t e = ((uintptr_t)p + bytes) & ~(uintptr_t)(page - 1);
    if (e <= s)
        return;
    static const struct { unsigned bit; int advice; const char *name; } A[] = {
        {ADV_SEQUENTIAL, MADV_SEQUENTIAL, "sequential"},
        {ADV_RANDOM, MADV_RANDOM, "random"},
        {ADV_WILLNEED, MADV_WILLNEED, "willneed"},
    };
    for (size_t i = 0; i < sizeof A / sizeof A[0]; i++)
        if ((o->madvise & A[i].bit) && madvise((void *)s, e - s, A[i].advice))
            die(EXIT_FAIL, "%s: madvise(%s) of %llu bytes: %s", o->workload, A[i].name,
                (unsigned long long)(e - s), strerror(errno));
    fprintf(stderr, "{\"madvise\":%u,\"bytes\":%llu}\n", o->madvise,
            (unsigned long long)(e - s));
}
