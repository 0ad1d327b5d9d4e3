/* Unit tests for lib/store/keystore.c: argument validation (nothing reaches Redis
 * on a bad argument), the arguments each operation hands to its script, and
 * the mapping of script replies to results and errors. Redis and the key
 * generator are replaced at the link seam (__wrap_redis_conn_script,
 * __wrap_redis_conn_ping, __wrap_auth_key_generate); hashing is the real
 * auth_key_hash. */
/* WRAP: -Wl,--wrap=redis_conn_script -Wl,--wrap=redis_conn_ping -Wl,--wrap=auth_key_generate */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "store/auth.h"
#include "core/json_input.h"
#include "store/keystore.h"
#include "reply_fake.h"

/* ---- the seams ---- */

#define FAKE_MAX_ARGS 8
#define FIXED_KEY "sbk_000102030405060708090a0b0c0d0e0f1011121314151617"

/* What the last script call received, and what it answers. */
static struct {
        int calls;
        enum lua_script_id id;
        int argc;
        char argv[FAKE_MAX_ARGS][160];
        int rc;            /* returned by the fake */
        redisReply *reply; /* handed to the caller when rc == 0 */
        int gen_rc;        /* returned by auth_key_generate */
        int gen_calls;
        int ping_rc; /* returned by redis_conn_ping */
        int ping_calls;
} fake;

int __wrap_redis_conn_script(struct redis_conn *c, enum lua_script_id id, int argc,
                             const char **argv, redisReply **ret);
int __wrap_auth_key_generate(char out[AUTH_KEY_MAX]);
int __wrap_redis_conn_ping(struct redis_conn *c);

int __wrap_redis_conn_ping(struct redis_conn *c)
{
        (void)c;
        fake.ping_calls++;
        return fake.ping_rc;
}

int __wrap_redis_conn_script(struct redis_conn *c, enum lua_script_id id, int argc,
                             const char **argv, redisReply **ret)
{
        (void)c;
        fake.calls++;
        fake.id = id;
        fake.argc = argc;
        assert_in_range(argc, 0, FAKE_MAX_ARGS);
        for (int i = 0; i < argc; i++) {
                assert_non_null(argv[i]);
                assert_true(strlen(argv[i]) < sizeof(fake.argv[i]));
                strcpy(fake.argv[i], argv[i]);
        }
        *ret = NULL;
        if (fake.rc < 0) {
                reply_free(fake.reply);
                fake.reply = NULL;
                return fake.rc;
        }
        *ret = fake.reply;
        fake.reply = NULL;
        return 0;
}

int __wrap_auth_key_generate(char out[AUTH_KEY_MAX])
{
        fake.gen_calls++;
        if (fake.gen_rc < 0)
                return fake.gen_rc;
        snprintf(out, AUTH_KEY_MAX, "%s", FIXED_KEY);
        return 0;
}

static void fake_answer(int rc, redisReply *reply)
{
        reply_free(fake.reply);
        fake.rc = rc;
        fake.reply = reply;
}

static int fake_setup(void **state)
{
        (void)state;
        memset(&fake, 0, sizeof(fake));
        return 0;
}

static int fake_teardown(void **state)
{
        (void)state;
        reply_free(fake.reply);
        fake.reply = NULL;
        return 0;
}

/* The (fake) connection is never dereferenced. */
#define C ((struct redis_conn *)&fake)

static char fixed_hash[65], fixed_id[KEYSTORE_ID_LEN + 1];

static void fixed_key_hash(void)
{
        assert_int_equal(auth_key_hash(FIXED_KEY, fixed_hash), 0);
        memcpy(fixed_id, fixed_hash, KEYSTORE_ID_LEN);
        fixed_id[KEYSTORE_ID_LEN] = '\0';
}

static bool all_zero(const char *buf, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (buf[i])
                        return false;
        return true;
}

/* ---- ids ---- */

static void test_id_valid(void **state)
{
        (void)state;
        assert_true(keystore_id_valid("0123456789abcdef"));
        assert_false(keystore_id_valid(NULL));
        assert_false(keystore_id_valid(""));
        assert_false(keystore_id_valid("0123456789abcde"));
        assert_false(keystore_id_valid("0123456789abcdef0"));
        assert_false(keystore_id_valid("0123456789ABCDEF"));
        assert_false(keystore_id_valid("0123456789abcdeg"));
}

/* ---- tenants ---- */

