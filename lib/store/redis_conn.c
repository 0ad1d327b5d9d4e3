/* redis_conn: see redis_conn.h. Scripts are loaded with SCRIPT LOAD on connect
 * and run with EVALSHA; NOSCRIPT (Redis restarted or flushed) reloads them. */
#include "store/redis_conn.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"

#define REDIS_MAX_ARGS 64

struct redis_conn {
        struct broker_config cfg;
        redisContext *ctx;
        char sha[LUA_SCRIPT_COUNT][41];
        unsigned long loading_seen; /* LOADING answers so far */
        bool loading;               /* the server's last answer was LOADING */
};

/* Note what the server answered: LOADING (it is reading its AOF or RDB
 * after a start, and refuses every command until it is done) or not.
 * Returns whether it was LOADING. */
static bool note_loading(struct redis_conn *c, const redisReply *rep)
{
        c->loading = rep && rep->type == REDIS_REPLY_ERROR && strncmp(rep->str, "LOADING", 7) == 0;
        if (c->loading)
                c->loading_seen++;
        return c->loading;
}

unsigned long redis_conn_loading_seen(const struct redis_conn *c)
{
        return c ? c->loading_seen : 0;
}

bool redis_conn_loading(const struct redis_conn *c)
{
        return c && c->loading;
}

void reply_free(redisReply *r)
{
        if (r)
                freeReplyObject(r);
}

bool reply_is_str(const redisReply *r, const char *s)
{
        return r && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS) &&
               (!s || strcmp(r->str, s) == 0);
}

const redisReply *reply_hash_find(const redisReply *h, const char *name)
{
        if (!h || h->type != REDIS_REPLY_ARRAY)
                return NULL;
        for (size_t i = 0; i + 1 < h->elements; i += 2)
                if (reply_is_str(h->element[i], name))
                        return h->element[i + 1];
        return NULL;
}

const char *reply_hash_get(const redisReply *h, const char *name)
{
        const redisReply *v = reply_hash_find(h, name);

        return v && v->type == REDIS_REPLY_STRING ? v->str : NULL;
}

int redis_conn_script_tagged(struct redis_conn *c, enum lua_script_id id, int argc,
                             const char **argv, redisReply **ret)
{
        int r = redis_conn_script(c, id, argc, argv, ret);

        if (r < 0)
                return r;
        if ((*ret)->type != REDIS_REPLY_ARRAY || (*ret)->elements < 1 ||
            !reply_is_str((*ret)->element[0], NULL)) {
                reply_free(*ret);
                *ret = NULL;
                return -EPROTO;
        }
        return 0;
}

int redis_conn_new(const struct broker_config *cfg, struct redis_conn **ret)
{
        struct redis_conn *c = calloc(1, sizeof(*c));

        if (!c)
                return -ENOMEM;
        c->cfg = *cfg;
        *ret = c;
        return 0;
}

static void conn_drop(struct redis_conn *c)
{
        if (c->ctx)
                redisFree(c->ctx);
        c->ctx = NULL;
}

void redis_conn_free(struct redis_conn *c)
{
        if (!c)
                return;
        conn_drop(c);
        free(c);
}

static int scripts_load(struct redis_conn *c)
{
        for (int i = 0; i < LUA_SCRIPT_COUNT; i++) {
                redisReply *r = redisCommand(c->ctx, "SCRIPT LOAD %s", lua_scripts[i].source);
                if (!r || r->type != REDIS_REPLY_STRING || r->len != 40) {
                        /* LOADING: unavailable for now, like a server not up yet */
                        bool loading = note_loading(c, r);
                        log_debug(NULL, "redis: SCRIPT LOAD %s failed: %s", lua_scripts[i].name,
                                  r && r->type == REDIS_REPLY_ERROR ? r->str : c->ctx->errstr);
                        reply_free(r);
                        return r && !loading ? -EPROTO : -EIO;
                }
                c->loading = false;
                memcpy(c->sha[i], r->str, 41);
                reply_free(r);
        }
        return 0;
}

static int conn_ensure(struct redis_conn *c)
{
        struct timeval tv = { c->cfg.redis_timeout_ms / 1000, (c->cfg.redis_timeout_ms % 1000) * 1000 };
        int r;

        if (c->ctx)
                return 0;
        if (c->cfg.redis_host[0] == '/')
                c->ctx = redisConnectUnixWithTimeout(c->cfg.redis_host, tv);
        else
                c->ctx = redisConnectWithTimeout(c->cfg.redis_host, c->cfg.redis_port, tv);
        if (!c->ctx)
                return -ENOMEM;
        if (c->ctx->err) {
                log_debug(NULL, "redis: connect %s:%d: %s", c->cfg.redis_host, c->cfg.redis_port,
                          c->ctx->errstr);
                conn_drop(c);
                return -EIO;
        }
        redisSetTimeout(c->ctx, tv);
        r = scripts_load(c);
        if (r < 0)
                conn_drop(c);
        return r;
}

