/* Unit tests for the pure part of OpenSandbox templates
 * (lib/sandbox/template.c): what a client may store, the FsbTemplate
 * answer, the list's metadata filter, and the create body a templateId
 * stands for (the merge), checked with the create's own parser. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/config.h"
#include "sandbox/opensandbox.h"
#include "sandbox/template.h"

static struct broker_config cfg;

static int setup(void **state)
{
        (void)state;
        memset(&cfg, 0, sizeof(cfg));
        cfg.sandbox_millicpus = 500;
        cfg.sandbox_memory_mb = 512;
        cfg.osb_max_timeout_s = 86400;
        return 0;
}

static struct json_object *parse(const char *js)
{
        struct json_object *o = json_tokener_parse(js);

        assert_non_null(o);
        return o;
}

/* template_parse of js: its return; the stored form into *ret when asked. */
static int tparse(const char *js, struct json_object **ret, char *err)
{
        struct json_object *body = parse(js), *spec = NULL;
        int r;

        err[0] = '\0';
        r = template_parse(&cfg, body, &spec, err);
        if (r < 0)
                assert_null(spec);
        if (ret)
                *ret = spec;
        else
                json_object_put(spec);
        json_object_put(body);
        return r;
}

static const char *text(struct json_object *o)
{
        return json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
                                                         JSON_C_TO_STRING_NOSLASHESCAPE);
}

static void test_ids(void **state)
{
        (void)state;
        assert_true(template_id_valid("tpl-0123456789abcdef0123456789abcdef"));
        assert_false(template_id_valid(NULL));
        assert_false(template_id_valid(""));
        assert_false(template_id_valid("tpl_0123456789abcdef0123456789abcdef"));
        assert_false(template_id_valid("tpl-0123456789ABCDEF0123456789abcdef"));
        assert_false(template_id_valid("tpl-0123456789abcdef0123456789abcde"));
        assert_false(template_id_valid("tpl-0123456789abcdef0123456789abcdef0"));
        assert_false(template_id_valid("tpl-../../../../../../../../../etc/pa"));
}

static void test_parse_stores_the_given_fields(void **state)
{
        struct json_object *spec;
        char err[TEMPLATE_ERR_MAX];

        (void)state;
        assert_int_equal(tparse("{\"image\":\" busybox:1 \",\"publish\":\"s3://b/p\"}", &spec, err),
                         0);
        /* stripped, format defaulted, nothing else made up */
        assert_string_equal(
                text(spec),
                "{\"format\":\"overlaybd\",\"image\":\"busybox:1\",\"publish\":\"s3://b/p\"}");
        json_object_put(spec);
        assert_int_equal(tparse("{\"image\":\"busybox:1\",\"publish\":\"p\",\"format\":\"native\","
                                "\"entrypoint\":[\"sleep\",\"9\"],\"env\":{\"A_1\":\"x\"},"
                                "\"resourceLimits\":{\"cpu\":\"250m\",\"memory\":\"64Mi\"},"
                                "\"metadata\":{\"team\":\"a\"},"
                                "\"readiness\":{\"probe\":\"tcp://"
                                "127.0.0.1:1\",\"warmupSeconds\":5,\"x\":1}}",
                                &spec, err),
                         0);
        assert_string_equal(
                text(spec),
                "{\"format\":\"native\",\"resourceLimits\":{\"cpu\":\"250m\",\"memory\":\"64Mi\"},"
                "\"entrypoint\":[\"sleep\",\"9\"],\"env\":{\"A_1\":\"x\"},"
                "\"metadata\":{\"team\":\"a\"},"
                "\"readiness\":{\"probe\":\"tcp://127.0.0.1:1\",\"warmupSeconds\":5},"
                "\"image\":\"busybox:1\",\"publish\":\"p\"}");
        json_object_put(spec);
}

