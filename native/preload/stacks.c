/* Call stacks (a table by hash, under L_stk) and the modules their frames
 * are in: STACK and MODULE records, and the hints a stack matches. */
#include "preload.h"

/* ---- modules and stacks ---- */
struct module g_mods[MAX_MODULES];
int g_nmods;
uint32_t g_next_mod_id;

int find_cb(struct dl_phdr_info *info, size_t size, void *data)
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

/* ---- stacks ---- */
struct stk_ent *g_stk;
size_t g_stk_cap, g_stk_n;
uint32_t g_next_stack;

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

void capture(uint32_t *id, struct site_hints *sh)
{
    void *bt[MAX_FRAMES + BT_EXTRA];
    int n = __backtrace(bt, MAX_FRAMES + BT_EXTRA);
    int s = 0;
    while (s < n && (uintptr_t)bt[s] >= g_self_lo && (uintptr_t)bt[s] < g_self_hi)
        s++;
    int d = n - s;
    if (d > MAX_FRAMES)
        d = MAX_FRAMES;
    stack_get(bt + s, d, id, sh);
}
