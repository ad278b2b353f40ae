/* Shared state, the locks, small helpers and parsers (see preload.h). */
#include "preload.h"

/* ---- state ---- */
int g_active;            /* tracking on (log or hints) */
int g_logging;           /* log file open */
uint64_t g_min = 65536;
long g_page = 4096;
char g_dir[PATH_MAX];
uint32_t g_pid;
int g_report_fd = -1;

TLS int t_guard;
TLS uint32_t t_tid;

void *(*real_mmap)(void *, size_t, int, int, int, off_t);
int (*real_munmap)(void *, size_t);
void *(*real_mremap)(void *, size_t, size_t, int, ...);

uintptr_t g_self_lo, g_self_hi;

/* the locks (their order: preload.h) */
pthread_mutex_t L_log = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t L_tab = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t L_stk = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t L_bg = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t L_smp = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t C_bg;   /* new background work (with L_bg) */
pthread_cond_t C_done = PTHREAD_COND_INITIALIZER; /* the background thread left a range (with L_bg) */

/* ---- small helpers ---- */
uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint32_t my_tid(void)
{
    if (!t_tid)
        t_tid = (uint32_t)syscall(SYS_gettid);
    return t_tid;
}

uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void write_all(int fd, const void *p, size_t n)
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

void say(const char *fmt, ...)
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

const char *errname(int e)
{
    const char *s = strerrorname_np(e);
    return s ? s : "EUNKNOWN";
}

NOSAN void *sys_mmap(void *a, size_t n, int prot, int flags, int fd, off_t off)
{
    if (real_mmap)
        return real_mmap(a, n, prot, flags, fd, off);
    return (void *)syscall(SYS_mmap, a, n, prot, flags, fd, off);
}

NOSAN int sys_munmap(void *a, size_t n)
{
    if (real_munmap)
        return real_munmap(a, n);
    return (int)syscall(SYS_munmap, a, n);
}

int sys_mlock(const void *a, size_t n)
{
    return (int)syscall(SYS_mlock, a, n);
}

int sys_munlock(const void *a, size_t n)
{
    return (int)syscall(SYS_munlock, a, n);
}

static size_t (*libc_mus)(void *);

NOSAN void libc_usable_size_init(void)
{
    if (__atomic_load_n(&libc_mus, __ATOMIC_ACQUIRE))
        return;
    void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    size_t (*f)(void *) = libc ? (size_t(*)(void *))dlsym(libc, "malloc_usable_size") : NULL;
    if (!f)
        say("glibc's malloc_usable_size not found; frees of tracked heap objects are not seen");
    else
        __atomic_store_n(&libc_mus, f, __ATOMIC_RELEASE);
}

NOSAN size_t libc_usable_size(void *p)
{
    size_t (*f)(void *) = __atomic_load_n(&libc_mus, __ATOMIC_ACQUIRE);
    if (!f) {
        libc_usable_size_init();
        f = __atomic_load_n(&libc_mus, __ATOMIC_ACQUIRE);
    }
    return f && p ? f(p) : 0;
}

/* ---- parsers ---- */
int parse_u64(const char *s, int base, uint64_t *out)
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

/* A size in bytes with an optional K/M/G suffix (powers of 1024) from
 * variable `name`; dflt (and one stderr line) when it is not one. */
uint64_t parse_size_env(const char *name, const char *v, uint64_t dflt)
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
