/* Unit tests for lib/sandbox/osb_create_run.c: the OpenSandbox create as a
 * use-case, from a parsed body to an admitted record, and its after-answer
 * work. The store, the lease scripts, Kafka and the provider's calls are
 * replaced at the link seam by a small world: the record store remembers
 * the record it was given (its fields, its key) and whether it was deleted,
 * the volumes whether they were undone, the lease store answers grant or
 * queue, Kafka confirms or not. Checked per outcome: what was stored, what
 * was undone (the record with its key, the volumes a failed or replayed
 * create made), the lease asked for, and the after-answer state (the pull
 * credentials kept only for a pull, wiped otherwise and after it). */
/* WRAP: -Wl,--wrap=sandbox_image_admissible -Wl,--wrap=snapshot_store_image -Wl,--wrap=volume_for_create -Wl,--wrap=volume_undo -Wl,--wrap=osb_store_create -Wl,--wrap=osb_store_delete -Wl,--wrap=osb_store_get -Wl,--wrap=osb_store_answered -Wl,--wrap=lease_acquire -Wl,--wrap=kafka_produce_sync -Wl,--wrap=lease_ticket_cancel -Wl,--wrap=sandbox_transition -Wl,--wrap=sandbox_lease_ready -Wl,--wrap=sandbox_lease_pull_then_queue -Wl,--wrap=sandbox_image_prefetch */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sandbox/osb_create_run.h"

#define MEMBER "99999999999999999999999999999999"
#define LEASE "0123456789abcdef0123456789abcdef"
#define TICKET "00112233445566778899aabbccddeeff"

static struct {
        int admissible_r;
        int snapshot_r;
        int volume_r;
        bool volumes; /* the create has volumes (a record) */
        int undo_calls;
        /* the record store */
        enum osb_store_created store_kind;
        bool store_warm, store_admit;
        int store_calls;
        char stored_sid[33];
        char fields[32][64];
        int n_fields;
        char idem_key[64];
        int delete_calls;
        char deleted_sid[33], deleted_key[64];
        int get_r, get_calls;
        int answered_calls;
        /* the lease store, Kafka */
        int acquire_r, acquire_calls;
        enum lease_outcome_kind lease_kind;
        char lease_user[32], lease_session[33];
        bool caller_makes;
        int produce_r, cancel_r;
        char transition_reason[32], transition_msg[96];
        /* the provider's work */
        int ready_r, ready_calls;
        char ready_lease[33];
        int pull_calls, prefetch_calls;
        char pull_lease[33], pull_sid[33], pull_image[64], pull_user[32], pull_pass[32];
} F;

static struct broker_config cfg;
static struct kafka_producer *const KAFKA = (struct kafka_producer *)&cfg; /* never dereferenced */
static struct osb_create c;
static struct json_object *body;
static struct osb_create_pending pending;

static int setup(void **state)
{
        (void)state;
        memset(&F, 0, sizeof(F));
        memset(&c, 0, sizeof(c));
        memset(&pending, 0, sizeof(pending));
        snprintf(cfg.provider, sizeof(cfg.provider), "docker");
        cfg.sandbox_pids = 256;
        snprintf(c.image, sizeof(c.image), "img:1");
        snprintf(c.entrypoint, sizeof(c.entrypoint), "[\"sleep\",\"9\"]");
        snprintf(c.env, sizeof(c.env), "{}");
        snprintf(c.metadata, sizeof(c.metadata), "{}");
        c.timeout_s = 60;
        c.disk_mb = -1;
        F.admissible_r = -ENOENT; /* the check could not say: left to the create */
        F.store_kind = OSB_STORE_CREATED;
        F.lease_kind = LEASE_GRANTED;
        body = json_tokener_parse("{\"image\":{\"uri\":\"img:1\"}}");
        assert_non_null(body);
        return 0;
}

static int teardown(void **state)
{
        (void)state;
        json_object_put(body);
        return 0;
}

