/* pool: see pool.h. */
#include "sandbox/pool.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/image_ref.h"
#include "sandbox/sandbox.h"
#include "core/timeutil.h"

#define POOL_SCAN_MS 1000
#define POOL_SCAN_MAX 512
#define POOL_CHECK_MS 10000 /* how often ready members' containers are inspected */
#define POOL_BACKOFF_MAX_MS 60000
#define POOL_OWNER_TTL_MS \
        15000 /* a member 'creating' for a refiller silent this long is a crash's */

static int wpool(struct redis_conn *rc, int argc, const char **argv, redisReply **rep)
{
        return redis_conn_script(rc, LUA_WPOOL, argc, argv, rep);
}

static void reply_drop(redisReply *r)
{
        if (r)
                freeReplyObject(r);
}

void pool_limits_string(const struct broker_config *cfg, char *buf, size_t size)
{
        snprintf(buf, size, "%lld,%lld,%lld", (long long)cfg->sandbox_millicpus * 1000000LL,
                 (long long)cfg->sandbox_memory_mb * 1024 * 1024, (long long)cfg->sandbox_pids);
}

/* The key of pool i's in-flight cold creates: named by the pool's
 * spelling in POOL (config_pool_find), whatever spelling the create used. */
static void cold_key(const struct broker_config *cfg, int i, char *key, size_t size)
{
        snprintf(key, size, "%swpoolcold:%s", cfg->key_prefix, cfg->pools[i].image);
}

int pool_cold_begin(struct redis_conn *rc, const struct broker_config *cfg, const char *image,
                    const char *sid)
{
        char key[320], until[24];
        redisReply *rep = NULL;
        int i = config_pool_find(cfg, image), r;

        if (i < 0 || cfg->pools[i].size == 0 || cfg->pool_refill_hold_ms == 0)
                return 0;
        cold_key(cfg, i, key, sizeof(key));
        snprintf(until, sizeof(until), "%lld",
                 (long long)(timeutil_now_ms() + sandbox_provision_max_ms(cfg)));
        const char *argv[] = { "ZADD", key, until, sid };
        r = redis_conn_command(rc, 4, argv, &rep);
        reply_drop(rep);
        return r < 0 ? r : 1;
}

void pool_cold_end(struct redis_conn *rc, const struct broker_config *cfg, const char *image,
                   const char *sid)
{
        char key[320];
        redisReply *rep = NULL;
        int i = config_pool_find(cfg, image);

        if (i < 0)
                return;
        cold_key(cfg, i, key, sizeof(key));
        const char *argv[] = { "ZREM", key, sid };
        if (redis_conn_command(rc, 3, argv, &rep) == 0)
                reply_drop(rep);
}

/* Are cold creates of image in flight (pool_cold_begin)? Entries past
 * their bound (a crashed process's) are dropped on the way. */
static bool cold_in_flight(struct redis_conn *rc, const struct broker_config *cfg, int i)
{
        char key[320], now[24];
        redisReply *rep = NULL;
        bool busy = false;

        cold_key(cfg, i, key, sizeof(key));
        snprintf(now, sizeof(now), "%lld", (long long)timeutil_now_ms());
        const char *trim[] = { "ZREMRANGEBYSCORE", key, "-inf", now };
        const char *card[] = { "ZCARD", key };
        if (redis_conn_command(rc, 4, trim, &rep) == 0)
                reply_drop(rep);
        rep = NULL;
        if (redis_conn_command(rc, 2, card, &rep) == 0 && rep->type == REDIS_REPLY_INTEGER)
                busy = rep->integer > 0;
        reply_drop(rep);
        return busy;
}

static void report_event(const struct pool_report *report, enum pool_event_kind kind,
                         const char *image, const char *sid, const char *why, long long ms)
{
        const struct pool_event ev = { kind, image, sid, why, ms };

        if (report && report->event)
                report->event(report->ctx, &ev);
}

