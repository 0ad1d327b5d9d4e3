/* osb_store: see osb_store.h. */
#include "sandbox/osb_store.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "store/auth.h"
#include "store/lua_scripts.h"
#include "sandbox/opensandbox.h"
#include "sandbox/opensandbox_reply.h"
#include "sandbox/sandbox.h"
#include "store/sandbox_record.h"
#include "store/sandbox_record_reply.h"
#include "core/timeutil.h"

int osb_store_get(struct redis_conn *c, const struct broker_config *cfg, const char *sid, bool full,
                  struct osb_sandbox *ret)
{
        char key[SANDBOX_RECORD_KEY_MAX];
        redisReply *rep = NULL;
        int r;

        memset(ret, 0, sizeof(*ret));
        r = sandbox_record_key(cfg, sid, key, sizeof(key));
        if (r < 0)
                return r;
        const char *argv[] = { "HGETALL", key };
        r = redis_conn_command(c, 2, argv, &rep);
        if (r < 0)
                return r;
        r = sandbox_record_from_hash(rep, SANDBOX_RECORD_OWNER | SANDBOX_RECORD_VOLUMES | SANDBOX_RECORD_STATUS,
                                     &ret->rec);
        if (r == 0 && osb_sandbox_json(rep, full, &ret->json) < 0)
                r = -EPROTO; /* a record that is there: not "no sandbox" */
        reply_free(rep);
        if (r < 0)
                osb_sandbox_clear(ret);
        return r;
}

void osb_sandbox_clear(struct osb_sandbox *s)
{
        if (!s)
                return;
        sandbox_record_clear(&s->rec);
        json_object_put(s->json);
        s->json = NULL;
}

int osb_store_create(struct redis_conn *c, const struct broker_config *cfg,
                     const struct osb_store_new *req, struct osb_store_outcome *out)
{
        const char *argv[13 + 32];
        redisReply *rep = NULL;
        char max[16], ask[24] = "", ddef[16], dmax[16], kttl[24], kmax[16], unanswered[24];
        const redisReply *tag, *e1, *e2;
        int r, argc = 0;

        memset(out, 0, sizeof(*out));
        if (req->n > 32)
                return -E2BIG;
        snprintf(max, sizeof(max), "%d", cfg->osb_max_per_tenant);
        if (req->disk_mb >= 0)
                snprintf(ask, sizeof(ask), "%lld", req->disk_mb);
        snprintf(ddef, sizeof(ddef), "%d", cfg->sandbox_disk_mb);
        snprintf(dmax, sizeof(dmax), "%d", cfg->sandbox_disk_max_mb);
        snprintf(kttl, sizeof(kttl), "%lld", (long long)cfg->osb_idempotency_ttl_s * 1000);
        snprintf(kmax, sizeof(kmax), "%d", cfg->osb_idempotency_max);
        snprintf(unanswered, sizeof(unanswered), "%lld", (long long)cfg->osb_unanswered_s * 1000);
        argv[argc++] = req->sid;
        argv[argc++] = req->tenant;
        argv[argc++] = max;
        argv[argc++] = req->timeout_ms;
        argv[argc++] = req->pool_image ? req->pool_image : "";
        argv[argc++] = ask;
        argv[argc++] = ddef;
        argv[argc++] = dmax;
        argv[argc++] = req->idem_key ? req->idem_key : "";
        argv[argc++] = req->idem_key && req->fingerprint ? req->fingerprint : "";
        argv[argc++] = kttl;
        argv[argc++] = kmax;
        argv[argc++] = unanswered;
        for (int i = 0; i < req->n; i++)
                argv[argc++] = req->fields[i];
        r = redis_conn_script_tagged(c, LUA_OSB_CREATE, argc, argv, &rep);
        if (r < 0)
                return r;
        tag = rep->element[0];
        e1 = rep->elements >= 2 ? rep->element[1] : NULL;
        e2 = rep->elements >= 3 ? rep->element[2] : NULL;
        r = -EPROTO;
        if ((reply_is_str(tag, "limit") || reply_is_str(tag, "disk")) && rep->elements == 2) {
                out->kind = reply_is_str(tag, "limit") ? OSB_STORE_LIMIT : OSB_STORE_DISK;
                out->n = e1->type == REDIS_REPLY_INTEGER ? e1->integer : 0;
                r = 0;
        } else if (!e1 || !reply_is_str(e1, NULL) || e1->len == 0 || e1->len >= sizeof(out->sid)) {
                r = -EPROTO;
        } else if (reply_is_str(tag, "ok") && rep->elements == 3 && reply_is_str(e2, NULL)) {
                out->kind = OSB_STORE_CREATED;
                out->warm = e2->len > 0;
                r = 0;
        } else if (reply_is_str(tag, "replay") && rep->elements == 4 && reply_is_str(e2, NULL) &&
                   reply_is_str(rep->element[3], NULL)) {
                out->kind = OSB_STORE_REPLAY;
                out->warm = e2->len > 0;
                out->admit = rep->element[3]->len > 0;
                r = 0;
        } else if (reply_is_str(tag, "mismatch") && rep->elements == 2) {
                out->kind = OSB_STORE_KEY_MISMATCH;
                r = 0;
        } else if (reply_is_str(tag, "spent") && rep->elements == 2) {
                out->kind = OSB_STORE_KEY_SPENT;
                r = 0;
        }
        if (r == 0 && out->kind != OSB_STORE_LIMIT && out->kind != OSB_STORE_DISK)
                memcpy(out->sid, e1->str, e1->len + 1);
        reply_free(rep);
        return r;
}

