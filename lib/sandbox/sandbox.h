/* sandbox: a lease's sandbox, from Redis record to running container.
 *
 * Records live in Redis (lib/store/lua/sandbox_*.lua); this module makes them real
 * through a provider, with a Redis lock per sandbox so that two processes
 * never create the same one. Every function is safe to repeat: a create that
 * crashed half-way is finished (or cleaned) by the next attempt.
 *
 * Errors: the provider's (see provider.h), -EIO (Redis), -ENOENT (lease or
 * sandbox gone), -EPROTO, -ENOMEM; err gets a client-facing explanation. */
#pragma once
#include <json-c/json.h>

#include "core/config.h"
#include "providers/provider.h"
#include "store/redis_conn.h"

#define SANDBOX_ERR_MAX 320

struct sandbox_claim {
        char sandbox_id[33];
        char state[16];
        char ref[PROVIDER_REF_MAX];
        char workdir[256];
        char linux_user[32];
        char needs[8]; /* create | start | none */
};

/* Attach lease_id to its slot's sandbox (a parked or new one if the slot has
 * none) and make it run; then activate the lease. On success *ret_lease (if
 * non-NULL) gets the active lease object. On a provider failure the sandbox
 * is marked Failed, its container removed and the lease released (its ticket,
 * if any, reads failed); -ENOENT if the lease is gone. */
int sandbox_lease_ready(struct redis_conn *rc, struct provider *pv, const struct broker_config *cfg,
                        const char *lease_id, struct json_object **ret_lease, char *err);

/* The same, with registry credentials for pulling the sandbox's image when
 * it is missing (auth may be NULL; it is used for this call only, never
 * stored). While the image is pulled the record stays Pending with reason
 * PULLING_IMAGE and the progress in its message. */
int sandbox_lease_ready_auth(struct redis_conn *rc, struct provider *pv,
                             const struct broker_config *cfg, const char *lease_id,
                             const struct image_auth *auth, struct json_object **ret_lease,
                             char *err);

/* Is image usable for a new sandbox: on the host, or allowed to be pulled
 * (IMAGE_ALLOW)? Checked at create time only when pulls are configured
 * (IMAGE_ALLOW set): without them every image is left to the create, as
 * before, and a missing one fails the sandbox. Returns 0, -EPERM (not on
 * the host and not allowed; err says so), or another provider errno
 * (the check could not be made: the create goes on and decides). */
int sandbox_image_admissible(struct provider *pv, const struct broker_config *cfg,
                             const char *image, char *err);

/* An OpenSandbox create with image.auth that got a slot (its lease is
 * provisioning, the caller makes it): pull its image here with auth (used
 * for this call only, never stored; the progress in the record, as a
 * create's), holding the sandbox's lock, then hand the lease to the
 * supervisors' workers (lease_intent_push), which make the sandbox from the
 * image now on the host. A failed pull fails the sandbox and its lease
 * with the registry's reason (in err). */
int sandbox_lease_pull_then_queue(struct redis_conn *rc, struct provider *pv,
                                  const struct broker_config *cfg, const char *lease_id,
                                  const char *sid, const char *image, const struct image_auth *auth,
                                  char *err);

/* Pull image ahead of its sandbox (a create that waits for a slot), with
 * auth, so that the supervisor finds it on the host later. Errors as
 * provider_image_ensure. */
int sandbox_image_prefetch(struct provider *pv, const struct broker_config *cfg, const char *image,
                           const struct image_auth *auth, char *err);

/* Take one sandbox off the teardown list and stop (park) or remove it.
 * Returns 1 if one was handled, 0 if the list was empty. *ret_sid names it. */
int sandbox_teardown_next(struct redis_conn *rc, struct provider *pv,
                          const struct broker_config *cfg, char *ret_sid, char *err);

