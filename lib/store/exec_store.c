/* exec_store: see exec_store.h. */
#include "store/exec_store.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json_input.h"
#include "store/redis_conn.h"

void exec_store_outcome_clear(struct exec_store_outcome *o)
{
        free(o->output);
        exec_result_free(&o->res);
        memset(o, 0, sizeof(*o));
}

bool exec_store_id_valid(const char *s)
{
        size_t n = 0;

        for (; s[n]; n++)
                if (n >= EXEC_STORE_ID_MAX ||
                    !((s[n] >= 'A' && s[n] <= 'Z') || (s[n] >= 'a' && s[n] <= 'z') ||
                      (s[n] >= '0' && s[n] <= '9') || s[n] == '_' || s[n] == '-'))
                        return false;
        return n >= EXEC_STORE_ID_MIN;
}

int exec_store_id_from_json(struct json_object *body, const char **ret, char *err, size_t errsz)
{
        struct json_object *v;
        const char *s;

        *ret = NULL;
        if (!json_object_object_get_ex(body, "execId", &v) || json_object_is_type(v, json_type_null))
                return 0;
        s = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
        /* an embedded NUL would pass the check on the C string's head only */
        if (!s || strlen(s) != (size_t)json_object_get_string_len(v) || !exec_store_id_valid(s)) {
                snprintf(err, errsz, "execId must be a string of %d to %d characters [A-Za-z0-9_-]",
                         EXEC_STORE_ID_MIN, EXEC_STORE_ID_MAX);
                return -EINVAL;
        }
        *ret = s;
        return 0;
}

/* A decimal integer reply (string or integer); -1 otherwise. */
static long long reply_ll(const redisReply *r)
{
        char *end;
        long long v;

        if (r && r->type == REDIS_REPLY_INTEGER)
                return r->integer;
        if (!reply_is_str(r, NULL) || r->len == 0)
                return -1;
        v = strtoll(r->str, &end, 10);
        return *end ? -1 : v;
}

int exec_store_create(struct redis_conn *c, const struct broker_config *cfg,
                      const struct exec_store_key *k, int timeout_ms, struct exec_store_outcome *ret)
{
        char cap[16], ttl[24];
        redisReply *rep = NULL;
        const redisReply *tag;
        int r;

        memset(ret, 0, sizeof(*ret));
        snprintf(cap, sizeof(cap), "%d", cfg->exec_records_per_lease);
        snprintf(ttl, sizeof(ttl), "%lld", (long long)timeout_ms + EXEC_STORE_RUNNING_GRACE_MS);
        const char *argv[] = { k->lease_id, k->exec_id, k->tenant, k->sandbox_id, cap, ttl };
        r = redis_conn_script_tagged(c, LUA_EXEC_CREATE, 6, argv, &rep);
        if (r < 0)
                return r;
        tag = rep->element[0];
        r = 0;
        if (reply_is_str(tag, "created") && rep->elements == 2 &&
            (ret->started_at = reply_ll(rep->element[1])) >= 0)
                ret->kind = EXEC_STORE_CREATED;
        else if (reply_is_str(tag, "inuse") && rep->elements == 1)
                ret->kind = EXEC_STORE_IN_USE;
        else if (reply_is_str(tag, "full") && rep->elements == 2 &&
                 (ret->running = reply_ll(rep->element[1])) >= 0)
                ret->kind = EXEC_STORE_FULL;
        else if (reply_is_str(tag, "notfound") && rep->elements == 1)
                ret->kind = EXEC_STORE_NOT_FOUND;
        else
                r = -EPROTO;
        reply_free(rep);
        return r;
}

/* 1 or 0 of a script that answers an integer. */
static int reply_flag(int r, redisReply *rep)
{
        if (r == 0)
                r = rep->type == REDIS_REPLY_INTEGER && (rep->integer == 0 || rep->integer == 1)
                            ? (int)rep->integer
                            : -EPROTO;
        reply_free(rep);
        return r;
}

int exec_store_progress(struct redis_conn *c, const struct exec_store_key *k, const char *tail,
                        size_t len, int64_t total)
{
        char n[24];
        redisReply *rep = NULL;
        int r;

        if (len > EXEC_STORE_TAIL_MAX)
                return -E2BIG;
        snprintf(n, sizeof(n), "%lld", (long long)total);
        const char *argv[] = { k->lease_id, k->exec_id, tail ? tail : "", n };
        const size_t lens[] = { strlen(k->lease_id), strlen(k->exec_id), tail ? len : 0, strlen(n) };
        r = redis_conn_script_bin(c, LUA_EXEC_PROGRESS, 4, argv, lens, &rep);
        return reply_flag(r, rep);
}

