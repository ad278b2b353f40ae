/* preload.h: the private header of libswaplab-preload.so (native/preload).
 *
 * What the library does, its environment, the log format and the hints
 * file are described at the top of preload.c.  The library is split by
 * concern, one file each:
 *
 *   preload.c   the constructor and destructor (environment), fork handlers
 *   state.c     shared state, the locks, small helpers and parsers
 *   log.c       the allocation log (allocs.<pid>.bin) and its buffer
 *   tables.c    tracked heap objects (hash) and mappings (treap)
 *   stacks.c    call stacks and the modules their frames are in
 *   hints.c     the resolved-hints file
 *   apply.c     hint application and the background thread
 *   sample.c    sampling of allocations below the threshold
 *   hooks.c     the interposed functions
 *   prefetch.c  the trend-based prefetch thread
 *
 * Everything declared here is hidden (visibility pragma below): the
 * library exports only the interposed functions and the two stats
 * functions (EXPORT), so its internal names never interpose a program's.
 */
#ifndef SWAPLAB_PRELOAD_H
#define SWAPLAB_PRELOAD_H

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
/* Not instrumented in a sanitizer build (native/Makefile's tsan and asan):
 * the sanitizer's runtime calls malloc, free and mmap while it starts,
 * before it can track anything, and those calls reach the interposed
 * functions (HOOK) and what they call before tracking() (see hooks.c). */
#define NOSAN __attribute__((no_sanitize("thread", "address")))
#define HOOK EXPORT NOSAN

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
/* glibc's backtrace (sanitizer runtimes interpose `backtrace` with a frame
 * of their own, which would end the skipping of this library's frames) */
extern int __backtrace(void **, int);

/* Exported besides the interposed functions (tests). */
EXPORT void swaplab_preload_stats(uint64_t out[4]);
EXPORT void swaplab_preload_pf_stats(uint64_t out[3]);

#pragma GCC visibility push(hidden)

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
extern const char *const ACTION_NAMES[]; /* by action; "" for 0 (hints.c) */

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

/* ---- locks ----
 * In nesting order: L_stk, L_bg, L_tab before L_log (innermost); L_smp
 * (sampled addresses) is taken alone.  atfork_prepare takes them all in
 * the order L_stk, L_bg, L_tab, L_smp, L_log.  None of them is held across
 * dl_iterate_phdr (the dynamic linker's lock, which a program's own
 * dl_iterate_phdr callback holds while it allocates: see module_find),
 * madvise, mincore or mlock.
 *
 *   L_stk   the stack table and the module cache (stacks.c); held while a
 *           new stack's STACK and MODULE records are logged (L_log inside)
 *   L_bg    the background objects and the thread's busy range (apply.c)
 *   L_tab   tracked heap objects and mappings (tables.c)
 *   L_log   the log buffer and descriptor (log.c)
 *   L_smp   sampled addresses (sample.c)
 *   C_bg    new background work (with L_bg)
 *   C_done  the background thread left a range (with L_bg) */
extern pthread_mutex_t L_log, L_tab, L_stk, L_bg, L_smp;
extern pthread_cond_t C_bg, C_done;

/* ---- state.c: shared state and small helpers ---- */
extern int g_active;  /* tracking on (log or hints) */
extern int g_logging; /* log file open */
extern uint64_t g_min;
extern long g_page;
extern char g_dir[PATH_MAX];
extern uint32_t g_pid;
extern int g_report_fd;
extern TLS int t_guard;
extern TLS uint32_t t_tid;
extern void *(*real_mmap)(void *, size_t, int, int, int, off_t);
extern int (*real_munmap)(void *, size_t);
extern void *(*real_mremap)(void *, size_t, size_t, int, ...);
extern uintptr_t g_self_lo, g_self_hi;

uint64_t now_ns(void);
uint32_t my_tid(void);
uint64_t mix64(uint64_t z);
void write_all(int fd, const void *p, size_t n);
/* One stderr line, without stdio (no allocation, no locks). */
void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
const char *errname(int e);
void *sys_mmap(void *a, size_t n, int prot, int flags, int fd, off_t off);
int sys_munmap(void *a, size_t n);
/* mlock and munlock as system calls (sanitizer runtimes interpose them
 * with calls that do nothing) */
