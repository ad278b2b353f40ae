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
 *
 * Sources: this file holds the constructor, the destructor and the fork
 * handlers; preload.h, the private header, says which file holds the rest,
 * and the order of the locks.
 */
#include "preload.h"

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
    libc_usable_size_init();
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
        __backtrace(bt, 4); /* loads libgcc_s now, not inside a hook */
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
