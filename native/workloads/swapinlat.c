/* swaplab-workload swapin-lat: what one page costs to swap out and back in,
 * on the swap area the process runs with (for `swaplab calibrate`).
 *
 *   swaplab-workload swapin-lat --size SIZE --out DIR [--rounds R] [--seed N]
 *
 * Run it in a memory cgroup whose limit is well above SIZE (no reclaim
 * pressure of its own) with page-cluster 0 (one page per swap-in), as
 * `swaplab calibrate` does. It maps SIZE bytes (MADV_NOHUGEPAGE), fills
 * every 8-byte word with a random 16-bit value (compressible about as much
 * as integer data; zram and zswap see realistic input), then per round:
 *
 *   evict   MADV_PAGEOUT on the region, wait until the kernel has no page
 *           under writeback, then drop what stayed in the swap cache (a
 *           swap file's pages do: they are written asynchronously) by
 *           lowering the cgroup's limit as far as the kernel accepts and
 *           restoring it (v1),
 *           or memory.reclaim (v2). Timed: pageout + writeback = write cost.
 *   seq     write one byte of every page in address order, each touch timed
 *   random  evict again, then the same in a random order (a permutation)
 *   cache   evict again, MADV_WILLNEED on the whole region, wait until
 *           mincore shows it resident (timed: the read throughput with the
 *           kernel's asynchronous reads; the madvise call's system CPU
 *           time is the submission of every read), then touch in order: each touch
 *           is a fault served from the swap cache, the kernel's fault path
 *           without device I/O.
 *
 * and once, before the rounds, `minor`: the first touch of SIZE/4 of fresh
 * anonymous memory (trap + zero-fill).
 *
 * With --limit (a run of its own: the kernel may OOM-kill a process under
 * a limit this tight, and that must not cost the timed phases), per round:
 * evict, a `random` pass (its system CPU time per major fault: a swap-in
 * without reclaim), then the `limit` pass: the region read back in whole,
 * the group's limit lowered by a quarter of the region (v1
 * memory.limit_in_bytes, v2 memory.max; restored after), and two passes
 * in the round's random order writing a byte per touch, every fault
 * reclaimed for under the limit by this task (direct memory-cgroup
 * reclaim, as a program under a limit pays it; the pages reclaimed are
 * dirty: swap-outs); then `limit_read`: the region evicted again and
 * read back (on a swap file every page keeps its swap copy), and the same
 * under the limit with reads only, so the pages reclaimed are clean. Not
 * timed per touch: each pass's system CPU time (getrusage), faults and the
 * machine's pswpout/pswpin/pgsteal_anon/pgscan_anon deltas are printed,
 * from which `swaplab calibrate` derives the reclaim CPU per page swapped
 * out and per clean page reclaimed. Latencies are rdtsc-timed (timer.h)
 * into an mlocked buffer and written to DIR/PHASE-ROUND.u32 (little-endian
 * u32 ns in touch order; minor.u32 once). stdout: one JSON line with the
 * per-round counts (faults, evicted pages, times) and, on zram or zswap,
 * the compression ratio the kernel reports (zram's mm_stat, or
 * /proc/meminfo's Zswap / Zswapped). */
#define _GNU_SOURCE
#include "common.h"
#include "timer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#define PAGE 4096UL
#define MAX_ROUNDS 16

#ifndef MADV_COLD
#define MADV_COLD 20
#endif
#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21
#endif

static long majflt(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_majflt;
}

static int write_file(const char *path, const char *v)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -errno;
    int bad = fputs(v, f) < 0;
    int e = errno;
    if (fclose(f) != 0 && !bad) {
        bad = 1;
        e = errno;
    }
    return bad ? -e : 0;
}

/* A u64 field of /proc/vmstat (0 when absent). */
static uint64_t vmstat(const char *key)
{
    FILE *f = fopen("/proc/vmstat", "r");
    if (!f)
        return 0;
    char k[128];
    unsigned long long v;
    uint64_t out = 0;
    while (fscanf(f, "%127s %llu", k, &v) == 2)
        if (!strcmp(k, key)) {
            out = v;
            break;
        }
    fclose(f);
    return out;
}

/* Pages of [p, p+pages) in memory (mapped or in the swap cache). */
static uint64_t resident(char *p, uint64_t pages, unsigned char *vec)
{
    if (mincore(p, pages * PAGE, vec) != 0)
        return 0;
    uint64_t n = 0;
    for (uint64_t i = 0; i < pages; i++)
        n += vec[i] & 1;
    return n;
}