static const char *field(const char *name)
{
        for (int i = 0; i + 1 < F.n_fields; i += 2)
                if (strcmp(F.fields[i], name) == 0)
                        return F.fields[i + 1];
        return NULL;
}

static bool zeroed(const void *p, size_t n)
{
        const unsigned char *b = p;

        for (size_t i = 0; i < n; i++)
                if (b[i])
                        return false;
        return true;
}

int __wrap_sandbox_image_admissible(struct provider *pv, const struct broker_config *bc,
                                    const char *image, char *err);
int __wrap_sandbox_image_admissible(struct provider *pv, const struct broker_config *bc,
                                    const char *image, char *err)
{
        (void)pv;
        (void)bc;
        if (F.admissible_r == -EPERM)
                snprintf(err, OSB_ERR_MAX, "image %s is not allowed", image);
        return F.admissible_r;
}

int __wrap_snapshot_store_image(struct redis_conn *rc, const struct broker_config *bc,
                                const char *id, const char *tenant, char *ret_image, char *ret_state);
int __wrap_snapshot_store_image(struct redis_conn *rc, const struct broker_config *bc,
                                const char *id, const char *tenant, char *ret_image, char *ret_state)
{
        (void)rc;
        (void)bc;
        assert_string_equal(tenant, "acme");
        assert_string_equal(id, "5555");
        if (F.snapshot_r == -EBUSY)
                snprintf(ret_state, SNAPSHOT_STATE_MAX, "Creating");
        if (F.snapshot_r == 0)
                snprintf(ret_image, 256, "snapshots:5555");
        return F.snapshot_r;
}

int __wrap_volume_for_create(struct provider *pv, const struct broker_config *bc, const char *tenant,
                             const char *sid, struct json_object *b, char **ret_record, char *err);
int __wrap_volume_for_create(struct provider *pv, const struct broker_config *bc, const char *tenant,
                             const char *sid, struct json_object *b, char **ret_record, char *err)
{
        (void)pv;
        (void)bc;
        (void)sid;
        assert_string_equal(tenant, "acme");
        assert_ptr_equal(b, body);
        *ret_record = NULL;
        if (F.volume_r) {
                snprintf(err, VOLUME_ERR_MAX, "volume quota reached");
                return F.volume_r;
        }
        if (F.volumes)
                *ret_record = strdup("[{\"name\":\"v\"}]");
        return 0;
}

void __wrap_volume_undo(struct provider *pv, const char *record);
void __wrap_volume_undo(struct provider *pv, const char *record)
{
        (void)pv;
        assert_string_equal(record, "[{\"name\":\"v\"}]");
        F.undo_calls++;
}

int __wrap_osb_store_create(struct redis_conn *rc, const struct broker_config *bc,
                            const struct osb_store_new *req, struct osb_store_outcome *out);
int __wrap_osb_store_create(struct redis_conn *rc, const struct broker_config *bc,
                            const struct osb_store_new *req, struct osb_store_outcome *out)
{
        (void)rc;
        (void)bc;
        F.store_calls++;
        assert_string_equal(req->tenant, "acme");
        assert_true(req->n <= 32);
        F.n_fields = req->n;
        for (int i = 0; i < req->n; i++)
                snprintf(F.fields[i], sizeof(F.fields[i]), "%s",
                         req->fields[i] ? req->fields[i] : "(null)");
        snprintf(F.stored_sid, sizeof(F.stored_sid), "%s", req->sid);
        snprintf(F.idem_key, sizeof(F.idem_key), "%s", req->idem_key);
        assert_string_equal(req->timeout_ms, "60000");
        memset(out, 0, sizeof(*out));
        out->kind = F.store_kind;
        out->warm = F.store_warm;
        out->admit = F.store_admit;
        out->n = 5;
        snprintf(out->sid, sizeof(out->sid), "%s", F.store_warm ? MEMBER : req->sid);
        return 0;
}

int __wrap_osb_store_delete(struct redis_conn *rc, const char *sid, const char *tenant,
                            const char *key);
