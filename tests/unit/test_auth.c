/* Unit tests for lib/store/auth.c: key hashing, generation, shape checks, seeds,
 * and the mapping of the key_lookup script's replies (Redis replaced at
 * the link seam). */
/* WRAP: -Wl,--wrap=redis_conn_script */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "store/auth.h"
#include "store/lua_scripts.h"

static struct {
        int argc;
        char argv[4][80];
        int ret;
        const char *tag;    /* reply: {tag, tenant, admin, id} or {tag} */
        const char *tenant;
        const char *admin;
        int calls;
} fake;

static redisReply *str_reply(const char *s)
{
        redisReply *r = calloc(1, sizeof(*r));
        r->type = REDIS_REPLY_STRING;
        r->str = strdup(s);
        r->len = strlen(s);
        return r;
}

int __wrap_redis_conn_script(struct redis_conn *c, enum lua_script_id id, int argc, const char **argv,
                             redisReply **ret);
int __wrap_redis_conn_script(struct redis_conn *c, enum lua_script_id id, int argc, const char **argv,
                             redisReply **ret)
{
        redisReply *r;

        (void)c;
        assert_int_equal(id, LUA_KEY_LOOKUP);
        fake.calls++;
        fake.argc = argc;
        for (int i = 0; i < argc && i < 4; i++) {
                assert_true(strlen(argv[i]) < sizeof(fake.argv[i]));
                strcpy(fake.argv[i], argv[i]);
        }
        if (fake.ret < 0)
                return fake.ret;
        r = calloc(1, sizeof(*r));
        r->type = REDIS_REPLY_ARRAY;
        r->elements = fake.tenant ? 4 : 1;
        r->element = calloc(r->elements, sizeof(*r->element));
        r->element[0] = str_reply(fake.tag);
        if (fake.tenant) {
                r->element[1] = str_reply(fake.tenant);
                r->element[2] = str_reply(fake.admin);
                r->element[3] = str_reply(argv[1]);
        }
        *ret = r;
        return 0;
}

static void test_hash_known_vector(void **state)
{
        char h[65];

        (void)state;
        /* SHA-256("abc"), FIPS 180-2 appendix B.1 */
        assert_int_equal(auth_key_hash("abc", h), 0);
        assert_string_equal(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert_int_equal(auth_key_hash(NULL, h), -EINVAL);
}

static void test_generate(void **state)
{
        char a[AUTH_KEY_MAX], b[AUTH_KEY_MAX];

        (void)state;
        assert_int_equal(auth_key_generate(a), 0);
        assert_int_equal(auth_key_generate(b), 0);
        assert_int_equal(strlen(a), 4 + 48);
        assert_memory_equal(a, "sbk_", 4);
        assert_int_equal(strspn(a + 4, "0123456789abcdef"), 48);
        assert_string_not_equal(a, b);
        assert_true(auth_key_well_formed(a));
}

static void test_well_formed(void **state)
{
        char big[AUTH_KEY_LEN_MAX + 2];

        (void)state;
        assert_false(auth_key_well_formed(NULL));
        assert_false(auth_key_well_formed(""));
        assert_false(auth_key_well_formed("a b"));
        assert_false(auth_key_well_formed("tab\there"));
        assert_false(auth_key_well_formed("caf\xc3\xa9"));
        memset(big, 'k', sizeof(big) - 1);
        big[sizeof(big) - 1] = '\0';
        assert_false(auth_key_well_formed(big));
        big[AUTH_KEY_LEN_MAX] = '\0';
        assert_true(auth_key_well_formed(big));
}

static void test_seed_tenant(void **state)
{
        struct broker_config cfg = { 0 };
        char h[65], tenant[AUTH_TENANT_MAX];

        (void)state;
        strcpy(cfg.osb_api_keys, "k1:acme,k2:globex,bad:no/slash,k3:");
        assert_int_equal(auth_key_hash("k2", h), 0);
        assert_int_equal(auth_seed_tenant(&cfg, h, tenant), 0);
        assert_string_equal(tenant, "globex");
        assert_int_equal(auth_key_hash("k1", h), 0);
        assert_int_equal(auth_seed_tenant(&cfg, h, tenant), 0);
        assert_string_equal(tenant, "acme");
        /* a tenant that is not an id, an empty tenant, an unknown key */
        assert_int_equal(auth_key_hash("bad", h), 0);
        assert_int_equal(auth_seed_tenant(&cfg, h, tenant), -ENOENT);
        assert_string_equal(tenant, "");
        assert_int_equal(auth_key_hash("k3", h), 0);
        assert_int_equal(auth_seed_tenant(&cfg, h, tenant), -ENOENT);
        assert_int_equal(auth_key_hash("k", h), 0);
        assert_int_equal(auth_seed_tenant(&cfg, h, tenant), -ENOENT);
        cfg.osb_api_keys[0] = '\0';
        assert_int_equal(auth_seed_tenant(&cfg, h, tenant), -ENOENT);
}

static void test_lookup(void **state)
{
        struct broker_config cfg = { 0 };
        struct auth_principal p;
        char h[65];

        (void)state;
        strcpy(cfg.osb_api_keys, "seedkey:acme");
        memset(&fake, 0, sizeof(fake));

        /* a malformed key never reaches Redis */
        assert_int_equal(auth_lookup(NULL, &cfg, "has space", &p), -EACCES);
        assert_int_equal(fake.calls, 0);

        /* a stored key: the script gets its hash, its id and no seed tenant */
        fake.tag = "ok";
        fake.tenant = "globex";
        fake.admin = "1";
        assert_int_equal(auth_lookup(NULL, &cfg, "sbk_x", &p), 0);
        assert_int_equal(auth_key_hash("sbk_x", h), 0);
        assert_int_equal(fake.argc, 3);
        assert_string_equal(fake.argv[0], h);
        assert_memory_equal(fake.argv[1], h, 16);
        assert_int_equal(strlen(fake.argv[1]), 16);
        assert_string_equal(fake.argv[2], "");
        assert_string_equal(p.tenant, "globex");
        assert_true(p.admin);
        assert_memory_equal(p.key_id, h, 16);

        /* a seed key: its tenant goes along, so the script may store it */
        fake.tenant = "acme";
        fake.admin = "0";
        assert_int_equal(auth_lookup(NULL, &cfg, "seedkey", &p), 0);
        assert_string_equal(fake.argv[2], "acme");
        assert_false(p.admin);

        /* unknown or revoked */
        fake.tag = "denied";
        fake.tenant = NULL;
        assert_int_equal(auth_lookup(NULL, &cfg, "sbk_y", &p), -EACCES);
        assert_string_equal(p.tenant, "");

        /* a tenant that is not an id is a protocol error, not a login */
        fake.tag = "ok";
        fake.tenant = "a/b";
        fake.admin = "0";
        assert_int_equal(auth_lookup(NULL, &cfg, "sbk_z", &p), -EPROTO);

        /* Redis down */
        fake.ret = -EIO;
        assert_int_equal(auth_lookup(NULL, &cfg, "sbk_z", &p), -EIO);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_hash_known_vector),
                cmocka_unit_test(test_generate),
                cmocka_unit_test(test_well_formed),
                cmocka_unit_test(test_seed_tenant),
                cmocka_unit_test(test_lookup),
        };
        return cmocka_run_group_tests_name("auth", tests, NULL, NULL);
}
