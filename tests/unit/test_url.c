/* Unit tests for lib/codec/url.c: the query-string decoders and the route
 * table's path matching, fed the bytes a client controls (the request URI). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "codec/url.h"

static int decode(const char *s, char *out, size_t size)
{
        return url_decode(s, strlen(s), out, size);
}

static void test_decode_plain_and_escapes(void **state)
{
        char out[64];

        (void)state;
        assert_int_equal(decode("abc", out, sizeof(out)), 0);
        assert_string_equal(out, "abc");
        assert_int_equal(decode("", out, sizeof(out)), 0);
        assert_string_equal(out, "");
        assert_int_equal(decode("a%20b+c", out, sizeof(out)), 0);
        assert_string_equal(out, "a b c");
        assert_int_equal(decode("%2Fetc%2fpasswd", out, sizeof(out)), 0); /* both cases of hex */
        assert_string_equal(out, "/etc/passwd");
        assert_int_equal(decode("%2B", out, sizeof(out)), 0); /* an encoded '+' stays a '+' */
        assert_string_equal(out, "+");
        assert_int_equal(decode("%25", out, sizeof(out)), 0); /* decoded once, not twice */
        assert_string_equal(out, "%");
        assert_int_equal(decode("%ff%80", out, sizeof(out)), 0); /* bytes, not checked as UTF-8 */
        assert_int_equal((unsigned char)out[0], 0xff);
        assert_int_equal((unsigned char)out[1], 0x80);
        assert_int_equal(out[2], '\0');
}

static void test_decode_malformed(void **state)
{
        char out[64];

        (void)state;
        assert_int_equal(decode("%", out, sizeof(out)), -EINVAL);
        assert_int_equal(decode("a%2", out, sizeof(out)), -EINVAL);
        assert_int_equal(decode("%g0", out, sizeof(out)), -EINVAL);
        assert_int_equal(decode("%0g", out, sizeof(out)), -EINVAL);
        assert_int_equal(decode("% 1", out, sizeof(out)), -EINVAL);
        /* an encoded NUL would cut the value short in C: refused */
        assert_int_equal(decode("a%00b", out, sizeof(out)), -EINVAL);
        /* only len bytes are read: the escape is cut, not read past */
        assert_int_equal(url_decode("ab%41", 3, out, sizeof(out)), -EINVAL);
        assert_int_equal(url_decode("ab%41", 2, out, sizeof(out)), 0);
        assert_string_equal(out, "ab");
}

static void test_decode_caps(void **state)
{
        char out[4];

        (void)state;
        assert_int_equal(decode("abc", out, sizeof(out)), 0); /* 3 bytes and the NUL fit */
        assert_string_equal(out, "abc");
        assert_int_equal(decode("abcd", out, sizeof(out)), -E2BIG);
        /* escapes count once decoded */
        assert_int_equal(decode("%41%42%43", out, sizeof(out)), 0);
        assert_string_equal(out, "ABC");
        assert_int_equal(decode("%41%42%43%44", out, sizeof(out)), -E2BIG);
        assert_int_equal(decode("", out, 1), 0);
        assert_string_equal(out, "");
        assert_int_equal(decode("a", out, 1), -E2BIG);
        assert_int_equal(decode("", out, 0), -E2BIG); /* nowhere for the NUL */
}

