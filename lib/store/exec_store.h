/* exec_store: the records of commands a lease runs with an execId (docs/API.md,
 * "Exec records"), each change one script of lib/store/lua/exec_*.lua.
 *
 * A record belongs to (tenant, lease, execId) and is read through the
 * lease's sandbox: another lease's, tenant's or sandbox's record is
 * NOT_FOUND exactly as an unknown one. It is made before its command runs
 * (create-if-absent: a second create of the same id is IN_USE, so a retry
 * never runs a command twice), holds the tail of the output while the
 * command runs, then its result ('done') or the provider's failure
 * ('failed'). Bounds: EXEC_RECORDS_PER_LEASE records per lease (a create
 * evicts the oldest finished one; FULL when all run), a running record
 * expires its command's timeout + EXEC_STORE_RUNNING_GRACE_MS after its
 * start (a handler that died leaves nothing for long), a finished one
 * EXEC_RECORD_TTL_MS after its end; the records go with their lease.
 *
 * Errors of every function: -EIO (Redis unreachable or timed out), -EPROTO
 * (unexpected script reply), -ENOMEM. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>

#include "core/config.h"
#include "providers/provider.h"

struct redis_conn;

#define EXEC_STORE_ID_MIN 8
#define EXEC_STORE_ID_MAX 64
#define EXEC_STORE_TAIL_MAX (32 * 1024)   /* bytes of output a running record shows */
#define EXEC_STORE_RUNNING_GRACE_MS 60000 /* a running record outlives its timeout by this */
#define EXEC_STORE_MESSAGE_MAX 512

/* Whose record: all borrowed C strings. */
struct exec_store_key {
        const char *tenant;
        const char *lease_id;
        const char *sandbox_id;
        const char *exec_id; /* exec_store_id_valid */
};

enum exec_store_kind {
        EXEC_STORE_CREATED,   /* create: started_at */
        EXEC_STORE_IN_USE,    /* create: the lease has a record of that id */
        EXEC_STORE_FULL,      /* create: EXEC_RECORDS_PER_LEASE records, all running (running) */
        EXEC_STORE_NOT_FOUND, /* create: the lease is not active; get: no such record */
        EXEC_STORE_RUNNING,   /* get: started_at, output, output_bytes */
        EXEC_STORE_DONE,      /* get: started_at, res, duration_ms */
        EXEC_STORE_FAILED,    /* get: started_at, message */
};

struct exec_store_outcome {
        enum exec_store_kind kind;
        int64_t started_at; /* epoch ms */
        long long running;  /* FULL */
        char *output;       /* RUNNING: raw bytes (may hold NUL or bad UTF-8), owned */
        size_t output_len;
        int64_t output_bytes;   /* RUNNING: every byte the command wrote so far */
        struct exec_result res; /* DONE: raw stdout/stderr (owned), flags, exit code */
        int64_t duration_ms;    /* DONE */
        char message[EXEC_STORE_MESSAGE_MAX]; /* FAILED */
};

/* Release what *o owns and zero it. */
void exec_store_outcome_clear(struct exec_store_outcome *o);

/* Is s an execId: EXEC_STORE_ID_MIN..EXEC_STORE_ID_MAX of [A-Za-z0-9_-]? */
bool exec_store_id_valid(const char *s);

/* The optional "execId" of an exec request body: *ret NULL when absent
 * (or null), else borrowed from body. -EINVAL with a client-facing
 * explanation in err when present and not a valid execId. */
int exec_store_id_from_json(struct json_object *body, const char **ret, char *err, size_t errsz);

/* Make k's record 'running' before its command starts (timeout_ms: the
 * command's). *ret: CREATED, IN_USE, FULL or NOT_FOUND; nothing is
 * changed but for CREATED (and the eviction it made room by). */
int exec_store_create(struct redis_conn *c, const struct broker_config *cfg,
                      const struct exec_store_key *k, int timeout_ms, struct exec_store_outcome *ret);

/* The output so far of k's running record: the last len bytes of it (at
 * most EXEC_STORE_TAIL_MAX, borrowed) and the count of every byte seen.
 * Returns 1, or 0 when the record is gone or no longer running. */
int exec_store_progress(struct redis_conn *c, const struct exec_store_key *k, const char *tail,
                        size_t len, int64_t total);

/* End k's running record with the command's result (each stream cut to
 * EXEC_RECORD_MAX_OUTPUT bytes, its flag set when cut); it then lives
 * EXEC_RECORD_TTL_MS. Returns 1, or 0 when the record is gone (it is not
 * made again). */
int exec_store_finish(struct redis_conn *c, const struct broker_config *cfg,
                      const struct exec_store_key *k, const struct exec_result *res,
                      int64_t duration_ms);

/* End k's running record as 'failed' with message (cut to
 * EXEC_STORE_MESSAGE_MAX - 1 bytes). Returns 1, or 0 when it is gone. */
int exec_store_fail(struct redis_conn *c, const struct broker_config *cfg,
                    const struct exec_store_key *k, const char *message);

/* Read k's record: *ret RUNNING, DONE, FAILED or NOT_FOUND. */
int exec_store_get(struct redis_conn *c, const struct exec_store_key *k,
                   struct exec_store_outcome *ret);
