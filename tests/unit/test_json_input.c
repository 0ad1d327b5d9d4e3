/* Unit tests for lib/core/json_input.c: parsing and validating untrusted request
 * bodies (the first thing every handler does with client bytes). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/json_input.h"
#include "store/lease.h"

/* Parse a NUL-terminated literal; returns the error and leaves *ret, err set. */
static int parse(const char *s, struct json_object **ret, char *err, size_t errsz)
{
        return json_input_parse_object(s, strlen(s), JSON_INPUT_MAX_DEPTH, ret, err, errsz);
}

/* Expect s to be rejected with -EINVAL, a message containing want, and no object. */
static void expect_rejected(const char *s, const char *want)
{
        struct json_object *o = (struct json_object *)&o; /* must be reset to NULL */
        char err[256] = "";

        assert_int_equal(parse(s, &o, err, sizeof(err)), -EINVAL);
        assert_null(o);
        assert_true(err[0] != '\0');
        if (want && !strstr(err, want))
                fail_msg("input %s: error \"%s\" does not contain \"%s\"", s, err, want);
}

static void expect_parsed(const char *s)
{
        struct json_object *o = NULL;
        char err[256] = "";

        if (parse(s, &o, err, sizeof(err)) != 0)
                fail_msg("input %s rejected: %s", s, err);
        assert_non_null(o);
        assert_true(json_object_is_type(o, json_type_object));
        json_put(o);
}

/* An object nested `levels` deep: {"a":{"a":...{}}} (levels >= 1). */
static char *nested_objects(int levels)
{
        size_t n = (size_t)levels * 6 + 1;
        char *s = malloc(n), *p = s;

        assert_non_null(s);
        for (int i = 0; i < levels - 1; i++)
                p += sprintf(p, "{\"a\":");
        p += sprintf(p, "{}");
        for (int i = 0; i < levels - 1; i++)
                *p++ = '}';
        *p = '\0';
        return s;
}

/* {"a":[[...[]...]]}: one object and levels-1 arrays (levels >= 2). */
static char *nested_arrays(int levels)
{
        size_t n = (size_t)levels * 2 + 16;
        char *s = malloc(n), *p = s;

        assert_non_null(s);
        p += sprintf(p, "{\"a\":");
        for (int i = 0; i < levels - 1; i++)
                *p++ = '[';
        for (int i = 0; i < levels - 1; i++)
                *p++ = ']';
        p += sprintf(p, "}");
        return s;
}

static void test_parse_valid(void **state)
{
        struct json_object *o = NULL, *v;
        char err[128] = "";

        (void)state;
        assert_int_equal(parse("{\"userId\":\"u1\",\"n\":3}", &o, err, sizeof(err)), 0);
        assert_string_equal(err, "");
        assert_true(json_object_object_get_ex(o, "userId", &v));
        assert_string_equal(json_object_get_string(v), "u1");
        json_put(o);
        expect_parsed("{}");
        expect_parsed("  {\"a\":1}  ");
        expect_parsed("{\"a\":1}\n");
        expect_parsed("\r\n\t{\"a\":[1,2,{\"b\":null}]}");
}

static void test_parse_empty_body(void **state)
{
        struct json_object *o = (struct json_object *)&o;
        char err[128] = "";

        (void)state;
        assert_int_equal(json_input_parse_object("", 0, JSON_INPUT_MAX_DEPTH, &o, err, sizeof(err)),
                         -EINVAL);
        assert_null(o);
        assert_non_null(strstr(err, "empty"));
        /* A non-empty buffer with len 0 is still empty. */
        assert_int_equal(json_input_parse_object("{}", 0, JSON_INPUT_MAX_DEPTH, &o, err, sizeof(err)),
                         -EINVAL);
        expect_rejected(" ", NULL);
        expect_rejected("\n", NULL);
}