/* Who a sandbox belonged to and where it stands, for the audit trail. */
struct sandbox_owner {
        char state[16];
        char reason[32];   /* the record's reason code, e.g. LEASE_EXPIRED */
        char user_id[272]; /* "" for a pool sandbox */
        char tenant[130];  /* OpenSandbox records; "" otherwise */
};

/* Read sid's state, reason and owner (fields the record lacks, or that do
 * not fit, read ""). Errors: -ENOENT (no record), those of redis_conn_command. */
int sandbox_owner_get(struct redis_conn *rc, const struct broker_config *cfg, const char *sid,
                      struct sandbox_owner *ret);

/* Record a transition (from "" = any state). Returns 0, -ENOENT, -EBUSY when
 * the record was not in `from`. */
int sandbox_transition(struct redis_conn *rc, const char *sid, const char *from, const char *to,
                       const char *reason, const char *message, const char *ref);

/* The provider says sid's container stopped running with exit_code (-1:
 * unknown). A record still Running or Paused means nobody of ours stopped
 * it (every stop of the broker leaves those states first): its entrypoint
 * ended, or it was killed. It goes Failed: reason OOM_KILLED when oom (the
 * backend reported it out of memory just before), else ENTRYPOINT_EXITED,
 * the code in its message. Returns 1 when the record changed, 0 when it was
 * neither (or is gone), or an error of redis_conn_script. */
#define SANDBOX_REASON_EXITED "ENTRYPOINT_EXITED"
#define SANDBOX_REASON_OOM "OOM_KILLED"
int sandbox_exited(struct redis_conn *rc, const char *sid, int exit_code, bool oom);

/* The provider says sid's container (ref) changed: it stopped (exit_code,
 * -1 unknown; oom when the backend reported it out of memory just before),
 * or was paused or unpaused. The record follows what the container is now
 * (provider_inspect), not what the event said, since events can arrive late (a
 * pause the broker has already undone, a stop before a restart, must not
 * move the record):
 *   stopped or gone   a Running or Paused record goes Failed as by
 *                     sandbox_exited (OOM_KILLED also when the inspect says
 *                     OOMKilled with code 137);
 *   frozen            a Running record goes Paused (CONTAINER_PAUSED);
 *   running           a Paused record goes Running (CONTAINER_UNPAUSED).
 * The record is read before the container and moved only if unchanged
 * since: a pause, resume or start of the broker's own in between wins, with
 * its reason. Returns 1 when the record changed, 0 when not (in step, gone,
 * or not Running/Paused), or an error of Redis or of the provider's
 * inspect. */
int sandbox_follow(struct redis_conn *rc, struct provider *pv, const struct broker_config *cfg,
                   const char *sid, const char *ref, int exit_code, bool oom);

/* The longest a sandbox's provisioning may take (its lock's life): a lease
 * 'provisioning' for longer was abandoned. */
int sandbox_provision_max_ms(const struct broker_config *cfg);

/* The reconciler: requeue interrupted teardowns, remove managed containers
 * with no live record, fail records whose container vanished, bring a
 * Running/Paused record unmoved since before its listing of the containers
 * in step with its container's pause state (what the event stream missed), and finish
 * leases left provisioning by a crashed process. Counts what it did. */
struct sandbox_reconcile_stats {
        int orphans_removed;
        int records_failed;
        int records_followed; /* Running <-> Paused after the container */
        int leases_recovered;
        int teardowns_requeued;
        int host_orphans; /* run directories, disks... of containers gone (provider_reap_orphans) */
};
/* One thing a round did to one sandbox or lease, handed to its caller to
 * log (library code does not log). */