int __wrap_osb_store_delete(struct redis_conn *rc, const char *sid, const char *tenant,
                            const char *key)
{
        (void)rc;
        assert_string_equal(tenant, "acme");
        F.delete_calls++;
        snprintf(F.deleted_sid, sizeof(F.deleted_sid), "%s", sid);
        snprintf(F.deleted_key, sizeof(F.deleted_key), "%s", key ? key : "");
        return 0;
}

int __wrap_osb_store_get(struct redis_conn *rc, const struct broker_config *bc, const char *sid,
                         bool full, struct osb_sandbox *ret);
int __wrap_osb_store_get(struct redis_conn *rc, const struct broker_config *bc, const char *sid,
                         bool full, struct osb_sandbox *ret)
{
        (void)rc;
        (void)bc;
        assert_false(full);
        F.get_calls++;
        memset(ret, 0, sizeof(*ret));
        if (F.get_r)
                return F.get_r;
        ret->json = json_object_new_object();
        json_object_object_add(ret->json, "id", json_object_new_string(sid));
        return 0;
}

int __wrap_osb_store_answered(struct redis_conn *rc, const char *sid);
int __wrap_osb_store_answered(struct redis_conn *rc, const char *sid)
{
        (void)rc;
        assert_string_equal(sid, F.stored_sid);
        F.answered_calls++;
        return 0;
}

int __wrap_lease_acquire(struct redis_conn *rc, const struct broker_config *bc,
                         const struct lease_request *req, struct lease_outcome *ret);
int __wrap_lease_acquire(struct redis_conn *rc, const struct broker_config *bc,
                         const struct lease_request *req, struct lease_outcome *ret)
{
        (void)rc;
        (void)bc;
        F.acquire_calls++;
        snprintf(F.lease_user, sizeof(F.lease_user), "%s", req->user_id);
        snprintf(F.lease_session, sizeof(F.lease_session), "%s", req->session_id);
        assert_string_equal(req->sandbox_id, req->session_id);
        assert_string_equal(req->mode, "exclusive");
        F.caller_makes = req->caller_makes;
        memset(ret, 0, sizeof(*ret));
        if (F.acquire_r)
                return F.acquire_r;
        ret->kind = F.lease_kind;
        if (F.lease_kind == LEASE_GRANTED) {
                ret->lease = json_object_new_object();
                json_object_object_add(ret->lease, "leaseId", json_object_new_string(LEASE));
        } else if (F.lease_kind == LEASE_QUEUED) {
                snprintf(ret->ticket_id, sizeof(ret->ticket_id), "%s", TICKET);
                ret->new_ticket = true;
                ret->position = 3;
        }
        return 0;
}

int __wrap_kafka_produce_sync(struct kafka_producer *p, const char *key, const char *payload,
                              size_t len);
int __wrap_kafka_produce_sync(struct kafka_producer *p, const char *key, const char *payload,
                              size_t len)
{
        (void)payload;
        (void)len;
        assert_ptr_equal(p, KAFKA);
        assert_string_equal(key, TICKET);
        return F.produce_r;
}

int __wrap_lease_ticket_cancel(struct redis_conn *rc, const char *ticket_id);
int __wrap_lease_ticket_cancel(struct redis_conn *rc, const char *ticket_id)
{
        (void)rc;
        assert_string_equal(ticket_id, TICKET);
        return F.cancel_r;
}

int __wrap_sandbox_transition(struct redis_conn *rc, const char *sid, const char *from,
                              const char *to, const char *reason, const char *message,
                              const char *ref);
int __wrap_sandbox_transition(struct redis_conn *rc, const char *sid, const char *from,
                              const char *to, const char *reason, const char *message,
                              const char *ref)
{
        (void)rc;
        (void)ref;
        assert_string_equal(sid, F.stored_sid);
        assert_string_equal(from, "Pending");
        assert_string_equal(to, "Pending");
        snprintf(F.transition_reason, sizeof(F.transition_reason), "%s", reason);
        snprintf(F.transition_msg, sizeof(F.transition_msg), "%s", message);
        return 0;
}