/* Should pool i wait with its refill? While cold creates of its image are
 * in flight, for at most POOL_REFILL_HOLD_MS at a stretch: a burst that
 * emptied the pool gets Docker to itself, and a pool is never starved by
 * a steady stream of cold creates. */
static bool refill_held(struct redis_conn *rc, const struct broker_config *cfg,
                        struct pool_state *ps, int i, const struct pool_report *report)
{
        int64_t now = timeutil_mono_ms();

        if (cfg->pool_refill_hold_ms == 0 || !cold_in_flight(rc, cfg, i)) {
                if (ps->hold_since[i])
                        report_event(report, POOL_EVENT_RESUME, cfg->pools[i].image, NULL, NULL,
                                     (long long)(now - ps->hold_since[i]));
                ps->hold_since[i] = 0;
                return false;
        }
        if (!ps->hold_since[i]) {
                ps->hold_since[i] = now;
                report_event(report, POOL_EVENT_HOLD, cfg->pools[i].image, NULL, NULL,
                             cfg->pool_refill_hold_ms);
        }
        /* past the bound the refill goes on; RESUME is reported when the
         * last cold create ends */
        return now - ps->hold_since[i] < cfg->pool_refill_hold_ms;
}

/* The limits pool i's next member is made with: those its latest claim
 * asked for (wpoolstat lastLimits, wpool_take in common.lua), so that a
 * stream of like creates finds members that need no container update;
 * the defaults when that is unknown or any of them is below its default
 * (a member is never made smaller than the broker's default sandbox). */
static void member_limits(struct redis_conn *rc, const struct broker_config *cfg, const char *image,
                          struct sandbox_limits *l)
{
        char key[320];
        redisReply *rep = NULL;
        long long c, m, p;

        l->nano_cpus = (int64_t)cfg->sandbox_millicpus * 1000000LL;
        l->memory_bytes = (int64_t)cfg->sandbox_memory_mb * 1024 * 1024;
        l->pids = cfg->sandbox_pids;
        /* always the default disk: only a sandbox that gets it takes a
         * member (sandbox_claim.lua, osb_create.lua); a disk cannot change */
        l->disk_mb = cfg->sandbox_disk_mb;
        snprintf(key, sizeof(key), "%swpoolstat:%s", cfg->key_prefix, image);
        const char *argv[] = { "HGET", key, "lastLimits" };
        if (redis_conn_command(rc, 3, argv, &rep) < 0)
                return;
        if (rep->type == REDIS_REPLY_STRING && sscanf(rep->str, "%lld,%lld,%lld", &c, &m, &p) == 3 &&
            c >= l->nano_cpus && m >= l->memory_bytes && p >= l->pids && c <= 64000000000LL &&
            m <= 1099511627776LL && p <= 65536) {
                l->nano_cpus = c;
                l->memory_bytes = m;
                l->pids = p;
        }
        reply_drop(rep);
}

/* Remove a member's container: by ref, or by its name when the crash came
 * before the ref was known. */
static void remove_container(struct provider *pv, const char *sid, const char *ref)
{
        char name[48], err[PROVIDER_ERR_MAX];

        snprintf(name, sizeof(name), "sb-%s", sid);
        provider_remove(pv, ref && ref[0] ? ref : name, err);
}

static void stat_set(struct redis_conn *rc, const char *image, const char *k1, const char *v1,
                     const char *k2, const char *v2, const char *k3, const char *v3)
{
        redisReply *rep = NULL;
        const char *argv[] = { "stat", image, k1, v1, k2, v2, k3, v3 };
        if (wpool(rc, 8, argv, &rep) == 0)
                reply_drop(rep);
}

