/* lease: see lease.h. */
#include "store/lease.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/json_input.h"
#include "store/lease_reply.h"
#include "core/timeutil.h"

#define GRANT_BATCH 16 /* fresh lease ids handed to one grant step */

const char *const lease_modes[] = { "exclusive", "user_shared", "multi_user_shared", NULL };
const char *const lease_release_reasons[] = { "idle", "deleted", NULL };

void lease_outcome_clear(struct lease_outcome *o)
{
        json_put(o->lease);
        memset(o, 0, sizeof(*o));
}

/* Integer reply or decimal string; -1 otherwise. */
static long long reply_int(const redisReply *r)
{
        char *end;
        long long v;

        if (!r)
                return -1;
        if (r->type == REDIS_REPLY_INTEGER)
                return r->integer;
        if (!reply_is_str(r, NULL) || r->len == 0)
                return -1;
        v = strtoll(r->str, &end, 10);
        return *end ? -1 : v;
}

static int copy_id(const redisReply *r, char *buf, size_t size)
{
        if (!reply_is_str(r, NULL) || r->len >= size)
                return -EPROTO;
        memcpy(buf, r->str, r->len + 1);
        return 0;
}

static struct json_object *json_str_or_null(const char *s)
{
        return s && *s ? json_object_new_string(s) : NULL;
}

static struct json_object *json_iso_time(long long ms)
{
        char buf[32];

        if (ms < 0 || timeutil_format_iso(ms, buf, sizeof(buf)) < 0)
                return NULL;
        return json_object_new_string(buf);
}

int lease_scope(const char *tenant, const char *name, char *out)
{
        int n = snprintf(out, LEASE_SCOPED_MAX, "%s/%s", tenant ? tenant : "", name ? name : "");
        return n < 0 || n >= LEASE_SCOPED_MAX ? -E2BIG : 0;
}

const char *lease_unscope(const char *scoped, char *tenant, size_t size)
{
        const char *slash = strchr(scoped, '/');
        size_t n = slash ? (size_t)(slash - scoped) : 0;

        if (tenant && size) {
                if (n >= size)
                        n = size - 1;
                memcpy(tenant, scoped, n);
                tenant[n] = '\0';
        }
        return slash ? slash + 1 : scoped;
}

int lease_json_from_hash(const redisReply *arr, struct json_object **ret)
{
        static const char *const str_fields[] = { "leaseId",  "userId",  "sessionId",
                                                  "mode",     "poolId",  "sandboxId",
                                                  "provider", "workdir", "linuxUser" };
        enum { N_STR = sizeof(str_fields) / sizeof(str_fields[0]) };
        const char *vals[N_STR] = { 0 };
        long long seat = -1, created = -1, expires = -1;
        struct json_object *o;

        *ret = NULL;
        if (!arr || arr->type != REDIS_REPLY_ARRAY || arr->elements % 2 || arr->elements == 0)
                return -EPROTO;
        for (size_t i = 0; i + 1 < arr->elements; i += 2) {
                const redisReply *k = arr->element[i], *v = arr->element[i + 1];
                if (!reply_is_str(k, NULL) || !reply_is_str(v, NULL))
                        return -EPROTO;
                for (size_t f = 0; f < N_STR; f++)
                        if (strcmp(k->str, str_fields[f]) == 0)
                                vals[f] = v->str;
                if (strcmp(k->str, "seat") == 0)
                        seat = reply_int(v);
                else if (strcmp(k->str, "createdAt") == 0)
                        created = reply_int(v);
                else if (strcmp(k->str, "expiresAt") == 0)
                        expires = reply_int(v);
        }
        if (!vals[0] || !vals[1] || !vals[2] || !vals[3] || expires < 0)
                return -EPROTO;
        o = json_object_new_object();
        if (!o)
                return -ENOMEM;
        /* users and pools are stored scoped: the API names them inside the tenant */
        if (vals[1] && strchr(vals[1], '/')) {
                char tenant[LEASE_SCOPED_MAX];
                vals[1] = lease_unscope(vals[1], tenant, sizeof(tenant));
                json_object_object_add(o, "tenant", json_object_new_string(tenant));
        }
        if (vals[4] && strchr(vals[4], '/'))
                vals[4] = lease_unscope(vals[4], NULL, 0);
        for (size_t f = 0; f < N_STR; f++) {
                json_object_object_add(o, str_fields[f], json_str_or_null(vals[f]));
                if (f == 4)
                        json_object_object_add(o, "seat",
                                               seat > 0 ? json_object_new_int64(seat) : NULL);
        }
        json_object_object_add(o, "createdAt", json_iso_time(created));
        json_object_object_add(o, "expiresAt", json_iso_time(expires));
        json_object_object_add(o, "expiresAtMs", json_object_new_int64(expires));
        *ret = o;
        return 0;
}

