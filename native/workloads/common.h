/* swaplab-workload: shared code (argument parsing, PRNG, sizes, timing,
 * object reporting, result printing). */
#ifndef SWAPLAB_WORKLOAD_COMMON_H
#define SWAPLAB_WORKLOAD_COMMON_H

#include <stddef.h>
#include <stdint.h>

/* Exit codes (documented in usage()). */
enum {
    EXIT_OK = 0,
    EXIT_FAIL = 1,     /* internal error (thread/fork/pipe failure) */
    EXIT_USAGE = 2,    /* bad arguments */
    EXIT_CHECK = 3,    /* the result check failed (e.g. array not sorted) */
    EXIT_NOMEM = 4     /* allocation failure */
};

/* Options a workload may accept (bit set in workload.accepts). */
enum {
    OPT_PASSES = 1u << 0,
    OPT_OPS = 1u << 1,
    OPT_THREADS = 1u << 2,
    OPT_FORK = 1u << 3,
    OPT_HINTS = 1u << 4   /* --madvise, --mlock (on the main object) */
};

/* --madvise bits */
enum {
    ADV_WILLNEED = 1u << 0,
    ADV_SEQUENTIAL = 1u << 1,
    ADV_RANDOM = 1u << 2
};

/* --mlock max: as much of the object as the memory limit allows */
#define MLOCK_MAX UINT64_MAX
/* --mlock half: half of the memory limit (the rest streams through the
 * other half, room for a prefetcher's window) */
#define MLOCK_HALF (UINT64_MAX - 1)

struct opts {
    const char *workload;
    uint64_t size;     /* bytes */
    uint64_t seed;
    uint64_t passes;   /* 0 = workload default */
    uint64_t ops;      /* 0 = workload default */
    unsigned threads;  /* >= 1 */
    int objects;       /* print object ranges to stderr */
    int fork;          /* traverse: sweep in a forked child */
    int stop;          /* raise(SIGSTOP) after setup, before the main work */
    unsigned madvise;  /* ADV_* bits applied to the main object after setup */
    uint64_t mlock;    /* bytes of the main object to mlock before setup; MLOCK_MAX */
};

/* What a workload returns to main() for printing. */
struct result {
    uint64_t work;
    const char *work_unit;
    uint64_t checksum;
    uint64_t setup_ns;   /* allocation + initialisation */
    uint64_t work_ns;    /* main phase */
    int exit_code;       /* EXIT_OK or EXIT_CHECK */
    /* optional extra JSON members, already formatted ("\"k\":v,..."), or "" */
    char extra[512];
};

typedef int (*workload_fn)(const struct opts *o, struct result *r);

struct workload {
    const char *name;
    const char *work_unit;
    const char *description;
    unsigned accepts;          /* OPT_* bits */
    uint64_t min_size;         /* smallest SIZE that makes sense */
    workload_fn run;
    workload_fn run_refs;      /* the same with --refs-fd (refs_NAME.c) */
};

/* ---- PRNG: splitmix64 (seeding, hashing) and xoshiro256** (streams) ---- */
static inline uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static inline uint64_t splitmix64(uint64_t *state)
{
    *state += 0x9e3779b97f4a7c15ULL;
    return mix64(*state);
}

struct rng { uint64_t s[4]; };

void rng_seed(struct rng *r, uint64_t seed, uint64_t stream);