static void test_parse_nul_byte(void **state)
{
        static const char body[] = "{\"a\":\"x\0y\"}";
        struct json_object *o = (struct json_object *)&o;
        char err[128] = "";

        (void)state;
        assert_int_equal(json_input_parse_object(body, sizeof(body) - 1, JSON_INPUT_MAX_DEPTH, &o,
                                                 err, sizeof(err)),
                         -EINVAL);
        assert_null(o);
        assert_string_equal(err, "request body contains a NUL byte");
        /* NUL right after a complete object: still rejected, not truncated. */
        assert_int_equal(json_input_parse_object("{}\0", 3, JSON_INPUT_MAX_DEPTH, &o, err,
                                                 sizeof(err)),
                         -EINVAL);
        assert_null(o);
}

static void test_parse_len_bounds(void **state)
{
        /* Only buf[0..len) is read: a valid prefix parses, a cut one does not. */
        static const char body[] = "{\"a\":1}garbage";
        struct json_object *o = NULL;
        char err[128] = "";

        (void)state;
        assert_int_equal(json_input_parse_object(body, 7, JSON_INPUT_MAX_DEPTH, &o, err, sizeof(err)),
                         0);
        assert_non_null(o);
        json_put(o);
        o = NULL;
        assert_int_equal(json_input_parse_object(body, 6, JSON_INPUT_MAX_DEPTH, &o, err, sizeof(err)),
                         -EINVAL);
        assert_null(o);
        assert_non_null(strstr(err, "truncated"));
}

static void test_parse_trailing_garbage(void **state)
{
        (void)state;
        expect_rejected("{}x", NULL);
        expect_rejected("{} x", NULL);
        expect_rejected("{\"a\":1}{}", NULL);
        expect_rejected("{\"a\":1} {\"b\":2}", NULL);
        expect_rejected("{}]", NULL);
        expect_rejected("{}}", NULL);
        expect_rejected("{},", NULL);
}

static void test_parse_not_object(void **state)
{
        (void)state;
        expect_rejected("[]", "must be a JSON object");
        expect_rejected("[{\"a\":1}]", "must be a JSON object");
        expect_rejected("\"str\"", "must be a JSON object");
        expect_rejected("true", NULL);
        expect_rejected("false", NULL);
        expect_rejected("null", NULL);
        expect_rejected("42", NULL);
        expect_rejected("-1.5", NULL);
}

static void test_parse_invalid_json(void **state)
{
        (void)state;
        expect_rejected("{", "truncated");
        expect_rejected("{\"a\":", "truncated");
        expect_rejected("{\"a\":\"unterminated", "truncated");
        expect_rejected("{\"a\":1,}", "not valid JSON");
        expect_rejected("{\"a\" 1}", "not valid JSON");
        expect_rejected("{\"a\":01}", "not valid JSON");
        expect_rejected("{\"a\":tru}", "not valid JSON");
        expect_rejected("{a:1}", "not valid JSON");
        expect_rejected("}", "not valid JSON");
        expect_rejected("hello", NULL);
        expect_rejected("\xff\xfe{}", NULL);
}

static void test_parse_depth_limit(void **state)
{
        (void)state;
        for (int levels = 1; levels <= JSON_INPUT_MAX_DEPTH; levels++) {
                char *s = nested_objects(levels), *a = nested_arrays(levels < 2 ? 2 : levels);
                expect_parsed(s);
                expect_parsed(a);
                free(s);
                free(a);
        }
        for (int levels = JSON_INPUT_MAX_DEPTH + 1; levels <= JSON_INPUT_MAX_DEPTH + 3; levels++) {
                char *s = nested_objects(levels), *a = nested_arrays(levels);
                expect_rejected(s, "nested too deeply");
                expect_rejected(a, "nested too deeply");
                free(s);
                free(a);
        }
        /* Far past the limit: rejected without recursing through it all. */
        char *deep = nested_arrays(100000);
        expect_rejected(deep, "nested too deeply");
        free(deep);
}

