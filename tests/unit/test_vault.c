/* Unit tests for lib/sandbox/vault.c: parsing untrusted Credential Vault
 * bodies (create, PATCH), the bounds, the all-or-nothing PATCH, and that no
 * sanitized view or error message ever carries a credential's value. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <sys/stat.h>
#include <unistd.h>

#include "sandbox/vault.h"
#include "sandbox/vault_view.h"
#include "sandbox/vault_seal.h"

#define SECRET "TOPSECRET-value-42"

static const char *const create_body =
        "{\"credentials\":[{\"name\":\"gh\",\"source\":{\"type\":\"inline\",\"value\":\"" SECRET
        "\"}},"
        "{\"name\":\"npm\",\"source\":{\"value\":\"" SECRET "-npm\"}}],"
        "\"bindings\":[{\"name\":\"github\",\"match\":{\"hosts\":[\"Private.Test.\",\"*.private."
        "test\"],"
        "\"ports\":[443],\"methods\":[\"get\",\"GET\"]},\"auth\":{\"type\":\"bearer\","
        "\"credential\":\"gh\"}},"
        "{\"name\":\"reg\",\"match\":{\"hosts\":[\"npm.test\"]},\"auth\":{\"type\":\"passthrough\","
        "\"substitutions\":[{\"credential\":\"npm\",\"placeholder\":\"__NPM__\",\"in\":[\"header\","
        "\"body\"]}]}}]}";

static struct json_object *create_ok(const char *s)
{
        struct json_object *v = NULL;
        char err[256] = "";

        if (vault_parse_create(s, strlen(s), &v, err, sizeof(err)) != 0)
                fail_msg("vault %.300s rejected: %s", s, err);
        return v;
}

static void expect_create_rejected(const char *s, const char *want)
{
        struct json_object *v = (struct json_object *)1;
        char err[256] = "";

        if (vault_parse_create(s, strlen(s), &v, err, sizeof(err)) != -EINVAL)
                fail_msg("vault %.300s accepted", s);
        assert_null(v);
        assert_true(err[0] != '\0');
        assert_null(strstr(err, SECRET));
        if (want && !strstr(err, want))
                fail_msg("vault %.200s: error \"%s\" lacks \"%s\"", s, err, want);
}

static const char *text(struct json_object *o)
{
        return json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
}

static void test_create_normalizes(void **state)
{
        struct json_object *v = create_ok(create_body);

        (void)state;
        assert_int_equal(vault_check(v), 0);
        assert_non_null(strstr(text(v), "\"revision\":1"));
        assert_non_null(strstr(text(v), "\"hosts\":[\"private.test\",\"*.private.test\"]"));
        assert_non_null(strstr(text(v), "\"methods\":[\"GET\"]"));
        assert_null(strstr(text(v), "ports")); /* accepted and ignored */
        assert_non_null(strstr(text(v), "\"value\":\"" SECRET "\""));
        json_object_put(v);
}

static void test_views_carry_no_value(void **state)
{
        struct json_object *v = create_ok(create_body), *o = NULL;

        (void)state;
        for (int w = VAULT_VIEW_STATE; w <= VAULT_VIEW_BINDINGS; w++) {
                assert_int_equal(vault_view(v, (enum vault_view)w, &o), 0);
                assert_null(strstr(text(o), SECRET));
                assert_null(strstr(text(o), "\"value\""));
                json_object_put(o);
        }
        assert_int_equal(vault_view(v, VAULT_VIEW_STATE, &o), 0);
        assert_string_equal(
                text(o),
                "{\"revision\":1,\"credentials\":[{\"name\":\"gh\",\"revision\":1,\"sourceType\":"
                "\"inline\"},{\"name\":\"npm\",\"revision\":1,\"sourceType\":\"inline\"}],"
                "\"bindings\":[{\"name\":\"github\",\"revision\":1,\"match\":{\"hosts\":["
                "\"private.test\",\"*.private.test\"],\"methods\":[\"GET\"]},\"auth\":{\"type\":"
                "\"bearer\",\"credential\":\"gh\"}},{\"name\":\"reg\",\"revision\":1,\"match\":{"
                "\"hosts\":[\"npm.test\"]},\"auth\":{\"type\":\"passthrough\",\"substitutions\":[{"
                "\"credential\":\"npm\",\"placeholder\":\"__NPM__\",\"in\":[\"header\",\"body\"]}]}"
                "}]}");
        json_object_put(o);
        assert_int_equal(vault_view_one(v, VAULT_VIEW_CREDENTIALS, "npm", &o), 0);
        assert_string_equal(text(o), "{\"name\":\"npm\",\"revision\":1,\"sourceType\":\"inline\"}");
        json_object_put(o);
        assert_int_equal(vault_view_one(v, VAULT_VIEW_BINDINGS, "nope", &o), -ENOENT);
        assert_null(o);
        json_object_put(v);
}

