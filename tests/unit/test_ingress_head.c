/* Unit tests for lib/codec/ingress_head.c: the request head sandbox-ingress
 * gets from nginx, rewritten for the service in the sandbox: the prefix
 * /v1/sandboxes/{id}/proxy/{port} gone (the rest and the query kept, "/" for
 * none), the broker's credentials and the ingress's own headers dropped,
 * every other line kept in order; the agent name, the tenant and the port
 * read; malformed heads refused with a reason. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "codec/ingress_head.h"

#define AGENT "X-Sandbox-Ingress-Agent: 0123abcd\r\n"
#define TENANT "X-Sandbox-Ingress-Tenant: team-a.x@y_z\r\n"

static char out[INGRESS_HEAD_MAX];

/* Rewrite s; on success out holds the result, NUL-terminated. */
static int rewrite(const char *s, struct ingress_head *h)
{
        int r = ingress_head_rewrite(s, strlen(s), out, h);

        if (r == 0) {
                assert_true(h->out_len <= strlen(s));
                out[h->out_len] = '\0';
        }
        return r;
}

static void test_rewrite_path_and_headers(void **state)
{
        struct ingress_head h;

        (void)state;
        assert_int_equal(rewrite("GET /v1/sandboxes/sb1/proxy/8000/a/b.txt?x=1&y=%20 HTTP/1.1\r\n"
                                 "Host: h:8080\r\n" AGENT TENANT
                                 "Open-Sandbox-Api-Key: secret\r\nX-EXECD-ACCESS-TOKEN: tok\r\n"
                                 "opensandbox-egress-auth: tok\r\nX-Sandbox-Ingress-Other: 1\r\n"
                                 "Authorization: Basic eA==\r\nUpgrade: websocket\r\n\r\n",
                                 &h),
                         0);
        assert_int_equal(h.port, 8000);
        assert_string_equal(h.agent, "0123abcd");
        assert_string_equal(h.tenant, "team-a.x@y_z");
        assert_string_equal(out, "GET /a/b.txt?x=1&y=%20 HTTP/1.1\r\nHost: h:8080\r\n"
                                 "Authorization: Basic eA==\r\nUpgrade: websocket\r\n\r\n");
}

static void test_bare_endpoint_gets_a_slash(void **state)
{
        struct ingress_head h;

        (void)state;
        assert_int_equal(rewrite("POST /v1/sandboxes/x/proxy/1 HTTP/1.0\r\n" AGENT "\r\n", &h), 0);
        assert_int_equal(h.port, 1);
        assert_string_equal(h.tenant, ""); /* absent: sandbox-ingress refuses it (500) */
        assert_string_equal(out, "POST / HTTP/1.0\r\n\r\n");
        assert_int_equal(rewrite("GET /v1/sandboxes/x/proxy/65535?q HTTP/1.1\r\n" AGENT "\r\n", &h),
                         0);
        assert_int_equal(h.port, 65535);
        assert_string_equal(out, "GET /?q HTTP/1.1\r\n\r\n");
}

