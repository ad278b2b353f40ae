/* libswaplab-preload.so: an LD_PRELOAD allocation tracer and hint applier.
 *
 * Loaded into an unmodified program (`swaplab trace`, `swaplab run --hints`),
 * it interposes malloc, calloc, realloc, posix_memalign, aligned_alloc,
 * memalign, valloc, pvalloc, free, mmap, mmap64, munmap and mremap (C++ new
 * reaches malloc), records every allocation of at least SWAPLAB_ALLOC_MIN
 * bytes with its call stack, and applies resolved hints (mlock, willneed
 * prefetch, cold, pageout) to allocations whose call stack matches.
 *
 * Environment
 *   SWAPLAB_ALLOC_DIR    directory for the log `allocs.<pid>.bin` (created
 *                        0644, truncated); unset = no log.  A directory that
 *                        cannot be written gives one stderr line; the program
 *                        runs on without a log.
 *   SWAPLAB_ALLOC_MIN    threshold in bytes (default 65536; K/M/G suffixes,
 *                        powers of 1024).
 *   SWAPLAB_HEAP_SAMPLE  mean sampling interval R in bytes for allocations
 *                        below the threshold (K/M/G suffixes; unset, `off`
 *                        or 0 = none).  Byte-based Poisson sampling as in
 *                        heaptrack / tcmalloc / jemalloc's prof: each thread
 *                        counts down an exponentially distributed number of
 *                        bytes (mean R); the allocation that reaches zero is
 *                        sampled, so an allocation of s bytes is sampled
 *                        with probability 1 - exp(-s/R), independently of
 *                        the others.  A sampled allocation is logged
 *                        (SAMPLE) with its stack; its free / realloc is
 *                        logged (FREE).  Hints never apply to it.
 *   SWAPLAB_HEAP_SAMPLE_SEED  tests only: seed of the sampler (decimal);
 *                        the same seed gives the same samples in a
 *                        single-threaded program.
 *   SWAPLAB_HINTS        resolved-hints file (format below); unset = no hints.
 *   SWAPLAB_HINT_REPORT  optional: append one text line per hint application,
 *                        `pid\thint_id\taction\t0xADDR\tlen\tresult\n`, result
 *                        `ok` or an errno name (ENOMEM, EPERM, ...).
 *   SWAPLAB_PREFETCH     `thread`: a trend-based prefetch thread (below),
 *                        with or without a hints file; every process of
 *                        the tree gets its own (a forked child starts
 *                        one, an exec'd program loads the library anew).
 *   SWAPLAB_PREFETCH_ARGS  `key=value,...`: max=BYTES (largest prefetch
 *                        distance, default 4M), interval=US (poll period,
 *                        default 1000), history=N (fault deltas voted on,
 *                        4..64, default 16), minor=0|1 (sample minor faults
 *                        to renew the window on hits, default 1), stats=1
 *                        (print the thread's counters to stderr at exit).
 *   SWAPLAB_DEBUG_BG_GATE  tests only: `R,W`, two descriptors; the background
 *                        thread writes a byte to W and reads one from R
 *                        before each piece of work (see bg_gate).
 *
 * Exported besides the interposed functions: swaplab_preload_stats and
 * swaplab_preload_pf_stats (tests).
 *
 * Failed calls change nothing: a munmap, mremap or MAP_FIXED mmap that
 * fails logs no FREE and keeps its mappings' mlock budget.  A forked child
 * starts with no locked bytes (mlock is not inherited).  No lock of this
 * library is held across madvise, mincore or mlock.
 *
 * Log format (little-endian; every record starts and ends 8-byte aligned)
 *
 *   Header, 32 bytes:
 *     off  type    field    meaning
 *     0    u8[8]   magic    "SWLALOG1"
 *     8    u32     version  1
 *     12   u32     pid      the process writing this file
 *     16   u32     ppid     its parent (getppid() at creation)
 *     20   u32     flags    bit 0: forked child (a fork of a logged process;
 *                           it inherited the parent's live allocations)
 *     24   u64     t0_ns    CLOCK_MONOTONIC when the file was created
 *
 *   Record: u32 type, u32 len (total bytes including these 8; a multiple
 *   of 8), then the body:
 *
 *   1 ALLOC / 2 FREE (len 48):
 *     u32 tid      thread (gettid)
 *     u32 func     1 malloc, 2 calloc, 3 realloc, 4 posix_memalign,
 *                  5 aligned_alloc, 6 memalign, 7 valloc, 8 pvalloc, 9 mmap,
 *                  10 mremap, 11 free, 12 munmap (FREE of a realloc'd or
 *                  mremap'd object says realloc / mremap)
 *     u64 t_ns     CLOCK_MONOTONIC
 *     u64 addr     first byte
 *     u64 size     bytes asked for (FREE: bytes released; a partial munmap
 *                  gives the unmapped part of the tracked mapping)
 *     u32 stack_id the STACK record of the call stack (0 for FREE)
 *     u32 pad      0
 *   3 STACK (len 16 + 16 x depth), written once, before the first record
 *     using it:
 *     u32 stack_id ids start at 1 (per file)
 *     u32 depth    frames, at most 16
 *     depth x { u32 module_id, u32 pad, u64 offset }, innermost first:
 *                  frame 0 is the return address in the allocator's caller.
 *                  offset = return address - the module's load base (where
 *                  its file offset 0 is mapped, dladdr's dli_fbase; for a
 *                  PIE or shared library that is the ELF virtual address).
 *                  module_id 0 = no module (offset is the absolute address).
 *   4 MODULE (len 16 + path_len rounded up to 8), written once, before the
 *     first STACK using it:
 *     u32 module_id ids start at 1 (per file)
 *     u32 path_len  bytes of path
 *     u8[path_len]  absolute real path (the main executable's from
 *                   /proc/self/exe), then zero padding to 8
 *   5 HINT (len 48), one per hint application (mlock, each madvise):
 *     u32 tid      thread that applied it (the prefetch thread for
 *                  willneed / cold / pageout)
 *     u32 hint_id  the hint's id from the hints file
 *     u64 t_ns     CLOCK_MONOTONIC
 *     u64 addr     first byte of the range
 *     u64 len      bytes
 *     u32 action   1 mlock, 2 willneed, 3 cold, 4 pageout
 *     i32 result   0 or an errno value
 *   7 SAMPLE (len 56): a sampled allocation below the threshold: the body
 *     of ALLOC (func never mmap / mremap) and then
 *     u64 interval the mean sampling interval R it was drawn with: it
 *                  stands for s / (1 - exp(-s/R)) bytes of its site
 *   6 FORK (len 24): the process forked (written into the parent's file by
 *     the child right after fork, through the inherited descriptor)
 *     u32 child_pid
 *     u32 pad
 *     u64 t_ns
 *
 *   The log goes through a 64 KiB buffer per process: STACK and MODULE
 *   records wait there for the ALLOC that uses them, and every record
 *   that ends a logged call (ALLOC, FREE, HINT, FORK) is written through
 *   with one write(2), so a process killed by a signal, the OOM killer or
 *   _exit loses nothing.  exec of the same pid starts a new log (the file
 *   is truncated).
 *
 * Resolved-hints file (text, TAB-separated fields, one item a line; empty
 * lines and lines starting with '#' are ignored):
 *   swaplab-hints	1
 *   budget	BYTES          total mlock budget of the process (default 0)
 *   hint	ID	ACTION	P1	P2	NFRAMES	MODULE_PATH	HEX_OFFSET ...  (NFRAMES pairs)
 *   set	KEY	VALUE          optional, for the hint line above it
 *   ACTION: mlock (P1 = bytes from the object's start, 0 = whole object;
 *   P1 > 0 is also the hint's total: every allocation it matches draws on
 *   the same P1 bytes, so a site with 186 objects still locks at most P1),
 *   willneed (P1 = distance: bytes prefetched ahead of the program's touch
 *   frontier, P2 = poll interval us, 0 = 1000; set chunk BYTES = bytes
 *   released per step, default P1/2; set max_calls N = madvise calls per
 *   process, default 65536; at most 16 objects of one hint are followed
 *   at a time, and a window already resident costs no call),
 *   cold / pageout (P1 = delay in ns after the allocation).
 *   A hint that runs out of its quota reports EDQUOT once.
 *   A hint matches an allocation when its frames equal the allocation's
 *   first NFRAMES frames (module path and offset); every matching hint
 *   applies, in file order (at most 4 per allocation: e.g. mlock a prefix
 *   and prefetch the rest).  An mlock that would take the process past the budget is skipped
 *   (result ENOMEM).  willneed, cold and pageout run on one background
 *   thread.  A malformed file prints `swaplab-preload: FILE:LINE: ...` and
 *   the program runs without hints.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <malloc.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))
#define TLS __thread __attribute__((tls_model("initial-exec")))

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the log format is little-endian; this library writes native structs"
#endif

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
extern void *__libc_memalign(size_t, size_t);
extern void *__libc_valloc(size_t);
extern void *__libc_pvalloc(size_t);

/* ---- constants ---- */
enum {
    REC_ALLOC = 1, REC_FREE = 2, REC_STACK = 3, REC_MODULE = 4, REC_HINT = 5, REC_FORK = 6,
    REC_SAMPLE = 7
};
enum {
    F_MALLOC = 1, F_CALLOC, F_REALLOC, F_POSIX_MEMALIGN, F_ALIGNED_ALLOC, F_MEMALIGN,
    F_VALLOC, F_PVALLOC, F_MMAP, F_MREMAP, F_FREE, F_MUNMAP
};
enum { A_MLOCK = 1, A_WILLNEED = 2, A_COLD = 3, A_PAGEOUT = 4 };
static const char *const ACTION_NAMES[] = {"", "mlock", "willneed", "cold", "pageout"};

#define MAX_FRAMES 16
#define BT_EXTRA 8 /* our own frames, skipped */
#define LOG_BUF (64 * 1024)
#define FLUSH_NS (50ull * 1000 * 1000)
#define MAX_MODULES 1024
#define KIND_HEAP 1
#define KIND_MMAP 2
#define LF_BG 1u /* registered with the background thread */

struct log_header {
    char magic[8];
    uint32_t version, pid, ppid, flags;
    uint64_t t0_ns;
};
struct rec_alloc {
    uint32_t type, len, tid, func;
    uint64_t t_ns, addr, size;
    uint32_t stack_id, pad;
};
struct rec_sample {
    uint32_t type, len, tid, func;
    uint64_t t_ns, addr, size;
    uint32_t stack_id, pad;
    uint64_t interval;
};
struct rec_hint {
    uint32_t type, len, tid, hint_id;
    uint64_t t_ns, addr, bytes;
    uint32_t action;
    int32_t result;
};
struct rec_fork {
    uint32_t type, len, child_pid, pad;
    uint64_t t_ns;
};
struct rec_head {
    uint32_t type, len, id, n;
};
struct rec_frame {
    uint32_t module_id, pad;
    uint64_t offset;
};
_Static_assert(sizeof(struct log_header) == 32, "header is 32 bytes");
_Static_assert(sizeof(struct rec_alloc) == 48, "ALLOC is 48 bytes");
_Static_assert(sizeof(struct rec_hint) == 48, "HINT is 48 bytes");
_Static_assert(sizeof(struct rec_sample) == 56, "SAMPLE is 56 bytes");
_Static_assert(sizeof(struct rec_fork) == 24, "FORK is 24 bytes");
_Static_assert(sizeof(struct rec_frame) == 16, "frame is 16 bytes");

/* ---- state ---- */
static int g_active;            /* tracking on (log or hints) */
static int g_logging;           /* log file open */
static uint64_t g_min = 65536;
static long g_page = 4096;
static char g_dir[PATH_MAX];
static uint32_t g_pid;
static int g_report_fd = -1;

static TLS int t_guard;
static TLS uint32_t t_tid;

static void *(*real_mmap)(void *, size_t, int, int, int, off_t);
static int (*real_munmap)(void *, size_t);
static void *(*real_mremap)(void *, size_t, size_t, int, ...);

static uintptr_t g_self_lo, g_self_hi;

/* locks, in nesting order: L_stk, L_bg, L_tab before L_log (innermost);
 * L_smp (sampled addresses) is taken alone.  None of them is held across
 * dl_iterate_phdr (the dynamic linker's lock, which a program's own
 * dl_iterate_phdr callback holds while it allocates: see module_find),
 * madvise, mincore or mlock. */
static pthread_mutex_t L_log = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t L_tab = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t L_stk = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t L_bg = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t C_bg;   /* new background work (with L_bg) */
static pthread_cond_t C_done = PTHREAD_COND_INITIALIZER; /* the background thread left a range (with L_bg) */