static bool drop(struct redis_conn *rc, struct provider *pv, const char *sid, const char *why,
                 const struct pool_report *report)
{
        redisReply *rep = NULL;
        const char *argv[] = { "drop", sid };
        bool ours = false;

        if (wpool(rc, 2, argv, &rep) < 0)
                return false;
        if (rep->type == REDIS_REPLY_STRING) {
                ours = true;
                remove_container(pv, sid, rep->str);
                report_event(report, POOL_EVENT_REMOVED, NULL, sid, why, 0);
        }
        reply_drop(rep);
        return ours;
}

/* The id image names now ("" when unknown: no such op, not on the host,
 * or Docker did not answer), looked up once per scan and pool. */
static const char *current_id(struct provider *pv, const struct broker_config *cfg,
                              const char *image, char (*ids)[PROVIDER_IMAGE_ID_MAX], bool *known)
{
        char err[PROVIDER_ERR_MAX];
        int i = config_pool_find(cfg, image);

        if (i < 0)
                return "";
        if (!known[i] && provider_image_id(pv, image, ids[i], err) < 0)
                ids[i][0] = '\0';
        known[i] = true;
        return ids[i];
}

/* Is a ready member's container gone or ended (removed or killed behind
 * the broker's back, e.g. while no supervisor ran)? An inspect that fails
 * otherwise (Docker busy or away) is no answer: the member stays. */
static bool container_lost(struct provider *pv, const char *sid)
{
        char name[48], err[PROVIDER_ERR_MAX];
        struct sandbox_info info;
        int r;

        snprintf(name, sizeof(name), "sb-%s", sid);
        r = provider_inspect(pv, name, &info, err);
        if (r == -ENOENT)
                return true;
        return r == 0 && (info.state == SANDBOX_RUN_EXITED || info.state == SANDBOX_RUN_MISSING);
}

int pool_member_lost(struct redis_conn *rc, struct provider *pv, const char *sid)
{
        redisReply *rep = NULL;
        const char *argv[] = { "member", sid };
        bool member;
        int r = wpool(rc, 2, argv, &rep);

        if (r < 0)
                return r;
        member = rep->type == REDIS_REPLY_INTEGER && rep->integer == 1;
        reply_drop(rep);
        if (!member || !container_lost(pv, sid))
                return 0;
        return drop(rc, pv, sid, POOL_WHY_WATCH, NULL) ? 1 : 0;
}

/* Members to drop: too old, of an unpooled image, of an image whose name
 * now names another image (re-tagged), stuck creating, or (check) whose
 * container is lost. */
static int scan(struct redis_conn *rc, struct provider *pv, const struct broker_config *cfg,
                bool check, const struct pool_report *report)
{
        char ids[CONFIG_POOLS_MAX][PROVIDER_IMAGE_ID_MAX];
        bool known[CONFIG_POOLS_MAX] = { false };
        redisReply *rep = NULL;
        char limit[16];
        int64_t now = timeutil_now_ms();
        int dropped = 0, r;

        snprintf(limit, sizeof(limit), "%d", POOL_SCAN_MAX);
        const char *argv[] = { "scan", limit };
        r = wpool(rc, 2, argv, &rep);
        if (r < 0)
                return r;
        if (rep->type == REDIS_REPLY_ARRAY) {
                for (size_t i = 0; i + 5 < rep->elements; i += 6) {
                        const char *sid = rep->element[i]->str, *image = rep->element[i + 1]->str;
                        const char *state = rep->element[i + 3]->str;
                        const char *alive = rep->element[i + 4]->str;
                        const char *made_of = rep->element[i + 5]->str;
                        int64_t age = now - atoll(rep->element[i + 2]->str);
                        const char *why = NULL;
                        if (!sid || !image || !state || !alive || !made_of)
                                continue;
                        int pool = config_pool_find(cfg, image);
                        if (!image[0] || pool < 0 || cfg->pools[pool].size == 0)
                                why = "its image has no pool any more";
                        else if (strcmp(cfg->pools[pool].image, image) != 0)
                                /* POOL now spells the image otherwise: the
                                 * pool's keys have the new spelling, so no
                                 * claim would ever find this member */
                                why = "POOL now spells its image otherwise";
                        else if (!strcmp(state, "creating") && !strcmp(alive, "0") && age > 1000)
                                why = "left creating by a crashed supervisor";
                        else if (!strcmp(state, "ready") && age > cfg->pool_max_age_ms)
                                why = "older than POOL_MAX_AGE_MS";
                        else if (!strcmp(state, "ready") && made_of[0] &&
                                 current_id(pv, cfg, image, ids, known)[0] &&
                                 strcmp(made_of, current_id(pv, cfg, image, ids, known)) != 0)
                                why = "its image name now names another image";
                        else if (check && !strcmp(state, "ready") && container_lost(pv, sid))
                                why = "its container is gone or has ended";
                        if (why && drop(rc, pv, sid, why, report))
                                dropped++;
                }
        }
        reply_drop(rep);
        return dropped;
}

