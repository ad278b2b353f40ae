/* The trend-based prefetch thread (SWAPLAB_PREFETCH=thread). */
#include "preload.h"

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
static uint64_t g_pf_max = 4u << 20, g_pf_interval_us = 1000, g_pf_hist = 16, g_pf_minor = 1;
uint64_t g_pf_stats; /* stats=1: print the thread's counters at exit */
int g_pf_on;         /* this process's prefetch thread runs (a fork restarts it) */
static int g_pf_inherit_thread = 1; /* 0: the kernel refused inherit_thread */
#define PF_MAX_CPUS 256
static int g_pf_n; /* rings: one per CPU (a per-task inherited event cannot be mapped) */
static struct perf_event_mmap_page *g_pf_mp[PF_MAX_CPUS];
static int g_pf_nmin; /* minor-fault rings, one per CPU (0 with minor=0) */
static struct perf_event_mmap_page *g_pf_min[PF_MAX_CPUS];
static int g_pf_fd[PF_MAX_CPUS], g_pf_mfd[PF_MAX_CPUS]; /* their events (sparse sampling) */
static int g_pf_sfd[PF_MAX_CPUS]; /* sparse major-fault events (-1: none), into g_pf_mp */
static int g_pf_can_sparse;        /* every CPU has its sparse event */
/* Sparse sampling: after PF_QUIET_NS without a trend, one major fault in
 * PF_SPARSE is sampled and minor faults not at all, as `run --prefetch
 * leap` does (docs/prefetch.md): a sample costs the faulting program 1-2.5
 * us, which a random program on zram (faults of ~15 us) paid on every fault
 * while nothing could be prefetched.  A walk seen through every 16th fault
 * still shows a constant delta; then every fault is sampled again and the
 * history starts afresh.  Sparse sampling is a third event per CPU (period
 * PF_SPARSE, writing into the same ring), and a switch turns events on
 * and off (PERF_EVENT_IOC_ENABLE/_DISABLE, which reach every inherited
 * copy), as `run --prefetch leap` does.  A period change did not do:
 * PERF_EVENT_IOC_PERIOD reaches only the event it is called on, and with
 * the library's own threads beside it a one-threaded program kept being
 * sampled at every fault now and then (the probe's `trend` mode: 910
 * samples of 910 faults "sparse", in 2 of 4 runs with the allocation log
 * on).  The likely cause: the kernel swaps the cloned perf contexts of
 * two threads at a context switch (perf_event_context_sched_out), so the
 * main thread can hold an inherited copy. */
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
    /* on first, off second: no fault goes unsampled in between */
    for (int i = 0; i < g_pf_n; i++)
        if (g_pf_sfd[i] >= 0 && pf_is_perf(g_pf_sfd[i]) && pf_is_perf(g_pf_fd[i])) {
            ioctl(on ? g_pf_sfd[i] : g_pf_fd[i], PERF_EVENT_IOC_ENABLE, 0);
            ioctl(on ? g_pf_fd[i] : g_pf_sfd[i], PERF_EVENT_IOC_DISABLE, 0);
        }
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
        if (sparse || (g_pf_can_sparse && !trend && now_ns() - trend_ns > PF_QUIET_NS)) {
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

void pf_args(const char *v)
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

/* The sparse major-fault event of one CPU (period PF_SPARSE, off until a
 * switch), writing into the ring of the CPU's event `out`; -1 if the
 * kernel refused it (*err: the first errno; sparse sampling is then off). */
static int pf_open_sparse(const struct perf_event_attr *dense, int cpu, int out, int *err)
{
    struct perf_event_attr a = *dense;
    a.sample_period = PF_SPARSE;
    a.disabled = 1;
    int fd = (int)syscall(SYS_perf_event_open, &a, 0, cpu, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd >= 0 && ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, out) < 0) {
        int e = errno;
        close(fd);
        fd = -1;
        errno = e;
    }
    if (fd < 0 && !*err)
        *err = errno ? errno : EINVAL;
    return fd;
}

void pf_start(void)
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
    int err = 0, sparse_err = 0;
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
        g_pf_fd[g_pf_n] = fd; /* kept for sparse sampling */
        g_pf_sfd[g_pf_n] = pf_open_sparse(&a, (int)cpu, fd, &sparse_err);
        g_pf_mp[g_pf_n++] = m;
    }
    if (why || !g_pf_n) {
        say("SWAPLAB_PREFETCH=thread: %s (%s); no prefetch thread",
            why ? why : "no CPU took a perf event", strerror(err));
        for (int i = 0; i < g_pf_n; i++) {
            sys_munmap(g_pf_mp[i], (g_pf_pages + 1) * (size_t)g_page);
            close(g_pf_fd[i]);
            if (g_pf_sfd[i] >= 0)
                close(g_pf_sfd[i]);
        }
        g_pf_n = 0;
        return;
    }
    g_pf_can_sparse = !sparse_err;
    if (sparse_err)
        say("SWAPLAB_PREFETCH=thread: cannot open a sparse perf event (%s); every major fault "
            "stays sampled",
            strerror(sparse_err));
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
void pf_forked(void)
{
    if (!g_pf_on)
        return;
    g_pf_on = 0;
    for (int i = 0; i < g_pf_n; i++) {
        if (pf_is_perf(g_pf_fd[i])) /* (a program may have closed and reused it) */
            close(g_pf_fd[i]);
        if (g_pf_sfd[i] >= 0 && pf_is_perf(g_pf_sfd[i]))
            close(g_pf_sfd[i]);
    }
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