static void test_tenant_set_args(void **state)
{
        (void)state;
        fake_answer(0, r_strs("created", NULL));
        assert_int_equal(keystore_tenant_set(C, "acme", KEYSTORE_TENANT_CREATE, 5,
                                             KEYSTORE_CAP_KEEP, KEYSTORE_CAP_KEEP),
                         0);
        assert_int_equal(fake.id, LUA_TENANT_SET);
        assert_int_equal(fake.argc, 5);
        assert_string_equal(fake.argv[0], "acme");
        assert_string_equal(fake.argv[1], "create");
        assert_string_equal(fake.argv[2], "5");
        assert_string_equal(fake.argv[3], "");
        assert_string_equal(fake.argv[4], "");

        fake_answer(0, r_strs("updated", NULL));
        assert_int_equal(keystore_tenant_set(C, "a.b@c-d_e", KEYSTORE_TENANT_UPDATE,
                                             KEYSTORE_CAP_DEFAULT, KEYSTORE_CAP_MAX, 2048),
                         0);
        assert_string_equal(fake.argv[0], "a.b@c-d_e");
        assert_string_equal(fake.argv[1], "update");
        assert_string_equal(fake.argv[2], "default");
        assert_string_equal(fake.argv[3], "1000000");
        assert_string_equal(fake.argv[4], "2048");
        fake_answer(0, r_strs("updated", NULL));
        assert_int_equal(keystore_tenant_set(C, "acme", KEYSTORE_TENANT_UPDATE, KEYSTORE_CAP_KEEP,
                                             KEYSTORE_CAP_KEEP, KEYSTORE_CAP_DEFAULT),
                         0);
        assert_string_equal(fake.argv[4], "default");
        assert_int_equal(fake.calls, 3);
}

static void test_tenant_set_invalid(void **state)
{
        char long_name[JSON_INPUT_ID_MAX + 2];

        (void)state;
        memset(long_name, 'a', sizeof(long_name) - 1);
        long_name[sizeof(long_name) - 1] = '\0';
        assert_int_equal(keystore_tenant_set(C, "", KEYSTORE_TENANT_CREATE, 1, 1, KEYSTORE_CAP_KEEP),
                         -EINVAL);
        assert_int_equal(
                keystore_tenant_set(C, "a b", KEYSTORE_TENANT_CREATE, 1, 1, KEYSTORE_CAP_KEEP),
                -EINVAL);
        assert_int_equal(
                keystore_tenant_set(C, "a:b", KEYSTORE_TENANT_CREATE, 1, 1, KEYSTORE_CAP_KEEP),
                -EINVAL);
        assert_int_equal(
                keystore_tenant_set(C, long_name, KEYSTORE_TENANT_CREATE, 1, 1, KEYSTORE_CAP_KEEP),
                -EINVAL);
        assert_int_equal(
                keystore_tenant_set(C, "acme", KEYSTORE_TENANT_CREATE, -3, 1, KEYSTORE_CAP_KEEP),
                -EINVAL);
        assert_int_equal(keystore_tenant_set(C, "acme", KEYSTORE_TENANT_CREATE, 1,
                                             KEYSTORE_CAP_MAX + 1, KEYSTORE_CAP_KEEP),
                         -EINVAL);
        /* a tenant's disk has a bound: never 0 (none), never below the smallest disk */
        assert_int_equal(keystore_tenant_set(C, "acme", KEYSTORE_TENANT_CREATE, 1, 1, 0), -EINVAL);
        assert_int_equal(keystore_tenant_set(C, "acme", KEYSTORE_TENANT_CREATE, 1, 1, 63), -EINVAL);
        assert_int_equal(keystore_tenant_set(C, "acme", KEYSTORE_TENANT_CREATE, 1, 1,
                                             16LL * 1024 * 1024 + 1),
                         -EINVAL);
        assert_int_equal(keystore_tenant_set(C, "acme", KEYSTORE_TENANT_CREATE, 1, 1, -3), -EINVAL);
        assert_int_equal(
                keystore_tenant_set(C, "acme", (enum keystore_tenant_op)7, 1, 1, KEYSTORE_CAP_KEEP),
                -EINVAL);
        assert_int_equal(fake.calls, 0);
}

