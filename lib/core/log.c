/* log: stderr lines or journald fields; see log.h. */
#include "log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/uio.h>
#include <systemd/sd-journal.h>
#include <time.h>
#include <unistd.h>

#include "timeutil.h"

#define LOG_MAX_FIELDS 16

static struct {
        const char *ident;
        int max_priority;
        bool journal;
        pthread_mutex_t lock; /* keeps stderr lines whole across threads */
} log_ctx = { "broker", LOG_INFO, false, PTHREAD_MUTEX_INITIALIZER };

void log_init(const char *ident, int max_priority)
{
        const char *target = getenv("LOG_TARGET");

        log_ctx.ident = ident;
        log_ctx.max_priority = max_priority;
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

        timeutil_format_iso(timeutil_now_ms(), ts, sizeof(ts));
        off = (size_t)snprintf(line, sizeof(line), "%s %s %s[%d]: %s", ts, prio_name(priority),
                               log_ctx.ident, (int)getpid(), msg);
        for (const struct log_kv *f = fields; f && f->key && off < sizeof(line); f++) {
                if (!f->value || !*f->value)
                        continue;
                off += (size_t)snprintf(line + off, sizeof(line) - off, " %s=%s", f->key, f->value);
        }
        if (off >= sizeof(line))
                off = sizeof(line) - 1;
        pthread_mutex_lock(&log_ctx.lock);
        fprintf(stderr, "%.*s\n", (int)off, line);
        pthread_mutex_unlock(&log_ctx.lock);
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