int __wrap_sandbox_lease_ready(struct redis_conn *rc, struct provider *pv,
                               const struct broker_config *bc, const char *lease_id,
                               struct json_object **ret_lease, char *err);
int __wrap_sandbox_lease_ready(struct redis_conn *rc, struct provider *pv,
                               const struct broker_config *bc, const char *lease_id,
                               struct json_object **ret_lease, char *err)
{
        (void)rc;
        (void)pv;
        (void)bc;
        assert_null(ret_lease);
        F.ready_calls++;
        snprintf(F.ready_lease, sizeof(F.ready_lease), "%s", lease_id);
        if (F.ready_r)
                snprintf(err, SANDBOX_ERR_MAX, "the member's entrypoint failed");
        return F.ready_r;
}

int __wrap_sandbox_lease_pull_then_queue(struct redis_conn *rc, struct provider *pv,
                                         const struct broker_config *bc, const char *lease_id,
                                         const char *sid, const char *image,
                                         const struct image_auth *auth, char *err);
int __wrap_sandbox_lease_pull_then_queue(struct redis_conn *rc, struct provider *pv,
                                         const struct broker_config *bc, const char *lease_id,
                                         const char *sid, const char *image,
                                         const struct image_auth *auth, char *err)
{
        (void)rc;
        (void)pv;
        (void)bc;
        (void)err;
        F.pull_calls++;
        snprintf(F.pull_lease, sizeof(F.pull_lease), "%s", lease_id);
        snprintf(F.pull_sid, sizeof(F.pull_sid), "%s", sid);
        snprintf(F.pull_image, sizeof(F.pull_image), "%s", image);
        snprintf(F.pull_user, sizeof(F.pull_user), "%s", auth->username);
        snprintf(F.pull_pass, sizeof(F.pull_pass), "%s", auth->password);
        return 0;
}

int __wrap_sandbox_image_prefetch(struct provider *pv, const struct broker_config *bc,
                                  const char *image, const struct image_auth *auth, char *err);
int __wrap_sandbox_image_prefetch(struct provider *pv, const struct broker_config *bc,
                                  const char *image, const struct image_auth *auth, char *err)
{
        (void)pv;
        (void)bc;
        F.prefetch_calls++;
        snprintf(F.pull_image, sizeof(F.pull_image), "%s", image);
        snprintf(F.pull_user, sizeof(F.pull_user), "%s", auth->username);
        snprintf(F.pull_pass, sizeof(F.pull_pass), "%s", auth->password);
        snprintf(err, PROVIDER_ERR_MAX, "registry unreachable");
        return -EIO;
}

static int run(const char *key, struct osb_create_outcome *out)
{
        const struct osb_create_input in = { .tenant = "acme",
                                             .c = &c,
                                             .body = body,
                                             .idem_key = key,
                                             .egress = "{\"default\":\"deny\"}" };

        return osb_create_run(NULL, NULL, KAFKA, &cfg, &in, &pending, out);
}

static void with_auth(void)
{
        c.has_auth = true;
        snprintf(c.auth_user, sizeof(c.auth_user), "bob");
        snprintf(c.auth_pass, sizeof(c.auth_pass), "hunter2");
}

/* ---- refusals before anything is stored ---- */

static void an_image_not_allowed_stores_nothing(void **state)
{
        struct osb_create_outcome out;

        (void)state;
        F.admissible_r = -EPERM;
        assert_int_equal(run("", &out), 0);
        assert_int_equal(out.kind, OSB_CREATE_IMAGE_REFUSED);
        assert_string_equal(out.err, "image img:1 is not allowed");
        assert_int_equal(F.store_calls + F.acquire_calls, 0);
        osb_create_outcome_clear(&out);
}