/* ---- small helpers ---- */
static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint32_t my_tid(void)
{
    if (!t_tid)
        t_tid = (uint32_t)syscall(SYS_gettid);
    return t_tid;
}

static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static void write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n > 0) {
        ssize_t w = write(fd, c, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return;
        }
        c += w;
        n -= (size_t)w;
    }
}

/* One stderr line, without stdio (no allocation, no locks). */
static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    char buf[1024];
    int n = snprintf(buf, sizeof buf, "swaplab-preload: ");
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(buf + n, sizeof buf - (size_t)n - 1, fmt, ap);
    va_end(ap);
    if (m < 0)
        m = 0;
    size_t len = (size_t)n + ((size_t)m < sizeof buf - (size_t)n - 1 ? (size_t)m
                                                                     : sizeof buf - (size_t)n - 2);
    buf[len++] = '\n';
    write_all(2, buf, len);
}

static const char *errname(int e)
{
    const char *s = strerrorname_np(e);
    return s ? s : "EUNKNOWN";
}

static void *sys_mmap(void *a, size_t n, int prot, int flags, int fd, off_t off)
{
    if (real_mmap)
        return real_mmap(a, n, prot, flags, fd, off);
    return (void *)syscall(SYS_mmap, a, n, prot, flags, fd, off);
}

static int sys_munmap(void *a, size_t n)
{
    if (real_munmap)
        return real_munmap(a, n);
    return (int)syscall(SYS_munmap, a, n);
}

/* ---- the log ---- */
static int g_log_fd = -1;
static unsigned char g_buf[LOG_BUF];
static size_t g_buf_len;
static uint64_t g_last_flush;
static int g_exiting;

static void flush_locked(void)
{
    if (g_log_fd >= 0 && g_buf_len)
        write_all(g_log_fd, g_buf, g_buf_len);
    g_buf_len = 0;
    g_last_flush = now_ns();
}

static void log_append(const void *rec, size_t n)
{
    if (!g_logging)
        return;
    pthread_mutex_lock(&L_log);
    if (g_log_fd >= 0) {
        if (g_buf_len + n > sizeof g_buf)
            flush_locked();
        memcpy(g_buf + g_buf_len, rec, n);
        g_buf_len += n;
        /* STACK and MODULE records always precede the ALLOC that needs
         * them: they wait in the buffer; the record that ends a logged call
         * is written through at once, so a program killed at any moment
         * (a timeout, the OOM killer) loses nothing.  Only calls at or above
         * the threshold log anything, so this is one write(2) per large
         * allocation or free: at the default 64 KiB, at most 16 k writes
         * per GiB allocated. */
        uint32_t type;
        memcpy(&type, rec, sizeof type);
        if (g_exiting || (type != REC_STACK && type != REC_MODULE) ||
            now_ns() - g_last_flush >= FLUSH_NS)
            flush_locked();
    }
    pthread_mutex_unlock(&L_log);
}

/* Opens allocs.<pid>.bin and writes its header; 0 ok, -1 failed (said). */
static int log_open(uint32_t ppid, uint32_t flags)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/allocs.%u.bin", g_dir, (unsigned)g_pid);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) {
        say("cannot create %s: %s; allocation logging is off", path, strerror(errno));
        return -1;
    }
    (void)fchmod(fd, 0644);
    struct log_header h;
    memcpy(h.magic, "SWLALOG1", 8);
    h.version = 1;
    h.pid = g_pid;
    h.ppid = ppid;
    h.flags = flags;
    h.t0_ns = now_ns();
    write_all(fd, &h, sizeof h);
    g_log_fd = fd;
    g_buf_len = 0;
    g_last_flush = h.t0_ns;
    return 0;
}

static void log_alloc(uint32_t type, uint32_t func, uint64_t addr, uint64_t size, uint32_t stack)
{
    struct rec_alloc r = {type, sizeof r, my_tid(), func, now_ns(), addr, size, stack, 0};
    log_append(&r, sizeof r);
}

/* ---- tracked heap objects: open addressing by address ----
 * (free() must stay cheap: one hash probe).  Mappings (mmap, mremap) live
 * in the treap below, which answers "every tracked mapping overlapping
 * [a, a+n)" for munmap, MAP_FIXED and mremap. */
struct live_ent {
    uint64_t addr, size, locked; /* locked: bytes mlocked from addr (a prefix) */
    uint32_t kind, flags;
};
static struct live_ent *g_live;
static size_t g_live_cap, g_live_n;

static size_t live_slot(uint64_t a, size_t cap)
{
    return (size_t)(mix64(a) & (cap - 1));
}

static void live_put_raw(struct live_ent *t, size_t cap, const struct live_ent *e)
{
    size_t i = live_slot(e->addr, cap);
    while (t[i].kind && t[i].addr != e->addr)
        i = (i + 1) & (cap - 1);
    t[i] = *e;
}

static long live_find(uint64_t a)
{
    if (!g_live_cap)
        return -1;
    size_t i = live_slot(a, g_live_cap);
    while (g_live[i].kind) {
        if (g_live[i].addr == a)
            return (long)i;
        i = (i + 1) & (g_live_cap - 1);
    }
    return -1;
}

static void live_insert(const struct live_ent *e)
{
    long at = live_find(e->addr);
    if (at >= 0) { /* reused address we missed the free of */
        g_live[at] = *e;
        return;
    }
    if ((g_live_n + 1) * 2 > g_live_cap) {
        size_t ncap = g_live_cap ? g_live_cap * 2 : 1024;
        struct live_ent *t = __libc_calloc(ncap, sizeof *t);
        if (!t)
            return;
        for (size_t i = 0; i < g_live_cap; i++)
            if (g_live[i].kind)
                live_put_raw(t, ncap, &g_live[i]);
        __libc_free(g_live);
        g_live = t;
        g_live_cap = ncap;
    }
    live_put_raw(g_live, g_live_cap, e);
    __atomic_store_n(&g_live_n, g_live_n + 1, __ATOMIC_RELAXED);
}

static void live_del_at(size_t i)
{
    size_t mask = g_live_cap - 1;
    __atomic_store_n(&g_live_n, g_live_n - 1, __ATOMIC_RELAXED);
    size_t j = i;
    for (;;) {
        j = (j + 1) & mask;
        if (!g_live[j].kind)
            break;
        size_t k = live_slot(g_live[j].addr, g_live_cap);
        int stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
        if (stays)
            continue;
        g_live[i] = g_live[j];
        i = j;
    }
    g_live[i].kind = 0;
}

/* Removes the entry for a; 1 and *out if it was tracked. */
static int live_take(uint64_t a, struct live_ent *out)
{
    pthread_mutex_lock(&L_tab);
    long i = live_find(a);
    if (i >= 0) {
        *out = g_live[i];
        live_del_at((size_t)i);
    }
    pthread_mutex_unlock(&L_tab);
    return i >= 0;
}

/* ---- tracked mappings: a treap keyed by start address (under L_tab) ----
 * Tracked mappings never overlap (an insert first takes out whatever it
 * overlaps), so they are ordered by start and by end alike: the mappings
 * overlapping [lo, hi) are those starting in [lo, hi) plus at most one
 * starting before lo.  Split and merge are O(depth), expected O(log n);
 * g_msteps counts the nodes they visit (swaplab_preload_stats). */
struct mnode {
    uint64_t addr, size, locked; /* locked: bytes mlocked from addr (a prefix) */
    uint32_t flags, prio;
    struct mnode *l, *r;
};
static struct mnode *g_mroot;
static struct mnode *g_mfree; /* free nodes, chained through l */
static size_t g_mcount;       /* nodes in the tree (read without the lock) */
static uint64_t g_mseq, g_mops, g_msteps;

static struct mnode *mnode_new(void)
{
    if (!g_mfree) {
        enum { CHUNK = 256 };
        struct mnode *c = __libc_malloc(CHUNK * sizeof *c);
        if (!c)
            return NULL;
        for (int i = 0; i < CHUNK; i++) {
            c[i].l = g_mfree;
            g_mfree = &c[i];
        }
    }
    struct mnode *n = g_mfree;
    g_mfree = n->l;
    memset(n, 0, sizeof *n);
    n->prio = (uint32_t)mix64(++g_mseq);
    return n;
}

static void mnode_free_list(struct mnode *list)
{
    while (list) {
        struct mnode *next = list->r;
        list->l = g_mfree;
        g_mfree = list;
        list = next;
    }
}

/* Splits t into the nodes starting before key (*a) and the rest (*b). */
static void msplit(struct mnode *t, uint64_t key, struct mnode **a, struct mnode **b)
{
    struct mnode **pa = a, **pb = b;
    while (t) {
        g_msteps++;
        if (t->addr < key) {
            *pa = t;
            pa = &t->r;
            t = t->r;
        } else {
            *pb = t;
            pb = &t->l;
            t = t->l;
        }
    }
    *pa = NULL;
    *pb = NULL;
}

/* Joins a and b, every key of a below every key of b. */
static struct mnode *mmerge(struct mnode *a, struct mnode *b)
{
    struct mnode *root = NULL, **p = &root;
    while (a && b) {
        g_msteps++;
        if (a->prio > b->prio) {
            *p = a;
            p = &a->r;
            a = a->r;
        } else {
            *p = b;
            p = &b->l;
            b = b->l;
        }
    }
    *p = a ? a : b;
    return root;
}

/* The nodes of t in address order, chained through r, followed by rest;
 * *count += their number. */
static struct mnode *mlist(struct mnode *t, struct mnode *rest, size_t *count)
{
    while (t) {
        struct mnode *l = t->l;
        t->l = NULL;
        t->r = mlist(t->r, rest, count);
        rest = t;
        (*count)++;
        t = l;
    }
    return rest;
}

/* Takes every mapping overlapping [lo, hi) out of the tree: a list in
 * address order. */
static struct mnode *mtree_detach(uint64_t lo, uint64_t hi)
{
    if (!g_mroot || hi <= lo)
        return NULL;
    g_mops++;
    struct mnode *a, *b, *m, *c;
    msplit(g_mroot, lo, &a, &b);
    msplit(b, hi, &m, &c);
    if (a) {
        struct mnode *mx = a;
        while (mx->r) {
            g_msteps++;
            mx = mx->r;
        }
        if (mx->addr + mx->size > lo) {
            struct mnode *one;
            msplit(a, mx->addr, &a, &one);
            m = mmerge(one, m);
        }
    }
    g_mroot = mmerge(a, c);
    size_t k = 0;
    struct mnode *list = mlist(m, NULL, &k);
    __atomic_store_n(&g_mcount, g_mcount - k, __ATOMIC_RELAXED);
    return list;
}

/* Adds n; returns (a list) the mappings it overlapped, now taken out:
 * stale ones, whose unmapping we did not see. */
static struct mnode *mtree_insert(struct mnode *n)
{
    struct mnode *stale = mtree_detach(n->addr, n->addr + n->size);
    struct mnode *a, *b;
    g_mops++;
    msplit(g_mroot, n->addr, &a, &b);
    n->l = n->r = NULL;
    g_mroot = mmerge(mmerge(a, n), b);
    __atomic_store_n(&g_mcount, g_mcount + 1, __ATOMIC_RELAXED);
    return stale;
}

static void mtree_forget_locks(struct mnode *t)
{
    for (; t; t = t->r) {
        t->locked = 0;
        mtree_forget_locks(t->l);
    }
}

/* Debugging and tests: {tree operations, nodes visited, tracked mappings,
 * tracked heap objects}. */
EXPORT void swaplab_preload_stats(uint64_t out[4])
{
    pthread_mutex_lock(&L_tab);
    out[0] = g_mops;
    out[1] = g_msteps;
    out[2] = g_mcount;
    out[3] = g_live_n;
    pthread_mutex_unlock(&L_tab);
}

/* ---- modules and stacks ---- */
struct module {
    uintptr_t lo, hi, base;
    uint32_t id; /* 0 until written to the log */
    char *path;
};
static struct module g_mods[MAX_MODULES];
static int g_nmods;
static uint32_t g_next_mod_id;

struct find_ctx {
    uintptr_t a;
    int found, index;
    uintptr_t lo, hi, base;
    char name[PATH_MAX];
};

