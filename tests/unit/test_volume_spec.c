/* Unit tests for lib/core/volume_spec.c (the `volumes` of an OpenSandbox
 * create and VOLUME_HOST_ALLOW, untrusted and operator input) and the pure
 * parts of lib/sandbox/volume.c (backend names, the record's mounts). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <json-c/json.h>

#include "core/config.h"
#include "sandbox/volume.h"
#include "core/volume_spec.h"

static struct volume_set set;

static void parse_ok(const char *s)
{
        struct json_object *o = json_tokener_parse(s);
        char err[VOLUME_ERR_MAX] = "";

        assert_non_null(o);
        if (volume_spec_parse(o, &set, err) != 0)
                fail_msg("volumes %s rejected: %s", s, err);
        json_object_put(o);
}

static void expect_rejected(const char *s, const char *want)
{
        struct json_object *o = json_tokener_parse(s);
        char err[VOLUME_ERR_MAX] = "";

        assert_non_null(o);
        if (volume_spec_parse(o, &set, err) != -EINVAL)
                fail_msg("volumes %.200s accepted", s);
        assert_true(err[0] != '\0');
        if (want && !strstr(err, want))
                fail_msg("volumes %.200s: error \"%s\" lacks \"%s\"", s, err, want);
        json_object_put(o);
}

static void test_host_and_pvc(void **state)
{
        (void)state;
        parse_ok(
                "[{\"name\":\"proj\",\"host\":{\"path\":\"/srv/p\"},\"mountPath\":\"/workspace/p\","
                "\"subPath\":\"a/b\",\"readOnly\":true},"
                "{\"name\":\"ws\",\"pvc\":{\"claimName\":\"workspace\"},\"mountPath\":\"/ws\"}]");
        assert_int_equal(set.n, 2);
        assert_int_equal(set.v[0].kind, VOLUME_HOST);
        assert_string_equal(set.v[0].host_path, "/srv/p");
        assert_string_equal(set.v[0].sub_path, "a/b");
        assert_string_equal(set.v[0].mount_path, "/workspace/p");
        assert_true(set.v[0].read_only);
        assert_int_equal(set.v[1].kind, VOLUME_NAMED);
        assert_string_equal(set.v[1].claim, "workspace");
        /* the spec's defaults: createIfNotExists true, the rest false */
        assert_true(set.v[1].create_if_missing);
        assert_false(set.v[1].delete_on_termination);
        assert_false(set.v[1].read_only);
        assert_string_equal(set.v[1].sub_path, "");

        parse_ok("[{\"name\":\"c\",\"pvc\":{\"claimName\":\"c\",\"createIfNotExists\":false,"
                 "\"deleteOnSandboxTermination\":true,\"storage\":\"10Gi\",\"storageClass\":"
                 "\"fast\","
                 "\"accessModes\":[\"ReadWriteOnce\"]},\"mountPath\":\"/"
                 "c\",\"host\":null,\"subPath\":null}]");
        assert_false(set.v[0].create_if_missing);
        assert_true(set.v[0].delete_on_termination);

        parse_ok("[]");
        assert_int_equal(set.n, 0);
        assert_int_equal(volume_spec_parse(NULL, &set, NULL), 0);
        assert_int_equal(set.n, 0);
}

