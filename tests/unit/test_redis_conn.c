/* Unit tests for lib/store/redis_conn.c: what a Redis that is still loading
 * its dataset after a restart ("LOADING Redis is loading the dataset in
 * memory", the answer to every command until it is done) becomes: -EIO
 * (unavailable, retry later) rather than -EPROTO (a script error, a 500),
 * noted on the connection for the callers that say so (issue 24).
 * hiredis is replaced at the link seam: connect, timeouts, redisCommand
 * (SCRIPT LOAD, PING) and redisCommandArgv (EVALSHA, raw commands) answer
 * what the test queued. */
/* WRAP: -Wl,--wrap=redisConnectWithTimeout -Wl,--wrap=redisSetTimeout -Wl,--wrap=redisFree -Wl,--wrap=redisCommand -Wl,--wrap=redisCommandArgv */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/config.h"
#include "store/redis_conn.h"

#define LOADING_MSG "LOADING Redis is loading the dataset in memory"

/* What the server answers: LOADING until `loading` is cleared, then a
 * SHA to SCRIPT LOAD, PONG to PING and `answer` to anything else. */
static struct {
        int loading;
        const char *error; /* an error answer to EVALSHA/commands, NULL: none */
        int script_loads, commands;
} srv;

static redisReply *reply_new(int type, const char *str)
{
        redisReply *r = calloc(1, sizeof(*r));

        assert_non_null(r);
        r->type = type;
        if (str) {
                r->str = strdup(str);
                assert_non_null(r->str);
                r->len = strlen(str);
        }
        return r;
}

redisContext *__wrap_redisConnectWithTimeout(const char *ip, int port, const struct timeval tv);
redisContext *__wrap_redisConnectWithTimeout(const char *ip, int port, const struct timeval tv)
{
        (void)ip;
        (void)port;
        (void)tv;
        return calloc(1, sizeof(redisContext));
}

int __wrap_redisSetTimeout(redisContext *c, const struct timeval tv);
int __wrap_redisSetTimeout(redisContext *c, const struct timeval tv)
{
        (void)c;
        (void)tv;
        return REDIS_OK;
}

void __wrap_redisFree(redisContext *c);
void __wrap_redisFree(redisContext *c)
{
        free(c);
}

void *__wrap_redisCommand(redisContext *c, const char *format, ...);
void *__wrap_redisCommand(redisContext *c, const char *format, ...)
{
        (void)c;
        if (srv.loading)
                return reply_new(REDIS_REPLY_ERROR, LOADING_MSG);
        if (!strncmp(format, "SCRIPT LOAD", 11)) {
                srv.script_loads++;
                return reply_new(REDIS_REPLY_STRING, "0123456789012345678901234567890123456789");
        }
        assert_string_equal(format, "PING");
        return reply_new(REDIS_REPLY_STATUS, "PONG");
}

void *__wrap_redisCommandArgv(redisContext *c, int argc, const char **argv, const size_t *argvlen);
void *__wrap_redisCommandArgv(redisContext *c, int argc, const char **argv, const size_t *argvlen)
{
        (void)c;
        (void)argc;
        (void)argv;
        (void)argvlen;
        srv.commands++;
        if (srv.loading)
                return reply_new(REDIS_REPLY_ERROR, LOADING_MSG);
        if (srv.error)
                return reply_new(REDIS_REPLY_ERROR, srv.error);
        return reply_new(REDIS_REPLY_STATUS, "OK");
}

static struct redis_conn *conn(void)
{
        static struct broker_config cfg;
        struct redis_conn *c = NULL;

        memset(&srv, 0, sizeof(srv));
        memset(&cfg, 0, sizeof(cfg));
        strcpy(cfg.redis_host, "127.0.0.1");
        cfg.redis_port = 6379;
        cfg.redis_timeout_ms = 1000;
        strcpy(cfg.key_prefix, "t:");
        assert_int_equal(redis_conn_new(&cfg, &c), 0);
        return c;
}

static int get(struct redis_conn *c)
{
        const char *argv[] = { "GET", "t:k" };
        redisReply *rep = NULL;
        int r = redis_conn_command(c, 2, argv, &rep);

        reply_free(rep);
        return r;
}

static int script(struct redis_conn *c)
{
        const char *argv[] = { "x" };
        redisReply *rep = NULL;
        int r = redis_conn_script(c, LUA_STATUS, 1, argv, &rep);

        reply_free(rep);
        return r;
}

/* A connection made while Redis loads: its SCRIPT LOAD meets LOADING. */
static void test_loading_at_connect_is_unavailable(void **state)
{
        struct redis_conn *c = conn();

        (void)state;
        srv.loading = 1;
        assert_false(redis_conn_loading(c));
        assert_int_equal(redis_conn_loading_seen(c), 0);
        assert_int_equal(get(c), -EIO);
        assert_true(redis_conn_loading(c));
        assert_int_equal(redis_conn_loading_seen(c), 1);
        assert_int_equal(script(c), -EIO);
        assert_int_equal(redis_conn_ping(c), -EIO);
        assert_int_equal(redis_conn_loading_seen(c), 3);
        assert_int_equal(srv.commands, 0); /* never got past the connect */
        /* loaded: everything works, and says it is no longer loading */
        srv.loading = 0;
        assert_int_equal(get(c), 0);
        assert_false(redis_conn_loading(c));
        assert_int_equal(redis_conn_loading_seen(c), 3);
        assert_int_equal(srv.script_loads, LUA_SCRIPT_COUNT);
        redis_conn_free(c);
}

/* A connection made before the restart whose commands meet LOADING. */
static void test_loading_answer_is_unavailable_not_a_script_error(void **state)
{
        struct redis_conn *c = conn();

        (void)state;
        assert_int_equal(script(c), 0);
        srv.loading = 1;
        assert_int_equal(script(c), -EIO);
        assert_true(redis_conn_loading(c));
        assert_int_equal(get(c), -EIO);
        assert_int_equal(redis_conn_loading_seen(c), 2);
        srv.loading = 0;
        assert_int_equal(script(c), 0);
        assert_false(redis_conn_loading(c));
        /* another error is still the script's (or the command's) own */
        srv.error = "ERR user_script:1: boom";
        assert_int_equal(script(c), -EPROTO);
        assert_int_equal(get(c), -EPROTO);
        assert_false(redis_conn_loading(c));
        assert_int_equal(redis_conn_loading_seen(c), 2);
        /* a PONG after LOADING clears it */
        srv.error = NULL;
        srv.loading = 1;
        assert_int_equal(redis_conn_ping(c), -EIO);
        assert_true(redis_conn_loading(c));
        srv.loading = 0;
        assert_int_equal(redis_conn_ping(c), 0);
        assert_false(redis_conn_loading(c));
        redis_conn_free(c);
}

static void test_null_conn(void **state)
{
        (void)state;
        assert_false(redis_conn_loading(NULL));
        assert_int_equal(redis_conn_loading_seen(NULL), 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_loading_at_connect_is_unavailable),
                cmocka_unit_test(test_loading_answer_is_unavailable_not_a_script_error),
                cmocka_unit_test(test_null_conn),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
