/* Unit tests for lib/sandbox/template_store.c, whose header returns no
 * redisReply: the create retries an id already taken and reads the cap's
 * refusal, the get and the list render stored forms (a stored form that
 * does not parse is -EPROTO, never "no template"), the list filters and
 * pages in the script's order, ids no template could have never reach
 * Redis, and a create body naming a template becomes that template's
 * create. Redis is replaced at the link seam; replies are built by hand. */
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
#include "core/json_input.h"
#include "store/redis_conn.h"
#include "sandbox/template_store.h"
#include "reply_fake.h"

#define ID1 "tpl-0123456789abcdef0123456789abcdef"
#define ID2 "tpl-11111111111111111111111111111111"
#define ID3 "tpl-22222222222222222222222222222222"
#define SPEC_A                                                                                     \
        "{\"image\":\"busybox:1\",\"publish\":\"p\",\"format\":\"native\",\"metadata\":{\"team\":" \
        "\"a\"}}"
#define SPEC_B                                                                               \
        "{\"image\":\"busybox:2\",\"publish\":\"p\",\"format\":\"overlaybd\",\"metadata\":{" \
        "\"team\":\"b\"}}"

/* ---- the fake Redis: a queue of replies, one per script call ---- */

static struct {
        int calls, n;
        enum lua_script_id id[8];
        char argv[8][4][128];
        redisReply *replies[8];
} fake;

static int fake_answer(enum lua_script_id id, int argc, const char **argv, redisReply **ret)
{
        int i = fake.calls++;

        assert_true(i < fake.n);
        fake.id[i] = id;
        for (int a = 0; a < argc && a < 4; a++)
                snprintf(fake.argv[i][a], sizeof(fake.argv[i][a]), "%s", argv[a]);
        *ret = fake.replies[i];
        fake.replies[i] = NULL;
        return 0;
}

int __wrap_redis_conn_script(struct redis_conn *c, enum lua_script_id id, int argc,
                             const char **argv, redisReply **ret);
int __wrap_redis_conn_script(struct redis_conn *c, enum lua_script_id id, int argc,
                             const char **argv, redisReply **ret)
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

static void queue(redisReply *r)
{
        assert_true(fake.n < 8);
        fake.replies[fake.n++] = r;
}

static struct broker_config cfg;

static int setup(void **state)
{
        (void)state;
        memset(&fake, 0, sizeof(fake));
        memset(&cfg, 0, sizeof(cfg));
        cfg.template_max_per_tenant = 3;
        return 0;
}

static int teardown(void **state)
{
        (void)state;
        for (int i = 0; i < 8; i++)
                reply_free(fake.replies[i]);
        return 0;
}

static void test_create(void **state)
{
        struct json_object *spec = json_tokener_parse(SPEC_A), *t = NULL;
        long long n = -1;

        (void)state;
        /* an id drawn twice is drawn again; the answer has the id stored */
        queue(r_arr(1, r_str("exists")));
        queue(r_arr(2, r_str("ok"), r_str("1765000000000")));
        assert_int_equal(template_store_create(NULL, &cfg, "acme", spec, &t, &n), 0);
        assert_int_equal(fake.calls, 2);
        assert_int_equal(fake.id[1], LUA_TEMPLATE_CREATE);
        assert_string_not_equal(fake.argv[0][0], fake.argv[1][0]);
        assert_true(template_id_valid(fake.argv[1][0]));
        assert_string_equal(fake.argv[1][1], "acme");
        assert_string_equal(fake.argv[1][3], "3");
        assert_string_equal(json_get_str(t, "templateId"), fake.argv[1][0]);
        assert_string_equal(json_get_str(t, "createdAt"), "2025-12-06T05:46:40.000Z");
        json_object_put(t);
        json_object_put(spec);
}

static void test_create_refusals(void **state)
{
        struct json_object *spec = json_tokener_parse(SPEC_A), *t = NULL;
        long long n = 0;

        (void)state;
        queue(r_arr(2, r_str("limit"), r_int(3)));
        queue(r_arr(1, r_str("what")));
        assert_int_equal(template_store_create(NULL, &cfg, "acme", spec, &t, &n), -EDQUOT);
        assert_int_equal(n, 3);
        assert_null(t);
        assert_int_equal(template_store_create(NULL, &cfg, "acme", spec, &t, &n), -EPROTO);
        assert_null(t);
        json_object_put(spec);
}

static void test_get(void **state)
{
        struct json_object *t = NULL;

        (void)state;
        /* ids no template could have: no script runs */
        assert_int_equal(template_store_get(NULL, "acme", "../x", &t), -ENOENT);
        assert_int_equal(template_store_get(NULL, "acme", "tpl-X", &t), -ENOENT);
        assert_int_equal(fake.calls, 0);
        queue(r_arr(1, r_str("notfound")));
        queue(r_arr(4, r_str("ok"), r_str("{not json"), r_str("1"), r_str("2")));
        queue(r_arr(4, r_str("ok"), r_str(SPEC_A), r_str("1765000000000"), r_str("1765000000500")));
        assert_int_equal(template_store_get(NULL, "acme", ID1, &t), -ENOENT);
        assert_string_equal(fake.argv[0][0], ID1);
        assert_string_equal(fake.argv[0][1], "acme");
        assert_int_equal(template_store_get(NULL, "acme", ID1, &t), -EPROTO);
        assert_null(t);
        assert_int_equal(template_store_get(NULL, "acme", ID1, &t), 0);
        assert_string_equal(json_object_to_json_string_ext(t, JSON_C_TO_STRING_PLAIN),
                            "{\"templateId\":\"" ID1 "\",\"image\":\"busybox:1\",\"publish\":\"p\","
                            "\"format\":\"native\",\"metadata\":{\"team\":\"a\"},\"status\":{"
                            "\"phase\":\"Succeeded\"},"
                            "\"createdAt\":\"2025-12-06T05:46:40.000Z\",\"updatedAt\":\"2025-12-"
                            "06T05:46:40.500Z\"}");
        json_object_put(t);
}

