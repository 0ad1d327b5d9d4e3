/* sandbox_record: the sandbox record, the Redis hash "<prefix>sandbox:<id>",
 * read in one place.
 *
 * The Lua scripts write it (sandbox_claim.lua and osb_create.lua make it,
 * common.lua's sandbox_set_state moves it, osb_*.lua, egress_cas.lua and
 * the teardown scripts change it); everything in C that reads it comes
 * through here: its key (sandbox_record_key), its fields as a struct, one
 * reader (sandbox_record_read) with one field list. The fields come in
 * named groups so that a hot or narrow read (the Squid helper's policy, the
 * reconciler's state) never fetches the big ones (env, entrypoint,
 * volumes, policy) it does not use. docs/ARCHITECTURE.md lists the fields.
 *
 * A record exists while its hash has a state: every script that makes one
 * sets the state in the same call, and a finished one expires whole. */
#pragma once
#include <stddef.h>

#include "core/config.h"

struct redis_conn;

#define SANDBOX_RECORD_KEY_MAX 192 /* bytes of a key, its NUL included */

/* The groups of fields a read asks for (OR them). The core ones (state,
 * reason, lastTransitionAt, ref) are always read. */
enum {
        SANDBOX_RECORD_OWNER = 1u << 0,   /* userId, tenant, answerBy */
        SANDBOX_RECORD_SPEC = 1u << 1,    /* image, nanoCpus, memoryBytes, pids, diskMb,
                                           * poolLimits, runtime, entrypoint, env */
        SANDBOX_RECORD_VOLUMES = 1u << 2, /* volumes */
        SANDBOX_RECORD_EGRESS = 1u << 3,  /* egress_policy */
        SANDBOX_RECORD_STATUS = 1u << 4,  /* message */
};

struct sandbox_record {
        unsigned groups; /* the groups read */
        /* core */
        char state[24];              /* "Pending", "Running", ...; never "" after a read */
        char reason[64];             /* the last transition's reason code; "" = none */
        char last_transition_at[24]; /* ms since the epoch, as stored; "" = none */
        char ref[80];                /* the provider's id of it (PROVIDER_REF_MAX); "" = none yet */
        /* SANDBOX_RECORD_OWNER */
        char user_id[272]; /* "<tenant>/<user>" of a lease sandbox (LEASE_SCOPED_MAX); "" = none */
        char tenant[130];  /* an OpenSandbox record's tenant; "" otherwise */
        char answer_by[24]; /* an OpenSandbox create's answer is due by (ms); "" = answered */
        /* SANDBOX_RECORD_SPEC */
        char image[256];
        long long nano_cpus, memory_bytes, pids; /* 0 = absent */
        long long disk_mb;                       /* -1: absent (a record older than disks) */
        char pool_limits[64];                    /* a claimed warm member's "cpus,mem,pids"; "" = cold */
        char runtime[CONFIG_RUNTIME_MAX];        /* "" = absent (older than runtimes) */
        char *entrypoint;                        /* JSON array, malloc'd; "" = absent */
        char *env;                               /* JSON object, malloc'd; "" = absent */
        /* SANDBOX_RECORD_VOLUMES */
        char *volumes; /* JSON (volume.h), malloc'd; "" = none */
        /* SANDBOX_RECORD_EGRESS */
        char *egress_policy;      /* JSON (egress_policy.h), malloc'd; "" = none */
        size_t egress_policy_len; /* its bytes */
        /* SANDBOX_RECORD_STATUS */
        char *message; /* the last transition's message, malloc'd; "" = none */
};

/* The key of sid's record into buf (size bytes; SANDBOX_RECORD_KEY_MAX
 * holds any). Returns 0, or -ENAMETOOLONG when it does not fit (buf then
 * holds ""). */
int sandbox_record_key(const struct broker_config *cfg, const char *sid, char *buf, size_t size);

/* Read sid's record: the core fields and those of groups, one HMGET.
 * Fields the hash lacks read "" (numbers as documented above); the
 * malloc'd strings of the groups asked for are never NULL after a
 * success, the others are NULL. Release with sandbox_record_clear, on
 * success and failure alike (a read of the core alone, groups 0,
 * allocates nothing). Errors: -ENOENT (no record: no state),
 * -EPROTO (an odd reply, or a field longer than its member: the broker
 * never writes one), -ENAMETOOLONG (sid), -ENOMEM, those of
 * redis_conn_command. */
int sandbox_record_read(struct redis_conn *rc, const struct broker_config *cfg, const char *sid,
                        unsigned groups, struct sandbox_record *ret);

/* Free what a read allocated and zero rec; accepts NULL and a zeroed or
 * half-read rec. */
void sandbox_record_clear(struct sandbox_record *rec);

/* One transition of a record's history ("<prefix>sbevents:<id>", written by
 * common.lua's sandbox_set_state in the script that makes the transition:
 * the last SANDBOX_TRANSITIONS_KEEP, with the record's lifetime). message points into the
 * reply: valid during the callback only, message_len bytes, not
 * NUL-terminated, cut at 512 bytes by the script. */
#define SANDBOX_TRANSITIONS_KEEP 64 /* common.lua's SANDBOX_EVENTS_KEEP */
struct sandbox_transition {
        long long at_ms;  /* when, ms since the epoch */
        char state[24];   /* the state it went to */
        char reason[64];  /* the record's reason after it; "" = none */
        const char *message;
        size_t message_len;
};

/* Call fn for each transition of sid kept in Redis, oldest first (none: a
 * record with no history, or no record: the caller checks the record).
 * A negative return of fn stops the walk and is returned. Entries that do
 * not parse (the broker never writes one) are skipped. Errors: those of
 * redis_conn_command, -EPROTO (not a list), -ENAMETOOLONG (sid). */
int sandbox_record_transitions(struct redis_conn *rc, const struct broker_config *cfg, const char *sid,
                               int (*fn)(void *ud, const struct sandbox_transition *t), void *ud);