int sys_mlock(const void *a, size_t n);
int sys_munlock(const void *a, size_t n);
/* glibc's malloc_usable_size, found with dlsym in libc itself (on first use
 * or by libc_usable_size_init in the constructor): this library allocates
 * with __libc_malloc, and the program's own malloc_usable_size may be
 * another allocator's (a program linked with libjemalloc, such as Debian's
 * redis-server, gets glibc's blocks through the hooks and asked jemalloc
 * their size: SIGSEGV), or AddressSanitizer's, which refuses glibc's
 * blocks. The library exports malloc_usable_size too (hooks.c). */
size_t libc_usable_size(void *p);
void libc_usable_size_init(void);
int parse_u64(const char *s, int base, uint64_t *out);
uint64_t parse_size_env(const char *name, const char *v, uint64_t dflt);

/* ---- log.c: the log ---- */
extern int g_log_fd;
extern size_t g_buf_len;
extern int g_exiting;
void flush_locked(void); /* under L_log */
void log_append(const void *rec, size_t n);
int log_open(uint32_t ppid, uint32_t flags);
void log_alloc(uint32_t type, uint32_t func, uint64_t addr, uint64_t size, uint32_t stack);

/* ---- tables.c: tracked heap objects and mappings (under L_tab) ---- */
struct live_ent {
    uint64_t addr, size, locked; /* locked: bytes mlocked from addr (a prefix) */
    uint32_t kind, flags;
};
struct mnode {
    uint64_t addr, size, locked; /* locked: bytes mlocked from addr (a prefix) */
    uint32_t flags, prio;
    struct mnode *l, *r;
};
extern struct live_ent *g_live;
extern size_t g_live_cap, g_live_n; /* g_live_n: atomic reads without the lock */
extern struct mnode *g_mroot;
extern size_t g_mcount; /* nodes in the tree (read without the lock) */
void live_insert(const struct live_ent *e);
int live_take(uint64_t a, struct live_ent *out);
struct mnode *mnode_new(void);
void mnode_free_list(struct mnode *list);
struct mnode *mtree_detach(uint64_t lo, uint64_t hi);
struct mnode *mtree_insert(struct mnode *n);
void mtree_forget_locks(struct mnode *t);

/* ---- hints.c: the hints (the list is fixed after the constructor) ---- */
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
extern struct hint *g_hints;
extern int g_nhints;
extern uint64_t g_budget;
extern uint64_t g_locked; /* atomic: mlocked bytes of the process */

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
void hints_load(const char *file);

/* ---- stacks.c: modules and stacks (under L_stk) ---- */
struct module {
    uintptr_t lo, hi, base;
    uint32_t id; /* 0 until written to the log */
    char *path;
};
struct find_ctx {
    uintptr_t a;
    int found, index;
    uintptr_t lo, hi, base;
    char name[PATH_MAX];
};
extern struct module g_mods[MAX_MODULES];
extern int g_nmods;
extern uint32_t g_next_mod_id;
extern struct stk_ent *g_stk;
extern size_t g_stk_cap, g_stk_n;
extern uint32_t g_next_stack;
int find_cb(struct dl_phdr_info *info, size_t size, void *data);
void capture(uint32_t *id, struct site_hints *sh);

/* ---- apply.c: hint application and the background thread ---- */
extern size_t g_bg_n;
extern int g_bg_started;
extern int g_pagemap_fd;
extern int g_busy;
extern int g_gate_r, g_gate_w;
void hint_event(uint32_t hint_id, uint32_t action, uint64_t addr, uint64_t len, int result);
void bg_start_locked(void); /* under L_bg */
void bg_remove(uint64_t a, uint64_t n);
void apply_hint(int k, struct live_ent *e);
void release(const struct live_ent *e, uint64_t addr, uint64_t len, uint32_t func, int unlock);
void drop_stale(struct mnode *list);

/* ---- sample.c: sampling below the threshold ---- */
#define SMP_CAP (1u << 17)
extern uint64_t g_sample; /* R in bytes; 0 = off */
extern uint64_t g_sample_seed;
extern size_t g_smp_n;      /* entries (atomic reads) */
extern uint64_t g_smp_full; /* samples skipped: table full (atomic) */
extern TLS int64_t t_left;
extern TLS int t_sinit;
int64_t smp_draw(void);
int smp_take(uint64_t a);
void on_sample(void *p, uint64_t size, uint32_t func);

/* ---- prefetch.c: the trend-based prefetch thread ---- */
extern uint64_t g_pf_stats;
extern int g_pf_on;
void pf_args(const char *v);
void pf_start(void);
void pf_forked(void);

#pragma GCC visibility pop

#endif
