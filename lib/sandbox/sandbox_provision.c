/* sandbox_provision: a lease's sandbox made to run (sandbox.h): the claim
 * of a slot's sandbox, then, under the sandbox's Redis lock, its container
 * created from the record (or a warm-pool member's taken over) and
 * started, the lease's working directory made, and the lease activated; a
 * pull of its image ahead of it (sandbox_lease_pull_then_queue), and the
 * image checks of an admission. */
#include "sandbox/sandbox.h"
#include "sandbox/sandbox_internal.h"
#include "core/image_policy.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sandbox/egress_store.h"
#include "core/json_input.h"
#include "store/lease.h"
#include "sandbox/lifecycle.h"
#include "sandbox/lock_keeper.h"
#include "core/log.h"
#include "sandbox/opensandbox.h"
#include "core/metrics.h"
#include "sandbox/pool.h"
#include "store/sandbox_record.h"
#include "providers/provider_factory.h"
#include "core/timeutil.h"
#include "sandbox/volume.h"

#define WAIT_STEP_US 100000

/* A provider's -EIO is the backend's error, not Redis's: keep the two apart
 * so that a failed create fails its record instead of looking like an outage. */
static int pv_err(int r)
{
        return r == -EIO ? -EREMOTEIO : r;
}

/* A lock holder may spend a create and a start, each bounded by the
 * deadline of the backend in use. */
static int lock_ttl_ms(const struct broker_config *cfg)
{
        return 2 * provider_deadline_ms(cfg) + 5000;
}

int sandbox_provision_max_ms(const struct broker_config *cfg)
{
        return lock_ttl_ms(cfg);
}

static int lock_take(struct redis_conn *rc, const char *name, const char *token, int ttl)
{
        char ttl_s[16];
        redisReply *rep = NULL;
        int r;

        snprintf(ttl_s, sizeof(ttl_s), "%d", ttl);
        const char *argv[] = { name, token, ttl_s };
        r = redis_conn_script(rc, LUA_LOCK, 3, argv, &rep);
        if (r == 0)
                r = rep->type == REDIS_REPLY_INTEGER && rep->integer == 1 ? 1 : 0;
        reply_free(rep);
        return r;
}

static void lock_drop(struct redis_conn *rc, const char *name, const char *token)
{
        redisReply *rep = NULL;
        const char *argv[] = { name, token };

        redis_conn_script(rc, LUA_UNLOCK, 2, argv, &rep);
        reply_free(rep);
}

static int claim(struct redis_conn *rc, const struct broker_config *cfg, const char *lease_id,
                 struct sandbox_claim *c)
{
        char sid[33], cpus[24], mem[24], pids[16], disk[16], *pol[EGRESS_CONFIG_POLICIES];
        redisReply *rep = NULL;
        int pool = config_pool_find(cfg, cfg->sandbox_image), r;

