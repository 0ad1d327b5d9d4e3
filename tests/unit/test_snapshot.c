/* Unit tests for the snapshot contract (lib/sandbox/snapshot.c), the
 * snapshotId side of osb_create_parse (lib/sandbox/opensandbox.c) and the
 * pure parts of a Docker commit (lib/providers/docker/docker_image.c):
 * everything a client or dockerd hands the snapshot code. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/config.h"
#include "providers/docker/docker_image.h"
#include "sandbox/opensandbox.h"
#include "sandbox/snapshot.h"
#include "sandbox/snapshot_reply.h"

#define ID "0123456789abcdef0123456789abcdef"

static void test_ids_and_image_name(void **state)
{
        (void)state;
        char buf[SNAPSHOT_IMAGE_MAX];

        assert_true(snapshot_id_valid(ID));
        assert_false(snapshot_id_valid(NULL));
        assert_false(snapshot_id_valid(""));
        assert_false(snapshot_id_valid("0123456789ABCDEF0123456789abcdef")); /* upper case */
        assert_false(snapshot_id_valid(ID "0"));
        assert_false(snapshot_id_valid("0123456789abcdef0123456789abcde"));
        assert_false(snapshot_id_valid("0123456789abcdef0123456789abcde/"));
        assert_false(snapshot_id_valid("../../../../../../etc/passwd.....x"));
        assert_int_equal(snapshot_image_name(ID, buf, sizeof(buf)), 0);
        assert_string_equal(buf, "sandbox-broker/snapshot:" ID);
        /* a client's text never becomes an image name */
        assert_int_equal(snapshot_image_name("evil:latest", buf, sizeof(buf)), -EINVAL);
        assert_int_equal(snapshot_image_name(ID, buf, 10), -EINVAL);
}

static int create_parse(const char *js, char *name, char *err)
{
        struct json_object *o = js ? json_tokener_parse(js) : NULL;
        int r;

        if (js)
                assert_non_null(o);
        r = snapshot_create_parse(o, name, err);
        json_object_put(o);
        return r;
}

static void test_create_request(void **state)
{
        (void)state;
        char name[SNAPSHOT_NAME_MAX + 1], err[SNAPSHOT_ERR_MAX], big[512];

        assert_int_equal(create_parse(NULL, name, err), 0);
        assert_string_equal(name, "");
        assert_int_equal(create_parse("{}", name, err), 0);
        assert_string_equal(name, "");
        assert_int_equal(create_parse("{\"name\":null}", name, err), 0);
        assert_int_equal(create_parse("{\"name\":\"checkpoint-before-import\"}", name, err), 0);
        assert_string_equal(name, "checkpoint-before-import");
        assert_int_equal(create_parse("{\"name\":\"\"}", name, err), -EINVAL); /* minLength 1 */
        assert_non_null(strstr(err, "name"));
        assert_int_equal(create_parse("{\"name\":7}", name, err), -EINVAL);
        assert_int_equal(create_parse("{\"name\":\"a\\nb\"}", name, err), -EINVAL);
        assert_int_equal(create_parse("{\"name\":\"a\\u0000b\"}", name, err), -EINVAL);
        assert_int_equal(create_parse("{\"name\":\"x\",\"image\":\"y\"}", name, err), -EINVAL);
        assert_non_null(strstr(err, "image"));
        assert_int_equal(create_parse("[]", name, err), -EINVAL);
        snprintf(big, sizeof(big), "{\"name\":\"%0*d\"}", SNAPSHOT_NAME_MAX, 0);
        assert_int_equal(create_parse(big, name, err), 0);
        assert_int_equal(strlen(name), SNAPSHOT_NAME_MAX);
        snprintf(big, sizeof(big), "{\"name\":\"%0*d\"}", SNAPSHOT_NAME_MAX + 1, 0);
        assert_int_equal(create_parse(big, name, err), -EINVAL);
}

static void test_states(void **state)
{
        (void)state;
        assert_string_equal(snapshot_state_canonical("ready"), "Ready");
        assert_string_equal(snapshot_state_canonical("CREATING"), "Creating");
        assert_string_equal(snapshot_state_canonical("Failed"), "Failed");
        assert_string_equal(snapshot_state_canonical("deleting"), "Deleting");
        assert_null(snapshot_state_canonical("Running"));
        assert_null(snapshot_state_canonical(""));
        assert_null(snapshot_state_canonical(NULL));
}

