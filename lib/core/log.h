/* log: the one logging module.
 *
 * Under systemd (JOURNAL_STREAM set, or LOG_TARGET=journal) every event goes
 * to journald with structured fields; otherwise one line per event to stderr:
 *   2026-12-02T12:00:00.123Z info broker-fcgi[42]: message KEY=value ...
 * Levels are syslog priorities. Library code logs at debug only; the
 * boundary (handler, supervisor loop) logs each failure once, with context. */
#pragma once
#include <syslog.h>

struct log_kv {
        const char *key;   /* journald field name: upper case, e.g. LEASE_ID */
        const char *value; /* NULL or "" fields are left out */
};

/* A NULL-terminated field list literal:
 *   log_info(LOG_KV({"LEASE_ID", id}, {"USER_ID", user}), "lease granted"); */
#define LOG_KV(...) ((const struct log_kv[]){ __VA_ARGS__, { NULL, NULL } })

/* Set the program name and the most verbose priority to emit. */
void log_init(const char *ident, int max_priority);

/* Parse "err|warn|info|debug"; returns the priority or -1. */
int log_level_parse(const char *s);

/* Emit one event. fields may be NULL. Never fails visibly. */
void log_emit(int priority, const struct log_kv *fields, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

#define log_err(f, ...)   log_emit(LOG_ERR, f, __VA_ARGS__)
#define log_warn(f, ...)  log_emit(LOG_WARNING, f, __VA_ARGS__)
#define log_info(f, ...)  log_emit(LOG_INFO, f, __VA_ARGS__)
#define log_debug(f, ...) log_emit(LOG_DEBUG, f, __VA_ARGS__)