static inline uint64_t rotl64(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

static inline uint64_t rng_next(struct rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl64(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl64(s[3], 45);
    return result;
}

/* Uniform in [0, bound), bound >= 1, unbiased (Lemire). */
static inline uint64_t rng_below(struct rng *r, uint64_t bound)
{
    __uint128_t m = (__uint128_t)rng_next(r) * bound;
    uint64_t lo = (uint64_t)m;
    if (lo < bound) {
        uint64_t threshold = (0 - bound) % bound;
        while (lo < threshold) {
            m = (__uint128_t)rng_next(r) * bound;
            lo = (uint64_t)m;
        }
    }
    return (uint64_t)(m >> 64);
}

/* Uniform double in [0, 1). */
static inline double rng_double(struct rng *r)
{
    return (double)(rng_next(r) >> 11) * 0x1.0p-53;
}

/* Map a 64-bit hash onto [0, n) without division. */
static inline uint64_t fastrange64(uint64_t h, uint64_t n)
{
    return (uint64_t)(((__uint128_t)h * n) >> 64);
}

/* Order-dependent checksum accumulation. */
static inline uint64_t cs_add(uint64_t cs, uint64_t v)
{
    return mix64(cs ^ (v + 0x9e3779b97f4a7c15ULL + (cs << 6) + (cs >> 2)));
}

/* ---- page references (refs.c; `--refs-fd N`) ----
 * Each workload source is compiled twice: as is (REF does nothing: the
 * measured program is unchanged), and through refs_NAME.c with
 * SWAPLAB_REFS=1, where every access to the main objects goes through
 * refs_note, which streams page numbers to the descriptor. */
#ifndef SWAPLAB_REFS
#define SWAPLAB_REFS 0
#endif
#define PAGE_SHIFT_REFS 12
/* Longest run of references to one page kept (longer runs are cut here;
 * see refs.c for which policies this is exact for). */
#define REFS_MAX_REPEAT 3
void refs_note(uintptr_t addr, int write);
void refs_start(int fd);
/* Flushes; fills the counters; 0 ok, -1 on a write error (errno set). */
int refs_finish(uint64_t *accesses, uint64_t *recorded, uint64_t *collapsed);
#if SWAPLAB_REFS
#define REF(p, w) refs_note((uintptr_t)(p), (w))
#else
#define REF(p, w) ((void)0)
#endif

/* ---- helpers ---- */
uint64_t now_ns(void);
int parse_size(const char *s, uint64_t *out);  /* 0 ok, -1 bad */
int parse_u64(const char *s, uint64_t *out);   /* 0 ok, -1 bad */
void fmt_bytes(uint64_t bytes, char *buf, size_t len);

/* malloc/calloc that print a clear message and exit(EXIT_NOMEM) on failure.
 * `what` names the object for the message. */
void *xmalloc(const struct opts *o, const char *what, size_t bytes);
void *xcalloc(const struct opts *o, const char *what, size_t n, size_t size);

/* With --objects: one JSON line on stderr per main object, flushed. */
void report_object(const struct opts *o, const char *name, const void *p, size_t bytes);

/* After setup: with --stop, raise SIGSTOP (resume with SIGCONT). */
void setup_done(const struct opts *o);

/* --mlock and --madvise on the main object [p, p+bytes): hints_before_fill
 * locks (and so populates) the first o->mlock bytes, or with MLOCK_MAX as
 * much as the memory cgroup's limit leaves (limit - usage - max(limit/8, 4 MiB)),
 * with MLOCK_HALF half of the limit (at most what MLOCK_MAX would lock);
 * hints_after_fill applies the --madvise advice to the whole object.
 * Both print what they did on stderr (one JSON line) and return the bytes
 * locked / advised, for the result's extra members. */
uint64_t hints_before_fill(const struct opts *o, void *p, size_t bytes);
void hints_after_fill(const struct opts *o, void *p, size_t bytes);

/* The directory of this process's memory cgroup (v1 memory hierarchy or
 * cgroup2); *v2 says which. 0 on success, -1 without one. */
int cgroup_memory_dir(char *dir, size_t len, int *v2);

void die(int code, const char *fmt, ...) __attribute__((noreturn, format(printf, 2, 3)));

/* Run fn(arg_i) on n threads (args laid out `stride` bytes apart); thread 0
 * runs on the calling thread. Exits with EXIT_FAIL if a thread cannot start. */
void run_threads(unsigned n, void *(*fn)(void *), void *args, size_t stride);

/* Share [i] of [0, total) split into n nearly equal contiguous parts. */
static inline uint64_t part_begin(uint64_t total, unsigned n, unsigned i)
{
    return (uint64_t)(((__uint128_t)total * i) / n);
}

/* The workloads. */
int run_qsort(const struct opts *o, struct result *r);
int run_genome(const struct opts *o, struct result *r);
int run_traverse(const struct opts *o, struct result *r);
int run_chase(const struct opts *o, struct result *r);
int run_kv(const struct opts *o, struct result *r);

/* The same, with page references recorded (refs_NAME.c). */
int run_qsort_refs(const struct opts *o, struct result *r);
int run_genome_refs(const struct opts *o, struct result *r);
int run_traverse_refs(const struct opts *o, struct result *r);
int run_chase_refs(const struct opts *o, struct result *r);
int run_kv_refs(const struct opts *o, struct result *r);

/* `swaplab-workload bench-vma ...` (vmabench.c): its own arguments. */
int run_bench_vma(int argc, char **argv);

/* `swaplab-workload bench-touch ...` (touchbench.c): its own arguments. */
int run_bench_touch(int argc, char **argv);

/* `swaplab-workload swapin-lat ...` (swapinlat.c): swap-in latencies for
 * swaplab calibrate. */
int run_swapin_lat(int argc, char **argv);

/* `swaplab-workload balloon --size SIZE` (balloon.c): hold memory mlocked. */
int run_balloon(int argc, char **argv);

#endif