enum sandbox_reconcile_kind {
        SANDBOX_RECONCILE_ORPHAN_REMOVED, /* id's container ref removed; state: its record's or "missing" */
        SANDBOX_RECONCILE_CONTAINER_GONE, /* id's record (state) marked Failed, its container gone */
        SANDBOX_RECONCILE_LEASE_RECOVERED, /* lease id, left provisioning, finished */
};
struct sandbox_reconcile_item {
        enum sandbox_reconcile_kind kind;
        const char *id;    /* the sandbox id, or the lease id (LEASE_RECOVERED) */
        const char *ref;   /* ORPHAN_REMOVED: the container; else NULL */
        const char *state; /* ORPHAN_REMOVED, CONTAINER_GONE: the record's state; else NULL */
};
/* Where a round reports: item(ctx, it) once per item, in order, it and its
 * strings valid for the call only. */
struct sandbox_reconcile_report {
        void (*item)(void *ctx, const struct sandbox_reconcile_item *it);
        void *ctx;
};
/* One round; *ret counts what it did, report (NULL: none) hears of each
 * orphan removed, record failed and lease recovered. 0, or a negative errno
 * (err: the provider's message, if any). */
int sandbox_reconcile(struct redis_conn *rc, struct provider *pv, const struct broker_config *cfg,
                      struct sandbox_reconcile_stats *ret,
                      const struct sandbox_reconcile_report *report, char *err);

/* What a lease may do in its sandbox. */
struct sandbox_access {
        char state[16]; /* the sandbox's */
        char ref[PROVIDER_REF_MAX];
        char workdir[256];
        char linux_user[32];
        char mode[24];
        char user_id[130]; /* inside the tenant (unscoped) */
        char session_id[130];
        char slot[300];
        bool seat; /* mode multi_user_shared: linux_user is a seat (exec_spec.seat) */
};

/* Look up lease_id (which must be an active lease of tenant, made through
 * the lease API) and its sandbox, which must be sid. -ENOENT when the lease
 * is unknown, not active, of another tenant, the admission of an
 * OpenSandbox create, or holds another sandbox: to a foreign tenant a
 * sandbox does not exist. */
int sandbox_access(struct redis_conn *rc, const struct broker_config *cfg, const char *tenant,
                   const char *lease_id, const char *sid, struct sandbox_access *ret);

/* What the execd data plane needs of an OpenSandbox sandbox. */
struct sandbox_execd {
        char state[24];             /* the record's (Running, Paused, ...) */
        char ref[PROVIDER_REF_MAX]; /* "" while none is made */
        char mode[24];
        /* The create's env (a JSON object) when the sandbox is a claimed
         * warm-pool member, whose container was made without it: every
         * command and session must carry it. "" otherwise (a cold
         * sandbox's container has it already). */
        char env[16384];
        char runtime[CONFIG_RUNTIME_MAX]; /* config_runtime_of the record */
        char tenant[130];                 /* the owner's tenant */
};

/* Look up sandbox sid for a data-plane call and check the caller, in one
 * Redis round trip (lib/store/lua/token_check.lua): token (NULL or "" when
 * none was presented; looked up by its SHA-256) must be one of the
 * sandbox's data-plane tokens (osb_store_token_issue), and the API key it
 * was issued to must still be live; tenant (NULL for an admin key or no
 * key) must own the record. The token itself never leaves this function.
 * -ENOENT, with *ret zeroed, when there is no record, the record is not an
 * OpenSandbox sandbox (a lease's), the token is unknown (or rotated away,
 * or longer than SANDBOX_TOKEN_LEN_MAX) or the tenant is not the owner: to
 * such a caller the sandbox does not exist, so ids cannot be probed.
 * -EKEYREVOKED when the token was issued to a key that is revoked since.
 * Other errors: those of redis_conn_script_tagged. */
#define SANDBOX_TOKEN_LEN_MAX 128
int sandbox_execd_lookup(struct redis_conn *rc, const struct broker_config *cfg, const char *sid,
                         const char *token, const char *tenant, struct sandbox_execd *ret);

/* Number of leases on a slot (0 if the slot is gone). */
int sandbox_slot_refs(struct redis_conn *rc, const struct broker_config *cfg, const char *slot);
