/* osb_create_run: the OpenSandbox create, from a parsed body to an
 * admitted record. See osb_create_run.h. */
#include "sandbox/osb_create_run.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox/admission.h"
#include "core/timeutil.h"

void osb_create_outcome_clear(struct osb_create_outcome *o)
{
        if (!o)
                return;
        osb_sandbox_clear(&o->sb);
        memset(o, 0, sizeof(*o));
}

/* The create's image: snapshotId's (this tenant's, Ready), made by the
 * broker; else image.uri, which IMAGE_ALLOW must allow when it is not on
 * the host (another failure of the check leaves it to the create). 0 when
 * usable, 1 with ret->kind set when refused, or an error. */
static int create_image(struct redis_conn *rc, struct provider *pv, const struct broker_config *cfg,
                        const struct osb_create_input *in, struct osb_create_outcome *ret)
{
        struct osb_create *c = in->c;
        int r;

        if (!c->snapshot_id[0]) {
                if (sandbox_image_admissible(pv, cfg, c->image, ret->err) != -EPERM)
                        return 0;
                ret->kind = OSB_CREATE_IMAGE_REFUSED;
                return 1;
        }
        r = snapshot_store_image(rc, cfg, c->snapshot_id, in->tenant, c->image, ret->snapshot_state);
        if (r == -ENOENT) {
                ret->kind = OSB_CREATE_NO_SNAPSHOT;
                return 1;
        }
        if (r == -EBUSY) {
                ret->kind = OSB_CREATE_SNAPSHOT_NOT_READY;
                return 1;
        }
        return r;
}

static void pending_keep(struct osb_create_pending *p, const struct osb_create *c,
                         enum osb_create_after_work work)
{
        p->work = work;
        snprintf(p->image, sizeof(p->image), "%s", c->image);
        memcpy(p->user, c->auth_user, sizeof(p->user));
        memcpy(p->pass, c->auth_pass, sizeof(p->pass));
}

/* Admission of the stored record sid: the same slots and queue as lease
 * acquires (acquire.lua is idempotent per session: a replay that finds a
 * lease or a ticket makes no other). 0 when admitted, 1 with ret->kind
 * set when refused, or an error; either failure deletes the record with
 * its key. */
static int create_admit(struct redis_conn *rc, struct provider *pv, struct kafka_producer *kafka,
                        const struct broker_config *cfg, const struct osb_create_input *in,
                        struct osb_create_pending *p, struct osb_create_outcome *ret)
{
        const char *sid = ret->store.sid;
        bool warm = ret->store.warm;
        struct lease_request lr = { .tenant = in->tenant,
                                    .user_id = LEASE_OSB_USER,
                                    .session_id = sid,
                                    .mode = "exclusive",
                                    .pool_id = "",
                                    .sandbox_id = sid,
                                    .caller_makes = warm || in->c->has_auth };
        struct admission_outcome ad;
        struct json_object *lid;
        int r = admission_acquire(rc, kafka, cfg, &lr, &ad);

        if (r < 0)
                goto fail;
        if (ad.queue == ADMISSION_QUEUE_SERVED || ad.queue == ADMISSION_QUEUE_UNAVAILABLE)
                ret->produce_r = ad.produce_r;
        if (ad.queue == ADMISSION_QUEUE_UNAVAILABLE) {
                snprintf(ret->ticket_id, sizeof(ret->ticket_id), "%s", ad.lease.ticket_id);
                ret->kind = OSB_CREATE_QUEUE_UNAVAILABLE;
                r = 1;
                goto fail;
        }
        if (ad.lease.kind == LEASE_QUEUED) {
                ret->admitted = true;
                ret->admission = LEASE_QUEUED;
                snprintf(ret->ticket_id, sizeof(ret->ticket_id), "%s", ad.lease.ticket_id);
                snprintf(ret->queued_msg, sizeof(ret->queued_msg),
                         "waiting for a free slot (queue position %lld)", ad.lease.position);
                (void)sandbox_transition(rc, sid, "Pending", "Pending", "QUEUED", ret->queued_msg,
                                         "");
                if (in->c->has_auth)
                        pending_keep(p, in->c, OSB_AFTER_PREFETCH);
        } else if (ad.lease.kind == LEASE_GRANTED) {
                ret->admitted = true;
                ret->admission = LEASE_GRANTED;
                json_object_object_get_ex(ad.lease.lease, "leaseId", &lid);
                snprintf(ret->lease_id, sizeof(ret->lease_id), "%s", json_object_get_string(lid));
                snprintf(p->lease_id, sizeof(p->lease_id), "%s", ret->lease_id);
                if (warm) {
                        /* a running member: apply the request (limits,
                         * entrypoint) now and answer Running; its image is
                         * on the host. A failure leaves the record Failed. */
                        r = sandbox_lease_ready(rc, pv, cfg, ret->lease_id, NULL, ret->warm_err);
                        ret->warm_r = r == -ENOENT ? 0 : r;
                        r = 0;
                } else if (in->c->has_auth) {
                        /* the pull credentials live only in the caller's
                         * memory: the image is pulled after the answer, then
                         * the workers make the sandbox */
                        pending_keep(p, in->c, OSB_AFTER_PULL);
                }
                /* else the supervisors' provisioning workers make it (the
                 * intent stored by lease_acquire) */
        } else {
                r = -EPROTO;
                goto fail;
        }
        admission_outcome_clear(&ad);
        return 0;
fail:
        (void)osb_store_delete(rc, sid, in->tenant, in->idem_key);
        admission_outcome_clear(&ad);
        return r;
}

/* The record's fields (osb_store_new.fields: names and values, their count
 * returned); the numbers in n. */