int lease_outcome_from_reply(const redisReply *r, struct lease_outcome *o)
{
        const redisReply *tag;

        memset(o, 0, sizeof(*o));
        if (!r || r->type != REDIS_REPLY_ARRAY || r->elements < 1)
                return -EPROTO;
        tag = r->element[0];
        if ((reply_is_str(tag, "granted") || reply_is_str(tag, "ok")) && r->elements == 2) {
                const redisReply *h = r->element[1];

                o->kind = LEASE_GRANTED;
                /* not in the API's lease object: whether the caller waits */
                for (size_t i = 0; h && h->type == REDIS_REPLY_ARRAY && i + 1 < h->elements; i += 2) {
                        if (reply_is_str(h->element[i], "state"))
                                o->provisioning = reply_is_str(h->element[i + 1], "provisioning");
                        else if (reply_is_str(h->element[i], "ticketId"))
                                (void)copy_id(h->element[i + 1], o->ticket_id, sizeof(o->ticket_id));
                }
                return lease_json_from_hash(h, &o->lease);
        }
        if (reply_is_str(tag, "queued") && r->elements == 4) {
                /* acquire: {'queued', ticketId, position, 'new'|'existing'} */
                o->kind = LEASE_QUEUED;
                o->position = reply_int(r->element[2]);
                o->new_ticket = reply_is_str(r->element[3], "new");
                if (o->position < 1)
                        return -EPROTO;
                return copy_id(r->element[1], o->ticket_id, sizeof(o->ticket_id));
        }
        if (reply_is_str(tag, "queued") && r->elements == 2) {
                /* poll: {'queued', position} */
                o->kind = LEASE_QUEUED;
                o->position = reply_int(r->element[1]);
                return o->position < 1 ? -EPROTO : 0;
        }
        if (reply_is_str(tag, "conflict") && r->elements == 3) {
                o->kind = LEASE_CONFLICT;
                return copy_id(r->element[1], o->conflict_mode, sizeof(o->conflict_mode));
        }
        if (reply_is_str(tag, "released") && r->elements == 3) {
                o->kind = LEASE_RELEASED;
                o->slot_freed = reply_int(r->element[2]) == 1;
                return copy_id(r->element[1], o->lease_id, sizeof(o->lease_id));
        }
        if (reply_is_str(tag, "notfound") && r->elements == 1) {
                o->kind = LEASE_NOT_FOUND;
                return 0;
        }
        if (reply_is_str(tag, "expired") && r->elements == 1) {
                o->kind = LEASE_EXPIRED;
                return 0;
        }
        if (reply_is_str(tag, "provisioning") && r->elements == 1) {
                o->kind = LEASE_PROVISIONING;
                return 0;
        }
        if (reply_is_str(tag, "lost") && r->elements == 5) {
                /* heartbeat: {'lost', leaseId, sandboxId, reason, message} */
                o->kind = LEASE_LOST;
                if (copy_id(r->element[1], o->lease_id, sizeof(o->lease_id)) < 0 ||
                    copy_id(r->element[2], o->sandbox_id, sizeof(o->sandbox_id)) < 0 ||
                    !reply_is_str(r->element[3], NULL) || !reply_is_str(r->element[4], NULL))
                        return -EPROTO;
                snprintf(o->reason, sizeof(o->reason), "%s", r->element[3]->str);
                snprintf(o->message, sizeof(o->message), "%s", r->element[4]->str);
                return 0;
        }
        if (reply_is_str(tag, "failed") && r->elements == 2) {
                o->kind = LEASE_FAILED;
                if (reply_is_str(r->element[1], NULL))
                        snprintf(o->message, sizeof(o->message), "%s", r->element[1]->str);
                return 0;
        }
        return -EPROTO;
}