        memset(c, 0, sizeof(*c));
        r = timeutil_random_id(sid, sizeof(sid));
        if (r < 0)
                return r;
        snprintf(cpus, sizeof(cpus), "%lld", (long long)cfg->sandbox_millicpus * 1000000LL);
        snprintf(mem, sizeof(mem), "%lld", (long long)cfg->sandbox_memory_mb * 1024 * 1024);
        snprintf(pids, sizeof(pids), "%d", cfg->sandbox_pids);
        snprintf(disk, sizeof(disk), "%d", cfg->sandbox_disk_mb);
        /* a record without an egress policy gets its pool's or its mode's
         * (failing that, none: it reads as deny-all) */
        (void)egress_config_policies(cfg, pol);
        const char *argv[] = { lease_id, sid, cfg->sandbox_image, cfg->sandbox_multiuser_image,
                               cpus, mem, pids, cfg->provider,
                               /* the pool's own spelling names its keys */
                               pool >= 0 ? cfg->pools[pool].image : "",
                               pol[0] ? pol[0] : "", pol[1] ? pol[1] : "", pol[2] ? pol[2] : "",
                               pol[3] ? pol[3] : "", pol[4] ? pol[4] : "",
                               config_runtime_for_mode(cfg, "exclusive"),
                               config_runtime_for_mode(cfg, "user_shared"),
                               config_runtime_for_mode(cfg, "multi_user_shared"),
                               cfg->sandbox_runtime, disk };
        r = redis_conn_script(rc, LUA_SANDBOX_CLAIM, 19, argv, &rep);
        for (int i = 0; i < EGRESS_CONFIG_POLICIES; i++)
                free(pol[i]);
        if (r < 0)
                return r;
        if (rep->type != REDIS_REPLY_ARRAY || rep->elements < 1 || !reply_is_str(rep->element[0], NULL)) {
                r = -EPROTO;
        } else if (strcmp(rep->element[0]->str, "notfound") == 0) {
                r = -ENOENT;
        } else if (strcmp(rep->element[0]->str, "gone") == 0) {
                r = -ESTALE;
        } else if (rep->elements != 7 ||
                   copy_str(rep->element[1], c->sandbox_id, sizeof(c->sandbox_id)) < 0 ||
                   copy_str(rep->element[2], c->state, sizeof(c->state)) < 0 ||
                   copy_str(rep->element[3], c->ref, sizeof(c->ref)) < 0 ||
                   copy_str(rep->element[4], c->workdir, sizeof(c->workdir)) < 0 ||
                   copy_str(rep->element[5], c->linux_user, sizeof(c->linux_user)) < 0 ||
                   copy_str(rep->element[6], c->needs, sizeof(c->needs)) < 0) {
                r = -EPROTO;
        }
        reply_free(rep);
        return r;
}

#define SPEC_MAX_ARGS 65
#define SPEC_MAX_ENV 130

/* The record's entrypoint and env (JSON, validated at create) as argv/envp;
 * strings borrow from *ep_obj / *env_obj, which the caller releases. */
static void spec_from_record(const struct sandbox_record *rec, const char *sid, char *env_sid,
                             struct json_object **ep_obj, struct json_object **env_obj,
                             const char **argv, char (*envbuf)[1024], const char **envp)
{
        size_t n = 0, e = 0;

        snprintf(env_sid, 64, "SANDBOX_ID=%s", sid);
        envp[e++] = env_sid;
        *ep_obj = rec->entrypoint[0] ? json_tokener_parse(rec->entrypoint) : NULL;
        if (*ep_obj && json_object_is_type(*ep_obj, json_type_array))
                for (; n < json_object_array_length(*ep_obj) && n + 1 < SPEC_MAX_ARGS; n++)
                        argv[n] = json_object_get_string(json_object_array_get_idx(*ep_obj, n));
        argv[n] = NULL;
        *env_obj = rec->env[0] ? json_tokener_parse(rec->env) : NULL;
        if (*env_obj && json_object_is_type(*env_obj, json_type_object)) {
                json_object_object_foreach(*env_obj, k, v) {
                        if (e + 1 >= SPEC_MAX_ENV)
                                break;
                        snprintf(envbuf[e], 1024, "%s=%s", k, json_object_get_string(v));
                        envp[e] = envbuf[e];
                        e++;
                }
        }
        envp[e] = NULL;
}

/* A pull's progress, shown in the record's status message while Pending. */
struct pull_progress {
        struct redis_conn *rc;
        const char *sid;
};

static void on_pull_progress(void *ud, const char *msg)
{
        struct pull_progress *pp = ud;

        (void)sandbox_transition(pp->rc, pp->sid, "Pending", "Pending", "PULLING_IMAGE", msg, "");
}

/* The record's lifecycle hooks (lifecycle.h) into *run. */
static int lifecycle_read(struct redis_conn *rc, const struct broker_config *cfg, const char *sid,
                          struct lifecycle_run *run, char *err)
{
        char key[160];
        redisReply *rep = NULL;
        int r;