static void test_parse_depth_param(void **state)
{
        struct json_object *o = NULL;
        char err[128];

        (void)state;
        /* max_depth is the caller's: 2 allows {"a":{}} but not one more. */
        assert_int_equal(json_input_parse_object("{\"a\":{}}", 8, 2, &o, err, sizeof(err)), 0);
        json_put(o);
        o = NULL;
        assert_int_equal(json_input_parse_object("{\"a\":{\"b\":{}}}", 14, 2, &o, err, sizeof(err)),
                         -EINVAL);
        assert_null(o);
}

static void test_parse_big_numbers(void **state)
{
        (void)state;
        /* Huge numbers are the handler's business, not a parse error. */
        expect_parsed("{\"a\":123456789012345678901234567890}");
        expect_parsed("{\"a\":-123456789012345678901234567890}");
        expect_parsed("{\"a\":1e308}");
        expect_parsed("{\"a\":1e99999}");
}

static void test_parse_small_err_buffer(void **state)
{
        struct json_object *o = NULL;
        char err[8];

        (void)state;
        memset(err, 'X', sizeof(err));
        assert_int_equal(json_input_parse_object("[]", 2, JSON_INPUT_MAX_DEPTH, &o, err, 4), -EINVAL);
        assert_int_equal(err[3], '\0');
        assert_int_equal(err[4], 'X');
}

static void test_id_valid(void **state)
{
        char s[JSON_INPUT_ID_MAX + 2];

        (void)state;
        assert_true(json_input_id_valid("a"));
        assert_true(json_input_id_valid("user-1.test_x@example.com"));
        assert_true(json_input_id_valid("ABCXYZabcxyz0189"));
        assert_false(json_input_id_valid(""));
        memset(s, 'a', JSON_INPUT_ID_MAX);
        s[JSON_INPUT_ID_MAX] = '\0';
        assert_true(json_input_id_valid(s));
        s[JSON_INPUT_ID_MAX] = 'a';
        s[JSON_INPUT_ID_MAX + 1] = '\0';
        assert_false(json_input_id_valid(s));

        static const char *const bad[] = { "a/b", "a:b", "a b", " a", "a ", "a\tb", "a\nb", "a+b",
                                           "a%2f", "a*", "a\\b", "a\"b", "{a}", "a,b", "..\x7f",
                                           "caf\xc3\xa9", "\xff", "\x80", NULL };
        for (const char *const *b = bad; *b; b++)
                if (json_input_id_valid(*b))
                        fail_msg("id \"%s\" accepted", *b);
}

/* Parse body (which must be valid) and read field "id" as an identifier. */
static int get_id(const char *body, bool required, const char **ret, char *err, size_t errsz,
                  struct json_object **obj)
{
        char perr[128];

        if (parse(body, obj, perr, sizeof(perr)) != 0)
                fail_msg("test body %s does not parse: %s", body, perr);
        return json_input_get_id(*obj, "id", required, ret, err, errsz);
}

static void expect_id(const char *body, int want_r, const char *want)
{
        struct json_object *o = NULL;
        const char *id = "sentinel";
        char err[256] = "";
        int r = get_id(body, true, &id, err, sizeof(err), &o);

        if (r != want_r)
                fail_msg("body %s: got %d (%s), want %d", body, r, err, want_r);
        if (want)
                assert_string_equal(id, want);
        else
                assert_null(id);
        if (r < 0)
                assert_true(strstr(err, "id ") == err);
        json_put(o);
}

static void test_get_id_valid(void **state)
{
        char body[JSON_INPUT_ID_MAX + 32], id[JSON_INPUT_ID_MAX + 2];

        (void)state;
        expect_id("{\"id\":\"u1\"}", 0, "u1");
        expect_id("{\"id\":\"a.b_c@d-e\"}", 0, "a.b_c@d-e");
        /* 128 characters ok, 129 rejected. */
        memset(id, 'x', JSON_INPUT_ID_MAX);
        id[JSON_INPUT_ID_MAX] = '\0';
        snprintf(body, sizeof(body), "{\"id\":\"%s\"}", id);
        expect_id(body, 0, id);
        snprintf(body, sizeof(body), "{\"id\":\"%sx\"}", id);
        expect_id(body, -EINVAL, NULL);
}