/* Run a script and map its reply; on a mapping failure *ret is cleared. */
static int run_mapped(struct redis_conn *c, enum lua_script_id id, int argc, const char **argv,
                      struct lease_outcome *ret)
{
        redisReply *rep = NULL;
        int r;

        memset(ret, 0, sizeof(*ret));
        r = redis_conn_script(c, id, argc, argv, &rep);
        if (r < 0)
                return r;
        r = lease_outcome_from_reply(rep, ret);
        if (r < 0)
                lease_outcome_clear(ret);
        reply_free(rep);
        return r;
}

int lease_acquire(struct redis_conn *c, const struct broker_config *cfg,
                  const struct lease_request *req, struct lease_outcome *ret)
{
        char cap[16], ttl[16], tttl[16], seats[16], tcap[16], lease_id[33], ticket_id[33];
        char user[LEASE_SCOPED_MAX], pool[LEASE_SCOPED_MAX];
        int r;

        if (lease_scope(req->tenant, req->user_id, user) < 0 ||
            (req->pool_id && req->pool_id[0] && lease_scope(req->tenant, req->pool_id, pool) < 0))
                return -E2BIG;
        if (!req->pool_id || !req->pool_id[0])
                pool[0] = '\0';
        r = timeutil_random_id(lease_id, sizeof(lease_id));
        if (r == 0)
                r = timeutil_random_id(ticket_id, sizeof(ticket_id));
        if (r < 0)
                return r;
        snprintf(cap, sizeof(cap), "%d", cfg->capacity);
        snprintf(ttl, sizeof(ttl), "%d", cfg->lease_ttl_ms);
        snprintf(tttl, sizeof(tttl), "%d", cfg->ticket_ttl_ms);
        snprintf(seats, sizeof(seats), "%d", cfg->pool_seats);
        snprintf(tcap, sizeof(tcap), "%d", cfg->tenant_max_slots);
        const char *argv[] = { user,          req->session_id,
                               req->mode,     pool,
                               cap,           ttl,
                               tttl,          seats,
                               lease_id,      ticket_id,
                               cfg->provider, req->sandbox_id ? req->sandbox_id : "",
                               tcap,          req->caller_makes ? "1" : "0" };
        return run_mapped(c, LUA_ACQUIRE, 14, argv, ret);
}

int lease_poll(struct redis_conn *c, const struct broker_config *cfg, const char *tenant,
               const char *ticket_id, struct lease_outcome *ret)
{
        char tttl[16];
        int r;

        snprintf(tttl, sizeof(tttl), "%d", cfg->ticket_ttl_ms);
        const char *argv[] = { ticket_id, tttl, tenant };
        r = run_mapped(c, LUA_POLL, 3, argv, ret);
        if (r == 0 && ret->kind != LEASE_GRANTED)
                snprintf(ret->ticket_id, sizeof(ret->ticket_id), "%s", ticket_id);
        return r;
}

int lease_wait(struct redis_conn *c, const struct broker_config *cfg, const char *tenant,
               const char *ticket_id, int wait_ms, struct lease_outcome *ret)
{
        int64_t deadline = timeutil_mono_ms() + wait_ms;
        /* each BLPOP well inside the connection's read timeout */
        int step_max = cfg->redis_timeout_ms / 2 < 1000 ? cfg->redis_timeout_ms / 2 : 1000;
        char key[128], secs[16];
        int r;

        snprintf(key, sizeof(key), "%sticket:%s:done", cfg->key_prefix, ticket_id);
        for (;;) {
                redisReply *rep = NULL;
                int64_t left;

                r = lease_poll(c, cfg, tenant, ticket_id, ret);
                if (r < 0 || ret->kind != LEASE_PROVISIONING)
                        return r;
                left = deadline - timeutil_mono_ms();
                if (left <= 0)
                        return 0;
                if (left > step_max)
                        left = step_max;
                if (left < 5) {
                        usleep(5000);
                        continue;
                }
                snprintf(secs, sizeof(secs), "%.3f", left / 1000.0);
                const char *argv[] = { "BLPOP", key, secs };
                r = redis_conn_command(c, 3, argv, &rep);
                reply_free(rep);
                if (r < 0)
                        return r;
                lease_outcome_clear(ret);
        }
}

