/* osb_diag: an OpenSandbox sandbox's diagnostics (the SDKs'
 * get_diagnostic_logs / get_diagnostic_events, sandbox-lifecycle's
 * DiagnosticContentResponse): the text of its output and of its
 * lifecycle, bounded, ready to answer inline. The handler
 * (fcgi/h_osb_diag.c) checks the tenant and the scope; this module reads
 * the provider (provider_logs) and the record's history
 * (sandbox_record_transitions), never the handler. docs/OPENSANDBOX.md,
 * "Diagnostics". */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include "core/config.h"
#include "providers/provider.h"
#include "store/redis_conn.h"
#include "store/sandbox_record.h"

#define OSB_DIAG_WARNING_MAX 256

/* A diagnostic text, as answered. */
struct osb_diag {
        char *content;  /* malloc'd, valid UTF-8 (invalid bytes and NULs are U+FFFD) */
        size_t len;     /* its bytes */
        bool truncated; /* the caps left lines or bytes out */
        char warning[OSB_DIAG_WARNING_MAX]; /* "" = none; else why content may be partial */
};

/* The sandbox's output (its main process's stdout and stderr, as the
 * provider keeps it), read from rec (its state and ref, osb_store_get): its
 * last `tail` lines (1 to DIAGNOSTICS_LOG_TAIL), at most
 * DIAGNOSTICS_LOG_MAX_BYTES of them. A sandbox without a container
 * (Pending, or Failed before one was made) is empty content with a warning. Errors: -ENOENT the sandbox was
 * deleted (Stopping, Terminated: its container and its output are gone), or
 * the provider has no such container; -EINVAL tail out of range; those of
 * provider_logs (-EOPNOTSUPP: the backend keeps none, err says why;
 * -ECONNREFUSED, -ETIMEDOUT, -EIO) with the reason in err
 * (PROVIDER_ERR_MAX). Release *ret with osb_diag_clear, on failure too. */
int osb_diag_logs(struct provider *pv, const struct broker_config *cfg,
                  const struct sandbox_record *rec, int tail, struct osb_diag *ret, char *err);

/* The sandbox's lifecycle as the broker recorded it: one line per
 * transition, oldest first, "<ISO time> <state> <reason>: <message>" (the
 * last 64 the record keeps; truncated when it has that many: older ones
 * may have been dropped). Errors: those of sandbox_record_transitions,
 * -ENOMEM. Release *ret with osb_diag_clear, on failure too. */
int osb_diag_events(struct redis_conn *rc, const struct broker_config *cfg, const char *sid,
                    struct osb_diag *ret);

/* Free what a read filled and zero d; accepts NULL. */
void osb_diag_clear(struct osb_diag *d);
