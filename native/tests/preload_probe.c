/* swaplab-preload-probe: a self-checking test program for
 * libswaplab-preload.so (run under LD_PRELOAD by native/tests/preload.sh
 * and crates/lab/tests/it/preload.rs).  Each mode exercises one property and
 * checks it from the outside: its own allocation log (SWAPLAB_ALLOC_DIR,
 * re-read from disk: the library writes every ALLOC, FREE and HINT record
 * through at once), /proc/self/status VmLck, and swaplab_preload_stats.
 *
 *   hints FILE BUDGET  learn the call sites below from the log and write a
 *                      resolved-hints file: hint 1 mlock on lock_site
 *                      (malloc), 2 mlock on map_site (mmap), 3 cold after 0
 *                      ns on cold_site (malloc); budget BUDGET bytes.
 *   mremap             (hints, budget 3 MiB) failed mremap / munmap log no
 *                      FREE and keep their mlock budget; a good one frees.
 *   fork               (hints, budget 3 MiB) children of a process holding
 *                      1 MiB locked, forked while another thread allocates
 *                      and frees, get the whole budget and never deadlock.
 *   gate               (hints) while the background thread is parked right
 *                      before its madvise (SWAPLAB_DEBUG_BG_GATE), other
 *                      threads allocate, free, map, unmap, register hints
 *                      and fork.  A lock held across the madvise hangs it.
 *   quota              (hints) 40 objects at one mlock site lock the hint's
 *                      bytes in all; 100 at one willneed site get its
 *                      max_calls madvise calls, then one EDQUOT.
 *   trend DIR          (SWAPLAB_PREFETCH=thread, SWAPLAB_HINT_REPORT) a
 *                      sequential walk over a cold file gets prefetch calls
 *                      inside it, and so does a second walk of it right
 *                      after (its pages dropped), a random walk over
 *                      another none; the thread then samples sparsely.
 *   many [N]           N (default 100000) mappings, partial and multi-object
 *                      munmaps: exact FREE records and a tree cost per
 *                      operation logarithmic in N.
 *   sample             (SWAPLAB_HEAP_SAMPLE=R) 40000 blocks of 1000 bytes
 *                      from one site: the SAMPLE records number K*p within
 *                      5 sigma, p = 1 - exp(-1000/R), all carry R, their
 *                      stack and size; every freed or realloc'd sampled
 *                      block has exactly one FREE after its SAMPLE, no
 *                      unsampled block has one, and big allocations are
 *                      still logged exactly.
 *   heap-sites NA NB PASSES
 *                      (a workload for traced runs, no self-check) NA
 *                      objects from site_a and NB from site_b, 4-32 KiB
 *                      each, interleaved in the heap; every object is
 *                      written once, then A's are swept PASSES more times.
 *                      Prints the exact bytes and counts per site.
 *   remap              mremap(MREMAP_FIXED) onto a tracked mapping logs
 *                      its FREE; MREMAP_DONTUNMAP logs none for the old
 *                      range (it stays mapped and tracked).  With hints
 *                      (root): the moved locks are undone, the budget
 *                      comes back.
 *   dliter             an allocation inside a dl_iterate_phdr callback
 *                      while another thread's allocation is resolving its
 *                      modules: no deadlock (an alarm says so otherwise).
 *   churn N            (a benchmark, no self-check) N malloc/free pairs of
 *                      16-1024 bytes with 4096 blocks live; prints ns per
 *                      pair.
 *
 * Prints one JSON line; exit 0 when every check passed, else 1 with a
 * "probe: ..." line per failed check on stderr. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define M (1ul << 20)
#define PG 4096ul

static int g_fail;
#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "probe: line %d: ", __LINE__);                                         \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            g_fail = 1;                                                                            \
        }                                                                                          \
    } while (0)

/* ---- call sites the hints match (frame 0: the return address in here) ---- */
__attribute__((noipa)) static void *lock_site(size_t n)
{
    void *p = malloc(n);
    __asm__ volatile("" : : "r"(p) : "memory"); /* no tail call */
    return p;
}

__attribute__((noipa)) static void *map_site(size_t n)
{
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    __asm__ volatile("" : : "r"(p) : "memory");
    return p;
}

__attribute__((noipa)) static void *cold_site(size_t n)
{
    void *p = malloc(n);
    __asm__ volatile("" : : "r"(p) : "memory");
    return p;
}

__attribute__((noipa)) static void *many_site(size_t n)
{
    void *p = malloc(n);
    __asm__ volatile("" : : "r"(p) : "memory");
    return p;
}

__attribute__((noipa)) static void *wn_site(size_t n)
{
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    __asm__ volatile("" : : "r"(p) : "memory");
    return p;
}

/* quota mode: hint 4 (mlock QUOTA_LOCK bytes on many_site), hint 5
 * (willneed, at most QUOTA_CALLS calls, on wn_site) */
#define QUOTA_LOCK (M + M / 2)
#define QUOTA_CALLS 10

/* ---- helpers ---- */
/* kB of the pages [p, p+n) touches: what mlock(p, n) adds to VmLck */
static long span_kb(const void *p, size_t n)
{
    uintptr_t a = (uintptr_t)p & ~(PG - 1), z = ((uintptr_t)p + n + PG - 1) & ~(PG - 1);
    return (long)((z - a) / 1024);
}