#define CREATE_FIELDS 30
struct create_nums {
        char cpus[24], mem[24], pids[16], exp[24];
};

static int create_fields(const struct broker_config *cfg, const struct osb_create_input *in,
                         const char *volumes, struct create_nums *n, const char **f)
{
        const struct osb_create *c = in->c;
        int i = 0;

        snprintf(n->cpus, sizeof(n->cpus), "%lld", (long long)c->nano_cpus);
        snprintf(n->mem, sizeof(n->mem), "%lld", (long long)c->memory_bytes);
        snprintf(n->pids, sizeof(n->pids), "%d", cfg->sandbox_pids);
        n->exp[0] = '\0'; /* timeout ms; "" = manual cleanup */
        if (c->timeout_s > 0)
                snprintf(n->exp, sizeof(n->exp), "%lld", (long long)c->timeout_s * 1000);
#define FIELD(name, value) (f[i++] = (name), f[i++] = (value))
        FIELD("image", c->image);
        FIELD("entrypoint", c->entrypoint);
        FIELD("env", c->env);
        FIELD("metadata", c->metadata);
        FIELD("nanoCpus", n->cpus);
        FIELD("memoryBytes", n->mem);
        FIELD("pids", n->pids);
        FIELD("provider", cfg->provider);
        FIELD("egress_policy", in->egress);
        FIELD("snapshotId", c->snapshot_id);
        FIELD("volumes", volumes ? volumes : "");
        FIELD("runtime", c->runtime);
        FIELD("extensions", c->extensions);
        FIELD("renewExtendMs", c->renew_extend_ms);
        FIELD("lifecycle", c->lifecycle ? c->lifecycle : "");
#undef FIELD
        return i;
}

int osb_create_run(struct redis_conn *rc, struct provider *pv, struct kafka_producer *kafka,
                   const struct broker_config *cfg, const struct osb_create_input *in,
                   struct osb_create_pending *pending, struct osb_create_outcome *ret)
{
        char sid[33], fp[OSB_FINGERPRINT_MAX] = "";
        char *volumes = NULL;   /* the record's volumes (volume.h); NULL = none */
        bool committed = false; /* the sandbox exists: the volumes made are its own */
        const char *fields[CREATE_FIELDS];
        struct create_nums nums;
        int r;

        memset(ret, 0, sizeof(*ret));
        explicit_bzero(pending, sizeof(*pending));
        r = create_image(rc, pv, cfg, in, ret);
        if (r != 0)
                goto out;
        if ((in->idem_key[0] && osb_create_fingerprint(in->body, fp) < 0) ||
            timeutil_random_id(sid, sizeof(sid)) < 0) {
                r = -EIO;
                goto out;
        }
        /* a replay undoes the volumes it made (volume_undo below): the
         * sandbox it answers has its own */
        r = volume_for_create(pv, cfg, in->tenant, sid, in->body, &volumes, ret->err);
        if (r < 0) {
                ret->kind = OSB_CREATE_VOLUMES;
                ret->volume_r = r;
                r = 1;
                goto out;
        }
        int n = create_fields(cfg, in, volumes, &nums, fields);
        /* a member of the image's warm pool, taken by the same script that
         * stores the record: the sandbox then has the member's id */
        const struct osb_store_new nw = {
                .sid = sid,
                .tenant = in->tenant,
                .timeout_ms = nums.exp,
                .pool_image = osb_create_pool(cfg, in->c, volumes != NULL),
                .disk_mb = in->c->disk_mb,
                .idem_key = in->idem_key,
                .fingerprint = fp,
                .fields = fields,
                .n = n,
        };
        r = osb_store_create(rc, cfg, &nw, &ret->store);
        if (r < 0)
                goto out;
        if (ret->store.kind != OSB_STORE_CREATED && ret->store.kind != OSB_STORE_REPLAY) {
                ret->kind = OSB_CREATE_STORE_REFUSED;
                r = 1;
                goto out;
        }
        committed = ret->store.kind == OSB_STORE_CREATED;
        /* a new record, or the key's whose create died before asking for a
         * slot, is admitted; any other replay is answered as it is now */
        if (ret->store.kind == OSB_STORE_CREATED || ret->store.admit) {
                r = create_admit(rc, pv, kafka, cfg, in, pending, ret);
                if (r != 0) {
                        committed = false;
                        goto out;
                }
        }
        snprintf(pending->sid, sizeof(pending->sid), "%s", ret->store.sid);
        r = osb_store_get(rc, cfg, ret->store.sid, false, &ret->sb);
        if (r == -ENOENT)
                r = -EPROTO; /* the record it just made or named: gone is a fault */
out:
        if (volumes && !committed)
                volume_undo(pv, volumes);
        free(volumes);
        if (r != 0) {
                explicit_bzero(pending, sizeof(*pending));
                osb_sandbox_clear(&ret->sb);
        }
        return r < 0 ? r : 0;
}

void osb_create_after(struct redis_conn *rc, struct provider *pv, const struct broker_config *cfg,
                      struct osb_create_pending *p, bool answered,
                      struct osb_create_after_outcome *ret)
{
        struct image_auth auth = { p->user, p->pass };

        memset(ret, 0, sizeof(*ret));
        if (answered)
                ret->answered_r = osb_store_answered(rc, p->sid);
        if (p->work == OSB_AFTER_PULL)
                ret->work_r = sandbox_lease_pull_then_queue(rc, pv, cfg, p->lease_id, p->sid,
                                                            p->image, &auth, ret->err);
        else if (p->work == OSB_AFTER_PREFETCH)
                ret->work_r = sandbox_image_prefetch(pv, cfg, p->image, &auth, ret->err);
        explicit_bzero(p, sizeof(*p));
}
