/* Unit tests for pool_member_lost (lib/sandbox/pool.c), the watch's way of
 * taking a warm-pool member whose container ended or went out of the pool at
 * once: only a member (wpool.lua 'member') whose container is lost (inspect:
 * gone, exited, missing) is dropped ('drop') and its container removed by
 * the ref the script gave back; a member that runs, or whose inspect fails
 * otherwise (the backend away: no answer), stays; a member a claim took
 * meanwhile ('drop' false) is not removed; a sandbox that is no member costs
 * no inspect. Redis and the provider are replaced at the link seam. */
/* WRAP: -Wl,--wrap=redis_conn_script -Wl,--wrap=provider_inspect -Wl,--wrap=provider_remove */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sandbox/pool.h"

#define SID "0123456789abcdef0123456789abcdef"

static struct {
        int member_r;     /* the script's result: <0 an error, else 'member' says this */
        long long member; /* 1 | 0 */
        int drop_kind;    /* 0: a ref string, 1: false (claimed or gone) */
        const char *drop_ref;
        int inspect_r;
        enum sandbox_run_state state;
        /* what happened */
        char ops[4][16];
        int n_ops;
        int inspects;
        char inspected[64];
        char removed[64];
        int removes;
} f;

int __wrap_redis_conn_script(struct redis_conn *c, enum lua_script_id id, int argc,
                             const char **argv, redisReply **ret);
int __wrap_redis_conn_script(struct redis_conn *c, enum lua_script_id id, int argc,
                             const char **argv, redisReply **ret)
{
        redisReply *r;

        (void)c;
        assert_int_equal(id, LUA_WPOOL);
        assert_int_equal(argc, 2);
        assert_string_equal(argv[1], SID);
        assert_true(f.n_ops < 4);
        snprintf(f.ops[f.n_ops++], sizeof(f.ops[0]), "%s", argv[0]);
        if (!strcmp(argv[0], "member") && f.member_r < 0)
                return f.member_r;
        r = calloc(1, sizeof(*r));
        assert_non_null(r);
        if (!strcmp(argv[0], "member")) {
                r->type = REDIS_REPLY_INTEGER;
                r->integer = f.member;
        } else {
                assert_string_equal(argv[0], "drop");
                if (f.drop_kind == 1) {
                        r->type = REDIS_REPLY_NIL;
                } else {
                        r->type = REDIS_REPLY_STRING;
                        r->str = strdup(f.drop_ref);
                        r->len = strlen(f.drop_ref);
                }
        }
        *ret = r;
        return 0;
}

int __wrap_provider_inspect(struct provider *p, const char *ref, struct sandbox_info *ret,
                            char *ret_err);
int __wrap_provider_inspect(struct provider *p, const char *ref, struct sandbox_info *ret,
                            char *ret_err)
{
        (void)p;
        f.inspects++;
        snprintf(f.inspected, sizeof(f.inspected), "%s", ref);
        if (f.inspect_r < 0) {
                snprintf(ret_err, PROVIDER_ERR_MAX, "backend: away");
                return f.inspect_r;
        }
        memset(ret, 0, sizeof(*ret));
        ret->state = f.state;
        return 0;
}

int __wrap_provider_remove(struct provider *p, const char *ref, char *ret_err);
int __wrap_provider_remove(struct provider *p, const char *ref, char *ret_err)
{
        (void)p;
        (void)ret_err;
        f.removes++;
        snprintf(f.removed, sizeof(f.removed), "%s", ref);
        return 0;
}

static int setup(void **state)
{
        (void)state;
        memset(&f, 0, sizeof(f));
        f.member = 1;
        f.drop_ref = "sb-" SID;
        f.state = SANDBOX_RUN_RUNNING;
        return 0;
}

static void test_not_a_member_costs_no_inspect(void **state)
{
        (void)state;
        f.member = 0;
        assert_int_equal(pool_member_lost(NULL, NULL, SID), 0);
        assert_int_equal(f.n_ops, 1);
        assert_string_equal(f.ops[0], "member");
        assert_int_equal(f.inspects, 0);
        assert_int_equal(f.removes, 0);
}

static void test_member_gone_is_dropped_and_removed(void **state)
{
        (void)state;
        f.inspect_r = -ENOENT;
        assert_int_equal(pool_member_lost(NULL, NULL, SID), 1);
        assert_string_equal(f.inspected, "sb-" SID);
        assert_int_equal(f.n_ops, 2);
        assert_string_equal(f.ops[1], "drop");
        assert_int_equal(f.removes, 1);
        assert_string_equal(f.removed, "sb-" SID);
}

static void test_member_exited_or_missing_is_dropped(void **state)
{
        (void)state;
        f.state = SANDBOX_RUN_EXITED;
        assert_int_equal(pool_member_lost(NULL, NULL, SID), 1);
        assert_int_equal(f.removes, 1);
        setup(state);
        f.state = SANDBOX_RUN_MISSING;
        assert_int_equal(pool_member_lost(NULL, NULL, SID), 1);
        assert_int_equal(f.removes, 1);
}

static void test_member_that_runs_stays(void **state)
{
        (void)state;
        assert_int_equal(pool_member_lost(NULL, NULL, SID), 0); /* a stale event */
        assert_int_equal(f.inspects, 1);
        assert_int_equal(f.n_ops, 1);
        assert_int_equal(f.removes, 0);
}

static void test_no_answer_from_the_backend_is_no_loss(void **state)
{
        (void)state;
        f.inspect_r = -ECONNREFUSED;
        assert_int_equal(pool_member_lost(NULL, NULL, SID), 0);
        assert_int_equal(f.n_ops, 1);
        assert_int_equal(f.removes, 0);
}

static void test_claimed_meanwhile_is_not_removed(void **state)
{
        (void)state;
        f.inspect_r = -ENOENT;
        f.drop_kind = 1; /* a claim took it between 'member' and 'drop': the claim's now */
        assert_int_equal(pool_member_lost(NULL, NULL, SID), 0);
        assert_int_equal(f.n_ops, 2);
        assert_int_equal(f.removes, 0);
}

static void test_redis_error_is_returned(void **state)
{
        (void)state;
        f.member_r = -EIO;
        assert_int_equal(pool_member_lost(NULL, NULL, SID), -EIO);
        assert_int_equal(f.inspects, 0);
        assert_int_equal(f.removes, 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup(test_not_a_member_costs_no_inspect, setup),
                cmocka_unit_test_setup(test_member_gone_is_dropped_and_removed, setup),
                cmocka_unit_test_setup(test_member_exited_or_missing_is_dropped, setup),
                cmocka_unit_test_setup(test_member_that_runs_stays, setup),
                cmocka_unit_test_setup(test_no_answer_from_the_backend_is_no_loss, setup),
                cmocka_unit_test_setup(test_claimed_meanwhile_is_not_removed, setup),
                cmocka_unit_test_setup(test_redis_error_is_returned, setup),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
