/* The resolved-hints file (SWAPLAB_HINTS; format: preload.c) and the
 * hints read from it. */
#include "preload.h"

/* ---- the hints file ---- */
const char *const ACTION_NAMES[] = {"", "mlock", "willneed", "cold", "pageout"};
struct hint *g_hints;
int g_nhints;
uint64_t g_budget;
uint64_t g_locked; /* atomic */

static void hints_free(void)
{
    for (int i = 0; i < g_nhints; i++)
        for (int f = 0; f < g_hints[i].nframes; f++)
            __libc_free(g_hints[i].paths[f]);
    __libc_free(g_hints);
    g_hints = NULL;
    g_nhints = 0;
}

/* Splits line at TABs into at most max fields (in place); the count. */
static int split_tabs(char *line, char **f, int max)
{
    int n = 0;
    char *p = line;
    for (;;) {
        if (n == max)
            return max + 1;
        f[n++] = p;
        char *t = strchr(p, '\t');
        if (!t)
            return n;
        *t = 0;
        p = t + 1;
    }
}

/* Parses the hints file; on any problem says `FILE:LINE: what` and clears. */
void hints_load(const char *file)
{
    int fd = open(file, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        say("%s: cannot open the hints file: %s; running without hints", file, strerror(errno));
        return;
    }
    size_t cap = 1 << 16, len = 0;
    char *buf = __libc_malloc(cap + 1);
    for (;;) {
        if (!buf)
            break;
        if (len == cap) {
            char *nb = __libc_realloc(buf, cap * 2 + 1);
            if (!nb) {
                __libc_free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
        ssize_t r = read(fd, buf + len, cap - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            say("%s: cannot read the hints file: %s; running without hints", file, strerror(errno));
            __libc_free(buf);
            close(fd);
            return;
        }
        if (r == 0)
            break;
        len += (size_t)r;
    }
    close(fd);
    if (!buf) {
        say("%s: out of memory reading the hints file; running without hints", file);
        return;
    }
    buf[len] = 0;
    int lineno = 0, seen_magic = 0, hcap = 0;
    char *line = buf;
    const char *err = NULL;
    char errbuf[200];
    while (line && *line) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = 0;
        lineno++;
        char *cur = line;
        line = nl ? nl + 1 : NULL;
        if (!*cur || *cur == '#')
            continue;
        char *f[8 + 2 * MAX_FRAMES];
        int nf = split_tabs(cur, f, 7 + 2 * MAX_FRAMES);
        if (!seen_magic) {
            if (nf != 2 || strcmp(f[0], "swaplab-hints")) {
                err = "not a swaplab hints file (the first line must be `swaplab-hints<TAB>1`)";
                break;
            }
            if (strcmp(f[1], "1")) {
                err = "unsupported hints format version (this library reads version 1)";
                break;
            }
            seen_magic = 1;
            continue;
        }
        if (!strcmp(f[0], "budget")) {
            if (nf != 2 || parse_u64(f[1], 10, &g_budget)) {
                err = "budget: expected `budget<TAB>BYTES` (a decimal number)";
                break;
            }
            continue;
        }
        if (!strcmp(f[0], "set")) {
            uint64_t v;
            if (nf != 3 || parse_u64(f[2], 10, &v)) {
                err = "set: expected `set<TAB>KEY<TAB>VALUE` (a decimal number)";
                break;
            }
            if (!g_nhints) {
                err = "set: it applies to the hint line above it, and there is none";
                break;
            }
            struct hint *h = &g_hints[g_nhints - 1];
            if (!strcmp(f[1], "chunk") && h->action == A_WILLNEED)
                h->chunk = v;
            else if (!strcmp(f[1], "max_calls") && h->action == A_WILLNEED)
                h->max_calls = v;
            else {
                err = "set: unknown key for this hint's action (willneed takes chunk, max_calls)";
                break;
            }
            continue;
        }
        if (strcmp(f[0], "hint")) {
            snprintf(errbuf, sizeof errbuf, "unknown item `%.40s` (expected budget, hint or set)", f[0]);
            err = errbuf;
            break;
        }
        if (nf < 8 || nf > 6 + 2 * MAX_FRAMES) {
            err = "hint: expected ID ACTION P1 P2 NFRAMES and 1 to 16 MODULE_PATH HEX_OFFSET pairs";
            break;
        }
        struct hint h;
        memset(&h, 0, sizeof h);
        uint64_t id, nfr;
        if (parse_u64(f[1], 10, &id) || id > UINT32_MAX) {
            err = "hint: the id must be a decimal u32";
            break;
        }
        h.id = (uint32_t)id;
        for (uint32_t a = 1; a <= 4; a++)
            if (!strcmp(f[2], ACTION_NAMES[a]))
                h.action = a;
        if (!h.action) {
            err = "hint: unknown action (mlock, willneed, cold, pageout)";
            break;
        }
        if (parse_u64(f[3], 10, &h.p1) || parse_u64(f[4], 10, &h.p2)) {
            err = "hint: P1 and P2 must be decimal numbers";
            break;
        }
        if (parse_u64(f[5], 10, &nfr) || nfr < 1 || nfr > MAX_FRAMES ||
            (int)(6 + 2 * nfr) != nf) {
            err = "hint: NFRAMES must be 1..16 and match the number of MODULE_PATH HEX_OFFSET pairs";
            break;
        }
        h.nframes = (int)nfr;
        for (int k = 0; k < h.nframes && !err; k++) {
            const char *path = f[6 + 2 * k];
            if (path[0] != '/')
                err = "hint: module paths must be absolute";
            else if (parse_u64(f[7 + 2 * k], 16, &h.offs[k]))
                err = "hint: frame offsets must be hexadecimal";
            else {
                size_t pl = strlen(path);
                h.paths[k] = __libc_malloc(pl + 1);
                if (!h.paths[k])
                    err = "out of memory";
                else
                    memcpy(h.paths[k], path, pl + 1);
            }
        }
        if (!err && g_nhints == MAX_HINTS)
            err = "too many hints (at most 32767)";
        if (!err && g_nhints == hcap) {
            int ncap = hcap ? hcap * 2 : 8;
            struct hint *t = __libc_realloc(g_hints, (size_t)ncap * sizeof *t);
            if (!t)
                err = "out of memory";
            else {
                g_hints = t;
                hcap = ncap;
            }
        }
        if (err) {
            for (int k = 0; k < h.nframes; k++)
                __libc_free(h.paths[k]);
            break;
        }
        g_hints[g_nhints++] = h;
    }
    if (!err && !seen_magic) {
        err = "empty hints file (the first line must be `swaplab-hints<TAB>1`)";
        lineno = 1;
    }
    if (err) {
        say("%s:%d: %s; running without hints", file, lineno, err);
        hints_free();
        g_budget = 0;
    }
    __libc_free(buf);
}
