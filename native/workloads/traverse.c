/* traverse: sequential read-modify-write sweeps (a[i] += i) over an array of
 * SIZE bytes, --passes times (default 4).  With --threads N each thread sweeps
 * its own contiguous 1/N of the array.  With --fork the parent allocates and
 * fills the array, then a forked child does the sweeps (copy-on-write) while
 * the parent waits.  The checksum is the sum of every word read, so it does
 * not depend on --threads or --fork.  work = bytes swept. */
#define _GNU_SOURCE
#include "common.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

struct part {
    uint64_t *a;
    uint64_t begin, end;
    uint64_t passes;
    uint64_t seedmix;
    uint64_t sum;
    char pad[64];
};

static void *fill_part(void *arg)
{
    struct part *p = arg;
    for (uint64_t i = p->begin; i < p->end; i++) {
        REF(&p->a[i], 1);
        p->a[i] = mix64(p->seedmix + i);
    }
    return NULL;
}

static void *sweep_part(void *arg)
{
    struct part *p = arg;
    uint64_t *a = p->a, sum = 0;
    for (uint64_t pass = 0; pass < p->passes; pass++)
        for (uint64_t i = p->begin; i < p->end; i++) {
            REF(&a[i], 1);
            uint64_t v = a[i];
            sum += v;
            a[i] = v + i;
        }
    p->sum = sum;
    return NULL;
}

static uint64_t sweep_all(struct part *parts, unsigned n)
{
    run_threads(n, sweep_part, parts, sizeof *parts);
    uint64_t sum = 0;
    for (unsigned t = 0; t < n; t++)
        sum += parts[t].sum;
    return sum;
}

int run_traverse(const struct opts *o, struct result *r)
{
    uint64_t t0 = now_ns();
    uint64_t n = o->size / sizeof(uint64_t);
    size_t bytes = n * sizeof(uint64_t);
    uint64_t passes = o->passes ? o->passes : 4;
    unsigned nt = o->threads;
    if (nt > n)
        nt = (unsigned)n;

    uint64_t *a = xmalloc(o, "array", bytes);
    report_object(o, "array", a, bytes);
    struct part *parts = xcalloc(o, "thread table", nt, sizeof *parts);
    for (unsigned t = 0; t < nt; t++) {
        parts[t].a = a;
        parts[t].begin = part_begin(n, nt, t);
        parts[t].end = part_begin(n, nt, t + 1);
        parts[t].passes = passes;
        parts[t].seedmix = mix64(o->seed ^ 0x7261766572736531ULL);
    }
    uint64_t locked = hints_before_fill(o, a, bytes);
    run_threads(nt, fill_part, parts, sizeof *parts);
    hints_after_fill(o, a, bytes);
    uint64_t t1 = now_ns();
    setup_done(o);
    uint64_t t2 = now_ns();

    uint64_t sum;
    long child = 0;
    if (!o->fork) {
        sum = sweep_all(parts, nt);
    } else {
        int fds[2];
        if (pipe(fds))
            die(EXIT_FAIL, "traverse: pipe: %s", strerror(errno));
        fflush(stdout);
        fflush(stderr);
        pid_t pid = fork();
        if (pid < 0)
            die(EXIT_FAIL, "traverse: fork: %s", strerror(errno));
        if (pid == 0) {
            close(fds[0]);
            uint64_t s = sweep_all(parts, nt);
            ssize_t w = write(fds[1], &s, sizeof s);
            _exit(w == (ssize_t)sizeof s ? 0 : EXIT_FAIL);
        }
        close(fds[1]);
        child = pid;
        ssize_t got;
        do
            got = read(fds[0], &sum, sizeof sum);
        while (got < 0 && errno == EINTR);
        close(fds[0]);
        int status = 0;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
            ;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            if (WIFSIGNALED(status))
                die(EXIT_FAIL, "traverse: child %d killed by signal %d", (int)pid,
                    WTERMSIG(status));
            die(EXIT_FAIL, "traverse: child %d failed (exit %d)", (int)pid,
                WEXITSTATUS(status));
        }
        if (got != (ssize_t)sizeof sum)
            die(EXIT_FAIL, "traverse: no result from child %d", (int)pid);
    }
    uint64_t t3 = now_ns();

    r->work = passes * bytes;
    r->checksum = mix64(sum ^ mix64(n));
    r->setup_ns = t1 - t0;
    r->work_ns = t3 - t2;
    if (o->fork)
        snprintf(r->extra, sizeof r->extra, "\"passes\":%llu,\"fork\":true,\"child_pid\":%ld",
                 (unsigned long long)passes, child);
    else
        snprintf(r->extra, sizeof r->extra, "\"passes\":%llu,\"mlocked\":%llu,\"madvise\":%u",
                 (unsigned long long)passes, (unsigned long long)locked, o->madvise);
    free(parts);
    free(a);
    return EXIT_OK;
}
