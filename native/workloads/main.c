/* swaplab-workload: built-in workloads for swaplab.
 *
 *   swaplab-workload NAME --size SIZE [--seed N] [--passes N] [--ops N]
 *                         [--threads N] [--fork] [--objects] [--stop]
 *   swaplab-workload list [--json]
 *   swaplab-workload bench-vma --pattern P --ops N --lat FILE --samples FILE
 *   swaplab-workload bench-touch --size SIZE --pattern seq|random --lat FILE --rss FILE
 *   swaplab-workload balloon --size SIZE
 *   swaplab-workload swapin-lat --size SIZE --out DIR [--rounds R]
 *
 * Prints exactly one JSON line on stdout at the end. */
#define _GNU_SOURCE
#include "common.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct workload WORKLOADS[] = {
    {"qsort", "elements",
     "quicksort SIZE bytes of random 64-bit integers (median-of-3, insertion sort below 16)",
     0, 4096, run_qsort, run_qsort_refs},
    {"genome", "probes",
     "k-mer (k=31) hash table of reads from a random genome, probed to extend contigs (random access)",
     OPT_OPS, 64 * 1024, run_genome, run_genome_refs},
    {"traverse", "bytes",
     "sequential read-modify-write sweeps over an array of SIZE bytes (--passes, default 4)",
     OPT_PASSES | OPT_THREADS | OPT_FORK | OPT_HINTS, 4096, run_traverse, run_traverse_refs},
    {"chase", "hops",
     "pointer chase through a random cyclic permutation (Sattolo) of SIZE/8 slots (mcf-like)",
     OPT_OPS | OPT_THREADS, 4096, run_chase, run_chase_refs},
    {"kv", "operations",
     "open-addressing key-value store with 64-byte values, Zipf(0.99) 90% GET / 10% SET",
     OPT_OPS, 64 * 1024, run_kv, run_kv_refs},
};
#define NWORKLOADS (sizeof WORKLOADS / sizeof WORKLOADS[0])

static void usage(FILE *f)
{
    fputs(
        "usage: swaplab-workload NAME --size SIZE [--seed N] [--passes N] [--ops N]\n"
        "                        [--threads N] [--fork] [--objects] [--stop]\n"
        "       swaplab-workload list [--json]\n"
        "       swaplab-workload bench-vma --pattern P --ops N --lat FILE --samples FILE\n"
        "                        (VMA bookkeeping costs; see bench-vma --help)\n"
        "       swaplab-workload bench-touch --size SIZE --pattern seq|random --lat FILE --rss FILE\n"
        "                        (latency of every page touch; see bench-touch --help)\n"
        "       swaplab-workload balloon --size SIZE\n"
        "                        (hold SIZE of memory mlocked until killed)\n"
        "       swaplab-workload swapin-lat --size SIZE --out DIR [--rounds R]\n"
        "                        (swap-out and swap-in costs per page; run by swaplab calibrate)\n"
        "\n"
        "workloads:\n", f);
    for (size_t i = 0; i < NWORKLOADS; i++)
        fprintf(f, "  %-9s %s\n", WORKLOADS[i].name, WORKLOADS[i].description);
    fputs(
        "\n"
        "options:\n"
        "  --size SIZE   total size of the main objects: 4096, 64K, 64M, 1.5G (powers of 1024)\n"
        "  --seed N      PRNG seed (default 42); same seed, same result\n"
        "  --passes N    traverse: sweeps over the array (default 4)\n"
        "  --ops N       chase: hops (default 4 x slots); kv: requests (default 4 x keys);\n"
        "                genome: hash-table probes (default 2 x table slots)\n"
        "  --threads N   traverse, chase: split the work over N threads (default 1)\n"
        "  --fork        traverse: the parent fills the array, a forked child sweeps it\n"
        "  --objects     print each main object's address range to stderr (one JSON line\n"
        "                each) after allocating it, before the main work\n"
        "  --stop        raise SIGSTOP after setup, before the main work (resume: SIGCONT)\n"
        "  --mlock SIZE|max  traverse: mlock the first SIZE of the array before filling it;\n"
        "                max = as much as the cgroup's limit leaves (limit - usage - max(limit/8, 4M));\n"
        "                half = half of the cgroup's limit (at most what max locks)\n"
        "  --madvise A[,A]   traverse: madvise the array after filling it (willneed,\n"
        "                sequential, random), as swpTracer's madvise variant did\n"
        "  --refs-fd N   write every page reference to the main objects to descriptor N\n"
        "                (u64 LE: page << 1 | write; runs of one page cut at 3); one thread,\n"
        "                no --fork (swaplab trace --refs uses it for the built-in workloads)\n"
        "\n"
        "output: one JSON line on stdout: workload, size, seed, work, work_unit, checksum,\n"
        "        elapsed_ns (= setup_ns + work_ns), setup_ns, work_ns, threads, ...\n"
        "exit codes: 0 ok, 1 internal error, 2 bad arguments, 3 result check failed,\n"
        "            4 allocation failure\n", f);
}

