/* Unit tests for the pure parts of image pulls: IMAGE_ALLOW matching
 * (lib/core/image_policy.c), the fromImage/tag split, X-Registry-Auth and
 * the progress lines of POST /images/create
 * (lib/providers/docker/docker_image.c), and image.auth in an OpenSandbox
 * create (lib/sandbox/opensandbox.c). */
#include <errno.h>
#include <json-c/json.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "codec/base64.h"
#include "core/config.h"
#include "providers/docker/docker_image.h"
#include "core/image_policy.h"
#include "sandbox/opensandbox.h"

static void test_policy(void **state)
{
        const char *allow = "127.0.0.1:5000/*, sandbox-broker/*,python:3.12-slim";

        (void)state;
        assert_true(image_policy_allows(allow, "127.0.0.1:5000/test/tiny:1"));
        assert_true(image_policy_allows(allow, "sandbox-broker/base:latest"));
        assert_true(image_policy_allows(allow, "python:3.12-slim"));
        assert_false(image_policy_allows(allow, "python:3.11"));
        assert_false(image_policy_allows(allow, "127.0.0.1:5001/test/tiny:1"));
        assert_false(image_policy_allows(allow, "evil/sandbox-broker/x"));
        assert_false(image_policy_allows("", "sandbox-broker/base"));
        assert_false(image_policy_allows(NULL, "sandbox-broker/base"));
        assert_false(image_policy_allows(allow, ""));
        assert_false(image_policy_allows(" , ,", "x"));
        assert_true(image_policy_allows("*", "anything/at:all"));
}

static void split_ok(const char *image, const char *name, const char *tag)
{
        char n[DOCKER_IMAGE_MAX], t[DOCKER_IMAGE_MAX];

        assert_int_equal(docker_image_split(image, n, sizeof(n), t, sizeof(t)), 0);
        assert_string_equal(n, name);
        assert_string_equal(t, tag);
}

static void test_split(void **state)
{
        char n[DOCKER_IMAGE_MAX], t[DOCKER_IMAGE_MAX];

        (void)state;
        split_ok("ubuntu", "ubuntu", "latest");
        split_ok("a/b:1", "a/b", "1");
        split_ok("127.0.0.1:5000/test/tiny", "127.0.0.1:5000/test/tiny", "latest");
        split_ok("127.0.0.1:5000/test/tiny:abc", "127.0.0.1:5000/test/tiny", "abc");
        split_ok("a/b@sha256:0123", "a/b@sha256:0123", "");
        assert_int_equal(docker_image_split("", n, sizeof(n), t, sizeof(t)), -EINVAL);
        assert_int_equal(docker_image_split("a b", n, sizeof(n), t, sizeof(t)), -EINVAL);
        assert_int_equal(docker_image_split("a:", n, sizeof(n), t, sizeof(t)), -EINVAL);
        assert_int_equal(docker_image_split(":x", n, sizeof(n), t, sizeof(t)), -EINVAL);
        assert_int_equal(docker_image_split("a\n", n, sizeof(n), t, sizeof(t)), -EINVAL);
}

static void test_registry_auth(void **state)
{
        struct image_auth a = { "u\"ser", "p+/?w" };
        struct json_object *o, *v;
        char *b64 = NULL, *std;
        void *raw = NULL;
        size_t len = 0;

        (void)state;
        assert_int_equal(docker_registry_auth(&a, "127.0.0.1:5000/x/y:1", &b64), 0);
        /* base64url: no '+' or '/' */
        assert_null(strpbrk(b64, "+/"));
        std = strdup(b64);
        for (char *p = std; *p; p++)
                *p = *p == '-' ? '+' : *p == '_' ? '/' : *p;
        assert_int_equal(base64_decode(std, strlen(std), 4096, &raw, &len), 0);
        {
                struct json_tokener *tok = json_tokener_new();

                o = json_tokener_parse_ex(tok, raw, (int)len);
                json_tokener_free(tok);
        }
        assert_non_null(o);
        assert_true(json_object_object_get_ex(o, "username", &v));
        assert_string_equal(json_object_get_string(v), "u\"ser");
        assert_true(json_object_object_get_ex(o, "password", &v));
        assert_string_equal(json_object_get_string(v), "p+/?w");
        assert_true(json_object_object_get_ex(o, "serveraddress", &v));
        assert_string_equal(json_object_get_string(v), "127.0.0.1:5000");
        json_object_put(o);
        free(raw);
        free(std);
        free(b64);
        assert_int_equal(docker_registry_auth(&a, "library/ubuntu", &b64), 0);
        free(b64);
}

#define LINE(s, l) docker_pull_line(s, l, strlen(l))

