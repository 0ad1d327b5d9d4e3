/* lock_keeper: see lock_keeper.h. */
#include "sandbox/lock_keeper.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/log.h"
#include "store/lua_scripts.h"
#include "store/redis_conn.h"

struct kept {
        char name[48];
        char token[33];
        bool used;
};

static struct {
        pthread_mutex_t mu;
        struct kept locks[LOCK_KEEPER_MAX];
        struct broker_config cfg;
        bool started;
} k = { .mu = PTHREAD_MUTEX_INITIALIZER };

static void renew(struct redis_conn *rc, const struct kept *l)
{
        char ttl[16];
        redisReply *rep = NULL;

        snprintf(ttl, sizeof(ttl), "%d", LOCK_KEEPER_TTL_MS);
        const char *argv[] = { l->name, l->token, ttl, "renew" };
        if (redis_conn_script(rc, LUA_LOCK, 4, argv, &rep) == 0)
                freeReplyObject(rep);
}

static void *keeper(void *arg)
{
        struct redis_conn *rc = NULL;

        (void)arg;
        for (;;) {
                struct kept copy[LOCK_KEEPER_MAX];
                int n = 0;

                nanosleep(&(struct timespec){ LOCK_KEEPER_EVERY_MS / 1000,
                                              (LOCK_KEEPER_EVERY_MS % 1000) * 1000000L }, NULL);
                pthread_mutex_lock(&k.mu);
                for (int i = 0; i < LOCK_KEEPER_MAX; i++)
                        if (k.locks[i].used)
                                copy[n++] = k.locks[i];
                pthread_mutex_unlock(&k.mu);
                if (!n)
                        continue;
                if (!rc && redis_conn_new(&k.cfg, &rc) < 0) {
                        rc = NULL;
                        continue;
                }
                for (int i = 0; i < n; i++)
                        renew(rc, &copy[i]);
        }
        return NULL;
}

int lock_keeper_add(const struct broker_config *cfg, const char *name, const char *token)
{
        int r = -ENOSPC;

        if (strlen(name) >= sizeof(k.locks[0].name) || strlen(token) >= sizeof(k.locks[0].token))
                return -EINVAL;
        pthread_mutex_lock(&k.mu);
        if (!k.started) {
                pthread_t t;

                k.cfg = *cfg;
                if (pthread_create(&t, NULL, keeper, NULL) != 0) {
                        pthread_mutex_unlock(&k.mu);
                        log_warn(NULL, "lock keeper: cannot start its thread; long locks instead");
                        return -EAGAIN;
                }
                pthread_detach(t);
                k.started = true;
        }
        for (int i = 0; i < LOCK_KEEPER_MAX; i++) {
                if (k.locks[i].used)
                        continue;
                snprintf(k.locks[i].name, sizeof(k.locks[i].name), "%s", name);
                snprintf(k.locks[i].token, sizeof(k.locks[i].token), "%s", token);
                k.locks[i].used = true;
                r = 0;
                break;
        }
        pthread_mutex_unlock(&k.mu);
        return r;
}

void lock_keeper_remove(const char *name, const char *token)
{
        pthread_mutex_lock(&k.mu);
        for (int i = 0; i < LOCK_KEEPER_MAX; i++)
                if (k.locks[i].used && !strcmp(k.locks[i].name, name) &&
                    !strcmp(k.locks[i].token, token))
                        k.locks[i].used = false;
        pthread_mutex_unlock(&k.mu);
}