static redisReply *three(void)
{
        return r_arr(12, r_str(ID3), r_str(SPEC_A), r_str("3"), r_str("3"), r_str(ID2), r_str(SPEC_B),
                     r_str("2"), r_str("2"), r_str(ID1), r_str(SPEC_A), r_str("1"), r_str("1"));
}

static void test_list(void **state)
{
        struct json_object *items = NULL, *f = NULL;
        char err[TEMPLATE_ERR_MAX];
        long long total = -1;

        (void)state;
        /* page 2 of size 1 of all: the script's second */
        queue(three());
        assert_int_equal(template_store_list(NULL, &cfg, "acme", NULL, 2, 1, &total, &items), 0);
        assert_int_equal(fake.id[0], LUA_TEMPLATE_LIST);
        assert_string_equal(fake.argv[0][0], "acme");
        assert_int_equal(total, 3);
        assert_int_equal(json_object_array_length(items), 1);
        assert_string_equal(json_get_str(json_object_array_get_idx(items, 0), "templateId"), ID2);
        json_object_put(items);
        /* team=a: two of three, in order */
        assert_int_equal(template_filter_parse("team=a", &f, err), 0);
        queue(three());
        assert_int_equal(template_store_list(NULL, &cfg, "acme", f, 1, 20, &total, &items), 0);
        assert_int_equal(total, 2);
        assert_string_equal(json_get_str(json_object_array_get_idx(items, 0), "templateId"), ID3);
        assert_string_equal(json_get_str(json_object_array_get_idx(items, 1), "templateId"), ID1);
        json_object_put(items);
        json_object_put(f);
        /* a page past the end: empty, the total still counted */
        queue(three());
        assert_int_equal(template_store_list(NULL, &cfg, "acme", NULL, 5, 1, &total, &items), 0);
        assert_int_equal(total, 3);
        assert_int_equal(json_object_array_length(items), 0);
        json_object_put(items);
        /* malformed replies */
        queue(r_arr(3, r_str(ID1), r_str(SPEC_A), r_str("1")));
        assert_int_equal(template_store_list(NULL, &cfg, "acme", NULL, 1, 20, &total, &items),
                         -EPROTO);
        assert_null(items);
        queue(r_arr(4, r_str(ID1), r_str("[]"), r_str("1"), r_str("1")));
        assert_int_equal(template_store_list(NULL, &cfg, "acme", NULL, 1, 20, &total, &items),
                         -EPROTO);
        assert_null(items);
}

static void test_delete(void **state)
{
        (void)state;
        assert_int_equal(template_store_delete(NULL, "acme", "tpl-../../x"), -ENOENT);
        assert_int_equal(fake.calls, 0);
        queue(r_arr(1, r_str("notfound")));
        queue(r_arr(1, r_str("ok")));
        assert_int_equal(template_store_delete(NULL, "acme", ID1), -ENOENT);
        assert_int_equal(template_store_delete(NULL, "acme", ID1), 0);
        assert_int_equal(fake.id[1], LUA_TEMPLATE_DELETE);
        assert_string_equal(fake.argv[1][1], "acme");
}

static void test_expand(void **state)
{
        struct json_object *body, *out = NULL;
        char err[TEMPLATE_ERR_MAX] = "";

        (void)state;
        /* no templateId: nothing to do, no script */
        body = json_tokener_parse("{\"image\":{\"uri\":\"x\"},\"entrypoint\":[\"sh\"]}");
        assert_int_equal(template_store_expand(NULL, "acme", body, &out, err), 0);
        assert_null(out);
        assert_int_equal(fake.calls, 0);
        json_object_put(body);
        /* an unknown one (or another tenant's): -ENOENT naming it */
        queue(r_arr(1, r_str("notfound")));
        body = json_tokener_parse("{\"templateId\":\"" ID1 "\",\"timeout\":60}");
        assert_int_equal(template_store_expand(NULL, "acme", body, &out, err), -ENOENT);
        assert_string_equal(err, ID1);
        assert_null(out);
        /* found: its create */
        queue(r_arr(4, r_str("ok"), r_str(SPEC_A), r_str("1"), r_str("1")));
        assert_int_equal(template_store_expand(NULL, "acme", body, &out, err), 0);
        assert_string_equal(json_object_to_json_string_ext(
                                    out, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE),
                            "{\"timeout\":60,\"image\":{\"uri\":\"busybox:1\"},"
                            "\"entrypoint\":[\"tail\",\"-f\",\"/dev/null\"]}");
        json_object_put(out);
        json_object_put(body);
        /* found, with a workload field beside it */
        queue(r_arr(4, r_str("ok"), r_str(SPEC_A), r_str("1"), r_str("1")));
        body = json_tokener_parse("{\"templateId\":\"" ID1 "\",\"timeout\":60,\"env\":{}}");
        assert_int_equal(template_store_expand(NULL, "acme", body, &out, err), -EINVAL);
        assert_non_null(strstr(err, "env"));
        assert_null(out);
        json_object_put(body);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_create, setup, teardown),
                cmocka_unit_test_setup_teardown(test_create_refusals, setup, teardown),
                cmocka_unit_test_setup_teardown(test_get, setup, teardown),
                cmocka_unit_test_setup_teardown(test_list, setup, teardown),
                cmocka_unit_test_setup_teardown(test_delete, setup, teardown),
                cmocka_unit_test_setup_teardown(test_expand, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