static void __attribute__((noreturn, format(printf, 1, 2))) bad_args(const char *fmt, ...)
{
    va_list ap;
    fputs("swaplab-workload: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs("\n\n", stderr);
    usage(stderr);
    exit(EXIT_USAGE);
}

static void list(int json)
{
    if (!json) {
        for (size_t i = 0; i < NWORKLOADS; i++)
            printf("%-9s %s\n", WORKLOADS[i].name, WORKLOADS[i].description);
        return;
    }
    fputs("[", stdout);
    for (size_t i = 0; i < NWORKLOADS; i++) {
        const struct workload *w = &WORKLOADS[i];
        printf("%s{\"name\":\"%s\",\"work_unit\":\"%s\",\"description\":\"%s\","
               "\"min_size\":%llu,\"options\":[",
               i ? "," : "", w->name, w->work_unit, w->description,
               (unsigned long long)w->min_size);
        const char *sep = "";
        if (w->accepts & OPT_PASSES) { printf("%s\"passes\"", sep); sep = ","; }
        if (w->accepts & OPT_OPS) { printf("%s\"ops\"", sep); sep = ","; }
        if (w->accepts & OPT_THREADS) { printf("%s\"threads\"", sep); sep = ","; }
        if (w->accepts & OPT_FORK) { printf("%s\"fork\"", sep); sep = ","; }
        fputs("]}", stdout);
    }
    fputs("]\n", stdout);
}

/* "--name value" or "--name=value"; returns the value or NULL if arg is not --name. */
static const char *opt_value(int argc, char **argv, int *i, const char *name)
{
    const char *a = argv[*i];
    size_t n = strlen(name);
    if (strncmp(a, name, n) != 0)
        return NULL;
    if (a[n] == '=')
        return a + n + 1;
    if (a[n] != '\0')
        return NULL;
    if (*i + 1 >= argc)
        bad_args("%s needs a value", name);
    return argv[++*i];
}

int main(int argc, char **argv)
{
    if (argc < 2)
        bad_args("no workload given");
    const char *name = argv[1];
    if (!strcmp(name, "-h") || !strcmp(name, "--help") || !strcmp(name, "help")) {
        usage(stdout);
        return EXIT_OK;
    }
    if (!strcmp(name, "bench-vma"))
        return run_bench_vma(argc, argv);
    if (!strcmp(name, "bench-touch"))
        return run_bench_touch(argc, argv);
    if (!strcmp(name, "balloon"))
        return run_balloon(argc, argv);
    if (!strcmp(name, "swapin-lat"))
        return run_swapin_lat(argc, argv);
    if (!strcmp(name, "list")) {
        int json = 0;
        for (int i = 2; i < argc; i++) {
            if (!strcmp(argv[i], "--json"))
                json = 1;
            else
                bad_args("list: unknown argument '%s'", argv[i]);
        }
        list(json);
        return EXIT_OK;
    }

    const struct workload *w = NULL;
    for (size_t i = 0; i < NWORKLOADS; i++)
        if (!strcmp(name, WORKLOADS[i].name))
            w = &WORKLOADS[i];
    if (!w)
        bad_args("unknown workload '%s' (see 'swaplab-workload list')", name);

    struct opts o = {.workload = w->name, .seed = 42, .threads = 1};
    long refs_fd = -1;
    int have_size = 0, have_seed = 0;
    unsigned given = 0;
    for (int i = 2; i < argc; i++) {
        const char *v;
        const char *a = argv[i];
        uint64_t n;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return EXIT_OK;
        } else if ((v = opt_value(argc, argv, &i, "--size"))) {
            if (parse_size(v, &o.size))
                bad_args("--size: '%s' is not a size (examples: 4096, 64K, 64M, 1.5G)", v);
            have_size = 1;
        } else if ((v = opt_value(argc, argv, &i, "--seed"))) {
            if (parse_u64(v, &o.seed))
                bad_args("--seed: '%s' is not a non-negative integer", v);
            have_seed = 1;
        } else if ((v = opt_value(argc, argv, &i, "--passes"))) {
            if (parse_u64(v, &n) || n == 0)
                bad_args("--passes: '%s' is not a positive integer", v);
            o.passes = n;
            given |= OPT_PASSES;
        } else if ((v = opt_value(argc, argv, &i, "--ops"))) {
            if (parse_u64(v, &n) || n == 0)
                bad_args("--ops: '%s' is not a positive integer", v);
            o.ops = n;
            given |= OPT_OPS;
        } else if ((v = opt_value(argc, argv, &i, "--threads"))) {
            if (parse_u64(v, &n) || n == 0 || n > 1024)
                bad_args("--threads: '%s' is not an integer in 1..1024", v);
            o.threads = (unsigned)n;
            if (n > 1)
                given |= OPT_THREADS;
        } else if (!strcmp(a, "--fork")) {
            o.fork = 1;
            given |= OPT_FORK;
        } else if ((v = opt_value(argc, argv, &i, "--refs-fd"))) {
            if (parse_u64(v, &n) || n > 1 << 20)
                bad_args("--refs-fd: '%s' is not a descriptor number", v);
            refs_fd = (long)n;
        } else if (!strcmp(a, "--objects")) {
            o.objects = 1;
        } else if (!strcmp(a, "--stop")) {
            o.stop = 1;
        } else if ((v = opt_value(argc, argv, &i, "--mlock"))) {
            if (!strcmp(v, "max"))
                o.mlock = MLOCK_MAX;
            else if (!strcmp(v, "half"))
                o.mlock = MLOCK_HALF;
            else if (parse_size(v, &o.mlock) || o.mlock == 0 || o.mlock >= MLOCK_HALF)
                bad_args("--mlock: '%s' is not a size above 0, 'max' or 'half' (e.g. 64M)", v);
            given |= OPT_HINTS;
        } else if ((v = opt_value(argc, argv, &i, "--madvise"))) {
            char tmp[128];
            snprintf(tmp, sizeof tmp, "%s", v);
            for (char *save = NULL, *t = strtok_r(tmp, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                if (!strcmp(t, "willneed"))
                    o.madvise |= ADV_WILLNEED;
                else if (!strcmp(t, "sequential"))
                    o.madvise |= ADV_SEQUENTIAL;
                else if (!strcmp(t, "random"))
                    o.madvise |= ADV_RANDOM;
                else
                    bad_args("--madvise: unknown advice '%s' (willneed, sequential, random; "
                             "comma-separated)", t);
            }
            if (!o.madvise)
                bad_args("--madvise: give willneed, sequential or random (comma-separated)");
            given |= OPT_HINTS;
        } else {
            bad_args("%s: unknown argument '%s'", w->name, a);
        }
    }
    (void)have_seed;
    if (!have_size)
        bad_args("%s: --size is required (e.g. --size 64M)", w->name);
    if (o.size < w->min_size) {
        char b[32];
        fmt_bytes(w->min_size, b, sizeof b);
        bad_args("%s: --size must be at least %s", w->name, b);
    }
    unsigned unsupported = given & ~w->accepts;
    if (unsupported) {
        const char *opt = (unsupported & OPT_PASSES) ? "--passes"
                        : (unsupported & OPT_OPS) ? "--ops"
                        : (unsupported & OPT_THREADS) ? "--threads (above 1)"
                        : (unsupported & OPT_HINTS) ? "--mlock or --madvise"
                        : "--fork";
        bad_args("%s does not take %s", w->name, opt);
    }

    if (refs_fd >= 0) {
        if (o.threads > 1 || o.fork)
            bad_args("--refs-fd records one thread's references: drop --threads and --fork");
        if (fcntl((int)refs_fd, F_GETFD) < 0)
            bad_args("--refs-fd %ld: not an open descriptor", refs_fd);
        refs_start((int)refs_fd);
    }
    struct result r = {.work_unit = w->work_unit, .extra = ""};
    int rc = (refs_fd >= 0 ? w->run_refs : w->run)(&o, &r);
    if (rc != EXIT_OK && rc != EXIT_CHECK)
        return rc;
    if (refs_fd >= 0) {
        uint64_t acc, rec, cut;
        if (refs_finish(&acc, &rec, &cut))
            die(EXIT_FAIL, "--refs-fd %ld: writing the references: %s", refs_fd, strerror(errno));
        size_t len = strlen(r.extra);
        snprintf(r.extra + len, sizeof r.extra - len,
                 "%s\"refs\":{\"accesses\":%llu,\"recorded\":%llu,\"cut_repeats\":%llu,"
                 "\"max_repeat\":%d}",
                 len ? "," : "", (unsigned long long)acc, (unsigned long long)rec,
                 (unsigned long long)cut, REFS_MAX_REPEAT);
    }

    printf("{\"workload\":\"%s\",\"size\":%llu,\"seed\":%llu,\"work\":%llu,"
           "\"work_unit\":\"%s\",\"checksum\":\"0x%016llx\",\"elapsed_ns\":%llu,"
           "\"setup_ns\":%llu,\"work_ns\":%llu,\"threads\":%u%s%s}\n",
           w->name, (unsigned long long)o.size, (unsigned long long)o.seed,
           (unsigned long long)r.work, r.work_unit, (unsigned long long)r.checksum,
           (unsigned long long)(r.setup_ns + r.work_ns), (unsigned long long)r.setup_ns,
           (unsigned long long)r.work_ns, o.threads, r.extra[0] ? "," : "", r.extra);
    fflush(stdout);
    return rc;
}