        memset(run, 0, sizeof(*run));
        snprintf(key, sizeof(key), "%ssandbox:%s", cfg->key_prefix, sid);
        const char *argv[] = { "HGET", key, "lifecycle" };
        r = redis_conn_command(rc, 3, argv, &rep);
        if (r < 0)
                return r;
        r = reply_is_str(rep, NULL) ? lifecycle_run_read(rep->str, run) : 0;
        reply_free(rep);
        if (r == -EPROTO)
                snprintf(err, SANDBOX_ERR_MAX, "sandbox %s: its record's lifecycle hooks are unreadable", sid);
        return r == -EPROTO ? -EREMOTEIO : r;
}

/* Create the container of sid (or find the one a crashed attempt made).
 * With a preStart hook the container runs the agent alone: the entrypoint
 * is started once preStart has succeeded (pre_start). */
static int create_container(struct redis_conn *rc, struct provider *pv,
                            const struct broker_config *cfg, const char *sid,
                            const struct sandbox_record *rec, const struct lifecycle_run *lc,
                            const struct image_auth *auth, char *ref, char *err)
{
        struct pull_progress pp = { rc, sid };
        struct image_pull_cb pull_cb = { on_pull_progress, &pp };
        char (*envbuf)[1024]; /* SPEC_MAX_ENV of them: the heap's, for this call only */
        const char *argv[SPEC_MAX_ARGS], *envp[SPEC_MAX_ENV];
        struct json_object *ep_obj = NULL, *env_obj = NULL;
        char env_sid[64], name[48];
        struct sandbox_spec spec = {
                .sandbox_id = sid,
                .key_prefix = cfg->key_prefix,
                .image = rec->image,
                .env = envp,
                .workdir = "/workspace",
                .network = cfg->sandbox_network,
                .runtime = config_runtime_of(cfg, rec->runtime),
                /* a record made before disks gets the default one, never none */
                .limits = { rec->nano_cpus, rec->memory_bytes, rec->pids,
                            rec->disk_mb >= 0 ? rec->disk_mb : cfg->sandbox_disk_mb },
                .image_auth = auth,
                .pull_cb = &pull_cb,
                .agent_args = (const char *const *)lc->hook_args,
        };
        struct volume_mounts mounts;
        struct sandbox_info info;
        int r;

        if (volume_mounts_parse(rec->volumes, &mounts) < 0) {
                snprintf(err, SANDBOX_ERR_MAX, "sandbox %s: its record's volumes are unreadable", sid);
                return -EREMOTEIO;
        }
        r = volume_mounts_check(pv, &mounts, err);
        if (r < 0) {
                volume_mounts_free(&mounts);
                return r == -ENOENT ? -EREMOTEIO : pv_err(r);
        }
        spec.mounts = mounts.m;
        spec.n_mounts = mounts.n;
        spec.agent_dials = config_runtime_dials(spec.runtime);
        envbuf = malloc(SPEC_MAX_ENV * sizeof(*envbuf));
        if (!envbuf) {
                volume_mounts_free(&mounts);
                snprintf(err, SANDBOX_ERR_MAX, "sandbox %s: out of memory", sid);
                return -ENOMEM;
        }
        spec_from_record(rec, sid, env_sid, &ep_obj, &env_obj, argv, envbuf, envp);
        spec.entrypoint = argv[0] && !lc->pre_argv ? argv : NULL;
        r = pv_err(provider_create(pv, &spec, ref, err));
        free(envbuf);
        json_put(ep_obj);
        json_put(env_obj);
        volume_mounts_free(&mounts);
        if (r == -ENOENT)
                r = -EREMOTEIO; /* e.g. no such image: a failed sandbox, not a missing lease */
        if (r == -EBUSY) {
                /* The name is taken: an earlier attempt created it. Adopt it. */
                snprintf(name, sizeof(name), "sb-%s", sid);
                r = pv_err(provider_inspect(pv, name, &info, err));
                if (r == 0)
                        snprintf(ref, PROVIDER_REF_MAX, "%s", info.ref);
                else if (r == -ENOENT)
                        r = -EREMOTEIO; /* a conflict on a name nobody holds: the backend's problem */
        }
        if (r < 0)
                return r;
        /* Record the ref at once: a crash from here on leaves a findable container. */
        r = sandbox_transition(rc, sid, "Pending", "Pending", "STARTING", "starting the sandbox", ref);
        if (r == -EBUSY || r == -ENOENT) {
                /* deleted while we created it: its teardown never saw this container */
                char ignored[PROVIDER_ERR_MAX];
                provider_remove(pv, ref, ignored);
                snprintf(err, SANDBOX_ERR_MAX, "sandbox %s was deleted while being created", sid);
                return -ECANCELED;
        }
        return r;
}

