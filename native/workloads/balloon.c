/* swaplab-workload balloon: holds memory away from the rest of the machine
 * (bench reclaim --machine-mem, issue 10 §3).
 *
 *   swaplab-workload balloon --size SIZE
 *
 * Maps SIZE bytes of anonymous memory, faults it in on one thread per CPU
 * and mlocks it in 64 MiB steps (unevictable, so neither reclaim nor swap
 * can take it back), prints one JSON line on stdout when it holds all
 * of it, then sleeps until killed. swaplab starts it in its own journaled
 * cgroup with PR_SET_PDEATHSIG, and a watchdog kills it when the machine's
 * available memory or its memory pressure crosses a safety threshold. */
#define _GNU_SOURCE
#include "common.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define STEP (64UL << 20)

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

/* One filling thread: every nth STEP of the mapping, from its first. */
struct filler {
    char *p;
    uint64_t size;
    unsigned first, n;
    int err; /* errno of a failed populate, 0 when all went well */
    uint64_t at;
};

static void *fill(void *arg)
{
    struct filler *f = arg;
    for (uint64_t off = (uint64_t)f->first * STEP; off < f->size; off += (uint64_t)f->n * STEP) {
        uint64_t len = f->size - off < STEP ? f->size - off : STEP;
        if (madvise(f->p + off, len, MADV_POPULATE_WRITE) != 0) {
            f->err = errno;
            f->at = off;
            return NULL;
        }
    }
    return NULL;
}

int run_balloon(int argc, char **argv)
{
    uint64_t size = 0;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            puts("usage: swaplab-workload balloon --size SIZE");
            return EXIT_OK;
        }
        if (!v)
            die(EXIT_USAGE, "balloon: %s needs a value (see --help)", a);
        i++;
        if (!strcmp(a, "--size")) {
            if (parse_size(v, &size) || size == 0)
                die(EXIT_USAGE, "balloon: --size '%s' is not a size such as 1G", v);
        } else
            die(EXIT_USAGE, "balloon: unknown argument '%s' (see --help)", a);
    }
    if (!size)
        die(EXIT_USAGE, "balloon: --size is required");
    char *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (p == MAP_FAILED)
        die(EXIT_NOMEM, "balloon: cannot map %llu bytes: %s", (unsigned long long)size,
            strerror(errno));
    /* Huge pages where the kernel has them (THP "madvise" or "always"):
     * 512 times fewer faults to fill, the same memory held. On this kind
     * of machine (a VM) 4 KiB faults filled 23 GB in ~57 s of system
     * time. A hint: ignored where THP is off or the call fails. */
    (void)madvise(p, size, MADV_HUGEPAGE);
    uint64_t t0 = now_ns();
    /* The mapping is locked on fault first (mlock2 MLOCK_ONFAULT: every
     * page is unevictable from the moment it is faulted in, so reclaim
     * never takes the balloon's own pages while it fills the machine),
     * then faulted in by one thread per CPU (MADV_POPULATE_WRITE: faults
     * under the mmap read lock, so they run in parallel). On a VM the
     * cost is the hypervisor backing each page the guest touches for the
     * first time: 8 GiB of cold memory took 19.9 s on one thread and
     * 10.1-10.4 s on two of this kind of 2-CPU machine. The mlock steps
     * below then find every page there; where the kernel has neither call
     * (EINVAL), they fault the pages in themselves, as before. */
    if (mlock2(p, size, MLOCK_ONFAULT) == 0) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        unsigned n = cpus < 1 ? 1 : cpus > 16 ? 16 : (unsigned)cpus;
        struct filler fillers[16];
        for (unsigned i = 0; i < n; i++)
            fillers[i] = (struct filler){.p = p, .size = size, .first = i, .n = n};
        run_threads(n, fill, fillers, sizeof fillers[0]);
        for (unsigned i = 0; i < n; i++)
            if (fillers[i].err && fillers[i].err != EINVAL)
                die(EXIT_NOMEM, "balloon: faulting in at %llu of %llu bytes: %s (the memory is gone)",
                    (unsigned long long)fillers[i].at, (unsigned long long)size,
                    strerror(fillers[i].err));
    }
    for (uint64_t off = 0; off < size; off += STEP) {
        uint64_t len = size - off < STEP ? size - off : STEP;
        if (mlock(p + off, len) != 0)
            die(EXIT_NOMEM, "balloon: mlock at %llu of %llu bytes: %s (RLIMIT_MEMLOCK, or the memory is gone)",
                (unsigned long long)off, (unsigned long long)size, strerror(errno));
    }
    printf("{\"balloon\":\"ready\",\"bytes\":%llu,\"inflate_ns\":%llu}\n", (unsigned long long)size,
           (unsigned long long)(now_ns() - t0));
    fflush(stdout);
    for (;;)
        pause();
}
