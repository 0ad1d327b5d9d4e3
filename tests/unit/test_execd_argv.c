/* Unit tests for fcgi/execd_argv.c: a RunCommandRequest's command or argv,
 * exactly one of them, argv bounded in count and bytes, strings with NUL
 * refused, and every other string (spaces, quotes, $(...), newlines, a
 * leading "-") taken as it is. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "execd_argv.h"

static struct json_object *body_of(const char *text)
{
        struct json_object *o = json_tokener_parse(text);

        assert_non_null(o);
        return o;
}

static int parse(const char *text, struct execd_cmd_input *in, char *err)
{
        struct json_object *o = body_of(text);
        int r = execd_argv_parse(o, in, err, 160);

        json_object_put(o);
        in->command = NULL; /* borrowed from o: gone */
        return r;
}

static void test_command_or_argv(void **state)
{
        struct json_object *o;
        struct execd_cmd_input in;
        char err[160];

        (void)state;
        o = body_of("{\"command\":\"echo $HOME | wc\",\"argv\":null}");
        assert_int_equal(execd_argv_parse(o, &in, err, sizeof(err)), 0);
        assert_string_equal(in.command, "echo $HOME | wc");
        assert_int_equal(in.argc, 0);
        json_object_put(o);

        o = body_of("{\"argv\":[\"printf\",\"%s|\",\"a "
                    "b\",\"'q'\",\"\\\"d\\\"\",\"$(id)\",\"x\\ny\",\"\",\"-n\",\"*\"],"
                    "\"command\":null}");
        assert_int_equal(execd_argv_parse(o, &in, err, sizeof(err)), 0);
        assert_null(in.command);
        assert_int_equal(in.argc, 10);
        assert_string_equal(in.argv[2], "a b");
        assert_string_equal(in.argv[3], "'q'");
        assert_string_equal(in.argv[4], "\"d\"");
        assert_string_equal(in.argv[5], "$(id)");
        assert_string_equal(in.argv[6], "x\ny");
        assert_string_equal(in.argv[7], "");
        assert_null(in.argv[10]);
        {
                char *t = execd_argv_text(&in);
                assert_string_equal(t, "printf %s| a b 'q' \"d\" $(id) x\ny  -n *");
                free(t);
        }
        json_object_put(o);
        /* a program whose name starts with "-" is still argv[0] */
        o = body_of("{\"argv\":[\"-dash\"]}");
        assert_int_equal(execd_argv_parse(o, &in, err, sizeof(err)), 0);
        assert_int_equal(in.argc, 1);
        json_object_put(o);
}

static void test_refused(void **state)
{
        struct execd_cmd_input in;
        char err[160];

        (void)state;
        assert_int_equal(parse("{\"command\":\"id\",\"argv\":[\"id\"]}", &in, err), -EINVAL);
        assert_non_null(strstr(err, "not both"));
        assert_int_equal(parse("{}", &in, err), -EINVAL);
        assert_non_null(strstr(err, "required"));
        assert_int_equal(parse("{\"command\":null,\"argv\":null}", &in, err), -EINVAL);
        assert_int_equal(parse("{\"command\":\"\"}", &in, err), -EINVAL);
        assert_int_equal(parse("{\"command\":[\"id\"]}", &in, err), -EINVAL);
        assert_int_equal(parse("{\"command\":\"a\\u0000b\"}", &in, err), -EINVAL);
        assert_int_equal(parse("{\"argv\":[]}", &in, err), -EINVAL);
        assert_int_equal(parse("{\"argv\":\"id\"}", &in, err), -EINVAL);
        assert_int_equal(parse("{\"argv\":[\"\"]}", &in, err), -EINVAL);
        assert_int_equal(parse("{\"argv\":[\"id\",1]}", &in, err), -EINVAL);
        assert_non_null(strstr(err, "argv[1]"));
        assert_int_equal(parse("{\"argv\":[\"id\",null]}", &in, err), -EINVAL);
        assert_int_equal(parse("{\"argv\":[\"id\",\"a\\u0000b\"]}", &in, err), -EINVAL);
        assert_int_equal(in.argc, 0); /* nothing half-filled is left */
}

/* the caps: EXECD_ARGV_MAX entries, EXECD_ARGV_MAX_BYTES bytes (NULs
 * counted), each at its bound and one past it */
static void test_caps(void **state)
{
        struct json_object *o = json_object_new_object(), *a = json_object_new_array();
        struct execd_cmd_input in;
        char err[160], *big;

        (void)state;
        json_object_object_add(o, "argv", a);
        for (int i = 0; i < EXECD_ARGV_MAX; i++)
                json_object_array_add(a, json_object_new_string("x"));
        assert_int_equal(execd_argv_parse(o, &in, err, sizeof(err)), 0);
        assert_int_equal(in.argc, EXECD_ARGV_MAX);
        json_object_array_add(a, json_object_new_string("x"));
        assert_int_equal(execd_argv_parse(o, &in, err, sizeof(err)), -EINVAL);
        assert_non_null(strstr(err, "1 to 256"));
        json_object_put(o);

        /* two strings: "echo" (5 with its NUL) and one that fills the rest */
        big = malloc(EXECD_ARGV_MAX_BYTES);
        assert_non_null(big);
        memset(big, 'b', EXECD_ARGV_MAX_BYTES - 5 - 1);
        big[EXECD_ARGV_MAX_BYTES - 5 - 1] = '\0';
        o = json_object_new_object();
        a = json_object_new_array();
        json_object_object_add(o, "argv", a);
        json_object_array_add(a, json_object_new_string("echo"));
        json_object_array_add(a, json_object_new_string(big));
        assert_int_equal(execd_argv_parse(o, &in, err, sizeof(err)), 0);
        big[EXECD_ARGV_MAX_BYTES - 5 - 1] = 'b';
        json_object_array_put_idx(a, 1, json_object_new_string_len(big, EXECD_ARGV_MAX_BYTES - 5));
        assert_int_equal(execd_argv_parse(o, &in, err, sizeof(err)), -EINVAL);
        assert_non_null(strstr(err, "bytes"));
        assert_int_equal(in.argc, 0);
        json_object_put(o);
        free(big);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_command_or_argv),
                cmocka_unit_test(test_refused),
                cmocka_unit_test(test_caps),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
