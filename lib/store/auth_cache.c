/* auth_cache: see auth_cache.h. */
#include "store/auth_cache.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <hiredis/hiredis.h>

#include "core/log.h"
#include "core/metrics.h"
#include "core/timeutil.h"

#define SUB_RETRY_MS 1000 /* between attempts to (re)subscribe */
#define SUB_PING_MS 1000  /* keep-alive PING on the subscription */
#define SUB_POLL_MS 200   /* how soon the thread notices auth_cache_stop() */

struct entry {
        bool used;
        char hash[65];
        int64_t at_ms; /* mono time it was stored */
        struct auth_principal p;
};

static struct {
        pthread_mutex_t lock;
        struct entry *slots;
        size_t n;
        uint64_t gen;  /* +1 on every emptying */
        bool enabled;  /* the subscription is up: entries may be used and kept */
        int ttl_ms;
        struct broker_config cfg;
        pthread_t thread;
        bool started;
        atomic_bool stop;
        /* The subscription: read by its thread, and by every auth_cache_get
         * before it trusts an entry (so a revocation already on the socket is
         * applied even when the thread has not run yet). io is taken before
         * lock, never after. */
        pthread_mutex_t io;
        redisContext *ctx;
        /* Read without io by sub_drain(): ctx's fd (-1 without one), and
         * whether a reader is taking a message off it right now. */
        atomic_int fd;
        atomic_bool reading;
        bool broken;     /* a read failed: the thread reconnects */
        int64_t last_rx; /* mono ms of the last reply or message */
} ac = { .lock = PTHREAD_MUTEX_INITIALIZER, .io = PTHREAD_MUTEX_INITIALIZER, .fd = -1 };

static int sub_read_locked(void);
static void set_enabled(bool on);

static size_t slot_of(const char *hash)
{
        /* the hash is uniformly random hex: its first 15 digits index well */
        char head[16];

        memcpy(head, hash, 15);
        head[15] = '\0';
        return (size_t)(strtoull(head, NULL, 16) % ac.n);
}

static void flush_locked(void)
{
        ac.gen++;
        for (size_t i = 0; i < ac.n; i++)
                ac.slots[i].used = false;
}

void auth_cache_flush(void)
{
        pthread_mutex_lock(&ac.lock);
        if (ac.slots)
                flush_locked();
        pthread_mutex_unlock(&ac.lock);
        metrics_add("broker_auth_cache_flushes_total", 1);
}

static void set_enabled(bool on)
{
        pthread_mutex_lock(&ac.lock);
        flush_locked();
        ac.enabled = on;
        pthread_mutex_unlock(&ac.lock);
        metrics_add("broker_auth_cache_flushes_total", 1);
}

uint64_t auth_cache_gen(void)
{
        uint64_t g;

        pthread_mutex_lock(&ac.lock);
        g = ac.gen;
        pthread_mutex_unlock(&ac.lock);
        return g;
}

/* Apply whatever the subscription socket holds now, without waiting. */
static void sub_drain(void)
{
        int fd = atomic_load(&ac.fd);
        struct pollfd probe = { .fd = fd, .events = POLLIN };

        /* Every request of every thread comes here: the common case (nothing
         * on the socket, nobody taking a message off it) takes no lock, so
         * the threads do not queue on io behind each other's poll(). A
         * message on the socket, or one a reader has taken off it and is
         * applying (reading is set before the read), is waited for under io
         * as before: a revocation published before this request is applied
         * before its key is looked up. */
        if (fd >= 0 && poll(&probe, 1, 0) == 0 && !atomic_load(&ac.reading))
                return;
        pthread_mutex_lock(&ac.io);
        if (ac.ctx && !ac.broken) {
                struct pollfd pfd = { .fd = ac.ctx->fd, .events = POLLIN };
                if (poll(&pfd, 1, 0) > 0 && sub_read_locked() < 0) {
                        ac.broken = true;
                        set_enabled(false);
                }
        }
        pthread_mutex_unlock(&ac.io);
}