static int count(struct redis_conn *rc, const char *image, long long *all, long long *ready)
{
        redisReply *rep = NULL;
        const char *argv[] = { "count", image };
        int r = wpool(rc, 2, argv, &rep);

        if (r < 0)
                return r;
        if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 2) {
                reply_drop(rep);
                return -EPROTO;
        }
        *all = rep->element[0]->integer;
        *ready = rep->element[1]->integer;
        reply_drop(rep);
        return 0;
}

/* POOL_COUNTS_AGAINST_CAPACITY=1: members and held slots together stay
 * within BROKER_CAPACITY. */
static bool capacity_allows(struct redis_conn *rc, const struct broker_config *cfg)
{
        char key[96], all_key[96];
        redisReply *a = NULL, *m = NULL;
        bool ok = false;

        if (!cfg->pool_counts_against_capacity)
                return true;
        snprintf(key, sizeof(key), "%sactive", cfg->key_prefix);
        snprintf(all_key, sizeof(all_key), "%swpool:all", cfg->key_prefix);
        const char *av[] = { "SCARD", key }, *mv[] = { "ZCARD", all_key };
        if (redis_conn_command(rc, 2, av, &a) == 0 && redis_conn_command(rc, 2, mv, &m) == 0 &&
            a->type == REDIS_REPLY_INTEGER && m->type == REDIS_REPLY_INTEGER)
                ok = a->integer + m->integer < cfg->capacity;
        reply_drop(a);
        reply_drop(m);
        return ok;
}

/* Make one member of pool i: reserve, create, start (agent up), ready. */
static int make_member(struct redis_conn *rc, struct provider *pv, const struct broker_config *cfg,
                       struct pool_state *ps, int i, const struct pool_report *report)
{
        const char *image = cfg->pools[i].image;
        char sid[33], ref[PROVIDER_REF_MAX] = "", err[PROVIDER_ERR_MAX] = "", env_sid[64];
        char limits[64], buf[32], buf2[32], image_id[PROVIDER_IMAGE_ID_MAX] = "";
        redisReply *rep = NULL;
        int64_t t0 = timeutil_mono_ms();
        int r;