int osb_store_answered(struct redis_conn *c, const char *sid)
{
        const char *argv[] = { sid };
        redisReply *rep = NULL;
        int r = redis_conn_script(c, LUA_OSB_ANSWERED, 1, argv, &rep);

        reply_free(rep);
        return r < 0 ? r : 0;
}

int osb_store_reap_unanswered(struct redis_conn *c, const struct broker_config *cfg, int limit,
                              void (*fn)(void *ud, const char *sid, const char *tenant), void *ud)
{
        char lim[16], msg[192];
        redisReply *rep = NULL;
        int r, n = 0;

        snprintf(lim, sizeof(lim), "%d", limit);
        snprintf(msg, sizeof(msg),
                 "no client got the answer of its create within %d s (OPENSANDBOX_UNANSWERED_S) "
                 "and no request named it since: removed",
                 cfg->osb_unanswered_s);
        const char *argv[] = { lim, msg };
        r = redis_conn_script(c, LUA_OSB_UNANSWERED, 2, argv, &rep);
        if (r < 0)
                return r;
        if (rep->type != REDIS_REPLY_ARRAY) {
                reply_free(rep);
                return -EPROTO;
        }
        for (size_t i = 0; i + 1 < rep->elements; i += 2) {
                if (!reply_is_str(rep->element[i], NULL) || !reply_is_str(rep->element[i + 1], NULL))
                        continue;
                n++;
                if (fn)
                        fn(ud, rep->element[i]->str, rep->element[i + 1]->str);
        }
        reply_free(rep);
        return n;
}

int osb_store_delete(struct redis_conn *c, const char *sid, const char *tenant, const char *idem_key)
{
        const char *argv[] = { sid, tenant, idem_key ? idem_key : "" };
        redisReply *rep = NULL;
        int r = redis_conn_script_tagged(c, LUA_OSB_DELETE, 3, argv, &rep);

        if (r < 0)
                return r;
        if (reply_is_str(rep->element[0], "notfound"))
                r = -ENOENT;
        else if (reply_is_str(rep->element[0], "gone") && rep->elements == 2 &&
                 reply_is_str(rep->element[1], "Terminated"))
                r = -EALREADY;
        reply_free(rep);
        return r;
}

int osb_store_renew(struct redis_conn *c, const struct broker_config *cfg, const char *sid,
                    const char *tenant, long long new_ms, long long latest_ms, char *why)
{
        char newms[24], latest[24], tttl[16];
        redisReply *rep = NULL;
        int r;

        why[0] = '\0';
        snprintf(newms, sizeof(newms), "%lld", new_ms);
        snprintf(latest, sizeof(latest), "%lld", latest_ms);
        snprintf(tttl, sizeof(tttl), "%d", cfg->ticket_ttl_ms);
        const char *argv[] = { sid, tenant, newms, latest, tttl };
        r = redis_conn_script_tagged(c, LUA_OSB_RENEW, 5, argv, &rep);
        if (r < 0)
                return r;
        if (rep->elements == 2 && reply_is_str(rep->element[1], NULL))
                snprintf(why, 256, "%s", rep->element[1]->str);
        if (reply_is_str(rep->element[0], "ok"))
                r = 0;
        else if (reply_is_str(rep->element[0], "invalid"))
                r = -EINVAL;
        else if (reply_is_str(rep->element[0], "conflict"))
                r = -EBUSY;
        else
                r = -ENOENT;
        reply_free(rep);
        return r;
}

int osb_store_metadata_patch(struct redis_conn *c, const char *sid, const char *tenant,
                             const char *patch, size_t max, struct json_object **ret)
{
        char maxs[24];
        redisReply *rep = NULL;
        int r;

        *ret = NULL;
        snprintf(maxs, sizeof(maxs), "%zu", max);
        const char *argv[] = { sid, tenant, maxs, patch };
        r = redis_conn_script_tagged(c, LUA_OSB_METADATA, 4, argv, &rep);
        if (r < 0)
                return r;
        if (reply_is_str(rep->element[0], "ok") && rep->elements == 2 &&
            rep->element[1]->type == REDIS_REPLY_ARRAY) {
                if (osb_sandbox_json(rep->element[1], true, ret) < 0)
                        r = -EPROTO;
        } else if (reply_is_str(rep->element[0], "toolarge")) {
                r = -E2BIG;
        } else if (reply_is_str(rep->element[0], "notfound")) {
                r = -ENOENT;
        } else {
                r = -EPROTO;
        }
        reply_free(rep);
        return r;
}