/* A claimed warm-pool member was made with the pool's limits: give it the
 * record's when they differ (Engine API container update). */
static int warm_limits(struct provider *pv, const struct sandbox_record *rec, const char *ref, char *err)
{
        char want[64];
        struct sandbox_limits l = { rec->nano_cpus, rec->memory_bytes, rec->pids, 0 }; /* the disk stays */

        snprintf(want, sizeof(want), "%lld,%lld,%lld", rec->nano_cpus, rec->memory_bytes, rec->pids);
        if (strcmp(want, rec->pool_limits) == 0 || !provider_can_update_limits(pv))
                return 0;
        return pv_err(provider_update_limits(pv, ref, &l, err));
}

/* A claimed warm-pool member runs the agent alone: start the record's
 * entrypoint (an OpenSandbox create's) with its env as the sandbox's main
 * process, as a cold create's container would have run it. */
static int warm_entrypoint(struct provider *pv, const struct broker_config *cfg,
                           const struct sandbox_record *rec, const char *sid, const char *ref, char *err)
{
        char (*envbuf)[1024]; /* SPEC_MAX_ENV of them: the heap's, for this call only */
        const char *argv[SPEC_MAX_ARGS], *envp[SPEC_MAX_ENV];
        struct json_object *ep_obj = NULL, *env_obj = NULL;
        struct exec_result res = { 0 };
        char env_sid[64];
        int r;

        if (!rec->entrypoint[0])
                return 0;
        envbuf = malloc(SPEC_MAX_ENV * sizeof(*envbuf));
        if (!envbuf) {
                snprintf(err, SANDBOX_ERR_MAX, "sandbox %s: out of memory", sid);
                return -ENOMEM;
        }
        spec_from_record(rec, sid, env_sid, &ep_obj, &env_obj, argv, envbuf, envp);
        struct exec_spec spec = { .argv = argv, .env = envp, .cwd = "/workspace",
                                  .timeout_ms = provider_deadline_ms(cfg), .max_output = 1024,
                                  .detach = true, .entrypoint = true };
        r = argv[0] ? pv_err(provider_exec(pv, ref, &spec, &res, err)) : 0;
        /* A member is claimed by one record only: an entrypoint it has is
         * this one's, started by a provisioning whose process died before
         * the agent's answer (a handler killed mid-create) */
        if (r == -EALREADY) {
                err[0] = '\0';
                r = 0;
        }
        if (r == 0 && res.exit_code >= 0) {
                snprintf(err, SANDBOX_ERR_MAX, "the entrypoint cannot be started (exit code %d): %.200s",
                         res.exit_code, res.err ? res.err : "");
                r = -EREMOTEIO;
        }
        exec_result_free(&res);
        free(envbuf);
        json_put(ep_obj);
        json_put(env_obj);
        return r;
}

/* Run the preStart hook through the agent, before the entrypoint (which
 * the caller starts after it). 0 when it exited 0; otherwise the sandbox
 * is made Failed (reason PRESTART_FAILED or PRESTART_TIMEOUT), its
 * container removed, and -ECANCELED returned; a provider error as is. */
