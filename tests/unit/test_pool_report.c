/* Unit tests for what pool_step (lib/sandbox/pool.c) reports to its caller
 * instead of logging (docs/ARCHITECTURE.md §7): each member a scan drops
 * comes to the report once, in order, with its sandbox id and why, after its
 * container was removed; a member the drop script no longer holds (a claim
 * took it meanwhile) is neither removed nor reported; without a report the
 * step does the same work. Redis (wpool.lua) and the provider are replaced
 * at the link seam. */
/* WRAP: -Wl,--wrap=redis_conn_script -Wl,--wrap=provider_remove */
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

#define SID_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define SID_B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

static struct {
        char ops[8][16];
        int n_ops;
        char removed[4][64];
        int removes;
        struct {
                enum pool_event_kind kind;
                char sid[64], why[128];
                bool image_null;
                char removed_before[64]; /* the last container removed when reported */
        } ev[4];
        int n_ev;
} f;

static redisReply *str_reply(const char *s)
{
        redisReply *r = calloc(1, sizeof(*r));

        assert_non_null(r);
        r->type = REDIS_REPLY_STRING;
        r->str = strdup(s);
        r->len = strlen(s);
        return r;
}

int __wrap_redis_conn_script(struct redis_conn *c, enum lua_script_id id, int argc,
                             const char **argv, redisReply **ret);
int __wrap_redis_conn_script(struct redis_conn *c, enum lua_script_id id, int argc,
                             const char **argv, redisReply **ret)
{
        /* two members: A of an image no pool has any more, B the same */
        static const char *const scan[] = { SID_A, "gone:1", "1", "ready", "1", "",
                                            SID_B, "gone:2", "1", "ready", "1", "" };
        redisReply *r = calloc(1, sizeof(*r));

        (void)c;
        (void)argc;
        assert_non_null(r);
        assert_int_equal(id, LUA_WPOOL);
        assert_true(f.n_ops < 8);
        snprintf(f.ops[f.n_ops++], sizeof(f.ops[0]), "%s", argv[0]);
        if (!strcmp(argv[0], "scan")) {
                r->type = REDIS_REPLY_ARRAY;
                r->elements = sizeof(scan) / sizeof(scan[0]);
                r->element = calloc(r->elements, sizeof(*r->element));
                assert_non_null(r->element);
                for (size_t i = 0; i < r->elements; i++)
                        r->element[i] = str_reply(scan[i]);
        } else if (!strcmp(argv[0], "drop") && !strcmp(argv[1], SID_A)) {
                free(r);
                r = str_reply("ref-" SID_A);
        } else {
                /* "alive": OK; "drop" of B: false, a claim took it */
                r->type = REDIS_REPLY_NIL;
        }
        *ret = r;
        return 0;
}

int __wrap_provider_remove(struct provider *p, const char *ref, char *ret_err);
int __wrap_provider_remove(struct provider *p, const char *ref, char *ret_err)
{
        (void)p;
        (void)ret_err;
        assert_true(f.removes < 4);
        snprintf(f.removed[f.removes++], sizeof(f.removed[0]), "%s", ref);
        return 0;
}

static void on_event(void *ctx, const struct pool_event *ev)
{
        assert_ptr_equal(ctx, &f);
        assert_true(f.n_ev < 4);
        f.ev[f.n_ev].kind = ev->kind;
        snprintf(f.ev[f.n_ev].sid, sizeof(f.ev[0].sid), "%s", ev->sid ? ev->sid : "");
        snprintf(f.ev[f.n_ev].why, sizeof(f.ev[0].why), "%s", ev->why ? ev->why : "");
        f.ev[f.n_ev].image_null = ev->image == NULL;
        snprintf(f.ev[f.n_ev].removed_before, sizeof(f.ev[0].removed_before), "%s",
                 f.removes ? f.removed[f.removes - 1] : "");
        f.n_ev++;
}

static int setup(void **state)
{
        (void)state;
        memset(&f, 0, sizeof(f));
        return 0;
}

static void test_dropped_member_is_reported(void **state)
{
        struct broker_config cfg = { 0 }; /* no pools */
        struct pool_state ps = { 0 };
        const struct pool_report report = { on_event, &f };
        int pv;

        (void)state;
        assert_int_equal(pool_step(NULL, (struct provider *)&pv, &cfg, &ps, &report), 1);
        assert_string_equal(f.ops[0], "alive");
        assert_string_equal(f.ops[1], "scan");
        assert_string_equal(f.ops[2], "drop");
        assert_string_equal(f.ops[3], "drop");
        assert_int_equal(f.n_ops, 4);
        /* A: dropped, removed by its ref, then reported; B: neither */
        assert_int_equal(f.removes, 1);
        assert_string_equal(f.removed[0], "ref-" SID_A);
        assert_int_equal(f.n_ev, 1);
        assert_int_equal(f.ev[0].kind, POOL_EVENT_REMOVED);
        assert_string_equal(f.ev[0].sid, SID_A);
        assert_string_equal(f.ev[0].why, "its image has no pool any more");
        assert_true(f.ev[0].image_null);
        assert_string_equal(f.ev[0].removed_before, "ref-" SID_A);
}

static void test_no_report_same_work(void **state)
{
        struct broker_config cfg = { 0 };
        struct pool_state ps = { 0 };
        int pv;

        (void)state;
        assert_int_equal(pool_step(NULL, (struct provider *)&pv, &cfg, &ps, NULL), 1);
        assert_int_equal(f.n_ops, 4);
        assert_int_equal(f.removes, 1);
        assert_int_equal(f.n_ev, 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup(test_dropped_member_is_reported, setup),
                cmocka_unit_test_setup(test_no_report_same_work, setup),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
