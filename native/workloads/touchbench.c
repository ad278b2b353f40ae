/* swaplab-workload bench-touch: the latency of every page touch while the
 * process swaps (issue 10 §2, after the Journey study).
 *
 *   swaplab-workload bench-touch --size SIZE --pattern seq|random
 *                                --lat FILE --rss FILE [--touches T]
 *                                [--points P] [--seed N] [--hugepage never|system]
 *
 * Maps an anonymous region of SIZE bytes (MADV_NOHUGEPAGE: every touch is
 * one 4 KiB page; --hugepage system leaves it to the system's THP setting,
 * for bench reclaim's THP comparison) and writes one byte of a page T times (default: one touch
 * per page, T = SIZE/4096; seq allows T <= SIZE/4096 only):
 *   seq     page 0, 1, 2, ... in increasing address order (each page once)
 *   random  a uniformly random page each time (the same number of touches;
 *           some pages are touched again, after they may have been swapped)
 * Run it under a memory limit smaller than SIZE and the kernel must reclaim
 * (swap out) to make room, and, for random, swap pages back in.
 *
 * Every touch is timed (timer.h: rdtsc calibrated to ns, its own cost
 * subtracted) into a preallocated, mlocked buffer, written after the run to
 * the --lat file: little-endian u32 nanoseconds, one per touch, in touch
 * order. At P+1 evenly spaced points (before touch k*T/P; P = --points,
 * default 1024) the anonymous resident set (/proc/self/statm: resident −
 * shared) is sampled outside the timed stores and written to the --rss file
 * (CSV: touch,rss_bytes,t_ns).
 *
 * stdout: one JSON line (pattern, pages, touches, distinct pages, timer,
 * overhead, getrusage's major and minor faults, sum of touch latencies,
 * elapsed time). */
#define _GNU_SOURCE
#include "common.h"
#include "timer.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#define PAGE 4096UL

static void *alloc_locked(size_t bytes, int *locked)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (p == MAP_FAILED)
        die(EXIT_NOMEM, "bench-touch: cannot allocate %zu bytes for the results", bytes);
    memset(p, 0, bytes);
    if (mlock(p, bytes) != 0)
        *locked = 0;
    return p;
}

/* Resident anonymous bytes from /proc/self/statm: resident minus shared
 * (file-backed and shmem) pages, which the memory cgroup may not even be
 * charged for; -1 on failure. No allocation: a static buffer and read(2). */
static int64_t resident_bytes(void)
{
    static char b[256];
    int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n;
    do
        n = read(fd, b, sizeof b - 1);
    while (n < 0 && errno == EINTR);
    close(fd);
    if (n <= 0)
        return -1;
    b[n] = '\0';
    unsigned long long size, resident, shared;
    if (sscanf(b, "%llu %llu %llu", &size, &resident, &shared) != 3 || shared > resident)
        return -1;
    return (int64_t)(resident - shared) * (int64_t)sysconf(_SC_PAGESIZE);
}

struct rss_point {
    uint64_t touch;
    int64_t rss;
    uint64_t t_ns;
};