static void test_refused(void **state)
{
        static const char *const bad[] = {
                /* no agent header, two of them, a bad name */
                "GET /v1/sandboxes/x/proxy/80/ HTTP/1.1\r\nHost: h\r\n\r\n",
                "GET /v1/sandboxes/x/proxy/80/ HTTP/1.1\r\n" AGENT AGENT "\r\n",
                "GET /v1/sandboxes/x/proxy/80/ HTTP/1.1\r\nX-Sandbox-Ingress-Agent: ../etc\r\n\r\n",
                "GET /v1/sandboxes/x/proxy/80/ HTTP/1.1\r\nX-Sandbox-Ingress-Agent: \r\n\r\n",
                /* two tenant headers (even one after a client's copy), a bad one */
                "GET /v1/sandboxes/x/proxy/80/ HTTP/1.1\r\n" AGENT TENANT TENANT "\r\n",
                "GET /v1/sandboxes/x/proxy/80/ HTTP/1.1\r\n" AGENT
                "x-sandbox-ingress-tenant: b\r\n" TENANT "\r\n",
                "GET /v1/sandboxes/x/proxy/80/ HTTP/1.1\r\n" AGENT
                "X-Sandbox-Ingress-Tenant: a/b\r\n\r\n",
                "GET /v1/sandboxes/x/proxy/80/ HTTP/1.1\r\n" AGENT
                "X-Sandbox-Ingress-Tenant: a b\r\n\r\n",
                "GET /v1/sandboxes/x/proxy/80/ HTTP/1.1\r\n" AGENT
                "X-Sandbox-Ingress-Tenant:  \r\n\r\n",
                /* ports */
                "GET /v1/sandboxes/x/proxy/0/ HTTP/1.1\r\n" AGENT "\r\n",
                "GET /v1/sandboxes/x/proxy/65536/ HTTP/1.1\r\n" AGENT "\r\n",
                "GET /v1/sandboxes/x/proxy/123456/ HTTP/1.1\r\n" AGENT "\r\n",
                "GET /v1/sandboxes/x/proxy/80x/ HTTP/1.1\r\n" AGENT "\r\n",
                "GET /v1/sandboxes/x/proxy// HTTP/1.1\r\n" AGENT "\r\n",
                /* not an endpoint path */
                "GET /v1/sandboxes//proxy/80/ HTTP/1.1\r\n" AGENT "\r\n",
                "GET /v1/leases/x/proxy/80/ HTTP/1.1\r\n" AGENT "\r\n",
                "GET /v1/sandboxes/x/exec/80/ HTTP/1.1\r\n" AGENT "\r\n",
                "GET http://h/v1/sandboxes/x/proxy/80/ HTTP/1.1\r\n" AGENT "\r\n",
                /* request line, version, framing */
                "GET /v1/sandboxes/x/proxy/80/ HTTP/2.0\r\n" AGENT "\r\n",
                "GET  /v1/sandboxes/x/proxy/80/ HTTP/1.1\r\n" AGENT "\r\n",
                "G(T /v1/sandboxes/x/proxy/80/ HTTP/1.1\r\n" AGENT "\r\n",
                "GET /v1/sandboxes/x/proxy/80/\x7f HTTP/1.1\r\n" AGENT "\r\n",
                "GET /v1/sandboxes/x/proxy/80/ HTTP/1.1\r\n" AGENT "Bad Name: 1\r\n\r\n",
                "GET /v1/sandboxes/x/proxy/80/ HTTP/1.1\r\n" AGENT "NoColon\r\n\r\n",
                "GET /v1/sandboxes/x/proxy/80/ HTTP/1.1\r\n" AGENT " folded\r\n\r\n",
                "GET /v1/sandboxes/x/proxy/80/ HTTP/1.1\r\n" AGENT "A: b\nC: d\r\n\r\n",
                "GET /v1/sandboxes/x/proxy/80/ HTTP/1.1\r\n" AGENT "A: b\rc\r\n\r\n",
                "GET /v1/sandboxes/x/proxy/80/ HTTP/1.1\r\n" AGENT "A: \x01\r\n\r\n",
                "GET /v1/sandboxes/x/proxy/80/ HTTP/1.1\r\n" AGENT,
                "\r\n\r\n",
        };
        struct ingress_head h;

        (void)state;
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                h.why = NULL;
                if (rewrite(bad[i], &h) != -EINVAL)
                        fail_msg("accepted: %s", bad[i]);
                assert_non_null(h.why);
        }
}

static void test_nul_and_size(void **state)
{
        static const char head[] = "GET /v1/sandboxes/x/proxy/80/ HTTP/1.1\r\nA: b\0c\r\n" AGENT
                                   "\r\n";
        struct ingress_head h;
        char *big;

        (void)state;
        assert_int_equal(ingress_head_rewrite(head, sizeof(head) - 1, out, &h), -EINVAL);
        big = malloc(INGRESS_HEAD_MAX + 2);
        assert_non_null(big);
        memset(big, 'a', INGRESS_HEAD_MAX + 1);
        memcpy(big + INGRESS_HEAD_MAX - 3, "\r\n\r\n", 4);
        assert_int_equal(ingress_head_rewrite(big, INGRESS_HEAD_MAX + 1, out, &h), -EINVAL);
        free(big);
}

/* A tenant name of 128 characters is read, one of 129 refused. */
static void test_tenant_length(void **state)
{
        char head[512], name[INGRESS_TENANT_NAME_MAX + 2];
        struct ingress_head h;

        (void)state;
        memset(name, 't', sizeof(name) - 1);
        name[INGRESS_TENANT_NAME_MAX] = '\0';
        snprintf(head, sizeof(head),
                 "GET /v1/sandboxes/x/proxy/80/ HTTP/1.1\r\n" AGENT
                 "X-Sandbox-Ingress-Tenant: %s\r\n\r\n",
                 name);
        assert_int_equal(rewrite(head, &h), 0);
        assert_string_equal(h.tenant, name);
        assert_string_equal(out, "GET / HTTP/1.1\r\n\r\n");
        name[INGRESS_TENANT_NAME_MAX] = 't';
        name[INGRESS_TENANT_NAME_MAX + 1] = '\0';
        snprintf(head, sizeof(head),
                 "GET /v1/sandboxes/x/proxy/80/ HTTP/1.1\r\n" AGENT
                 "X-Sandbox-Ingress-Tenant: %s\r\n\r\n",
                 name);
        assert_int_equal(rewrite(head, &h), -EINVAL);
}

static void test_head_end(void **state)
{
        (void)state;
        assert_int_equal(ingress_head_end("GET / HTTP/1.1\r\n\r\nbody", 22), 18);
        assert_int_equal(ingress_head_end("GET / HTTP/1.1\r\n\r", 17), 0);
        assert_int_equal(ingress_head_end("", 0), 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_rewrite_path_and_headers),
                cmocka_unit_test(test_bare_endpoint_gets_a_slash),
                cmocka_unit_test(test_refused),
                cmocka_unit_test(test_nul_and_size),
                cmocka_unit_test(test_tenant_length),
                cmocka_unit_test(test_head_end),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