static int find_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct find_ctx *c = data;
    int idx = c->index++;
    uintptr_t lo = UINTPTR_MAX, hi = 0, minv = UINTPTR_MAX;
    int hit = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[i];
        if (p->p_type != PT_LOAD)
            continue;
        uintptr_t s = info->dlpi_addr + p->p_vaddr, e = s + p->p_memsz;
        if (c->a >= s && c->a < e)
            hit = 1;
        if (s < lo)
            lo = s;
        if (e > hi)
            hi = e;
        if (p->p_vaddr < minv)
            minv = p->p_vaddr;
    }
    if (!hit)
        return 0;
    c->found = 1;
    c->lo = lo;
    c->hi = hi;
    c->base = info->dlpi_addr + (minv & ~(uintptr_t)(g_page - 1));
    const char *n = info->dlpi_name ? info->dlpi_name : "";
    if (!n[0] && idx == 0) {
        ssize_t r = readlink("/proc/self/exe", c->name, sizeof c->name - 1);
        c->name[r > 0 ? r : 0] = 0;
    } else if (!realpath(n, c->name)) {
        snprintf(c->name, sizeof c->name, "%s", n);
    }
    return 1;
}

/* Index of the cached module containing a, or -1.  Under L_stk. */
static int module_cached(uintptr_t a)
{
    for (int i = 0; i < g_nmods; i++)
        if (a >= g_mods[i].lo && a < g_mods[i].hi)
            return i;
    return -1;
}

/* The loaded object containing a (found or not; NULL without memory),
 * freed by the caller.  With NO lock of ours held: dl_iterate_phdr holds
 * the dynamic linker's lock while it calls back, and a program's own
 * callback may allocate, which takes L_stk (stack_get): holding L_stk
 * here would be the opposite order, a deadlock (probe mode dliter). */
static struct find_ctx *module_find(uintptr_t a)
{
    struct find_ctx *c = __libc_calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->a = a;
    dl_iterate_phdr(find_cb, c);
    return c;
}

/* Caches what module_find found, unless another thread cached it since.
 * Under L_stk. */
static void module_add(const struct find_ctx *c)
{
    if (!c->found || g_nmods >= MAX_MODULES || module_cached(c->a) >= 0)
        return;
    size_t n = strlen(c->name);
    char *p = __libc_malloc(n + 1);
    if (!p)
        return;
    memcpy(p, c->name, n + 1);
    struct module *m = &g_mods[g_nmods];
    m->lo = c->lo;
    m->hi = c->hi;
    m->base = c->base;
    m->id = 0;
    m->path = p;
    g_nmods++;
}

static void module_write(struct module *m)
{
    if (m->id)
        return;
    m->id = ++g_next_mod_id;
    size_t n = strlen(m->path);
    size_t len = (16 + n + 7) & ~(size_t)7;
    unsigned char *rec = __libc_calloc(1, len);
    if (!rec)
        return;
    struct rec_head h = {REC_MODULE, (uint32_t)len, m->id, (uint32_t)n};
    memcpy(rec, &h, sizeof h);
    memcpy(rec + 16, m->path, n);
    log_append(rec, len);
    __libc_free(rec);
}

/* ---- hints ---- */
struct hint {
    uint32_t id, action;
    uint64_t p1, p2;
    uint64_t chunk;     /* willneed: bytes released per step (0 = half the distance) */
    uint64_t max_calls; /* willneed: madvise calls per process (0 = WN_MAX_CALLS) */
    int nframes;
    char *paths[MAX_FRAMES];
    uint64_t offs[MAX_FRAMES];
    /* per process, since the start or the fork */
    uint64_t spent;  /* atomic: mlock bytes granted to this hint, in total */
    uint64_t calls;  /* atomic: willneed madvise calls made */
    uint32_t nobj;   /* willneed objects registered now (with L_bg) */
    int quota_said;  /* atomic: the hint's quota refusal was reported */
};
/* A willneed hint's work is bounded however many allocations it matches:
 * at most WN_MAX_OBJS of its objects are followed at a time, and it makes
 * at most max_calls madvise calls in all (a window whose pages are all
 * resident costs no call). */
#define WN_MAX_OBJS 16
#define WN_MAX_CALLS 65536
static struct hint *g_hints;
static int g_nhints;
static uint64_t g_budget;
static uint64_t g_locked; /* atomic */

#define MAX_SITE_HINTS 4
#define MAX_HINTS 32767
struct site_hints {
    int16_t n;
    int16_t idx[MAX_SITE_HINTS]; /* into g_hints, file order */
};
struct stk_ent {
    uint64_t h;
    uint32_t id;
    struct site_hints sh;
};
static struct stk_ent *g_stk;
static size_t g_stk_cap, g_stk_n;
static uint32_t g_next_stack;

static void stk_put_raw(struct stk_ent *t, size_t cap, const struct stk_ent *e)
{
    size_t i = (size_t)(e->h & (cap - 1));
    while (t[i].h)
        i = (i + 1) & (cap - 1);
    t[i] = *e;
}

/* 1 and *id, *sh if the stack of hash h is known.  Under L_stk. */
static int stk_lookup(uint64_t h, uint32_t *id, struct site_hints *sh)
{
    if (!g_stk_cap)
        return 0;
    size_t i = (size_t)(h & (g_stk_cap - 1));
    while (g_stk[i].h) {
        if (g_stk[i].h == h) {
            *id = g_stk[i].id;
            *sh = g_stk[i].sh;
            return 1;
        }
        i = (i + 1) & (g_stk_cap - 1);
    }
    return 0;
}

/* The stack id and matching hint (-1 none) of frames bt[0..n). */
static void stack_get(void *const *bt, int n, uint32_t *id, struct site_hints *sh)
{
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ (uint64_t)n;
    for (int i = 0; i < n; i++)
        h = mix64(h ^ (uint64_t)(uintptr_t)bt[i]) + (uint64_t)i;
    if (!h)
        h = 1;
    *id = 0;
    sh->n = 0;
    unsigned char tried[MAX_FRAMES] = {0};
    pthread_mutex_lock(&L_stk);
    for (;;) {
        if (stk_lookup(h, id, sh)) {
            pthread_mutex_unlock(&L_stk);
            return;
        }
        /* a new stack: resolve the frames whose modules are not cached,
         * one at a time with L_stk dropped (module_find), then look the
         * stack up again (another thread may have added it meanwhile) */
        int miss = -1;
        for (int i = 0; i < n && miss < 0; i++)
            if (!tried[i] && module_cached((uintptr_t)bt[i]) < 0)
                miss = i;
        if (miss < 0)
            break;
        tried[miss] = 1; /* (a frame in no module stays -1) */
        pthread_mutex_unlock(&L_stk);
        struct find_ctx *c = module_find((uintptr_t)bt[miss]);
        pthread_mutex_lock(&L_stk);
        if (c) {
            module_add(c);
            __libc_free(c);
        }
    }
    if ((g_stk_n + 1) * 2 > g_stk_cap) {
        size_t ncap = g_stk_cap ? g_stk_cap * 2 : 256;
        struct stk_ent *t = __libc_calloc(ncap, sizeof *t);
        if (!t) {
            pthread_mutex_unlock(&L_stk);
            return;
        }
        for (size_t i = 0; i < g_stk_cap; i++)
            if (g_stk[i].h)
                stk_put_raw(t, ncap, &g_stk[i]);
        __libc_free(g_stk);
        g_stk = t;
        g_stk_cap = ncap;
    }
    int mods[MAX_FRAMES];
    uint64_t offs[MAX_FRAMES];
    for (int i = 0; i < n; i++) {
        uintptr_t a = (uintptr_t)bt[i];
        mods[i] = module_cached(a);
        offs[i] = mods[i] >= 0 ? a - g_mods[mods[i]].base : a;
    }
    struct stk_ent e;
    memset(&e, 0, sizeof e);
    e.h = h;
    e.id = ++g_next_stack;
    for (int k = 0; k < g_nhints && e.sh.n < MAX_SITE_HINTS; k++) {
        const struct hint *ht = &g_hints[k];
        if (ht->nframes > n)
            continue;
        int ok = 1;
        for (int f = 0; f < ht->nframes && ok; f++)
            ok = mods[f] >= 0 && offs[f] == ht->offs[f] && !strcmp(g_mods[mods[f]].path, ht->paths[f]);
        if (ok)
            e.sh.idx[e.sh.n++] = (int16_t)k;
    }
    if (g_logging) {
        struct {
            struct rec_head h;
            struct rec_frame f[MAX_FRAMES];
        } rec;
        for (int i = 0; i < n; i++) {
            if (mods[i] >= 0)
                module_write(&g_mods[mods[i]]);
            rec.f[i].module_id = mods[i] >= 0 ? g_mods[mods[i]].id : 0;
            rec.f[i].pad = 0;
            rec.f[i].offset = offs[i];
        }
        rec.h.type = REC_STACK;
        rec.h.len = (uint32_t)(16 + 16 * n);
        rec.h.id = e.id;
        rec.h.n = (uint32_t)n;
        log_append(&rec, rec.h.len);
    }
    stk_put_raw(g_stk, g_stk_cap, &e);
    g_stk_n++;
    *id = e.id;
    *sh = e.sh;
    pthread_mutex_unlock(&L_stk);
}

static void capture(uint32_t *id, struct site_hints *sh)
{
    void *bt[MAX_FRAMES + BT_EXTRA];
    int n = backtrace(bt, MAX_FRAMES + BT_EXTRA);
    int s = 0;
    while (s < n && (uintptr_t)bt[s] >= g_self_lo && (uintptr_t)bt[s] < g_self_hi)
        s++;
    int d = n - s;
    if (d > MAX_FRAMES)
        d = MAX_FRAMES;
    stack_get(bt + s, d, id, sh);
}

