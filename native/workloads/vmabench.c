/* swaplab-workload bench-vma: the cost of VMA bookkeeping (issue 10 §1).
 *
 *   swaplab-workload bench-vma --pattern P --ops N --lat FILE --samples FILE
 *                              [--points S] [--seed N]
 *
 * Patterns (pages are never touched: only VMA bookkeeping is measured):
 *   control  N empty timed operations: the measurement alone (memory baseline)
 *   cont     N adjacent 16 KiB anonymous mappings, increasing addresses
 *            (the kernel merges them into one VMA)
 *   strided  N 16 KiB mappings with 16 KiB gaps, increasing addresses (N VMAs)
 *   random   N 4 KiB mappings at distinct random page positions inside a
 *            max(2^20, N)-page region (some merge with neighbours)
 *   frag     N adjacent 4 KiB blocks are mapped (untimed), then every other
 *            block is grown to 16 KiB with mremap(MREMAP_MAYMOVE): N/2 timed
 *            operations (each growth moves the block, leaving a hole)
 *
 * Mappings are placed with MAP_FIXED_NOREPLACE inside a range found free
 * (reserved, then released) with one unmapped guard page on each side, so
 * nothing outside the pattern merges with it.
 *
 * Timer: rdtsc (lfence-ordered) calibrated against CLOCK_MONOTONIC on
 * x86-64, clock_gettime(CLOCK_MONOTONIC) elsewhere; its own cost (median of
 * back-to-back readings) is subtracted from every latency. Latencies are
 * kept in a preallocated, mlocked buffer and written after the run to the
 * --lat file: little-endian u32 nanoseconds, one per operation.
 *
 * At S+1 evenly spaced points (before operation k*N/S, k = 0..S; S = --points,
 * default 256) the program samples, outside the timed operations: its VMA
 * count (lines of /proc/self/maps), the vm_area_struct slab (/proc/slabinfo,
 * root only; -1 otherwise), VmPTE (/proc/self/status) and /proc/meminfo.
 * Samples go to the --samples file (CSV with a header) after the run.
 *
 * stdout: one JSON line (pattern, ops, timer, overhead, VMA counts of the
 * pattern's regions as /proc/self/maps reports them at the end, ...). */
#define _GNU_SOURCE
#include "common.h"
#include "timer.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096UL
#define RANDOM_REGION_PAGES (1UL << 20)

/* ---- procfs readers (no malloc: static buffers, read(2)) ---- */
static char buf[1 << 20];