static void test_pull_lines(void **state)
{
        struct docker_pull_state s;

        (void)state;
        memset(&s, 0, sizeof(s));
        assert_int_equal(LINE(&s, "{\"status\":\"Pulling from test/tiny\",\"id\":\"1\"}"), 0);
        assert_int_equal(LINE(&s, "{\"status\":\"Pulling fs layer\",\"progressDetail\":{},\"id\":\"aaa\"}"), 1);
        assert_int_equal(LINE(&s, "{\"status\":\"Already exists\",\"id\":\"bbb\"}"), 1);
        assert_int_equal(LINE(&s, "{\"status\":\"Downloading\",\"id\":\"aaa\"}"), 0);
        assert_int_equal(s.n, 2);
        assert_int_equal(s.n_done, 1);
        assert_int_equal(LINE(&s, "{\"status\":\"Pull complete\",\"id\":\"aaa\"}"), 1);
        assert_int_equal(LINE(&s, "{\"status\":\"Pull complete\",\"id\":\"aaa\"}"), 0);
        assert_int_equal(s.n_done, 2);
        assert_int_equal(LINE(&s, "{\"status\":\"Digest: sha256:00\"}"), 0);
        assert_int_equal(LINE(&s, "not json"), 0);
        assert_int_equal(LINE(&s, "[1,2]"), 0);
        assert_int_equal(LINE(&s, "{\"status\":5,\"id\":\"q\"}"), 0);
        assert_int_equal(LINE(&s, "{\"errorDetail\":{\"message\":\"x\"},\"error\":\"unauthorized: authentication required\"}"),
                         -EACCES);
        assert_string_equal(s.error, "unauthorized: authentication required");
        assert_int_equal(LINE(&s, "{\"error\":\"manifest unknown\"}"), -ENOENT);
        assert_int_equal(LINE(&s, "{\"error\":\"disk full\"}"), -EIO);
        assert_int_equal(LINE(&s, "{\"error\":7}"), -EIO);
}

static void test_pull_errno(void **state)
{
        (void)state;
        assert_int_equal(docker_pull_errno(500, "Head \"http://x/v2/\": no basic auth credentials"), -EACCES);
        assert_int_equal(docker_pull_errno(404, "pull access denied for x"), -EACCES);
        assert_int_equal(docker_pull_errno(404, "manifest for x not found"), -ENOENT);
        assert_int_equal(docker_pull_errno(500, "boom"), -EIO);
}

static int parse(const char *js, struct osb_create *c, char *err)
{
        static struct broker_config cfg;
        struct json_object *o = json_tokener_parse(js);
        int r;

        cfg.osb_max_timeout_s = 86400;
        cfg.sandbox_millicpus = 500;
        cfg.sandbox_memory_mb = 512;
        assert_non_null(o);
        r = osb_create_parse(&cfg, o, c, err);
        json_object_put(o);
        return r;
}

static void test_osb_auth(void **state)
{
        static struct osb_create c;
        char err[OSB_ERR_MAX], big[6000];

        (void)state;
        assert_int_equal(parse("{\"image\":{\"uri\":\"r/x:1\",\"auth\":{\"username\":\"u\",\"password\":\"p\"}},"
                               "\"entrypoint\":[\"sh\"]}", &c, err), 0);
        assert_true(c.has_auth);
        assert_string_equal(c.auth_user, "u");
        assert_string_equal(c.auth_pass, "p");
        osb_create_wipe(&c);
        assert_false(c.has_auth);
        assert_string_equal(c.auth_pass, "");
        assert_int_equal(parse("{\"image\":{\"uri\":\"r/x:1\",\"auth\":null},\"entrypoint\":[\"sh\"]}", &c, err), 0);
        assert_false(c.has_auth);
        assert_int_equal(parse("{\"image\":{\"uri\":\"r/x:1\",\"auth\":\"s\"},\"entrypoint\":[\"sh\"]}", &c, err), -EINVAL);
        assert_non_null(strstr(err, "image.auth"));
        assert_int_equal(parse("{\"image\":{\"uri\":\"r/x:1\",\"auth\":{\"token\":\"t\"}},\"entrypoint\":[\"sh\"]}", &c, err), -EINVAL);
        assert_int_equal(parse("{\"image\":{\"uri\":\"r/x:1\",\"auth\":{\"password\":1}},\"entrypoint\":[\"sh\"]}", &c, err), -EINVAL);
        assert_int_equal(parse("{\"image\":{\"uri\":\"r/x:1\",\"auth\":{\"username\":\"a\\nb\"}},\"entrypoint\":[\"sh\"]}", &c, err), -EINVAL);
        memset(big, 'p', sizeof(big));
        snprintf(big, sizeof(big), "{\"image\":{\"uri\":\"r/x:1\",\"auth\":{\"password\":\"%04500d\"}},\"entrypoint\":[\"sh\"]}", 1);
        assert_int_equal(parse(big, &c, err), -EINVAL);
        /* the password never reaches a message */
        assert_null(strstr(err, "0000"));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_policy),
                cmocka_unit_test(test_split),
                cmocka_unit_test(test_registry_auth),
                cmocka_unit_test(test_pull_lines),
                cmocka_unit_test(test_pull_errno),
                cmocka_unit_test(test_osb_auth),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