int run_bench_touch(int argc, char **argv)
{
    const char *pattern = NULL, *lat_path = NULL, *rss_path = NULL, *hugepage = "never";
    uint64_t size = 0, points = 1024, seed = 42, touches = 0;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            puts("usage: swaplab-workload bench-touch --size SIZE --pattern seq|random\n"
                 "         --lat FILE --rss FILE [--touches T] [--points P] [--seed N]\n"
                 "         [--hugepage never|system]");
            return EXIT_OK;
        }
        if (!v)
            die(EXIT_USAGE, "bench-touch: %s needs a value (see --help)", a);
        i++;
        if (!strcmp(a, "--pattern"))
            pattern = v;
        else if (!strcmp(a, "--lat"))
            lat_path = v;
        else if (!strcmp(a, "--rss"))
            rss_path = v;
        else if (!strcmp(a, "--hugepage")) {
            if (strcmp(v, "never") && strcmp(v, "system"))
                die(EXIT_USAGE, "bench-touch: --hugepage must be never or system");
            hugepage = v;
        }
        else if (!strcmp(a, "--size")) {
            if (parse_size(v, &size) || size < 2 * PAGE || size > (1ULL << 44))
                die(EXIT_USAGE, "bench-touch: --size '%s' must be 8K..16T (e.g. 1.125G)", v);
        } else if (!strcmp(a, "--touches")) {
            if (parse_u64(v, &touches) || touches == 0 || touches > (1ULL << 32))
                die(EXIT_USAGE, "bench-touch: --touches '%s' is not an integer in 1..2^32", v);
        } else if (!strcmp(a, "--points")) {
            if (parse_u64(v, &points) || points == 0 || points > (1ULL << 20))
                die(EXIT_USAGE, "bench-touch: --points '%s' is not an integer in 1..2^20", v);
        } else if (!strcmp(a, "--seed")) {
            if (parse_u64(v, &seed))
                die(EXIT_USAGE, "bench-touch: --seed '%s' is not a non-negative integer", v);
        } else
            die(EXIT_USAGE, "bench-touch: unknown argument '%s' (see --help)", a);
    }
    int random = 0;
    if (pattern && !strcmp(pattern, "random"))
        random = 1;
    else if (!pattern || strcmp(pattern, "seq"))
        die(EXIT_USAGE, "bench-touch: --pattern must be seq or random");
    if (!size || !lat_path || !rss_path)
        die(EXIT_USAGE, "bench-touch: --size, --lat and --rss are required");

    uint64_t pages = size / PAGE;
    if (!touches)
        touches = pages;
    if (!random && touches > pages)
        die(EXIT_USAGE, "bench-touch: seq touches each page once: --touches must be at most %llu",
            (unsigned long long)pages);
    if (points > touches)
        points = touches;
    int locked = 1;
    uint32_t *lat = alloc_locked(touches * sizeof *lat, &locked);
    struct rss_point *rss = alloc_locked((points + 1) * sizeof *rss, &locked);
    uint8_t *seen = alloc_locked((pages + 7) / 8, &locked);

    char *region = mmap(NULL, pages * PAGE, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (region == MAP_FAILED)
        die(EXIT_NOMEM, "bench-touch: cannot map %llu bytes: %s",
            (unsigned long long)(pages * PAGE), strerror(errno));
    int nohuge = !strcmp(hugepage, "never") && madvise(region, pages * PAGE, MADV_NOHUGEPAGE) == 0;

    double hz = calibrate();
    uint64_t ovh = timer_overhead();
    struct rng g;
    rng_seed(&g, seed, 0x746f756368);

    uint64_t start_ns = now_ns();
    rss[0] = (struct rss_point){0, resident_bytes(), 0};
    uint64_t next_k = 1, next_at = touches / points, distinct = 0, touch_ticks = 0;
    for (uint64_t i = 0; i < touches; i++) {
        uint64_t page = random ? rng_below(&g, pages) : i;
        volatile char *p = region + page * PAGE;
        uint64_t t0 = ticks();
        *p = (char)(i | 1);
        uint64_t t1 = ticks();
        uint64_t d = t1 - t0;
        touch_ticks += d;
        d = d > ovh ? d - ovh : 0;
        lat[i] = d > UINT32_MAX ? UINT32_MAX : (uint32_t)d;
        if (!(seen[page >> 3] & (1u << (page & 7)))) {
            seen[page >> 3] |= (uint8_t)(1u << (page & 7));
            distinct++;
        }
        if (i + 1 == next_at) {
            rss[next_k] = (struct rss_point){i + 1, resident_bytes(), now_ns() - start_ns};
            next_k++;
            next_at = (uint64_t)(((__uint128_t)touches * next_k) / points);
        }
    }
    uint64_t elapsed_ns = now_ns() - start_ns;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);

    double ns_per_tick = 1e9 / hz;
    uint32_t max_ns = 0;
    for (uint64_t i = 0; i < touches; i++) {
        double v = lat[i] * ns_per_tick + 0.5;
        lat[i] = v >= (double)UINT32_MAX ? UINT32_MAX : (uint32_t)v;
        if (lat[i] > max_ns)
            max_ns = lat[i];
    }
    FILE *f = fopen(lat_path, "wb");
    if (!f || fwrite(lat, sizeof *lat, touches, f) != touches || fclose(f) != 0)
        die(EXIT_FAIL, "bench-touch: writing %s: %s", lat_path, strerror(errno));
    f = fopen(rss_path, "w");
    if (!f)
        die(EXIT_FAIL, "bench-touch: writing %s: %s", rss_path, strerror(errno));
    fputs("touch,rss_bytes,t_ns\n", f);
    for (uint64_t k = 0; k < next_k; k++)
        fprintf(f, "%llu,%lld,%llu\n", (unsigned long long)rss[k].touch,
                (long long)rss[k].rss, (unsigned long long)rss[k].t_ns);
    if (fclose(f) != 0)
        die(EXIT_FAIL, "bench-touch: writing %s: %s", rss_path, strerror(errno));

    printf("{\"bench\":\"touch\",\"pattern\":\"%s\",\"region_bytes\":%llu,\"pages\":%llu,"
           "\"touches\":%llu,\"distinct_pages\":%llu,\"seed\":%llu,\"timer\":\"%s\","
           "\"ticks_per_s\":%.0f,\"timer_overhead_ns\":%.2f,\"mlocked\":%s,"
           "\"nohugepage\":%s,\"majflt\":%ld,\"minflt\":%ld,\"max_rss_kib\":%ld,"
           "\"touch_ns\":%.0f,\"max_touch_ns\":%u,\"elapsed_ns\":%llu}\n",
           random ? "random" : "seq", (unsigned long long)(pages * PAGE),
           (unsigned long long)pages, (unsigned long long)touches,
           (unsigned long long)distinct, (unsigned long long)seed, TIMER, hz,
           (double)ovh * ns_per_tick, locked ? "true" : "false", nohuge ? "true" : "false",
           ru.ru_majflt, ru.ru_minflt, ru.ru_maxrss, (double)touch_ticks * ns_per_tick,
           max_ns, (unsigned long long)elapsed_ns);
    fflush(stdout);
    return EXIT_OK;
}