static void test_rejected(void **state)
{
        char many[4096];
        size_t n = 0;

        (void)state;
        expect_rejected("{}", "array");
        expect_rejected("[1]", "object");
        expect_rejected("[{\"name\":\"o\",\"ossfs\":{\"bucket\":\"b\"},\"mountPath\":\"/o\"}]",
                        "ossfs");
        expect_rejected("[{\"name\":\"v\",\"mountPath\":\"/x\"}]", "exactly one backend");
        expect_rejected("[{\"name\":\"v\",\"host\":{\"path\":\"/a\"},\"pvc\":{\"claimName\":\"c\"},"
                        "\"mountPath\":\"/x\"}]",
                        "exactly one backend");
        expect_rejected("[{\"name\":\"V\",\"pvc\":{\"claimName\":\"c\"},\"mountPath\":\"/x\"}]",
                        "name");
        expect_rejected("[{\"name\":\"-v\",\"pvc\":{\"claimName\":\"c\"},\"mountPath\":\"/x\"}]",
                        "name");
        expect_rejected("[{\"name\":\"v\",\"pvc\":{\"claimName\":\"a/b\"},\"mountPath\":\"/x\"}]",
                        "claimName");
        expect_rejected(
                "[{\"name\":\"v\",\"pvc\":{\"claimName\":\"c\",\"size\":1},\"mountPath\":\"/x\"}]",
                "unknown field");
        expect_rejected(
                "[{\"name\":\"v\",\"pvc\":{\"claimName\":\"c\",\"createIfNotExists\":\"yes\"},"
                "\"mountPath\":\"/x\"}]",
                "booleans");
        expect_rejected("[{\"name\":\"v\",\"pvc\":{\"claimName\":\"c\",\"storage\":\"1GB\"},"
                        "\"mountPath\":\"/x\"}]",
                        "storage");
        expect_rejected("[{\"name\":\"v\",\"host\":{\"path\":\"C:\\\\x\"},\"mountPath\":\"/x\"}]",
                        "absolute");
        expect_rejected("[{\"name\":\"v\",\"host\":{\"path\":\"/a\\nb\"},\"mountPath\":\"/x\"}]",
                        "control");
        expect_rejected(
                "[{\"name\":\"v\",\"host\":{\"path\":\"/a\",\"x\":1},\"mountPath\":\"/x\"}]",
                "host");
        /* mount paths */
        static const char *const bad_mounts[] = { "x",       "/",     "//x", "/x/", "/a/./b",
                                                  "/a/../b", "/a//b", "/..", "",    NULL };
        for (size_t i = 0; bad_mounts[i]; i++) {
                char body[256];
                snprintf(body, sizeof(body),
                         "[{\"name\":\"v\",\"pvc\":{\"claimName\":\"c\"},\"mountPath\":\"%s\"}]",
                         bad_mounts[i]);
                expect_rejected(body, "mountPath");
        }
        static const char *const reserved[] = { "/.sandbox-broker",
                                                "/.sandbox-broker/run",
                                                "/proc",
                                                "/proc/sys",
                                                "/sys/fs",
                                                "/dev",
                                                "/dev/shm",
                                                NULL };
        for (size_t i = 0; reserved[i]; i++) {
                char body[256];
                snprintf(body, sizeof(body),
                         "[{\"name\":\"v\",\"pvc\":{\"claimName\":\"c\"},\"mountPath\":\"%s\"}]",
                         reserved[i]);
                expect_rejected(body, "reserved");
        }
        /* but a sibling of a reserved name is fine */
        parse_ok("[{\"name\":\"v\",\"pvc\":{\"claimName\":\"c\"},\"mountPath\":\"/devices\"}]");
        expect_rejected("[{\"name\":\"v\",\"pvc\":{\"claimName\":\"c\"},\"mountPath\":\"/x\","
                        "\"subPath\":\"../y\"}]",
                        "subPath");
        expect_rejected("[{\"name\":\"v\",\"pvc\":{\"claimName\":\"c\"},\"mountPath\":\"/x\","
                        "\"subPath\":\"/abs\"}]",
                        "subPath");
        expect_rejected("[{\"name\":\"v\",\"pvc\":{\"claimName\":\"c\"},\"mountPath\":\"/x\","
                        "\"readOnly\":1}]",
                        "readOnly");
        expect_rejected("[{\"name\":\"v\",\"pvc\":{\"claimName\":\"c\"},\"mountPath\":\"/x\"},"
                        "{\"name\":\"v\",\"pvc\":{\"claimName\":\"d\"},\"mountPath\":\"/y\"}]",
                        "twice");
        expect_rejected("[{\"name\":\"v\",\"pvc\":{\"claimName\":\"c\"},\"mountPath\":\"/x\"},"
                        "{\"name\":\"w\",\"pvc\":{\"claimName\":\"d\"},\"mountPath\":\"/x\"}]",
                        "same mountPath");
        n += (size_t)snprintf(many + n, sizeof(many) - n, "[");
        for (int i = 0; i <= VOLUME_MAX; i++)
                n += (size_t)snprintf(
                        many + n, sizeof(many) - n,
                        "%s{\"name\":\"v%d\",\"pvc\":{\"claimName\":\"c\"},\"mountPath\":\"/m%d\"}",
                        i ? "," : "", i, i);
        snprintf(many + n, sizeof(many) - n, "]");
        expect_rejected(many, "at most 8");
}

