/* Unit tests for lib/store/exec_store.c: execId validation (alone and as the
 * "execId" of a request body), the arguments each operation hands its
 * script (binary output byte-exact, streams cut at EXEC_RECORD_MAX_OUTPUT
 * with their flags, the running record's expiry), and the mapping of
 * script replies to outcomes, malformed ones included. Redis is replaced at
 * the link seam by the wraps below; replies are built by hand. */
/* WRAP: -Wl,--wrap=redis_conn_script_tagged -Wl,--wrap=redis_conn_script_bin */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/config.h"
#include "store/exec_store.h"
#include "core/json_input.h"
#include "store/redis_conn.h"
#include "reply_fake.h"

/* ---- the fake Redis: records the last call, answers the reply set ---- */

#define MAX_ARGS 16

static struct {
        int calls;
        enum lua_script_id id;
        int argc;
        char *argv[MAX_ARGS];
        size_t lens[MAX_ARGS];
        redisReply *reply; /* handed out (then owned by the caller) */
        int r;
} fake;

static void fake_forget(void)
{
        for (int i = 0; i < MAX_ARGS; i++)
                free(fake.argv[i]);
        memset(fake.argv, 0, sizeof(fake.argv));
}

static int fake_setup(void **state)
{
        (void)state;
        fake_forget();
        memset(&fake, 0, sizeof(fake));
        return 0;
}

static int fake_teardown(void **state)
{
        (void)state;
        fake_forget();
        reply_free(fake.reply);
        fake.reply = NULL;
        return 0;
}

static int fake_call(enum lua_script_id id, int argc, const char **argv, const size_t *lens,
                     redisReply **ret)
{
        fake_forget();
        fake.calls++;
        fake.id = id;
        fake.argc = argc;
        assert_true(argc <= MAX_ARGS);
        for (int i = 0; i < argc; i++) {
                fake.lens[i] = lens ? lens[i] : strlen(argv[i]);
                fake.argv[i] = malloc(fake.lens[i] + 1);
                assert_non_null(fake.argv[i]);
                memcpy(fake.argv[i], argv[i], fake.lens[i]);
                fake.argv[i][fake.lens[i]] = '\0';
        }
        *ret = fake.reply;
        fake.reply = NULL;
        return fake.r;
}

int __wrap_redis_conn_script_tagged(struct redis_conn *c, enum lua_script_id id, int argc,
                                    const char **argv, redisReply **ret);
int __wrap_redis_conn_script_tagged(struct redis_conn *c, enum lua_script_id id, int argc,
                                    const char **argv, redisReply **ret)
{
        (void)c;
        return fake_call(id, argc, argv, NULL, ret);
}

int __wrap_redis_conn_script_bin(struct redis_conn *c, enum lua_script_id id, int argc,
                                 const char **argv, const size_t *lens, redisReply **ret);
int __wrap_redis_conn_script_bin(struct redis_conn *c, enum lua_script_id id, int argc,
                                 const char **argv, const size_t *lens, redisReply **ret)
{
        (void)c;
        return fake_call(id, argc, argv, lens, ret);
}

static void arg_is(int i, const char *want)
{
        assert_true(i < fake.argc);
        assert_string_equal(fake.argv[i], want);
        assert_int_equal(fake.lens[i], strlen(want));
}

static const struct exec_store_key KEY = { .tenant = "acme",
                                           .lease_id = "0123456789abcdef0123456789abcdef",
                                           .sandbox_id = "fedcba9876543210fedcba9876543210",
                                           .exec_id = "call-0001" };

static struct broker_config cfg(void)
{
        struct broker_config c;

        memset(&c, 0, sizeof(c));
        c.exec_records_per_lease = 16;
        c.exec_record_max_output = 1024;
        c.exec_record_ttl_ms = 600000;
        return c;
}

/* ---- execId ---- */