static long vmlck_kb(void)
{
    char buf[4096];
    int fd = open("/proc/self/status", O_RDONLY);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = 0;
    char *l = strstr(buf, "VmLck:");
    return l ? strtol(l + 6, NULL, 10) : -1;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* mmap / munmap that the library does not see */
static void *raw_mmap(void *a, size_t n, int prot, int flags)
{
    return (void *)syscall(SYS_mmap, a, n, prot, flags, -1, 0);
}

static void raw_munmap(void *a, size_t n)
{
    syscall(SYS_munmap, a, n);
}

/* ---- this process's allocation log ---- */
enum { REC_ALLOC = 1, REC_FREE = 2, REC_STACK = 3, REC_MODULE = 4, REC_HINT = 5, REC_SAMPLE = 7 };
struct rec {
    uint32_t type, len;
    const unsigned char *body; /* after type and len */
};
struct logv {
    unsigned char *buf;
    size_t len;
};

static struct logv log_read(void)
{
    struct logv l = {NULL, 0};
    const char *dir = getenv("SWAPLAB_ALLOC_DIR");
    if (!dir) {
        CHECK(0, "SWAPLAB_ALLOC_DIR is not set");
        return l;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/allocs.%d.bin", dir, (int)getpid());
    int fd = open(path, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st)) {
        CHECK(0, "cannot open %s", path);
        return l;
    }
    l.len = (size_t)st.st_size;
    l.buf = raw_mmap(NULL, l.len + PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS);
    size_t got = 0;
    while (got < l.len) {
        ssize_t r = read(fd, l.buf + got, l.len - got);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    l.len = got;
    CHECK(l.len >= 32 && !memcmp(l.buf, "SWLALOG1", 8), "%s: not an allocation log", path);
    return l;
}

static void log_free(struct logv *l)
{
    if (l->buf)
        raw_munmap(l->buf, l->len + PG);
}

/* Iterates records: *off starts at 0; 1 and *r while there is one. */
static int log_next(const struct logv *l, size_t *off, struct rec *r)
{
    if (*off == 0)
        *off = 32;
    if (*off + 8 > l->len)
        return 0;
    memcpy(&r->type, l->buf + *off, 4);
    memcpy(&r->len, l->buf + *off + 4, 4);
    if (r->len < 8 || *off + r->len > l->len)
        return 0;
    r->body = l->buf + *off + 8;
    *off += r->len;
    return 1;
}

static uint32_t u32at(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static uint64_t u64at(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* ALLOC / FREE body: tid, func, t_ns, addr, size, stack_id */
#define A_FUNC(b) u32at((b) + 4)
#define A_TIME(b) u64at((b) + 8)
#define A_ADDR(b) u64at((b) + 16)
#define A_SIZE(b) u64at((b) + 24)
#define A_STACK(b) u32at((b) + 32)
/* HINT body: tid, hint_id, t_ns, addr, len, action, result */
#define H_ID(b) u32at((b) + 4)
#define H_ADDR(b) u64at((b) + 16)
#define H_LEN(b) u64at((b) + 24)
#define H_ACTION(b) u32at((b) + 32)
#define H_RESULT(b) ((int32_t)u32at((b) + 36))

/* Frame 0 (module path, offset) of the last ALLOC of exactly size bytes. */
static int frame0_of(const struct logv *l, uint64_t size, char *path, size_t cap, uint64_t *off)
{
    size_t o = 0;
    struct rec r;
    uint32_t stack = 0;
    while (log_next(l, &o, &r))
        if (r.type == REC_ALLOC && A_SIZE(r.body) == size)
            stack = A_STACK(r.body);
    if (!stack)
        return -1;
    uint32_t mod = 0;
    o = 0;
    while (log_next(l, &o, &r))
        if (r.type == REC_STACK && u32at(r.body) == stack && u32at(r.body + 4) >= 1) {
            mod = u32at(r.body + 8);
            *off = u64at(r.body + 16);
        }
    if (!mod)
        return -1;
    o = 0;
    while (log_next(l, &o, &r))
        if (r.type == REC_MODULE && u32at(r.body) == mod) {
            uint32_t n = u32at(r.body + 4);
            if (n >= cap)
                return -1;
            memcpy(path, r.body + 8, n);
            path[n] = 0;
            return 0;
        }
    return -1;
}

/* ---- modes ---- */
static int mode_hints(const char *file, const char *budget)
{
    const size_t ls = M + 8, ms = M + PG, cs = M + 16, ys = M + 24, ws = M + 2 * PG;
    void *a = lock_site(ls), *b = map_site(ms), *c = cold_site(cs), *y = many_site(ys),
         *w = wn_site(ws);
    struct logv l = log_read();
    static const char *const what[5] = {"mlock", "mlock", "cold", "mlock", "willneed"};
    const size_t sizes[5] = {ls, ms, cs, ys, ws};
    const unsigned long long p1[5] = {0, 0, 0, QUOTA_LOCK, 256 << 10}, p2[5] = {0, 0, 0, 0, 100};
    FILE *f = fopen(file, "w");
    CHECK(f, "cannot create %s", file);
    if (f)
        fprintf(f, "swaplab-hints\t1\nbudget\t%s\n", budget);
    for (int i = 0; i < 5 && f; i++) {
        char path[4096];
        uint64_t off = 0;
        int r = frame0_of(&l, sizes[i], path, sizeof path, &off);
        CHECK(r == 0, "no ALLOC of %zu bytes with a stack in the log", sizes[i]);
        if (!r)
            fprintf(f, "hint\t%d\t%s\t%llu\t%llu\t1\t%s\t0x%llx\n", i + 1, what[i], p1[i], p2[i],
                    path, (unsigned long long)off);
        if (!r && i == 4)
            fprintf(f, "set\tmax_calls\t%d\nset\tchunk\t%d\n", QUOTA_CALLS, 64 << 10);
    }
    if (f)
        fclose(f);
    log_free(&l);
    free(a);
    munmap(b, ms);
    free(c);
    free(y);
    munmap(w, ws);
    printf("{\"mode\":\"hints\",\"file\":\"%s\"}\n", file);
    return g_fail;
}

static int mode_mremap(void)
{
    long k[4];
    char *p = map_site(M); /* hint 2: 1 MiB locked of the 3 MiB budget */
    CHECK(p != MAP_FAILED, "mmap");
    k[0] = vmlck_kb();
    /* something right after p, so that p cannot grow in place */
    void *blk = raw_mmap(p + M, PG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE);
    CHECK(blk == (void *)(p + M) || errno == EEXIST, "blocker: %s", strerror(errno));
    void *r = mremap(p, M, 2 * M, 0);
    CHECK(r == MAP_FAILED, "growth without MREMAP_MAYMOVE into a blocked page succeeded");
    r = mremap(p, M, M, MREMAP_MAYMOVE | MREMAP_FIXED, (void *)0x1001);
    CHECK(r == MAP_FAILED && errno == EINVAL, "mremap to an unaligned address");
    CHECK(munmap(p + 1, PG) == -1 && errno == EINVAL, "munmap of an unaligned address");
    /* the budget still holds p's 1 MiB: 2 MiB + 4 KiB more is too much,
     * 2 MiB fits exactly */
    void *q = map_site(2 * M + PG);
    void *q2 = map_site(2 * M);
    k[1] = vmlck_kb();
    /* a good mremap (shrink in place) frees p: its budget comes back, and
     * the part that stays (now a new object) is unlocked */
    uint64_t t_good = now_ns();
    r = mremap(p, M, M / 2, 0);
    CHECK(r == p, "shrinking mremap failed: %s", strerror(errno));
    k[2] = vmlck_kb();
    void *q3 = map_site(M);
    k[3] = vmlck_kb();
    CHECK(k[0] == 1024 && k[1] == 3072 && k[2] == 2048 && k[3] == 3072,
          "VmLck %ld %ld %ld %ld kB, want 1024 3072 2048 3072", k[0], k[1], k[2], k[3]);

    struct logv l = log_read();
    size_t o = 0;
    struct rec rc;
    int frees = 0, nh = 0, good_free = 0;
    int32_t res[8];
    uint64_t lens[8];
    while (log_next(&l, &o, &rc)) {
        if (rc.type == REC_FREE && A_ADDR(rc.body) < (uint64_t)(p + M) &&
            A_ADDR(rc.body) + A_SIZE(rc.body) > (uint64_t)p) {
            frees++;
            good_free = A_ADDR(rc.body) == (uint64_t)p && A_SIZE(rc.body) == M &&
                        A_FUNC(rc.body) == 10 && A_TIME(rc.body) >= t_good;
        }
        if (rc.type == REC_HINT && H_ID(rc.body) == 2 && nh < 8) {
            res[nh] = H_RESULT(rc.body);
            lens[nh++] = H_LEN(rc.body);
        }
    }
    log_free(&l);
    CHECK(frees == 1 && good_free,
          "%d FREE records over p; want exactly one, the good mremap's (p, 1 MiB, mremap)", frees);
    CHECK(nh == 4 && res[0] == 0 && lens[0] == M && res[1] == ENOMEM && lens[1] == 2 * M + PG &&
              res[2] == 0 && lens[2] == 2 * M && res[3] == 0 && lens[3] == M,
          "map_site mlock results: %d of them, want ok ENOMEM ok ok", nh);
    munmap(q, 2 * M + PG);
    munmap(q2, 2 * M);
    munmap(q3, M);
    printf("{\"mode\":\"mremap\",\"p\":%llu,\"vmlck_kb\":[%ld,%ld,%ld,%ld],\"frees\":%d,"
           "\"hints\":%d}\n",
           (unsigned long long)(uintptr_t)p, k[0], k[1], k[2], k[3], frees, nh);
    return g_fail;
}

/* One FREE or ALLOC of the log: where, how much, which call, when. */
struct ev {
    uint64_t addr, size, t;
    uint32_t func;
};

/* The records of type `type` overlapping [a, a+n) made at or after tlo
 * (addresses are reused), at most cap, in log order; their count. */
static int events_over(const struct logv *l, uint32_t type, const void *a, size_t n, uint64_t tlo,
                       struct ev *out, int cap)
{
    size_t o = 0;
    struct rec r;
    int k = 0;
    uint64_t lo = (uint64_t)(uintptr_t)a, hi = lo + n;
    while (log_next(l, &o, &r))
        if (r.type == type && A_ADDR(r.body) < hi && lo < A_ADDR(r.body) + A_SIZE(r.body) &&
            A_TIME(r.body) >= tlo) {
            if (k < cap)
                out[k] = (struct ev){A_ADDR(r.body), A_SIZE(r.body), A_TIME(r.body), A_FUNC(r.body)};
            k++;
        }
    return k;
}

/* smaps' Locked: kB of the mapping containing a (-1: none).  (VmLck is
 * no help after MREMAP_DONTUNMAP: Linux 6.18 moves the lock to the new
 * mapping and clears it in the old one, yet keeps counting both.) */
static long locked_kb_at(const void *a)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f)
        return -1;
    char line[512];
    int in = 0;
    long kb = -1;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        char c;
        if (sscanf(line, "%lx-%lx %c", &lo, &hi, &c) == 3) {
            in = (uintptr_t)a >= lo && (uintptr_t)a < hi;
            continue;
        }
        if (in && !strncmp(line, "Locked:", 7)) {
            kb = strtol(line + 7, NULL, 10);
            break;
        }
    }
    fclose(f);
    return kb;
}

#define F_MREMAP_ 10
#define F_MUNMAP_ 12

/* remap mode: mremap(MREMAP_FIXED) onto a tracked mapping logs that
 * mapping's FREE (a munmap, as under mmap MAP_FIXED); MREMAP_DONTUNMAP
 * logs no FREE of the old range, which stays mapped and tracked (its
 * FREE comes with its munmap).  With hints (root), map_site's mlock: the
 * locks the kernel moves along are undone and every budget byte comes
 * back. */
static int mode_remap(void)
{
    typedef void (*stats_fn)(uint64_t[4]);
    stats_fn stats = (stats_fn)dlsym(RTLD_DEFAULT, "swaplab_preload_stats");
    CHECK(stats, "swaplab_preload_stats not found: is the library preloaded?");
    if (!stats)
        return 1;
    int hinted = getenv("SWAPLAB_HINTS") != NULL;
    uint64_t s0[4], s1[4];
    long k[4];
    stats(s0);
    char *a = map_site(M), *b = map_site(M); /* hinted: 2 of 3 MiB locked */
    uint64_t t0 = now_ns();
    void *r = mremap(a, M, M, MREMAP_MAYMOVE | MREMAP_FIXED, b);
    CHECK(r == b, "mremap(MREMAP_FIXED) onto b: %s", strerror(errno));
    k[0] = vmlck_kb(); /* hinted: b's lock went with b, a's moved and was undone */
    uint64_t tc = now_ns(); /* (c may take a's old place) */
    char *c = map_site(M); /* hinted: 1 MiB locked */
    k[1] = vmlck_kb();
    uint64_t t1 = now_ns();
    char *d = mremap(c, M, M, MREMAP_MAYMOVE | MREMAP_DONTUNMAP);
    int dontunmap = d != MAP_FAILED;
    CHECK(dontunmap || errno == EINVAL, "mremap(MREMAP_DONTUNMAP): %s", strerror(errno));
    k[2] = vmlck_kb();
    long lk_c = locked_kb_at(c), lk_d = dontunmap ? locked_kb_at(d) : 0;
    stats(s1); /* tracked: b (moved there), c and d */
    char *e = map_site(3 * M); /* hinted: the whole budget is back */
    k[3] = vmlck_kb();
    uint64_t t2 = now_ns();
    munmap(b, M);
    munmap(c, M);
    if (dontunmap)
        munmap(d, M);
    munmap(e, 3 * M);
    CHECK(s1[2] == s0[2] + 2 + (uint64_t)dontunmap, "tracked mappings %llu, want %llu",
          (unsigned long long)s1[2], (unsigned long long)(s0[2] + 2 + (uint64_t)dontunmap));
    /* hinted: a's and b's locks are gone, c's 1 MiB was locked; after
     * MREMAP_DONTUNMAP neither c nor d is locked, and e gets all 3 MiB */
    if (hinted)
        CHECK(k[0] == 0 && k[1] == 1024 && lk_c == 0 && lk_d == 0 && k[3] - k[2] == 3072,
              "VmLck %ld %ld (c, d locked %ld %ld kB) %ld %ld kB, want 0 1024 (0 0) x x+3072",
              k[0], k[1], lk_c, lk_d, k[2], k[3]);

    struct logv l = log_read();
    struct ev ev[8];
    /* a: its one FREE is the move's */
    int n = events_over(&l, REC_FREE, a, M, t0, ev, 8);
    n -= n && ev[n - 1].t >= tc && (void *)c == (void *)a; /* c's own, at the end */
    CHECK(n == 1 && ev[0].addr == (uint64_t)(uintptr_t)a && ev[0].size == M &&
              ev[0].func == F_MREMAP_ && ev[0].t >= t0 && ev[0].t < t1,
          "%d FREEs over a; want one, the mremap's", n);
    /* b: the FREE of the mapping the move replaced, then the munmap's of
     * the moved one (before the fix: only the latter) */
    n = events_over(&l, REC_FREE, b, M, t0, ev, 8);
    CHECK(n == 2 && ev[0].addr == (uint64_t)(uintptr_t)b && ev[0].size == M &&
              ev[0].func == F_MUNMAP_ && ev[0].t >= t0 && ev[0].t < t1 && ev[1].size == M &&
              ev[1].func == F_MUNMAP_ && ev[1].t >= t2,
          "%d FREEs over b; want two: the replaced mapping's at the mremap, the moved one's at "
          "the munmap",
          n);
    n = events_over(&l, REC_ALLOC, b, M, 0, ev, 8);
    CHECK(n == 2 && ev[1].func == F_MREMAP_ && ev[1].t >= t0 && ev[1].t < t1,
          "%d ALLOCs over b; want map_site's and the mremap's", n);
    if (dontunmap) {
        /* c stays mapped: its only FREE is the munmap's */
        n = events_over(&l, REC_FREE, c, M, tc, ev, 8);
        CHECK(n == 1 && ev[0].addr == (uint64_t)(uintptr_t)c && ev[0].size == M &&
                  ev[0].func == F_MUNMAP_ && ev[0].t >= t2,
              "%d FREEs over c (MREMAP_DONTUNMAP's old range); want one, the munmap's", n);
        n = events_over(&l, REC_FREE, d, M, t1, ev, 8);
        CHECK(n == 1 && ev[0].t >= t2, "%d FREEs over d; want one, the munmap's", n);
        n = events_over(&l, REC_ALLOC, d, M, t1, ev, 8);
        CHECK(n == 1 && ev[0].func == F_MREMAP_ && ev[0].t >= t1 && ev[0].t < t2,
              "%d ALLOCs over d; want the mremap's", n);
    }
    log_free(&l);
    printf("{\"mode\":\"remap\",\"a\":%llu,\"b\":%llu,\"c\":%llu,\"d\":%llu,"
           "\"dontunmap\":%s,\"hinted\":%s,\"vmlck_kb\":[%ld,%ld,%ld,%ld],"
           "\"locked_kb_c_d\":[%ld,%ld]}\n",
           (unsigned long long)(uintptr_t)a, (unsigned long long)(uintptr_t)b,
           (unsigned long long)(uintptr_t)c,
           (unsigned long long)(dontunmap ? (uintptr_t)d : 0), dontunmap ? "true" : "false",
           hinted ? "true" : "false", k[0], k[1], k[2], k[3], lk_c, lk_d);
    return g_fail;
}

/* dliter mode: thread A is inside dl_iterate_phdr (the dynamic linker's
 * lock held) when thread B makes the process's first tracked allocation,
 * whose frames' modules the library has to look up (with
 * dl_iterate_phdr); then A, still inside, allocates from a new call stack
 * too.  A library that held its stack lock across its own dl_iterate_phdr
 * deadlocks here (B: stack lock, waits for the linker's; A: linker's,
 * waits for the stack lock): the alarm ends the probe with a message. */
static int g_dl_pipe[2];
static int g_dl_calls;

static void dl_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "probe: dliter: deadlock: an allocation inside a dl_iterate_phdr "
                              "callback waited 20 s (a lock held across dl_iterate_phdr?)\n";
    write(2, msg, sizeof msg - 1);
    _exit(1);
}