static void test_tenant_set_replies(void **state)
{
        (void)state;
        fake_answer(0, r_strs("exists", NULL));
        assert_int_equal(
                keystore_tenant_set(C, "acme", KEYSTORE_TENANT_CREATE, 1, 1, KEYSTORE_CAP_KEEP),
                -EEXIST);
        fake_answer(0, r_strs("notfound", NULL));
        assert_int_equal(
                keystore_tenant_set(C, "acme", KEYSTORE_TENANT_UPDATE, 1, 1, KEYSTORE_CAP_KEEP),
                -ENOENT);
        fake_answer(0, r_strs("created", "extra", NULL));
        assert_int_equal(
                keystore_tenant_set(C, "acme", KEYSTORE_TENANT_CREATE, 1, 1, KEYSTORE_CAP_KEEP),
                -EPROTO);
        fake_answer(0, r_str("created"));
        assert_int_equal(
                keystore_tenant_set(C, "acme", KEYSTORE_TENANT_CREATE, 1, 1, KEYSTORE_CAP_KEEP),
                -EPROTO);
        fake_answer(-EIO, NULL);
        assert_int_equal(
                keystore_tenant_set(C, "acme", KEYSTORE_TENANT_CREATE, 1, 1, KEYSTORE_CAP_KEEP),
                -EIO);
}

static void test_tenant_list(void **state)
{
        struct keystore_tenant *v = NULL;
        size_t n = 99;

        (void)state;
        fake_answer(0, r_arr(2,
                             r_arr(6, r_str("acme"), r_str("4"), r_str(""), r_str("1796212800123"),
                                   r_int(2), r_str("")),
                             r_arr(6, r_str("beta"), r_str(""), r_str("0"), r_str(""), r_int(0),
                                   r_str("512"))));
        assert_int_equal(keystore_tenant_list(C, &v, &n), 0);
        assert_int_equal(fake.id, LUA_TENANT_LIST);
        assert_int_equal(fake.argc, 0);
        assert_int_equal(n, 2);
        assert_string_equal(v[0].name, "acme");
        assert_int_equal(v[0].max_slots, 4);
        assert_int_equal(v[0].max_sandboxes, -1);
        assert_int_equal(v[0].created_at_ms, 1796212800123LL);
        assert_int_equal(v[0].live_keys, 2);
        assert_int_equal(v[0].max_disk_mb, -1);
        assert_string_equal(v[1].name, "beta");
        assert_int_equal(v[1].max_disk_mb, 512);
        assert_int_equal(v[1].max_slots, -1);
        assert_int_equal(v[1].max_sandboxes, 0);
        assert_int_equal(v[1].created_at_ms, -1);
        assert_int_equal(v[1].live_keys, 0);
        free(v);

        fake_answer(0, r_arr(0));
        assert_int_equal(keystore_tenant_list(C, &v, &n), 0);
        assert_null(v);
        assert_int_equal(n, 0);
}

static void test_tenant_list_malformed(void **state)
{
        redisReply *bad[] = {
                r_str("nope"),
                r_arr(1, r_arr(4, r_str("acme"), r_str(""), r_str(""), r_str("1"))),
                /* a row of the five fields before disks */
                r_arr(1, r_arr(5, r_str("acme"), r_str(""), r_str(""), r_str("1"), r_int(0))),
                r_arr(1, r_arr(6, r_int(1), r_str(""), r_str(""), r_str("1"), r_int(0), r_str(""))),
                r_arr(1, r_arr(6, r_str("acme"), r_str("x"), r_str(""), r_str("1"), r_int(0),
                               r_str(""))),
                r_arr(1, r_arr(6, r_str("acme"), r_str("-4"), r_str(""), r_str("1"), r_int(0),
                               r_str(""))),
                r_arr(1, r_arr(6, r_str("acme"), r_str(""), r_str(""), r_str("1"), r_int(-1),
                               r_str(""))),
                r_arr(1, r_arr(6, r_str("acme"), r_str(""), r_str(""), r_str("1"), r_int(0),
                               r_str("-2"))),
                r_arr(2, r_arr(6, r_str("a"), r_str(""), r_str(""), r_str("1"), r_int(0), r_str("")),
                      r_str("b")),
        };
        struct keystore_tenant *v;
        size_t n;

        (void)state;
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                v = (void *)1;
                n = 7;
                fake_answer(0, bad[i]);
                assert_int_equal(keystore_tenant_list(C, &v, &n), -EPROTO);
                assert_null(v);
                assert_int_equal(n, 0);
        }
        fake_answer(-EIO, NULL);
        assert_int_equal(keystore_tenant_list(C, &v, &n), -EIO);
}

