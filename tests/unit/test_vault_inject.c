/* Unit tests for lib/sandbox/vault_inject.c: the request head parser (bytes
 * a sandbox wrote), which bindings apply to a request, and what they change:
 * auth headers, placeholders in headers, path, query and bodies, never the
 * authority; sealed values opened only with their key. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sandbox/vault.h"
#include "sandbox/vault_inject.h"
#include "sandbox/vault_seal.h"

#define SID "0123456789abcdef0123456789abcdef"

static const char *const vault_body =
        "{\"credentials\":[{\"name\":\"tok\",\"source\":{\"value\":\"S3CR3T&x\"}},"
        "{\"name\":\"b64\",\"source\":{\"value\":\"dXNlcjpwdw==\"}}],"
        "\"bindings\":[{\"name\":\"auth\",\"match\":{\"hosts\":[\"api.test\"],\"methods\":[\"GET\"]"
        ","
        "\"paths\":[\"/v1/*\"]},\"auth\":{\"type\":\"bearer\",\"credential\":\"tok\"}},"
        "{\"name\":\"git\",\"match\":{\"hosts\":[\"*.git.test\"],\"schemes\":[\"http\"]},"
        "\"auth\":{\"type\":\"basic\",\"credential\":\"b64\"}},"
        "{\"name\":\"sub\",\"match\":{\"hosts\":[\"sub.test\"]},\"auth\":{\"type\":\"passthrough\","
        "\"substitutions\":[{\"credential\":\"tok\",\"placeholder\":\"__T__\",\"in\":[\"header\","
        "\"path\",\"query\",\"body\"]}]}},"
        "{\"name\":\"tls\",\"match\":{\"hosts\":[\"tls.test\"],\"schemes\":[\"https\"]},"
        "\"auth\":{\"type\":\"apiKey\",\"name\":\"X-Key\",\"credential\":\"tok\"}}]}";

static struct json_object *vault(void)
{
        struct json_object *v = NULL;
        char err[256];

        if (vault_parse_create(vault_body, strlen(vault_body), &v, err, sizeof(err)) < 0)
                fail_msg("%s", err);
        return v;
}

static void parse(const char *head, struct vault_http *h)
{
        if (vault_http_parse(head, strlen(head), h) != 0)
                fail_msg("head refused: %s", head);
}

static char *inject(struct json_object *v, const char *head, const uint8_t *key, int *applied,
                    const char *body)
{
        struct vault_http h;
        char *out = NULL;
        size_t n;

        parse(head, &h);
        if (body) {
                h.body = strdup(body);
                h.body_len = strlen(body);
        }
        assert_int_equal(vault_inject(v, key, SID, &h, applied), 0);
        assert_int_equal(vault_http_format(&h, &out, &n), 0);
        if (body) {
                char *all = NULL;
                assert_true(asprintf(&all, "%s%.*s", out, (int)h.body_len, h.body) > 0);
                free(out);
                out = all;
        }
        vault_http_clear(&h);
        return out;
}

static void test_parse(void **state)
{
        struct vault_http h;

        (void)state;
        parse("GET http://a.test/x HTTP/1.1\r\nHost: a.test\r\nX:  y \r\n\r\n", &h);
        assert_string_equal(h.method, "GET");
        assert_string_equal(h.uri, "http://a.test/x");
        assert_int_equal(h.n, 2);
        assert_string_equal(h.value[1], "y ");
        vault_http_clear(&h);
        /* what Squid decrypted from a bumped CONNECT */
        parse("GET HTTPS://a.test:8443/x HTTP/1.1\r\n\r\n", &h);
        assert_string_equal(h.uri, "HTTPS://a.test:8443/x");
        vault_http_clear(&h);
        static const char *const bad[] = {
                "GET /x HTTP/1.1\r\n\r\n",              /* not absolute */
                "GET ftp://a.test/ HTTP/1.1\r\n\r\n",   /* not http(s) */
                "GET httpx://a.test/ HTTP/1.1\r\n\r\n", /* not http(s) */
                "GET http://a.test/ HTTP/1.1\r\nNoColon\r\n\r\n",
                "GET http://a.test/ HTTP/1.1\r\nA B: c\r\n\r\n",
                "GET http://a.test/ HTTP/1.1\r\nA: b\r\n", /* no end */
                "GEThttp://a.test/\r\n\r\n",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                if (vault_http_parse(bad[i], strlen(bad[i]), &h) != -EINVAL)
                        fail_msg("accepted: %s", bad[i]);
        char many[16384];
        size_t n = (size_t)snprintf(many, sizeof(many), "GET http://a.test/ HTTP/1.1\r\n");
        for (int i = 0; i <= VAULT_HTTP_HEADERS_MAX; i++)
                n += (size_t)snprintf(many + n, sizeof(many) - n, "H%d: v\r\n", i);
        snprintf(many + n, sizeof(many) - n, "\r\n");
        assert_int_equal(vault_http_parse(many, strlen(many), &h), -EINVAL);
}

