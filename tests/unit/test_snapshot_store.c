/* Unit tests for the reads of lib/sandbox/snapshot_store.c, whose header
 * returns no redisReply: snapshot_store_get answers the rendered Snapshot
 * (or -ENOENT for "notfound", -EPROTO for a record that does not render:
 * never "no snapshot" for a snapshot that is there), snapshot_store_list
 * the page's Snapshots in the script's order with its total (a record
 * that does not render left out, a malformed reply -EPROTO, more than 8
 * states -EINVAL with no script run). Redis is replaced at the link seam;
 * replies are built by hand. */
/* WRAP: -Wl,--wrap=redis_conn_script -Wl,--wrap=redis_conn_script_tagged */
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
#include "store/redis_conn.h"
#include "sandbox/snapshot_store.h"
#include "reply_fake.h"

#define ID1 "0123456789abcdef0123456789abcdef"
#define ID2 "11111111111111111111111111111111"

/* A stored snapshot record (flat field/value array); no id when !id. */
static redisReply *snap_rec(const char *id, const char *state)
{
        if (!id)
                return r_arr(2, r_str("state"), r_str(state));
        return r_arr(16, r_str("id"), r_str(id), r_str("tenant"), r_str("acme"), r_str("sandboxId"),
                     r_str("s1"), r_str("image"), r_str("sandbox-broker/snapshot:x"), r_str("state"),
                     r_str(state), r_str("createdAt"), r_str("1764770000000"), r_str("lastTransitionAt"),
                     r_str("1764770001000"), r_str("name"), r_str("nightly"));
}

/* ---- the fake Redis ---- */

static struct {
        int calls;
        enum lua_script_id id;
        int argc;
        char argv[16][64];
        redisReply *reply;
} fake;

static int fake_answer(enum lua_script_id id, int argc, const char **argv, redisReply **ret)
{
        fake.calls++;
        fake.id = id;
        fake.argc = argc;
        assert_true(argc <= 16);
        for (int i = 0; i < argc; i++)
                snprintf(fake.argv[i], sizeof(fake.argv[0]), "%s", argv[i]);
        *ret = fake.reply;
        fake.reply = NULL;
        return 0;
}

int __wrap_redis_conn_script(struct redis_conn *c, enum lua_script_id id, int argc, const char **argv,
                             redisReply **ret);
int __wrap_redis_conn_script(struct redis_conn *c, enum lua_script_id id, int argc, const char **argv,
                             redisReply **ret)
{
        (void)c;
        return fake_answer(id, argc, argv, ret);
}

int __wrap_redis_conn_script_tagged(struct redis_conn *c, enum lua_script_id id, int argc,
                                    const char **argv, redisReply **ret);
int __wrap_redis_conn_script_tagged(struct redis_conn *c, enum lua_script_id id, int argc,
                                    const char **argv, redisReply **ret)
{
        (void)c;
        return fake_answer(id, argc, argv, ret);
}

static struct broker_config cfg;

static int setup(void **state)
{
        (void)state;
        memset(&fake, 0, sizeof(fake));
        memset(&cfg, 0, sizeof(cfg));
        snprintf(cfg.key_prefix, sizeof(cfg.key_prefix), "sb:");
        cfg.snapshot_timeout_ms = 5000;
        return 0;
}

static int teardown(void **state)
{
        (void)state;
        reply_free(fake.reply);
        fake.reply = NULL;
        return 0;
}

static const char *str_of(struct json_object *o, const char *k)
{
        struct json_object *v;

        return json_object_object_get_ex(o, k, &v) ? json_object_get_string(v) : NULL;
}

static void test_get_renders_the_snapshot(void **state)
{
        struct json_object *o = NULL, *st;

        (void)state;
        fake.reply = r_arr(2, r_str("ok"), snap_rec(ID1, "Ready"));
        assert_int_equal(snapshot_store_get(NULL, &cfg, ID1, "acme", &o), 0);
        assert_int_equal(fake.id, LUA_SNAPSHOT_GET);
        assert_int_equal(fake.argc, 3);
        assert_string_equal(fake.argv[0], ID1);
        assert_string_equal(fake.argv[1], "acme");
        assert_string_equal(fake.argv[2], "35000"); /* SNAPSHOT_TIMEOUT_MS + 30 s */
        assert_non_null(o);
        assert_string_equal(str_of(o, "id"), ID1);
        assert_string_equal(str_of(o, "name"), "nightly");
        assert_true(json_object_object_get_ex(o, "status", &st));
        assert_string_equal(str_of(st, "state"), "Ready");
        /* what the store keeps for itself stays there */
        assert_null(str_of(o, "tenant"));
        assert_null(str_of(o, "image"));
        json_object_put(o);
}