static void test_long_paths(void **state)
{
        char *body = malloc(VOLUME_PATH_MAX + 200), *p = malloc(VOLUME_PATH_MAX + 2);

        (void)state;
        assert_non_null(body);
        assert_non_null(p);
        memset(p, 'a', VOLUME_PATH_MAX + 1);
        p[0] = '/';
        p[VOLUME_PATH_MAX + 1] = '\0';
        snprintf(body, VOLUME_PATH_MAX + 200,
                 "[{\"name\":\"v\",\"pvc\":{\"claimName\":\"c\"},\"mountPath\":\"%s\"}]", p);
        expect_rejected(body, "mountPath");
        p[VOLUME_PATH_MAX] = '\0'; /* exactly at the cap */
        snprintf(body, VOLUME_PATH_MAX + 200,
                 "[{\"name\":\"v\",\"pvc\":{\"claimName\":\"c\"},\"mountPath\":\"%s\"}]", p);
        parse_ok(body);
        free(body);
        free(p);
}

static void test_helpers(void **state)
{
        (void)state;
        assert_true(volume_storage_valid("1"));
        assert_true(volume_storage_valid("1.5Gi"));
        assert_true(volume_storage_valid("10Ei"));
        assert_false(volume_storage_valid("1G"));
        assert_false(volume_storage_valid("Gi"));
        assert_false(volume_storage_valid("1."));
        assert_false(volume_storage_valid("-1Gi"));
        assert_false(volume_storage_valid(""));
        assert_true(volume_path_within("/srv/a", "/srv/a"));
        assert_true(volume_path_within("/srv/a/b", "/srv/a"));
        assert_false(volume_path_within("/srv/ab", "/srv/a"));
        assert_false(volume_path_within("/srv", "/srv/a"));
        assert_true(volume_path_within("/x", "/"));
        assert_true(volume_path_normal("/", false));
        assert_false(volume_path_normal("a", false));
        assert_true(volume_path_normal("a/b", true));
        assert_false(volume_path_normal("a/", true));
        assert_false(volume_path_normal("", true));
        assert_false(volume_path_normal("a/\x01", true));
}

static void test_allow(void **state)
{
        struct volume_allow a;
        char err[VOLUME_ERR_MAX];

        (void)state;
        assert_int_equal(volume_allow_parse("", &a, err), 0);
        assert_int_equal(a.n, 0);
        assert_int_equal(volume_allow_parse("/srv/projects:rw,/srv/data,/srv/x:ro", &a, err), 0);
        assert_int_equal(a.n, 3);
        assert_string_equal(a.e[0].dir, "/srv/projects");
        assert_true(a.e[0].rw);
        assert_string_equal(a.e[1].dir, "/srv/data");
        assert_false(a.e[1].rw);
        assert_string_equal(a.e[2].dir, "/srv/x");
        assert_false(a.e[2].rw);
        assert_int_equal(volume_allow_parse("srv", &a, err), -EINVAL);
        assert_non_null(strstr(err, "VOLUME_HOST_ALLOW"));
        assert_int_equal(volume_allow_parse("/srv/../etc", &a, err), -EINVAL);
        assert_int_equal(volume_allow_parse("/srv/", &a, err), -EINVAL);
        assert_int_equal(volume_allow_parse("/a,,/b", &a, err), -EINVAL);
        assert_int_equal(volume_allow_parse("/a:rx", &a, err), -EINVAL);
        assert_int_equal(volume_allow_parse(":rw", &a, err), -EINVAL);
        assert_int_equal(
                volume_allow_parse("/1,/2,/3,/4,/5,/6,/7,/8,/9,/10,/11,/12,/13,/14,/15,/16,/17", &a,
                                   err),
                -EINVAL);
}