/* ---- keys ---- */

static void test_key_create(void **state)
{
        char secret[AUTH_KEY_MAX];
        struct keystore_key k;

        (void)state;
        fixed_key_hash();
        fake_answer(0, r_strs("created", fixed_id, "1796212800123", NULL));
        assert_int_equal(keystore_key_create(C, "acme", "ci", true, false, secret, &k), 0);
        assert_string_equal(secret, FIXED_KEY);
        assert_int_equal(fake.id, LUA_KEY_CREATE);
        assert_int_equal(fake.argc, 5);
        /* the hash goes to Redis, never the key */
        assert_string_equal(fake.argv[0], fixed_hash);
        assert_string_equal(fake.argv[1], "acme");
        assert_string_equal(fake.argv[2], "ci");
        assert_string_equal(fake.argv[3], "1");
        assert_string_equal(fake.argv[4], "0");
        for (int i = 0; i < fake.argc; i++)
                assert_null(strstr(fake.argv[i], FIXED_KEY + 4));
        assert_string_equal(k.id, fixed_id);
        assert_string_equal(k.tenant, "acme");
        assert_string_equal(k.name, "ci");
        assert_true(k.admin);
        assert_false(k.revoked);
        assert_int_equal(k.created_at_ms, 1796212800123LL);
        assert_int_equal(k.revoked_at_ms, -1);

        /* no name, not admin, create the tenant */
        fake_answer(0, r_strs("created", fixed_id, "5", NULL));
        assert_int_equal(keystore_key_create(C, "acme", NULL, false, true, secret, &k), 0);
        assert_string_equal(fake.argv[2], "");
        assert_string_equal(fake.argv[3], "0");
        assert_string_equal(fake.argv[4], "1");
        assert_string_equal(k.name, "");
        assert_false(k.admin);
}

static void test_key_create_errors(void **state)
{
        char secret[AUTH_KEY_MAX];
        struct keystore_key k;

        (void)state;
        fixed_key_hash();
        /* bad names: no key is even generated */
        assert_int_equal(keystore_key_create(C, "", "x", false, false, secret, &k), -EINVAL);
        assert_int_equal(keystore_key_create(C, "a/b", "x", false, false, secret, &k), -EINVAL);
        assert_int_equal(keystore_key_create(C, "acme", "a b", false, false, secret, &k), -EINVAL);
        assert_int_equal(fake.gen_calls, 0);
        assert_int_equal(fake.calls, 0);

        fake.gen_rc = -EIO;
        assert_int_equal(keystore_key_create(C, "acme", "", false, false, secret, &k), -EIO);
        assert_int_equal(fake.calls, 0);
        assert_true(all_zero(secret, sizeof(secret)));
        fake.gen_rc = 0;

        /* every failure wipes the secret */
        struct {
                redisReply *reply;
                int rc, want;
        } cases[] = {
                { r_strs("notenant", NULL), 0, -ENOENT },
                { r_strs("collision", NULL), 0, -EEXIST },
                { r_strs("created", "0000000000000000", "1", NULL), 0, -EPROTO }, /* wrong id */
                { r_strs("created", NULL), 0, -EPROTO },
                { NULL, 0, -EPROTO }, /* id filled below: no createdAt */
                { NULL, -EIO, -EIO },
        };
        cases[4].reply = r_strs("created", fixed_id, "", NULL);
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                memset(secret, 'x', sizeof(secret));
                fake_answer(cases[i].rc, cases[i].reply);
                assert_int_equal(keystore_key_create(C, "acme", "", false, false, secret, &k),
                                 cases[i].want);
                assert_true(all_zero(secret, sizeof(secret)));
        }
}

static void test_key_add(void **state)
{
        struct keystore_key k;
        char hash[65], id[KEYSTORE_ID_LEN + 1];

        (void)state;
        assert_int_equal(auth_key_hash("seed-key.1", hash), 0);
        memcpy(id, hash, KEYSTORE_ID_LEN);
        id[KEYSTORE_ID_LEN] = '\0';
        fake_answer(0, r_strs("created", id, "42", NULL));
        assert_int_equal(keystore_key_add(C, "seed-key.1", "acme", "", false, true, &k), 0);
        assert_string_equal(fake.argv[0], hash);
        assert_string_equal(k.id, id);
        assert_int_equal(k.created_at_ms, 42);

        /* a key a client could not present is refused */
        assert_int_equal(keystore_key_add(C, "has space", "acme", "", false, false, &k), -EINVAL);
        assert_int_equal(keystore_key_add(C, "", "acme", "", false, false, &k), -EINVAL);
        assert_int_equal(keystore_key_add(C, NULL, "acme", "", false, false, &k), -EINVAL);
        assert_int_equal(fake.calls, 1);
}