/* A flat HGETALL array of n/2 string pairs. */
static redisReply *record(const char **kv, size_t n)
{
        redisReply *r = calloc(1, sizeof(*r));

        assert_non_null(r);
        r->type = REDIS_REPLY_ARRAY;
        r->elements = n;
        r->element = calloc(n ? n : 1, sizeof(*r->element));
        for (size_t i = 0; i < n; i++) {
                r->element[i] = calloc(1, sizeof(redisReply));
                r->element[i]->type = REDIS_REPLY_STRING;
                r->element[i]->str = (char *)kv[i];
                r->element[i]->len = strlen(kv[i]);
        }
        return r;
}

static void record_free(redisReply *r)
{
        for (size_t i = 0; i < r->elements; i++)
                free(r->element[i]);
        free(r->element);
        free(r);
}

static void test_json(void **state)
{
        (void)state;
        const char *kv[] = { "id",
                             ID,
                             "tenant",
                             "alpha",
                             "sandboxId",
                             "s1",
                             "name",
                             "n1",
                             "image",
                             "sandbox-broker/snapshot:" ID,
                             "ref",
                             "cafe",
                             "state",
                             "Ready",
                             "reason",
                             "snapshot_ready",
                             "message",
                             "",
                             "createdAt",
                             "1764770000000",
                             "lastTransitionAt",
                             "1764770001000" };
        redisReply *r = record(kv, sizeof(kv) / sizeof(kv[0]));
        struct json_object *o = NULL, *v, *st;

        assert_int_equal(snapshot_json(r, &o), 0);
        assert_true(json_object_object_get_ex(o, "id", &v));
        assert_string_equal(json_object_get_string(v), ID);
        assert_true(json_object_object_get_ex(o, "sandboxId", &v));
        assert_string_equal(json_object_get_string(v), "s1");
        assert_true(json_object_object_get_ex(o, "name", &v));
        assert_true(json_object_object_get_ex(o, "createdAt", &v));
        assert_string_equal(json_object_get_string(v), "2025-12-03T13:53:20.000Z");
        assert_true(json_object_object_get_ex(o, "status", &st));
        assert_true(json_object_object_get_ex(st, "state", &v));
        assert_string_equal(json_object_get_string(v), "Ready");
        assert_false(json_object_object_get_ex(st, "message", &v)); /* empty: left out */
        /* the spec's Snapshot has additionalProperties: false: nothing internal leaks */
        assert_false(json_object_object_get_ex(o, "tenant", &v));
        assert_false(json_object_object_get_ex(o, "image", &v));
        assert_false(json_object_object_get_ex(o, "ref", &v));
        assert_int_equal(json_object_object_length(o), 5);
        json_object_put(o);
        record_free(r);

        r = record(kv, 0);
        assert_int_equal(snapshot_json(r, &o), -ENOENT);
        assert_null(o);
        record_free(r);
        r = record(kv + 2, 2); /* no id, no state */
        assert_int_equal(snapshot_json(r, &o), -EPROTO);
        record_free(r);
        r = record(kv, 3);
        assert_int_equal(snapshot_json(r, &o), -EPROTO);
        record_free(r);
}

static int osb_parse(const char *js, struct osb_create *c, char *err)
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

static void test_create_from_snapshot(void **state)
{
        (void)state;
        struct osb_create c;
        char err[OSB_ERR_MAX];

        assert_int_equal(osb_parse("{\"snapshotId\":\"" ID "\",\"timeout\":3600}", &c, err), 0);
        assert_string_equal(c.snapshot_id, ID);
        assert_string_equal(c.image, "");
        /* the spec's default entrypoint of a restore */
        assert_string_equal(c.entrypoint, "[\"tail\",\"-f\",\"/dev/null\"]");
        assert_int_equal(c.timeout_s, 3600);
        assert_int_equal(osb_parse("{\"snapshotId\":\"" ID
                                   "\",\"entrypoint\":[\"python\",\"/w/a.py\"]}",
                                   &c, err),
                         0);
        assert_string_equal(c.entrypoint, "[\"python\",\"/w/a.py\"]");
        assert_int_equal(osb_parse("{\"snapshotId\":\"" ID "\",\"entrypoint\":[]}", &c, err),
                         -EINVAL);
        assert_int_equal(osb_parse("{\"snapshotId\":\"snap_123\"}", &c, err), -EINVAL);
        assert_non_null(strstr(err, "snapshotId"));
        assert_int_equal(osb_parse("{\"snapshotId\":42}", &c, err), -EINVAL);
        assert_int_equal(osb_parse("{\"snapshotId\":\"" ID "\",\"image\":{\"uri\":\"x\"},"
                                   "\"entrypoint\":[\"sh\"]}",
                                   &c, err),
                         -EINVAL);
        assert_non_null(strstr(err, "not both"));
        /* resource limits and timeout are still checked */
        assert_int_equal(osb_parse("{\"snapshotId\":\"" ID "\",\"timeout\":5}", &c, err), -EINVAL);
        assert_int_equal(
                osb_parse("{\"snapshotId\":null,\"image\":{\"uri\":\"x\"},\"entrypoint\":[\"sh\"]}",
                          &c, err),
                0);
        assert_string_equal(c.snapshot_id, "");
        assert_string_equal(c.image, "x");
}