static void test_create_rejected(void **state)
{
        char big[VAULT_VALUE_MAX + 200], many[8192];
        size_t n;

        (void)state;
        expect_create_rejected("[]", NULL);
        expect_create_rejected("{\"credentials\":[]}", "bindings is required");
        expect_create_rejected("{\"credentials\":[{\"name\":\"-a\",\"source\":{\"value\":\"x\"}}],"
                               "\"bindings\":[]}",
                               "name must be");
        expect_create_rejected("{\"credentials\":[{\"name\":\"a\",\"source\":{\"value\":\"" SECRET
                               "\\n\"}}],\"bindings\":[]}",
                               "without NUL, CR or LF");
        expect_create_rejected("{\"credentials\":[{\"name\":\"a\",\"source\":{\"value\":\"" SECRET
                               "\\u0000\"}}],\"bindings\":[]}",
                               "without NUL");
        expect_create_rejected("{\"credentials\":[{\"name\":\"a\",\"source\":{\"type\":\"file\","
                               "\"value\":\"x\"}}],\"bindings\":[]}",
                               "inline");
        expect_create_rejected(
                "{\"credentials\":[],\"bindings\":[{\"name\":\"b\",\"match\":{\"hosts\":"
                "[\"h.test\"]},\"auth\":{\"type\":\"bearer\",\"credential\":\"x\"}}]}",
                "does not hold");
        expect_create_rejected(
                "{\"credentials\":[{\"name\":\"x\",\"source\":{\"value\":\"v\"}}],"
                "\"bindings\":[{\"name\":\"b\",\"match\":{\"hosts\":[\"h.test\"],"
                "\"ports\":[22]},\"auth\":{\"type\":\"bearer\",\"credential\":\"x\"}}]}",
                "80 or 443");
        expect_create_rejected("{\"credentials\":[{\"name\":\"x\",\"source\":{\"value\":\"v\"}}],"
                               "\"bindings\":[{\"name\":\"b\",\"match\":{\"hosts\":[\"h.test\"]},"
                               "\"auth\":{\"type\":\"customHeaders\",\"headers\":[{\"name\":"
                               "\"transfer-encoding\",\"credential\":\"x\"}]}}]}",
                               "header name");
        expect_create_rejected(
                "{\"credentials\":[{\"name\":\"x\",\"source\":{\"value\":\"v\"}}],"
                "\"bindings\":[{\"name\":\"b\",\"match\":{\"hosts\":[\"h.test\"]},"
                "\"auth\":{\"type\":\"passthrough\",\"substitutions\":[{\"credential\":"
                "\"x\",\"placeholder\":\"P\",\"in\":[\"Header\"]}]}}]}",
                "in[0]");
        /* the value cap, exactly */
        n = (size_t)snprintf(big, sizeof(big),
                             "{\"credentials\":[{\"name\":\"a\",\"source\":{\"value\":\"");
        memset(big + n, 'v', VAULT_VALUE_MAX + 1);
        snprintf(big + n + VAULT_VALUE_MAX + 1, sizeof(big) - n - VAULT_VALUE_MAX - 1,
                 "\"}}],\"bindings\":[]}");
        expect_create_rejected(big, "source.value must be 1 to 4096");
        memmove(big + n + VAULT_VALUE_MAX, big + n + VAULT_VALUE_MAX + 1,
                strlen(big + n + VAULT_VALUE_MAX));
        json_object_put(create_ok(big));
        /* the count cap */
        n = (size_t)snprintf(many, sizeof(many), "{\"bindings\":[],\"credentials\":[");
        for (int i = 0; i <= VAULT_CREDENTIALS_MAX; i++)
                n += (size_t)snprintf(many + n, sizeof(many) - n,
                                      "%s{\"name\":\"c%d\",\"source\":{\"value\":\"v\"}}",
                                      i ? "," : "", i);
        snprintf(many + n, sizeof(many) - n, "]}");
        expect_create_rejected(many, "at most 32 credentials");
}