/* ---- hint application ---- */
static void hint_event(uint32_t hint_id, uint32_t action, uint64_t addr, uint64_t len, int result)
{
    struct rec_hint r = {REC_HINT, sizeof r, my_tid(), hint_id, now_ns(), addr, len, action, result};
    log_append(&r, sizeof r);
    if (g_report_fd >= 0) {
        char line[160];
        int n = snprintf(line, sizeof line, "%u\t%u\t%s\t0x%llx\t%llu\t%s\n", (unsigned)getpid(),
                         (unsigned)hint_id, ACTION_NAMES[action], (unsigned long long)addr,
                         (unsigned long long)len, result ? errname(result) : "ok");
        if (n > 0)
            write_all(g_report_fd, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
    }
}

/* background objects: willneed prefetch, cold / pageout after a delay */
struct bgobj {
    uint64_t addr, size;
    uint32_t hint_id, action;
    int hk;                /* index into g_hints */
    int done;              /* willneed: the hint's call quota ran out */
    uint64_t chunk;        /* willneed: bytes released per step */
    uint64_t window, interval_ns, next_ns;
    uint64_t pos;          /* willneed: page index to scan from */
    int out;               /* willneed: a window is outstanding */
    uint64_t issued_end;   /* its end (address) */
    uint64_t probe;        /* the page whose touch releases the next window */
    uint64_t stale;        /* ticks without progress */
    uint64_t seq;          /* identity, to write state back after a tick */
};
static struct bgobj *g_bg;
static size_t g_bg_n, g_bg_cap;
static uint64_t g_bg_seq;
static int g_bg_started;
static int g_pagemap_fd = -1;
/* The range the thread is working on without L_bg (madvise, mincore,
 * pagemap): bg_remove waits on C_done until it is done with it. */
static int g_busy;
static uint64_t g_busy_lo, g_busy_hi;
/* Tests only (SWAPLAB_DEBUG_BG_GATE=R,W): before each piece of work, with
 * no lock held, the thread writes one byte to W and reads one from R (EOF
 * on R turns the gate off). */
static int g_gate_r = -1, g_gate_w = -1;

static void *bg_main(void *arg);

static void bg_start_locked(void)
{
    if (g_bg_started)
        return;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    pthread_t th;
    if (pthread_create(&th, &at, bg_main, NULL) == 0)
        g_bg_started = 1;
    else
        say("cannot start the prefetch thread; willneed/cold/pageout hints are off");
    pthread_attr_destroy(&at);
}

static void quota_refused(int k, uint32_t action, uint64_t addr, uint64_t len)
{
    if (!__atomic_exchange_n(&g_hints[k].quota_said, 1, __ATOMIC_RELAXED))
        hint_event(g_hints[k].id, action, addr, len, EDQUOT);
}

static void bg_forget(const struct bgobj *o)
{
    if (o->action == A_WILLNEED && g_hints[o->hk].nobj)
        g_hints[o->hk].nobj--;
}

static int bg_register(const struct bgobj *o)
{
    int ok = 0;
    pthread_mutex_lock(&L_bg);
    if (o->action == A_WILLNEED && g_hints[o->hk].nobj >= WN_MAX_OBJS) {
        pthread_mutex_unlock(&L_bg);
        return 0;
    }
    if (g_bg_n == g_bg_cap) {
        size_t ncap = g_bg_cap ? g_bg_cap * 2 : 16;
        struct bgobj *t = __libc_realloc(g_bg, ncap * sizeof *t);
        if (t) {
            g_bg = t;
            g_bg_cap = ncap;
        }
    }
    if (g_bg_n < g_bg_cap) {
        g_bg[g_bg_n] = *o;
        g_bg[g_bg_n++].seq = ++g_bg_seq;
        if (o->action == A_WILLNEED)
            g_hints[o->hk].nobj++;
        ok = 1;
        bg_start_locked();
        pthread_cond_signal(&C_bg);
    }
    pthread_mutex_unlock(&L_bg);
    return ok;
}

/* Removes every background object overlapping [a, a+n): before the memory
 * goes away.  Waits until the thread is done with that range if it is
 * working on it (it holds no lock meanwhile; only a caller whose memory it
 * is touching waits). */
static void bg_remove(uint64_t a, uint64_t n)
{
    pthread_mutex_lock(&L_bg);
    for (size_t i = 0; i < g_bg_n;) {
        if (g_bg[i].addr < a + n && a < g_bg[i].addr + g_bg[i].size) {
            bg_forget(&g_bg[i]);
            g_bg[i] = g_bg[--g_bg_n];
        }
        else
            i++;
    }
    while (g_busy && g_busy_lo < a + n && a < g_busy_hi)
        pthread_cond_wait(&C_done, &L_bg);
    pthread_mutex_unlock(&L_bg);
}

static int pagemap_present(uint64_t addr)
{
    if (g_pagemap_fd < 0)
        return -1;
    uint64_t v;
    if (pread(g_pagemap_fd, &v, 8, (off_t)(addr / (uint64_t)g_page * 8)) != 8)
        return -1;
    return (int)(v >> 63);
}

/* 1 when every page of [from, to) (page aligned) is resident. */
static int all_resident(uint64_t from, uint64_t to)
{
    unsigned char vec[1024];
    uint64_t pg = (uint64_t)g_page;
    while (from < to) {
        uint64_t n = (to - from) / pg;
        if (n > sizeof vec)
            n = sizeof vec;
        if (mincore((void *)from, n * pg, vec))
            return 0;
        for (uint64_t k = 0; k < n; k++)
            if (!(vec[k] & 1))
                return 0;
        from += n * pg;
    }
    return 1;
}

/* MADV_WILLNEED on [from, to) unless it is all resident already (no call:
 * nothing to fetch); counts against the hint's call quota, which once spent
 * ends the object's prefetch (o->done) with one EDQUOT report line. */
static void issue_willneed(struct bgobj *o, uint64_t from, uint64_t to)
{
    if (to <= from || o->done || all_resident(from, to))
        return;
    struct hint *h = &g_hints[o->hk];
    uint64_t cap = h->max_calls ? h->max_calls : WN_MAX_CALLS;
    if (__atomic_fetch_add(&h->calls, 1, __ATOMIC_RELAXED) >= cap) {
        o->done = 1;
        quota_refused(o->hk, A_WILLNEED, from, to - from);
        return;
    }
    int r = madvise((void *)from, to - from, MADV_WILLNEED) ? errno : 0;
    hint_event(o->hint_id, A_WILLNEED, from, to - from, r);
}

/* First page (index) that is not resident after a resident run, scanning
 * forward cyclically from o->pos; -1 if none. */
static long find_frontier(struct bgobj *o, uint64_t lo, uint64_t npages)
{
    unsigned char vec[4096];
    int seen = 0;
    uint64_t idx = o->pos % npages, done = 0;
    while (done < npages) {
        uint64_t chunk = npages - idx;
        if (chunk > sizeof vec)
            chunk = sizeof vec;
        if (chunk > npages - done)
            chunk = npages - done;
        if (mincore((void *)(lo + idx * (uint64_t)g_page), chunk * (uint64_t)g_page, vec))
            return -1;
        for (uint64_t k = 0; k < chunk; k++) {
            if (vec[k] & 1)
                seen = 1;
            else if (seen)
                return (long)(idx + k);
        }
        done += chunk;
        idx = (idx + chunk) % npages;
        if (idx == 0)
            seen = 0; /* the object's end is not a run boundary */
    }
    return -1;
}

static void willneed_tick(struct bgobj *o)
{
    uint64_t pg = (uint64_t)g_page;
    uint64_t lo = o->addr & ~(pg - 1), hi = (o->addr + o->size + pg - 1) & ~(pg - 1);
    uint64_t npages = (hi - lo) / pg;
    if (o->out) {
        /* release the next part only once the program touched the probe page:
         * the prefetch never runs more than one window ahead of it */
        int steps = 0;
        for (;;) {
            int p = pagemap_present(o->probe);
            if (p < 0) {
                o->out = 0; /* no pagemap: fall back to the mincore frontier */
                return;
            }
            if (!p)
                break;
            uint64_t end = o->probe + o->window;
            if (end > hi)
                end = hi;
            issue_willneed(o, o->issued_end, end);
            if (end > o->issued_end)
                o->issued_end = end;
            o->stale = 0;
            if (o->issued_end >= hi) {
                o->out = 0;
                o->pos = 0;
                return;
            }
            o->probe = (o->probe + o->chunk) & ~(pg - 1);
            if (o->probe >= hi)
                o->probe = hi - pg;
            if (++steps == 8)
                return;
        }
        if (++o->stale >= 1000) { /* the program went elsewhere: rescan */
            o->out = 0;
            o->stale = 0;
        }
        return;
    }
    long f = find_frontier(o, lo, npages);
    if (f < 0)
        return;
    uint64_t from = lo + (uint64_t)f * pg, to = from + o->window;
    if (to > hi)
        to = hi;
    issue_willneed(o, from, to);
    o->pos = (uint64_t)f;
    if (to < hi) {
        o->out = 1;
        o->issued_end = to;
        o->probe = (from + o->chunk) & ~(pg - 1);
        if (o->probe < from)
            o->probe = from;
        o->stale = 0;
    } else {
        o->pos = 0;
    }
}

static void bg_gate(void)
{
    if (g_gate_r < 0)
        return;
    char c = 1;
    write_all(g_gate_w, &c, 1);
    ssize_t r;
    do
        r = read(g_gate_r, &c, 1);
    while (r < 0 && errno == EINTR);
    if (r <= 0)
        g_gate_r = -1;
}

/* One piece of work on a copy of an object, with no lock held. */
static void bg_work(struct bgobj *o)
{
    bg_gate();
    if (o->action == A_WILLNEED) {
        willneed_tick(o);
        return;
    }
    uint64_t pg = (uint64_t)g_page;
    uint64_t lo = (o->addr + pg - 1) & ~(pg - 1), hi = (o->addr + o->size) & ~(pg - 1);
    int advice = o->action == A_COLD ? MADV_COLD : MADV_PAGEOUT;
    int r = hi > lo && madvise((void *)lo, hi - lo, advice) ? errno : 0;
    hint_event(o->hint_id, o->action, lo, hi > lo ? hi - lo : 0, r);
}

/* The background thread.  It holds L_bg only to pick the next due object
 * (copied out; a one-shot cold / pageout object leaves the list) and to
 * write a willneed object's state back; the syscalls run unlocked, so
 * allocations, frees and new hints in other threads never wait for a slow
 * madvise or mincore (only bg_remove of the very range in flight does). */
static void *bg_main(void *arg)
{
    (void)arg;
    t_guard = 1; /* nothing this thread allocates is traced */
    if (g_pagemap_fd < 0)
        g_pagemap_fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
    pthread_mutex_lock(&L_bg);
    for (;;) {
        uint64_t now = now_ns(), next = UINT64_MAX;
        size_t pick = SIZE_MAX;
        for (size_t i = 0; i < g_bg_n; i++) {
            if (g_bg[i].next_ns <= now) {
                pick = i;
                break;
            }
            if (g_bg[i].next_ns < next)
                next = g_bg[i].next_ns;
        }
        if (pick == SIZE_MAX) {
            if (next == UINT64_MAX) {
                pthread_cond_wait(&C_bg, &L_bg);
            } else {
                struct timespec ts = {(time_t)(next / 1000000000ull),
                                      (long)(next % 1000000000ull)};
                pthread_cond_timedwait(&C_bg, &L_bg, &ts);
            }
            continue;
        }
        struct bgobj o = g_bg[pick];
        if (o.action != A_WILLNEED) {
            bg_forget(&o);
            g_bg[pick] = g_bg[--g_bg_n];
        }
        else /* round robin: the next due object goes first next time */
            g_bg[pick].next_ns = now + o.interval_ns;
        g_busy = 1;
        g_busy_lo = o.addr;
        g_busy_hi = o.addr + o.size;
        pthread_mutex_unlock(&L_bg);
        bg_work(&o);
        pthread_mutex_lock(&L_bg);
        g_busy = 0;
        pthread_cond_broadcast(&C_done);
        if (o.action == A_WILLNEED) {
            o.next_ns = now + o.interval_ns;
            for (size_t i = 0; i < g_bg_n; i++)
                if (g_bg[i].seq == o.seq) { /* still registered */
                    if (o.done) { /* the quota ran out: stop following it */
                        bg_forget(&o);
                        g_bg[i] = g_bg[--g_bg_n];
                    } else {
                        g_bg[i] = o;
                    }
                    break;
                }
        }
    }
    return NULL;
}

/* Applies hint k to a new tracked allocation; updates e (locked, flags). */
static void apply_hint(int k, struct live_ent *e)
{
    struct hint *h = &g_hints[k];
    if (h->action == A_MLOCK && e->locked) { /* a second mlock hint */
        hint_event(h->id, A_MLOCK, e->addr, 0, EALREADY);
        return;
    }
    if (h->action == A_MLOCK) {
        uint64_t bytes = h->p1 == 0 || h->p1 > e->size ? e->size : h->p1;
        if (h->p1) { /* P1 bytes in total over every allocation it matches */
            uint64_t sp = __atomic_load_n(&h->spent, __ATOMIC_RELAXED), grant;
            do {
                grant = h->p1 - sp < bytes ? h->p1 - sp : bytes;
                if (!grant) {
                    quota_refused(k, A_MLOCK, e->addr, bytes);
                    return;
                }
            } while (!__atomic_compare_exchange_n(&h->spent, &sp, sp + grant, 1, __ATOMIC_RELAXED,
                                                  __ATOMIC_RELAXED));
            bytes = grant;
        }
        uint64_t cur = __atomic_load_n(&g_locked, __ATOMIC_RELAXED);
        int r = 0;
        do {
            if (cur + bytes > g_budget || cur + bytes < cur) {
                r = ENOMEM;
                break;
            }
        } while (!__atomic_compare_exchange_n(&g_locked, &cur, cur + bytes, 1, __ATOMIC_RELAXED,
                                              __ATOMIC_RELAXED));
        if (!r) {
            r = mlock((void *)e->addr, bytes) ? errno : 0;
            if (r)
                __atomic_fetch_sub(&g_locked, bytes, __ATOMIC_RELAXED);
            else
                e->locked = bytes;
        }
        hint_event(h->id, A_MLOCK, e->addr, bytes, r);
        return;
    }
    struct bgobj o;
    memset(&o, 0, sizeof o);
    o.addr = e->addr;
    o.size = e->size;
    o.hint_id = h->id;
    o.action = h->action;
    o.hk = k;
    if (h->action == A_WILLNEED) {
        o.window = h->p1 ? h->p1 : 4u << 20;
        if (o.window < (uint64_t)g_page)
            o.window = (uint64_t)g_page;
        o.chunk = h->chunk && h->chunk <= o.window ? h->chunk : o.window / 2;
        if (o.chunk < (uint64_t)g_page)
            o.chunk = (uint64_t)g_page;
        o.interval_ns = (h->p2 ? h->p2 : 1000) * 1000ull;
        o.next_ns = now_ns();
    } else {
        o.next_ns = now_ns() + h->p1;
    }
    if (bg_register(&o))
        e->flags |= LF_BG;
}

/* Forgets a tracked heap object before its memory is released. */
static void release(const struct live_ent *e, uint64_t addr, uint64_t len, uint32_t func,
                    int unlock)
{
    if (e->flags & LF_BG)
        bg_remove(e->addr, e->size);
    if (e->locked) {
        if (unlock)
            munlock((void *)e->addr, e->locked);
        __atomic_fetch_sub(&g_locked, e->locked, __ATOMIC_RELAXED);
    }
    log_alloc(REC_FREE, func, addr, len, 0);
}

/* Forgets mappings (a list from the tree) that went away unseen: no FREE,
 * the thread lets go of them, their mlock budget comes back. */
static void drop_stale(struct mnode *list)
{
    if (!list)
        return;
    for (struct mnode *m = list; m; m = m->r) {
        if (m->flags & LF_BG)
            bg_remove(m->addr, m->size);
        if (m->locked)
            __atomic_fetch_sub(&g_locked, m->locked, __ATOMIC_RELAXED);
    }
    pthread_mutex_lock(&L_tab);
    mnode_free_list(list);
    pthread_mutex_unlock(&L_tab);
}

/* ---- hook bodies ---- */
static void on_alloc(void *p, uint64_t size, uint32_t func, uint32_t kind)
{
    int saved = errno;
    t_guard++;
    uint32_t id;
    struct site_hints sh;
    capture(&id, &sh);
    log_alloc(REC_ALLOC, func, (uint64_t)(uintptr_t)p, size, id);
    struct live_ent e = {(uint64_t)(uintptr_t)p, size, 0, kind, 0};
    for (int k = 0; k < sh.n; k++)
        apply_hint(sh.idx[k], &e);
    if (kind == KIND_MMAP) {
        struct mnode *stale = NULL;
        pthread_mutex_lock(&L_tab);
        struct mnode *m = mnode_new();
        if (m) {
            m->addr = e.addr;
            m->size = e.size;
            m->locked = e.locked;
            m->flags = e.flags;
            stale = mtree_insert(m);
        }
        pthread_mutex_unlock(&L_tab);
        drop_stale(stale);
    } else {
        pthread_mutex_lock(&L_tab);
        live_insert(&e);
        pthread_mutex_unlock(&L_tab);
    }
    t_guard--;
    errno = saved;
}

static inline int tracking(void)
{
    return g_active && !t_guard;
}

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
#define SMP_CAP (1u << 17)
#define SMP_FILT (1u << 14)
static uint64_t g_sample;          /* R in bytes; 0 = off */
static uint64_t g_sample_seed;
static uint64_t g_smp[SMP_CAP];    /* addresses; 0 = empty */
static uint16_t g_sfilt[SMP_FILT]; /* per-hash counts of g_smp (atomic) */
static size_t g_smp_n;             /* entries (atomic reads) */
static uint64_t g_smp_full;        /* samples skipped: table full (atomic) */
static pthread_mutex_t L_smp = PTHREAD_MUTEX_INITIALIZER;
static TLS int64_t t_left;
static TLS uint64_t t_rng;
static TLS int t_sinit;

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
static int64_t smp_draw(void)
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
static int smp_take(uint64_t a)
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

static void on_sample(void *p, uint64_t size, uint32_t func)
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

/* A small allocation of n bytes at p: sample it when the count runs out. */
static inline void small_alloc(void *p, uint64_t n, uint32_t func)
{
    if (!g_sample || !p || !tracking())
        return;
    if (!t_sinit)
        t_left = smp_draw();
    t_left -= (int64_t)n;
    if (t_left > 0)
        return;
    t_left = smp_draw();
    on_sample(p, n, func);
}

/* Before a small block is freed or moved: logs the FREE of a sampled one. */
static inline void small_free(void *p, uint32_t func)
{
    if (!p || !__atomic_load_n(&g_smp_n, __ATOMIC_RELAXED))
        return;
    int saved = errno;
    t_guard++;
    uint64_t a = (uint64_t)(uintptr_t)p;
    if (smp_take(a))
        log_alloc(REC_FREE, func, a, malloc_usable_size(p), 0);
    t_guard--;
    errno = saved;
}

/* Could p be a tracked heap object? (cheap, lock-free) */
static inline int maybe_tracked(void *p)
{
    return p && __atomic_load_n(&g_live_n, __ATOMIC_RELAXED) && malloc_usable_size(p) >= g_min;
}

/* munmap, mmap MAP_FIXED and mremap of [lo, hi) in three steps: take the
 * tracked mappings overlapping it out of the tree (unmap_begin), make the
 * call, then either log a FREE of each overlapping part, keep the parts
 * outside tracked and give back the mlock budget of what went
 * (unmap_commit), or, when the call failed and nothing was unmapped, put
 * them back as they were (unmap_abort): no FREE, no budget. */
struct unmap_op {
    struct mnode *list;
    uint64_t lo, hi;
};

static void unmap_begin(uint64_t a, uint64_t n, struct unmap_op *op)
{
    op->list = NULL;
    op->lo = a;
    op->hi = a + n < a ? UINT64_MAX : a + n;
    if (!n || !__atomic_load_n(&g_mcount, __ATOMIC_RELAXED))
        return;
    pthread_mutex_lock(&L_tab);
    op->list = mtree_detach(op->lo, op->hi);
    pthread_mutex_unlock(&L_tab);
}

static void unmap_abort(struct unmap_op *op)
{
    if (!op->list)
        return;
    struct mnode *stale = NULL;
    pthread_mutex_lock(&L_tab);
    for (struct mnode *m = op->list, *next; m; m = next) {
        next = m->r;
        struct mnode *s = mtree_insert(m);
        while (s) { /* none expected: the call failed, nothing moved */
            struct mnode *sn = s->r;
            s->r = stale;
            stale = s;
            s = sn;
        }
    }
    pthread_mutex_unlock(&L_tab);
    op->list = NULL;
    drop_stale(stale);
}

/* The call succeeded.  For mremap, moved/moved_len is the new mapping: the
 * kernel carries an mlock along to it, so the part we locked is unlocked
 * there (it is a new object; its own hints decide). */
static void unmap_commit(struct unmap_op *op, uint32_t func, uint64_t moved, uint64_t moved_len)
{
    if (!op->list)
        return;
    uint64_t lo = op->lo, hi = op->hi;
    pthread_mutex_lock(&L_tab);
    for (struct mnode *m = op->list; m; m = m->r) {
        uint64_t end = m->addr + m->size, lend = m->addr + m->locked;
        struct mnode *rest;
        if (m->addr < lo && (rest = mnode_new())) {
            rest->addr = m->addr;
            rest->size = lo - m->addr;
            rest->locked = lend < lo ? m->locked : lo - m->addr;
            struct mnode *s = mtree_insert(rest);
            mnode_free_list(s); /* cannot overlap: it was part of m */
        }
        if (hi < end && (rest = mnode_new())) {
            rest->addr = hi;
            rest->size = end - hi;
            rest->locked = lend > hi ? lend - hi : 0;
            struct mnode *s = mtree_insert(rest);
            mnode_free_list(s);
        }
    }
    pthread_mutex_unlock(&L_tab);
    int saved = errno;
    for (struct mnode *m = op->list; m; m = m->r) {
        uint64_t s = m->addr > lo ? m->addr : lo;
        uint64_t t = m->addr + m->size < hi ? m->addr + m->size : hi;
        uint64_t lend = m->addr + m->locked;
        if (m->flags & LF_BG)
            bg_remove(s, t - s);
        if (m->locked && lend > s) {
            uint64_t le = lend < t ? lend : t; /* [s, le) was locked and goes */
            if (moved) {
                /* old byte x is at moved + (x - lo) if x - lo < moved_len */
                uint64_t ue = le < lo + moved_len ? le : lo + moved_len;
                if (le == hi && moved_len > hi - lo)
                    ue = lo + moved_len; /* the kernel locks the growth too */
                if (ue > s)
                    munlock((void *)(moved + (s - lo)), ue - s);
            }
            __atomic_fetch_sub(&g_locked, le - s, __ATOMIC_RELAXED);
        }
        log_alloc(REC_FREE, func, s, t - s, 0);
    }
    errno = saved;
    pthread_mutex_lock(&L_tab);
    mnode_free_list(op->list);
    pthread_mutex_unlock(&L_tab);
    op->list = NULL;
}

/* MREMAP_DONTUNMAP succeeded: the old range [lo, hi) stays mapped (its
 * pages moved to the new mapping at `moved`), so its mappings go back into
 * the tree as they were and no FREE is logged.  The kernel moved the
 * range's mlock to the new mapping and cleared it in the old range: the
 * new mapping is unlocked as after any move (a new object; its own hints
 * decide), and a locked prefix reaching into the range now ends at lo
 * (the rest of it, past hi, is unlocked too: a prefix has no hole); that
 * budget comes back. */
static void unmap_keep(struct unmap_op *op, uint64_t moved)
{
    if (!op->list)
        return;
    uint64_t lo = op->lo, hi = op->hi;
    int saved = errno;
    for (struct mnode *m = op->list; m; m = m->r) {
        uint64_t lend = m->addr + m->locked;
        if (!m->locked || lend <= lo)
            continue;
        uint64_t s = m->addr > lo ? m->addr : lo, le = lend < hi ? lend : hi;
        if (le > s)
            munlock((void *)(moved + (s - lo)), le - s);
        if (lend > hi)
            munlock((void *)hi, lend - hi);
        __atomic_fetch_sub(&g_locked, lend - s, __ATOMIC_RELAXED);
        m->locked = s - m->addr;
    }
    errno = saved;
    unmap_abort(op); /* back into the tree */
}

/* ---- the interposed functions ---- */
EXPORT void *malloc(size_t n)
{
    void *p = __libc_malloc(n);
    if (n < g_min)
        small_alloc(p, n, F_MALLOC);
    else if (p && tracking())
        on_alloc(p, n, F_MALLOC, KIND_HEAP);
    return p;
}

EXPORT void *calloc(size_t n, size_t m)
{
    void *p = __libc_calloc(n, m);
    size_t total;
    if (p && !__builtin_mul_overflow(n, m, &total)) {
        if (total < g_min)
            small_alloc(p, total, F_CALLOC);
        else if (tracking())
            on_alloc(p, total, F_CALLOC, KIND_HEAP);
    }
    return p;
}

EXPORT void free(void *p)
{
    small_free(p, F_FREE);
    if (tracking() && maybe_tracked(p)) {
        struct live_ent e;
        t_guard++;
        int saved = errno;
        if (live_take((uint64_t)(uintptr_t)p, &e))
            release(&e, e.addr, e.size, F_FREE, 1);
        errno = saved;
        t_guard--;
    }
    __libc_free(p);
}

EXPORT void *realloc(void *old, size_t n)
{
    small_free(old, F_REALLOC);
    if (!tracking())
        return __libc_realloc(old, n);
    struct live_ent e;
    int had = 0;
    if (maybe_tracked(old)) {
        t_guard++;
        int saved = errno;
        had = live_take((uint64_t)(uintptr_t)old, &e);
        if (had) { /* the thread must let go before realloc may move it */
            if (e.flags & LF_BG)
                bg_remove(e.addr, e.size);
            if (e.locked) {
                munlock((void *)e.addr, e.locked);
                __atomic_fetch_sub(&g_locked, e.locked, __ATOMIC_RELAXED);
            }
        }
        errno = saved;
        t_guard--;
    }
    void *p = __libc_realloc(old, n);
    if (had) {
        if (!p && n) { /* failed: the old block stays, tracked without hints */
            t_guard++;
            e.flags = 0;
            e.locked = 0;
            pthread_mutex_lock(&L_tab);
            live_insert(&e);
            pthread_mutex_unlock(&L_tab);
            t_guard--;
            return p;
        }
        t_guard++;
        int saved = errno;
        log_alloc(REC_FREE, F_REALLOC, e.addr, e.size, 0);
        errno = saved;
        t_guard--;
    }
    if (n < g_min)
        small_alloc(p, n, F_REALLOC);
    else if (p)
        on_alloc(p, n, F_REALLOC, KIND_HEAP);
    return p;
}

EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
    if (align < sizeof(void *) || (align & (align - 1)))
        return EINVAL;
    int saved = errno;
    void *p = __libc_memalign(align, n);
    errno = saved;
    if (!p)
        return ENOMEM;
    *out = p;
    if (n < g_min)
        small_alloc(p, n, F_POSIX_MEMALIGN);
    else if (tracking())
        on_alloc(p, n, F_POSIX_MEMALIGN, KIND_HEAP);
    return 0;
}