static void test_id_valid(void **state)
{
        static const char *const ok[] = {
                "abcdefgh",
                "ABCDEFGH",
                "01234567",
                "call_0001-x",
                "--------",
                "________",
                "0123456789012345678901234567890123456789012345678901234567890123"
        };
        static const char *const bad[] = {
                "",
                "abcdefg",
                "abc.defgh",
                "abcdefg/",
                "abc defgh",
                "abcdefgh\n",
                "\xc3\xa9"
                "abcdefgh",
                "abcd%20efgh",
                "../../etc",
                "abcdefgh:",
                "abcdefgh*",
                "01234567890123456789012345678901234567890123456789012345678901234"
        };
        (void)state;
        for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
                if (!exec_store_id_valid(ok[i]))
                        fail_msg("'%s' refused", ok[i]);
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                if (exec_store_id_valid(bad[i]))
                        fail_msg("'%s' accepted", bad[i]);
}

static int from_json(const char *text, const char **ret, char *err)
{
        struct json_object *o = NULL;
        char perr[128];
        int r;

        assert_int_equal(json_input_parse_object(text, strlen(text), 8, &o, perr, sizeof(perr)), 0);
        err[0] = '\0';
        r = exec_store_id_from_json(o, ret, err, 128);
        /* a borrowed id must outlive the call only as long as the body */
        if (r == 0 && *ret) {
                static char copy[80];
                snprintf(copy, sizeof(copy), "%s", *ret);
                *ret = copy;
        }
        json_put(o);
        return r;
}

static void test_id_from_json(void **state)
{
        static const char *const bad[] = {
                "{\"execId\": 5}",
                "{\"execId\": true}",
                "{\"execId\": [\"abcdefgh\"]}",
                "{\"execId\": {}}",
                "{\"execId\": \"short\"}",
                "{\"execId\": \"\"}",
                "{\"execId\": \"abcdefgh\\u0000xyz\"}",
                "{\"execId\": \"abcdefgh\\u00e9\"}",
                "{\"execId\": "
                "\"01234567890123456789012345678901234567890123456789012345678901234\"}",
        };
        const char *id = "x";
        char err[128];

        (void)state;
        assert_int_equal(from_json("{\"cmd\": \"true\"}", &id, err), 0);
        assert_null(id);
        id = "x";
        assert_int_equal(from_json("{\"execId\": null}", &id, err), 0);
        assert_null(id);
        assert_int_equal(from_json("{\"execId\": \"call-0001\"}", &id, err), 0);
        assert_string_equal(id, "call-0001");
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                id = "x";
                if (from_json(bad[i], &id, err) != -EINVAL)
                        fail_msg("%s accepted", bad[i]);
                assert_null(id);
                assert_non_null(strstr(err, "execId"));
                assert_non_null(strstr(err, "[A-Za-z0-9_-]"));
        }
}

/* ---- create ---- */

static void test_create_args_and_outcomes(void **state)
{
        struct broker_config c = cfg();
        struct exec_store_outcome o;

        (void)state;
        fake.reply = r_arr(2, r_str("created"), r_int(1700000000123));
        assert_int_equal(exec_store_create(NULL, &c, &KEY, 5000, &o), 0);
        assert_int_equal(fake.id, LUA_EXEC_CREATE);
        assert_int_equal(fake.argc, 6);
        arg_is(0, KEY.lease_id);
        arg_is(1, KEY.exec_id);
        arg_is(2, "acme");
        arg_is(3, KEY.sandbox_id);
        arg_is(4, "16");
        arg_is(5, "65000"); /* the command's timeout + EXEC_STORE_RUNNING_GRACE_MS */
        assert_int_equal(o.kind, EXEC_STORE_CREATED);
        assert_int_equal(o.started_at, 1700000000123);
        exec_store_outcome_clear(&o);

        fake.reply = r_arr(2, r_str("created"), r_str("1700000000124"));
        assert_int_equal(exec_store_create(NULL, &c, &KEY, 86400000, &o), 0);
        arg_is(5, "86460000");
        assert_int_equal(o.started_at, 1700000000124);

        fake.reply = r_arr(1, r_str("inuse"));
        assert_int_equal(exec_store_create(NULL, &c, &KEY, 5000, &o), 0);
        assert_int_equal(o.kind, EXEC_STORE_IN_USE);
        fake.reply = r_arr(2, r_str("full"), r_int(16));
        assert_int_equal(exec_store_create(NULL, &c, &KEY, 5000, &o), 0);
        assert_int_equal(o.kind, EXEC_STORE_FULL);
        assert_int_equal(o.running, 16);
        fake.reply = r_arr(1, r_str("notfound"));
        assert_int_equal(exec_store_create(NULL, &c, &KEY, 5000, &o), 0);
        assert_int_equal(o.kind, EXEC_STORE_NOT_FOUND);
}