/* v1: how far above what reclaim cannot take drop_cache lowers the limit
 * (room for the pages this process faults in before it restores it). */
#define DROP_MARGIN_KIB 512

struct cg {
    char dir[4096];
    int v2;
    char limit[64]; /* v1: the limit to restore */
};

/* Drops the group's reclaimable memory: the pages MADV_PAGEOUT left in the
 * swap cache. v1: the limit lowered until the kernel accepts it (it
 * reclaims to fit, or refuses with EBUSY) and restored; v2: memory.reclaim.
 * Returns 0, or -errno of the last failure. */
static int drop_cache(const struct cg *c, uint64_t bytes)
{
    char path[4200];
    if (c->v2) {
        snprintf(path, sizeof path, "%s/memory.reclaim", c->dir);
        char v[32];
        snprintf(v, sizeof v, "%llu", (unsigned long long)bytes);
        int e = write_file(path, v);
        return e == -EAGAIN ? 0 : e; /* EAGAIN: reclaimed less than asked */
    }
    /* As low as the kernel accepts, but a margin above what reclaim can
     * never take: the group's usage less its LRU pages (what is left is
     * the kernel's memory charged to it, page tables and slab, which v1
     * counts in memory.usage_in_bytes, and nothing reclaimable; the
     * mlocked buffers are on the unevictable list, also left). Between
     * lowering the limit and restoring it this process runs, and the code
     * and stack pages it faults back in must find room. Squeezed from
     * 64 KiB up, a limit accepted with only that memory left made the
     * fault a memory-cgroup OOM (CI, a 16M region; and every time here
     * with 64M, whose page tables alone are 180 KiB). */
    uint64_t lru = 0, usage = 0;
    snprintf(path, sizeof path, "%s/memory.stat", c->dir);
    FILE *st = fopen(path, "r");
    if (st) {
        char k[128];
        unsigned long long v;
        while (fscanf(st, "%127s %llu", k, &v) == 2)
            if (!strcmp(k, "inactive_anon") || !strcmp(k, "active_anon") ||
                !strcmp(k, "inactive_file") || !strcmp(k, "active_file"))
                lru += v;
        fclose(st);
    }
    snprintf(path, sizeof path, "%s/memory.usage_in_bytes", c->dir);
    st = fopen(path, "r");
    if (st) {
        unsigned long long v;
        if (fscanf(st, "%llu", &v) == 1)
            usage = v;
        fclose(st);
    }
    uint64_t floor_kib = ((usage > lru ? usage - lru : 0) >> 10) + DROP_MARGIN_KIB;
    snprintf(path, sizeof path, "%s/memory.limit_in_bytes", c->dir);
    int e = -EBUSY;
    for (uint64_t kib = floor_kib; kib <= floor_kib + 64 * 1024 && e == -EBUSY; kib *= 2) {
        char v[32];
        snprintf(v, sizeof v, "%llu", (unsigned long long)(kib << 10));
        e = write_file(path, v);
    }
    int r = write_file(path, c->limit);
    if (r)
        die(EXIT_FAIL, "swapin-lat: cannot restore %s to %s: %s", path, c->limit, strerror(-r));
    return e;
}