static void test_parse_refuses(void **state)
{
        static const struct {
                const char *body, *word;
        } bad[] = {
                { "{}", "image" },
                { "{\"image\":\"\",\"publish\":\"p\"}", "image" },
                { "{\"image\":\"   \",\"publish\":\"p\"}", "image" },
                { "{\"image\":\"a\\nb\",\"publish\":\"p\"}", "image" },
                { "{\"image\":7,\"publish\":\"p\"}", "image" },
                { "{\"image\":\"busybox\"}", "publish" },
                { "{\"image\":\"busybox\",\"publish\":null}", "publish" },
                { "{\"image\":\"busybox\",\"publish\":\"p\",\"kernel\":\"k\"}", "kernel" },
                { "{\"image\":\"busybox\",\"publish\":\"p\",\"format\":\"raw\"}", "format" },
                { "{\"image\":\"busybox\",\"publish\":\"p\",\"format\":1}", "format" },
                { "{\"image\":\"busybox\",\"publish\":\"p\",\"resourceLimits\":[]}",
                  "resourceLimits" },
                { "{\"image\":\"busybox\",\"publish\":\"p\",\"resourceLimits\":{\"gpu\":\"1\"}}",
                  "gpu" },
                { "{\"image\":\"busybox\",\"publish\":\"p\",\"resourceLimits\":{\"cpu\":1}}",
                  "cpu" },
                { "{\"image\":\"busybox\",\"publish\":\"p\",\"resourceLimits\":{\"cpu\":\"-1\"}}",
                  "cpu" },
                /* the template's disk is the create's ephemeral-storage: no disks here */
                { "{\"image\":\"busybox\",\"publish\":\"p\",\"resourceLimits\":{\"disk\":\"1Gi\"}}",
                  OSB_LIMIT_DISK },
                { "{\"image\":\"busybox\",\"publish\":\"p\",\"entrypoint\":[]}", "entrypoint" },
                { "{\"image\":\"busybox\",\"publish\":\"p\",\"entrypoint\":[\"\"]}", "entrypoint" },
                { "{\"image\":\"busybox\",\"publish\":\"p\",\"env\":{\"A-B\":\"x\"}}", "env" },
                { "{\"image\":\"busybox\",\"publish\":\"p\",\"env\":{\"A\":null}}", "env" },
                { "{\"image\":\"busybox\",\"publish\":\"p\",\"metadata\":{\"k\":1}}", "metadata" },
                { "{\"image\":\"busybox\",\"publish\":\"p\",\"metadata\":{\"opensandbox.io/"
                  "k\":\"v\"}}",
                  "metadata" },
                { "{\"image\":\"busybox\",\"publish\":\"p\",\"readiness\":[]}", "readiness" },
                { "{\"image\":\"busybox\",\"publish\":\"p\",\"readiness\":{\"warmupSeconds\":-1}}",
                  "warmupSeconds" },
                { "{\"image\":\"busybox\",\"publish\":\"p\",\"readiness\":{\"warmupSeconds\":\"1\"}"
                  "}",
                  "warmupSeconds" },
                { "{\"image\":\"busybox\",\"publish\":\"p\",\"readiness\":{\"probe\":\"\"}}",
                  "probe" },
        };
        char err[TEMPLATE_ERR_MAX];

        (void)state;
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                int r = tparse(bad[i].body, NULL, err);
                if (r != -EINVAL || !strstr(err, bad[i].word))
                        fail_msg("%s: %d %s (wanted %s)", bad[i].body, r, err, bad[i].word);
        }
}