static void test_create_malformed(void **state)
{
        struct broker_config c = cfg();
        struct exec_store_outcome o;

        (void)state;
        fake.reply = r_arr(1, r_str("created"));
        assert_int_equal(exec_store_create(NULL, &c, &KEY, 5000, &o), -EPROTO);
        fake.reply = r_arr(2, r_str("created"), r_str("soon"));
        assert_int_equal(exec_store_create(NULL, &c, &KEY, 5000, &o), -EPROTO);
        fake.reply = r_arr(1, r_str("full"));
        assert_int_equal(exec_store_create(NULL, &c, &KEY, 5000, &o), -EPROTO);
        fake.reply = r_arr(2, r_str("inuse"), r_nil());
        assert_int_equal(exec_store_create(NULL, &c, &KEY, 5000, &o), -EPROTO);
        fake.reply = r_arr(1, r_str("whatever"));
        assert_int_equal(exec_store_create(NULL, &c, &KEY, 5000, &o), -EPROTO);
        /* Redis unreachable: its error, nothing mapped */
        fake.r = -EIO;
        assert_int_equal(exec_store_create(NULL, &c, &KEY, 5000, &o), -EIO);
}

/* ---- progress, finish, fail ---- */

static void test_progress_binary(void **state)
{
        static const char tail[] = "line 1\n\0\xff\xfe line 2\n";
        char *big;

        (void)state;
        fake.reply = r_int(1);
        assert_int_equal(exec_store_progress(NULL, &KEY, tail, sizeof(tail) - 1, 123456789012LL), 1);
        assert_int_equal(fake.id, LUA_EXEC_PROGRESS);
        assert_int_equal(fake.argc, 4);
        arg_is(0, KEY.lease_id);
        arg_is(1, KEY.exec_id);
        assert_int_equal(fake.lens[2], sizeof(tail) - 1);
        assert_memory_equal(fake.argv[2], tail, sizeof(tail) - 1);
        arg_is(3, "123456789012");
        fake.reply = r_int(0);
        assert_int_equal(exec_store_progress(NULL, &KEY, "", 0, 0), 0);
        assert_int_equal(fake.lens[2], 0);
        fake.reply = r_str("1");
        assert_int_equal(exec_store_progress(NULL, &KEY, "x", 1, 1), -EPROTO);
        /* never more than a tail */
        big = calloc(1, EXEC_STORE_TAIL_MAX + 1);
        assert_non_null(big);
        fake.calls = 0;
        assert_int_equal(exec_store_progress(NULL, &KEY, big, EXEC_STORE_TAIL_MAX + 1, 1), -E2BIG);
        assert_int_equal(fake.calls, 0);
        free(big);
}

static void test_finish_cuts_streams(void **state)
{
        struct broker_config c = cfg();
        char out[2000], err[10] = "e\0rr\xff\n..";
        struct exec_result res = {
                .exit_code = 3, .out = out, .out_len = sizeof(out), .err = err, .err_len = sizeof(err)
        };

        (void)state;
        memset(out, 'o', sizeof(out));
        fake.reply = r_int(1);
        assert_int_equal(exec_store_finish(NULL, &c, &KEY, &res, 1234), 1);
        assert_int_equal(fake.id, LUA_EXEC_FINISH);
        assert_int_equal(fake.argc, 12);
        arg_is(0, KEY.lease_id);
        arg_is(1, KEY.exec_id);
        arg_is(2, "done");
        arg_is(3, "600000");
        arg_is(5, "3");
        assert_int_equal(fake.lens[6], 1024); /* cut at EXEC_RECORD_MAX_OUTPUT */
        assert_memory_equal(fake.argv[6], out, 1024);
        assert_int_equal(fake.lens[7], sizeof(err));
        assert_memory_equal(fake.argv[7], err, sizeof(err));
        arg_is(8, "1");
        arg_is(9, "0");
        arg_is(10, "0");
        arg_is(11, "1234");

        /* exactly the cap is not cut; a stream the provider cut stays cut */
        res.out_len = 1024;
        res.err_truncated = true;
        res.timed_out = true;
        res.exit_code = -1;
        fake.reply = r_int(0);
        assert_int_equal(exec_store_finish(NULL, &c, &KEY, &res, 0), 0);
        assert_int_equal(fake.lens[6], 1024);
        arg_is(5, "-1");
        arg_is(8, "0");
        arg_is(9, "1");
        arg_is(10, "1");

        /* no output at all */
        memset(&res, 0, sizeof(res));
        fake.reply = r_int(1);
        assert_int_equal(exec_store_finish(NULL, &c, &KEY, &res, 7), 1);
        assert_int_equal(fake.lens[6], 0);
        assert_int_equal(fake.lens[7], 0);
        arg_is(8, "0");
        arg_is(9, "0");
}