int lease_supervisors(struct redis_conn *c, const struct broker_config *cfg)
{
        char channel[96];
        redisReply *rep = NULL;
        long long n = -1;
        int r;

        snprintf(channel, sizeof(channel), "%swake", cfg->key_prefix);
        const char *argv[] = { "PUBSUB", "NUMSUB", channel };
        r = redis_conn_command(c, 3, argv, &rep);
        if (r < 0)
                return r;
        /* {channel, count} */
        if (rep->type == REDIS_REPLY_ARRAY && rep->elements == 2)
                n = reply_int(rep->element[1]);
        reply_free(rep);
        return n < 0 ? -EPROTO : (int)n;
}

int lease_heartbeat(struct redis_conn *c, const struct broker_config *cfg, const char *tenant,
                    const char *lease_id, const char *user_id, const char *session_id,
                    struct lease_outcome *ret)
{
        char ttl[16], user[LEASE_SCOPED_MAX] = "";

        if (user_id && lease_scope(tenant, user_id, user) < 0)
                return -E2BIG;
        snprintf(ttl, sizeof(ttl), "%d", cfg->lease_ttl_ms);
        const char *argv[] = { lease_id ? lease_id : "", user, session_id ? session_id : "", ttl,
                               tenant };
        return run_mapped(c, LUA_HEARTBEAT, 5, argv, ret);
}

int lease_release(struct redis_conn *c, const struct broker_config *cfg, const char *tenant,
                  const char *user_id, const char *session_id, const char *reason,
                  struct lease_outcome *ret)
{
        char user[LEASE_SCOPED_MAX];

        if (lease_scope(tenant, user_id, user) < 0)
                return -E2BIG;
        /* idle keeps the sandbox per the idle policy; deleted always removes it */
        const char *action = strcmp(reason, "idle") == 0 && strcmp(cfg->idle_policy, "stop_keep") == 0
                                     ? "stop"
                                     : "remove";
        const char *why = strcmp(reason, "idle") == 0 ? "RELEASED_IDLE" : "RELEASED_DELETED";
        const char *argv[] = { user, session_id, action, why };
        return run_mapped(c, LUA_RELEASE, 4, argv, ret);
}

int lease_activate(struct redis_conn *c, const char *lease_id, struct lease_outcome *ret)
{
        const char *argv[] = { lease_id };
        return run_mapped(c, LUA_LEASE_ACTIVATE, 1, argv, ret);
}

int lease_fail(struct redis_conn *c, const char *lease_id, const char *message)
{
        redisReply *rep = NULL;
        const char *argv[] = { lease_id, message };
        int r = redis_conn_script(c, LUA_LEASE_FAIL, 2, argv, &rep);

        reply_free(rep);
        return r;
}

int lease_ticket_cancel(struct redis_conn *c, const char *ticket_id)
{
        redisReply *rep = NULL;
        const char *argv[] = { ticket_id };
        int r = redis_conn_script(c, LUA_CANCEL, 1, argv, &rep);

        if (r == 0)
                r = rep->type == REDIS_REPLY_ARRAY && rep->elements == 1 &&
                                    reply_is_str(rep->element[0], "cancelled")
                            ? 0
                            : 1;
        reply_free(rep);
        return r;
}