static void test_get_id_bad_chars(void **state)
{
        (void)state;
        expect_id("{\"id\":\"\"}", -EINVAL, NULL);
        expect_id("{\"id\":\"a/b\"}", -EINVAL, NULL);
        expect_id("{\"id\":\"a\\/b\"}", -EINVAL, NULL);
        expect_id("{\"id\":\"a:b\"}", -EINVAL, NULL);
        expect_id("{\"id\":\"a b\"}", -EINVAL, NULL);
        expect_id("{\"id\":\"a\\tb\"}", -EINVAL, NULL);
        expect_id("{\"id\":\"caf\\u00e9\"}", -EINVAL, NULL);
        expect_id("{\"id\":\"caf\xc3\xa9\"}", -EINVAL, NULL);
        expect_id("{\"id\":\"\\ud83d\\ude00\"}", -EINVAL, NULL);
        /* Embedded NUL: a C string view would see just "a". */
        expect_id("{\"id\":\"a\\u0000b\"}", -EINVAL, NULL);
        expect_id("{\"id\":\"a\\u0000\"}", -EINVAL, NULL);
        expect_id("{\"id\":\"\\u0000\"}", -EINVAL, NULL);
}

static void test_get_id_wrong_type(void **state)
{
        static const char *const bodies[] = { "{\"id\":1}", "{\"id\":1.5}", "{\"id\":true}",
                                              "{\"id\":{}}", "{\"id\":[\"a\"]}", NULL };
        (void)state;
        for (const char *const *b = bodies; *b; b++) {
                struct json_object *o = NULL;
                const char *id = "sentinel";
                char err[128] = "";

                assert_int_equal(get_id(*b, true, &id, err, sizeof(err), &o), -EINVAL);
                assert_null(id);
                assert_string_equal(err, "id must be a string");
                json_put(o);
        }
}

static void test_get_id_absent(void **state)
{
        struct json_object *o = NULL;
        const char *id = "sentinel";
        char err[128] = "";

        (void)state;
        assert_int_equal(get_id("{}", true, &id, err, sizeof(err), &o), -ENOENT);
        assert_null(id);
        assert_string_equal(err, "id is required");
        json_put(o);

        err[0] = '\0';
        id = "sentinel";
        assert_int_equal(get_id("{\"other\":\"x\"}", false, &id, err, sizeof(err), &o), 0);
        assert_null(id);
        assert_string_equal(err, "");
        json_put(o);

        /* JSON null counts as absent. */
        id = "sentinel";
        assert_int_equal(get_id("{\"id\":null}", true, &id, err, sizeof(err), &o), -ENOENT);
        assert_null(id);
        json_put(o);
        id = "sentinel";
        assert_int_equal(get_id("{\"id\":null}", false, &id, err, sizeof(err), &o), 0);
        assert_null(id);
        json_put(o);
}

static int get_mode(const char *body, const char **ret, char *err, size_t errsz)
{
        struct json_object *o = NULL;
        char perr[128];
        int r;

        if (parse(body, &o, perr, sizeof(perr)) != 0)
                fail_msg("test body %s does not parse: %s", body, perr);
        r = json_input_get_enum(o, "mode", lease_modes, ret, err, errsz);
        json_put(o);
        return r;
}

static void test_get_enum_modes(void **state)
{
        char body[128], err[128];
        const char *mode;

        (void)state;
        for (size_t i = 0; lease_modes[i]; i++) {
                snprintf(body, sizeof(body), "{\"mode\":\"%s\"}", lease_modes[i]);
                mode = NULL;
                assert_int_equal(get_mode(body, &mode, err, sizeof(err)), 0);
                /* The result points at the static table, so it outlives the object. */
                assert_ptr_equal(mode, lease_modes[i]);
        }
        assert_string_equal(lease_modes[0], "exclusive");
        assert_string_equal(lease_modes[1], "user_shared");
        assert_string_equal(lease_modes[2], "multi_user_shared");
        assert_null(lease_modes[3]);

        mode = "sentinel";
        assert_int_equal(get_mode("{}", &mode, err, sizeof(err)), 0);
        assert_null(mode);
        mode = "sentinel";
        assert_int_equal(get_mode("{\"mode\":null}", &mode, err, sizeof(err)), 0);
        assert_null(mode);
}