static void test_parse_caps_sizes(void **state)
{
        size_t n = 300000;
        char *big = malloc(n), err[TEMPLATE_ERR_MAX];
        int len;

        (void)state;
        assert_non_null(big);
        /* publish over its cap */
        len = snprintf(big, n, "{\"image\":\"busybox\",\"publish\":\"");
        memset(big + len, 'p', TEMPLATE_PUBLISH_MAX + 1);
        strcpy(big + len + TEMPLATE_PUBLISH_MAX + 1, "\"}");
        assert_int_equal(tparse(big, NULL, err), -EINVAL);
        assert_non_null(strstr(err, "publish"));
        /* an image reference longer than any create takes */
        len = snprintf(big, n, "{\"publish\":\"p\",\"image\":\"");
        memset(big + len, 'i', 256);
        strcpy(big + len + 256, "\"}");
        assert_int_equal(tparse(big, NULL, err), -EINVAL);
        assert_non_null(strstr(err, "image"));
        /* env larger than a create's */
        len = snprintf(big, n, "{\"image\":\"busybox\",\"publish\":\"p\",\"env\":{");
        for (int i = 0; i < 100; i++)
                len += snprintf(big + len, n - (size_t)len, "%s\"V%d\":\"%0200d\"", i ? "," : "", i,
                                0);
        strcpy(big + len, "}}");
        assert_int_equal(tparse(big, NULL, err), -EINVAL);
        assert_non_null(strstr(err, "env"));
        free(big);
}

static void test_answer(void **state)
{
        struct json_object *spec, *t;
        char err[TEMPLATE_ERR_MAX];

        (void)state;
        assert_int_equal(
                tparse("{\"image\":\"busybox:1\",\"publish\":\"p\",\"metadata\":{\"a\":\"b\"}}",
                       &spec, err),
                0);
        t = template_json(spec, "tpl-0123456789abcdef0123456789abcdef", 1765000000000LL,
                          1765000000123LL);
        assert_non_null(t);
        assert_string_equal(
                text(t),
                "{\"templateId\":\"tpl-0123456789abcdef0123456789abcdef\",\"format\":\"overlaybd\","
                "\"metadata\":{\"a\":\"b\"},\"image\":\"busybox:1\",\"publish\":\"p\","
                "\"status\":{\"phase\":\"Succeeded\"},"
                "\"createdAt\":\"2025-12-06T05:46:40.000Z\","
                "\"updatedAt\":\"2025-12-06T05:46:40.123Z\"}");
        json_object_put(t);
        json_object_put(spec);
}

static void test_filter(void **state)
{
        struct json_object *spec, *f;
        char err[TEMPLATE_ERR_MAX], many[512] = "";

        (void)state;
        assert_int_equal(tparse("{\"image\":\"b\",\"publish\":\"p\",\"metadata\":{\"a\":\"1\","
                                "\"b\":\"x.y\"}}",
                                &spec, err),
                         0);
        assert_int_equal(template_filter_parse("", &f, err), 0);
        assert_true(template_filter_match(spec, f));
        json_object_put(f);
        assert_true(template_filter_match(spec, NULL));
        assert_int_equal(template_filter_parse("a=1&b=x%2Ey", &f, err), 0);
        assert_true(template_filter_match(spec, f));
        json_object_put(f);
        assert_int_equal(template_filter_parse("a=1&c=1", &f, err), 0);
        assert_false(template_filter_match(spec, f));
        json_object_put(f);
        assert_int_equal(template_filter_parse("a=2", &f, err), 0);
        assert_false(template_filter_match(spec, f));
        json_object_put(f);
        assert_int_equal(template_filter_parse("=1", &f, err), -EINVAL);
        assert_null(f);
        assert_int_equal(template_filter_parse("a=%zz", &f, err), -EINVAL);
        for (int i = 0; i <= TEMPLATE_FILTER_MAX; i++)
                snprintf(many + strlen(many), sizeof(many) - strlen(many), "&k%d=v", i);
        assert_int_equal(template_filter_parse(many, &f, err), -EINVAL);
        json_object_put(spec);
        /* a template without metadata matches only no filter */
        assert_int_equal(tparse("{\"image\":\"b\",\"publish\":\"p\"}", &spec, err), 0);
        assert_int_equal(template_filter_parse("a=1", &f, err), 0);
        assert_false(template_filter_match(spec, f));
        json_object_put(f);
        json_object_put(spec);
}

