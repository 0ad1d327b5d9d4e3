/* Unit tests for lib/sandbox/egress_acl_req.c: the line Squid sends to
 * sandbox-egress-acl ("%>a %PORT %DATA %DST"): the sandbox id back from its
 * IPv6 form, %-escapes undone, the port and the refusal reason (or the
 * recorder's "allowed") read; hostile
 * hosts (control bytes, spaces, too long) refused while the sandbox, port and
 * reason of the line are still read; cut and malformed lines. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "sandbox/egress_acl_req.h"

#define SID "0123456789abcdef0123456789abcdef"
#define SRC "123:4567:89ab:cdef:123:4567:89ab:cdef"

static int parse(const char *s, struct egress_acl_req *q)
{
        return egress_acl_req_parse(s, strlen(s), q);
}

static void test_policy_question(void **state)
{
        struct egress_acl_req q;

        (void)state;
        assert_int_equal(parse(SRC " 443 - pypi.org\n", &q), 0);
        assert_string_equal(q.sid, SID);
        assert_string_equal(q.host, "pypi.org");
        assert_int_equal(q.port, 443);
        assert_int_equal(q.refusal, EGRESS_REFUSAL_NONE);
        assert_string_equal(egress_refusal_name(q.refusal), "policy");
        /* no newline, or "\r\n", are the same line */
        assert_int_equal(parse(SRC " 80 - a.b", &q), 0);
        assert_string_equal(q.host, "a.b");
        assert_int_equal(parse(SRC " 80 - a.b\r\n", &q), 0);
        assert_string_equal(q.host, "a.b");
        /* Squid 5.7 ends the line with a space */
        assert_int_equal(parse(SRC " 80 - a.b \n", &q), 0);
        assert_string_equal(q.host, "a.b");
        /* the compressed and the full form of the address are one sandbox */
        assert_int_equal(parse("0123:4567:89ab:cdef:0123:4567:89ab:cdef 1 - h\n", &q), 0);
        assert_string_equal(q.sid, SID);
        assert_int_equal(parse("::1 65535 - h\n", &q), 0);
        assert_string_equal(q.sid, "00000000000000000000000000000001");
        assert_int_equal(q.port, 65535);
}

static void test_refusal_reasons(void **state)
{
        struct egress_acl_req q;

        (void)state;
        assert_int_equal(parse(SRC " 22 port allowed.test\n", &q), 0);
        assert_int_equal(q.refusal, EGRESS_REFUSAL_PORT);
        assert_string_equal(egress_refusal_name(q.refusal), "port");
        assert_int_equal(q.port, 22);
        assert_int_equal(parse(SRC " 80 address loop.test\n", &q), 0);
        assert_int_equal(q.refusal, EGRESS_REFUSAL_ADDRESS);
        assert_string_equal(egress_refusal_name(q.refusal), "address");
        assert_false(q.allowed);
        /* the recorder's allow: no refusal */
        assert_int_equal(parse(SRC " 443 allowed pypi.org\n", &q), 0);
        assert_true(q.allowed);
        assert_int_equal(q.refusal, EGRESS_REFUSAL_NONE);
        assert_string_equal(q.host, "pypi.org");
        assert_int_equal(q.port, 443);
        /* a policy question is neither */
        assert_int_equal(parse(SRC " 443 - pypi.org\n", &q), 0);
        assert_false(q.allowed);
        assert_false(q.https);
        /* the vault's question for https: no verdict either */
        assert_int_equal(parse(SRC " 443 https git.test\n", &q), 0);
        assert_true(q.https);
        assert_false(q.allowed);
        assert_int_equal(q.refusal, EGRESS_REFUSAL_NONE);
        assert_string_equal(q.host, "git.test");
        assert_int_equal(parse(SRC " 443 HTTPS git.test\n", &q), -EINVAL);
        assert_false(q.https);
        assert_int_equal(q.refusal, EGRESS_REFUSAL_NONE);
        /* an allow with an unreadable host is still an allow, and an error */
        assert_int_equal(parse(SRC " 443 allowed a%0Ab\n", &q), -EINVAL);
        assert_true(q.allowed);
        assert_string_equal(q.host, "");
        /* an unknown reason is an error, and no reason is assumed */
        assert_int_equal(parse(SRC " 80 ports h\n", &q), -EINVAL);
        assert_int_equal(q.refusal, EGRESS_REFUSAL_NONE);
        assert_int_equal(parse(SRC " 80 PORT h\n", &q), -EINVAL);
        assert_int_equal(parse(SRC " 80 allow h\n", &q), -EINVAL);
        assert_false(q.allowed);
}

static void test_escapes_and_no_identity(void **state)
{
        struct egress_acl_req q;

        (void)state;
        /* %-escapes of printable bytes are undone ([v6 literal] as Squid sends it) */
        assert_int_equal(parse(SRC " 443 - %5B2001%3Adb8%3A%3A1%5D\n", &q), 0);
        assert_string_equal(q.host, "[2001:db8::1]");
        /* not an IPv6 address: no sandbox identity, not an error */
        assert_int_equal(parse("127.0.0.1 80 - h\n", &q), 0);
        assert_string_equal(q.sid, "");
        assert_int_equal(parse("- 80 - h\n", &q), 0);
        assert_string_equal(q.sid, "");
        assert_int_equal(parse("%3A%3A2 80 - h\n", &q), 0);
        assert_string_equal(q.sid, "00000000000000000000000000000002");
        /* "-": Squid had no port */
        assert_int_equal(parse(SRC " - - h\n", &q), 0);
        assert_int_equal(q.port, -1);
}

