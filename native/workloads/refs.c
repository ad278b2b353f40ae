/* Page references of the built-in workloads (`--refs-fd N`), for
 * `swaplab trace --refs -- swaplab-workload NAME ...` (issue 12 §2).
 *
 * The refs_NAME.c builds call refs_note for every access to the main
 * objects (the program's data: not its stack, code or libraries). Each
 * reference is one little-endian u64, (page << 1) | write, page =
 * address >> 12, streamed to the descriptor through a 512 KiB buffer.
 *
 * Immediate repeats: a run of references to one page is cut at
 * REFS_MAX_REPEAT (3); a cut reference that writes marks the last kept
 * one as a write (the page cannot be evicted between them, so its
 * dirtiness is the same). The cut is exact for every policy whose state
 * after k immediate references to a page stops changing by k = 3: LRU,
 * FIFO, OPT, CLOCK with 1 or 2 bits, Linux's lists, the RRIP family,
 * ARC, 2Q, LIRS, SIEVE and S3-FIFO (frequency capped at 3). It is not
 * exact for LFU and CLOCK with 3 or more bits, which count further. */
#define _GNU_SOURCE
#include "common.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#define RBUF (1u << 16)

static int rfd = -1;
static uint64_t rbuf[RBUF];
static size_t rn;
static uint64_t rlast = UINT64_MAX;
static unsigned rrun;
static uint64_t raccesses, rrecorded, rcollapsed;
static int rerr;

static void rwrite(const uint64_t *p, size_t n)
{
    const char *b = (const char *)p;
    size_t left = n * sizeof *p;
    while (left && !rerr) {
        ssize_t w = write(rfd, b, left);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            rerr = w < 0 ? errno : EIO;
            break;
        }
        b += w;
        left -= (size_t)w;
    }
}

void refs_start(int fd)
{
    rfd = fd;
}

void refs_note(uintptr_t addr, int write)
{
    uint64_t page = (uint64_t)addr >> PAGE_SHIFT_REFS;
    raccesses++;
    if (page == rlast) {
        if (rrun >= REFS_MAX_REPEAT) {
            rbuf[rn - 1] |= (uint64_t)(write != 0);
            rcollapsed++;
            return;
        }
        rrun++;
    } else {
        rlast = page;
        rrun = 1;
    }
    if (rn == RBUF) {
        /* Keep the newest in the buffer: a cut repeat may still mark it. */
        rwrite(rbuf, rn - 1);
        rbuf[0] = rbuf[rn - 1];
        rn = 1;
    }
    rbuf[rn++] = (page << 1) | (uint64_t)(write != 0);
    rrecorded++;
}

int refs_finish(uint64_t *accesses, uint64_t *recorded, uint64_t *collapsed)
{
    if (rfd >= 0 && rn) {
        rwrite(rbuf, rn);
        rn = 0;
    }
    *accesses = raccesses;
    *recorded = rrecorded;
    *collapsed = rcollapsed;
    if (rerr) {
        errno = rerr;
        return -1;
    }
    return 0;
}