static void test_bound(void **state)
{
        struct json_object *v = vault();

        (void)state;
        assert_true(vault_host_bound(v, "http", "api.test"));
        assert_true(vault_host_bound(v, "http", "a.b.git.test"));
        assert_false(vault_host_bound(v, "http", "git.test")); /* *.x: subdomains only */
        assert_false(vault_host_bound(v, "http", "tls.test")); /* https only */
        assert_true(vault_host_bound(v, "https", "tls.test"));
        assert_false(vault_host_bound(v, "http", "evil.test"));
        assert_false(vault_host_bound(NULL, "http", "api.test"));
        json_object_put(v);
}

static void test_auth(void **state)
{
        struct json_object *v = vault();
        int applied;
        char *out;

        (void)state;
        out = inject(v,
                     "GET http://api.test/v1/repos HTTP/1.1\r\nHost: api.test\r\n"
                     "authorization: Bearer fake\r\n\r\n",
                     NULL, &applied, NULL);
        assert_int_equal(applied, 1);
        assert_non_null(strstr(out, "Authorization: Bearer S3CR3T&x\r\n"));
        assert_null(strstr(out, "fake")); /* the sandbox's own is replaced */
        free(out);
        /* method and path must match */
        out = inject(v, "POST http://api.test/v1/x HTTP/1.1\r\n\r\n", NULL, &applied, NULL);
        assert_int_equal(applied, 0);
        assert_null(strstr(out, "S3CR3T"));
        free(out);
        out = inject(v, "GET http://api.test/v2/x HTTP/1.1\r\n\r\n", NULL, &applied, NULL);
        assert_int_equal(applied, 0);
        free(out);
        out = inject(v, "GET http://x.Git.Test:8080/r.git/info/refs HTTP/1.1\r\n\r\n", NULL,
                     &applied, NULL);
        assert_int_equal(applied, 1);
        assert_non_null(strstr(out, "Authorization: Basic dXNlcjpwdw==\r\n"));
        free(out);
        json_object_put(v);
}

/* A request decrypted from a bumped CONNECT (https://): only the bindings
 * whose schemes cover https apply, the authority is never rewritten. */
static void test_https(void **state)
{
        struct json_object *v = vault();
        int applied;
        char *out;

        (void)state;
        out = inject(v, "GET https://tls.test:8443/x HTTP/1.1\r\nHost: tls.test\r\n\r\n", NULL,
                     &applied, NULL);
        assert_int_equal(applied, 1);
        assert_non_null(strstr(out, "X-Key: S3CR3T&x\r\n"));
        free(out);
        /* the same host over http: the binding is https only */
        out = inject(v, "GET http://tls.test/x HTTP/1.1\r\n\r\n", NULL, &applied, NULL);
        assert_int_equal(applied, 0);
        assert_null(strstr(out, "S3CR3T"));
        free(out);
        /* "git" is http only: not over https */
        out = inject(v, "GET https://a.git.test/r HTTP/1.1\r\n\r\n", NULL, &applied, NULL);
        assert_int_equal(applied, 0);
        free(out);
        /* no schemes: both; the path and query, never the authority */
        out = inject(v, "GET https://__T__@sub.test/a/__T__?k=__T__ HTTP/1.1\r\n\r\n", NULL,
                     &applied, NULL);
        assert_int_equal(applied, 1);
        assert_non_null(
                strstr(out, "GET https://__T__@sub.test/a/S3CR3T%26x?k=S3CR3T%26x HTTP/1.1\r\n"));
        free(out);
        json_object_put(v);
}