static void test_backend_name(void **state)
{
        struct broker_config *cfg = calloc(1, sizeof(*cfg));
        char a[VOLUME_BACKEND_NAME_MAX], b[VOLUME_BACKEND_NAME_MAX], c[VOLUME_BACKEND_NAME_MAX];

        (void)state;
        assert_non_null(cfg);
        strcpy(cfg->key_prefix, "sb:");
        assert_int_equal(volume_backend_name(cfg, "alpha", "ws", a, sizeof(a)), 0);
        assert_int_equal(volume_backend_name(cfg, "bravo", "ws", b, sizeof(b)), 0);
        assert_int_equal(strncmp(a, "sbv-", 4), 0);
        assert_int_equal(strlen(a), 4 + 16 + 1 + 2);
        assert_string_equal(a + 20, "-ws");
        assert_string_not_equal(a, b); /* another tenant: another volume */
        strcpy(cfg->key_prefix, "other:");
        assert_int_equal(volume_backend_name(cfg, "alpha", "ws", c, sizeof(c)), 0);
        assert_string_not_equal(a, c); /* another broker: another volume */
        assert_int_equal(volume_backend_name(cfg, "alpha", "ws", c, 10), -EINVAL);
        free(cfg);
}

static void test_record_mounts(void **state)
{
        struct volume_mounts m;

        (void)state;
        assert_int_equal(volume_mounts_parse("", &m), 0);
        assert_int_equal(m.n, 0);
        assert_int_equal(volume_mounts_parse(NULL, &m), 0);
        assert_int_equal(
                volume_mounts_parse(
                        "[{\"name\":\"ws\",\"kind\":\"volume\",\"source\":\"sbv-x-ws\",\"target\":"
                        "\"/ws\","
                        "\"readOnly\":false,\"made\":true,\"deleteOnTermination\":true},"
                        "{\"name\":\"p\",\"kind\":\"bind\",\"source\":\"/srv/p\",\"target\":\"/p\","
                        "\"readOnly\":true}]",
                        &m),
                0);
        assert_int_equal(m.n, 2);
        assert_int_equal(m.m[0].kind, SANDBOX_MOUNT_VOLUME);
        assert_string_equal(m.m[0].source, "sbv-x-ws");
        assert_false(m.m[0].read_only);
        assert_int_equal(m.m[1].kind, SANDBOX_MOUNT_BIND);
        assert_string_equal(m.m[1].target, "/p");
        assert_true(m.m[1].read_only);
        volume_mounts_free(&m);
        assert_int_equal(volume_mounts_parse("{}", &m), -EPROTO);
        assert_int_equal(
                volume_mounts_parse("[{\"kind\":\"tmpfs\",\"source\":\"x\",\"target\":\"/x\","
                                    "\"readOnly\":true}]",
                                    &m),
                -EPROTO);
        assert_int_equal(
                volume_mounts_parse("[{\"kind\":\"bind\",\"source\":\"x\",\"target\":\"/x\"}]", &m),
                -EPROTO);
        assert_null(m.owner);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_host_and_pvc),  cmocka_unit_test(test_rejected),
                cmocka_unit_test(test_long_paths),    cmocka_unit_test(test_helpers),
                cmocka_unit_test(test_allow),         cmocka_unit_test(test_backend_name),
                cmocka_unit_test(test_record_mounts),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
