/* sandbox_lookup: reads of a sandbox for the handlers (sandbox.h): its
 * owner for the audit trail, a lease's access to it, an execd token's
 * sandbox, the leases on a slot. */
#include "sandbox/sandbox.h"
#include "sandbox/sandbox_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/auth.h"
#include "store/lease.h"
#include "store/sandbox_record.h"

/* src into buf when it fits, else "" (sandbox_owner's contract). */
static void copy_fit(char *buf, size_t size, const char *src)
{
        size_t n = strlen(src);

        if (n >= size)
                n = 0;
        memcpy(buf, src, n);
        buf[n] = '\0';
}

int sandbox_owner_get(struct redis_conn *rc, const struct broker_config *cfg, const char *sid,
                      struct sandbox_owner *o)
{
        struct sandbox_record rec;
        int r;

        memset(o, 0, sizeof(*o));
        r = sandbox_record_read(rc, cfg, sid, SANDBOX_RECORD_OWNER, &rec);
        if (r == -EPROTO)
                r = -ENOENT; /* as an unreadable reply was */
        if (r < 0)
                return r;
        copy_fit(o->state, sizeof(o->state), rec.state);
        copy_fit(o->reason, sizeof(o->reason), rec.reason);
        copy_fit(o->user_id, sizeof(o->user_id), rec.user_id);
        copy_fit(o->tenant, sizeof(o->tenant), rec.tenant);
        sandbox_record_clear(&rec);
        return 0;
}

int sandbox_access(struct redis_conn *rc, const struct broker_config *cfg, const char *tenant,
                   const char *lease_id, const char *sid, struct sandbox_access *a)
{
        char key[160], owner[LEASE_SCOPED_MAX];
        struct sandbox_record rec;
        const char *user;
        redisReply *rep = NULL;
        int r;

        memset(a, 0, sizeof(*a));
        snprintf(key, sizeof(key), "%slease:%s", cfg->key_prefix, lease_id);
        const char *largv[] = { "HMGET", key, "state", "sandboxId", "workdir", "linuxUser", "mode",
                                "userId", "sessionId", "slot", "fixedExpiry" };
        r = redis_conn_command(rc, 11, largv, &rep);
        if (r < 0)
                return r;
        if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 9) {
                r = -EPROTO;
                goto out;
        }
        for (size_t i = 0; i < 8; i++)
                if (!reply_is_str(rep->element[i], NULL)) {
                        r = -ENOENT;
                        goto out;
                }
        if (strcmp(rep->element[0]->str, "active") || strcmp(rep->element[1]->str, sid)) {
                r = -ENOENT;
                goto out;
        }
        /* another tenant's lease, or an OpenSandbox admission: not there */
        user = lease_unscope(rep->element[5]->str, owner, sizeof(owner));
        if (strcmp(owner, tenant) != 0 || reply_is_str(rep->element[8], NULL)) {
                r = -ENOENT;
                goto out;
        }
        if (copy_str(rep->element[2], a->workdir, sizeof(a->workdir)) < 0 ||
            copy_str(rep->element[3], a->linux_user, sizeof(a->linux_user)) < 0 ||
            copy_str(rep->element[4], a->mode, sizeof(a->mode)) < 0 ||
            snprintf(a->user_id, sizeof(a->user_id), "%s", user) >= (int)sizeof(a->user_id) ||
            copy_str(rep->element[6], a->session_id, sizeof(a->session_id)) < 0 ||
            copy_str(rep->element[7], a->slot, sizeof(a->slot)) < 0) {
                r = -EPROTO;
                goto out;
        }
        a->seat = strcmp(a->mode, "multi_user_shared") == 0;
        reply_free(rep);
        rep = NULL;
        r = sandbox_record_read(rc, cfg, sid, 0, &rec);
        if (r == -EPROTO)
                r = -ENOENT; /* as an unreadable reply was */
        if (r < 0)
                return r;
        copy_fit(a->state, sizeof(a->state), rec.state);
        copy_fit(a->ref, sizeof(a->ref), rec.ref);
        sandbox_record_clear(&rec);
        return 0;
out:
        reply_free(rep);
        return r;
}

int sandbox_execd_lookup(struct redis_conn *rc, const struct broker_config *cfg, const char *sid,
                         const char *token, const char *tenant, struct sandbox_execd *x)
{
        char hash[65] = "";
        redisReply *rep = NULL;
        int r;

        memset(x, 0, sizeof(*x));
        /* the token is looked up by its SHA-256, as API keys are: what a
         * lookup's timing could tell is about the hash, not the token */
        if (token && *token) {
                if (strlen(token) > SANDBOX_TOKEN_LEN_MAX)
                        return -ENOENT;
                r = auth_key_hash(token, hash);
                if (r < 0)
                        return r;
        }
        const char *argv[] = { sid, hash, tenant ? tenant : "" };
        r = redis_conn_script_tagged(rc, LUA_TOKEN_CHECK, 3, argv, &rep);
        if (r < 0)
                return r;
        if (reply_is_str(rep->element[0], "notfound")) {
                r = -ENOENT;
                goto out;
        }
        if (reply_is_str(rep->element[0], "revoked")) {
                r = -EKEYREVOKED;
                goto out;
        }
        r = -EPROTO;
        if (!reply_is_str(rep->element[0], "ok") || rep->elements != 8 ||
            copy_str(rep->element[1], x->state, sizeof(x->state)) < 0)
                goto out;
        (void)copy_str(rep->element[2], x->ref, sizeof(x->ref));
        (void)copy_str(rep->element[3], x->mode, sizeof(x->mode));
        (void)copy_str(rep->element[4], x->tenant, sizeof(x->tenant));
        /* a claimed warm-pool member's container lacks the create's env */
        if (reply_is_str(rep->element[5], NULL) && rep->element[5]->len > 0)
                (void)copy_str(rep->element[6], x->env, sizeof(x->env));
        if (copy_str(rep->element[7], x->runtime, sizeof(x->runtime)) < 0 || !x->runtime[0])
                snprintf(x->runtime, sizeof(x->runtime), "%s", cfg->sandbox_runtime);
        r = 0;
out:
        if (r < 0)
                memset(x, 0, sizeof(*x));
        explicit_bzero(hash, sizeof(hash));
        reply_free(rep);
        return r;
}

int sandbox_slot_refs(struct redis_conn *rc, const struct broker_config *cfg, const char *slot)
{
        char key[400];
        redisReply *rep = NULL;
        int r;

        snprintf(key, sizeof(key), "%sslot:%s", cfg->key_prefix, slot);
        const char *argv[] = { "HGET", key, "refs" };
        r = redis_conn_command(rc, 3, argv, &rep);
        if (r < 0)
                return r;
        r = reply_is_str(rep, NULL) ? atoi(rep->str) : 0;
        reply_free(rep);
        return r;
}