/* exec_finish.lua with state 'done' (res, duration) or 'failed' (message). */
static int finish(struct redis_conn *c, const struct broker_config *cfg,
                  const struct exec_store_key *k, const struct exec_result *res,
                  int64_t duration_ms, const char *message)
{
        static const struct exec_result none = { 0 };
        size_t max = (size_t)cfg->exec_record_max_output;
        char ttl[16], code[16], dur[24], msg[EXEC_STORE_MESSAGE_MAX];
        redisReply *rep = NULL;
        int r;

        if (!res)
                res = &none;
        size_t out_len = res->out && res->out_len < max ? res->out_len : res->out ? max : 0;
        size_t err_len = res->err && res->err_len < max ? res->err_len : res->err ? max : 0;
        bool out_cut = res->out_truncated || out_len < res->out_len;
        bool err_cut = res->err_truncated || err_len < res->err_len;

        snprintf(ttl, sizeof(ttl), "%d", cfg->exec_record_ttl_ms);
        snprintf(code, sizeof(code), "%d", res->exit_code);
        snprintf(dur, sizeof(dur), "%lld", (long long)duration_ms);
        snprintf(msg, sizeof(msg), "%s", message ? message : "");
        const char *argv[] = { k->lease_id,
                               k->exec_id,
                               message ? "failed" : "done",
                               ttl,
                               msg,
                               code,
                               res->out ? res->out : "",
                               res->err ? res->err : "",
                               out_cut ? "1" : "0",
                               err_cut ? "1" : "0",
                               res->timed_out ? "1" : "0",
                               dur };
        size_t lens[12];
        for (size_t i = 0; i < 12; i++) /* the streams are bytes, not C strings */
                lens[i] = i == 6 ? out_len : i == 7 ? err_len : strlen(argv[i]);
        r = redis_conn_script_bin(c, LUA_EXEC_FINISH, 12, argv, lens, &rep);
        return reply_flag(r, rep);
}

int exec_store_finish(struct redis_conn *c, const struct broker_config *cfg,
                      const struct exec_store_key *k, const struct exec_result *res,
                      int64_t duration_ms)
{
        return finish(c, cfg, k, res, duration_ms, NULL);
}

int exec_store_fail(struct redis_conn *c, const struct broker_config *cfg,
                    const struct exec_store_key *k, const char *message)
{
        return finish(c, cfg, k, NULL, 0, message ? message : "");
}

/* A copy of a string reply's bytes (NUL-terminated; "" for nil). */
static int dup_bytes(const redisReply *r, char **ret, size_t *ret_len)
{
        size_t n = reply_is_str(r, NULL) ? r->len : 0;
        char *p = malloc(n + 1);

        if (!p)
                return -ENOMEM;
        if (n)
                memcpy(p, r->str, n);
        p[n] = '\0';
        *ret = p;
        *ret_len = n;
        return 0;
}

static bool reply_true(const redisReply *r)
{
        return reply_is_str(r, "1");
}

int exec_store_get(struct redis_conn *c, const struct exec_store_key *k,
                   struct exec_store_outcome *ret)
{
        enum {
                STATE,
                STARTED,
                OUTPUT,
                OUTPUT_BYTES,
                EXIT,
                OUT,
                ERR,
                OUT_CUT,
                ERR_CUT,
                TIMED_OUT,
                DURATION,
                MESSAGE,
                N_FIELDS
        };
        redisReply *rep = NULL;
        redisReply **f;
        int r;

        memset(ret, 0, sizeof(*ret));
        const char *argv[] = { k->lease_id, k->exec_id, k->tenant, k->sandbox_id };
        r = redis_conn_script_tagged(c, LUA_EXEC_GET, 4, argv, &rep);
        if (r < 0)
                return r;
        f = rep->element;
        if (rep->elements == 1 && reply_is_str(f[0], "notfound")) {
                ret->kind = EXEC_STORE_NOT_FOUND;
                goto out;
        }
        r = -EPROTO;
        if (rep->elements != N_FIELDS || (ret->started_at = reply_ll(f[STARTED])) < 0)
                goto out;
        if (reply_is_str(f[STATE], "running")) {
                ret->kind = EXEC_STORE_RUNNING;
                ret->output_bytes = reply_ll(f[OUTPUT_BYTES]);
                if (ret->output_bytes < 0)
                        goto out;
                r = dup_bytes(f[OUTPUT], &ret->output, &ret->output_len);
        } else if (reply_is_str(f[STATE], "done")) {
                char *end = NULL;
                long long code = reply_is_str(f[EXIT], NULL) ? strtoll(f[EXIT]->str, &end, 10) : 0;

                ret->kind = EXEC_STORE_DONE;
                /* any int: a timed-out command may have none (-1) */
                if (!end || end == f[EXIT]->str || *end || code < INT_MIN || code > INT_MAX ||
                    (ret->duration_ms = reply_ll(f[DURATION])) < 0)
                        goto out;
                ret->res.exit_code = (int)code;
                ret->res.out_truncated = reply_true(f[OUT_CUT]);
                ret->res.err_truncated = reply_true(f[ERR_CUT]);
                ret->res.timed_out = reply_true(f[TIMED_OUT]);
                r = dup_bytes(f[OUT], &ret->res.out, &ret->res.out_len);
                if (r == 0)
                        r = dup_bytes(f[ERR], &ret->res.err, &ret->res.err_len);
        } else if (reply_is_str(f[STATE], "failed")) {
                ret->kind = EXEC_STORE_FAILED;
                snprintf(ret->message, sizeof(ret->message), "%s",
                         reply_is_str(f[MESSAGE], NULL) ? f[MESSAGE]->str : "");
                r = 0;
        }
out:
        if (r < 0)
                exec_store_outcome_clear(ret);
        reply_free(rep);
        return r;
}