static void test_patch_all_or_nothing(void **state)
{
        struct json_object *v = create_ok(create_body), *next = NULL;
        const char *before = strdup(text(v));
        char err[256] = "";
        const char *p;

        (void)state;
        /* replace a value, delete a binding, add one */
        p = "{\"expectedRevision\":1,\"credentials\":{\"replace\":[{\"name\":\"gh\",\"source\":{"
            "\"value\":"
            "\"NEW\"}}]},\"bindings\":{\"delete\":[\"reg\"],\"add\":[{\"name\":\"api\",\"match\":{"
            "\"hosts\":"
            "[\"api.test\"]},\"auth\":{\"type\":\"apiKey\",\"name\":\"X-Key\",\"credential\":"
            "\"npm\"}}]}}";
        assert_int_equal(vault_apply_patch(v, p, strlen(p), &next, err, sizeof(err)), 0);
        assert_string_equal(text(v), before); /* cur untouched */
        assert_non_null(strstr(text(next), "\"revision\":2"));
        assert_non_null(strstr(text(next), "\"value\":\"NEW\""));
        assert_null(strstr(text(next), "\"reg\""));
        assert_non_null(strstr(text(next), "\"api\""));
        json_object_put(next);
        /* stale revision */
        p = "{\"expectedRevision\":7}";
        assert_int_equal(vault_apply_patch(v, p, strlen(p), &next, err, sizeof(err)), -ESTALE);
        assert_null(next);
        /* a credential a binding uses cannot be deleted alone; nothing changes */
        p = "{\"credentials\":{\"delete\":[\"npm\"],\"add\":[{\"name\":\"z\",\"source\":{\"value\":"
            "\"z\"}}]}}";
        assert_int_equal(vault_apply_patch(v, p, strlen(p), &next, err, sizeof(err)), -EINVAL);
        assert_non_null(strstr(err, "reg"));
        assert_null(next);
        /* ... but with its binding it can */
        p = "{\"credentials\":{\"delete\":[\"npm\"]},\"bindings\":{\"delete\":[\"reg\"]}}";
        assert_int_equal(vault_apply_patch(v, p, strlen(p), &next, err, sizeof(err)), 0);
        assert_null(strstr(text(next), "npm"));
        json_object_put(next);
        /* add of an existing name, replace / delete of a missing one */
        p = "{\"credentials\":{\"add\":[{\"name\":\"gh\",\"source\":{\"value\":\"" SECRET "\"}}]}}";
        assert_int_equal(vault_apply_patch(v, p, strlen(p), &next, err, sizeof(err)), -EINVAL);
        assert_null(strstr(err, SECRET));
        p = "{\"bindings\":{\"replace\":[{\"name\":\"zz\",\"match\":{\"hosts\":[\"a.test\"]},"
            "\"auth\":"
            "{\"type\":\"bearer\",\"credential\":\"gh\"}}]}}";
        assert_int_equal(vault_apply_patch(v, p, strlen(p), &next, err, sizeof(err)), -EINVAL);
        p = "{\"bindings\":{\"delete\":[\"zz\"]}}";
        assert_int_equal(vault_apply_patch(v, p, strlen(p), &next, err, sizeof(err)), -EINVAL);
        p = "{\"credentials\":[]}";
        assert_int_equal(vault_apply_patch(v, p, strlen(p), &next, err, sizeof(err)), -EINVAL);
        assert_string_equal(text(v), before);
        free((void *)before);
        json_object_put(v);
}

static void test_names(void **state)
{
        (void)state;
        assert_true(vault_name_valid("a"));
        assert_true(vault_name_valid("gh-token.v2_x"));
        assert_false(vault_name_valid(""));
        assert_false(vault_name_valid(".a"));
        assert_false(vault_name_valid("a/b"));
        assert_false(vault_name_valid("a b"));
        assert_true(vault_name_valid(
                "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"));
        assert_false(vault_name_valid(
                "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"));
}

static int key_file(const char *content, mode_t mode, char *path, size_t size)
{
        int fd;

        snprintf(path, size, "/tmp/test_vault_key.XXXXXX");
        fd = mkstemp(path);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, content, strlen(content)), (ssize_t)strlen(content));
        assert_int_equal(fchmod(fd, mode), 0);
        close(fd);
        return 0;
}

