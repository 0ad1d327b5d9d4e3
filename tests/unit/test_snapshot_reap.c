/* Unit tests for snapshot_store_reap (lib/sandbox/snapshot_store.c), the
 * reconciler's removal of snapshot images nobody owns: only images the
 * broker named (its label's id valid, no name but sandbox-broker/snapshot:
 * <that id>, or none) go to snapshot_reap.lua, with the stale bound of
 * SNAPSHOT_TIMEOUT_MS + 30 s; only the ones it says 'remove' are pruned,
 * never forced; one still in use (-EBUSY) stays and is not counted. The
 * provider and Redis are replaced at the link seam. */
/* WRAP: -Wl,--wrap=redis_conn_script -Wl,--wrap=provider_snapshot_list -Wl,--wrap=provider_snapshot_prune -Wl,--wrap=provider_can_snapshot */
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

#include "core/config.h"
#include "sandbox/snapshot_store.h"
#include "reply_fake.h"

#define A "0123456789abcdef0123456789abcdef"
#define B "11111111111111111111111111111111"
#define C "22222222222222222222222222222222"
#define D "33333333333333333333333333333333"

static struct {
        bool can;
        int list_r;
        const struct snapshot_image *images;
        size_t n_images;
        char listed_prefix[64];
        /* the script */
        int script_calls;
        char script_args[8][40];
        int script_argc;
        const char *const *verdicts; /* one per id it is given, in order */
        /* prunes */
        char pruned[8][80];
        int n_pruned;
        int prune_r[8];
} f;

bool __wrap_provider_can_snapshot(const struct provider *p);
bool __wrap_provider_can_snapshot(const struct provider *p)
{
        (void)p;
        return f.can;
}

int __wrap_provider_snapshot_list(struct provider *p, const char *prefix,
                                  void (*fn)(void *ud, const struct snapshot_image *im), void *ud,
                                  char *ret_err);
int __wrap_provider_snapshot_list(struct provider *p, const char *prefix,
                                  void (*fn)(void *ud, const struct snapshot_image *im), void *ud,
                                  char *ret_err)
{
        (void)p;
        snprintf(f.listed_prefix, sizeof(f.listed_prefix), "%s", prefix);
        if (f.list_r < 0) {
                snprintf(ret_err, PROVIDER_ERR_MAX, "docker: down");
                return f.list_r;
        }
        for (size_t i = 0; i < f.n_images; i++)
                fn(ud, &f.images[i]);
        return 0;
}

int __wrap_provider_snapshot_prune(struct provider *p, const char *id, char *ret_err);
int __wrap_provider_snapshot_prune(struct provider *p, const char *id, char *ret_err)
{
        (void)p;
        (void)ret_err;
        assert_true(f.n_pruned < 8);
        snprintf(f.pruned[f.n_pruned], sizeof(f.pruned[0]), "%s", id);
        return f.prune_r[f.n_pruned++];
}

int __wrap_redis_conn_script(struct redis_conn *c, enum lua_script_id id, int argc, const char **argv,
                             redisReply **ret);
int __wrap_redis_conn_script(struct redis_conn *c, enum lua_script_id id, int argc, const char **argv,
                             redisReply **ret)
{
        redisReply *r = calloc(1, sizeof(*r));

        (void)c;
        assert_int_equal(id, LUA_SNAPSHOT_REAP);
        assert_true(argc <= 8);
        f.script_calls++;
        f.script_argc = argc;
        for (int i = 0; i < argc; i++)
                snprintf(f.script_args[i], sizeof(f.script_args[0]), "%s", argv[i]);
        assert_non_null(r);
        r->type = REDIS_REPLY_ARRAY;
        r->elements = (size_t)argc - 1;
        r->element = calloc(r->elements + 1, sizeof(*r->element));
        for (size_t i = 0; i < r->elements; i++)
                r->element[i] = r_str(f.verdicts[i]);
        *ret = r;
        return 0;
}

static struct broker_config cfg;