static void test_get_enum_rejects(void **state)
{
        static const char *const bodies[] = {
                "{\"mode\":\"Exclusive\"}", "{\"mode\":\"exclusive \"}", "{\"mode\":\"\"}",
                "{\"mode\":\"shared\"}",    "{\"mode\":1}",              "{\"mode\":true}",
                "{\"mode\":[\"exclusive\"]}", "{\"mode\":{}}",
                "{\"mode\":\"exclusive\\u0000x\"}", NULL,
        };
        (void)state;
        for (const char *const *b = bodies; *b; b++) {
                const char *mode = "sentinel";
                char err[128] = "";

                assert_int_equal(get_mode(*b, &mode, err, sizeof(err)), -EINVAL);
                assert_null(mode);
                assert_string_equal(err,
                                    "mode must be one of exclusive, user_shared, multi_user_shared");
        }
}

static void test_get_enum_reasons(void **state)
{
        struct json_object *o = NULL;
        const char *reason = NULL;
        char err[128] = "";

        (void)state;
        assert_string_equal(lease_release_reasons[0], "idle");
        assert_string_equal(lease_release_reasons[1], "deleted");
        assert_null(lease_release_reasons[2]);
        assert_int_equal(parse("{\"reason\":\"deleted\"}", &o, err, sizeof(err)), 0);
        assert_int_equal(json_input_get_enum(o, "reason", lease_release_reasons, &reason, err,
                                             sizeof(err)),
                         0);
        assert_ptr_equal(reason, lease_release_reasons[1]);
        json_put(o);
        assert_int_equal(parse("{\"reason\":\"gone\"}", &o, err, sizeof(err)), 0);
        assert_int_equal(json_input_get_enum(o, "reason", lease_release_reasons, &reason, err,
                                             sizeof(err)),
                         -EINVAL);
        assert_string_equal(err, "reason must be one of idle, deleted");
        json_put(o);
}

static void test_get_enum_small_err_buffer(void **state)
{
        char err[40];
        const char *mode;

        (void)state;
        /* The message is longer than the buffer: truncated, never overrun. */
        for (size_t size = 1; size < 30; size++) {
                memset(err, 'X', sizeof(err));
                assert_int_equal(get_mode("{\"mode\":\"x\"}", &mode, err, size), -EINVAL);
                assert_int_equal(strnlen(err, size), size - 1);
                assert_int_equal(err[size], 'X');
        }
}

static void test_put_null(void **state)
{
        (void)state;
        json_put(NULL);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse_valid),
                cmocka_unit_test(test_parse_empty_body),
                cmocka_unit_test(test_parse_nul_byte),
                cmocka_unit_test(test_parse_len_bounds),
                cmocka_unit_test(test_parse_trailing_garbage),
                cmocka_unit_test(test_parse_not_object),
                cmocka_unit_test(test_parse_invalid_json),
                cmocka_unit_test(test_parse_depth_limit),
                cmocka_unit_test(test_parse_depth_param),
                cmocka_unit_test(test_parse_big_numbers),
                cmocka_unit_test(test_parse_small_err_buffer),
                cmocka_unit_test(test_id_valid),
                cmocka_unit_test(test_get_id_valid),
                cmocka_unit_test(test_get_id_bad_chars),
                cmocka_unit_test(test_get_id_wrong_type),
                cmocka_unit_test(test_get_id_absent),
                cmocka_unit_test(test_get_enum_modes),
                cmocka_unit_test(test_get_enum_rejects),
                cmocka_unit_test(test_get_enum_reasons),
                cmocka_unit_test(test_get_enum_small_err_buffer),
                cmocka_unit_test(test_put_null),
        };
        return cmocka_run_group_tests_name("json_input", tests, NULL, NULL);
}