EXPORT void *aligned_alloc(size_t align, size_t n)
{
    void *p = __libc_memalign(align, n);
    if (n < g_min)
        small_alloc(p, n, F_ALIGNED_ALLOC);
    else if (p && tracking())
        on_alloc(p, n, F_ALIGNED_ALLOC, KIND_HEAP);
    return p;
}

EXPORT void *memalign(size_t align, size_t n)
{
    void *p = __libc_memalign(align, n);
    if (n < g_min)
        small_alloc(p, n, F_MEMALIGN);
    else if (p && tracking())
        on_alloc(p, n, F_MEMALIGN, KIND_HEAP);
    return p;
}

EXPORT void *valloc(size_t n)
{
    void *p = __libc_valloc(n);
    if (n < g_min)
        small_alloc(p, n, F_VALLOC);
    else if (p && tracking())
        on_alloc(p, n, F_VALLOC, KIND_HEAP);
    return p;
}

EXPORT void *pvalloc(size_t n)
{
    void *p = __libc_pvalloc(n);
    if (n < g_min)
        small_alloc(p, n, F_PVALLOC);
    else if (p && tracking())
        on_alloc(p, n, F_PVALLOC, KIND_HEAP);
    return p;
}

EXPORT void *mmap(void *a, size_t n, int prot, int flags, int fd, off_t off)
{
    struct unmap_op op = {NULL, 0, 0};
    int track = tracking();
    if (track) {
        t_guard++;
        if ((flags & MAP_FIXED) && a)
            unmap_begin((uint64_t)(uintptr_t)a, n, &op);
    }
    void *p = sys_mmap(a, n, prot, flags, fd, off);
    if (track) {
        if (p == MAP_FAILED) /* (a failed MAP_FIXED may have unmapped some) */
            unmap_abort(&op);
        else
            unmap_commit(&op, F_MUNMAP, 0, 0);
        t_guard--;
        if (p != MAP_FAILED && n >= g_min)
            on_alloc(p, n, F_MMAP, KIND_MMAP);
    }
    return p;
}