static void a_snapshot_must_be_the_tenant_s_and_ready(void **state)
{
        struct osb_create_outcome out;

        (void)state;
        snprintf(c.snapshot_id, sizeof(c.snapshot_id), "5555");
        F.snapshot_r = -ENOENT;
        assert_int_equal(run("", &out), 0);
        assert_int_equal(out.kind, OSB_CREATE_NO_SNAPSHOT);
        F.snapshot_r = -EBUSY;
        assert_int_equal(run("", &out), 0);
        assert_int_equal(out.kind, OSB_CREATE_SNAPSHOT_NOT_READY);
        assert_string_equal(out.snapshot_state, "Creating");
        F.snapshot_r = -EIO;
        assert_int_equal(run("", &out), -EIO);
        assert_int_equal(F.store_calls, 0);
        /* Ready: the sandbox is made from the snapshot's image */
        F.snapshot_r = 0;
        assert_int_equal(run("", &out), 0);
        assert_int_equal(out.kind, OSB_CREATE_ACCEPTED);
        assert_string_equal(field("image"), "snapshots:5555");
        assert_string_equal(field("snapshotId"), "5555");
        osb_create_outcome_clear(&out);
}

static void a_volume_failure_stores_nothing(void **state)
{
        struct osb_create_outcome out;

        (void)state;
        F.volume_r = -EDQUOT;
        assert_int_equal(run("", &out), 0);
        assert_int_equal(out.kind, OSB_CREATE_VOLUMES);
        assert_int_equal(out.volume_r, -EDQUOT);
        assert_string_equal(out.err, "volume quota reached");
        assert_int_equal(F.store_calls, 0);
        osb_create_outcome_clear(&out);
}

static void a_store_refusal_undoes_the_volumes(void **state)
{
        struct osb_create_outcome out;

        (void)state;
        F.volumes = true;
        F.store_kind = OSB_STORE_LIMIT;
        assert_int_equal(run("", &out), 0);
        assert_int_equal(out.kind, OSB_CREATE_STORE_REFUSED);
        assert_int_equal(out.store.kind, OSB_STORE_LIMIT);
        assert_int_equal(out.store.n, 5);
        assert_int_equal(F.undo_calls, 1);
        assert_int_equal(F.acquire_calls + F.delete_calls, 0);
        osb_create_outcome_clear(&out);
}

/* ---- admitted ---- */

static void a_granted_create_stores_the_record_and_its_lease(void **state)
{
        struct osb_create_outcome out;

        (void)state;
        F.volumes = true;
        assert_int_equal(run("key-1", &out), 0);
        assert_int_equal(out.kind, OSB_CREATE_ACCEPTED);
        assert_true(out.admitted);
        assert_int_equal(out.admission, LEASE_GRANTED);
        assert_string_equal(out.lease_id, LEASE);
        /* the record */
        assert_string_equal(field("image"), "img:1");
        assert_string_equal(field("pids"), "256");
        assert_string_equal(field("provider"), "docker");
        assert_string_equal(field("egress_policy"), "{\"default\":\"deny\"}");
        assert_string_equal(field("volumes"), "[{\"name\":\"v\"}]");
        assert_string_equal(field("lifecycle"), "");
        assert_int_equal(F.n_fields, 30);
        assert_string_equal(F.idem_key, "key-1");
        /* its lease: the create's own user, the sandbox as session, made
         * by the supervisors' workers */
        assert_string_equal(F.lease_user, LEASE_OSB_USER);
        assert_string_equal(F.lease_session, F.stored_sid);
        assert_false(F.caller_makes);
        assert_int_equal(F.ready_calls, 0);
        /* the volumes are the sandbox's now; nothing to do after the answer */
        assert_int_equal(F.undo_calls + F.delete_calls, 0);
        assert_int_equal(pending.work, OSB_AFTER_NONE);
        assert_string_equal(pending.sid, F.stored_sid);
        assert_non_null(out.sb.json);
        osb_create_outcome_clear(&out);
        assert_null(out.sb.json);
}