static void test_create_ref(void **state)
{
        struct json_object *b;
        const char *id;
        char err[TEMPLATE_ERR_MAX];

        (void)state;
        b = parse("{\"templateId\":\"tpl-x\"}");
        assert_int_equal(template_create_ref(b, &id, err), 0);
        assert_string_equal(id, "tpl-x");
        json_object_put(b);
        /* absent, null and blank: a create as without it (the reference) */
        for (const char *const *js = (const char *const[]){ "{}", "{\"templateId\":null}",
                                                            "{\"templateId\":\"  \"}", NULL };
             *js; js++) {
                b = parse(*js);
                assert_int_equal(template_create_ref(b, &id, err), 0);
                assert_null(id);
                json_object_put(b);
        }
        b = parse("{\"templateId\":1}");
        assert_int_equal(template_create_ref(b, &id, err), -EINVAL);
        json_object_put(b);
}

/* template_merge of spec (a template body) and a create body: its text, or
 * NULL with err on -EINVAL. */
static char *merge(const char *tpl, const char *create, char *err)
{
        struct json_object *spec, *body = parse(create), *out = NULL;
        char *s = NULL;
        int r;

        assert_int_equal(tparse(tpl, &spec, err), 0);
        r = template_merge(spec, body, &out, err);
        if (r == 0) {
                s = strdup(text(out));
        } else {
                assert_int_equal(r, -EINVAL);
                assert_null(out);
        }
        json_object_put(out);
        json_object_put(body);
        json_object_put(spec);
        return s;
}

static void test_merge(void **state)
{
        const char *full =
                "{\"image\":\"busybox:1\",\"publish\":\"p\",\"entrypoint\":[\"sleep\",\"9\"],"
                "\"env\":{\"A\":\"1\"},\"resourceLimits\":{\"cpu\":\"250m\",\"memory\":\"64Mi\"},"
                "\"metadata\":{\"team\":\"t\"},\"readiness\":{\"warmupSeconds\":1}}";
        struct osb_create c;
        struct json_object *o;
        char err[TEMPLATE_ERR_MAX], cerr[OSB_ERR_MAX], *s;

        (void)state;
        /* the template's workload, the request's timeout, metadata,
         * networkPolicy and extensions; the template's own metadata, publish
         * and readiness stay the template's */
        s = merge(full,
                  "{\"templateId\":\"tpl-x\",\"timeout\":120,\"metadata\":{\"m\":\"n\"},"
                  "\"networkPolicy\":{\"defaultAction\":\"deny\"},\"extensions\":{\"k\":\"v\"},"
                  "\"secureAccess\":false}",
                  err);
        assert_non_null(s);
        assert_string_equal(s, "{\"timeout\":120,\"metadata\":{\"m\":\"n\"},\"networkPolicy\":{"
                               "\"defaultAction\":\"deny\"},"
                               "\"extensions\":{\"k\":\"v\"},\"secureAccess\":false,\"image\":{"
                               "\"uri\":\"busybox:1\"},"
                               "\"entrypoint\":[\"sleep\",\"9\"],\"env\":{\"A\":\"1\"},"
                               "\"resourceLimits\":{\"cpu\":\"250m\",\"memory\":\"64Mi\"}}");
        /* and it is a create the create's parser takes, as the template says */
        o = parse(s);
        assert_int_equal(osb_create_parse(&cfg, o, &c, cerr), 0);
        assert_string_equal(c.image, "busybox:1");
        assert_int_equal(c.nano_cpus, 250000000);
        assert_int_equal(c.memory_bytes, 64 * 1048576);
        assert_int_equal(c.timeout_s, 120);
        assert_string_equal(c.metadata, "{\"m\":\"n\"}");
        osb_create_wipe(&c);
        json_object_put(o);
        free(s);

        /* the defaults of a bare template: the reference's entrypoint, no env or limits */
        s = merge("{\"image\":\"busybox:1\",\"publish\":\"p\"}",
                  "{\"templateId\":\"tpl-x\",\"timeout\":60}", err);
        assert_string_equal(s, "{\"timeout\":60,\"image\":{\"uri\":\"busybox:1\"},"
                               "\"entrypoint\":[\"tail\",\"-f\",\"/dev/null\"]}");
        free(s);

        /* a template's disk is the create's ephemeral-storage */
        strcpy(cfg.provider, "docker");
        cfg.sandbox_disk_mb = 1024;
        cfg.sandbox_disk_max_mb = 4096;
        s = merge("{\"image\":\"b\",\"publish\":\"p\",\"resourceLimits\":{\"disk\":\"2Gi\"}}",
                  "{\"templateId\":\"t\",\"timeout\":60}", err);
        assert_non_null(strstr(s, "\"resourceLimits\":{\"" OSB_LIMIT_DISK "\":\"2Gi\"}"));
        free(s);
        cfg.sandbox_disk_mb = 0;
        cfg.sandbox_disk_max_mb = 0;
}