EXPORT void *mmap64(void *a, size_t n, int prot, int flags, int fd, off_t off)
{
    return mmap(a, n, prot, flags, fd, off);
}

EXPORT int munmap(void *a, size_t n)
{
    if (!tracking())
        return sys_munmap(a, n);
    struct unmap_op op;
    t_guard++;
    unmap_begin((uint64_t)(uintptr_t)a, n, &op);
    int r = sys_munmap(a, n);
    if (r)
        unmap_abort(&op);
    else
        unmap_commit(&op, F_MUNMAP, 0, 0);
    t_guard--;
    return r;
}

EXPORT void *mremap(void *old, size_t oldn, size_t n, int flags, ...)
{
    void *want = NULL;
    if (flags & MREMAP_FIXED) {
        va_list ap;
        va_start(ap, flags);
        want = va_arg(ap, void *);
        va_end(ap);
    }
    /* the old range [old, old+oldn) goes (unless MREMAP_DONTUNMAP: it stays
     * mapped); with MREMAP_FIXED, whatever was mapped at [want, want+n) goes
     * too, logged as a munmap (as under mmap MAP_FIXED) */
    struct unmap_op op, dst = {NULL, 0, 0};
    int track = tracking();
    if (track) {
        t_guard++;
        unmap_begin((uint64_t)(uintptr_t)old, oldn, &op);
        if (flags & MREMAP_FIXED)
            unmap_begin((uint64_t)(uintptr_t)want, n, &dst);
    }
    void *p;
    if (real_mremap)
        p = real_mremap(old, oldn, n, flags, want);
    else
        p = (void *)syscall(SYS_mremap, old, oldn, n, flags, want);
    if (track) {
        if (p == MAP_FAILED) {
            unmap_abort(&dst);
            unmap_abort(&op);
        } else {
            unmap_commit(&dst, F_MUNMAP, 0, 0);
            if (flags & MREMAP_DONTUNMAP)
                unmap_keep(&op, (uint64_t)(uintptr_t)p);
            else
                unmap_commit(&op, F_MREMAP, (uint64_t)(uintptr_t)p, n);
        }
        t_guard--;
        if (p != MAP_FAILED && n >= g_min)
            on_alloc(p, n, F_MREMAP, KIND_MMAP);
    }
    return p;
}

/* ---- the hints file ---- */
static void hints_free(void)
{
    for (int i = 0; i < g_nhints; i++)
        for (int f = 0; f < g_hints[i].nframes; f++)
            __libc_free(g_hints[i].paths[f]);
    __libc_free(g_hints);
    g_hints = NULL;
    g_nhints = 0;
}

static int parse_u64(const char *s, int base, uint64_t *out)
{
    if (!*s || *s == '-' || *s == '+' || *s == ' ')
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, base);
    if (errno || *end)
        return -1;
    *out = v;
    return 0;
}

/* Splits line at TABs into at most max fields (in place); the count. */
static int split_tabs(char *line, char **f, int max)
{
    int n = 0;
    char *p = line;
    for (;;) {
        if (n == max)
            return max + 1;
        f[n++] = p;
        char *t = strchr(p, '\t');
        if (!t)
            return n;
        *t = 0;
        p = t + 1;
    }
}