__attribute__((noipa)) static void *dl_site_b(size_t n)
{
    void *p = malloc(n);
    __asm__ volatile("" : : "r"(p) : "memory");
    return p;
}

static int dl_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)info;
    (void)size;
    (void)data;
    if (g_dl_calls++)
        return 0;
    char x = 1;
    write(g_dl_pipe[1], &x, 1); /* B may go */
    struct timespec ts = {0, 300 * 1000 * 1000};
    nanosleep(&ts, NULL); /* B is now in the library, looking up its modules */
    void *p = lock_site(M);
    ((volatile char *)p)[0] = 1;
    free(p);
    return 1;
}

static void *dl_thread_a(void *arg)
{
    (void)arg;
    dl_iterate_phdr(dl_cb, NULL);
    return NULL;
}

static int mode_dliter(void)
{
    signal(SIGALRM, dl_alarm);
    alarm(20);
    CHECK(pipe(g_dl_pipe) == 0, "pipe");
    pthread_t th;
    CHECK(pthread_create(&th, NULL, dl_thread_a, NULL) == 0, "pthread_create");
    char x;
    CHECK(read(g_dl_pipe[0], &x, 1) == 1, "read");
    void *p = dl_site_b(M); /* the first tracked allocation: no module cached */
    ((volatile char *)p)[0] = 1;
    free(p);
    pthread_join(th, NULL);
    alarm(0);
    /* both allocations are in the log with stacks that resolve */
    struct logv l = log_read();
    char path[4096];
    uint64_t off;
    CHECK(frame0_of(&l, M, path, sizeof path, &off) == 0, "no ALLOC of 1 MiB with a stack");
    size_t o = 0;
    struct rec r;
    int allocs = 0;
    while (log_next(&l, &o, &r))
        allocs += r.type == REC_ALLOC && A_SIZE(r.body) == M;
    CHECK(allocs == 2, "%d ALLOCs of 1 MiB, want 2", allocs);
    log_free(&l);
    printf("{\"mode\":\"dliter\",\"allocs\":%d}\n", allocs);
    return g_fail;
}