static void test_query_next_pairs(void **state)
{
        const char *cur = "a=1&&b=two+words&c&d=&=e&f=%3D%26";
        char k[32], v[32];

        (void)state;
        assert_int_equal(url_query_next(&cur, k, sizeof(k), v, sizeof(v)), 1);
        assert_string_equal(k, "a");
        assert_string_equal(v, "1");
        assert_int_equal(url_query_next(&cur, k, sizeof(k), v, sizeof(v)), 1); /* "&&" skipped */
        assert_string_equal(k, "b");
        assert_string_equal(v, "two words");
        assert_int_equal(url_query_next(&cur, k, sizeof(k), v, sizeof(v)), 1); /* no '=' */
        assert_string_equal(k, "c");
        assert_string_equal(v, "");
        assert_int_equal(url_query_next(&cur, k, sizeof(k), v, sizeof(v)), 1);
        assert_string_equal(k, "d");
        assert_string_equal(v, "");
        assert_int_equal(url_query_next(&cur, k, sizeof(k), v, sizeof(v)), 1); /* empty name */
        assert_string_equal(k, "");
        assert_string_equal(v, "e");
        assert_int_equal(url_query_next(&cur, k, sizeof(k), v, sizeof(v)), 1);
        assert_string_equal(k, "f");
        assert_string_equal(v, "=&"); /* decoded delimiters are data */
        assert_int_equal(url_query_next(&cur, k, sizeof(k), v, sizeof(v)), 0);
        assert_int_equal(url_query_next(&cur, k, sizeof(k), v, sizeof(v)), 0); /* stays at the end */

        cur = "";
        assert_int_equal(url_query_next(&cur, k, sizeof(k), v, sizeof(v)), 0);
        cur = "&&&";
        assert_int_equal(url_query_next(&cur, k, sizeof(k), v, sizeof(v)), 0);
        /* only the first '=' splits */
        cur = "x=a=b";
        assert_int_equal(url_query_next(&cur, k, sizeof(k), v, sizeof(v)), 1);
        assert_string_equal(k, "x");
        assert_string_equal(v, "a=b");
}

static void test_query_next_bad_pairs(void **state)
{
        const char *cur = "long=0123456789&bad=%zz&ok=1";
        char k[8], v[8];

        (void)state;
        /* too long for the buffer, then malformed: each an error, and the
         * cursor moves past the pair so a caller that stops there is safe */
        assert_int_equal(url_query_next(&cur, k, sizeof(k), v, sizeof(v)), -E2BIG);
        assert_int_equal(url_query_next(&cur, k, sizeof(k), v, sizeof(v)), -EINVAL);
        assert_int_equal(url_query_next(&cur, k, sizeof(k), v, sizeof(v)), 1);
        assert_string_equal(k, "ok");
        cur = "0123456789=1";
        assert_int_equal(url_query_next(&cur, k, sizeof(k), v, sizeof(v)), -E2BIG); /* long name */
        cur = "a=%00";
        assert_int_equal(url_query_next(&cur, k, sizeof(k), v, sizeof(v)), -EINVAL);
}

static void test_query_param(void **state)
{
        char buf[8];

        (void)state;
        assert_int_equal(url_query_param("a=1&ticketId=abc&b=2", "ticketId", buf, sizeof(buf)), 0);
        assert_string_equal(buf, "abc");
        /* the first of repeated names wins */
        assert_int_equal(url_query_param("id=x&id=y", "id", buf, sizeof(buf)), 0);
        assert_string_equal(buf, "x");
        /* a name is matched whole: neither a prefix nor a suffix of another */
        assert_int_equal(url_query_param("ids=1&xid=2", "id", buf, sizeof(buf)), -ENOENT);
        assert_int_equal(url_query_param("id", "id", buf, sizeof(buf)), -ENOENT);
        assert_int_equal(url_query_param("id=", "id", buf, sizeof(buf)), 0);
        assert_string_equal(buf, "");
        /* raw: no decoding */
        assert_int_equal(url_query_param("p=%41+", "p", buf, sizeof(buf)), 0);
        assert_string_equal(buf, "%41+");
        assert_int_equal(url_query_param("p=1234567", "p", buf, sizeof(buf)), 0);
        assert_int_equal(url_query_param("p=12345678", "p", buf, sizeof(buf)), -E2BIG);
        assert_int_equal(url_query_param("", "p", buf, sizeof(buf)), -ENOENT);
        assert_int_equal(url_query_param(NULL, "p", buf, sizeof(buf)), -ENOENT);
        assert_int_equal(url_query_param("&&p=1", "p", buf, sizeof(buf)), 0);
        assert_string_equal(buf, "1");
}