/* Parses the hints file; on any problem says `FILE:LINE: what` and clears. */
static void hints_load(const char *file)
{
    int fd = open(file, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        say("%s: cannot open the hints file: %s; running without hints", file, strerror(errno));
        return;
    }
    size_t cap = 1 << 16, len = 0;
    char *buf = __libc_malloc(cap + 1);
    for (;;) {
        if (!buf)
            break;
        if (len == cap) {
            char *nb = __libc_realloc(buf, cap * 2 + 1);
            if (!nb) {
                __libc_free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
        ssize_t r = read(fd, buf + len, cap - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            say("%s: cannot read the hints file: %s; running without hints", file, strerror(errno));
            __libc_free(buf);
            close(fd);
            return;
        }
        if (r == 0)
            break;
        len += (size_t)r;
    }
    close(fd);
    if (!buf) {
        say("%s: out of memory reading the hints file; running without hints", file);
        return;
    }
    buf[len] = 0;
    int lineno = 0, seen_magic = 0, hcap = 0;
    char *line = buf;
    const char *err = NULL;
    char errbuf[200];
    while (line && *line) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = 0;
        lineno++;
        char *cur = line;
        line = nl ? nl + 1 : NULL;
        if (!*cur || *cur == '#')
            continue;
        char *f[8 + 2 * MAX_FRAMES];
        int nf = split_tabs(cur, f, 7 + 2 * MAX_FRAMES);
        if (!seen_magic) {
            if (nf != 2 || strcmp(f[0], "swaplab-hints")) {
                err = "not a swaplab hints file (the first line must be `swaplab-hints<TAB>1`)";
                break;
            }
            if (strcmp(f[1], "1")) {
                err = "unsupported hints format version (this library reads version 1)";
                break;
            }
            seen_magic = 1;
            continue;
        }
        if (!strcmp(f[0], "budget")) {
            if (nf != 2 || parse_u64(f[1], 10, &g_budget)) {
                err = "budget: expected `budget<TAB>BYTES` (a decimal number)";
                break;
            }
            continue;
        }
        if (!strcmp(f[0], "set")) {
            uint64_t v;
            if (nf != 3 || parse_u64(f[2], 10, &v)) {
                err = "set: expected `set<TAB>KEY<TAB>VALUE` (a decimal number)";
                break;
            }
            if (!g_nhints) {
                err = "set: it applies to the hint line above it, and there is none";
                break;
            }
            struct hint *h = &g_hints[g_nhints - 1];
            if (!strcmp(f[1], "chunk") && h->action == A_WILLNEED)
                h->chunk = v;
            else if (!strcmp(f[1], "max_calls") && h->action == A_WILLNEED)
                h->max_calls = v;
            else {
                err = "set: unknown key for this hint's action (willneed takes chunk, max_calls)";
                break;
            }
            continue;
        }
        if (strcmp(f[0], "hint")) {
            snprintf(errbuf, sizeof errbuf, "unknown item `%.40s` (expected budget, hint or set)", f[0]);
            err = errbuf;
            break;
        }
        if (nf < 8 || nf > 6 + 2 * MAX_FRAMES) {
            err = "hint: expected ID ACTION P1 P2 NFRAMES and 1 to 16 MODULE_PATH HEX_OFFSET pairs";
            break;
        }
        struct hint h;
        memset(&h, 0, sizeof h);
        uint64_t id, nfr;
        if (parse_u64(f[1], 10, &id) || id > UINT32_MAX) {
            err = "hint: the id must be a decimal u32";
            break;
        }
        h.id = (uint32_t)id;
        for (uint32_t a = 1; a <= 4; a++)
            if (!strcmp(f[2], ACTION_NAMES[a]))
                h.action = a;
        if (!h.action) {
            err = "hint: unknown action (mlock, willneed, cold, pageout)";
            break;
        }
        if (parse_u64(f[3], 10, &h.p1) || parse_u64(f[4], 10, &h.p2)) {
            err = "hint: P1 and P2 must be decimal numbers";
            break;
        }
        if (parse_u64(f[5], 10, &nfr) || nfr < 1 || nfr > MAX_FRAMES ||
            (int)(6 + 2 * nfr) != nf) {
            err = "hint: NFRAMES must be 1..16 and match the number of MODULE_PATH HEX_OFFSET pairs";
            break;
        }
        h.nframes = (int)nfr;
        for (int k = 0; k < h.nframes && !err; k++) {
            const char *path = f[6 + 2 * k];
            if (path[0] != '/')
                err = "hint: module paths must be absolute";
            else if (parse_u64(f[7 + 2 * k], 16, &h.offs[k]))
                err = "hint: frame offsets must be hexadecimal";
            else {
                size_t pl = strlen(path);
                h.paths[k] = __libc_malloc(pl + 1);
                if (!h.paths[k])
                    err = "out of memory";
                else
                    memcpy(h.paths[k], path, pl + 1);
            }
        }
        if (!err && g_nhints == MAX_HINTS)
            err = "too many hints (at most 32767)";
        if (!err && g_nhints == hcap) {
            int ncap = hcap ? hcap * 2 : 8;
            struct hint *t = __libc_realloc(g_hints, (size_t)ncap * sizeof *t);
            if (!t)
                err = "out of memory";
            else {
                g_hints = t;
                hcap = ncap;
            }
        }
        if (err) {
            for (int k = 0; k < h.nframes; k++)
                __libc_free(h.paths[k]);
            break;
        }
        g_hints[g_nhints++] = h;
    }
    if (!err && !seen_magic) {
        err = "empty hints file (the first line must be `swaplab-hints<TAB>1`)";
        lineno = 1;
    }
    if (err) {
        say("%s:%d: %s; running without hints", file, lineno, err);
        hints_free();
        g_budget = 0;
    }
    __libc_free(buf);
}

/* ---- the trend-based prefetch thread (SWAPLAB_PREFETCH=thread) ----
 *
 * Leap-like: a perf software event on this process (inherited by threads
 * created later) samples every major fault with its address into a ring
 * buffer.  Every interval the thread reads the new faults, pushes the page
 * deltas between consecutive faults into a history of N, and takes the
 * majority delta (Boyer-Moore vote, then a count): when more than half of
 * the history agrees on a non-zero delta D there is a trend, and the
 * thread MADV_WILLNEEDs the pages the trend predicts after the last fault,
 * D, 2D, ... up to a distance that starts at 8 pages and doubles while
 * the trend holds (at most max).  Pages already prefetched for the same
 * trend are not asked for again.  Without a trend it backs off: distance
 * back to zero, no calls.
 *
 * Hits (minor=1, the default): a second event samples minor faults.  A
 * page the thread read ahead is in the swap cache, and the program's first
 * touch of it is a minor fault: for a dense trend (|D| <= 16) a minor
 * fault inside the window already requested tells how far the program
 * got, and when less than half the distance is left ahead of it the
 * thread requests the next stretch (distance doubled, at most max) without
 * waiting for a major fault.  Without hits the program meets a major fault
 * at the end of every window and waits for the thread's next interval
 * (the bench measured 15-45 % of the major faults saved against leap's
 * 97-99 %).
 *
 * Each call is one line of the hint report with hint id 0 (and a HINT
 * record in the log).  A process whose perf event cannot be opened
 * (perf_event_paranoid, seccomp) gets one stderr line and no thread.
 *
 * Process trees.  The events are inherited by threads only
 * (inherit_thread, Linux 5.13): a forked child's faults are not sampled
 * into the parent's rings, where the parent's thread would ask for them
 * in the parent's address space (after copy-on-write, the parent's stale
 * copies: `traverse --fork` at 50 % had more major faults with the
 * thread than without).  A forked child starts its own events, rings and
 * thread in atfork_child (pf_forked): the thread did not survive the
 * fork, perf does not copy its rings into the child (VM_DONTCOPY), and
 * the descriptors it inherited are the parent's events.  An exec'd
 * program loads the library afresh (LD_PRELOAD and SWAPLAB_* are in its
 * environment) and starts its own; vfork and posix_spawn children run no
 * atfork handler and exec at once.  On an older kernel, which refuses
 * inherit_thread, the events are inherited by child processes too (one
 * stderr line says so): the child still gets its own thread, and the
 * parent's thread also sees the child's faults. */
static uint64_t parse_size_env(const char *name, const char *v, uint64_t dflt);
static uint64_t g_pf_max = 4u << 20, g_pf_interval_us = 1000, g_pf_hist = 16, g_pf_minor = 1;
static uint64_t g_pf_stats; /* stats=1: print the thread's counters at exit */
static int g_pf_on;         /* this process's prefetch thread runs (a fork restarts it) */
static int g_pf_inherit_thread = 1; /* 0: the kernel refused inherit_thread */
#define PF_MAX_CPUS 256
static int g_pf_n; /* rings: one per CPU (a per-task inherited event cannot be mapped) */
static struct perf_event_mmap_page *g_pf_mp[PF_MAX_CPUS];
static int g_pf_nmin; /* minor-fault rings, one per CPU (0 with minor=0) */
static struct perf_event_mmap_page *g_pf_min[PF_MAX_CPUS];
static int g_pf_fd[PF_MAX_CPUS], g_pf_mfd[PF_MAX_CPUS]; /* their events (sparse sampling) */
/* Sparse sampling: after PF_QUIET_NS without a trend, one major fault in
 * PF_SPARSE is sampled and minor faults not at all, as `run --prefetch
 * leap` does (docs/prefetch.md): a sample costs the faulting program 1-2.5
 * us, which a random program on zram (faults of ~15 us) paid on every fault
 * while nothing could be prefetched.  A walk seen through every 16th fault
 * still shows a constant delta; then every fault is sampled again and the
 * history starts afresh.  The period change reaches only the events of the
 * thread that opened them (PERF_EVENT_IOC_PERIOD does not follow inherited
 * copies): other threads keep being sampled at every fault. */
#define PF_SPARSE 16
#define PF_QUIET_NS 20000000ull

/* 1 if descriptor fd is still a perf event (a program may close descriptors
 * it did not open; ours must not be confused with one it opened since). */
static int pf_is_perf(int fd)
{
    char path[64], link[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(path, link, sizeof link - 1);
    if (n <= 0)
        return 0;
    link[n] = 0;
    return strstr(link, "perf_event") != NULL;
}

/* The prefetch thread's counters (swaplab_preload_pf_stats). */
static uint64_t g_pf_samples, g_pf_switches, g_pf_is_sparse;

/* Tests: out[0] major-fault samples the prefetch thread read, out[1] its
 * switches between sampling every fault and sparse sampling, out[2] 1 while
 * it samples sparsely. */
EXPORT void swaplab_preload_pf_stats(uint64_t out[3])
{
    out[0] = __atomic_load_n(&g_pf_samples, __ATOMIC_RELAXED);
    out[1] = __atomic_load_n(&g_pf_switches, __ATOMIC_RELAXED);
    out[2] = __atomic_load_n(&g_pf_is_sparse, __ATOMIC_RELAXED);
}

static void pf_set_sparse(int on)
{
    __atomic_store_n(&g_pf_is_sparse, (uint64_t)on, __ATOMIC_RELAXED);
    __atomic_add_fetch(&g_pf_switches, 1, __ATOMIC_RELAXED);
    uint64_t period = on ? PF_SPARSE : 1;
    for (int i = 0; i < g_pf_n; i++)
        if (pf_is_perf(g_pf_fd[i]))
            ioctl(g_pf_fd[i], PERF_EVENT_IOC_PERIOD, &period);
    for (int i = 0; i < g_pf_nmin; i++)
        if (pf_is_perf(g_pf_mfd[i]))
            ioctl(g_pf_mfd[i], on ? PERF_EVENT_IOC_DISABLE : PERF_EVENT_IOC_ENABLE, 0);
}
static size_t g_pf_pages = 16; /* data pages of each ring */

/* 0, or the errno of the madvise (ENOMEM: the trend ran off its mapping) */
static int pf_issue(uint64_t lo, uint64_t hi)
{
    if (hi <= lo)
        return 0;
    int r = madvise((void *)lo, hi - lo, MADV_WILLNEED) ? errno : 0;
    hint_event(0, A_WILLNEED, lo, hi - lo, r);
    return r;
}

/* Reads up to `cap` sampled fault pages from ring `mp` into `out` (the rest
 * stays for the next call); returns how many. */
static size_t pf_read(struct perf_event_mmap_page *mp, uint64_t *out, size_t cap)
{
    uint64_t pg = (uint64_t)g_page, size = g_pf_pages * pg;
    unsigned char *data = (unsigned char *)mp + g_page;
    uint64_t head = __atomic_load_n(&mp->data_head, __ATOMIC_ACQUIRE);
    uint64_t tail = mp->data_tail;
    size_t n = 0;
    while (n < cap && tail + sizeof(struct perf_event_header) <= head) {
        struct perf_event_header eh;
        for (size_t k = 0; k < sizeof eh; k++)
            ((unsigned char *)&eh)[k] = data[(tail + k) % size];
        if (eh.size < sizeof eh || tail + eh.size > head)
            break;
        if (eh.type == PERF_RECORD_SAMPLE && eh.size >= sizeof eh + 8) {
            uint64_t addr;
            for (size_t k = 0; k < 8; k++)
                ((unsigned char *)&addr)[k] = data[(tail + sizeof eh + k) % size];
            out[n++] = addr / pg;
        }
        tail += eh.size;
    }
    __atomic_store_n(&mp->data_tail, tail, __ATOMIC_RELEASE);
    return n;
}

#define PF_BATCH 1024

static void *pf_main(void *arg)
{
    (void)arg;
    t_guard = 1;
    uint64_t pg = (uint64_t)g_page;
    int64_t hist[64];
    uint64_t nh = 0, last = 0, have_last = 0;
    int64_t cur = 0;       /* the trend's delta, pages (0 = none) */
    uint64_t dist = 0;     /* pages ahead */
    uint64_t done_to = 0;  /* the farthest page requested for cur (inclusive) */
    uint64_t got[PF_BATCH];
    int sparse = 0;
    uint64_t trend_ns = now_ns();
    for (;;) {
        uint64_t us = sparse ? 10000 : g_pf_interval_us;
        struct timespec ts = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};
        nanosleep(&ts, NULL);
        int fresh = 0;
        for (int ring = 0; ring < g_pf_n; ring++) {
            size_t n;
            while ((n = pf_read(g_pf_mp[ring], got, PF_BATCH)) > 0) {
                __atomic_add_fetch(&g_pf_samples, n, __ATOMIC_RELAXED);
                for (size_t i = 0; i < n; i++) {
                    if (have_last) {
                        hist[nh % g_pf_hist] = (int64_t)(got[i] - last);
                        nh++;
                    }
                    last = got[i];
                    have_last = 1;
                }
                fresh = 1;
            }
        }
        /* Hits: the farthest requested page the program touched (a minor
         * fault inside the window requested for a dense trend). */
        uint64_t maxp = g_pf_max / pg ? g_pf_max / pg : 1;
        uint64_t step = (uint64_t)(cur < 0 ? -cur : cur);
        int dense = cur && step <= 16 && dist;
        int have_pos = 0;
        uint64_t pos = 0;
        for (int ring = 0; ring < g_pf_nmin; ring++) {
            size_t n;
            while ((n = pf_read(g_pf_min[ring], got, PF_BATCH)) > 0) {
                for (size_t i = 0; dense && i < n; i++) {
                    uint64_t p = got[i];
                    int in = cur > 0 ? p <= done_to && p + maxp > done_to
                                     : p >= done_to && p < done_to + maxp;
                    if (in && (!have_pos || (cur > 0 ? p > pos : p < pos))) {
                        pos = p;
                        have_pos = 1;
                    }
                }
            }
        }
        if (!fresh) {
            if (!have_pos)
                continue;
            /* Served from the window: renew it when less than half is left. */
            uint64_t left = cur > 0 ? done_to - pos : pos - done_to;
            if (left * 2 >= dist)
                continue;
            dist = dist * 2 > maxp ? maxp : dist * 2;
            int r;
            if (cur > 0) {
                uint64_t from = done_to + 1, to = pos + dist + 1;
                done_to = to > from ? to - 1 : done_to;
                r = pf_issue(from * pg, to * pg);
            } else {
                uint64_t to = done_to, from = pos > dist ? pos - dist : 0;
                done_to = from < to ? from : done_to;
                r = pf_issue(from * pg, to * pg);
            }
            if (r)
                dist = 0;
            continue;
        }
        uint64_t n = nh < g_pf_hist ? nh : g_pf_hist;
        int64_t m = 0;
        uint64_t c = 0;
        for (uint64_t i = 0; i < n; i++) { /* Boyer-Moore majority vote */
            if (!c) {
                m = hist[i];
                c = 1;
            } else {
                c += hist[i] == m ? 1 : (uint64_t)-1;
            }
        }
        c = 0;
        for (uint64_t i = 0; i < n; i++)
            c += hist[i] == m;
        int trend = !(n < 4 || c * 2 <= n || m == 0);
        if (sparse || (!trend && now_ns() - trend_ns > PF_QUIET_NS)) {
            /* Sparse samples only find a trend (their deltas are multiples
             * of the real ones); switching either way starts afresh. */
            if (sparse == trend) {
                sparse = !sparse;
                pf_set_sparse(sparse);
                nh = 0;
                have_last = 0;
                trend_ns = now_ns();
            }
            cur = 0;
            dist = 0;
            continue;
        }
        if (!trend) { /* no trend: back off */
            cur = 0;
            dist = 0;
            continue;
        }
        trend_ns = now_ns();
        uint64_t off = last > done_to ? last - done_to : done_to - last;
        int restart = m == cur && (dist == 0 || off > maxp);
        if (restart && (off <= maxp || hist[(nh - 1) % g_pf_hist] != m))
            continue; /* this trend ran off its mapping, or the fault is off the
                       * trend (a jump the majority outlived): wait */
        /* A new trend, or the same one resumed far from where it stopped
         * (the walk jumped: the next pass over an array starts again at its
         * front; its second fault follows the trend again). */
        if (m != cur || restart) {
            cur = m;
            dist = 8;
            done_to = last;
        } else {
            dist = dist * 2 > maxp ? maxp : dist * 2;
        }
        step = (uint64_t)(m < 0 ? -m : m);
        if (step <= 16) { /* one range covers the strides */
            if (m > 0) {
                uint64_t from = (done_to > last ? done_to : last) + 1, to = last + dist + 1;
                if (to > from) {
                    done_to = to - 1;
                    if (pf_issue(from * pg, to * pg))
                        dist = 0;
                }
            } else {
                uint64_t to = done_to < last ? done_to : last;
                uint64_t from = last > dist ? last - dist : 0;
                if (to > from) {
                    done_to = from;
                    if (pf_issue(from * pg, to * pg))
                        dist = 0;
                }
            }
        } else { /* a wide stride: the predicted pages one by one (at most 32) */
            uint64_t k = dist / step ? dist / step : 1;
            if (k > 32)
                k = 32;
            for (uint64_t i = 1; i <= k; i++) {
                uint64_t p = last + (uint64_t)m * i;
                if (m > 0 ? p <= done_to : p >= done_to)
                    continue;
                done_to = p;
                if (pf_issue(p * pg, (p + 1) * pg)) {
                    dist = 0;
                    break;
                }
            }
        }
    }
    return NULL;
}

static void pf_args(const char *v)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", v);
    for (char *save = NULL, *kv = strtok_r(buf, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(kv, '=');
        uint64_t x;
        if (eq)
            *eq = 0;
        if (eq && !strcmp(kv, "max"))
            g_pf_max = parse_size_env("SWAPLAB_PREFETCH_ARGS max", eq + 1, g_pf_max);
        else if (eq && !strcmp(kv, "interval") && !parse_u64(eq + 1, 10, &x) && x > 0)
            g_pf_interval_us = x;
        else if (eq && !strcmp(kv, "history") && !parse_u64(eq + 1, 10, &x) && x >= 4 && x <= 64)
            g_pf_hist = x;
        else if (eq && !strcmp(kv, "minor") && !parse_u64(eq + 1, 10, &x) && x <= 1)
            g_pf_minor = x;
        else if (eq && !strcmp(kv, "stats") && !parse_u64(eq + 1, 10, &x) && x <= 1)
            g_pf_stats = x;
        else
            say("SWAPLAB_PREFETCH_ARGS: ignoring `%s` (expected max=BYTES, interval=US, "
                "history=4..64, minor=0|1 or stats=0|1)",
                kv);
    }
}

static void pf_start(void)
{
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_PAGE_FAULTS_MAJ;
    a.sample_period = 1;
    a.sample_type = PERF_SAMPLE_ADDR;
    a.inherit = 1;
    a.inherit_thread = (uint64_t)g_pf_inherit_thread;
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    long ncpu = sysconf(_SC_NPROCESSORS_CONF);
    if (ncpu < 1)
        ncpu = 1;
    if (ncpu > PF_MAX_CPUS)
        ncpu = PF_MAX_CPUS;
    const char *why = NULL;
    int err = 0;
    for (long cpu = 0; cpu < ncpu; cpu++) {
        int fd = (int)syscall(SYS_perf_event_open, &a, 0, (int)cpu, -1, PERF_FLAG_FD_CLOEXEC);
        if (fd < 0 && errno == EINVAL && a.inherit_thread) {
            /* before Linux 5.13: inherit_thread is a reserved bit */
            a.inherit_thread = 0;
            g_pf_inherit_thread = 0;
            say("SWAPLAB_PREFETCH=thread: this kernel has no inherit_thread (Linux 5.13); "
                "child processes' faults reach this process's thread too");
            fd = (int)syscall(SYS_perf_event_open, &a, 0, (int)cpu, -1, PERF_FLAG_FD_CLOEXEC);
        }
        if (fd < 0) {
            if (errno == ENODEV || errno == EINVAL)
                continue; /* an offline CPU */
            why = "cannot open a perf event for major faults";
            err = errno;
            break;
        }
        void *m = sys_mmap(NULL, (g_pf_pages + 1) * (size_t)g_page, PROT_READ | PROT_WRITE,
                           MAP_SHARED, fd, 0);
        err = errno;
        if (m == MAP_FAILED) {
            close(fd);
            why = "cannot map the perf ring";
            break;
        }
        g_pf_fd[g_pf_n] = fd; /* kept for sparse sampling (PERF_EVENT_IOC_PERIOD) */
        g_pf_mp[g_pf_n++] = m;
    }
    if (why || !g_pf_n) {
        say("SWAPLAB_PREFETCH=thread: %s (%s); no prefetch thread",
            why ? why : "no CPU took a perf event", strerror(err));
        for (int i = 0; i < g_pf_n; i++) {
            sys_munmap(g_pf_mp[i], (g_pf_pages + 1) * (size_t)g_page);
            close(g_pf_fd[i]);
        }
        g_pf_n = 0;
        return;
    }
    a.config = PERF_COUNT_SW_PAGE_FAULTS_MIN;
    for (long cpu = 0; g_pf_minor && cpu < ncpu; cpu++) {
        int fd = (int)syscall(SYS_perf_event_open, &a, 0, (int)cpu, -1, PERF_FLAG_FD_CLOEXEC);
        if (fd < 0) {
            if (errno == ENODEV || errno == EINVAL)
                continue;
            say("SWAPLAB_PREFETCH=thread: cannot open a perf event for minor faults (%s); "
                "the window is renewed at major faults only",
                strerror(errno));
            break;
        }
        void *m = sys_mmap(NULL, (g_pf_pages + 1) * (size_t)g_page, PROT_READ | PROT_WRITE,
                           MAP_SHARED, fd, 0);
        if (m == MAP_FAILED) {
            close(fd);
            break;
        }
        g_pf_mfd[g_pf_nmin] = fd;
        g_pf_min[g_pf_nmin++] = m;
    }
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    pthread_t th;
    if (pthread_create(&th, &at, pf_main, NULL))
        say("SWAPLAB_PREFETCH=thread: cannot start the prefetch thread");
    else
        g_pf_on = 1;
    pthread_attr_destroy(&at);
}

/* In a forked child (atfork_child, one thread, t_guard up): the parent's
 * thread is gone, its rings were not copied (perf maps them
 * VM_DONTCOPY) and the descriptors are the parent's events, which do not
 * sample this process.  Let go of them and start this process's own
 * events, rings and thread; its counters start at zero. */
static void pf_forked(void)
{
    if (!g_pf_on)
        return;
    g_pf_on = 0;
    for (int i = 0; i < g_pf_n; i++)
        if (pf_is_perf(g_pf_fd[i])) /* (a program may have closed and reused it) */
            close(g_pf_fd[i]);
    for (int i = 0; i < g_pf_nmin; i++)
        if (pf_is_perf(g_pf_mfd[i]))
            close(g_pf_mfd[i]);
    g_pf_n = 0;
    g_pf_nmin = 0;
    __atomic_store_n(&g_pf_samples, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&g_pf_switches, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&g_pf_is_sparse, 0, __ATOMIC_RELAXED);
    pf_start();
}

/* ---- fork ---- */
static void atfork_prepare(void)
{
    t_guard++;
    pthread_mutex_lock(&L_stk);
    pthread_mutex_lock(&L_bg);
    pthread_mutex_lock(&L_tab);
    pthread_mutex_lock(&L_smp);
    pthread_mutex_lock(&L_log);
    flush_locked();
}

static void atfork_parent(void)
{
    pthread_mutex_unlock(&L_log);
    pthread_mutex_unlock(&L_smp);
    pthread_mutex_unlock(&L_tab);
    pthread_mutex_unlock(&L_bg);
    pthread_mutex_unlock(&L_stk);
    t_guard--;
}

/* The child has one thread: the one that forked, past atfork_prepare, so
 * no other thread of ours held a lock at the fork.  Fresh locks and
 * condition variables anyway (never unlock what the parent locked), no
 * background thread (it did not survive the fork: nothing is in flight),
 * and no mlocked memory: locks are not inherited, so the budget starts at
 * zero and no tracked object holds any. */
static void atfork_child(void)
{
    pthread_mutex_init(&L_log, NULL);
    pthread_mutex_init(&L_tab, NULL);
    pthread_mutex_init(&L_smp, NULL);
    pthread_mutex_init(&L_bg, NULL);
    pthread_mutex_init(&L_stk, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&C_bg, &ca);
    pthread_condattr_destroy(&ca);
    pthread_cond_init(&C_done, NULL);
    g_busy = 0;
    __atomic_store_n(&g_locked, 0, __ATOMIC_RELAXED);
    for (int k = 0; k < g_nhints; k++) { /* a new process: fresh quotas */
        g_hints[k].spent = 0;
        g_hints[k].calls = 0;
        g_hints[k].quota_said = 0;
    }
    for (size_t i = 0; i < g_live_cap; i++)
        g_live[i].locked = 0;
    mtree_forget_locks(g_mroot);
    t_tid = 0;
    uint32_t parent = g_pid;
    g_pid = (uint32_t)getpid();
    if (g_logging) {
        if (g_log_fd >= 0) { /* tell the parent's log; its buffer is empty */
            struct rec_fork r = {REC_FORK, sizeof r, g_pid, 0, now_ns()};
            write_all(g_log_fd, &r, sizeof r);
            close(g_log_fd);
            g_log_fd = -1;
        }
        g_buf_len = 0;
        if (log_open(parent, 1))
            g_logging = 0;
    }
    /* stacks and modules are per file: the child's log restarts them */
    for (int i = 0; i < g_nmods; i++)
        g_mods[i].id = 0;
    g_next_mod_id = 0;
    if (g_stk)
        memset(g_stk, 0, g_stk_cap * sizeof *g_stk);
    g_stk_n = 0;
    g_next_stack = 0;
    /* the background thread did not survive the fork (restarted below
     * when the child has its work); nor did the prefetch thread
     * (pf_forked) */
    g_bg_started = 0;
    if (g_pagemap_fd >= 0) {
        close(g_pagemap_fd);
        g_pagemap_fd = -1;
    }
    if (g_bg_n)
        bg_start_locked();
    pf_forked();
    t_guard--;
}

/* ---- constructor / destructor ---- */
static uint64_t parse_size_env(const char *name, const char *v, uint64_t dflt)
{
    char *end;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    int shift = 0;
    if (*end == 'K' || *end == 'k')
        shift = 10;
    else if (*end == 'M' || *end == 'm')
        shift = 20;
    else if (*end == 'G' || *end == 'g')
        shift = 30;
    if (shift)
        end++;
    if (errno || end == v || *end || *v == '-' || x == 0) {
        say("%s=%s is not a size in bytes (e.g. 65536 or 64K); using %llu", name, v,
            (unsigned long long)dflt);
        return dflt;
    }
    return (uint64_t)x << shift;
}

static void self_range(void)
{
    struct find_ctx *c = __libc_calloc(1, sizeof *c);
    if (!c)
        return;
    c->a = (uintptr_t)&self_range;
    dl_iterate_phdr(find_cb, c);
    if (c->found) {
        g_self_lo = c->lo;
        g_self_hi = c->hi;
    }
    __libc_free(c);
}

__attribute__((constructor)) static void preload_init(void)
{
    t_guard++;
    g_page = sysconf(_SC_PAGESIZE);
    if (g_page <= 0)
        g_page = 4096;
    g_pid = (uint32_t)getpid();
    real_mmap = (void *(*)(void *, size_t, int, int, int, off_t))dlsym(RTLD_NEXT, "mmap");
    real_munmap = (int (*)(void *, size_t))dlsym(RTLD_NEXT, "munmap");
    real_mremap = (void *(*)(void *, size_t, size_t, int, ...))dlsym(RTLD_NEXT, "mremap");
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&C_bg, &ca);
    pthread_condattr_destroy(&ca);

    const char *v = getenv("SWAPLAB_ALLOC_MIN");
    if (v && *v)
        g_min = parse_size_env("SWAPLAB_ALLOC_MIN", v, g_min);
    const char *dir = getenv("SWAPLAB_ALLOC_DIR");
    if (dir && *dir) {
        if (strlen(dir) >= sizeof g_dir - 1) {
            say("SWAPLAB_ALLOC_DIR is too long; allocation logging is off");
        } else {
            memcpy(g_dir, dir, strlen(dir) + 1);
            if (log_open((uint32_t)getppid(), 0) == 0)
                g_logging = 1;
        }
    }
    const char *hs = getenv("SWAPLAB_HEAP_SAMPLE");
    if (hs && *hs && strcmp(hs, "off") && strcmp(hs, "0") && g_logging) {
        g_sample = parse_size_env("SWAPLAB_HEAP_SAMPLE", hs, 512 * 1024);
        const char *seed = getenv("SWAPLAB_HEAP_SAMPLE_SEED");
        g_sample_seed = seed && *seed ? strtoull(seed, NULL, 10) : now_ns() ^ g_pid;
    }
    const char *gate = getenv("SWAPLAB_DEBUG_BG_GATE");
    if (gate && *gate) {
        int r, w;
        if (sscanf(gate, "%d,%d", &r, &w) == 2 && r >= 0 && w >= 0) {
            g_gate_r = r;
            g_gate_w = w;
        }
    }
    const char *hints = getenv("SWAPLAB_HINTS");
    if (hints && *hints)
        hints_load(hints);
    const char *pf = getenv("SWAPLAB_PREFETCH");
    int prefetch = pf && !strcmp(pf, "thread");
    if (pf && *pf && !prefetch)
        say("SWAPLAB_PREFETCH=%s: unknown (expected `thread`); no prefetch thread", pf);
    const char *rep = getenv("SWAPLAB_HINT_REPORT");
    if (rep && *rep && (g_nhints || prefetch)) {
        g_report_fd = open(rep, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (g_report_fd < 0)
            say("cannot open the hint report %s: %s", rep, strerror(errno));
    }
    if (prefetch) {
        const char *pa = getenv("SWAPLAB_PREFETCH_ARGS");
        if (pa && *pa)
            pf_args(pa);
        pf_start();
    }
    if (g_logging || g_nhints) {
        void *bt[4];
        backtrace(bt, 4); /* loads libgcc_s now, not inside a hook */
        self_range();
        g_active = 1;
    }
    if (g_active || g_pf_on) /* a forked child restarts what it needs */
        pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
    t_guard--;
}

__attribute__((destructor)) static void preload_fini(void)
{
    if (g_pf_stats) {
        uint64_t st[3];
        swaplab_preload_pf_stats(st);
        say("prefetch thread: %llu major-fault samples, %llu switches of sampling, sparse at exit: "
            "%llu",
            (unsigned long long)st[0], (unsigned long long)st[1], (unsigned long long)st[2]);
    }
    if (!g_logging)
        return;
    pthread_mutex_lock(&L_log);
    flush_locked();
    g_exiting = 1; /* from now on every record is written at once */
    pthread_mutex_unlock(&L_log);
    uint64_t full = __atomic_load_n(&g_smp_full, __ATOMIC_RELAXED);
    if (full)
        say("%llu small allocations were not sampled: more than %u sampled ones were live "
            "(raise SWAPLAB_HEAP_SAMPLE)",
            (unsigned long long)full, SMP_CAP / 2);
}