static void test_hostile_hosts_keep_the_rest(void **state)
{
        static const char *const bad[] = {
                SRC " 22 port a%0Ab\n",   /* a newline in a log */
                SRC " 22 port a%00b\n",   /* NUL */
                SRC " 22 port a%20b\n",   /* a space */
                SRC " 22 port a%7Fb\n",   /* DEL */
                SRC " 22 port a%C3%A9\n", /* not ASCII */
                SRC " 22 port a%zzb\n",   /* a bad escape */
                SRC " 22 port a%4\n",     /* a cut escape */
                SRC " 22 port a%\n",      /* a cut escape */
                SRC " 22 port a b\n",     /* a fifth token */
                SRC " 22 port a\tb\n",    /* a raw control byte */
                SRC " 22 port \n",        /* empty host */
                SRC " 22 port\n",         /* no host */
        };
        struct egress_acl_req q;

        (void)state;
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                assert_int_equal(parse(bad[i], &q), -EINVAL);
                assert_string_equal(q.host, "");
                assert_string_equal(q.sid, SID);
                assert_int_equal(q.port, 22);
                assert_int_equal(q.refusal, EGRESS_REFUSAL_PORT);
        }
}

static void test_ports(void **state)
{
        static const char *const bad[] = { "65536", "123456", "-1", "8a", "", "+80", "0x50" };
        struct egress_acl_req q;
        char line[128];

        (void)state;
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                snprintf(line, sizeof(line), SRC " %s - h\n", bad[i]);
                assert_int_equal(parse(line, &q), -EINVAL);
                assert_int_equal(q.port, -1);
                assert_string_equal(q.host, "h");
        }
        assert_int_equal(parse(SRC " 0 - h\n", &q), 0);
        assert_int_equal(q.port, 0);
}

static void test_sizes(void **state)
{
        static char line[EGRESS_ACL_REQ_MAX * 2];
        struct egress_acl_req q;
        size_t n;

        (void)state;
        /* the longest host that fits, and one more byte */
        n = (size_t)snprintf(line, sizeof(line), SRC " 443 - ");
        memset(line + n, 'a', EGRESS_ACL_HOST_MAX);
        line[n + EGRESS_ACL_HOST_MAX] = '\0';
        assert_int_equal(parse(line, &q), 0);
        assert_int_equal(strlen(q.host), EGRESS_ACL_HOST_MAX);
        strcat(line, "a");
        assert_int_equal(parse(line, &q), -EINVAL);
        assert_string_equal(q.host, "");
        /* a host of escapes that decodes short enough fits */
        n = (size_t)snprintf(line, sizeof(line), SRC " 443 - ");
        for (int i = 0; i < EGRESS_ACL_HOST_MAX; i++)
                memcpy(line + n + 3 * i, "%61", 4);
        assert_int_equal(parse(line, &q), 0);
        assert_int_equal(strlen(q.host), EGRESS_ACL_HOST_MAX);
        /* a cut line (len > MAX): the sandbox, port and reason still read,
         * only MAX bytes looked at */
        n = (size_t)snprintf(line, sizeof(line), SRC " 22 port ");
        memset(line + n, 'a', sizeof(line) - n);
        assert_int_equal(egress_acl_req_parse(line, EGRESS_ACL_REQ_MAX + 1, &q), -EMSGSIZE);
        assert_string_equal(q.sid, SID);
        assert_int_equal(q.port, 22);
        assert_int_equal(q.refusal, EGRESS_REFUSAL_PORT);
        assert_string_equal(q.host, "");
        assert_int_equal(egress_acl_req_parse(line, sizeof(line), &q), -EMSGSIZE);
        /* cut inside the first tokens: nothing of use */
        memset(line, 'a', sizeof(line));
        assert_int_equal(egress_acl_req_parse(line, sizeof(line), &q), -EMSGSIZE);
        assert_string_equal(q.sid, "");
        assert_int_equal(q.port, -1);
}

static void test_malformed_lines(void **state)
{
        static const char *const bad[] = { "", "\n", "x\n", SRC "\n", SRC " 80\n", SRC "  80 - h\n" };
        struct egress_acl_req q;

        (void)state;
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                assert_int_equal(parse(bad[i], &q), -EINVAL);
        /* an empty source is no identity, not an error */
        assert_int_equal(parse(" 80 - h\n", &q), 0);
        assert_string_equal(q.sid, "");
        assert_string_equal(q.host, "h");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_policy_question),
                cmocka_unit_test(test_refusal_reasons),
                cmocka_unit_test(test_escapes_and_no_identity),
                cmocka_unit_test(test_hostile_hosts_keep_the_rest),
                cmocka_unit_test(test_ports),
                cmocka_unit_test(test_sizes),
                cmocka_unit_test(test_malformed_lines),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
