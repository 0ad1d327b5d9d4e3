/* osb_store: see osb_store.h. */
#include "osb_store.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "auth.h"
#include "lua_scripts.h"
#include "sandbox.h"
#include "timeutil.h"

int osb_store_get(struct redis_conn *c, const struct broker_config *cfg, const char *sid,
                  redisReply **ret)
{
        char key[160];

        snprintf(key, sizeof(key), "%ssandbox:%s", cfg->key_prefix, sid);
        const char *argv[] = { "HGETALL", key };
        return redis_conn_command(c, 2, argv, ret);
}

int osb_store_create(struct redis_conn *c, const struct broker_config *cfg, const char *sid,
                     const char *tenant, const char *timeout_ms, const char *pool_image,
                     long long disk_mb, const char **fields, int n, char *ret_sid, bool *ret_warm,
                     long long *ret_n)
{
        const char *argv[8 + 32];
        redisReply *rep = NULL;
        char max[16], ask[24] = "", ddef[16], dmax[16];
        int r, argc = 0;

        if (n > 32)
                return -E2BIG;
        snprintf(max, sizeof(max), "%d", cfg->osb_max_per_tenant);
        if (disk_mb >= 0)
                snprintf(ask, sizeof(ask), "%lld", disk_mb);
        snprintf(ddef, sizeof(ddef), "%d", cfg->sandbox_disk_mb);
        snprintf(dmax, sizeof(dmax), "%d", cfg->sandbox_disk_max_mb);
        argv[argc++] = sid;
        argv[argc++] = tenant;
        argv[argc++] = max;
        argv[argc++] = timeout_ms;
        argv[argc++] = pool_image ? pool_image : "";
        argv[argc++] = ask;
        argv[argc++] = ddef;
        argv[argc++] = dmax;
        for (int i = 0; i < n; i++)
                argv[argc++] = fields[i];
        r = redis_conn_script_tagged(c, LUA_OSB_CREATE, argc, argv, &rep);
        if (r < 0)
                return r;
        if (reply_is_str(rep->element[0], "limit") && rep->elements == 2) {
                *ret_n = rep->element[1]->type == REDIS_REPLY_INTEGER ? rep->element[1]->integer : 0;
                r = -EDQUOT;
        } else if (reply_is_str(rep->element[0], "disk") && rep->elements == 2) {
                *ret_n = rep->element[1]->type == REDIS_REPLY_INTEGER ? rep->element[1]->integer : 0;
                r = -EFBIG;
        } else if (!reply_is_str(rep->element[0], "ok") || rep->elements != 3 ||
                   rep->element[1]->type != REDIS_REPLY_STRING || rep->element[1]->len >= 33 ||
                   rep->element[2]->type != REDIS_REPLY_STRING) {
                r = -EPROTO;
        } else {
                memcpy(ret_sid, rep->element[1]->str, rep->element[1]->len + 1);
                *ret_warm = rep->element[2]->len > 0;
        }
        reply_free(rep);
        return r;
}

int osb_store_delete(struct redis_conn *c, const char *sid, const char *tenant)
{
        const char *argv[] = { sid, tenant };
        redisReply *rep = NULL;
        int r = redis_conn_script_tagged(c, LUA_OSB_DELETE, 2, argv, &rep);

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
                             const char *patch, size_t max, redisReply **ret)
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
                /* hand the record out: detach it from the reply */
                *ret = rep->element[1];
                rep->element[1] = NULL;
                rep->elements = 1;
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
                   const struct osb_list_filter *f, redisReply **ret)
{
        const char *argv[8 + 8 + 32];
        char pg[24], sz[24], scan[24], ns[8], nm[8];
        int argc = 0, r;

        *ret = NULL;
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
        r = redis_conn_script(c, LUA_OSB_LIST, argc, argv, ret);
        if (r < 0)
                return r;
        if ((*ret)->type != REDIS_REPLY_ARRAY || (*ret)->elements < 1 ||
            (*ret)->element[0]->type != REDIS_REPLY_INTEGER) {
                reply_free(*ret);
                *ret = NULL;
                return -EPROTO;
        }
        return 0;
}

int osb_store_pause_resume(struct redis_conn *c, struct provider *pv, const char *sid,
                           const char *ref, bool pause, char *err)
{
        int r = pause ? pv->ops->pause(pv, ref, err) : pv->ops->resume(pv, ref, err);

        if (r < 0)
                return r;
        const char *to = pause ? "Paused" : "Running", *why = pause ? "user_pause" : "user_resume";

        r = sandbox_transition(c, sid, pause ? "Running" : "Paused", to, why, "", "");
        /* the supervisor's watch may have seen the container move first
         * (CONTAINER_PAUSED): the reason is still ours */
        if (r == -EBUSY)
                r = sandbox_transition(c, sid, to, to, why, "", "");
        return r == -EBUSY ? 0 : r; /* moved meanwhile (e.g. deleted): the call itself worked */
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
