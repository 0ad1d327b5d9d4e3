/* osb_create_run: the OpenSandbox create (POST /v1/sandboxes) as one
 * use-case with an outcome struct, below the handler that parsed the body
 * (osb_create_parse, egress_policy_for_create): the image (a snapshot's,
 * or one IMAGE_ALLOW lets in), the volumes, the record (osb_store_create,
 * with its Idempotency-Key and a warm-pool member), the admission lease
 * (admission_acquire: a slot, or a ticket in the Kafka queue), a warm
 * member made ready, and the record as answered; then, after the answer
 * reached the client, osb_create_after (docs/ARCHITECTURE.md §3.3).
 *
 * A failure after the record was stored deletes it with its key (the
 * client's retry is a new create); the volumes this call made are removed
 * unless they became the new sandbox's. No logging here: the outcome says
 * what happened, the handler logs and answers.
 *
 * Errors (returned): -EIO (Redis, or no random id), -EPROTO, -ENOMEM, and
 * those of snapshot_store_image, osb_store_create, lease_acquire and
 * osb_store_get; the outcome's admission fields stay valid (an admitted
 * sandbox whose final read failed is still admitted). */
#pragma once
#include <stdbool.h>
#include <json-c/json.h>

#include "core/config.h"
#include "queue/kafka.h"
#include "store/lease.h"
#include "sandbox/opensandbox.h"
#include "sandbox/osb_store.h"
#include "providers/provider.h"
#include "store/redis_conn.h"
#include "sandbox/sandbox.h"
#include "sandbox/snapshot_store.h"
#include "sandbox/volume.h"

/* What is left to do once the answer is out. */
enum osb_create_after_work {
        OSB_AFTER_NONE,
        OSB_AFTER_PULL,     /* granted, image.auth: pull, then hand the lease to the workers */
        OSB_AFTER_PREFETCH, /* queued, image.auth: pull ahead of the slot */
};

/* The after-answer state of a create, kept by the caller in its request
 * (never thread-local): the pull credentials live only here, for the pull,
 * and osb_create_after wipes them. */
struct osb_create_pending {
        char sid[33];
        char lease_id[33]; /* PULL: the admission lease */
        enum osb_create_after_work work;
        char image[256];
        char user[OSB_AUTH_USER_MAX], pass[OSB_AUTH_PASS_MAX];
};

struct osb_create_input {
        const char *tenant;
        struct osb_create *c;     /* parsed; c->image set from a snapshot's here */
        struct json_object *body; /* the request (volumes, the key's fingerprint) */
        const char *idem_key;     /* Idempotency-Key, "" none */
        const char *egress;       /* normalized networkPolicy (egress_store.h) */
};

enum osb_create_kind {
        OSB_CREATE_ACCEPTED,           /* 202: sandbox, store.kind CREATED or REPLAY */
        OSB_CREATE_IMAGE_REFUSED,      /* not on the host and IMAGE_ALLOW refuses it (err) */
        OSB_CREATE_NO_SNAPSHOT,        /* snapshotId: none of the tenant's */
        OSB_CREATE_SNAPSHOT_NOT_READY, /* snapshotId: in snapshot_state */
        OSB_CREATE_VOLUMES,            /* volume_for_create failed (volume_r, err) */
        OSB_CREATE_STORE_REFUSED,      /* store.kind LIMIT, DISK or a KEY_ one */
        OSB_CREATE_QUEUE_UNAVAILABLE,  /* Kafka did not confirm the ticket: record deleted */
};

#define OSB_CREATE_ERR_MAX (VOLUME_ERR_MAX > OSB_ERR_MAX ? VOLUME_ERR_MAX : OSB_ERR_MAX)

struct osb_create_outcome {
        enum osb_create_kind kind;
        char err[OSB_CREATE_ERR_MAX];
        int volume_r;
        char snapshot_state[SNAPSHOT_STATE_MAX];
        struct osb_store_outcome store; /* what the record's script did */
        /* admission: LEASE_GRANTED (lease_id) or LEASE_QUEUED (ticket_id,
         * queued_msg) when admitted, else admitted false */
        bool admitted;
        enum lease_outcome_kind admission;
        char lease_id[33];
        char ticket_id[33];
        char queued_msg[96];
        int produce_r; /* != 0: Kafka did not confirm the ticket (its error) */
        /* a warm member's readying failed (sandbox_lease_ready; the record
         * reads Failed): warm_r < 0, warm_err */
        int warm_r;
        char warm_err[SANDBOX_ERR_MAX];
        struct osb_sandbox sb; /* ACCEPTED: the record as answered (osb_store_get, !full) */
};

/* Release what *o owns and zero it. */
void osb_create_outcome_clear(struct osb_create_outcome *o);

/* Run the create of in for in->tenant. On ACCEPTED, *pending (the caller's,
 * in its request) holds what osb_create_after does once the answer is
 * out; it is wiped on any other outcome. Returns 0 with *ret filled (clear
 * it either way), or an error as above. */
int osb_create_run(struct redis_conn *rc, struct provider *pv, struct kafka_producer *kafka,
                   const struct broker_config *cfg, const struct osb_create_input *in,
                   struct osb_create_pending *pending, struct osb_create_outcome *ret);

/* What osb_create_after did; answered_r, work_r: 0 or a negative errno. */
struct osb_create_after_outcome {
        int answered_r; /* osb_store_answered (answered only) */
        int work_r;     /* the pull (-ECANCELED: the sandbox went away meanwhile) or prefetch */
        char err[SANDBOX_ERR_MAX];
};

/* After the answer: mark p->sid answered when the 202 reached the client
 * (answered; else it is ended OPENSANDBOX_UNANSWERED_S later), then the
 * pending work: PULL pulls the image with the create's credentials and
 * hands the lease to the supervisors' workers (sandbox_lease_pull_then_queue;
 * a failed pull fails the sandbox), PREFETCH pulls it ahead of the slot.
 * Wipes *p. */
void osb_create_after(struct redis_conn *rc, struct provider *pv, const struct broker_config *cfg,
                      struct osb_create_pending *p, bool answered,
                      struct osb_create_after_outcome *ret);