/* True when the failed command met a connection the server had already
 * closed (e.g. Redis restarted while we were idle): the command was never
 * run, so it may be resent. A timeout is not such a case. */
static bool conn_was_closed(struct redis_conn *c)
{
        return c->ctx->err == REDIS_ERR_EOF ||
               (c->ctx->err == REDIS_ERR_IO && (errno == EPIPE || errno == ECONNRESET));
}

redisContext *redis_conn_context(struct redis_conn *c)
{
        return conn_ensure(c) < 0 ? NULL : c->ctx;
}

/* redis_conn_script and redis_conn_script_bin: lens NULL means every
 * argument is a C string. */
static int script_run(struct redis_conn *c, enum lua_script_id id, int argc, const char **argv,
                      const size_t *lens, redisReply **ret)
{
        const char *args[REDIS_MAX_ARGS];
        size_t arglens[REDIS_MAX_ARGS];
        redisReply *rep = NULL;
        int n = 0, r;

        *ret = NULL;
        if (argc + 4 > REDIS_MAX_ARGS)
                return -E2BIG;
        for (int attempt = 0; attempt < 2; attempt++) {
                r = conn_ensure(c);
                if (r < 0)
                        return r;
                n = 0;
                args[n++] = "EVALSHA";
                args[n++] = c->sha[id];
                args[n++] = "0";
                args[n++] = c->cfg.key_prefix;
                for (int i = 0; i < n; i++)
                        arglens[i] = strlen(args[i]);
                for (int i = 0; i < argc; i++) {
                        arglens[n] = lens ? lens[i] : strlen(argv[i]);
                        args[n++] = argv[i];
                }
                rep = redisCommandArgv(c->ctx, n, args, arglens);
                if (!rep) {
                        bool stale = conn_was_closed(c);
                        log_debug(NULL, "redis: %s: %s", lua_scripts[id].name, c->ctx->errstr);
                        conn_drop(c);
                        if (stale && attempt == 0)
                                continue; /* never reached the server: safe to resend */
                        return -EIO;
                }
                if (rep->type == REDIS_REPLY_ERROR && strncmp(rep->str, "NOSCRIPT", 8) == 0) {
                        reply_free(rep);
                        rep = NULL;
                        conn_drop(c);
                        continue;
                }
                break;
        }
        if (!rep)
                return -EIO;
        if (rep->type == REDIS_REPLY_ERROR) {
                bool loading = note_loading(c, rep);
                log_debug(NULL, "redis: script %s: %s", lua_scripts[id].name, rep->str);
                reply_free(rep);
                return loading ? -EIO : -EPROTO;
        }
        c->loading = false;
        *ret = rep;
        return 0;
}

int redis_conn_script(struct redis_conn *c, enum lua_script_id id, int argc, const char **argv,
                      redisReply **ret)
{
        return script_run(c, id, argc, argv, NULL, ret);
}

int redis_conn_script_bin(struct redis_conn *c, enum lua_script_id id, int argc, const char **argv,
                          const size_t *lens, redisReply **ret)
{
        return script_run(c, id, argc, argv, lens, ret);
}

int redis_conn_command(struct redis_conn *c, int argc, const char **argv, redisReply **ret)
{
        redisReply *rep;
        int r = conn_ensure(c);

        *ret = NULL;
        if (r < 0)
                return r;
        rep = redisCommandArgv(c->ctx, argc, argv, NULL);
        if (!rep && conn_was_closed(c)) {
                conn_drop(c);
                r = conn_ensure(c);
                if (r < 0)
                        return r;
                rep = redisCommandArgv(c->ctx, argc, argv, NULL);
        }
        if (!rep) {
                log_debug(NULL, "redis: %s: %s", argv[0], c->ctx->errstr);
                conn_drop(c);
                return -EIO;
        }
        if (rep->type == REDIS_REPLY_ERROR) {
                bool loading = note_loading(c, rep);
                log_debug(NULL, "redis: %s: %s", argv[0], rep->str);
                reply_free(rep);
                return loading ? -EIO : -EPROTO;
        }
        c->loading = false;
        *ret = rep;
        return 0;
}

int redis_conn_ping(struct redis_conn *c)
{
        redisReply *rep;
        int r = conn_ensure(c);

        if (r < 0)
                return r;
        rep = redisCommand(c->ctx, "PING");
        if (!rep && conn_was_closed(c)) {
                conn_drop(c);
                r = conn_ensure(c);
                if (r < 0)
                        return r;
                rep = redisCommand(c->ctx, "PING");
        }
        if (!rep) {
                conn_drop(c);
                return -EIO;
        }
        (void)note_loading(c, rep);
        r = rep->type == REDIS_REPLY_STATUS ? 0 : -EIO;
        reply_free(rep);
        return r;
}
