/* notify: the supervisor's side of systemd's service protocol (sd_notify(3)).
 *
 * READY=1 is sent only once every dependency answers: Redis (PING), Kafka
 * (the topic was ensured and the consumer made before this is called) and
 * the sandbox provider (ping). WATCHDOG=1 comes from the loop itself, once
 * per turn at most every quarter of WatchdogSec=, so a loop stuck in a call
 * stops feeding the watchdog and systemd restarts the service. STATUS= shows
 * the active/queued counts every few seconds. Outside systemd (no
 * NOTIFY_SOCKET) every sd_notify() is a cheap no-op. */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <systemd/sd-daemon.h>

#include "store/lease.h"
#include "core/log.h"
#include "sandbox/sandbox.h"
#include "supervisor.h"
#include "core/timeutil.h"

#define STATUS_EVERY_MS 5000
#define RETRY_MS 1000

static struct {
        int64_t watchdog_ms;  /* 0: no watchdog */
        int64_t last_ping;    /* monotonic ms */
        int64_t next_status;
} n;

/* Probe each dependency; return 0 when all answer, else describe the first
 * that does not in why (size whysz). */
static int deps_check(struct sup *s, char *why, size_t whysz)
{
        char err[PROVIDER_ERR_MAX] = "";
        int r;

        r = redis_conn_ping(s->redis);
        if (r < 0) {
                if (s->cfg.redis_host[0] == '/') /* its unix socket (REDIS_HOST=/path) */
                        snprintf(why, whysz, "waiting for Redis at %s", s->cfg.redis_host);
                else
                        snprintf(why, whysz, "waiting for Redis at %s:%d", s->cfg.redis_host,
                                 s->cfg.redis_port);
                return r;
        }
        if (s->provider) {
                r = provider_ping(s->provider, err);
                if (r == -EACCES) {
                        /* It answers but refuses our credentials: waiting
                         * will not fix that. Go on, so that every sandbox
                         * asked for fails with this reason (the clients of
                         * the acquires waiting for the workers see it)
                         * rather than waits for a supervisor that never
                         * becomes ready. */
                        log_err(NULL, "the %s provider refuses the broker's credentials: %s; every sandbox will fail until that is fixed",
                                s->cfg.provider, err[0] ? err : strerror(-r));
                        return 0;
                }
                if (r < 0) {
                        snprintf(why, whysz, "waiting for the %s provider: %s", s->cfg.provider,
                                 err[0] ? err : strerror(-r));
                        return r;
                }
        }
        return 0;
}

int sup_notify_wait_ready(struct sup *s, volatile sig_atomic_t *stop)
{
        char why[PROVIDER_ERR_MAX + 64], last[sizeof(why)] = "";
        uint64_t usec = 0;

        if (sd_watchdog_enabled(0, &usec) > 0)
                n.watchdog_ms = (int64_t)(usec / 1000);
        while (deps_check(s, why, sizeof(why)) < 0) {
                if (*stop)
                        return -ECANCELED;
                if (strcmp(why, last) != 0) {
                        log_warn(NULL, "not ready: %s", why);
                        memcpy(last, why, sizeof(last));
                }
                /* Still alive while waiting: the watchdog guards a hung
                 * process, TimeoutStartSec= a dependency that never comes. */
                sd_notifyf(0, "STATUS=%s\nWATCHDOG=1", why);
                poll(NULL, 0, RETRY_MS);
        }
        sd_notify(0, "READY=1\nSTATUS=ready: Redis, Kafka and the provider answer");
        log_info(NULL, "ready: Redis, Kafka%s answer", s->provider ? " and the provider" : "");
        n.last_ping = timeutil_mono_ms();
        n.next_status = 0;
        return 0;
}

void sup_notify_progress(void)
{
        int64_t now = timeutil_mono_ms();

        if (n.watchdog_ms && now - n.last_ping >= n.watchdog_ms / 4) {
                sd_notify(0, "WATCHDOG=1");
                n.last_ping = now;
        }
}

void sup_notify_turn(struct sup *s)
{
        struct json_object *st = NULL, *v;
        int64_t now = timeutil_mono_ms();
        long long val[4] = { 0 };
        int pq, pb;
        static const char *const keys[4] = { "activeSlots", "capacity", "activeLeases", "queueDepth" };

        sup_notify_progress();
        if (now < n.next_status)
                return;
        n.next_status = now + STATUS_EVERY_MS;
        if (lease_status(s->redis, &s->cfg, &st) < 0) {
                sd_notify(0, "STATUS=Redis unavailable: granting paused, retrying every tick");
                return;
        }
        for (int i = 0; i < 4; i++)
                if (json_object_object_get_ex(st, keys[i], &v))
                        val[i] = json_object_get_int64(v);
        json_object_put(st);
        sup_provision_load(s, &pq, &pb);
        sd_notifyf(0, "STATUS=active %lld/%lld slots, %lld leases; queued %lld; provisioning %d (+%d waiting)",
                   val[0], val[1], val[2], val[3], pb, pq);
}

void sup_notify_stopping(void)
{
        sd_notify(0, "STOPPING=1\nSTATUS=stopping: finishing the current step");
}
