/* The allocation log allocs.<pid>.bin (format: preload.c). */
#include "preload.h"

/* ---- the log ---- */
int g_log_fd = -1;
static unsigned char g_buf[LOG_BUF];
size_t g_buf_len;
static uint64_t g_last_flush;
int g_exiting;

void flush_locked(void)
{
    if (g_log_fd >= 0 && g_buf_len)
        write_all(g_log_fd, g_buf, g_buf_len);
    g_buf_len = 0;
    g_last_flush = now_ns();
}

void log_append(const void *rec, size_t n)
{
    if (!g_logging)
        return;
    pthread_mutex_lock(&L_log);
    if (g_log_fd >= 0) {
        if (g_buf_len + n > sizeof g_buf)
            flush_locked();
        memcpy(g_buf + g_buf_len, rec, n);
        g_buf_len += n;
        /* STACK and MODULE records always precede the ALLOC that needs
         * them: they wait in the buffer; the record that ends a logged call
         * is written through at once, so a program killed at any moment
         * (a timeout, the OOM killer) loses nothing.  Only calls at or above
         * the threshold log anything, so this is one write(2) per large
         * allocation or free: at the default 64 KiB, at most 16 k writes
         * per GiB allocated. */
        uint32_t type;
        memcpy(&type, rec, sizeof type);
        if (g_exiting || (type != REC_STACK && type != REC_MODULE) ||
            now_ns() - g_last_flush >= FLUSH_NS)
            flush_locked();
    }
    pthread_mutex_unlock(&L_log);
}

/* Opens allocs.<pid>.bin and writes its header; 0 ok, -1 failed (said). */
int log_open(uint32_t ppid, uint32_t flags)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/allocs.%u.bin", g_dir, (unsigned)g_pid);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) {
        say("cannot create %s: %s; allocation logging is off", path, strerror(errno));
        return -1;
    }
    (void)fchmod(fd, 0644);
    struct log_header h;
    memcpy(h.magic, "SWLALOG1", 8);
    h.version = 1;
    h.pid = g_pid;
    h.ppid = ppid;
    h.flags = flags;
    h.t0_ns = now_ns();
    write_all(fd, &h, sizeof h);
    g_log_fd = fd;
    g_buf_len = 0;
    g_last_flush = h.t0_ns;
    return 0;
}

void log_alloc(uint32_t type, uint32_t func, uint64_t addr, uint64_t size, uint32_t stack)
{
    struct rec_alloc r = {type, sizeof r, my_tid(), func, now_ns(), addr, size, stack, 0};
    log_append(&r, sizeof r);
}
