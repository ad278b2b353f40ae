/* Hint application: mlock at once; willneed, cold and pageout on one
 * background thread. */
#include "preload.h"

/* ---- hint application ---- */
void hint_event(uint32_t hint_id, uint32_t action, uint64_t addr, uint64_t len, int result)
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
size_t g_bg_n;
static size_t g_bg_cap;
static uint64_t g_bg_seq;
int g_bg_started;
int g_pagemap_fd = -1;
/* The range the thread is working on without L_bg (madvise, mincore,
 * pagemap): bg_remove waits on C_done until it is done with it. */
int g_busy;
static uint64_t g_busy_lo, g_busy_hi;
/* Tests only (SWAPLAB_DEBUG_BG_GATE=R,W): before each piece of work, with
 * no lock held, the thread writes one byte to W and reads one from R (EOF
 * on R turns the gate off). */
int g_gate_r = -1, g_gate_w = -1;

static void *bg_main(void *arg);

void bg_start_locked(void)
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
void bg_remove(uint64_t a, uint64_t n)
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
void apply_hint(int k, struct live_ent *e)
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
            r = sys_mlock((void *)e->addr, bytes) ? errno : 0;
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
void release(const struct live_ent *e, uint64_t addr, uint64_t len, uint32_t func,
                    int unlock)
{
    if (e->flags & LF_BG)
        bg_remove(e->addr, e->size);
    if (e->locked) {
        if (unlock)
            sys_munlock((void *)e->addr, e->locked);
        __atomic_fetch_sub(&g_locked, e->locked, __ATOMIC_RELAXED);
    }
    log_alloc(REC_FREE, func, addr, len, 0);
}

/* Forgets mappings (a list from the tree) that went away unseen: no FREE,
 * the thread lets go of them, their mlock budget comes back. */
void drop_stale(struct mnode *list)
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