static void test_path_match_literal(void **state)
{
        char args[2][URL_PATH_ARG_MAX];

        (void)state;
        assert_int_equal(url_path_match("/v1/status", "/v1/status", args, 2), 1);
        assert_int_equal(url_path_match("/v1/status", "/v1/status/", args, 2), 0);
        assert_int_equal(url_path_match("/v1/status", "/v1/statu", args, 2), 0);
        assert_int_equal(url_path_match("/v1/status", "/V1/status", args, 2), 0); /* exact case */
        assert_int_equal(url_path_match("/v1/status", "", args, 2), 0);
        assert_int_equal(url_path_match("", "", args, 2), 1);
}

static void test_path_match_holes(void **state)
{
        char args[2][URL_PATH_ARG_MAX] = { "", "" };
        const char *p2 = "/v1/sandboxes/{}/proxy/{}/ping";

        (void)state;
        assert_int_equal(url_path_match("/v1/sandboxes/{}", "/v1/sandboxes/abc", args, 2), 1);
        assert_string_equal(args[0], "abc");
        assert_int_equal(url_path_match(p2, "/v1/sandboxes/s1/proxy/44772/ping", args, 2), 1);
        assert_string_equal(args[0], "s1");
        assert_string_equal(args[1], "44772");
        /* a hole is one non-empty segment: no '/', not empty */
        assert_int_equal(url_path_match("/v1/sandboxes/{}", "/v1/sandboxes/", args, 2), 0);
        assert_int_equal(url_path_match("/v1/sandboxes/{}", "/v1/sandboxes/a/b", args, 2), 0);
        assert_int_equal(url_path_match(p2, "/v1/sandboxes//proxy/1/ping", args, 2), 0);
        assert_int_equal(url_path_match(p2, "/v1/sandboxes/s1/proxy/1/ping/", args, 2), 0);
        /* dot segments are not special here (nginx normalises before us) */
        assert_int_equal(url_path_match("/v1/sandboxes/{}", "/v1/sandboxes/..", args, 2), 1);
        assert_string_equal(args[0], "..");
        /* the literal after a hole must follow it exactly */
        assert_int_equal(url_path_match("/a/{}/b", "/a/x/c", args, 2), 0);
        assert_int_equal(url_path_match("/a/{}/b", "/a/x/b", args, 2), 1);
}

static void test_path_match_caps(void **state)
{
        char args[2][URL_PATH_ARG_MAX];
        char path[32 + 2 * URL_PATH_ARG_MAX];
        char seg[URL_PATH_ARG_MAX + 1];

        (void)state;
        /* 63 bytes fit (with the NUL), 64 do not */
        memset(seg, 'x', URL_PATH_ARG_MAX - 1);
        seg[URL_PATH_ARG_MAX - 1] = '\0';
        snprintf(path, sizeof(path), "/v1/sandboxes/%s", seg);
        assert_int_equal(url_path_match("/v1/sandboxes/{}", path, args, 2), 1);
        assert_int_equal(strlen(args[0]), URL_PATH_ARG_MAX - 1);
        memset(seg, 'x', URL_PATH_ARG_MAX);
        seg[URL_PATH_ARG_MAX] = '\0';
        snprintf(path, sizeof(path), "/v1/sandboxes/%s", seg);
        assert_int_equal(url_path_match("/v1/sandboxes/{}", path, args, 2), 0);
        /* more holes than room for them: no match, nothing written past args */
        assert_int_equal(url_path_match("/{}/{}/{}", "/a/b/c", args, 2), 0);
        assert_int_equal(url_path_match("/{}", "/a", args, 0), 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_decode_plain_and_escapes),
                cmocka_unit_test(test_decode_malformed),
                cmocka_unit_test(test_decode_caps),
                cmocka_unit_test(test_query_next_pairs),
                cmocka_unit_test(test_query_next_bad_pairs),
                cmocka_unit_test(test_query_param),
                cmocka_unit_test(test_path_match_literal),
                cmocka_unit_test(test_path_match_holes),
                cmocka_unit_test(test_path_match_caps),
        };
        return cmocka_run_group_tests_name("url", tests, NULL, NULL);
}
