/* log: stderr lines or journald fields; see log.h. */
#include "core/log.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/uio.h>
#include <systemd/sd-journal.h>
#include <time.h>
#include <unistd.h>

#include "core/timeutil.h"

#define LOG_MAX_FIELDS 16

static struct {
        const char *ident;
        int max_priority;
        bool journal;
        atomic_int pid;       /* getpid() once, not a system call per line (0: not yet) */
} log_ctx = { "broker", LOG_INFO, false, 0 };

static void log_atfork_child(void)
{
        atomic_store_explicit(&log_ctx.pid, 0, memory_order_relaxed); /* a child logs its own */
}

static void log_register_atfork(void)
{
        (void)pthread_atfork(NULL, NULL, log_atfork_child);
}

void log_init(const char *ident, int max_priority)
{
        const char *target = getenv("LOG_TARGET");

        static pthread_once_t once = PTHREAD_ONCE_INIT;

        log_ctx.ident = ident;
        log_ctx.max_priority = max_priority;
        atomic_store_explicit(&log_ctx.pid, 0, memory_order_relaxed);
        (void)pthread_once(&once, log_register_atfork);
        if (target && strcmp(target, "journal") == 0)
                log_ctx.journal = true;
        else if (target && strcmp(target, "stderr") == 0)
                log_ctx.journal = false;
        else
                log_ctx.journal = getenv("JOURNAL_STREAM") != NULL;
}

int log_level_parse(const char *s)
{
        static const struct { const char *name; int prio; } levels[] = {
                { "err", LOG_ERR }, { "error", LOG_ERR }, { "warn", LOG_WARNING },
                { "warning", LOG_WARNING }, { "info", LOG_INFO }, { "debug", LOG_DEBUG },
        };
        for (size_t i = 0; i < sizeof(levels) / sizeof(levels[0]); i++)
                if (strcasecmp(s, levels[i].name) == 0)
                        return levels[i].prio;
        return -1;
}

static const char *prio_name(int priority)
{
        switch (priority) {
        case LOG_EMERG: case LOG_ALERT: case LOG_CRIT: case LOG_ERR: return "err";
        case LOG_WARNING: return "warn";
        case LOG_NOTICE: case LOG_INFO: return "info";
        default: return "debug";
        }
}

static void emit_journal(int priority, const struct log_kv *fields, const char *msg)
{
        struct iovec iov[LOG_MAX_FIELDS + 3];
        char bufs[LOG_MAX_FIELDS + 3][512];
        int n = 0;

        snprintf(bufs[n], sizeof(bufs[n]), "PRIORITY=%d", priority);
        n++;
        snprintf(bufs[n], sizeof(bufs[n]), "SYSLOG_IDENTIFIER=%s", log_ctx.ident);
        n++;
        for (int i = 0; i < n; i++)
                iov[i] = (struct iovec){ bufs[i], strlen(bufs[i]) };
        for (const struct log_kv *f = fields; f && f->key && n < LOG_MAX_FIELDS + 2; f++) {
                if (!f->value || !*f->value)
                        continue;
                snprintf(bufs[n], sizeof(bufs[n]), "%s=%s", f->key, f->value);
                iov[n] = (struct iovec){ bufs[n], strlen(bufs[n]) };
                n++;
        }
        /* MESSAGE may be long: point at it rather than copying. */
        static const char key[] = "MESSAGE=";
        char *m = malloc(sizeof(key) + strlen(msg));
        if (!m)
                return;
        strcpy(m, key);
        strcat(m, msg);
        iov[n++] = (struct iovec){ m, strlen(m) };
        sd_journal_sendv(iov, n);
        free(m);
}

static void emit_stderr(int priority, const struct log_kv *fields, const char *msg)
{
        char ts[32];
        char line[4096];
        size_t off;

        int pid = atomic_load_explicit(&log_ctx.pid, memory_order_relaxed);

        if (!pid) {
                pid = (int)getpid(); /* every thread that races here stores the same */
                atomic_store_explicit(&log_ctx.pid, pid, memory_order_relaxed);
        }
        timeutil_format_iso(timeutil_now_ms(), ts, sizeof(ts));
        off = (size_t)snprintf(line, sizeof(line), "%s %s %s[%d]: %s", ts, prio_name(priority),
                               log_ctx.ident, pid, msg);
        for (const struct log_kv *f = fields; f && f->key && off < sizeof(line); f++) {
                if (!f->value || !*f->value)
                        continue;
                off += (size_t)snprintf(line + off, sizeof(line) - off, " %s=%s", f->key, f->value);
        }
        if (off >= sizeof(line) - 1)
                off = sizeof(line) - 2;
        line[off++] = '\n';
        /* One write(2) of the whole line, no lock: at most 4 KiB (PIPE_BUF)
         * to a pipe is written whole, appends to a file too (the kernel
         * serialises writes on one file position), so lines of concurrent
         * threads never mix. A mutex held across the write made every
         * request thread queue behind the one writing (docs/LOAD-CAPACITY.md,
         * the lease path). A short write or EINTR continues the line. */
        for (size_t done = 0; done < off;) {
                ssize_t n = write(STDERR_FILENO, line + done, off - done);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break; /* nowhere to log: nothing to do about it */
                done += (size_t)n;
        }
}

void log_emit(int priority, const struct log_kv *fields, const char *fmt, ...)
{
        char msg[2048];
        va_list ap;

        if (priority > log_ctx.max_priority)
                return;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        if (log_ctx.journal)
                emit_journal(priority, fields, msg);
        else
                emit_stderr(priority, fields, msg);
}