static void a_warm_member_is_made_ready_before_the_answer(void **state)
{
        struct osb_create_outcome out;

        (void)state;
        F.store_warm = true;
        F.ready_r = -EIO;
        assert_int_equal(run("", &out), 0);
        assert_int_equal(out.kind, OSB_CREATE_ACCEPTED);
        assert_string_equal(out.store.sid, MEMBER);
        assert_string_equal(F.lease_session, MEMBER);
        assert_true(F.caller_makes);
        assert_int_equal(F.ready_calls, 1);
        assert_string_equal(F.ready_lease, LEASE);
        assert_int_equal(out.warm_r, -EIO);
        assert_string_equal(out.warm_err, "the member's entrypoint failed");
        assert_string_equal(pending.sid, MEMBER);
        osb_create_outcome_clear(&out);
}

static void a_granted_create_with_pull_credentials_pulls_after_the_answer(void **state)
{
        struct osb_create_outcome out;
        struct osb_create_after_outcome after;

        (void)state;
        with_auth();
        assert_int_equal(run("", &out), 0);
        assert_int_equal(out.kind, OSB_CREATE_ACCEPTED);
        assert_true(F.caller_makes);
        assert_int_equal(pending.work, OSB_AFTER_PULL);
        assert_int_equal(F.pull_calls, 0);
        osb_create_after(NULL, NULL, &cfg, &pending, true, &after);
        assert_int_equal(F.answered_calls, 1);
        assert_int_equal(F.pull_calls, 1);
        assert_string_equal(F.pull_lease, LEASE);
        assert_string_equal(F.pull_sid, F.stored_sid);
        assert_string_equal(F.pull_image, "img:1");
        assert_string_equal(F.pull_user, "bob");
        assert_string_equal(F.pull_pass, "hunter2");
        assert_int_equal(after.work_r, 0);
        assert_true(zeroed(&pending, sizeof(pending)));
        osb_create_outcome_clear(&out);
}

static void a_queued_create_reads_queued_and_prefetches_its_image(void **state)
{
        struct osb_create_outcome out;
        struct osb_create_after_outcome after;

        (void)state;
        with_auth();
        F.lease_kind = LEASE_QUEUED;
        assert_int_equal(run("", &out), 0);
        assert_int_equal(out.kind, OSB_CREATE_ACCEPTED);
        assert_int_equal(out.admission, LEASE_QUEUED);
        assert_string_equal(out.ticket_id, TICKET);
        assert_string_equal(out.queued_msg, "waiting for a free slot (queue position 3)");
        assert_string_equal(F.transition_reason, "QUEUED");
        assert_string_equal(F.transition_msg, out.queued_msg);
        assert_int_equal(out.produce_r, 0);
        assert_int_equal(pending.work, OSB_AFTER_PREFETCH);
        /* an answer that reached nobody is not marked answered */
        osb_create_after(NULL, NULL, &cfg, &pending, false, &after);
        assert_int_equal(F.answered_calls, 0);
        assert_int_equal(F.prefetch_calls, 1);
        assert_string_equal(F.pull_pass, "hunter2");
        assert_int_equal(after.work_r, -EIO);
        assert_string_equal(after.err, "registry unreachable");
        assert_true(zeroed(&pending, sizeof(pending)));
        osb_create_outcome_clear(&out);
}

/* ---- failures after the record was stored ---- */

static void an_unconfirmed_ticket_deletes_the_record_and_its_volumes(void **state)
{
        struct osb_create_outcome out;

        (void)state;
        with_auth();
        F.volumes = true;
        F.lease_kind = LEASE_QUEUED;
        F.produce_r = -ETIMEDOUT;
        assert_int_equal(run("key-2", &out), 0);
        assert_int_equal(out.kind, OSB_CREATE_QUEUE_UNAVAILABLE);
        assert_int_equal(out.produce_r, -ETIMEDOUT);
        assert_false(out.admitted);
        assert_int_equal(F.delete_calls, 1);
        assert_string_equal(F.deleted_sid, F.stored_sid);
        assert_string_equal(F.deleted_key, "key-2");
        assert_int_equal(F.undo_calls, 1);
        assert_int_equal(F.get_calls, 0);
        assert_true(zeroed(&pending, sizeof(pending))); /* no credentials left */
        osb_create_outcome_clear(&out);
}

