/* broker-supervisor: see supervisor.h.
 *
 * The loop: take tickets from Kafka, grant what the slots allow (each grant
 * stores the intent to make its sandbox with the lease, as a direct acquire
 * does), take intents for the idle provisioning workers (provision.c), reap
 * on every tick, sleep on the wake channel. Teardowns and the reconciler
 * run on their own thread (sandboxes.c), provider events on another
 * (watch.c). SIGTERM/SIGINT finish the current step (no half-granted
 * ticket: every step is one Redis script) and leave the consumer group
 * cleanly. */
#include <curl/curl.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/auth.h"
#include "store/lease.h"
#include "core/log.h"
#include "core/metrics.h"
#include "store/metrics_store.h"
#include "providers/provider_factory.h"
#include "sandbox/sandbox.h"
#include "supervisor.h"
#include "core/timeutil.h"

#define KAFKA_POLL_MS 5
#define TOPIC_TIMEOUT_MS 10000

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
        stop_signal = sig;
}

void sup_redis_status(struct sup *s, int r, const char *what)
{
        /* once per outage, and once more when an unreachable Redis comes
         * back loading its dataset (it refuses everything until done) */
        bool loading = r < 0 && redis_conn_loading(s->redis);

        if (r < 0 && (!s->redis_down || (loading && !s->redis_loading))) {
                s->redis_down = true;
                s->redis_loading = loading;
                if (loading)
                        log_err(NULL, "%s: Redis is loading its dataset (it restarted); retrying every tick",
                                what);
                else
                        log_err(NULL, "%s: Redis unavailable (%s); retrying every tick", what,
                                strerror(-r));
        } else if (r >= 0 && s->redis_down) {
                s->redis_down = false;
                s->redis_loading = false;
                log_info(NULL, "Redis is back");
        }
}

/* The producer of audit events, kept for the supervisor's life; it first
 * makes sure both topics (tickets, events) exist. */
static int events_start(struct sup *s)
{
        char err[256];
        int r = kafka_producer_new(&s->cfg, "broker-supervisor-events", &s->events, err, sizeof(err));

        if (r < 0) {
                log_err(NULL, "kafka producer: %s", err);
                return r;
        }
        r = kafka_topic_ensure(s->events, TOPIC_TIMEOUT_MS, err, sizeof(err));
        if (r < 0)
                log_err(NULL, "kafka: cannot ensure topics %s and %s: %s", s->cfg.kafka_topic,
                        s->cfg.kafka_events_topic, err);
        return r;
}

static void run(struct sup *s)
{
        int64_t next_tick = 0;
        bool woken = true;

        while (!stop_signal) {
                int64_t now = timeutil_mono_ms();
                int r, got;

                sup_notify_turn(s); /* WATCHDOG=1 only from a turning loop */
                metrics_flush_due(s->redis, &s->cfg);
                got = sup_queue_fetch(s, 0);
                if (got < 0)
                        log_warn(NULL, "kafka: consumer error: %s", strerror(-got));
                if (now >= next_tick) {
                        next_tick = now + s->cfg.supervisor_tick_ms;
                        r = sup_reap_expired(s);
                        sup_redis_status(s, r, "reaper");
                        woken = true; /* freed slots, or a queue stalled by an outage */
                }
                if (got > 0 || woken) {
                        r = sup_queue_grant(s);
                        sup_redis_status(s, r, "grant");
                }
                /* after the grants: their intents are taken in the same turn
                 * (not a turn later, on their own wake-up) */
                r = sup_provision_intake(s, woken || s->granted);
                s->granted = false;
                if (r < 0)
                        sup_redis_status(s, r, "provisioning intents");
                woken = false;
                if (now >= s->next_recover) {
                        s->next_recover = now + SUP_RECOVER_MS;
                        sup_sandboxes_recover(s);
                }
                /* Sleep on the wake channel, but come back soon for Kafka. */
                woken = sup_wake_wait(s, KAFKA_POLL_MS) > 0;
        }
}

int sup_conns_open(const struct broker_config *cfg, struct provider **pv, struct redis_conn **rc)
{
        char err[PROVIDER_ERR_MAX];

        *pv = NULL;
        *rc = NULL;
        if (provider_new_from_config(cfg, pv, err) == 0 && *pv && redis_conn_new(cfg, rc) == 0)
                return 0;
        sup_conns_close(*pv, *rc);
        *pv = NULL;
        *rc = NULL;
        return -EIO;
}

void sup_conns_close(struct provider *pv, struct redis_conn *rc)
{
        redis_conn_free(rc);
        provider_free(pv);
}

/* Host bounds (docs/OPERATIONS.md, "Host bounds"): a configuration that
 * leaves what sandboxes write on the host unbounded is said at every start,
 * never silently. */