static int pre_start(struct redis_conn *rc, struct provider *pv, const struct sandbox_record *rec,
                     const struct lifecycle_run *lc, const char *sid, const char *ref, char *err)
{
        char (*envbuf)[1024]; /* SPEC_MAX_ENV of them: the heap's, for this call only */
        const char *argv[SPEC_MAX_ARGS], *envp[SPEC_MAX_ENV];
        struct json_object *ep_obj = NULL, *env_obj = NULL;
        struct exec_result res = { 0 };
        char env_sid[64], msg[SANDBOX_ERR_MAX], ignored[PROVIDER_ERR_MAX];
        int r;

        envbuf = malloc(SPEC_MAX_ENV * sizeof(*envbuf));
        if (!envbuf) {
                snprintf(err, SANDBOX_ERR_MAX, "sandbox %s: out of memory", sid);
                return -ENOMEM;
        }
        /* the sandbox's env, as its entrypoint gets it */
        spec_from_record(rec, sid, env_sid, &ep_obj, &env_obj, argv, envbuf, envp);
        struct exec_spec spec = { .argv = lc->pre_argv, .env = envp, .cwd = "/workspace",
                                  .timeout_ms = lc->pre_timeout_s * 1000, .max_output = 2048 };
        (void)sandbox_transition(rc, sid, "Pending", "Pending", "PRESTART", "running the preStart hook", ref);
        r = pv_err(provider_exec(pv, ref, &spec, &res, err));
        free(envbuf);
        json_put(ep_obj);
        json_put(env_obj);
        if (r < 0 || res.exit_code == 0) {
                exec_result_free(&res);
                return r;
        }
        if (res.timed_out) {
                snprintf(msg, sizeof(msg), "the preStart hook did not finish within its timeout (%d s); "
                         "the sandbox was removed", lc->pre_timeout_s);
        } else {
                size_t len = res.err ? res.err_len : 0, n;
                const char *tail;

                while (len && (res.err[len - 1] == '\n' || res.err[len - 1] == '\r'))
                        len--;
                n = len > 120 ? 120 : len;
                tail = n ? res.err + len - n : "";

                snprintf(msg, sizeof(msg), "the preStart hook exited with code %d; the sandbox was removed%s%.*s",
                         res.exit_code, n ? "; its stderr ends: " : "", (int)n, tail);
        }
        log_info(LOG_KV({ "SANDBOX_ID", sid }), "%s", msg);
        provider_remove(pv, ref, ignored);
        /* from Pending only: a sandbox deleted meanwhile stays Terminated */
        (void)sandbox_transition(rc, sid, "Pending", "Failed",
                                 res.timed_out ? "PRESTART_TIMEOUT" : "PRESTART_FAILED", msg, "");
        snprintf(err, SANDBOX_ERR_MAX, "%s", msg);
        exec_result_free(&res);
        return -ECANCELED;
}