static void an_unconfirmed_ticket_a_supervisor_served_is_admitted(void **state)
{
        struct osb_create_outcome out;

        (void)state;
        F.lease_kind = LEASE_QUEUED;
        F.produce_r = -EIO;
        F.cancel_r = 1;
        assert_int_equal(run("", &out), 0);
        assert_int_equal(out.kind, OSB_CREATE_ACCEPTED);
        assert_true(out.admitted);
        assert_int_equal(out.produce_r, -EIO);
        assert_int_equal(F.delete_calls, 0);
        osb_create_outcome_clear(&out);
}

static void an_acquire_error_deletes_the_record(void **state)
{
        struct osb_create_outcome out;

        (void)state;
        F.volumes = true;
        F.acquire_r = -EIO;
        assert_int_equal(run("key-3", &out), -EIO);
        assert_int_equal(F.delete_calls, 1);
        assert_string_equal(F.deleted_key, "key-3");
        assert_int_equal(F.undo_calls, 1);
        F.acquire_r = 0;
        F.lease_kind = LEASE_CONFLICT; /* acquire.lua never answers it for a create */
        assert_int_equal(run("key-3", &out), -EPROTO);
        assert_int_equal(F.delete_calls, 2);
        osb_create_outcome_clear(&out);
}

static void a_record_gone_before_its_answer_is_a_fault_after_admission(void **state)
{
        struct osb_create_outcome out;

        (void)state;
        F.volumes = true;
        F.get_r = -ENOENT;
        assert_int_equal(run("", &out), -EPROTO);
        assert_true(out.admitted); /* the handler still audits the admission */
        assert_string_equal(out.lease_id, LEASE);
        assert_int_equal(F.undo_calls, 0); /* the volumes are the sandbox's */
        assert_null(out.sb.json);
        osb_create_outcome_clear(&out);
}

/* ---- Idempotency-Key replays ---- */

static void a_replay_answers_the_first_sandbox_and_undoes_its_own_volumes(void **state)
{
        struct osb_create_outcome out;

        (void)state;
        F.volumes = true;
        F.store_kind = OSB_STORE_REPLAY;
        assert_int_equal(run("key-4", &out), 0);
        assert_int_equal(out.kind, OSB_CREATE_ACCEPTED);
        assert_int_equal(out.store.kind, OSB_STORE_REPLAY);
        assert_false(out.admitted);
        assert_int_equal(F.acquire_calls, 0);
        assert_int_equal(F.undo_calls, 1);
        assert_int_equal(F.get_calls, 1);
        osb_create_outcome_clear(&out);
        /* the first create died before its admission: admitted now */
        F.store_admit = true;
        assert_int_equal(run("key-4", &out), 0);
        assert_true(out.admitted);
        assert_int_equal(F.acquire_calls, 1);
        osb_create_outcome_clear(&out);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
        const struct CMUnitTest tests[] = {
                T(an_image_not_allowed_stores_nothing),
                T(a_snapshot_must_be_the_tenant_s_and_ready),
                T(a_volume_failure_stores_nothing),
                T(a_store_refusal_undoes_the_volumes),
                T(a_granted_create_stores_the_record_and_its_lease),
                T(a_warm_member_is_made_ready_before_the_answer),
                T(a_granted_create_with_pull_credentials_pulls_after_the_answer),
                T(a_queued_create_reads_queued_and_prefetches_its_image),
                T(an_unconfirmed_ticket_deletes_the_record_and_its_volumes),
                T(an_unconfirmed_ticket_a_supervisor_served_is_admitted),
                T(an_acquire_error_deletes_the_record),
                T(a_record_gone_before_its_answer_is_a_fault_after_admission),
                T(a_replay_answers_the_first_sandbox_and_undoes_its_own_volumes),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