/* The first line of a cgroup file, newline stripped ("" when unreadable). */
static void read_line(const char *path, char *buf, size_t n)
{
    buf[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    if (!fgets(buf, (int)n, f))
        buf[0] = '\0';
    fclose(f);
    buf[strcspn(buf, "\n")] = '\0';
}

struct limit_pass {
    double stime_s, wall_s, set_s;
    long fill_majflt, majflt, minflt;
    uint64_t pswpout, pswpin, pgsteal, pgscan;
    int err;
};

static double stime_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

static long minflt(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_minflt;
}

/* `limit`: a quarter of the region must go, and two random passes write
 * (or read) it back in under the limit (see the top of the file). The
 * limit is restored before returning, or the process dies saying so. */
static struct limit_pass limit_pass(const struct cg *c, char *region, uint64_t pages, const uint32_t *order,
                                    int write)
{
    struct limit_pass lp = {0};
    char usage_path[4200], limit_path[4200], old[64], v[32];
    snprintf(usage_path, sizeof usage_path, "%s/%s", c->dir, c->v2 ? "memory.current" : "memory.usage_in_bytes");
    snprintf(limit_path, sizeof limit_path, "%s/%s", c->dir, c->v2 ? "memory.max" : "memory.limit_in_bytes");
    read_line(limit_path, old, sizeof old);
    /* The whole region in memory first. */
    volatile char sink = 0;
    long f0 = majflt();
    for (uint64_t i = 0; i < pages; i++)
        sink = (char)(sink + region[i * PAGE]);
    lp.fill_majflt = majflt() - f0;
    /* Onto the inactive list. Every page the fill or the pass before
     * faulted back was activated as a refault; with the inactive list
     * empty, v1 refused the lowered limit with EBUSY (each reclaim freed
     * nothing, 32 tries in 2 ms) and a fault under the limit was once
     * OOM-killed (zram, 16 MiB). */
    madvise(region, pages * PAGE, MADV_COLD);
    char cur[64];
    read_line(usage_path, cur, sizeof cur);
    unsigned long long usage = strtoull(cur, NULL, 10);
    uint64_t cut = pages / 4 * PAGE;
    if (!old[0] || usage <= cut + (4UL << 20)) {
        lp.err = EINVAL;
        return lp;
    }
    snprintf(v, sizeof v, "%llu", (unsigned long long)(usage - cut));
    /* v1 gives up with EBUSY when one reclaim frees nothing, as it does
     * when every page is on the active list (each refault of the pass
     * before activated its page); the next attempt finds the pages that
     * one deactivated. */
    uint64_t t0 = now_ns();
    int e = -EBUSY;
    for (int tries = 0; tries < 32 && e == -EBUSY; tries++)
        e = write_file(limit_path, v);
    lp.set_s = (double)(now_ns() - t0) * 1e-9;
    if (e) {
        lp.err = -e;
        return lp;
    }
    uint64_t o0 = vmstat("pswpout"), i0 = vmstat("pswpin"), g0 = vmstat("pgsteal_anon"),
             c0 = vmstat("pgscan_anon");
    double s0 = stime_s();
    long a0 = majflt(), m0 = minflt();
    t0 = now_ns();
    for (int pass = 0; pass < 2; pass++)
        for (uint64_t i = 0; i < pages; i++) {
            volatile char *p = region + (uint64_t)order[i] * PAGE;
            if (write)
                *p = (char)(*p + 1);
            else
                sink = (char)(sink + *p);
        }
    (void)sink;
    lp.wall_s = (double)(now_ns() - t0) * 1e-9;
    lp.stime_s = stime_s() - s0;
    lp.majflt = majflt() - a0;
    lp.minflt = minflt() - m0;
    lp.pswpout = vmstat("pswpout") - o0;
    lp.pswpin = vmstat("pswpin") - i0;
    lp.pgsteal = vmstat("pgsteal_anon") - g0;
    lp.pgscan = vmstat("pgscan_anon") - c0;
    int r = write_file(limit_path, old);
    if (r)
        die(EXIT_FAIL, "swapin-lat: cannot restore %s to %s: %s", limit_path, old, strerror(-r));
    return lp;
}

/* The region: `pages` pages (no huge pages), every 8-byte word a random
 * 16-bit value (compressible about as much as integer data). */
static char *map_region(uint64_t pages, struct rng *g)
{
    char *region = mmap(NULL, pages * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (region == MAP_FAILED)
        die(EXIT_NOMEM, "swapin-lat: cannot map %llu bytes", (unsigned long long)(pages * PAGE));
    madvise(region, pages * PAGE, MADV_NOHUGEPAGE);
    for (uint64_t i = 0; i < pages * PAGE / 8; i++)
        ((uint64_t *)region)[i] = rng_next(g) & 0xffff;
    return region;
}

/* A shuffled permutation of 0..pages into order. */
static void shuffle(uint32_t *order, uint64_t pages, struct rng *g)
{
    for (uint64_t i = 0; i < pages; i++)
        order[i] = (uint32_t)i;
    for (uint64_t i = pages - 1; i > 0; i--) {
        uint64_t j = rng_below(g, i + 1);
        uint32_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
}

/* A limit pass in `order`, printed as `,"NAME":{...}`. */
static void print_limit_pass(const struct cg *c, char *region, uint64_t pages, const uint32_t *order, int write)
{
    struct limit_pass lp = limit_pass(c, region, pages, order, write);
    printf(",\"%s\":{\"errno\":%d,\"set_s\":%.6f,\"wall_s\":%.6f,\"stime_s\":%.6f,"
           "\"touches\":%llu,\"fill_majflt\":%ld,\"majflt\":%ld,\"minflt\":%ld,\"pswpout\":%llu,"
           "\"pswpin\":%llu,\"pgsteal_anon\":%llu,\"pgscan_anon\":%llu}",
           write ? "limit" : "limit_read", lp.err, lp.set_s, lp.wall_s, lp.stime_s, (unsigned long long)(2 * pages),
           lp.fill_majflt, lp.majflt, lp.minflt, (unsigned long long)lp.pswpout, (unsigned long long)lp.pswpin,
           (unsigned long long)lp.pgsteal, (unsigned long long)lp.pgscan);
    fflush(stdout);
}

struct evict {
    double pageout_s, writeback_s, drop_s;
    uint64_t evicted;
    int drop_err;
};

static struct evict evict(const struct cg *c, char *region, uint64_t pages, unsigned char *vec)
{
    struct evict ev = {0};
    uint64_t t0 = now_ns();
    if (madvise(region, pages * PAGE, MADV_PAGEOUT) != 0)
        die(EXIT_FAIL, "swapin-lat: MADV_PAGEOUT: %s (Linux 5.4 or newer is needed)", strerror(errno));
    uint64_t t1 = now_ns();
    /* Writeback of a swap file is asynchronous: wait (at most 30 s) until
     * no page is under writeback, machine-wide. */
    while (vmstat("nr_writeback") > 0 && now_ns() - t1 < 30000000000ULL)
        usleep(200);
    uint64_t t2 = now_ns();
    ev.drop_err = drop_cache(c, pages * PAGE);
    uint64_t t3 = now_ns();
    ev.pageout_s = (double)(t1 - t0) * 1e-9;
    ev.writeback_s = (double)(t2 - t1) * 1e-9;
    ev.drop_s = (double)(t3 - t2) * 1e-9;
    ev.evicted = pages - resident(region, pages, vec);
    return ev;
}

/* Touches pages in `order` (or address order when NULL), one byte written
 * per page, each touch timed into lat (ticks minus the timer's cost). */
static void touch(char *region, uint64_t pages, const uint32_t *order, uint32_t *lat, uint64_t ovh)
{
    for (uint64_t i = 0; i < pages; i++) {
        uint64_t page = order ? order[i] : i;
        volatile char *p = region + page * PAGE;
        uint64_t t0 = ticks();
        *p = (char)(*p + 1);
        uint64_t d = ticks() - t0;
        d = d > ovh ? d - ovh : 0;
        lat[i] = d > UINT32_MAX ? UINT32_MAX : (uint32_t)d;
    }
}

static void save(const char *dir, const char *name, int round, uint32_t *lat, uint64_t n, double ns_per_tick)
{
    for (uint64_t i = 0; i < n; i++) {
        double v = lat[i] * ns_per_tick + 0.5;
        lat[i] = v >= (double)UINT32_MAX ? UINT32_MAX : (uint32_t)v;
    }
    char path[4200];
    if (round < 0)
        snprintf(path, sizeof path, "%s/%s.u32", dir, name);
    else
        snprintf(path, sizeof path, "%s/%s-%d.u32", dir, name, round);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(lat, sizeof *lat, n, f) != n || fclose(f) != 0)
        die(EXIT_FAIL, "swapin-lat: writing %s: %s", path, strerror(errno));
}

/* The compression ratio (stored / original bytes) of the active zram
 * device or of zswap, -1 when neither holds anything. */
static double compress_ratio(void)
{
    FILE *f = fopen("/proc/swaps", "r");
    char line[512];
    int zram = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "/dev/zram%d", &zram) == 1)
            break;
    if (f)
        fclose(f);
    if (zram >= 0) {
        char path[64];
        snprintf(path, sizeof path, "/sys/block/zram%d/mm_stat", zram);
        f = fopen(path, "r");
        unsigned long long orig = 0, compr = 0;
        int ok = f && fscanf(f, "%llu %llu", &orig, &compr) == 2;
        if (f)
            fclose(f);
        return ok && orig ? (double)compr / (double)orig : -1;
    }
    /* zswap: /proc/meminfo's Zswap (the compressed pool) and Zswapped
     * (the pages stored in it), Linux 5.19 and newer. */
    unsigned long long pool = 0, stored = 0, v;
    char key[64];
    f = fopen("/proc/meminfo", "r");
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "%63[^:]: %llu", key, &v) == 2) {
            if (!strcmp(key, "Zswap"))
                pool = v;
            else if (!strcmp(key, "Zswapped"))
                stored = v;
        }
    if (f)
        fclose(f);
    return stored ? (double)pool / (double)stored : -1;
}