/* provision_steps with sid's record (spec and volumes) and its hooks read. */
static int provision_run(struct redis_conn *rc, struct provider *pv, const struct broker_config *cfg,
                         const char *sid, const struct sandbox_record *rec, const struct lifecycle_run *lc,
                         const struct image_auth *auth, char *image, bool *cold, char *err)
{
        char ref[PROVIDER_REF_MAX] = "";
        int64_t t0;
        bool warm = false;
        int r, attempt;

        if (strcmp(rec->state, "Running") == 0)
                return 0;
        if (strcmp(rec->state, "Pending") != 0) {
                snprintf(err, SANDBOX_ERR_MAX, "sandbox %s is %s", sid, rec->state);
                return -ECANCELED;
        }
        snprintf(ref, sizeof(ref), "%s", rec->ref);
        t0 = timeutil_mono_ms();
        for (attempt = 0; attempt < 2; attempt++) {
                if (!ref[0]) {
                        if (!*cold && pool_cold_begin(rc, cfg, rec->image, sid) == 1) {
                                memcpy(image, rec->image, sizeof(rec->image));
                                *cold = true;
                        }
                        r = create_container(rc, pv, cfg, sid, rec, lc, auth, ref, err);
                        if (r < 0)
                                return r;
                } else if (rec->pool_limits[0] && rec->volumes[0]) {
                        /* a warm member was made without mounts, and mounts
                         * cannot be added to a container: never claimed for
                         * a create with volumes (those are OpenSandbox
                         * creates, which sandbox_claim.lua makes cold) */
                        snprintf(err, SANDBOX_ERR_MAX, "sandbox %s: a warm pool member cannot take volumes", sid);
                        return -EREMOTEIO;
                } else if (rec->pool_limits[0] && attempt == 0) {
                        r = warm_limits(pv, rec, ref, err);
                        if (r < 0)
                                return r;
                        warm = true;
                }
                r = pv_err(provider_start(pv, ref, err));
                if (r != -ENOENT)
                        break;
                ref[0] = '\0'; /* the container vanished since: make it again */
                warm = false;
        }
        if (r == -ENOENT)
                r = -EREMOTEIO;
        /* preStart before the entrypoint: a container made for hooks runs
         * the agent alone until then (create_container) */
        if (r == 0 && lc->pre_argv)
                r = pre_start(rc, pv, rec, lc, sid, ref, err);
        if (r == 0 && (warm || lc->pre_argv))
                r = warm_entrypoint(pv, cfg, rec, sid, ref, err);
        if (r < 0)
                return r;
        metrics_observe_ms(METRICS_SANDBOX_CREATE, timeutil_mono_ms() - t0);
        r = sandbox_transition(rc, sid, "Pending", "Running", "READY", "", ref);
        return r == -EBUSY ? -ECANCELED : r;
}

/* Make sid run, holding its lock; *cold: a cold create of its pooled
 * image (into image, sizeof(rec.image)) was marked (pool_cold_begin), for
 * the caller to end. */
static int provision_steps(struct redis_conn *rc, struct provider *pv,
                           const struct broker_config *cfg, const char *sid,
                           const struct image_auth *auth, char *image, bool *cold, char *err)
{
        struct sandbox_record rec;
        struct lifecycle_run lc;
        int r = sandbox_record_read(rc, cfg, sid, SANDBOX_RECORD_SPEC | SANDBOX_RECORD_VOLUMES, &rec);

        if (r < 0)
                return r;
        r = lifecycle_read(rc, cfg, sid, &lc, err);
        if (r == 0) {
                r = provision_run(rc, pv, cfg, sid, &rec, &lc, auth, image, cold, err);
                lifecycle_run_free(&lc);
        }
        sandbox_record_clear(&rec);
        return r;
}

static int provision_locked(struct redis_conn *rc, struct provider *pv,
                            const struct broker_config *cfg, const char *sid,
                            const struct image_auth *auth, char *err)
{
        char image[sizeof(((struct sandbox_record *)0)->image)];
        bool cold = false;
        int r = provision_steps(rc, pv, cfg, sid, auth, image, &cold, err);

        if (cold)
                pool_cold_end(rc, cfg, image, sid);
        return r;
}