static void test_merge_refuses_workload_fields(void **state)
{
        static const char *const fields[] = {
                "\"image\":{\"uri\":\"x\"}",
                "\"snapshotId\":\"s\"",
                "\"entrypoint\":[\"sh\"]",
                "\"env\":{}",
                "\"resourceLimits\":{}",
                "\"resourceRequests\":{}",
                "\"volumes\":[]",
                "\"platform\":{\"os\":\"linux\",\"arch\":\"amd64\"}",
                "\"credentialProxy\":{\"enabled\":false}",
                "\"secureAccess\":true",
                "\"lifecycle\":{}",
        };
        char body[256], err[TEMPLATE_ERR_MAX], *s;

        (void)state;
        for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
                char name[32];
                snprintf(body, sizeof(body), "{\"templateId\":\"t\",\"timeout\":60,%s}", fields[i]);
                sscanf(fields[i], "\"%31[^\"]\"", name);
                s = merge("{\"image\":\"b\",\"publish\":\"p\"}", body, err);
                if (s || !strstr(err, "templateId cannot be combined with") || !strstr(err, name))
                        fail_msg("%s: %s", body, s ? s : err);
        }
        /* every one at once: all named, within the message */
        s = merge("{\"image\":\"b\",\"publish\":\"p\"}",
                  "{\"templateId\":\"t\",\"timeout\":60,\"image\":{},\"snapshotId\":\"s\","
                  "\"entrypoint\":[],"
                  "\"env\":{},\"resourceLimits\":{},\"resourceRequests\":{},\"volumes\":[],"
                  "\"platform\":{},"
                  "\"credentialProxy\":{},\"secureAccess\":true,\"lifecycle\":{}}",
                  err);
        assert_null(s);
        assert_non_null(strstr(err, "lifecycle, secureAccess"));
        /* null is not given */
        s = merge("{\"image\":\"b\",\"publish\":\"p\"}",
                  "{\"templateId\":\"t\",\"timeout\":60,\"image\":null}", err);
        assert_non_null(s);
        free(s);
        /* timeout is required */
        s = merge("{\"image\":\"b\",\"publish\":\"p\"}", "{\"templateId\":\"t\"}", err);
        assert_null(s);
        assert_non_null(strstr(err, "timeout"));
        s = merge("{\"image\":\"b\",\"publish\":\"p\"}", "{\"templateId\":\"t\",\"timeout\":null}",
                  err);
        assert_null(s);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_ids),
                cmocka_unit_test_setup(test_parse_stores_the_given_fields, setup),
                cmocka_unit_test_setup(test_parse_refuses, setup),
                cmocka_unit_test_setup(test_parse_caps_sizes, setup),
                cmocka_unit_test_setup(test_answer, setup),
                cmocka_unit_test_setup(test_filter, setup),
                cmocka_unit_test(test_create_ref),
                cmocka_unit_test_setup(test_merge, setup),
                cmocka_unit_test_setup(test_merge_refuses_workload_fields, setup),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