bool auth_cache_get(const char *hash, struct auth_principal *ret)
{
        bool hit = false;

        if (!ac.started)
                return false;
        sub_drain();
        pthread_mutex_lock(&ac.lock);
        if (ac.slots && ac.enabled) {
                struct entry *e = &ac.slots[slot_of(hash)];
                if (e->used && memcmp(e->hash, hash, 64) == 0 &&
                    timeutil_mono_ms() - e->at_ms < ac.ttl_ms) {
                        *ret = e->p;
                        hit = true;
                }
        }
        pthread_mutex_unlock(&ac.lock);
        metrics_add(hit ? "broker_auth_cache_hits_total" : "broker_auth_cache_misses_total", 1);
        return hit;
}

void auth_cache_put(uint64_t gen, const char *hash, const struct auth_principal *p)
{
        if (strlen(hash) != 64)
                return;
        pthread_mutex_lock(&ac.lock);
        if (ac.slots && ac.enabled && gen == ac.gen) {
                struct entry *e = &ac.slots[slot_of(hash)];
                e->used = true;
                memcpy(e->hash, hash, 65);
                e->at_ms = timeutil_mono_ms();
                e->p = *p;
        }
        pthread_mutex_unlock(&ac.lock);
}

/* ---- the subscriber ------------------------------------------------------------------ */

static redisContext *sub_connect(void)
{
        struct timeval tv = { ac.cfg.redis_timeout_ms / 1000, (ac.cfg.redis_timeout_ms % 1000) * 1000 };
        redisReply *rep = NULL;
        redisContext *ctx;
        char channel[sizeof(ac.cfg.key_prefix) + 32];

        if (ac.cfg.redis_host[0] == '/')
                ctx = redisConnectUnixWithTimeout(ac.cfg.redis_host, tv);
        else
                ctx = redisConnectWithTimeout(ac.cfg.redis_host, ac.cfg.redis_port, tv);
        if (!ctx || ctx->err)
                goto fail;
        snprintf(channel, sizeof(channel), "%sapikey:revoked", ac.cfg.key_prefix);
        rep = redisCommand(ctx, "SUBSCRIBE %s", channel);
        if (!rep || rep->type != REDIS_REPLY_ARRAY)
                goto fail;
        freeReplyObject(rep);
        return ctx;
fail:
        if (rep)
                freeReplyObject(rep);
        if (ctx)
                redisFree(ctx);
        return NULL;
}

static int sub_read_one_locked(void);

/* Read what arrived on ac.ctx (io held): every "message" empties the
 * cache. Returns 0 or -EIO. */
static int sub_read_locked(void)
{
        int r;

        atomic_store(&ac.reading, true); /* before the read: see sub_drain() */
        r = sub_read_one_locked();
        atomic_store(&ac.reading, false);
        return r;
}

static int sub_read_one_locked(void)
{
        void *reply = NULL;

        if (redisBufferRead(ac.ctx) != REDIS_OK)
                return -EIO;
        for (;;) {
                if (redisGetReplyFromReader(ac.ctx, &reply) != REDIS_OK)
                        return -EIO;
                if (!reply)
                        return 0;
                ac.last_rx = timeutil_mono_ms();
                redisReply *r = reply;
                if (r->type == REDIS_REPLY_ARRAY && r->elements >= 1 &&
                    r->element[0]->type == REDIS_REPLY_STRING && strcmp(r->element[0]->str, "message") == 0)
                        auth_cache_flush();
                freeReplyObject(reply);
        }
}

static int sub_ping_locked(void)
{
        int done = 0;

        if (redisAppendCommand(ac.ctx, "PING") != REDIS_OK)
                return -EIO;
        while (!done)
                if (redisBufferWrite(ac.ctx, &done) != REDIS_OK)
                        return -EIO;
        return 0;
}

/* One turn with a subscription: wait for it to be readable, read, PING.
 * Returns 0 or -EIO (lost: the caller drops it). */
