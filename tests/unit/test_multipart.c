/* Unit tests for lib/codec/multipart.c: the boundary from Content-Type, a body of
 * metadata + file pairs parsed whole and split at every byte, a partial
 * delimiter inside a part (a full one followed by junk is an error), quoted parameters, and malformed bodies. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "codec/multipart.h"

struct events {
        char log[8192];
        size_t len;
};

static void logf_(struct events *e, const char *s, size_t n)
{
        assert_true(e->len + n + 1 < sizeof(e->log));
        memcpy(e->log + e->len, s, n);
        e->len += n;
        e->log[e->len] = '\0';
}

static int on_begin(void *ud, const struct multipart_part *p)
{
        char buf[700];
        int n = snprintf(buf, sizeof(buf), "[%s|%s|%d|%s:", p->name, p->filename, p->has_filename,
                         p->content_type);

        logf_(ud, buf, (size_t)n);
        return 0;
}

static int on_data(void *ud, const char *d, size_t n)
{
        assert_true(n > 0);
        logf_(ud, d, n);
        return 0;
}

static int on_end(void *ud)
{
        logf_(ud, "]", 1);
        return 0;
}

static const struct multipart_cb cb = { on_begin, on_data, on_end };

#define B "opensandbox_1234"
static const char body[] =
        "preamble to ignore\r\n"
        "--" B "\r\n"
        "Content-Disposition: form-data; name=\"metadata\"; filename=\"metadata\"\r\n"
        "Content-Type: application/json\r\n\r\n"
        "{\"path\":\"/w/a.txt\"}\r\n"
        "--" B "\r\n"
        "content-disposition: form-data; name=file; filename=\"a \\\"q\\\".txt\"\r\n\r\n"
        "x\r\n--opensandbox_12-not\r\n-y\r\r\n"
        "\r\n--" B "--\r\n"
        "epilogue";
static const char want[] =
        "[metadata|metadata|1|application/json:{\"path\":\"/w/a.txt\"}]"
        "[file|a \"q\".txt|1|:x\r\n--opensandbox_12-not\r\n-y\r\r\n]";

static int parse(const char *s, size_t n, size_t split, struct events *e)
{
        struct multipart *m = NULL;
        int r;

        memset(e, 0, sizeof(*e));
        assert_int_equal(multipart_new(B, &cb, e, &m), 0);
        if (split && split < n) {
                r = multipart_feed(m, s, split);
                if (r == 0)
                        r = multipart_feed(m, s + split, n - split);
        } else {
                r = multipart_feed(m, s, n);
        }
        if (r == 0)
                r = multipart_finish(m);
        multipart_free(m);
        return r;
}

static void test_body_every_split(void **state)
{
        struct events e;

        (void)state;
        for (size_t split = 0; split <= sizeof(body) - 1; split++) {
                assert_int_equal(parse(body, sizeof(body) - 1, split, &e), 0);
                assert_string_equal(e.log, want);
        }
}

static void test_boundary_from_content_type(void **state)
{
        char b[MULTIPART_BOUNDARY_MAX + 1];

        (void)state;
        assert_int_equal(multipart_boundary("multipart/form-data; boundary=abc", b, sizeof(b)), 0);
        assert_string_equal(b, "abc");
        assert_int_equal(multipart_boundary("Multipart/Form-Data; charset=x; boundary=\"a b\"", b,
                                            sizeof(b)), 0);
        assert_string_equal(b, "a b");
        assert_int_equal(multipart_boundary("application/json", b, sizeof(b)), -EINVAL);
        assert_int_equal(multipart_boundary("multipart/form-data", b, sizeof(b)), -EINVAL);
        assert_int_equal(multipart_boundary("multipart/form-data; boundary=", b, sizeof(b)), -EINVAL);
        assert_int_equal(multipart_boundary("multipart/form-data; boundary=a\x01", b, sizeof(b)), -EINVAL);
        assert_int_equal(multipart_boundary(NULL, b, sizeof(b)), -EINVAL);
}

static void test_malformed(void **state)
{
        static const char no_end[] = "--" B "\r\n\r\nabc";
        static const char bad_after[] = "--" B "x\r\n\r\nabc\r\n--" B "--";
        static const char no_colon[] = "--" B "\r\nbad header\r\n\r\nx\r\n--" B "--";
        struct events e;

        (void)state;
        assert_int_equal(parse(no_end, sizeof(no_end) - 1, 0, &e), -EPROTO);
        assert_int_equal(parse(bad_after, sizeof(bad_after) - 1, 0, &e), -EPROTO);
        assert_int_equal(parse(no_colon, sizeof(no_colon) - 1, 0, &e), -EPROTO);
        assert_int_equal(parse("", 0, 0, &e), -EPROTO);
}

static void test_header_cap(void **state)
{
        size_t n = MULTIPART_HDR_MAX + 64;
        char *s = malloc(n + 64);
        struct events e;
        int k;

        (void)state;
        assert_non_null(s);
        k = snprintf(s, 64, "--" B "\r\nX-Long: ");
        memset(s + k, 'a', n - (size_t)k);
        assert_int_equal(parse(s, n, 0, &e), -E2BIG);
        free(s);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_body_every_split),
                cmocka_unit_test(test_boundary_from_content_type),
                cmocka_unit_test(test_malformed),
                cmocka_unit_test(test_header_cap),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