static void test_fail(void **state)
{
        struct broker_config c = cfg();
        char longmsg[2000];

        (void)state;
        fake.reply = r_int(1);
        assert_int_equal(exec_store_fail(NULL, &c, &KEY, "exec: the sandbox's container is gone"), 1);
        assert_int_equal(fake.id, LUA_EXEC_FINISH);
        arg_is(2, "failed");
        arg_is(3, "600000");
        arg_is(4, "exec: the sandbox's container is gone");
        memset(longmsg, 'm', sizeof(longmsg) - 1);
        longmsg[sizeof(longmsg) - 1] = '\0';
        fake.reply = r_int(1);
        assert_int_equal(exec_store_fail(NULL, &c, &KEY, longmsg), 1);
        assert_int_equal(fake.lens[4], EXEC_STORE_MESSAGE_MAX - 1);
        fake.reply = r_nil();
        assert_int_equal(exec_store_fail(NULL, &c, &KEY, "x"), -EPROTO);
}

/* ---- get ---- */

/* {state, startedAt, output, outputBytes, exitCode, stdout, stderr,
 *  stdoutTruncated, stderrTruncated, timedOut, durationMs, message} */
static redisReply *rec(redisReply *st, redisReply *started, redisReply *output, redisReply *obytes,
                       redisReply *code, redisReply *out, redisReply *err, redisReply *outcut,
                       redisReply *errcut, redisReply *timed, redisReply *dur, redisReply *msg)
{
        return r_arr(12, st, started, output, obytes, code, out, err, outcut, errcut, timed, dur,
                     msg);
}

static void test_get_states(void **state)
{
        struct exec_store_outcome o;

        (void)state;
        fake.reply = rec(r_str("running"), r_str("1700000000000"), r_bytes("ab\0c\xff", 5),
                         r_str("99"), r_nil(), r_nil(), r_nil(), r_nil(), r_nil(), r_nil(), r_nil(),
                         r_nil());
        assert_int_equal(exec_store_get(NULL, &KEY, &o), 0);
        assert_int_equal(fake.id, LUA_EXEC_GET);
        assert_int_equal(fake.argc, 4);
        arg_is(0, KEY.lease_id);
        arg_is(1, KEY.exec_id);
        arg_is(2, "acme");
        arg_is(3, KEY.sandbox_id);
        assert_int_equal(o.kind, EXEC_STORE_RUNNING);
        assert_int_equal(o.started_at, 1700000000000);
        assert_int_equal(o.output_len, 5);
        assert_memory_equal(o.output, "ab\0c\xff", 5);
        assert_int_equal(o.output_bytes, 99);
        exec_store_outcome_clear(&o);

        fake.reply = rec(r_str("done"), r_str("1700000000000"), r_nil(), r_nil(), r_str("137"),
                         r_bytes("o\0ut", 4), r_str("err"), r_str("1"), r_str("0"), r_str("1"),
                         r_str("1500"), r_nil());
        assert_int_equal(exec_store_get(NULL, &KEY, &o), 0);
        assert_int_equal(o.kind, EXEC_STORE_DONE);
        assert_int_equal(o.res.exit_code, 137);
        assert_int_equal(o.res.out_len, 4);
        assert_memory_equal(o.res.out, "o\0ut", 4);
        assert_string_equal(o.res.err, "err");
        assert_true(o.res.out_truncated);
        assert_false(o.res.err_truncated);
        assert_true(o.res.timed_out);
        assert_int_equal(o.duration_ms, 1500);
        exec_store_outcome_clear(&o);

        /* a timed-out command without an exit code, empty streams */
        fake.reply = rec(r_str("done"), r_str("1"), r_nil(), r_nil(), r_str("-1"), r_str(""),
                         r_str(""), r_str("0"), r_str("0"), r_str("1"), r_str("0"), r_nil());
        assert_int_equal(exec_store_get(NULL, &KEY, &o), 0);
        assert_int_equal(o.res.exit_code, -1);
        assert_string_equal(o.res.out, "");
        assert_int_equal(o.res.out_len, 0);
        exec_store_outcome_clear(&o);

        fake.reply = rec(r_str("failed"), r_str("1"), r_nil(), r_nil(), r_nil(), r_nil(), r_nil(),
                         r_nil(), r_nil(), r_nil(), r_nil(),
                         r_str("exec: the sandbox provider timed out"));
        assert_int_equal(exec_store_get(NULL, &KEY, &o), 0);
        assert_int_equal(o.kind, EXEC_STORE_FAILED);
        assert_string_equal(o.message, "exec: the sandbox provider timed out");
        exec_store_outcome_clear(&o);

        fake.reply = r_arr(1, r_str("notfound"));
        assert_int_equal(exec_store_get(NULL, &KEY, &o), 0);
        assert_int_equal(o.kind, EXEC_STORE_NOT_FOUND);
}