static void *map_locked(uint64_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (p == MAP_FAILED)
        die(EXIT_NOMEM, "swapin-lat: cannot allocate %llu bytes for the results", (unsigned long long)bytes);
    mlock(p, bytes); /* best effort: an unlocked buffer may itself swap */
    return p;
}

int run_swapin_lat(int argc, char **argv)
{
    const char *out = NULL;
    uint64_t size = 0, rounds = 3, seed = 42;
    int limit_only = 0;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--limit")) {
            limit_only = 1;
            continue;
        }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            puts("usage: swaplab-workload swapin-lat --size SIZE --out DIR [--rounds R] [--seed N] [--limit]\n"
                 "  (run by swaplab calibrate: in a memory cgroup, with swap, page-cluster 0)");
            return EXIT_OK;
        }
        if (!v)
            die(EXIT_USAGE, "swapin-lat: %s needs a value (see --help)", a);
        i++;
        if (!strcmp(a, "--out"))
            out = v;
        else if (!strcmp(a, "--size")) {
            if (parse_size(v, &size) || size < 64 * PAGE || size > (1ULL << 40))
                die(EXIT_USAGE, "swapin-lat: --size '%s' must be 256K..1T (e.g. 64M)", v);
        } else if (!strcmp(a, "--rounds")) {
            if (parse_u64(v, &rounds) || rounds == 0 || rounds > MAX_ROUNDS)
                die(EXIT_USAGE, "swapin-lat: --rounds '%s' must be 1..%d", v, MAX_ROUNDS);
        } else if (!strcmp(a, "--seed")) {
            if (parse_u64(v, &seed))
                die(EXIT_USAGE, "swapin-lat: --seed '%s' is not a non-negative integer", v);
        } else
            die(EXIT_USAGE, "swapin-lat: unknown argument '%s' (see --help)", a);
    }
    if (!size || (!out && !limit_only))
        die(EXIT_USAGE, "swapin-lat: --size and --out are required (--out not with --limit)");
    struct cg c = {0};
    if (cgroup_memory_dir(c.dir, sizeof c.dir, &c.v2))
        die(EXIT_USAGE, "swapin-lat: this process is in no memory cgroup; run it with swaplab calibrate");
    if (!c.v2) {
        char path[4200];
        snprintf(path, sizeof path, "%s/memory.limit_in_bytes", c.dir);
        FILE *f = fopen(path, "r");
        if (!f || !fgets(c.limit, sizeof c.limit, f))
            die(EXIT_FAIL, "swapin-lat: cannot read %s", path);
        fclose(f);
        c.limit[strcspn(c.limit, "\n")] = '\0';
    }

    uint64_t pages = size / PAGE;
    if (pages > UINT32_MAX)
        die(EXIT_USAGE, "swapin-lat: --size too large");
    uint32_t *lat = map_locked(pages * sizeof *lat);
    uint32_t *order = map_locked(pages * sizeof *order);
    unsigned char *vec = map_locked(pages);
    double hz = calibrate();
    uint64_t ovh = timer_overhead();
    double ns_per_tick = 1e9 / hz;
    struct rng g;
    rng_seed(&g, seed, 0x73776170);

    if (limit_only) {
        /* Per round: the region out, a random pass (a swap-in's own system
         * CPU, no reclaim), then the limit passes in the same order. An
         * OOM kill of a pass ends only this run: `swaplab calibrate` runs it
         * apart from the timed phases. */
        char *region = map_region(pages, &g);
        printf("{\"bench\":\"swapin-lat\",\"mode\":\"limit\",\"pages\":%llu,\"cgroup_v2\":%s,\"rounds\":[",
               (unsigned long long)pages, c.v2 ? "true" : "false");
        for (uint64_t r = 0; r < rounds; r++) {
            shuffle(order, pages, &g);
            struct evict ev = evict(&c, region, pages, vec);
            long a = majflt();
            double st0 = stime_s();
            touch(region, pages, order, lat, ovh);
            printf("%s{\"evicted\":%llu,\"random_majflt\":%ld,\"random_stime_s\":%.6f", r ? "," : "",
                   (unsigned long long)ev.evicted, majflt() - a, stime_s() - st0);
            print_limit_pass(&c, region, pages, order, 1);
            /* Every page out and read back: each has its swap copy (on a
             * swap file; zram drops it at the read), and the reading pass
             * reclaims clean pages. */
            evict(&c, region, pages, vec);
            print_limit_pass(&c, region, pages, order, 0);
            printf("}");
        }
        printf("]}\n");
        fflush(stdout);
        return EXIT_OK;
    }

    /* minor: first touches of fresh memory. */
    uint64_t mpages = pages / 4;
    char *fresh = mmap(NULL, mpages * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (fresh == MAP_FAILED)
        die(EXIT_NOMEM, "swapin-lat: cannot map %llu bytes", (unsigned long long)(mpages * PAGE));
    madvise(fresh, mpages * PAGE, MADV_NOHUGEPAGE);
    long m0 = majflt();
    touch(fresh, mpages, NULL, lat, ovh);
    long minor_maj = majflt() - m0;
    save(out, "minor", -1, lat, mpages, ns_per_tick);
    munmap(fresh, mpages * PAGE);

    char *region = map_region(pages, &g);

    printf("{\"bench\":\"swapin-lat\",\"pages\":%llu,\"minor_pages\":%llu,\"minor_majflt\":%ld,"
           "\"timer\":\"%s\",\"timer_overhead_ns\":%.2f,\"cgroup_v2\":%s,\"rounds\":[",
           (unsigned long long)pages, (unsigned long long)mpages, minor_maj, TIMER,
           (double)ovh * ns_per_tick, c.v2 ? "true" : "false");
    double ratio = -1;
    for (uint64_t r = 0; r < rounds; r++) {
        struct evict e1 = evict(&c, region, pages, vec);
        if (r == 0)
            ratio = compress_ratio();
        long a = majflt();
        touch(region, pages, NULL, lat, ovh);
        long seq_maj = majflt() - a;
        save(out, "seq", (int)r, lat, pages, ns_per_tick);

        shuffle(order, pages, &g);
        struct evict e2 = evict(&c, region, pages, vec);
        a = majflt();
        touch(region, pages, order, lat, ovh);
        long rand_maj = majflt() - a;
        save(out, "random", (int)r, lat, pages, ns_per_tick);

        struct evict e3 = evict(&c, region, pages, vec);
        uint64_t t0 = now_ns();
        double ws0 = stime_s();
        int wn = madvise(region, pages * PAGE, MADV_WILLNEED);
        double willneed_stime = stime_s() - ws0;
        uint64_t in = 0;
        while ((in = resident(region, pages, vec)) < pages - pages / 100 && now_ns() - t0 < 60000000000ULL)
            usleep(100);
        double willneed_s = (double)(now_ns() - t0) * 1e-9;
        a = majflt();
        touch(region, pages, NULL, lat, ovh);
        long cache_maj = majflt() - a;
        save(out, "cache", (int)r, lat, pages, ns_per_tick);

        printf("%s{\"seq_majflt\":%ld,\"random_majflt\":%ld,\"cache_majflt\":%ld,"
               "\"evicted\":[%llu,%llu,%llu],\"pageout_s\":[%.6f,%.6f,%.6f],"
               "\"writeback_s\":[%.6f,%.6f,%.6f],\"drop_s\":[%.6f,%.6f,%.6f],\"drop_errno\":%d,"
               "\"willneed_rc\":%d,\"willneed_s\":%.6f,\"willneed_stime_s\":%.6f,\"willneed_resident\":%llu}",
               r ? "," : "", seq_maj, rand_maj, cache_maj, (unsigned long long)e1.evicted,
               (unsigned long long)e2.evicted, (unsigned long long)e3.evicted, e1.pageout_s,
               e2.pageout_s, e3.pageout_s, e1.writeback_s, e2.writeback_s, e3.writeback_s,
               e1.drop_s, e2.drop_s, e3.drop_s, -(e1.drop_err ? e1.drop_err : e2.drop_err ? e2.drop_err : e3.drop_err),
               wn ? errno : 0, willneed_s, willneed_stime, (unsigned long long)in);
    }
    if (ratio >= 0)
        printf("],\"compress_ratio\":%.4f}\n", ratio);
    else
        printf("],\"compress_ratio\":null}\n");
    fflush(stdout);
    return EXIT_OK;
}