static void test_commit_body_and_size(void **state)
{
        (void)state;
        struct snapshot_spec spec = { .image = "sandbox-broker/snapshot:" ID,
                                      .snapshot_id = ID,
                                      .sandbox_id = "s1",
                                      .tenant = "alpha",
                                      .key_prefix = "sb:" };
        struct json_object *o, *v, *labels;
        char *body = NULL;
        int64_t size = -1;

        assert_int_equal(docker_commit_body(&spec, &body), 0);
        o = json_tokener_parse(body);
        assert_non_null(o);
        /* the agent's entrypoint does not follow the image */
        assert_true(json_object_object_get_ex(o, "Entrypoint", &v));
        assert_true(json_object_is_type(v, json_type_array));
        assert_int_equal(json_object_array_length(v), 0);
        assert_true(json_object_object_get_ex(o, "Labels", &labels));
        assert_true(json_object_object_get_ex(labels, PROVIDER_LABEL_SNAPSHOT, &v));
        assert_string_equal(json_object_get_string(v), ID);
        assert_true(json_object_object_get_ex(labels, PROVIDER_LABEL_TENANT, &v));
        assert_string_equal(json_object_get_string(v), "alpha");
        assert_true(json_object_object_get_ex(labels, PROVIDER_LABEL_PREFIX, &v));
        assert_string_equal(json_object_get_string(v), "sb:");
        /* the source's sandbox labels are blanked (Docker would carry them over) */
        assert_true(json_object_object_get_ex(labels, PROVIDER_LABEL_SANDBOX, &v));
        assert_string_equal(json_object_get_string(v), "");
        assert_true(json_object_object_get_ex(labels, PROVIDER_LABEL_MANAGED, &v));
        assert_string_equal(json_object_get_string(v), "");
        assert_true(json_object_object_get_ex(labels, PROVIDER_LABEL_AGENT, &v));
        assert_string_equal(json_object_get_string(v), "");
        json_object_put(o);
        free(body);
        spec.tenant = NULL;
        assert_int_equal(docker_commit_body(&spec, &body), -EINVAL);
        assert_null(body);

        assert_int_equal(
                docker_size_parse("{\"Id\":\"sha256:x\",\"Size\":123456789012}", "Size", &size), 0);
        assert_true(size == 123456789012LL);
        assert_int_equal(docker_size_parse("{\"Size\":-1}", "Size", &size), -EPROTO);
        assert_int_equal(docker_size_parse("{\"Size\":\"1\"}", "Size", &size), -EPROTO);
        assert_int_equal(docker_size_parse("{}", "Size", &size), -EPROTO);
        assert_int_equal(docker_size_parse("[1]", "Size", &size), -EPROTO);
        assert_int_equal(docker_size_parse("not json", "Size", &size), -EPROTO);
        assert_int_equal(docker_size_parse(NULL, "Size", &size), -EPROTO);
        assert_int_equal(docker_size_parse("{\"SizeRootFs\":77,\"SizeRw\":5}", "SizeRootFs", &size),
                         0);
        assert_true(size == 77);
        assert_int_equal(docker_size_parse("{\"SizeRw\":5}", "SizeRootFs", &size), -EPROTO);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_ids_and_image_name),
                cmocka_unit_test(test_create_request),
                cmocka_unit_test(test_states),
                cmocka_unit_test(test_json),
                cmocka_unit_test(test_create_from_snapshot),
                cmocka_unit_test(test_commit_body_and_size),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