static void test_get_malformed(void **state)
{
        struct exec_store_outcome o;
        redisReply *bad[] = {
                r_arr(2, r_str("notfound"), r_nil()),
                r_arr(3, r_str("running"), r_str("1"), r_str("")),
                rec(r_str("running"), r_nil(), r_str(""), r_str("0"), r_nil(), r_nil(), r_nil(),
                    r_nil(), r_nil(), r_nil(), r_nil(), r_nil()),
                rec(r_str("running"), r_str("1"), r_str(""), r_str("many"), r_nil(), r_nil(),
                    r_nil(), r_nil(), r_nil(), r_nil(), r_nil(), r_nil()),
                rec(r_str("done"), r_str("1"), r_nil(), r_nil(), r_nil(), r_str(""), r_str(""),
                    r_str("0"), r_str("0"), r_str("0"), r_str("1"), r_nil()),
                rec(r_str("done"), r_str("1"), r_nil(), r_nil(), r_str("3x"), r_str(""), r_str(""),
                    r_str("0"), r_str("0"), r_str("0"), r_str("1"), r_nil()),
                rec(r_str("done"), r_str("1"), r_nil(), r_nil(), r_str("99999999999"), r_str(""),
                    r_str(""), r_str("0"), r_str("0"), r_str("0"), r_str("1"), r_nil()),
                rec(r_str("done"), r_str("1"), r_nil(), r_nil(), r_str("0"), r_str(""), r_str(""),
                    r_str("0"), r_str("0"), r_str("0"), r_nil(), r_nil()),
                rec(r_str("paused"), r_str("1"), r_nil(), r_nil(), r_nil(), r_nil(), r_nil(),
                    r_nil(), r_nil(), r_nil(), r_nil(), r_nil()),
        };

        (void)state;
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                fake.reply = bad[i];
                if (exec_store_get(NULL, &KEY, &o) != -EPROTO)
                        fail_msg("malformed reply %zu accepted", i);
                /* nothing left owned */
                assert_null(o.output);
                assert_null(o.res.out);
                assert_null(o.res.err);
        }
}

#define FAKE_TEST(f) cmocka_unit_test_setup_teardown(f, fake_setup, fake_teardown)

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_id_valid),
                cmocka_unit_test(test_id_from_json),
                FAKE_TEST(test_create_args_and_outcomes),
                FAKE_TEST(test_create_malformed),
                FAKE_TEST(test_progress_binary),
                FAKE_TEST(test_finish_cuts_streams),
                FAKE_TEST(test_fail),
                FAKE_TEST(test_get_states),
                FAKE_TEST(test_get_malformed),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
