/* Unit tests for egress/agent_marker.c: the TCP agents' marker line
 * ("ADDR PORT KEYHEX\n", docs/AGENT.md "TCP (Kubernetes)"), which the
 * provider writes and the relay trusts for where to connect and which key
 * to prove. Accepted: IPv4 and IPv6 literals, ports 1 and 65535. Refused,
 * each with its reason and nothing kept: every field malformed, fields
 * missing or extra, other separators, no final newline, bytes after it, a
 * NUL, and the DNS-label rule for the marker's name. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "agent_marker.h"

#define K "00112233445566778899aabbccddeeff0f1e2d3c4b5a69788796a5b4c3d2e1f0"

static int parse(const char *s, struct agent_marker *m, const char **why)
{
        return agent_marker_parse(s, strlen(s), m, why);
}

static void test_good(void **state)
{
        struct agent_marker m;
        const char *why = "x";
        struct sockaddr_in *s4 = (struct sockaddr_in *)&m.addr;
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&m.addr;
        unsigned char ip6[16];

        (void)state;
        assert_int_equal(parse("10.244.1.7 7000 " K "\n", &m, &why), 0);
        assert_null(why);
        assert_int_equal(m.addr.ss_family, AF_INET);
        assert_int_equal(m.addr_len, sizeof(struct sockaddr_in));
        assert_int_equal(ntohl(s4->sin_addr.s_addr), 0x0af40107);
        assert_int_equal(ntohs(s4->sin_port), 7000);
        assert_int_equal(m.key[0], 0x00);
        assert_int_equal(m.key[31], 0xf0);
        assert_int_equal(parse("fd00:10:244::7 65535 " K "\n", &m, &why), 0);
        assert_int_equal(m.addr.ss_family, AF_INET6);
        assert_int_equal(ntohs(s6->sin6_port), 65535);
        assert_int_equal(inet_pton(AF_INET6, "fd00:10:244::7", ip6), 1);
        assert_memory_equal(&s6->sin6_addr, ip6, 16);
        assert_int_equal(parse("::1 1 " K "\n", &m, &why), 0);
}

static void test_bad(void **state)
{
        static const char *const bad[] = {
                "",
                "\n",
                "10.0.0.1 7000 " K,        /* no newline */
                "10.0.0.1 7000 " K "\n\n", /* two lines */
                "10.0.0.1 7000 " K "\nx",  /* after the line */
                "10.0.0.1 7000 " K " \n",  /* extra field */
                "10.0.0.1 7000 " K " extra\n",
                "10.0.0.1 7000\n",        /* missing key */
                "10.0.0.1  7000 " K "\n", /* two spaces */
                " 10.0.0.1 7000 " K "\n",
                "10.0.0.1\t7000 " K "\n",
                "10.0.0.1 7000 " K "\r\n",
                "10.0.0.1 0 " K "\n", /* ports */
                "10.0.0.1 65536 " K "\n",
                "10.0.0.1 07000 " K "\n",
                "10.0.0.1 +7000 " K "\n",
                "10.0.0.1 99999999999999999999 " K "\n",
                "10.0.0.1 70a " K "\n",
                "10.0.0 7000 " K "\n", /* addresses */
                "10.0.0.256 7000 " K "\n",
                "010.0.0.1 7000 " K "\n",
                "pod.example 7000 " K "\n",
                "[::1] 7000 " K "\n",
                "fe80::1%eth0 7000 " K "\n",
                "::g 7000 " K "\n",
                "10.0.0.1 7000 "
                "00112233445566778899AABBCCDDEEFF0F1E2D3C4B5A69788796A5B4C3D2E1F0\n",
                "10.0.0.1 7000 "
                "00112233445566778899aabbccddeeff0f1e2d3c4b5a69788796a5b4c3d2e1f\n",
                "10.0.0.1 7000 " K "0\n",
                "10.0.0.1 7000 "
                "00112233445566778899aabbccddeeff0f1e2d3c4b5a69788796a5b4c3d2e1fz\n",
        };
        struct agent_marker m;
        const char *why;
        const char with_nul[] = "10.0.0.1 7000 " K "\n";
        char buf[256];

        (void)state;
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                why = NULL;
                if (parse(bad[i], &m, &why) != -EINVAL)
                        fail_msg("accepted %s", bad[i]);
                assert_non_null(why);
                for (size_t j = 0; j < sizeof(m.key); j++)
                        assert_int_equal(m.key[j], 0);
        }
        memcpy(buf, with_nul, sizeof(with_nul));
        buf[3] = '\0';
        assert_int_equal(agent_marker_parse(buf, sizeof(with_nul) - 1, &m, &why), -EINVAL);
        /* over the cap, even if the line were good */
        memset(buf, 'a', sizeof(buf));
        assert_int_equal(agent_marker_parse(buf, AGENT_MARKER_MAX + 1, &m, &why), -EINVAL);
        /* the reason names the field */
        assert_int_equal(parse("10.0.0.1 0 " K "\n", &m, &why), -EINVAL);
        assert_non_null(strstr(why, "PORT"));
        assert_int_equal(parse("10.0.0.x 1 " K "\n", &m, &why), -EINVAL);
        assert_non_null(strstr(why, "ADDR"));
}

static void test_ref(void **state)
{
        char long63[64], long64[65];

        (void)state;
        memset(long63, 'a', 63);
        long63[63] = '\0';
        memset(long64, 'a', 64);
        long64[64] = '\0';
        assert_true(agent_ref_ok("a", 1));
        assert_true(agent_ref_ok("sb-0a1b", 7));
        assert_true(agent_ref_ok(long63, 63));
        assert_false(agent_ref_ok(long64, 64));
        assert_false(agent_ref_ok("", 0));
        assert_false(agent_ref_ok("-a", 2));
        assert_false(agent_ref_ok("a-", 2));
        assert_false(agent_ref_ok("A", 1));
        assert_false(agent_ref_ok("a.b", 3));
        assert_false(agent_ref_ok("a_b", 3));
        assert_false(agent_ref_ok("..", 2));
        assert_false(agent_ref_ok("a/b", 3));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_good),
                cmocka_unit_test(test_bad),
                cmocka_unit_test(test_ref),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