int osb_store_list(struct redis_conn *c, const char *tenant, long page, long size,
                   const struct osb_list_filter *f, long long *ret_total, struct json_object **ret_items)
{
        const char *argv[8 + 8 + 32];
        char pg[24], sz[24], scan[24], ns[8], nm[8];
        redisReply *rep = NULL;
        struct json_object *items = NULL;
        int argc = 0, r;

        *ret_total = 0;
        *ret_items = NULL;
        snprintf(pg, sizeof(pg), "%ld", page);
        snprintf(sz, sizeof(sz), "%ld", size);
        snprintf(scan, sizeof(scan), "%d", OSB_LIST_SCAN_MAX);
        snprintf(ns, sizeof(ns), "%d", f->n_states);
        snprintf(nm, sizeof(nm), "%d", f->n_md);
        argv[argc++] = tenant;
        argv[argc++] = pg;
        argv[argc++] = sz;
        argv[argc++] = scan;
        argv[argc++] = ns;
        for (int i = 0; i < f->n_states && i < 8; i++)
                argv[argc++] = f->states[i];
        argv[argc++] = nm;
        for (int i = 0; i < f->n_md && i < 16; i++) {
                argv[argc++] = f->md_keys[i];
                argv[argc++] = f->md_vals[i];
        }
        r = redis_conn_script(c, LUA_OSB_LIST, argc, argv, &rep);
        if (r < 0)
                return r;
        r = -EPROTO;
        if (rep->type != REDIS_REPLY_ARRAY || rep->elements < 1 ||
            rep->element[0]->type != REDIS_REPLY_INTEGER)
                goto out;
        r = -ENOMEM;
        items = json_object_new_array();
        if (!items)
                goto out;
        for (size_t i = 1; i < rep->elements; i++) {
                struct json_object *sb;
                /* a record that does not render is left out of the page */
                if (osb_sandbox_json(rep->element[i], true, &sb) == 0 && json_object_array_add(items, sb) < 0) {
                        json_object_put(sb);
                        goto out;
                }
        }
        *ret_total = rep->element[0]->integer;
        *ret_items = items;
        items = NULL;
        r = 0;
out:
        json_object_put(items);
        reply_free(rep);
        return r;
}

/* token_issue.lua or token_rotate.lua with a fresh random token (used when
 * the key has none yet, or by the rotation). */
static int token_script(struct redis_conn *c, enum lua_script_id id, const char *sid,
                        const char *tenant, const char *key_id, char ret_token[OSB_TOKEN_MAX],
                        long long *ret_revoked)
{
        char tok[33], hash[65];
        redisReply *rep = NULL;
        int r;

        ret_token[0] = '\0';
        if (ret_revoked)
                *ret_revoked = 0;
        if (!key_id || !*key_id)
                return -EINVAL;
        r = timeutil_random_id(tok, sizeof(tok));
        if (r == 0)
                r = auth_key_hash(tok, hash);
        if (r < 0)
                goto out;
        const char *argv[] = { sid, tenant ? tenant : "", key_id, tok, hash };
        r = redis_conn_script_tagged(c, id, 5, argv, &rep);
        if (r < 0)
                goto out;
        if (reply_is_str(rep->element[0], "notfound")) {
                r = -ENOENT;
        } else if (!reply_is_str(rep->element[0], "ok") || rep->elements < 2 ||
                   !reply_is_str(rep->element[1], NULL) || rep->element[1]->len == 0 ||
                   rep->element[1]->len >= OSB_TOKEN_MAX) {
                r = -EPROTO;
        } else {
                memcpy(ret_token, rep->element[1]->str, rep->element[1]->len + 1);
                if (ret_revoked && rep->elements == 3 && rep->element[2]->type == REDIS_REPLY_INTEGER)
                        *ret_revoked = rep->element[2]->integer;
                r = 0;
        }
out:
        explicit_bzero(tok, sizeof(tok));
        reply_free(rep);
        return r;
}

int osb_store_token_issue(struct redis_conn *c, const char *sid, const char *tenant,
                          const char *key_id, char ret_token[OSB_TOKEN_MAX])
{
        return token_script(c, LUA_TOKEN_ISSUE, sid, tenant, key_id, ret_token, NULL);
}

int osb_store_token_rotate(struct redis_conn *c, const char *sid, const char *tenant,
                           const char *key_id, char ret_token[OSB_TOKEN_MAX], long long *ret_revoked)
{
        return token_script(c, LUA_TOKEN_ROTATE, sid, tenant, key_id, ret_token, ret_revoked);
}