static void test_key_load(void **state)
{
        uint8_t key[VAULT_KEY_BYTES];
        char path[64], err[256];
        const char *hex = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1F\n";

        (void)state;
        key_file(hex, 0600, path, sizeof(path));
        assert_int_equal(vault_key_load(path, key, err, sizeof(err)), 0);
        assert_int_equal(key[1], 1);
        assert_int_equal(key[31], 0x1f);
        unlink(path);
        key_file(hex, 0640, path, sizeof(path)); /* group may read: refused */
        assert_int_equal(vault_key_load(path, key, err, sizeof(err)), -EINVAL);
        assert_non_null(strstr(err, "owner only"));
        unlink(path);
        key_file("00112233", 0400, path, sizeof(path));
        assert_int_equal(vault_key_load(path, key, err, sizeof(err)), -EINVAL);
        assert_non_null(strstr(err, "64 hexadecimal"));
        unlink(path);
        key_file("zz0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f", 0400, path,
                 sizeof(path));
        assert_int_equal(vault_key_load(path, key, err, sizeof(err)), -EINVAL);
        assert_null(strstr(err, "zz01"));
        unlink(path);
        assert_int_equal(vault_key_load("/nonexistent/key", key, err, sizeof(err)), -ENOENT);
}

static void test_seal(void **state)
{
        uint8_t key[VAULT_KEY_BYTES], other[VAULT_KEY_BYTES];
        char *s = NULL, *s2 = NULL, *out = NULL;
        const char *sid = "0123456789abcdef0123456789abcdef";
        struct json_object *v = create_ok(create_body), *o = NULL, *c;

        (void)state;
        memset(key, 7, sizeof(key));
        memset(other, 8, sizeof(other));
        assert_int_equal(vault_seal(key, sid, "gh", SECRET, &s), 0);
        assert_int_equal(strncmp(s, "v1:", 3), 0);
        assert_null(strstr(s, SECRET));
        assert_int_equal(vault_seal(key, sid, "gh", SECRET, &s2), 0);
        assert_string_not_equal(s, s2); /* a nonce per sealing */
        assert_int_equal(vault_unseal(key, sid, "gh", s, &out), 0);
        assert_string_equal(out, SECRET);
        free(out);
        /* another key, sandbox or name, or a flipped byte: does not open */
        assert_int_equal(vault_unseal(other, sid, "gh", s, &out), -EBADMSG);
        assert_int_equal(vault_unseal(key, "fedcba9876543210fedcba9876543210", "gh", s, &out),
                         -EBADMSG);
        assert_int_equal(vault_unseal(key, sid, "npm", s, &out), -EBADMSG);
        s[10] = s[10] == 'A' ? 'B' : 'A';
        assert_int_equal(vault_unseal(key, sid, "gh", s, &out), -EBADMSG);
        assert_int_equal(vault_unseal(key, sid, "gh", "v1:", &out), -EBADMSG);
        assert_int_equal(vault_unseal(key, sid, "gh", "plain", &out), -EBADMSG);
        assert_null(out);
        free(s);
        free(s2);
        /* the stored form sealed: no value left, still a valid vault, views unchanged */
        assert_int_equal(vault_seal_values(v, key, sid), 0);
        assert_null(strstr(text(v), SECRET));
        assert_null(strstr(text(v), "\"value\""));
        assert_int_equal(vault_check(v), 0);
        assert_int_equal(vault_view(v, VAULT_VIEW_CREDENTIALS, &o), 0);
        assert_null(strstr(text(o), "sealed"));
        json_object_put(o);
        assert_true(json_object_object_get_ex(
                json_object_array_get_idx(json_object_object_get_ex(v, "credentials", &c) ? c : NULL,
                                          1),
                "sealed", &o));
        assert_int_equal(vault_unseal(key, sid, "npm", json_object_get_string(o), &out), 0);
        assert_string_equal(out, SECRET "-npm");
        free(out);
        json_object_put(v);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_create_normalizes),
                cmocka_unit_test(test_views_carry_no_value),
                cmocka_unit_test(test_create_rejected),
                cmocka_unit_test(test_patch_all_or_nothing),
                cmocka_unit_test(test_names),
                cmocka_unit_test(test_key_load),
                cmocka_unit_test(test_seal),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