int lease_ticket_times(struct redis_conn *c, const struct broker_config *cfg, const char *ticket_id,
                       int64_t *ret_created, int64_t *ret_granted)
{
        char key[128];
        const char *argv[] = { "HMGET", key, "createdAt", "grantedAt" };
        redisReply *rep = NULL;
        int r;

        snprintf(key, sizeof(key), "%sticket:%s", cfg->key_prefix, ticket_id);
        r = redis_conn_command(c, 4, argv, &rep);
        if (r < 0)
                return r;
        r = -ENOENT;
        if (rep->type == REDIS_REPLY_ARRAY && rep->elements == 2 &&
            reply_is_str(rep->element[0], NULL) && reply_is_str(rep->element[1], NULL)) {
                *ret_created = strtoll(rep->element[0]->str, NULL, 10);
                *ret_granted = strtoll(rep->element[1]->str, NULL, 10);
                r = 0;
        }
        reply_free(rep);
        return r;
}

int lease_status(struct redis_conn *c, const struct broker_config *cfg, struct json_object **ret)
{
        redisReply *rep = NULL, *modes;
        struct json_object *o = NULL, *m;
        int r;

        *ret = NULL;
        r = redis_conn_script(c, LUA_STATUS, 0, NULL, &rep);
        if (r < 0)
                return r;
        if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 4 ||
            rep->element[3]->type != REDIS_REPLY_ARRAY) {
                r = -EPROTO;
                goto out;
        }
        modes = rep->element[3];
        o = json_object_new_object();
        m = json_object_new_object();
        if (!o || !m) {
                json_put(m);
                r = -ENOMEM;
                goto out;
        }
        json_object_object_add(o, "capacity", json_object_new_int(cfg->capacity));
        json_object_object_add(o, "activeSlots", json_object_new_int64(reply_int(rep->element[0])));
        json_object_object_add(o, "activeLeases", json_object_new_int64(reply_int(rep->element[1])));
        json_object_object_add(o, "queueDepth", json_object_new_int64(reply_int(rep->element[2])));
        json_object_object_add(o, "provider", json_object_new_string(cfg->provider));
        for (const char *const *mode = lease_modes; *mode; mode++) {
                struct json_object *counts = json_object_new_object();
                long long slots = 0, leases = 0;
                size_t n = strlen(*mode);

                for (size_t i = 0; i + 1 < modes->elements; i += 2) {
                        const redisReply *k = modes->element[i];
                        if (!reply_is_str(k, NULL) || strncmp(k->str, *mode, n) || k->str[n] != ':')
                                continue;
                        if (strcmp(k->str + n + 1, "slots") == 0)
                                slots = reply_int(modes->element[i + 1]);
                        else if (strcmp(k->str + n + 1, "leases") == 0)
                                leases = reply_int(modes->element[i + 1]);
                }
                json_object_object_add(counts, "slots", json_object_new_int64(slots));
                json_object_object_add(counts, "leases", json_object_new_int64(leases));
                json_object_object_add(m, *mode, counts);
        }
        json_object_object_add(o, "modes", m);
        *ret = o;
        o = NULL;
out:
        json_put(o);
        reply_free(rep);
        return r;
}