/* Wait for another process's provisioning of sid, or take it over. */
static int provision(struct redis_conn *rc, struct provider *pv, const struct broker_config *cfg,
                     const char *sid, const struct image_auth *auth, char *err)
{
        char lock[48], token[33];
        int64_t deadline = timeutil_mono_ms() + lock_ttl_ms(cfg) + 1000;
        struct sandbox_record rec = { 0 }; /* core fields only: nothing to clear */
        int r;

        snprintf(lock, sizeof(lock), "sandbox:%s", sid);
        r = timeutil_random_id(token, sizeof(token));
        if (r < 0)
                return r;
        for (;;) {
                /* a short lock, kept alive by this process's lock keeper
                 * (lock_keeper.h); a long one when the keeper is full */
                r = lock_take(rc, lock, token, LOCK_KEEPER_TTL_MS);
                if (r < 0)
                        return r;
                if (r == 1) {
                        if (lock_keeper_add(cfg, lock, token) < 0 &&
                            (r = lock_take(rc, lock, token, lock_ttl_ms(cfg))) < 0)
                                return r;
                        r = 1;
                        break;
                }
                r = sandbox_record_read(rc, cfg, sid, 0, &rec);
                if (r < 0)
                        return r;
                if (strcmp(rec.state, "Pending") != 0)
                        break; /* the other holder finished: judge the outcome below */
                if (timeutil_mono_ms() > deadline) {
                        snprintf(err, SANDBOX_ERR_MAX, "sandbox %s: timed out waiting for its creation", sid);
                        return -ETIMEDOUT;
                }
                usleep(WAIT_STEP_US);
        }
        if (r == 1) {
                r = provision_locked(rc, pv, cfg, sid, auth, err);
                if (r < 0 && r != -EIO && r != -ECANCELED) {
                        /* A provider failure: nothing half-made stays behind. */
                        char ignored[PROVIDER_ERR_MAX];
                        if (sandbox_record_read(rc, cfg, sid, 0, &rec) == 0 && rec.ref[0])
                                provider_remove(pv, rec.ref, ignored);
                        sandbox_transition(rc, sid, "", "Failed", "PROVIDER_ERROR", err, "");
                }
                lock_keeper_remove(lock, token);
                lock_drop(rc, lock, token);
                return r;
        }
        if (strcmp(rec.state, "Running") == 0)
                return 0;
        snprintf(err, SANDBOX_ERR_MAX, "sandbox %s is %s", sid, rec.state);
        return -ECANCELED;
}

int sandbox_lease_pull_then_queue(struct redis_conn *rc, struct provider *pv,
                                  const struct broker_config *cfg, const char *lease_id,
                                  const char *sid, const char *image,
                                  const struct image_auth *auth, char *err)
{
        struct pull_progress pp = { rc, sid };
        struct image_pull_cb cb = { on_pull_progress, &pp };
        char lock[48], token[33];
        bool kept = false;
        int r, locked;

        err[0] = '\0';
        snprintf(lock, sizeof(lock), "sandbox:%s", sid);
        r = timeutil_random_id(token, sizeof(token));
        if (r < 0)
                return r;
        /* the sandbox's lock while the image comes: a supervisor's finder
         * of leases left provisioning (lease_stale) leaves it alone, as it
         * would a create in progress */
        locked = lock_take(rc, lock, token, LOCK_KEEPER_TTL_MS);
        if (locked == 1) {
                kept = lock_keeper_add(cfg, lock, token) == 0;
                if (!kept)
                        (void)lock_take(rc, lock, token,
                                        lock_ttl_ms(cfg) + cfg->image_pull_timeout_ms);
        }
        r = provider_image_ensure(pv, image, auth, cfg->image_pull_timeout_ms, &cb, err);
        if (r == 0) {
                /* queued while the lock is held: the worker that takes it
                 * waits for the lock, never the finder of stale leases */
                r = lease_intent_push(rc, lease_id);
                if (r == 0)
                        snprintf(err, SANDBOX_ERR_MAX, "the lease left provisioning during the pull");
                r = r == 1 ? 0 : r == 0 ? -ECANCELED : r;
        } else {
                if (!err[0])
                        snprintf(err, SANDBOX_ERR_MAX, "image pull of %s: %s", image, strerror(-r));
                sandbox_transition(rc, sid, "", "Failed", "PROVIDER_ERROR", err, "");
                if (r != -EIO)
                        lease_fail(rc, lease_id, err);
        }
        if (kept)
                lock_keeper_remove(lock, token);
        if (locked == 1)
                lock_drop(rc, lock, token);
        return r;
}

/* Per-lease setup inside a running sandbox: a session directory for
 * user_shared leases (the image has /workspace and the seat homes). */