static void bounds_report(const struct broker_config *cfg)
{
        const char *seats = config_runtime_for_mode(cfg, "multi_user_shared");

        /* Kubernetes: seats hide their processes from each other only under
         * the RuntimeClass that mounts /proc hidepid (docs/KUBERNETES.md) */
        if (!strcmp(cfg->provider, "kubernetes") && strcmp(seats, "sandbox-runc"))
                log_warn(NULL,
                         "multi_user_shared sandboxes run under RuntimeClass '%s', not "
                         "'sandbox-runc': their seats see each other's processes and command "
                         "lines (set SANDBOX_RUNTIME_MULTI_USER_SHARED=sandbox-runc; "
                         "docs/KUBERNETES.md, \"Seats\")",
                         seats[0] ? seats : "(the cluster's default)");
        if (strcmp(cfg->provider, "docker") || !cfg->sandbox_agent[0])
                return;
        if (!cfg->mountd_socket[0])
                log_warn(NULL,
                         "MOUNTD_SOCKET is empty: the sandboxes' run directories are plain "
                         "directories of %s, unbounded: one sandbox can fill that filesystem "
                         "for every other (docs/OPERATIONS.md, \"Host bounds\")",
                         cfg->agent_dir);
        if (!cfg->sandbox_disk_mb)
                log_warn(NULL,
                         "SANDBOX_DISK_MB=0: sandboxes have no disk of their own; what they "
                         "write lands on dockerd's disk unbounded: one sandbox can fill it for "
                         "every other (docs/OPERATIONS.md, \"Host bounds\")");
        if (cfg->mountd_socket[0])
                log_info(NULL,
                         "host bounds: through %s, run directories on tmpfs of their own, "
                         "disks of %d MiB (at most %d MiB)",
                         cfg->mountd_socket, cfg->sandbox_disk_mb, cfg->sandbox_disk_max_mb);
}

int main(void)
{
        struct sup *s = calloc(1, sizeof(*s));
        struct sigaction sa = { .sa_handler = on_signal };
        char err[256];
        int rc = 1;

        log_init("broker-supervisor", LOG_INFO);
        if (!s)
                return 1;
        if (config_load(&s->cfg, err, sizeof(err)) < 0) {
                log_err(NULL, "configuration: %s", err);
                free(s);
                return 2;
        }
        log_init("broker-supervisor", s->cfg.log_priority);
        s->last_offset = -1;
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGINT, &sa, NULL);
        signal(SIGPIPE, SIG_IGN);
        curl_global_init(CURL_GLOBAL_DEFAULT); /* once, before any provider (docker.h) */

        if (redis_conn_new(&s->cfg, &s->redis) < 0)
                goto out;
        {
                char perr[SANDBOX_ERR_MAX];
                if (provider_new_from_config(&s->cfg, &s->provider, perr) < 0) {
                        log_err(NULL, "%s", perr);
                        goto out;
                }
        }
        if (events_start(s) < 0)
                goto out;
        if (sup_watch_start(s) < 0)
                goto out;
        if (sup_provision_start(s) < 0)
                goto out;
        if (kafka_consumer_new(&s->cfg, &s->consumer, err, sizeof(err)) < 0) {
                log_err(NULL, "kafka consumer: %s", err);
                goto out;
        }
        log_info(NULL, "supervising: capacity %d, topic %s, group %s, events %s, lease ttl %d ms",
                 s->cfg.capacity, s->cfg.kafka_topic, s->cfg.kafka_group, s->cfg.kafka_events_topic,
                 s->cfg.lease_ttl_ms);
        bounds_report(&s->cfg);
        if (sup_notify_wait_ready(s, &stop_signal) == 0) {
                /* the bootstrap keys of OPENSANDBOX_API_KEYS, so that
                 * broker-admin lists them (revoked ones stay revoked) */
                int n = auth_seed_all(s->redis, &s->cfg);
                if (n < 0)
                        log_warn(NULL, "API key seeds not stored (%s); they are stored on first use",
                                 strerror(-n));
                else if (n > 0)
                        log_info(NULL, "API keys: %d seed key(s) of OPENSANDBOX_API_KEYS present", n);
                if (sup_pool_start(s) < 0)
                        log_warn(NULL, "pool: not kept (the refill thread did not start)");
                if (sup_sandboxes_start(s) < 0)
                        goto out;
                run(s);
        }
        /* run() returns between steps: every granted ticket is committed. */
        sup_notify_stopping();
        log_info(NULL, "signal %d: stopping", (int)stop_signal);
        rc = 0;
out:
        if (s->redis)
                metrics_flush(s->redis, &s->cfg);
        sup_provision_stop(s); /* before the consumer: grants stopped with run() */
        sup_sandboxes_stop(s);
        sup_pool_stop(s);
        sup_watch_stop(s);
        sup_queue_clear(s);
        kafka_consumer_free(s->consumer);
        kafka_producer_free(s->events); /* flushes queued events, bounded by KAFKA_TIMEOUT_MS */
        sup_wake_close(s);
        redis_conn_free(s->redis);
        provider_free(s->provider);
        free(s);
        return rc;
}