static int setup(void **state)
{
        (void)state;
        memset(&f, 0, sizeof(f));
        f.can = true;
        memset(&cfg, 0, sizeof(cfg));
        snprintf(cfg.key_prefix, sizeof(cfg.key_prefix), "sb:");
        cfg.snapshot_timeout_ms = 5000;
        return 0;
}

static void test_only_broker_images_and_verdicts(void **state)
{
        static const struct snapshot_image images[] = {
                { "sha256:a", A, "sb:", "sandbox-broker/snapshot:" A, 1 }, /* named by us */
                { "sha256:b", B, "sb:", "", 0 },                           /* untagged leftover */
                { "sha256:c", C, "sb:", "registry/evil:1", 1 },            /* pulled with our labels */
                { "sha256:d", D, "sb:", "", 2 },                           /* several names */
                { "sha256:e", "not-an-id", "sb:", "", 0 },
                { "sha256:f", C, "sb:", "sandbox-broker/snapshot:" A, 1 }, /* a name not its own */
                { "sha256:g", D, "sb:", "", 0 },
        };
        static const char *const verdicts[] = { "keep", "remove", "remove" };
        char err[SNAPSHOT_ERR_MAX];
        int removed = -1;

        (void)state;
        f.images = images;
        f.n_images = sizeof(images) / sizeof(images[0]);
        f.verdicts = verdicts;
        f.prune_r[0] = 0;
        f.prune_r[1] = -EBUSY; /* a sandbox still runs from it: stays, not counted */
        assert_int_equal(snapshot_store_reap(NULL, NULL, &cfg, &removed, err), 0);
        assert_string_equal(f.listed_prefix, "sb:");
        assert_int_equal(f.script_calls, 1);
        assert_int_equal(f.script_argc, 4);
        assert_string_equal(f.script_args[0], "35000"); /* SNAPSHOT_TIMEOUT_MS + 30 s */
        assert_string_equal(f.script_args[1], A);
        assert_string_equal(f.script_args[2], B);
        assert_string_equal(f.script_args[3], D);
        assert_int_equal(f.n_pruned, 2);
        assert_string_equal(f.pruned[0], "sha256:b");
        assert_string_equal(f.pruned[1], "sha256:g");
        assert_int_equal(removed, 1);
}

static void test_gone_counts_and_no_images(void **state)
{
        static const struct snapshot_image images[] = { { "sha256:a", A, "sb:", "", 0 } };
        static const char *const verdicts[] = { "remove" };
        char err[SNAPSHOT_ERR_MAX];
        int removed = -1;

        (void)state;
        f.images = images;
        f.n_images = 1;
        f.verdicts = verdicts;
        f.prune_r[0] = -ENOENT; /* removed meanwhile: gone either way */
        assert_int_equal(snapshot_store_reap(NULL, NULL, &cfg, &removed, err), 0);
        assert_int_equal(removed, 1);

        /* nothing listed: no script call at all */
        setup(state);
        assert_int_equal(snapshot_store_reap(NULL, NULL, &cfg, &removed, err), 0);
        assert_int_equal(removed, 0);
        assert_int_equal(f.script_calls, 0);
}

static void test_provider_without_snapshots_or_down(void **state)
{
        char err[SNAPSHOT_ERR_MAX];
        int removed = -1;

        (void)state;
        f.can = false;
        assert_int_equal(snapshot_store_reap(NULL, NULL, &cfg, &removed, err), 0);
        assert_int_equal(removed, 0);
        assert_string_equal(f.listed_prefix, ""); /* not even asked */
        f.can = true;
        f.list_r = -EIO;
        assert_int_equal(snapshot_store_reap(NULL, NULL, &cfg, &removed, err), -EIO);
        assert_string_equal(err, "docker: down");
        assert_int_equal(f.n_pruned, 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup(test_only_broker_images_and_verdicts, setup),
                cmocka_unit_test_setup(test_gone_counts_and_no_images, setup),
                cmocka_unit_test_setup(test_provider_without_snapshots_or_down, setup),
        };
        return cmocka_run_group_tests_name("snapshot_reap", tests, NULL, NULL);
}