static int prepare_workdir(struct provider *pv, const struct broker_config *cfg,
                           const char *ref, const struct sandbox_claim *c, char *err)
{
        const char *argv[] = { "mkdir", "-p", "--", c->workdir, NULL };
        struct exec_spec spec = { .argv = argv, .user = c->linux_user,
                                  .timeout_ms = provider_deadline_ms(cfg), .max_output = 4096 };
        struct exec_result res = { 0 };
        int r;

        if (strncmp(c->workdir, "/workspace/", 11) != 0)
                return 0;
        r = pv_err(provider_exec(pv, ref, &spec, &res, err));
        if (r == 0 && res.exit_code != 0) {
                snprintf(err, SANDBOX_ERR_MAX, "cannot create %s: %s", c->workdir,
                         res.err ? res.err : "mkdir failed");
                r = -EREMOTEIO;
        }
        exec_result_free(&res);
        return r;
}

int sandbox_lease_ready(struct redis_conn *rc, struct provider *pv, const struct broker_config *cfg,
                        const char *lease_id, struct json_object **ret_lease, char *err)
{
        return sandbox_lease_ready_auth(rc, pv, cfg, lease_id, NULL, ret_lease, err);
}

int sandbox_lease_ready_auth(struct redis_conn *rc, struct provider *pv,
                             const struct broker_config *cfg, const char *lease_id,
                             const struct image_auth *auth, struct json_object **ret_lease,
                             char *err)
{
        struct sandbox_claim c;
        struct lease_outcome out = { 0 };
        struct sandbox_record rec; /* core fields only: nothing to clear */
        int r;

        if (ret_lease)
                *ret_lease = NULL;
        err[0] = '\0';
        r = claim(rc, cfg, lease_id, &c);
        if (r == -ESTALE) {
                snprintf(err, SANDBOX_ERR_MAX, "the sandbox was deleted before it got a slot");
                lease_fail(rc, lease_id, err);
                return r;
        }
        if (r < 0)
                return r;
        if (strcmp(c.state, "Running") != 0) {
                r = provision(rc, pv, cfg, c.sandbox_id, auth, err);
                if (r < 0)
                        goto fail;
        }
        r = sandbox_record_read(rc, cfg, c.sandbox_id, 0, &rec);
        if (r < 0)
                goto fail;
        r = prepare_workdir(pv, cfg, rec.ref, &c, err);
        if (r < 0)
                goto fail;
        r = lease_activate(rc, lease_id, &out);
        if (r < 0)
                return r;
        if (out.kind != LEASE_GRANTED) {
                lease_outcome_clear(&out);
                return -ENOENT; /* released while its sandbox was being made */
        }
        if (ret_lease) {
                *ret_lease = out.lease;
                out.lease = NULL;
        }
        lease_outcome_clear(&out);
        return 0;
fail:
        if (r == -EIO && !err[0])
                snprintf(err, SANDBOX_ERR_MAX, "Redis is unavailable");
        if (!err[0])
                snprintf(err, SANDBOX_ERR_MAX, "sandbox %s could not be made: %s", c.sandbox_id,
                         strerror(-r));
        if (r != -EIO)
                lease_fail(rc, lease_id, err);
        return r;
}

int sandbox_image_admissible(struct provider *pv, const struct broker_config *cfg,
                             const char *image, char *err)
{
        /* No pulls configured: as before, the create decides (a missing
         * image fails the sandbox with the backend's reason). */
        if (!pv || !cfg->image_allow[0] || image_policy_allows(cfg->image_allow, image))
                return 0;
        /* A present image passes: image_ensure finds it and does nothing. A
         * missing one is refused before any pull (-EPERM). */
        return provider_image_ensure(pv, image, NULL, cfg->docker_timeout_ms, NULL, err);
}

int sandbox_image_prefetch(struct provider *pv, const struct broker_config *cfg,
                           const char *image, const struct image_auth *auth, char *err)
{
        return provider_image_ensure(pv, image, auth, cfg->image_pull_timeout_ms, NULL, err);
}
