/* readiness: what a client waiting for an OpenSandbox sandbox to be ready
 * is told, shared by execd's GET /ping (h_execd_misc.c) and the lifecycle's
 * GET .../endpoints/{port} (h_opensandbox.c): the two calls the SDKs make
 * between a create and the first command (docs/OPENSANDBOX.md).
 *
 * - A Pending sandbox is waited for, bounded (READINESS_HOLD_MS, the record
 *   read every READINESS_POLL_MS), so the answer comes the moment it is
 *   Running or Failed rather than at the client's next poll. At most a
 *   quarter of the process's threads wait at once (a process-wide counter);
 *   beyond that the answer is immediate.
 * - Failed, Stopping and Terminated are final: the sandbox will never be
 *   ready, and the caller answers 403 SANDBOX_UNUSABLE with the record's
 *   reason and message (readiness_detail), which the SDKs do not retry. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include "request.h"

#define READINESS_HOLD_MS 5000
#define READINESS_POLL_MS 20
#define READINESS_DETAIL_MAX (64 + 256 + 8) /* readiness_detail's longest */

/* The record of a sandbox as readiness answers from it. */
struct readiness {
        char state[24];   /* "Terminated" for a record that is gone */
        char reason[64];
        char message[256];
        bool ref;         /* the sandbox has a backend reference */
};

/* Read sandbox sid's record (already authorised by the caller) into *ret.
 * 0, or the store's negative errno (Redis unreachable: -EIO). */
int readiness_read(struct request *req, const char *sid, struct readiness *ret);

/* While r says Pending (and, with creating_only, only while it is being
 * made, not queued for a slot), wait up to READINESS_HOLD_MS for it to
 * change, re-reading r. Returns at once when too many requests wait
 * already; a failed read keeps r as it was. */
void readiness_wait(struct request *req, const char *sid, bool creating_only, struct readiness *r);

/* Running with a backend reference: ready. */
bool readiness_ready(const struct readiness *r);

/* Failed, Stopping or Terminated: never ready. */
bool readiness_final(const struct readiness *r);

/* " (REASON: message)", " (REASON)", " (message)" or "" into buf. */
void readiness_detail(const struct readiness *r, char *buf, size_t size);
