/* Unit tests for the create side of lib/sandbox/osb_store.c: what
 * osb_store_create hands osb_create.lua (the Idempotency-Key, its body's
 * fingerprint, the key's TTL and cap, the unanswered deadline, at their
 * ARGV places), the mapping of every reply to an outcome (malformed ones
 * included), the key a create's undo passes to osb_delete.lua, and the
 * unanswered reaper's callbacks. Redis is replaced at the link seam by the
 * wraps below; replies are built by hand. */
/* WRAP: -Wl,--wrap=redis_conn_script_tagged -Wl,--wrap=redis_conn_script */
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
#include "sandbox/osb_store.h"
#include "store/redis_conn.h"
#include "reply_fake.h"

/* ---- the fake Redis ---- */

#define MAX_ARGS 48

static struct {
        int calls;
        enum lua_script_id id;
        int argc;
        char *argv[MAX_ARGS];
        redisReply *reply;
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

static int fake_call(enum lua_script_id id, int argc, const char **argv, redisReply **ret)
{
        fake_forget();
        fake.calls++;
        fake.id = id;
        fake.argc = argc;
        assert_true(argc <= MAX_ARGS);
        for (int i = 0; i < argc; i++) {
                fake.argv[i] = strdup(argv[i]);
                assert_non_null(fake.argv[i]);
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
        return fake_call(id, argc, argv, ret);
}

int __wrap_redis_conn_script(struct redis_conn *c, enum lua_script_id id, int argc, const char **argv,
                             redisReply **ret);
int __wrap_redis_conn_script(struct redis_conn *c, enum lua_script_id id, int argc, const char **argv,
                             redisReply **ret)
{
        (void)c;
        return fake_call(id, argc, argv, ret);
}

/* ---- helpers ---- */

#define SID "0123456789abcdef0123456789abcdef"
#define OTHER "fedcba9876543210fedcba9876543210"
#define FP "aa11bb22cc33dd44ee55ff6600778899aa11bb22cc33dd44ee55ff6600778899"

static struct broker_config cfg;
static const char *fields[] = { "image", "busybox", "metadata", "{}" };

static struct osb_store_new new_req(const char *key)
{
        return (struct osb_store_new){ .sid = SID, .tenant = "alpha", .timeout_ms = "",
                                       .pool_image = NULL, .disk_mb = -1, .idem_key = key,
                                       .fingerprint = FP, .fields = fields, .n = 4 };
}

static int setup(void **state)
{
        fake_setup(state);
        memset(&cfg, 0, sizeof(cfg));
        cfg.osb_max_per_tenant = 50;
        cfg.sandbox_disk_mb = 1024;
        cfg.sandbox_disk_max_mb = 8192;
        cfg.osb_idempotency_ttl_s = 86400;
        cfg.osb_idempotency_max = 10000;
        cfg.osb_unanswered_s = 300;
        return 0;
}

/* ---- tests ---- */

static void test_create_arguments(void **state)
{
        struct osb_store_outcome out;
        struct osb_store_new req = new_req("key-1");

        (void)state;
        fake.reply = r_arr(3, r_str("ok"), r_str(SID), r_str(""));
        assert_int_equal(osb_store_create(NULL, &cfg, &req, &out), 0);
        assert_int_equal(fake.id, LUA_OSB_CREATE);
        assert_int_equal(fake.argc, 13 + 4);
        assert_string_equal(fake.argv[0], SID);
        assert_string_equal(fake.argv[1], "alpha");
        assert_string_equal(fake.argv[2], "50");
        assert_string_equal(fake.argv[3], "");   /* manual cleanup */
        assert_string_equal(fake.argv[4], "");   /* no pool */
        assert_string_equal(fake.argv[5], "");   /* no disk asked */
        assert_string_equal(fake.argv[8], "key-1");
        assert_string_equal(fake.argv[9], FP);
        assert_string_equal(fake.argv[10], "86400000");
        assert_string_equal(fake.argv[11], "10000");
        assert_string_equal(fake.argv[12], "300000");
        assert_string_equal(fake.argv[13], "image");
        assert_string_equal(fake.argv[16], "{}");
        assert_int_equal(out.kind, OSB_STORE_CREATED);
        assert_string_equal(out.sid, SID);
        assert_false(out.warm);
        assert_false(out.admit);

        /* no key: neither key nor fingerprint reach the script */
        req = new_req(NULL);
        fake.reply = r_arr(3, r_str("ok"), r_str(OTHER), r_str("c0ffee"));
        assert_int_equal(osb_store_create(NULL, &cfg, &req, &out), 0);
        assert_string_equal(fake.argv[8], "");
        assert_string_equal(fake.argv[9], "");
        assert_int_equal(out.kind, OSB_STORE_CREATED);
        assert_string_equal(out.sid, OTHER); /* a warm member's id */
        assert_true(out.warm);

        /* too many fields: refused before any call */
        req.n = 33;
        fake.calls = 0;
        assert_int_equal(osb_store_create(NULL, &cfg, &req, &out), -E2BIG);
        assert_int_equal(fake.calls, 0);
}

static void test_create_outcomes(void **state)
{
        struct osb_store_outcome out;
        struct osb_store_new req = new_req("key-1");

        (void)state;
        fake.reply = r_arr(4, r_str("replay"), r_str(SID), r_str(""), r_str("1"));
        assert_int_equal(osb_store_create(NULL, &cfg, &req, &out), 0);
        assert_int_equal(out.kind, OSB_STORE_REPLAY);
        assert_string_equal(out.sid, SID);
        assert_true(out.admit);
        assert_false(out.warm);

        fake.reply = r_arr(4, r_str("replay"), r_str(SID), r_str("c0ffee"), r_str(""));
        assert_int_equal(osb_store_create(NULL, &cfg, &req, &out), 0);
        assert_int_equal(out.kind, OSB_STORE_REPLAY);
        assert_false(out.admit);
        assert_true(out.warm);

        fake.reply = r_arr(2, r_str("mismatch"), r_str(SID));
        assert_int_equal(osb_store_create(NULL, &cfg, &req, &out), 0);
        assert_int_equal(out.kind, OSB_STORE_KEY_MISMATCH);
        assert_string_equal(out.sid, SID);

        fake.reply = r_arr(2, r_str("spent"), r_str(SID));
        assert_int_equal(osb_store_create(NULL, &cfg, &req, &out), 0);
        assert_int_equal(out.kind, OSB_STORE_KEY_SPENT);
        assert_string_equal(out.sid, SID);

        fake.reply = r_arr(2, r_str("limit"), r_int(50));
        assert_int_equal(osb_store_create(NULL, &cfg, &req, &out), 0);
        assert_int_equal(out.kind, OSB_STORE_LIMIT);
        assert_int_equal(out.n, 50);
        assert_string_equal(out.sid, "");

        fake.reply = r_arr(2, r_str("disk"), r_int(2048));
        assert_int_equal(osb_store_create(NULL, &cfg, &req, &out), 0);
        assert_int_equal(out.kind, OSB_STORE_DISK);
        assert_int_equal(out.n, 2048);
}

static void test_create_malformed(void **state)
{
        struct osb_store_outcome out;
        struct osb_store_new req = new_req("k");
        char longid[64];

        (void)state;
        memset(longid, 'a', sizeof(longid) - 1);
        longid[sizeof(longid) - 1] = '\0';
        redisReply *bad[] = {
                r_arr(3, r_str("ok"), r_str(longid), r_str("")),   /* an id that does not fit */
                r_arr(3, r_str("ok"), r_str(""), r_str("")),       /* no id */
                r_arr(2, r_str("ok"), r_str(SID)),                 /* short */
                r_arr(3, r_str("replay"), r_str(SID), r_str("")),  /* no admit */
                r_arr(4, r_str("replay"), r_str(SID), r_int(1), r_str("")),
                r_arr(3, r_str("mismatch"), r_str(SID), r_str("")),
                r_arr(1, r_str("spent")),
                r_arr(3, r_str("limit"), r_int(1), r_int(2)),
                r_arr(2, r_str("what"), r_str(SID)),
                r_arr(3, r_str("ok"), r_int(7), r_str("")),
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                fake.reply = bad[i];
                assert_int_equal(osb_store_create(NULL, &cfg, &req, &out), -EPROTO);
        }
        /* Redis down */
        fake.r = -EIO;
        assert_int_equal(osb_store_create(NULL, &cfg, &req, &out), -EIO);
}

static void test_delete_with_key(void **state)
{
        (void)state;
        fake.reply = r_arr(1, r_str("ok"));
        assert_int_equal(osb_store_delete(NULL, SID, "alpha", "key-1"), 0);
        assert_int_equal(fake.id, LUA_OSB_DELETE);
        assert_int_equal(fake.argc, 3);
        assert_string_equal(fake.argv[2], "key-1");
        fake.reply = r_arr(1, r_str("ok"));
        assert_int_equal(osb_store_delete(NULL, SID, "alpha", NULL), 0);
        assert_string_equal(fake.argv[2], ""); /* a DELETE forgets no key */
        fake.reply = r_arr(1, r_str("notfound"));
        assert_int_equal(osb_store_delete(NULL, SID, "alpha", NULL), -ENOENT);
        fake.reply = r_arr(2, r_str("gone"), r_str("Terminated"));
        assert_int_equal(osb_store_delete(NULL, SID, "alpha", NULL), -EALREADY);
}

struct ended {
        int n;
        char sid[4][40], tenant[4][40];
};

static void on_ended(void *ud, const char *sid, const char *tenant)
{
        struct ended *e = ud;

        assert_true(e->n < 4);
        snprintf(e->sid[e->n], sizeof(e->sid[0]), "%s", sid);
        snprintf(e->tenant[e->n], sizeof(e->tenant[0]), "%s", tenant);
        e->n++;
}

static void test_answered_and_reaped(void **state)
{
        struct ended e = { 0 };

        (void)state;
        fake.reply = r_int(1);
        assert_int_equal(osb_store_answered(NULL, SID), 0);
        assert_int_equal(fake.id, LUA_OSB_ANSWERED);
        assert_int_equal(fake.argc, 1);
        assert_string_equal(fake.argv[0], SID);
        fake.r = -EIO;
        assert_int_equal(osb_store_answered(NULL, SID), -EIO);
        fake.r = 0;

        fake.reply = r_arr(5, r_str(SID), r_str("alpha"), r_str(OTHER), r_str("bravo"), r_str("odd"));
        assert_int_equal(osb_store_reap_unanswered(NULL, &cfg, 100, on_ended, &e), 2);
        assert_int_equal(fake.id, LUA_OSB_UNANSWERED);
        assert_string_equal(fake.argv[0], "100");
        assert_non_null(strstr(fake.argv[1], "OPENSANDBOX_UNANSWERED_S"));
        assert_non_null(strstr(fake.argv[1], "300 s"));
        assert_int_equal(e.n, 2);
        assert_string_equal(e.sid[0], SID);
        assert_string_equal(e.tenant[0], "alpha");
        assert_string_equal(e.sid[1], OTHER);
        assert_string_equal(e.tenant[1], "bravo");

        fake.reply = r_arr(2, r_int(1), r_str("x")); /* not strings: skipped */
        assert_int_equal(osb_store_reap_unanswered(NULL, &cfg, 100, NULL, NULL), 0);
        fake.reply = r_int(3);
        assert_int_equal(osb_store_reap_unanswered(NULL, &cfg, 100, NULL, NULL), -EPROTO);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_create_arguments, setup, fake_teardown),
                cmocka_unit_test_setup_teardown(test_create_outcomes, setup, fake_teardown),
                cmocka_unit_test_setup_teardown(test_create_malformed, setup, fake_teardown),
                cmocka_unit_test_setup_teardown(test_delete_with_key, setup, fake_teardown),
                cmocka_unit_test_setup_teardown(test_answered_and_reaped, setup, fake_teardown),
        };
        return cmocka_run_group_tests_name("osb_store", tests, NULL, NULL);
}