int lease_ticket_message(const struct lease_request *req, const char *ticket_id, char **ret)
{
        struct json_object *o = json_object_new_object();
        char *s = NULL;

        *ret = NULL;
        if (!o)
                return -ENOMEM;
        json_object_object_add(o, "ticketId", json_object_new_string(ticket_id));
        json_object_object_add(o, "tenant", json_str_or_null(req->tenant));
        json_object_object_add(o, "userId", json_object_new_string(req->user_id));
        json_object_object_add(o, "sessionId", json_object_new_string(req->session_id));
        json_object_object_add(o, "mode", json_object_new_string(req->mode));
        json_object_object_add(o, "poolId", json_str_or_null(req->pool_id));
        json_object_object_add(o, "enqueuedAtMs", json_object_new_int64(timeutil_now_ms()));
        s = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
        json_put(o);
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

int lease_ticket_message_id(const char *payload, size_t len, char *buf)
{
        struct json_object *o = NULL;
        const char *id = NULL;
        char err[128];
        int r;

        r = json_input_parse_object(payload, len, JSON_INPUT_MAX_DEPTH, &o, err, sizeof(err));
        if (r == 0)
                r = json_input_get_id(o, "ticketId", true, &id, err, sizeof(err));
        if (r == 0 && strlen(id) != 32)
                r = -EINVAL;
        if (r == 0)
                memcpy(buf, id, 33);
        json_put(o);
        return r < 0 ? -EINVAL : 0;
}

static int each_granted(const redisReply *list, const struct lease_grant_hooks *h)
{
        if (list->type != REDIS_REPLY_ARRAY || list->elements % 4)
                return -EPROTO;
        for (size_t i = 0; i < list->elements; i++)
                if (!reply_is_str(list->element[i], NULL))
                        return -EPROTO;
        for (size_t i = 0; i + 3 < list->elements; i += 4)
                if (h && h->granted)
                        h->granted(h->ud, list->element[i]->str, list->element[i + 1]->str,
                                   list->element[i + 2]->str, list->element[i + 3]->str);
        return 0;
}

static int each_ticket(const redisReply *list, const struct lease_grant_hooks *h)
{
        if (list->type != REDIS_REPLY_ARRAY)
                return -EPROTO;
        for (size_t i = 0; i < list->elements; i++)
                if (h && h->expired && reply_is_str(list->element[i], NULL))
                        h->expired(h->ud, list->element[i]->str);
        return 0;
}

int lease_grant_step(struct redis_conn *c, const struct broker_config *cfg, const char *target,
                     const struct lease_grant_hooks *hooks, char *ret_state)
{
        char ids[GRANT_BATCH][33], cap[16], ttl[16], tttl[16], seats[16], tcap[16];
        const char *argv[7 + GRANT_BATCH];
        redisReply *rep = NULL;
        int r, n = 0;

        snprintf(cap, sizeof(cap), "%d", cfg->capacity);
        snprintf(ttl, sizeof(ttl), "%d", cfg->lease_ttl_ms);
        snprintf(tttl, sizeof(tttl), "%d", cfg->ticket_ttl_ms);
        snprintf(seats, sizeof(seats), "%d", cfg->pool_seats);
        argv[n++] = target ? target : "";
        argv[n++] = cap;
        argv[n++] = ttl;
        argv[n++] = tttl;
        argv[n++] = seats;
        argv[n++] = cfg->provider;
        snprintf(tcap, sizeof(tcap), "%d", cfg->tenant_max_slots);
        argv[n++] = tcap;
        for (int i = 0; i < GRANT_BATCH; i++) {
                r = timeutil_random_id(ids[i], sizeof(ids[i]));
                if (r < 0)
                        return r;
                argv[n++] = ids[i];
        }
        r = redis_conn_script(c, LUA_GRANT, n, argv, &rep);
        if (r < 0)
                return r;
        if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 3 ||
            !reply_is_str(rep->element[0], NULL) || rep->element[0]->len >= 16) {
                r = -EPROTO;
                goto out;
        }
        if (ret_state)
                memcpy(ret_state, rep->element[0]->str, rep->element[0]->len + 1);
        r = each_granted(rep->element[1], hooks);
        if (r == 0)
                r = each_ticket(rep->element[2], hooks);
out:
        reply_free(rep);
        return r;
}

/* A script whose reply is an array of lease ids, into *ret (NULL on error). */
/* Run a script that answers an array of lease ids (pairs of id and the ms
 * it waited when paired) and hand each id to each(). */
static int script_ids(struct redis_conn *c, enum lua_script_id id, int argc, const char **argv,
                      bool paired, lease_id_fn each, void *ud)
{
        redisReply *rep = NULL;
        int r = redis_conn_script(c, id, argc, argv, &rep);
        size_t step = paired ? 2 : 1;

        if (r < 0)
                return r;
        if (rep->type != REDIS_REPLY_ARRAY) {
                freeReplyObject(rep);
                return -EPROTO;
        }
        for (size_t i = 0; i + step - 1 < rep->elements; i += step) {
                const redisReply *lid = rep->element[i],
                                 *waited = paired ? rep->element[i + 1] : NULL;
                int64_t ms = waited && waited->type == REDIS_REPLY_INTEGER ? (int64_t)waited->integer
                                                                           : 0;

                if (lid->type == REDIS_REPLY_STRING)
                        each(ud, lid->str, ms);
        }
        freeReplyObject(rep);
        return 0;
}

