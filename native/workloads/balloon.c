/* swaplab-workload balloon: holds memory away from the rest of the machine
 * (bench reclaim --machine-mem, issue 10 §3).
 *
 *   swaplab-workload balloon --size SIZE
 *
 * Maps SIZE bytes of anonymous memory and mlocks it in 64 MiB steps (mlock
 * faults every page in and makes it unevictable, so neither reclaim nor
 * swap can take it back), prints one JSON line on stdout when it holds all
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