static void test_key_revoke(void **state)
{
        enum keystore_revoke_result res;

        (void)state;
        fake_answer(0, r_strs("revoked", "acme", NULL));
        assert_int_equal(keystore_key_revoke(C, "0123456789abcdef", &res), 0);
        assert_int_equal(fake.id, LUA_KEY_REVOKE);
        assert_int_equal(fake.argc, 1);
        assert_string_equal(fake.argv[0], "0123456789abcdef");
        assert_int_equal(res, KEYSTORE_REVOKED);
        /* the publish is on every subscriber's socket before it returns */
        assert_int_equal(fake.ping_calls, 1);

        fake_answer(0, r_strs("already", "acme", NULL));
        assert_int_equal(keystore_key_revoke(C, "0123456789abcdef", &res), 0);
        assert_int_equal(res, KEYSTORE_ALREADY_REVOKED);
        assert_int_equal(fake.ping_calls, 1); /* nothing was published */

        /* a revoke whose delivery cannot be confirmed is an error */
        fake.ping_rc = -EIO;
        fake_answer(0, r_strs("revoked", "acme", NULL));
        assert_int_equal(keystore_key_revoke(C, "0123456789abcdef", &res), -EIO);
        fake.ping_rc = 0;
        fake.calls--;

        fake_answer(0, r_strs("notfound", NULL));
        assert_int_equal(keystore_key_revoke(C, "0123456789abcdef", &res), -ENOENT);
        fake_answer(0, r_strs("revoked", NULL));
        assert_int_equal(keystore_key_revoke(C, "0123456789abcdef", &res), -EPROTO);
        fake_answer(0, r_int(1));
        assert_int_equal(keystore_key_revoke(C, "0123456789abcdef", &res), -EPROTO);
        fake_answer(-EIO, NULL);
        assert_int_equal(keystore_key_revoke(C, "0123456789abcdef", &res), -EIO);
        assert_int_equal(fake.calls, 6);

        assert_int_equal(keystore_key_revoke(C, "sbk_0123456789ab", &res), -EINVAL);
        assert_int_equal(keystore_key_revoke(C, "*", &res), -EINVAL);
        assert_int_equal(fake.calls, 6);
}

static void test_key_rotate(void **state)
{
        char secret[AUTH_KEY_MAX];
        struct keystore_key k;

        (void)state;
        fixed_key_hash();
        fake_answer(0, r_strs("rotated", fixed_id, "acme", "ci", "1", "1796212800123", NULL));
        assert_int_equal(keystore_key_rotate(C, "0123456789abcdef", secret, &k), 0);
        assert_int_equal(fake.id, LUA_KEY_ROTATE);
        assert_int_equal(fake.argc, 2);
        assert_string_equal(fake.argv[0], "0123456789abcdef");
        assert_string_equal(fake.argv[1], fixed_hash);
        assert_string_equal(secret, FIXED_KEY);
        assert_string_equal(k.id, fixed_id);
        assert_string_equal(k.tenant, "acme");
        assert_string_equal(k.name, "ci");
        assert_true(k.admin);
        assert_int_equal(k.created_at_ms, 1796212800123LL);
        assert_int_equal(fake.ping_calls, 1); /* the old key's publish delivered */

        struct {
                redisReply *reply;
                int rc, want;
        } cases[] = {
                { r_strs("notfound", NULL), 0, -ENOENT },
                { r_strs("revoked", NULL), 0, -EKEYREVOKED },
                { r_strs("collision", NULL), 0, -EEXIST },
                { NULL, 0, -EPROTO }, /* a create's answer: no tenant */
                { NULL, 0, -EPROTO }, /* admin neither 0 nor 1 */
                { r_strs("rotated", "0000000000000000", "acme", "", "0", "1", NULL), 0, -EPROTO },
                { NULL, -EIO, -EIO },
        };
        cases[3].reply = r_strs("created", fixed_id, "1", NULL);
        cases[4].reply = r_strs("rotated", fixed_id, "acme", "", "yes", "1", NULL);
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                memset(secret, 'x', sizeof(secret));
                fake_answer(cases[i].rc, cases[i].reply);
                assert_int_equal(keystore_key_rotate(C, "0123456789abcdef", secret, &k),
                                 cases[i].want);
                assert_true(all_zero(secret, sizeof(secret)));
        }
        assert_int_equal(fake.ping_calls, 1); /* none of those published */

        fake.calls = 0;
        assert_int_equal(keystore_key_rotate(C, "0123456789ABCDEF", secret, &k), -EINVAL);
        assert_int_equal(fake.calls, 0);
}