int lease_stale(struct redis_conn *c, int older_ms, int limit, lease_id_fn each, void *ud)
{
        char older[16], lim[16];

        snprintf(older, sizeof(older), "%d", older_ms);
        snprintf(lim, sizeof(lim), "%d", limit);
        const char *argv[] = { older, lim };
        return script_ids(c, LUA_LEASE_STALE, 2, argv, false, each, ud);
}

int lease_intents_take(struct redis_conn *c, int limit, lease_id_fn each, void *ud)
{
        char lim[16];

        snprintf(lim, sizeof(lim), "%d", limit);
        const char *argv[] = { lim };
        return script_ids(c, LUA_INTENTS_TAKE, 1, argv, true, each, ud);
}

int lease_intent_push(struct redis_conn *c, const char *lease_id)
{
        redisReply *rep = NULL;
        const char *argv[] = { lease_id };
        int r = redis_conn_script(c, LUA_INTENT_PUSH, 1, argv, &rep);

        if (r == 0)
                r = rep->type == REDIS_REPLY_INTEGER ? (int)rep->integer : -EPROTO;
        if (rep)
                freeReplyObject(rep);
        return r;
}

int lease_reap(struct redis_conn *c, const struct broker_config *cfg, int limit,
               int provision_max_ms, const struct lease_grant_hooks *hooks, int *ret_freed)
{
        char tttl[16], lim[16], keep[16], prov[16];
        redisReply *rep = NULL, *leases;
        int r;

        snprintf(tttl, sizeof(tttl), "%d", cfg->ticket_ttl_ms);
        snprintf(lim, sizeof(lim), "%d", limit);
        snprintf(keep, sizeof(keep), "%d", cfg->idle_keep_ms);
        snprintf(prov, sizeof(prov), "%d", provision_max_ms);
        const char *argv[] = { tttl, lim, keep, prov };
        *ret_freed = 0;
        r = redis_conn_script(c, LUA_REAP, 4, argv, &rep);
        if (r < 0)
                return r;
        if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 4 ||
            rep->element[1]->type != REDIS_REPLY_ARRAY || rep->element[1]->elements % 3) {
                r = -EPROTO;
                goto out;
        }
        *ret_freed = (int)reply_int(rep->element[0]);
        leases = rep->element[1];
        for (size_t i = 0; i < leases->elements; i++)
                if (!reply_is_str(leases->element[i], NULL)) {
                        r = -EPROTO;
                        goto out;
                }
        for (size_t i = 0; i + 2 < leases->elements; i += 3)
                if (hooks && hooks->reaped)
                        hooks->reaped(hooks->ud, leases->element[i]->str,
                                      leases->element[i + 1]->str, leases->element[i + 2]->str);
        r = each_ticket(rep->element[2], hooks);
out:
        reply_free(rep);
        return r;
}

int lease_tenant_status(struct redis_conn *c, const struct broker_config *cfg, const char *tenant,
                        struct json_object **ret)
{
        static const char *const names[] = { "activeSlots", "queued", "maxSlots", "maxSandboxes" };
        char slots[16], sandboxes[16];
        redisReply *rep = NULL;
        struct json_object *o;
        int r;

        *ret = NULL;
        snprintf(slots, sizeof(slots), "%d", cfg->tenant_max_slots);
        snprintf(sandboxes, sizeof(sandboxes), "%d", cfg->osb_max_per_tenant);
        const char *argv[] = { tenant, slots, sandboxes };
        r = redis_conn_script(c, LUA_TENANT_STATUS, 3, argv, &rep);
        if (r < 0)
                return r;
        if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 4) {
                reply_free(rep);
                return -EPROTO;
        }
        o = json_object_new_object();
        if (!o) {
                reply_free(rep);
                return -ENOMEM;
        }
        json_object_object_add(o, "name", json_object_new_string(tenant));
        for (size_t i = 0; i < 4; i++)
                json_object_object_add(o, names[i],
                                       json_object_new_int64(reply_int(rep->element[i])));
        reply_free(rep);
        *ret = o;
        return 0;
}