        r = timeutil_random_id(sid, sizeof(sid));
        if (r < 0)
                return r;
        const char *rv[] = { "reserve", image, sid, ps->owner };
        r = wpool(rc, 4, rv, &rep);
        if (r < 0)
                return r;
        reply_drop(rep);
        rep = NULL;
        snprintf(env_sid, sizeof(env_sid), "SANDBOX_ID=%s", sid);
        /* what the name means now: a later re-tag replaces the member */
        if (provider_image_id(pv, image, image_id, err) < 0)
                image_id[0] = err[0] = '\0';
        struct sandbox_limits lim;
        member_limits(rc, cfg, image, &lim);
        const char *envp[] = { env_sid, NULL };
        struct sandbox_spec spec = {
                .sandbox_id = sid,
                .key_prefix = cfg->key_prefix,
                .image = image,
                .env = envp,
                .workdir = "/workspace",
                .network = cfg->sandbox_network,
                .runtime = cfg->sandbox_runtime,
                .agent_dials = config_runtime_dials(cfg->sandbox_runtime),
                .limits = lim,
        };
        r = provider_create(pv, &spec, ref, err);
        if (r == 0)
                r = provider_start(pv, ref, err);
        if (r == 0) {
                snprintf(limits, sizeof(limits), "%lld,%lld,%lld", (long long)lim.nano_cpus,
                         (long long)lim.memory_bytes, (long long)lim.pids);
                const char *dv[] = { "ready", sid, ref, limits, image_id };
                r = wpool(rc, 5, dv, &rep);
                if (r == 0 && !(rep->type == REDIS_REPLY_INTEGER && rep->integer == 1)) {
                        remove_container(pv, sid, ref); /* dropped while we made it */
                        r = -ECANCELED;
                }
                reply_drop(rep);
        }
        if (r < 0 && r != -ECANCELED) {
                int64_t back = 1000LL << (ps->failures[i] < 6 ? ps->failures[i] : 6);
                if (back > POOL_BACKOFF_MAX_MS)
                        back = POOL_BACKOFF_MAX_MS;
                ps->failures[i]++;
                ps->backoff_until[i] = timeutil_now_ms() + back;
                drop(rc, pv, sid, "its start failed", report);
                remove_container(pv, sid, ref);
                if (!err[0])
                        snprintf(err, sizeof(err), "%s", strerror(-r));
                snprintf(buf, sizeof(buf), "%d", ps->failures[i]);
                snprintf(buf2, sizeof(buf2), "%lld", (long long)ps->backoff_until[i]);
                stat_set(rc, image, "error", err, "failures", buf, "backoffUntil", buf2);
                report_event(report, POOL_EVENT_FAILED, image, NULL, err, (long long)back);
                return r;
        }
        if (r == 0) {
                ps->failures[i] = 0;
                ps->backoff_until[i] = 0;
                snprintf(buf, sizeof(buf), "%lld", (long long)timeutil_now_ms());
                snprintf(buf2, sizeof(buf2), "%lld", (long long)(timeutil_mono_ms() - t0));
                stat_set(rc, image, "lastRefillAt", buf, "refillMs", buf2, "error", "");
                stat_set(rc, image, "failures", "0", "backoffUntil", "0", "error", "");
                report_event(report, POOL_EVENT_READY, image, sid, NULL, 0);
        }
        return 0;
}

int pool_step(struct redis_conn *rc, struct provider *pv, const struct broker_config *cfg,
              struct pool_state *ps, const struct pool_report *report)
{
        int64_t now = timeutil_mono_ms();
        int did = 0, r;

        if (!pv)
                return 0;
        if (!ps->owner[0] && (r = timeutil_random_id(ps->owner, sizeof(ps->owner))) < 0)
                return r;
        {
                char ttl[16];
                redisReply *rep = NULL;
                snprintf(ttl, sizeof(ttl), "%d", POOL_OWNER_TTL_MS);
                const char *av[] = { "alive", ps->owner, ttl };
                r = wpool(rc, 3, av, &rep);
                if (r < 0)
                        return r;
                reply_drop(rep);
        }
        if (now >= ps->next_scan) {
                bool check = now >= ps->next_check;
                ps->next_scan = now + POOL_SCAN_MS;
                if (check)
                        ps->next_check = now + POOL_CHECK_MS;
                r = scan(rc, pv, cfg, check, report);
                if (r < 0)
                        return r;
                did += r;
        }
        for (int i = 0; i < cfg->n_pools; i++) {
                long long all, ready;
                if (cfg->pools[i].size == 0 || timeutil_now_ms() < ps->backoff_until[i])
                        continue;
                r = count(rc, cfg->pools[i].image, &all, &ready);
                if (r < 0)
                        return r;
                if (all >= cfg->pools[i].size || !capacity_allows(rc, cfg) ||
                    refill_held(rc, cfg, ps, i, report))
                        continue;
                make_member(rc, pv, cfg, ps, i, report);
                return 1;
        }
        return did > 0;
}

