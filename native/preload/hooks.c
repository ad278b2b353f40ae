/* The interposed functions: malloc and friends, free, mmap, munmap and
 * mremap, and what they record. */
#include "preload.h"

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

NOSAN static inline int tracking(void)
{
    return g_active && !t_guard;
}

/* ---- the sampler's fast paths (the rest: sample.c) ---- */
/* A small allocation of n bytes at p: sample it when the count runs out. */
NOSAN static inline void small_alloc(void *p, uint64_t n, uint32_t func)
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
NOSAN static inline void small_free(void *p, uint32_t func)
{
    if (!p || !__atomic_load_n(&g_smp_n, __ATOMIC_RELAXED))
        return;
    int saved = errno;
    t_guard++;
    uint64_t a = (uint64_t)(uintptr_t)p;
    if (smp_take(a))
        log_alloc(REC_FREE, func, a, libc_usable_size(p), 0);
    t_guard--;
    errno = saved;
}

/* Could p be a tracked heap object? (cheap, lock-free) */
NOSAN static inline int maybe_tracked(void *p)
{
    return p && __atomic_load_n(&g_live_n, __ATOMIC_RELAXED) && libc_usable_size(p) >= g_min;
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
                    sys_munlock((void *)(moved + (s - lo)), ue - s);
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
            sys_munlock((void *)(moved + (s - lo)), le - s);
        if (lend > hi)
            sys_munlock((void *)hi, lend - hi);
        __atomic_fetch_sub(&g_locked, lend - s, __ATOMIC_RELAXED);
        m->locked = s - m->addr;
    }
    errno = saved;
    unmap_abort(op); /* back into the tree */
}

/* ---- the interposed functions ---- */
HOOK void *malloc(size_t n)
{
    void *p = __libc_malloc(n);
    if (n < g_min)
        small_alloc(p, n, F_MALLOC);
    else if (p && tracking())
        on_alloc(p, n, F_MALLOC, KIND_HEAP);
    return p;
}

/* The size of a block the hooks gave out, from the allocator that made it
 * (glibc), whatever allocator the program linked (preload.h). */
HOOK size_t malloc_usable_size(void *p)
{
    return libc_usable_size(p);
}

HOOK void *calloc(size_t n, size_t m)
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

HOOK void free(void *p)
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

HOOK void *realloc(void *old, size_t n)
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
                sys_munlock((void *)e.addr, e.locked);
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

HOOK int posix_memalign(void **out, size_t align, size_t n)
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

HOOK void *aligned_alloc(size_t align, size_t n)
{
    void *p = __libc_memalign(align, n);
    if (n < g_min)
        small_alloc(p, n, F_ALIGNED_ALLOC);
    else if (p && tracking())
        on_alloc(p, n, F_ALIGNED_ALLOC, KIND_HEAP);
    return p;
}

HOOK void *memalign(size_t align, size_t n)
{
    void *p = __libc_memalign(align, n);
    if (n < g_min)
        small_alloc(p, n, F_MEMALIGN);
    else if (p && tracking())
        on_alloc(p, n, F_MEMALIGN, KIND_HEAP);
    return p;
}

HOOK void *valloc(size_t n)
{
    void *p = __libc_valloc(n);
    if (n < g_min)
        small_alloc(p, n, F_VALLOC);
    else if (p && tracking())
        on_alloc(p, n, F_VALLOC, KIND_HEAP);
    return p;
}

HOOK void *pvalloc(size_t n)
{
    void *p = __libc_pvalloc(n);
    if (n < g_min)
        small_alloc(p, n, F_PVALLOC);
    else if (p && tracking())
        on_alloc(p, n, F_PVALLOC, KIND_HEAP);
    return p;
}

HOOK void *mmap(void *a, size_t n, int prot, int flags, int fd, off_t off)
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

HOOK void *mmap64(void *a, size_t n, int prot, int flags, int fd, off_t off)
{
    return mmap(a, n, prot, flags, fd, off);
}

HOOK int munmap(void *a, size_t n)
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

HOOK void *mremap(void *old, size_t oldn, size_t n, int flags, ...)
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