static volatile int g_stop;

static void *churn(void *arg)
{
    (void)arg;
    while (!g_stop) {
        char *x = malloc(128 * 1024);
        x[0] = 1;
        free(x);
        void *m = mmap(NULL, 128 * 1024, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        munmap(m, 128 * 1024);
    }
    return NULL;
}

/* The child's checks; its exit status. */
static int fork_child(void *a)
{
    int bad = 0;
    bad |= vmlck_kb() != 0;
    void *c = lock_site(3 * M); /* the whole budget: nothing is locked here */
    bad |= (vmlck_kb() != span_kb(c, 3 * M)) << 1;
    free(c);
    free(a); /* inherited, locked in the parent only: gives back nothing */
    c = lock_site(3 * M);
    bad |= (vmlck_kb() != span_kb(c, 3 * M)) << 2;
    free(c);
    for (int i = 0; i < 10; i++)
        free(malloc(200 * 1024));
    void *m = map_site(M);
    bad |= (vmlck_kb() != 1024) << 3;
    munmap(m, M);
    return bad;
}

static int mode_fork(int nfork)
{
    void *a = lock_site(M);
    long k0 = vmlck_kb();
    pthread_t th;
    CHECK(pthread_create(&th, NULL, churn, NULL) == 0, "pthread_create");
    int failed = 0, first_bad = 0;
    for (int i = 0; i < nfork; i++) {
        pid_t pid = fork();
        if (pid == 0)
            _exit(fork_child(a));
        int st = 0;
        CHECK(pid > 0 && waitpid(pid, &st, 0) == pid, "fork / waitpid");
        if (!WIFEXITED(st) || WEXITSTATUS(st)) {
            if (!failed++)
                first_bad = st;
        }
    }
    g_stop = 1;
    pthread_join(th, NULL);
    CHECK(!failed, "%d of %d children failed (first: status 0x%x; exit bits: 1 VmLck at start, "
                   "2 first lock, 4 lock after freeing the inherited object, 8 mmap lock)",
          failed, nfork, first_bad);
    long k1 = vmlck_kb();
    void *b = lock_site(2 * M); /* the parent's budget is its own: 1 + 2 of 3 MiB */
    long k2 = vmlck_kb();
    long ka = span_kb(a, M), kb = span_kb(b, 2 * M);
    CHECK(k0 == ka && k1 == ka && k2 == ka + kb, "parent VmLck %ld %ld %ld kB, want %ld %ld %ld", k0,
          k1, k2, ka, ka, ka + kb);
    free(b);
    free(a);
    printf("{\"mode\":\"fork\",\"forks\":%d,\"failed\":%d}\n", nfork, failed);
    return g_fail;
}

static int mode_gate(char **argv)
{
    const char *fds = getenv("PROBE_GATE_FDS");
    if (!fds) { /* set the gate up and start again with it */
        int go[2], ready[2];
        if (pipe(go) || pipe(ready))
            return 1;
        char v[64];
        snprintf(v, sizeof v, "%d,%d", go[0], ready[1]);
        setenv("SWAPLAB_DEBUG_BG_GATE", v, 1);
        snprintf(v, sizeof v, "%d,%d", go[1], ready[0]);
        setenv("PROBE_GATE_FDS", v, 1);
        execv("/proc/self/exe", argv);
        perror("probe: exec");
        return 1;
    }
    int go_w, ready_r;
    if (sscanf(fds, "%d,%d", &go_w, &ready_r) != 2)
        return 1;
    char *x = cold_site(M); /* hint 3: the thread takes it and parks */
    char c;
    CHECK(read(ready_r, &c, 1) == 1, "the background thread never reached its madvise");
    /* it is parked in the middle of its work on x: everything else goes on */
    for (int i = 0; i < 50; i++)
        free(malloc(128 * 1024));
    void *m = mmap(NULL, M, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    munmap(m, M);
    char *y = cold_site(M); /* registers with the thread */
    free(y);                /* and leaves it again, not waiting for x's madvise */
    pid_t pid = fork();
    if (pid == 0) { /* no thread in here is working on x */
        free(x);
        free(malloc(128 * 1024));
        _exit(0);
    }
    int st = 0;
    CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
          "child forked during the madvise: status 0x%x", st);
    CHECK(write(go_w, "g", 1) == 1, "releasing the gate");
    close(go_w);
    uint64_t xa = (uint64_t)x;
    free(x); /* waits for the madvise of x to end, if it has not */
    struct logv l = log_read();
    size_t o = 0;
    struct rec r;
    int hx = 0, hy = 0;
    while (log_next(&l, &o, &r))
        if (r.type == REC_HINT && H_ID(r.body) == 3) {
            if (H_ADDR(r.body) >= xa && H_ADDR(r.body) < xa + M)
                hx += H_RESULT(r.body) == 0 && H_ACTION(r.body) == 3;
            else
                hy++;
        }
    log_free(&l);
    CHECK(hx == 1 && hy == 0, "cold hint records: %d ok on x (want 1), %d elsewhere (want 0)", hx,
          hy);
    printf("{\"mode\":\"gate\",\"x_cold\":%d,\"other\":%d}\n", hx, hy);
    return g_fail;
}

typedef void (*stats_fn)(uint64_t out[4]);

static int mode_many(long n)
{
    stats_fn stats = (stats_fn)dlsym(RTLD_DEFAULT, "swaplab_preload_stats");
    CHECK(stats, "swaplab_preload_stats not found: is the library preloaded?");
    if (!stats)
        return 1;
    const size_t obj = 16 * PG; /* the library's default threshold */
    char *base = raw_mmap(NULL, (size_t)n * obj, PROT_NONE,
                          MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE);
    CHECK(base != MAP_FAILED, "reserving %ld x 64 KiB", n);
    if (base == MAP_FAILED)
        return 1;
    uint64_t s0[4], s1[4];
    stats(s0);
    for (long i = 0; i < n; i++) {
        void *p = mmap(base + i * obj, obj, PROT_NONE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
        if (p != base + i * obj) {
            CHECK(0, "mmap %ld: %s", i, strerror(errno));
            return 1;
        }
    }
    uint64_t peak[4];
    stats(peak);
    long holes = 0, pairs = 0;
    for (long i = 0; i < n; i += 8) { /* a hole in the middle: two pieces stay */
        CHECK(munmap(base + i * obj + 4 * PG, 4 * PG) == 0, "munmap hole %ld", i);
        holes++;
    }
    for (long i = 1; i + 1 < n; i += 8) { /* across two objects */
        CHECK(munmap(base + i * obj + 8 * PG, 16 * PG) == 0, "munmap across %ld", i);
        pairs++;
    }
    for (long i = 0; i < n; i += 64) { /* whole runs of objects and pieces */
        long k = n - i < 64 ? n - i : 64;
        CHECK(munmap(base + i * obj, (size_t)k * obj) == 0, "munmap run %ld", i);
    }
    stats(s1);
    uint64_t ops = s1[0] - s0[0], steps = s1[1] - s0[1];
    double per_op = ops ? (double)steps / (double)ops : 0;
    /* a treap of n nodes has expected depth about 2 ln n (23 at 100 k); an
     * operation is a few splits and merges along such paths.  A scan of
     * the live objects would cost about n / 2 per munmap. */
    double bound = 12.0 * log2((double)n + 2);
    CHECK(s1[2] == s0[2] && peak[2] == s0[2] + (uint64_t)n,
          "tracked mappings: %llu before, %llu at the peak, %llu after",
          (unsigned long long)s0[2], (unsigned long long)peak[2], (unsigned long long)s1[2]);
    CHECK(per_op <= bound, "%.1f tree steps per operation, more than %.0f", per_op, bound);

    /* the log: n ALLOCs, FREEs tiling the whole range, none across two
     * objects, as many as the pieces made */
    struct logv l = log_read();
    size_t o = 0;
    struct rec r;
    long allocs = 0, frees = 0;
    uint64_t lo = (uint64_t)base, hi = lo + (uint64_t)n * obj;
    unsigned char *seen = raw_mmap(NULL, (size_t)n * 16, PROT_READ | PROT_WRITE,
                                   MAP_PRIVATE | MAP_ANONYMOUS);
    int across = 0, twice = 0;
    while (log_next(&l, &o, &r)) {
        if ((r.type != REC_ALLOC && r.type != REC_FREE) || A_ADDR(r.body) < lo ||
            A_ADDR(r.body) >= hi)
            continue;
        if (r.type == REC_ALLOC) {
            allocs += A_FUNC(r.body) == 9 && A_SIZE(r.body) == obj;
            continue;
        }
        frees++;
        uint64_t a = A_ADDR(r.body), z = a + A_SIZE(r.body);
        if ((a - lo) / obj != (z - 1 - lo) / obj || A_FUNC(r.body) != 12)
            across++;
        for (uint64_t pg = (a - lo) / PG; pg < (z - lo) / PG; pg++)
            twice += seen[pg]++ != 0;
    }
    long gaps = 0;
    for (long pg = 0; pg < n * 16; pg++)
        gaps += !seen[pg];
    raw_munmap(seen, (size_t)n * 16);
    log_free(&l);
    long want = n + 2 * holes + 2 * pairs;
    CHECK(allocs == n, "%ld mmap ALLOC records, want %ld", allocs, n);
    CHECK(frees == want && !across && !twice && !gaps,
          "%ld FREE records (want %ld), %d across objects or not munmap, %d pages freed twice, "
          "%ld never", frees, want, across, twice, gaps);
    raw_munmap(base, (size_t)n * obj);
    printf("{\"mode\":\"many\",\"base\":%llu,\"n\":%ld,\"frees\":%ld,\"tree_ops\":%llu,\"steps_per_op\":%.1f,"
           "\"bound\":%.0f}\n",
           (unsigned long long)lo, n, frees, (unsigned long long)ops, per_op, bound);
    return g_fail;
}

/* A hint's budget holds across every allocation it matches: 40 objects at
 * many_site lock QUOTA_LOCK bytes in all (1 MiB + 512 KiB, then one EDQUOT
 * line), and 100 objects at wn_site, each touched at its first page (the
 * prefetch frontier), get exactly QUOTA_CALLS madvise calls, then one
 * EDQUOT line. */
static int mode_quota(void)
{
    enum { NY = 40, NW = 100 };
    void *y[NY], *w[NW];
    long k0 = vmlck_kb();
    for (int i = 0; i < NY; i++)
        y[i] = many_site(M);
    long k1 = vmlck_kb();
    long want_kb = span_kb(y[0], M) + span_kb(y[1], M / 2);
    CHECK(k1 - k0 == want_kb, "VmLck grew by %ld kB, want %ld (1 MiB + 512 KiB, not 40 MiB)",
          k1 - k0, want_kb);
    for (int i = 0; i < NW; i++) {
        w[i] = wn_site(M);
        CHECK(w[i] != MAP_FAILED, "mmap");
        ((volatile char *)w[i])[0] = 1;
    }
    uint64_t lock_ok = 0, lock_bytes = 0, lock_q = 0, wn_ok = 0, wn_q = 0;
    for (int tries = 0; tries < 1000; tries++) { /* until the thread spent its quota */
        struct logv l = log_read();
        size_t o = 0;
        struct rec r;
        lock_ok = lock_bytes = lock_q = wn_ok = wn_q = 0;
        while (log_next(&l, &o, &r)) {
            if (r.type != REC_HINT)
                continue;
            int res = H_RESULT(r.body);
            if (H_ID(r.body) == 4) {
                lock_ok += res == 0;
                lock_bytes += res == 0 ? H_LEN(r.body) : 0;
                lock_q += res == EDQUOT;
            } else if (H_ID(r.body) == 5) {
                wn_ok += res == 0;
                wn_q += res == EDQUOT;
            }
        }
        log_free(&l);
        if (wn_q)
            break;
        usleep(10000);
    }
    CHECK(lock_ok == 2 && lock_bytes == QUOTA_LOCK && lock_q == 1,
          "mlock hint 4: %llu calls, %llu bytes, %llu EDQUOT; want 2, %lu, 1",
          (unsigned long long)lock_ok, (unsigned long long)lock_bytes, (unsigned long long)lock_q,
          (unsigned long)QUOTA_LOCK);
    CHECK(wn_ok == QUOTA_CALLS && wn_q == 1, "willneed hint 5: %llu calls, %llu EDQUOT; want %d, 1",
          (unsigned long long)wn_ok, (unsigned long long)wn_q, QUOTA_CALLS);
    for (int i = 0; i < NY; i++)
        free(y[i]);
    for (int i = 0; i < NW; i++)
        munmap(w[i], M);
    printf("{\"mode\":\"quota\",\"locked_kb\":%ld,\"mlock_calls\":%llu,\"willneed_calls\":%llu}\n",
           k1 - k0, (unsigned long long)lock_ok, (unsigned long long)wn_ok);
    return g_fail;
}

/* A file of n bytes in dir, written, synced and dropped from the page
 * cache, mapped read-only with readahead off: each first touch of a page
 * is a major fault. */
static char *cold_file(const char *dir, const char *name, size_t n)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    CHECK(fd >= 0, "cannot create %s", path);
    if (fd < 0)
        return NULL;
    char buf[65536];
    memset(buf, 7, sizeof buf);
    for (size_t k = 0; k < n; k += sizeof buf)
        CHECK(write(fd, buf, sizeof buf) == (ssize_t)sizeof buf, "write");
    fsync(fd);
    posix_fadvise(fd, 0, (off_t)n, POSIX_FADV_DONTNEED);
    char *p = mmap(NULL, n, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    unlink(path);
    CHECK(p != MAP_FAILED, "mmap %s", path);
    if (p == MAP_FAILED)
        return NULL;
    madvise(p, n, MADV_RANDOM);
    return p;
}

static long majflt(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_majflt;
}

/* MADV_PAGEOUT of a mapping of a file until mincore(2) shows at most 1 %
 * of it resident (its clean page-cache pages are dropped). */
static void drop_file_pages(char *p, size_t n)
{
    unsigned char *v = malloc(n / PG);
    CHECK(v != NULL, "malloc");
    size_t res = n / PG;
    for (int k = 0; v && k < 50 && res * 100 > n / PG; k++) {
        madvise(p, n, MADV_PAGEOUT);
        CHECK(mincore(p, n, v) == 0, "mincore");
        res = 0;
        for (size_t i = 0; i < n / PG; i++)
            res += v[i] & 1;
        if (res * 100 > n / PG)
            usleep(20000);
    }
    CHECK(res * 100 <= n / PG, "%zu of %zu pages still resident after MADV_PAGEOUT", res, n / PG);
    free(v);
}

/* Touches `n` pages of the `np` at `p` picked by xorshift from `*x`. */
static char random_walk(const char *p, size_t np, size_t n, uint64_t *x)
{
    volatile char sink = 0;
    for (size_t i = 0; i < n; i++) {
        *x ^= *x << 13;
        *x ^= *x >> 7;
        *x ^= *x << 17;
        sink += p[(*x % np) * PG];
    }
    return sink;
}

/* SWAPLAB_PREFETCH=thread: a sequential walk over a cold file gets
 * willneed calls (hint id 0) ahead of it, inside it; so does a second
 * walk over the same file from its start right after the first (the
 * file's pages dropped in between: the trend is the same, the walk jumped
 * back); a random walk over another file gets none. */
static int mode_trend(const char *dir)
{
    const size_t n = 16 * M, np = n / PG;
    const char *rep = getenv("SWAPLAB_HINT_REPORT");
    CHECK(rep && *rep, "SWAPLAB_HINT_REPORT is not set");
    char *seq = cold_file(dir, "seq", n), *rnd = cold_file(dir, "rnd", n);
    if (!seq || !rnd || !rep)
        return 1;
    volatile char sink = 0;
    long m0 = majflt();
    for (size_t i = 0; i < np; i++)
        sink += seq[i * PG];
    long m1 = majflt();
    drop_file_pages(seq, n);
    long m1b = majflt();
    for (size_t i = 0; i < np; i++)
        sink += seq[i * PG];
    long m1c = majflt();
    usleep(20000);
    typedef void (*pf_stats_fn)(uint64_t out[3]);
    pf_stats_fn pf_stats = (pf_stats_fn)dlsym(RTLD_DEFAULT, "swaplab_preload_pf_stats");
    CHECK(pf_stats, "swaplab_preload_pf_stats not found: is the library preloaded?");
    uint64_t st0[3] = {0}, st1[3] = {0};
    if (pf_stats)
        pf_stats(st0);
    uint64_t x = 88172645463325252ull;
    sink += random_walk(rnd, np, np / 4, &x);
    long m2 = majflt();
    /* The thread reads its ring every millisecond, but a busy machine can
     * keep it off the CPU for the whole walk: wait (2 s at most) until it
     * has read the walk and gone sparse. */
    for (int k = 0; pf_stats && k < 200; k++) {
        usleep(10000);
        pf_stats(st1);
        if (st1[2])
            break;
    }
    /* A second random walk over the same file, its pages dropped again,
     * wholly under sparse sampling: about one sample in 16 major faults. */
    drop_file_pages(rnd, n);
    uint64_t sp0[3] = {0}, sp1[3] = {0};
    if (pf_stats)
        pf_stats(sp0);
    long m3 = majflt();
    sink += random_walk(rnd, np, np / 4, &x);
    long m4 = majflt();
    usleep(30000); /* its sparse interval is 10 ms */
    if (pf_stats)
        pf_stats(sp1);
    FILE *f = fopen(rep, "r");
    CHECK(f != NULL, "cannot read the report %s", rep);
    long in_seq = 0, in_rnd = 0, other = 0, past = 0, bytes = 0; /* past: ENOMEM calls */
    long elsewhere = 0, again = 0; /* again: calls of the second walk */
    int jumped = 0;                /* a call in seq's second half was seen */
    char line[256];
    while (f && fgets(line, sizeof line, f)) {
        unsigned pid, id;
        char act[32], res[32];
        unsigned long long a, len;
        if (sscanf(line, "%u\t%u\t%31s\t%llx\t%llu\t%31s", &pid, &id, act, &a, &len, res) != 6 ||
            id != 0 || strcmp(act, "willneed")) {
            other++;
            continue;
        }
        if (!strcmp(res, "ENOMEM")) { /* the trend ran off a mapping (the file's end) */
            past++;
            continue;
        }
        if (strcmp(res, "ok")) {
            other++;
            fprintf(stderr, "probe: a failed call: %s", line);
        } else if (a >= (uintptr_t)seq && a < (uintptr_t)seq + n) {
            /* (a call near the file's end may run on into the next mapping,
             * which can be the random file's: the trend does not know where
             * the mapping ends) */
            in_seq++;
            bytes += (long)len;
            if (a >= (uintptr_t)seq + n / 2)
                jumped = 1;
            else if (jumped)
                again++;
        } else if (a >= (uintptr_t)rnd && a < (uintptr_t)rnd + n)
            in_rnd++;
        else
            elsewhere++; /* e.g. a trend among the start-up faults in a library */
    }
    if (f)
        fclose(f);
    CHECK(in_seq >= 1 && in_rnd == 0 && other == 0,
          "prefetch calls: %ld in the sequential file, %ld in the random one, %ld else; want >= 1, "
          "0, 0",
          in_seq, in_rnd, other);
    printf("{\"mode\":\"trend\",\"pages\":%zu,\"seq_majflt\":%ld,\"seq2_majflt\":%ld,"
           "\"rnd_majflt\":%ld,\"calls\":%ld,\"calls2\":%ld,\"off_mapping\":%ld,\"elsewhere\":%ld,"
           "\"prefetched_bytes\":%ld,\"rnd_samples\":%llu,\"rnd_switches\":%llu,"
           "\"sparse_after\":%llu,\"sparse_majflt\":%ld,\"sparse_samples\":%llu,"
           "\"sparse_end\":%llu,\"sparse_switches\":%llu}\n",
           np, m1 - m0, m1c - m1b, m2 - m1c, in_seq, again, past, elsewhere, bytes,
           (unsigned long long)(st1[0] - st0[0]), (unsigned long long)(st1[1] - st0[1]),
           (unsigned long long)st1[2], m4 - m3, (unsigned long long)(sp1[0] - sp0[0]),
           (unsigned long long)sp1[2], (unsigned long long)(sp1[1] - sp0[1]));
    munmap(seq, n);
    munmap(rnd, n);
    return g_fail;
}

/* ---- sample: the heap sampler, checked from the log ---- */
__attribute__((noipa)) static void *sample_site(size_t n)
{
    void *p = malloc(n);
    __asm__ volatile("" ::: "memory");
    return p;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int mode_sample(void)
{
    enum { K = 40000, SZ = 1000 };
    const char *rv = getenv("SWAPLAB_HEAP_SAMPLE");
    CHECK(rv && *rv, "SWAPLAB_HEAP_SAMPLE is not set");
    if (!rv)
        return 1;
    char *end;
    double R = (double)strtoull(rv, &end, 10);
    R *= *end == 'K' || *end == 'k' ? 1024 : *end == 'M' || *end == 'm' ? 1048576 : 1;
    static char *blk[K];
    for (int i = 0; i < K; i++) {
        blk[i] = sample_site(SZ);
        if (!blk[i])
            return 1;
    }
    char *big = malloc(1 << 20); /* above the threshold: exact */
    for (int i = 0; i < K; i += 2) /* free the even ones */
        free(blk[i]);
    for (int i = 1; i < 200; i += 2) /* realloc some odd ones (below the threshold) */
        blk[i] = realloc(blk[i], 2000);
    struct logv l = log_read();
    size_t o = 0;
    struct rec r;
    uint32_t stack = 0;
    long samples = 0, frees_of_sampled = 0, bad_interval = 0, bad_stack = 0, big_logged = 0;
    static uint64_t sampled[K], freed[2 * K];
    long nfreed = 0;
    /* the first SAMPLE of size SZ defines the site's stack */
    while (log_next(&l, &o, &r)) {
        if (r.type == REC_SAMPLE && r.len == 56 && A_SIZE(r.body) == SZ) {
            if (!stack)
                stack = A_STACK(r.body);
            bad_stack += A_STACK(r.body) != stack;
            bad_interval += (double)u64at(r.body + 40) != R;
            if (samples < K)
                sampled[samples] = A_ADDR(r.body);
            samples++;
        } else if (r.type == REC_FREE && nfreed < 2 * K) {
            freed[nfreed++] = A_ADDR(r.body);
        } else if (r.type == REC_ALLOC && A_SIZE(r.body) == (1 << 20)) {
            big_logged++;
        }
    }
    double p = 1 - exp(-(double)SZ / R), mean = K * p, sd = sqrt(K * p * (1 - p));
    CHECK(fabs((double)samples - mean) <= 5 * sd, "%ld samples of %d blocks, expected %.0f +- %.0f",
          samples, K, mean, 5 * sd);
    CHECK(bad_interval == 0 && bad_stack == 0, "%ld samples with another interval, %ld another stack",
          bad_interval, bad_stack);
    CHECK(big_logged == 1, "the 1 MiB allocation logged %ld times", big_logged);
    long n = samples < K ? samples : K;
    qsort(sampled, (size_t)n, sizeof *sampled, cmp_u64);
    qsort(freed, (size_t)nfreed, sizeof *freed, cmp_u64);
    long want = 0;
    /* frees of our sampled addresses: look each sampled address up */
    for (long k = 0; k < n; k++) {
        uint64_t a = sampled[k];
        int was_freed = 0;
        for (int i = 0; i < K; i += 2)
            was_freed |= (uint64_t)(uintptr_t)blk[i] == a;
        void *hit = bsearch(&a, freed, (size_t)nfreed, sizeof *freed, cmp_u64);
        if (was_freed) {
            want++;
            frees_of_sampled += hit != NULL;
        }
    }
    CHECK(frees_of_sampled == want, "%ld of %ld freed sampled blocks have a FREE record",
          frees_of_sampled, want);
    /* no FREE for a freed block that was not sampled */
    long spurious = 0;
    for (long k = 0; k < nfreed; k++) {
        uint64_t a = freed[k];
        if (a == (uint64_t)(uintptr_t)big)
            continue;
        if (!bsearch(&a, sampled, (size_t)n, sizeof *sampled, cmp_u64))
            spurious++;
    }
    CHECK(spurious == 0, "%ld FREE records of blocks that were never sampled", spurious);
    printf("{\"mode\":\"sample\",\"blocks\":%d,\"samples\":%ld,\"expected\":%.1f,\"sd\":%.1f,"
           "\"freed_sampled\":%ld}\n",
           K, samples, mean, sd, want);
    log_free(&l);
    free(big);
    return g_fail;
}

/* ---- heap-sites: two call sites of small objects, one hot, one cold ---- */
static uint64_t hs_rng = 0x853c49e6748fea9bull;
static size_t hs_size(void)
{
    hs_rng = hs_rng * 6364136223846793005ull + 1442695040888963407ull;
    return 4096 + (size_t)((hs_rng >> 33) % (28 * 1024 + 1)); /* 4 KiB .. 32 KiB */
}

/* noipa: two identical functions would be folded into one (one site) */
__attribute__((noipa)) static char *site_a(size_t n)
{
    char *p = malloc(n);
    if (p)
        p[0] = 'A';
    return p;
}

/* noipa: two identical functions would be folded into one (one site) */
__attribute__((noipa)) static char *site_b(size_t n)
{
    char *p = malloc(n);
    if (p)
        p[0] = 'B';
    return p;
}

static int mode_heap_sites(long na, long nb, long passes)
{
    if (na < 1 || nb < 0 || passes < 0)
        return 2;
    char **a = calloc((size_t)na, sizeof *a), **b = calloc((size_t)(nb ? nb : 1), sizeof *b);
    size_t *as = calloc((size_t)na, sizeof *as);
    if (!a || !b || !as)
        return 1;
    uint64_t abytes = 0, bbytes = 0;
    long i = 0, j = 0;
    while (i < na || j < nb) { /* interleaved: A, B, A, B, ... */
        if (i < na) {
            as[i] = hs_size();
            a[i] = site_a(as[i]);
            if (!a[i])
                return 1;
            memset(a[i], (int)i, as[i]);
            abytes += as[i++];
        }
        if (j < nb) {
            size_t n = hs_size();
            b[j] = site_b(n);
            if (!b[j])
                return 1;
            memset(b[j], (int)j, n);
            bbytes += n;
            j++;
        }
    }
    volatile uint64_t sink = 0;
    for (long p = 0; p < passes; p++)
        for (long k = 0; k < na; k++)
            for (size_t o = 0; o < as[k]; o += 512)
                sink += (uint64_t)(a[k][o]++);
    printf("{\"mode\":\"heap-sites\",\"a_objects\":%ld,\"a_bytes\":%llu,\"b_objects\":%ld,"
           "\"b_bytes\":%llu,\"passes\":%ld}\n",
           na, (unsigned long long)abytes, nb, (unsigned long long)bbytes, passes);
    fflush(stdout);
    for (long k = 0; k < na; k++)
        free(a[k]);
    for (long k = 0; k < nb; k++)
        free(b[k]);
    free(a);
    free(b);
    free(as);
    return 0;
}

/* ---- churn: the cost of malloc/free of small blocks ---- */
static int mode_churn(long n)
{
    enum { LIVE = 4096 };
    static void *ring[LIVE];
    uint64_t x = 0x2545f4914f6cdd1dull;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        size_t k = (size_t)i % LIVE;
        free(ring[k]);
        ring[k] = malloc(16 + (size_t)(x % 1009));
        if (!ring[k])
            return 1;
        *(volatile char *)ring[k] = 1;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    for (int k = 0; k < LIVE; k++)
        free(ring[k]);
    double ns = (double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec);
    printf("{\"mode\":\"churn\",\"pairs\":%ld,\"ns_per_pair\":%.1f}\n", n, ns / (double)n);
    return 0;
}

int main(int argc, char **argv)
{
    const char *m = argc > 1 ? argv[1] : "";
    int r = 2;
    if (!strcmp(m, "hints") && argc == 4)
        r = mode_hints(argv[2], argv[3]);
    else if (!strcmp(m, "mremap") && argc == 2)
        r = mode_mremap();
    else if (!strcmp(m, "fork") && argc <= 3)
        r = mode_fork(argc == 3 ? atoi(argv[2]) : 50);
    else if (!strcmp(m, "gate") && argc == 2)
        r = mode_gate(argv);
    else if (!strcmp(m, "trend") && argc == 3)
        r = mode_trend(argv[2]);
    else if (!strcmp(m, "quota") && argc == 2)
        r = mode_quota();
    else if (!strcmp(m, "many") && argc <= 3)
        r = mode_many(argc == 3 ? atol(argv[2]) : 100000);
    else if (!strcmp(m, "heap-sites") && argc == 5)
        r = mode_heap_sites(atol(argv[2]), atol(argv[3]), atol(argv[4]));
    else if (!strcmp(m, "sample") && argc == 2)
        r = mode_sample();
    else if (!strcmp(m, "churn") && argc == 3)
        r = mode_churn(atol(argv[2]));
    else if (!strcmp(m, "remap") && argc == 2)
        r = mode_remap();
    else if (!strcmp(m, "dliter") && argc == 2)
        r = mode_dliter();
    else
        fprintf(stderr, "usage: %s hints FILE BUDGET | mremap | fork [N] | gate | quota | trend DIR | many [N] | sample | heap-sites NA NB PASSES | churn N | remap | dliter\n",
                argv[0]);
    fflush(stdout);
    return r;
}
