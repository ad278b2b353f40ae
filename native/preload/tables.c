/* What the library tracks: heap objects (a hash table by address) and
 * mappings (a treap by start address), both under L_tab. */
#include "preload.h"

/* ---- tracked heap objects: open addressing by address ----
 * (free() must stay cheap: one hash probe).  Mappings (mmap, mremap) live
 * in the treap below, which answers "every tracked mapping overlapping
 * [a, a+n)" for munmap, MAP_FIXED and mremap. */
struct live_ent *g_live;
size_t g_live_cap, g_live_n;

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

void live_insert(const struct live_ent *e)
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
int live_take(uint64_t a, struct live_ent *out)
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
struct mnode *g_mroot;
static struct mnode *g_mfree; /* free nodes, chained through l */
size_t g_mcount;       /* nodes in the tree (read without the lock) */
static uint64_t g_mseq, g_mops, g_msteps;

struct mnode *mnode_new(void)
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

void mnode_free_list(struct mnode *list)
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
struct mnode *mtree_detach(uint64_t lo, uint64_t hi)
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
struct mnode *mtree_insert(struct mnode *n)
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

void mtree_forget_locks(struct mnode *t)
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