/* Reads a small file into buf (NUL-terminated); length or -1. */
static ssize_t slurp(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t n = 0;
    for (;;) {
        ssize_t r = read(fd, buf + n, sizeof buf - 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
        if (n == sizeof buf - 1)
            break;
    }
    close(fd);
    buf[n] = '\0';
    return (ssize_t)n;
}

/* Calls fn(start, end, arg) for every line of /proc/self/maps (streamed);
 * returns the line count, or -1. fn may be NULL. */
static int64_t maps_walk(void (*fn)(uint64_t, uint64_t, void *), void *arg)
{
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int64_t lines = 0;
    size_t have = 0;
    for (;;) {
        ssize_t r = read(fd, buf + have, sizeof buf - 1 - have);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        size_t n = have + (size_t)r;
        size_t i = 0, line = 0;
        if (!fn) {
            for (; i < n; i++)
                lines += buf[i] == '\n';
            have = 0;
            continue;
        }
        for (; i < n; i++) {
            if (buf[i] != '\n')
                continue;
            buf[i] = '\0';
            char *e;
            uint64_t s = strtoull(buf + line, &e, 16);
            uint64_t t = *e == '-' ? strtoull(e + 1, NULL, 16) : s;
            fn(s, t, arg);
            lines++;
            line = i + 1;
        }
        have = n - line;
        memmove(buf, buf + line, have);
    }
    close(fd);
    return lines;
}

/* "Key:   123 kB" in buf → bytes, or -1. */
static int64_t kb_field(const char *key)
{
    size_t k = strlen(key);
    for (const char *p = buf; (p = strstr(p, key)); p++) {
        if ((p == buf || p[-1] == '\n') && p[k] == ':')
            return strtoll(p + k + 1, NULL, 10) * 1024;
    }
    return -1;
}

struct sample {
    uint64_t op;        /* operations done before the sample */
    int64_t vmas;       /* lines of /proc/self/maps */
    int64_t slab_active;/* vm_area_struct active objects (-1: unreadable) */
    int64_t slab_objs;  /* vm_area_struct objects in slabs */
    int64_t slab_objsize;
    int64_t slab_bytes; /* num_slabs * pagesperslab * page size */
    int64_t vmpte;      /* VmPTE, bytes */
    int64_t mem_used;   /* MemTotal - MemFree, bytes */
    int64_t kslab;      /* meminfo Slab, bytes */
    int64_t pagetables; /* meminfo PageTables, bytes */
    uint64_t sample_ns; /* time the sample took */
};

static void take_sample(struct sample *s, uint64_t op)
{
    uint64_t t0 = now_ns();
    s->op = op;
    s->vmas = maps_walk(NULL, NULL);
    s->slab_active = s->slab_objs = s->slab_objsize = s->slab_bytes = -1;
    if (slurp("/proc/slabinfo") > 0) {
        char *p = strstr(buf, "\nvm_area_struct ");
        long long act, num, size, per, pps, aslabs, nslabs;
        if (p && sscanf(p + 1, "vm_area_struct %lld %lld %lld %lld %lld : tunables %*d %*d %*d"
                               " : slabdata %lld %lld",
                        &act, &num, &size, &per, &pps, &aslabs, &nslabs) == 7) {
            s->slab_active = act;
            s->slab_objs = num;
            s->slab_objsize = size;
            s->slab_bytes = nslabs * pps * (long long)PAGE;
        }
    }
    s->vmpte = slurp("/proc/self/status") > 0 ? kb_field("VmPTE") : -1;
    s->mem_used = s->kslab = s->pagetables = -1;
    if (slurp("/proc/meminfo") > 0) {
        int64_t total = kb_field("MemTotal"), free_ = kb_field("MemFree");
        if (total >= 0 && free_ >= 0)
            s->mem_used = total - free_;
        s->kslab = kb_field("Slab");
        s->pagetables = kb_field("PageTables");
    }
    s->sample_ns = now_ns() - t0;
}

/* ---- the end-of-run census of the pattern's VMAs ---- */
struct census {
    uint64_t lo, hi;         /* the pattern's region */
    int64_t in_region;       /* VMAs intersecting [lo, hi) */
    uint64_t region_covered; /* bytes of [lo, hi) mapped */
    const uint64_t *moved;   /* frag: sorted new addresses of grown blocks */
    size_t nmoved;
    int64_t moved_vmas;      /* VMAs that are exactly one grown block */
    uint64_t mlo, mhi;       /* frag: the span of the grown blocks */
    int64_t in_moved_span;   /* VMAs intersecting [mlo, mhi) */
};

static void census_line(uint64_t s, uint64_t e, void *arg)
{
    struct census *c = arg;
    if (e > c->lo && s < c->hi) {
        c->in_region++;
        c->region_covered += (e < c->hi ? e : c->hi) - (s > c->lo ? s : c->lo);
    }
    if (c->nmoved && e > c->mlo && s < c->mhi)
        c->in_moved_span++;
    if (c->nmoved && e - s == 4 * PAGE &&
        bsearch(&s, c->moved, c->nmoved, sizeof *c->moved, cmp_u64))
        c->moved_vmas++;
}

static void __attribute__((noreturn)) map_failed(const char *what, uint64_t i, int err)
{
    char mmc[32] = "?";
    if (slurp("/proc/sys/vm/max_map_count") > 0)
        snprintf(mmc, sizeof mmc, "%lld", strtoll(buf, NULL, 10));
    if (err == ENOMEM)
        die(EXIT_NOMEM,
            "bench-vma: %s failed after %llu operations: %s (vm.max_map_count is %s: "
            "raise it above the VMAs the pattern makes)",
            what, (unsigned long long)i, strerror(err), mmc);
    die(EXIT_FAIL, "bench-vma: %s failed after %llu operations: %s", what,
        (unsigned long long)i, strerror(err));
}

static void *map_at(uint64_t addr, uint64_t len, uint64_t i)
{
    void *p = mmap((void *)addr, len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (p == MAP_FAILED)
        map_failed("mmap", i, errno);
    if ((uint64_t)p != addr)
        die(EXIT_FAIL, "bench-vma: the kernel placed a mapping at %p, not %#llx "
                       "(it has no MAP_FIXED_NOREPLACE: Linux 4.17 or later is needed)",
            p, (unsigned long long)addr);
    return p;
}

/* A free range of len bytes with a guard page each side: its start. */
static uint64_t free_range(uint64_t len)
{
    uint64_t total = len + 2 * PAGE;
    void *r = mmap(NULL, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (r == MAP_FAILED)
        die(EXIT_NOMEM, "bench-vma: no free address range of %llu bytes: %s",
            (unsigned long long)total, strerror(errno));
    munmap(r, total);
    return (uint64_t)r + PAGE;
}

static void *alloc_locked(size_t bytes, int *locked)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (p == MAP_FAILED)
        die(EXIT_NOMEM, "bench-vma: cannot allocate %zu bytes for the results", bytes);
    memset(p, 0, bytes);
    if (mlock(p, bytes) != 0)
        *locked = 0;
    return p;
}

static const char *PATTERNS[] = {"control", "cont", "strided", "random", "frag"};

int run_bench_vma(int argc, char **argv)
{
    const char *pattern = NULL, *lat_path = NULL, *samples_path = NULL;
    uint64_t n = 0, points = 256, seed = 42;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            puts("usage: swaplab-workload bench-vma --pattern control|cont|strided|random|frag\n"
                 "         --ops N --lat FILE --samples FILE [--points S] [--seed N]");
            return EXIT_OK;
        }
        if (!v)
            die(EXIT_USAGE, "bench-vma: %s needs a value (see --help)", a);
        i++;
        if (!strcmp(a, "--pattern"))
            pattern = v;
        else if (!strcmp(a, "--lat"))
            lat_path = v;
        else if (!strcmp(a, "--samples"))
            samples_path = v;
        else if (!strcmp(a, "--ops")) {
            if (parse_u64(v, &n) || n == 0 || n > (1ULL << 28))
                die(EXIT_USAGE, "bench-vma: --ops '%s' is not an integer in 1..2^28", v);
        } else if (!strcmp(a, "--points")) {
            if (parse_u64(v, &points) || points == 0 || points > (1ULL << 20))
                die(EXIT_USAGE, "bench-vma: --points '%s' is not an integer in 1..2^20", v);
        } else if (!strcmp(a, "--seed")) {
            if (parse_u64(v, &seed))
                die(EXIT_USAGE, "bench-vma: --seed '%s' is not a non-negative integer", v);
        } else
            die(EXIT_USAGE, "bench-vma: unknown argument '%s' (see --help)", a);
    }
    int pat = -1;
    for (int i = 0; pattern && i < 5; i++)
        if (!strcmp(pattern, PATTERNS[i]))
            pat = i;
    if (pat < 0)
        die(EXIT_USAGE, "bench-vma: --pattern must be control, cont, strided, random or frag");
    if (!n || !lat_path || !samples_path)
        die(EXIT_USAGE, "bench-vma: --ops, --lat and --samples are required");
    if (pat == 4 && n < 2)
        die(EXIT_USAGE, "bench-vma: frag needs --ops of at least 2 (it grows every other block)");

    /* Timed operations: frag grows N/2 of its N blocks. */
    uint64_t timed = pat == 4 ? n / 2 : n;
    if (points > timed)
        points = timed;
    int locked = 1;
    uint32_t *lat = alloc_locked(timed * sizeof *lat, &locked);
    struct sample *smp = alloc_locked((points + 1) * sizeof *smp, &locked);

    /* Setup that belongs to the measurement, before the baseline. */
    uint64_t region_pages = 0, block = 0, stride = 0, span = 0;
    uint32_t *perm = NULL;
    uint64_t *moved = NULL;
    switch (pat) {
    case 1: block = 4 * PAGE; stride = block; span = n * stride; break;
    case 2: block = 4 * PAGE; stride = 2 * block; span = n * stride; break;
    case 3:
        block = PAGE;
        region_pages = n > RANDOM_REGION_PAGES ? n : RANDOM_REGION_PAGES;
        span = region_pages * PAGE;
        perm = alloc_locked(region_pages * sizeof *perm, &locked);
        {
            struct rng r;
            rng_seed(&r, seed, 0x766d61);
            for (uint64_t i = 0; i < region_pages; i++)
                perm[i] = (uint32_t)i;
            for (uint64_t i = 0; i < n; i++) { /* partial Fisher-Yates */
                uint64_t j = i + rng_below(&r, region_pages - i);
                uint32_t t = perm[i];
                perm[i] = perm[j];
                perm[j] = t;
            }
        }
        break;
    case 4:
        block = PAGE; stride = PAGE; span = n * PAGE;
        moved = alloc_locked(timed * sizeof *moved, &locked);
        break;
    default: break;
    }

    double hz = calibrate();
    uint64_t ovh = timer_overhead();
    uint64_t base = span ? free_range(span) : 0;

    uint64_t start_ns = now_ns();
    take_sample(&smp[0], 0);
    uint64_t next_k = 1, next_at = timed / points;
    if (pat == 4) /* frag: the untimed mapping of N adjacent blocks */
        for (uint64_t i = 0; i < n; i++)
            map_at(base + i * PAGE, PAGE, i);
    uint64_t ops_ticks = 0;
    for (uint64_t i = 0; i < timed; i++) {
        uint64_t t0, t1;
        switch (pat) {
        case 0:
            t0 = ticks();
            t1 = ticks();
            break;
        case 1:
        case 2:
        case 3: {
            /* cont and strided: in increasing order; random: a permutation. */
            uint64_t a = pat == 3 ? base + (uint64_t)perm[i] * PAGE : base + i * stride;
            t0 = ticks();
            void *p = mmap((void *)a, block, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
            t1 = ticks();
            if ((uint64_t)p != a) {
                if (p == MAP_FAILED)
                    map_failed("mmap", i, errno);
                map_at(a, block, i);
            }
            break;
        }
        default: {
            void *old = (void *)(base + 2 * i * PAGE);
            t0 = ticks();
            void *p = mremap(old, PAGE, 4 * PAGE, MREMAP_MAYMOVE);
            t1 = ticks();
            if (p == MAP_FAILED)
                map_failed("mremap", i, errno);
            moved[i] = (uint64_t)p;
            break;
        }
        }
        uint64_t d = t1 - t0;
        ops_ticks += d;
        d = d > ovh ? d - ovh : 0;
        lat[i] = d > UINT32_MAX ? UINT32_MAX : (uint32_t)d;
        if (i + 1 == next_at) {
            take_sample(&smp[next_k], i + 1);
            next_k++;
            next_at = (uint64_t)(((__uint128_t)timed * next_k) / points);
        }
    }
    uint64_t elapsed_ns = now_ns() - start_ns;

    /* The census of what the kernel reports for the pattern's regions. */
    struct census c = {.lo = base, .hi = base + span};
    if (moved) {
        qsort(moved, timed, sizeof *moved, cmp_u64);
        c.moved = moved;
        c.nmoved = timed;
        c.mlo = moved[0];
        c.mhi = moved[timed - 1] + 4 * PAGE;
    }
    int64_t vmas_end = maps_walk(census_line, &c);

    /* Latencies in ns, then the files. */
    double ns_per_tick = 1e9 / hz;
    for (uint64_t i = 0; i < timed; i++) {
        double v = lat[i] * ns_per_tick + 0.5;
        lat[i] = v >= (double)UINT32_MAX ? UINT32_MAX : (uint32_t)v;
    }
    FILE *f = fopen(lat_path, "wb");
    if (!f || fwrite(lat, sizeof *lat, timed, f) != timed || fclose(f) != 0)
        die(EXIT_FAIL, "bench-vma: writing %s: %s", lat_path, strerror(errno));
    f = fopen(samples_path, "w");
    if (!f)
        die(EXIT_FAIL, "bench-vma: writing %s: %s", samples_path, strerror(errno));
    fputs("op,vmas,slab_active_objs,slab_objs,slab_objsize,slab_bytes,vmpte_bytes,"
          "mem_used_bytes,meminfo_slab_bytes,meminfo_pagetables_bytes,sample_ns\n", f);
    for (uint64_t k = 0; k < next_k; k++) {
        const struct sample *s = &smp[k];
        fprintf(f, "%llu,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%llu\n",
                (unsigned long long)s->op, (long long)s->vmas, (long long)s->slab_active,
                (long long)s->slab_objs, (long long)s->slab_objsize, (long long)s->slab_bytes,
                (long long)s->vmpte, (long long)s->mem_used, (long long)s->kslab,
                (long long)s->pagetables, (unsigned long long)s->sample_ns);
    }
    if (fclose(f) != 0)
        die(EXIT_FAIL, "bench-vma: writing %s: %s", samples_path, strerror(errno));

    printf("{\"bench\":\"vma\",\"pattern\":\"%s\",\"ops\":%llu,\"timed_ops\":%llu,"
           "\"points\":%llu,\"seed\":%llu,\"timer\":\"%s\",\"ticks_per_s\":%.0f,"
           "\"timer_overhead_ns\":%.2f,\"mlocked\":%s,\"region_start\":%llu,"
           "\"region_bytes\":%llu,\"block_bytes\":%llu,\"region_vmas\":%lld,"
           "\"region_mapped_bytes\":%llu,\"moved_vmas\":%lld,\"moved_span_vmas\":%lld,\"moved_span_bytes\":%llu,\"vmas_start\":%lld,"
           "\"vmas_end\":%lld,\"elapsed_ns\":%llu,\"ops_ns\":%.0f}\n",
           PATTERNS[pat], (unsigned long long)n, (unsigned long long)timed,
           (unsigned long long)points, (unsigned long long)seed, TIMER, hz,
           (double)ovh * ns_per_tick, locked ? "true" : "false", (unsigned long long)base,
           (unsigned long long)span, (unsigned long long)block, (long long)c.in_region,
           (unsigned long long)c.region_covered, moved ? (long long)c.moved_vmas : -1LL,
           moved ? (long long)c.in_moved_span : -1LL, (unsigned long long)(c.mhi - c.mlo),
           (long long)smp[0].vmas, (long long)vmas_end, (unsigned long long)elapsed_ns,
           (double)ops_ticks * ns_per_tick);
    fflush(stdout);
    return EXIT_OK;
}