static void test_substitutions(void **state)
{
        struct json_object *v = vault();
        int applied;
        char *out;

        (void)state;
        out = inject(
                v,
                "GET http://sub.test/a/__T__?k=__T__&__T__ HTTP/1.1\r\nX-T: pre __T__ post\r\n\r\n",
                NULL, &applied, NULL);
        assert_int_equal(applied, 1);
        /* URL-encoded in path and query, as is in a header */
        assert_non_null(strstr(
                out, "GET http://sub.test/a/S3CR3T%26x?k=S3CR3T%26x&S3CR3T%26x HTTP/1.1\r\n"));
        assert_non_null(strstr(out, "X-T: pre S3CR3T&x post\r\n"));
        free(out);
        /* never in the authority: the request still goes where the binding matched */
        out = inject(v, "GET http://__T__@sub.test/ HTTP/1.1\r\n\r\n", NULL, &applied, NULL);
        assert_non_null(strstr(out, "http://__T__@sub.test/"));
        free(out);
        /* bodies: JSON-escaped, form-encoded, raw; Content-Length follows */
        out = inject(v,
                     "POST http://sub.test/ HTTP/1.1\r\nContent-Type: application/json\r\n"
                     "Content-Length: 12\r\n\r\n",
                     NULL, &applied, "{\"t\":\"__T__\"}");
        assert_non_null(strstr(out, "Content-Length: 16\r\n"));
        assert_non_null(strstr(out, "{\"t\":\"S3CR3T&x\"}"));
        free(out);
        out = inject(v,
                     "POST http://sub.test/ HTTP/1.1\r\nContent-Type: "
                     "application/x-www-form-urlencoded\r\n"
                     "Content-Length: 5\r\n\r\n",
                     NULL, &applied, "a=__T__");
        assert_non_null(strstr(out, "a=S3CR3T%26x"));
        free(out);
        out = inject(v, "POST http://sub.test/ HTTP/1.1\r\nContent-Encoding: gzip\r\n\r\n", NULL,
                     &applied, "__T__");
        assert_null(strstr(out, "S3CR3T")); /* an encoded body is left alone */
        free(out);
        json_object_put(v);
}

static void test_sealed(void **state)
{
        struct json_object *v = vault();
        uint8_t key[VAULT_KEY_BYTES], other[VAULT_KEY_BYTES];
        struct vault_http h;
        int applied;
        char *out;

        (void)state;
        memset(key, 1, sizeof(key));
        memset(other, 2, sizeof(other));
        assert_int_equal(vault_seal_values(v, key, SID), 0);
        out = inject(v, "GET http://api.test/v1/x HTTP/1.1\r\n\r\n", key, &applied, NULL);
        assert_non_null(strstr(out, "Bearer S3CR3T&x"));
        free(out);
        /* another key, or none: refused, nothing applied */
        parse("GET http://api.test/v1/x HTTP/1.1\r\n\r\n", &h);
        assert_int_equal(vault_inject(v, other, SID, &h, &applied), -EBADMSG);
        assert_int_equal(vault_inject(v, NULL, SID, &h, &applied), -EBADMSG);
        vault_http_clear(&h);
        json_object_put(v);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse),  cmocka_unit_test(test_bound),
                cmocka_unit_test(test_auth),   cmocka_unit_test(test_substitutions),
                cmocka_unit_test(test_sealed), cmocka_unit_test(test_https),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