static void test_get_notfound_and_unrenderable(void **state)
{
        struct json_object *o = (struct json_object *)&o;

        (void)state;
        fake.reply = r_arr(1, r_str("notfound"));
        assert_int_equal(snapshot_store_get(NULL, &cfg, ID1, "other", &o), -ENOENT);
        assert_null(o);
        /* a record that is there but does not render is not "no snapshot" */
        fake.reply = r_arr(2, r_str("ok"), snap_rec(NULL, "Ready"));
        assert_int_equal(snapshot_store_get(NULL, &cfg, ID1, "acme", &o), -EPROTO);
        assert_null(o);
        /* an odd tag */
        fake.reply = r_arr(1, r_str("what"));
        assert_int_equal(snapshot_store_get(NULL, &cfg, ID1, "acme", &o), -EPROTO);
        assert_null(o);
}

static void test_list_renders_the_page(void **state)
{
        const char *states[] = { "Ready", "Failed" };
        struct json_object *items = NULL;
        long long total = -1;

        (void)state;
        fake.reply = r_arr(4, r_int(7), snap_rec(ID2, "Ready"), snap_rec(NULL, "Ready"), snap_rec(ID1, "Failed"));
        assert_int_equal(snapshot_store_list(NULL, "acme", 2, 3, "s1", "nightly", states, 2, &total, &items), 0);
        assert_int_equal(fake.id, LUA_SNAPSHOT_LIST);
        assert_int_equal(fake.argc, 8);
        assert_string_equal(fake.argv[0], "acme");
        assert_string_equal(fake.argv[1], "2");
        assert_string_equal(fake.argv[2], "3");
        assert_string_equal(fake.argv[3], "s1");
        assert_string_equal(fake.argv[4], "nightly");
        assert_string_equal(fake.argv[5], "2");
        assert_string_equal(fake.argv[6], "Ready");
        assert_string_equal(fake.argv[7], "Failed");
        assert_int_equal(total, 7);
        assert_non_null(items);
        /* the unrenderable record is left out; the order is the script's */
        assert_int_equal(json_object_array_length(items), 2);
        assert_string_equal(str_of(json_object_array_get_idx(items, 0), "id"), ID2);
        assert_string_equal(str_of(json_object_array_get_idx(items, 1), "id"), ID1);
        json_object_put(items);

        /* an empty page */
        fake.reply = r_arr(1, r_int(0));
        assert_int_equal(snapshot_store_list(NULL, "acme", 1, 20, "", "", NULL, 0, &total, &items), 0);
        assert_int_equal(total, 0);
        assert_int_equal(json_object_array_length(items), 0);
        json_object_put(items);
}

static void test_list_refusals(void **state)
{
        const char *states[9] = { "Ready" };
        struct json_object *items = (struct json_object *)&items;
        long long total = -1;

        (void)state;
        assert_int_equal(snapshot_store_list(NULL, "acme", 1, 20, "", "", states, 9, &total, &items), -EINVAL);
        assert_int_equal(fake.calls, 0);
        assert_null(items);
        /* the total is no integer */
        fake.reply = r_arr(2, r_str("7"), snap_rec(ID1, "Ready"));
        assert_int_equal(snapshot_store_list(NULL, "acme", 1, 20, "", "", NULL, 0, &total, &items), -EPROTO);
        assert_null(items);
        assert_int_equal(total, 0);
        /* not an array */
        fake.reply = r_int(3);
        assert_int_equal(snapshot_store_list(NULL, "acme", 1, 20, "", "", NULL, 0, &total, &items), -EPROTO);
        assert_null(items);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_get_renders_the_snapshot, setup, teardown),
                cmocka_unit_test_setup_teardown(test_get_notfound_and_unrenderable, setup, teardown),
                cmocka_unit_test_setup_teardown(test_list_renders_the_page, setup, teardown),
                cmocka_unit_test_setup_teardown(test_list_refusals, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