static int sub_turn(int64_t *last_ping)
{
        struct pollfd pfd;
        int r = 0;

        pthread_mutex_lock(&ac.io);
        pfd = (struct pollfd){ .fd = ac.ctx->fd, .events = POLLIN };
        r = ac.broken ? -EIO : 0;
        pthread_mutex_unlock(&ac.io);
        if (r < 0)
                return r;
        /* the fd stays open while this thread lives: only it frees ac.ctx */
        int ready = poll(&pfd, 1, SUB_POLL_MS);
        pthread_mutex_lock(&ac.io);
        int64_t now = timeutil_mono_ms();
        if (ac.broken)
                r = -EIO;
        else if (ready > 0 && poll(&pfd, 1, 0) > 0) /* a request may have read it meanwhile */
                r = sub_read_locked();
        if (r == 0 && now - *last_ping >= SUB_PING_MS) {
                r = sub_ping_locked();
                *last_ping = now;
        }
        if (r == 0 && now - ac.last_rx > SUB_PING_MS + ac.cfg.redis_timeout_ms)
                r = -EIO; /* PING unanswered: the link may be dead */
        pthread_mutex_unlock(&ac.io);
        return r;
}

static void *sub_main(void *arg)
{
        int64_t last_ping = 0, retry_at = 0;
        bool warned = false;

        (void)arg;
        while (!atomic_load(&ac.stop)) {
                int64_t now = timeutil_mono_ms();

                if (!ac.ctx) {
                        redisContext *ctx;

                        if (now < retry_at) {
                                poll(NULL, 0, SUB_POLL_MS);
                                continue;
                        }
                        ctx = sub_connect();
                        if (!ctx) {
                                if (!warned)
                                        log_warn(NULL, "API key cache off: cannot subscribe to %sapikey:revoked; "
                                                 "every key is looked up in Redis until it can",
                                                 ac.cfg.key_prefix);
                                warned = true;
                                retry_at = now + SUB_RETRY_MS;
                                continue;
                        }
                        pthread_mutex_lock(&ac.io);
                        ac.ctx = ctx;
                        atomic_store(&ac.fd, ctx->fd);
                        ac.broken = false;
                        ac.last_rx = last_ping = timeutil_mono_ms();
                        set_enabled(true);
                        pthread_mutex_unlock(&ac.io);
                        log_info(NULL, "API key cache on (subscribed to %sapikey:revoked)", ac.cfg.key_prefix);
                        warned = false;
                        continue;
                }
                if (sub_turn(&last_ping) == 0)
                        continue;
                pthread_mutex_lock(&ac.io);
                set_enabled(false);
                atomic_store(&ac.fd, -1);
                redisFree(ac.ctx);
                ac.ctx = NULL;
                ac.broken = false;
                pthread_mutex_unlock(&ac.io);
                retry_at = timeutil_mono_ms() + SUB_RETRY_MS;
                log_warn(NULL, "API key cache off: subscription to %sapikey:revoked lost; "
                         "every key is looked up in Redis until it is back", ac.cfg.key_prefix);
                warned = true;
        }
        pthread_mutex_lock(&ac.io);
        set_enabled(false);
        atomic_store(&ac.fd, -1);
        if (ac.ctx)
                redisFree(ac.ctx);
        ac.ctx = NULL;
        pthread_mutex_unlock(&ac.io);
        return NULL;
}

int auth_cache_start(const struct broker_config *cfg)
{
        int r;

        if (ac.started || cfg->auth_cache_ttl_ms <= 0)
                return 0;
        ac.cfg = *cfg;
        ac.ttl_ms = cfg->auth_cache_ttl_ms;
        ac.n = (size_t)cfg->auth_cache_max;
        ac.slots = calloc(ac.n, sizeof(*ac.slots));
        if (!ac.slots)
                return -ENOMEM;
        ac.enabled = false;
        atomic_store(&ac.stop, false);
        /* the default stack: the handlers' static TLS (fcgi/) is larger than a small one */
        r = pthread_create(&ac.thread, NULL, sub_main, NULL);
        if (r != 0) {
                free(ac.slots);
                ac.slots = NULL;
                return -EAGAIN;
        }
        ac.started = true;
        return 0;
}

void auth_cache_stop(void)
{
        struct entry *slots;

        if (!ac.started)
                return;
        atomic_store(&ac.stop, true);
        pthread_join(ac.thread, NULL);
        ac.started = false;
        pthread_mutex_lock(&ac.lock);
        slots = ac.slots;
        ac.slots = NULL;
        ac.n = 0;
        ac.enabled = false;
        pthread_mutex_unlock(&ac.lock);
        free(slots);
}