static void test_key_list(void **state)
{
        struct keystore_key *v = NULL;
        size_t n = 0;

        (void)state;
        fake_answer(0, r_arr(2,
                             r_strs("0123456789abcdef", "acme", "ci", "1", "1796212800123", "0", "",
                                    NULL),
                             r_strs("fedcba9876543210", "acme", "", "0", "1", "1", "2", NULL)));
        assert_int_equal(keystore_key_list(C, "acme", &v, &n), 0);
        assert_int_equal(fake.id, LUA_KEY_LIST);
        assert_int_equal(fake.argc, 1);
        assert_string_equal(fake.argv[0], "acme");
        assert_int_equal(n, 2);
        assert_string_equal(v[0].id, "0123456789abcdef");
        assert_string_equal(v[0].tenant, "acme");
        assert_string_equal(v[0].name, "ci");
        assert_true(v[0].admin);
        assert_false(v[0].revoked);
        assert_int_equal(v[0].created_at_ms, 1796212800123LL);
        assert_int_equal(v[0].revoked_at_ms, -1);
        assert_string_equal(v[1].name, "");
        assert_false(v[1].admin);
        assert_true(v[1].revoked);
        assert_int_equal(v[1].revoked_at_ms, 2);
        free(v);

        fake_answer(0, r_arr(0));
        assert_int_equal(keystore_key_list(C, NULL, &v, &n), 0);
        assert_string_equal(fake.argv[0], "");
        assert_null(v);
        assert_int_equal(n, 0);

        assert_int_equal(keystore_key_list(C, "no such/tenant", &v, &n), -EINVAL);
        assert_int_equal(fake.calls, 2);
}

static void test_key_list_malformed(void **state)
{
        redisReply *bad[] = {
                r_strs("created", NULL),
                r_arr(1, r_strs("0123456789abcdef", "acme", "", "0", "1", "0", NULL)),
                r_arr(1, r_strs("0123456789abcdeX", "acme", "", "0", "1", "0", "", NULL)),
                r_arr(1, r_strs("0123456789abcdef", "acme", "", "2", "1", "0", "", NULL)),
                r_arr(1, r_strs("0123456789abcdef", "acme", "", "0", "1", "", "", NULL)),
                r_arr(1, r_strs("0123456789abcdef", "acme", "", "0", "x1", "0", "", NULL)),
                r_arr(1, r_arr(7, r_str("0123456789abcdef"), r_int(3), r_str(""), r_str("0"),
                               r_str("1"), r_str("0"), r_str(""))),
        };
        struct keystore_key *v;
        size_t n;

        (void)state;
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                v = (void *)1;
                n = 7;
                fake_answer(0, bad[i]);
                assert_int_equal(keystore_key_list(C, "", &v, &n), -EPROTO);
                assert_null(v);
                assert_int_equal(n, 0);
        }
}

#define FAKE_TEST(f) cmocka_unit_test_setup_teardown(f, fake_setup, fake_teardown)

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_id_valid),
                FAKE_TEST(test_tenant_set_args),
                FAKE_TEST(test_tenant_set_invalid),
                FAKE_TEST(test_tenant_set_replies),
                FAKE_TEST(test_tenant_list),
                FAKE_TEST(test_tenant_list_malformed),
                FAKE_TEST(test_key_create),
                FAKE_TEST(test_key_create_errors),
                FAKE_TEST(test_key_add),
                FAKE_TEST(test_key_revoke),
                FAKE_TEST(test_key_rotate),
                FAKE_TEST(test_key_list),
                FAKE_TEST(test_key_list_malformed),
        };
        return cmocka_run_group_tests_name("keystore", tests, NULL, NULL);
}