bool pool_serves_leases(const struct broker_config *cfg, int i, char *why, size_t size)
{
        const char *ex = config_runtime_for_mode(cfg, "exclusive");
        const char *us = config_runtime_for_mode(cfg, "user_shared");

        if (!image_ref_same(cfg->pools[i].image, cfg->sandbox_image)) {
                snprintf(why, size, "no lease mode uses its image (SANDBOX_IMAGE is %s)",
                         cfg->sandbox_image);
                return false;
        }
        if (strcmp(ex, cfg->sandbox_runtime) != 0 && strcmp(us, cfg->sandbox_runtime) != 0) {
                snprintf(why,
                         size, "the lease modes of its image run %s and %s, its members %s (SANDBOX_RUNTIME)",
                         ex, us, cfg->sandbox_runtime);
                return false;
        }
        if (size)
                why[0] = '\0';
        return true;
}

static long long hget_ll(const redisReply *h, const char *field)
{
        const char *v = reply_hash_get(h, field);

        return v ? atoll(v) : 0;
}

static const char *hget_str(const redisReply *h, const char *field)
{
        const char *v = reply_hash_get(h, field);

        return v ? v : "";
}

int pool_status(struct redis_conn *rc, const struct broker_config *cfg, const char *image,
                struct json_object *obj)
{
        char key[320];
        long long all = 0, ready = 0;
        redisReply *h = NULL;
        int r = count(rc, image, &all, &ready);

        if (r < 0)
                return r;
        snprintf(key, sizeof(key), "%swpoolstat:%s", cfg->key_prefix, image);
        const char *argv[] = { "HGETALL", key };
        r = redis_conn_command(rc, 2, argv, &h);
        if (r < 0)
                return r;
        long long backoff = hget_ll(h, "backoffUntil");
        json_object_object_add(obj, "image", json_object_new_string(image));
        json_object_object_add(obj, "size", json_object_new_int(config_pool_size(cfg, image)));
        json_object_object_add(obj, "members", json_object_new_int64(all));
        json_object_object_add(obj, "ready", json_object_new_int64(ready));
        json_object_object_add(obj, "claimsWarm", json_object_new_int64(hget_ll(h, "warm")));
        json_object_object_add(obj, "claimsCold", json_object_new_int64(hget_ll(h, "cold")));
        json_object_object_add(obj, "lastRefillAt",
                               json_object_new_int64(hget_ll(h, "lastRefillAt")));
        json_object_object_add(obj, "refillMs", json_object_new_int64(hget_ll(h, "refillMs")));
        json_object_object_add(obj, "failures", json_object_new_int64(hget_ll(h, "failures")));
        json_object_object_add(obj, "backoffUntil", json_object_new_int64(backoff));
        json_object_object_add(obj, "error", json_object_new_string(hget_str(h, "error")));
        json_object_object_add(obj, "healthy", json_object_new_boolean(hget_ll(h, "failures") == 0));
        {
                char why[400], warning[480] = "";
                int i = config_pool_find(cfg, image);
                bool leases = i >= 0 && pool_serves_leases(cfg, i, why, sizeof(why));
                /* an OpenSandbox create naming the image counts a claim
                 * (warm or cold, wpool_take): then something asks for it */
                if (i >= 0 && !leases && hget_ll(h, "warm") + hget_ll(h, "cold") == 0)
                        snprintf(warning, sizeof(warning),
                                 "%s, and no create has asked for it: its members are never used",
                                 why);
                json_object_object_add(obj, "servesLeases", json_object_new_boolean(leases));
                json_object_object_add(obj, "warning", json_object_new_string(warning));
        }
        freeReplyObject(h);
        return 0;
}
