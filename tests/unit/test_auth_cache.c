/* Unit tests for lib/store/auth_cache.c: the cache is used only while its
 * subscription is up, a revocation message or a lost subscription empties
 * it, a put that raced with an emptying is dropped, and entries expire.
 * Redis is replaced at the link seam by one end of a socketpair the test
 * speaks RESP on. */
/* WRAP: -Wl,--wrap=redisConnectWithTimeout */
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>
#include <hiredis/hiredis.h>

#include "store/auth_cache.h"
#include "core/timeutil.h"

static int peer = -1; /* the fake Redis's end */
static int connects;

redisContext *__wrap_redisConnectWithTimeout(const char *ip, int port, const struct timeval tv);
redisContext *__wrap_redisConnectWithTimeout(const char *ip, int port, const struct timeval tv)
{
        int sv[2];

        (void)ip;
        (void)port;
        (void)tv;
        if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
                return NULL;
        peer = sv[1];
        connects++;
        return redisConnectFd(sv[0]);
}

static const char H1[] = "1111111111111111111111111111111111111111111111111111111111111111";
static const char H2[] = "2222222222222222222222222222222222222222222222222222222222222222";

static struct broker_config cfg(int ttl_ms)
{
        struct broker_config c;

        memset(&c, 0, sizeof(c));
        snprintf(c.redis_host, sizeof(c.redis_host), "127.0.0.1");
        c.redis_port = 6379;
        c.redis_timeout_ms = 2000;
        snprintf(c.key_prefix, sizeof(c.key_prefix), "t:");
        c.auth_cache_ttl_ms = ttl_ms;
        c.auth_cache_max = 16;
        return c;
}

/* Answer the subscriber's SUBSCRIBE like Redis. */
static void serve_subscribe(int want_connects)
{
        char buf[512];
        size_t got = 0;
        int64_t deadline = timeutil_mono_ms() + 5000;

        while (connects < want_connects) {
                assert_true(timeutil_mono_ms() < deadline);
                usleep(1000);
        }
        while (!memmem(buf, got, "apikey:revoked", 14)) {
                struct pollfd p = { .fd = peer, .events = POLLIN };
                assert_true(poll(&p, 1, 5000) == 1);
                ssize_t n = read(peer, buf + got, sizeof(buf) - got);
                assert_true(n > 0);
                got += (size_t)n;
        }
        assert_non_null(memmem(buf, got, "SUBSCRIBE", 9));
        const char *ok = "*3\r\n$9\r\nsubscribe\r\n$16\r\nt:apikey:revoked\r\n:1\r\n";
        assert_int_equal(write(peer, ok, strlen(ok)), (ssize_t)strlen(ok));
}

static struct auth_principal principal(const char *tenant)
{
        struct auth_principal p = { .admin = false };

        snprintf(p.tenant, sizeof(p.tenant), "%s", tenant);
        snprintf(p.key_id, sizeof(p.key_id), "0123456789abcdef");
        return p;
}

/* put with the current generation until the cache keeps it (it is on). */
static void put_until_kept(const char *hash, const char *tenant)
{
        struct auth_principal p = principal(tenant), got;
        int64_t deadline = timeutil_mono_ms() + 5000;

        for (;;) {
                auth_cache_put(auth_cache_gen(), hash, &p);
                if (auth_cache_get(hash, &got))
                        break;
                assert_true(timeutil_mono_ms() < deadline);
                usleep(1000);
        }
        assert_string_equal(got.tenant, tenant);
        assert_string_equal(got.key_id, "0123456789abcdef");
}

static void wait_gone(const char *hash)
{
        struct auth_principal got;
        int64_t deadline = timeutil_mono_ms() + 5000;

        while (auth_cache_get(hash, &got)) {
                assert_true(timeutil_mono_ms() < deadline);
                usleep(1000);
        }
}

static void test_off_until_subscribed_and_after_loss(void **state)
{
        struct broker_config c = cfg(10000);
        struct auth_principal p = principal("acme"), got;

        (void)state;
        connects = 0;
        assert_int_equal(auth_cache_start(&c), 0);
        /* before the subscription is confirmed: nothing is kept */
        auth_cache_put(auth_cache_gen(), H1, &p);
        assert_false(auth_cache_get(H1, &got));
        serve_subscribe(1);
        put_until_kept(H1, "acme");
        put_until_kept(H2, "good");

        /* a put whose lookup began before an emptying is dropped */
        uint64_t g = auth_cache_gen();
        auth_cache_flush();
        auth_cache_put(g, H1, &p);
        assert_false(auth_cache_get(H1, &got));
        assert_false(auth_cache_get(H2, &got)); /* the flush emptied everything */

        /* a revocation message empties the cache */
        put_until_kept(H1, "acme");
        const char *msg = "*3\r\n$7\r\nmessage\r\n$16\r\nt:apikey:revoked\r\n$64\r\n"
                          "1111111111111111111111111111111111111111111111111111111111111111\r\n";
        assert_int_equal(write(peer, msg, strlen(msg)), (ssize_t)strlen(msg));
        /* at once: the very next get applies what is on the socket, whether
         * or not the subscriber thread has run since */
        assert_false(auth_cache_get(H1, &got));
        /* and again with the thread busy elsewhere: many messages, each checked at once */
        for (int i = 0; i < 200; i++) {
                put_until_kept(H1, "acme");
                assert_int_equal(write(peer, msg, strlen(msg)), (ssize_t)strlen(msg));
                assert_false(auth_cache_get(H1, &got));
        }

        /* the subscription lost: emptied, and nothing is kept until it is back */
        put_until_kept(H1, "acme");
        close(peer);
        wait_gone(H1);
        auth_cache_put(auth_cache_gen(), H1, &p);
        assert_false(auth_cache_get(H1, &got));
        serve_subscribe(2); /* the thread subscribes again (after SUB_RETRY_MS) */
        put_until_kept(H1, "acme");
        auth_cache_stop();
        close(peer);
        assert_false(auth_cache_get(H1, &got));
}

static void test_entries_expire(void **state)
{
        struct broker_config c = cfg(50);

        (void)state;
        connects = 0;
        assert_int_equal(auth_cache_start(&c), 0);
        serve_subscribe(1);
        put_until_kept(H1, "acme");
        wait_gone(H1); /* 50 ms later, without any message */
        auth_cache_stop();
        close(peer);
}

static void test_off_when_ttl_is_zero(void **state)
{
        struct broker_config c = cfg(0);
        struct auth_principal p = principal("acme"), got;

        (void)state;
        connects = 0;
        assert_int_equal(auth_cache_start(&c), 0);
        auth_cache_put(auth_cache_gen(), H1, &p);
        assert_false(auth_cache_get(H1, &got));
        assert_int_equal(connects, 0);
        auth_cache_stop();
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_off_until_subscribed_and_after_loss),
                cmocka_unit_test(test_entries_expire),
                cmocka_unit_test(test_off_when_ttl_is_zero),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
