/* A test program for the external prefetcher (crates/lab/tests/it/prefetch.rs).
 *
 *   prefetch_walker NPAGES WALK STEP_US MODE
 *
 * Maps NPAGES anonymous pages, writes each, pages them all out itself
 * (MADV_PAGEOUT, repeated until mincore(2) shows at most 1 % resident: right
 * after a pageout to a swap file the pages still sit in the swap cache under
 * writeback), then reads pages 0..WALK-1 in order, one every STEP_US µs.
 * MODE:
 *   check  - then sleeps 300 ms and prints one JSON line with the region's
 *            base address and mincore(2) of every page after the walk as a
 *            string of 0/1 ('1' = resident or in the swap cache);
 *   exit   - exits right after the walk (while the prefetcher acts);
 *   unmap  - munmaps the region right after the walk, sleeps 300 ms, exits.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21
#endif

static size_t resident(unsigned char *v, uint8_t *a, size_t len, size_t ps)
{
    if (mincore(a, len, v) != 0) {
        perror("mincore");
        exit(2);
    }
    size_t n = 0;
    for (size_t i = 0; i < len / ps; i++)
        n += v[i] & 1;
    return n;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: %s NPAGES WALK STEP_US check|exit|unmap\n", argv[0]);
        return 2;
    }
    size_t n = strtoull(argv[1], NULL, 10), walk = strtoull(argv[2], NULL, 10);
    long step_us = strtol(argv[3], NULL, 10);
    const char *mode = argv[4];
    size_t ps = (size_t)sysconf(_SC_PAGESIZE), len = n * ps;
    uint8_t *a = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (a == MAP_FAILED) {
        perror("mmap");
        return 2;
    }
    madvise(a, len, MADV_NOHUGEPAGE);
    for (size_t i = 0; i < n; i++)
        memset(a + i * ps, (int)(i & 0xff) | 1, ps);
    unsigned char *v = malloc(n);
    size_t left = n;
    for (int tries = 0; tries < 100; tries++) {
        if (madvise(a, len, MADV_PAGEOUT) != 0) {
            perror("madvise(MADV_PAGEOUT)");
            return 2;
        }
        left = resident(v, a, len, ps);
        if (left * 100 <= n)
            break;
        usleep(20000);
    }
    if (left * 100 > n) {
        fprintf(stderr, "could not page out: %zu of %zu pages resident\n", left, n);
        return 3;
    }
    volatile uint64_t sum = 0;
    struct timespec d = {0, step_us * 1000};
    for (size_t i = 0; i < walk && i < n; i++) {
        sum += a[i * ps];
        if (step_us > 0)
            nanosleep(&d, NULL);
    }
    if (strcmp(mode, "exit") == 0)
        return 0;
    if (strcmp(mode, "unmap") == 0) {
        munmap(a, len);
        usleep(300000);
        return 0;
    }
    usleep(300000);
    resident(v, a, len, ps);
    printf("{\"base\":%llu,\"pages\":%zu,\"walked\":%zu,\"resident\":\"",
           (unsigned long long)(uintptr_t)a, n, walk);
    for (size_t i = 0; i < n; i++)
        putchar('0' + (v[i] & 1));
    printf("\"}\n");
    return 0;
}
