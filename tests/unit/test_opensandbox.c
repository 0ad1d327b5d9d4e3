/* Unit tests for lib/sandbox/opensandbox.c: the OpenSandbox model
 * (sandbox-lifecycle.yml): resource quantities, metadata labels, states,
 * timestamps, create-request validation with its caps, and the rendering of
 * a record as the spec's Sandbox object. */
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
#include "sandbox/opensandbox.h"
#include "sandbox/opensandbox_reply.h"
#include "store/redis_conn.h"

static void test_parse_cpu(void **state)
{
        int64_t n = -1;

        (void)state;
        assert_int_equal(osb_parse_cpu("500m", &n), 0);
        assert_int_equal(n, 500000000);
        assert_int_equal(osb_parse_cpu("1", &n), 0);
        assert_int_equal(n, 1000000000);
        assert_int_equal(osb_parse_cpu("0.25", &n), 0);
        assert_int_equal(n, 250000000);
        assert_int_equal(osb_parse_cpu("10m", &n), 0); /* the floor: 0.01 */
        assert_int_equal(n, 10000000);
        assert_int_equal(osb_parse_cpu("64", &n), 0); /* the ceiling */
        n = 7;
        assert_int_equal(osb_parse_cpu("9m", &n), -EINVAL);
        assert_int_equal(n, 7); /* untouched on error */
        assert_int_equal(osb_parse_cpu("64.001", &n), -EINVAL);
        assert_int_equal(osb_parse_cpu("0", &n), -EINVAL);
        assert_int_equal(osb_parse_cpu("-1", &n), -EINVAL);
        assert_int_equal(osb_parse_cpu("", &n), -EINVAL);
        assert_int_equal(osb_parse_cpu(" 1", &n), -EINVAL);
        assert_int_equal(osb_parse_cpu("1 ", &n), -EINVAL);
        assert_int_equal(osb_parse_cpu("1mm", &n), -EINVAL);
        assert_int_equal(osb_parse_cpu("1k", &n), -EINVAL);
        assert_int_equal(osb_parse_cpu("m", &n), -EINVAL);
        assert_int_equal(osb_parse_cpu("nan", &n), -EINVAL);
        assert_int_equal(osb_parse_cpu("inf", &n), -EINVAL);
        assert_int_equal(osb_parse_cpu("1e400", &n), -EINVAL);
        assert_int_equal(n, 7);
}

static void test_parse_memory(void **state)
{
        int64_t b = -1;

        (void)state;
        assert_int_equal(osb_parse_memory("512Mi", &b), 0);
        assert_int_equal(b, 512LL << 20);
        assert_int_equal(osb_parse_memory("2Gi", &b), 0);
        assert_int_equal(b, 2LL << 30);
        assert_int_equal(osb_parse_memory("1G", &b), 0);
        assert_int_equal(b, 1000000000LL);
        assert_int_equal(osb_parse_memory("6Mi", &b), 0); /* Docker's floor */
        assert_int_equal(b, 6LL << 20);
        assert_int_equal(osb_parse_memory("6291456", &b), 0); /* plain bytes */
        assert_int_equal(osb_parse_memory("1Ti", &b), 0);   /* the ceiling */
        assert_int_equal(b, 1LL << 40);
        b = 7;
        assert_int_equal(osb_parse_memory("6291455", &b), -EINVAL);
        assert_int_equal(osb_parse_memory("5Mi", &b), -EINVAL);
        assert_int_equal(osb_parse_memory("1025Gi", &b), -EINVAL);
        assert_int_equal(osb_parse_memory("2Ti", &b), -EINVAL);
        assert_int_equal(osb_parse_memory("1Ki", &b), -EINVAL);
        assert_int_equal(osb_parse_memory("512mi", &b), -EINVAL); /* suffixes are case-sensitive */
        assert_int_equal(osb_parse_memory("512 Mi", &b), -EINVAL);
        assert_int_equal(osb_parse_memory("512Qi", &b), -EINVAL);
        assert_int_equal(osb_parse_memory("Mi", &b), -EINVAL);
        assert_int_equal(osb_parse_memory("", &b), -EINVAL);
        assert_int_equal(osb_parse_memory("-1Gi", &b), -EINVAL);
        assert_int_equal(osb_parse_memory("+1Gi", &b), -EINVAL);
        assert_int_equal(osb_parse_memory(".5Gi", &b), -EINVAL);
        assert_int_equal(osb_parse_memory("1e400", &b), -EINVAL);
        assert_int_equal(b, 7);
}

static void test_metadata_keys_and_values(void **state)
{
        char key[400];

        (void)state;
        assert_true(osb_metadata_key_valid("team"));
        assert_true(osb_metadata_key_valid("Team_1.x-y"));
        assert_true(osb_metadata_key_valid("example.com/owner"));
        assert_true(osb_metadata_key_valid("a.b-c.d/N"));
        assert_false(osb_metadata_key_valid(""));
        assert_false(osb_metadata_key_valid("-team"));
        assert_false(osb_metadata_key_valid("team-"));
        assert_false(osb_metadata_key_valid("te am"));
        assert_false(osb_metadata_key_valid("/name"));
        assert_false(osb_metadata_key_valid("example.com/"));
        assert_false(osb_metadata_key_valid("Example.com/name")); /* prefix: lower case */
        assert_false(osb_metadata_key_valid("a..b/name"));
        assert_false(osb_metadata_key_valid("a/b/c"));
        assert_false(osb_metadata_key_valid("opensandbox.io/anything")); /* reserved */
        /* name at most 63, prefix at most 253 */
        memset(key, 'k', 63);
        key[63] = '\0';
        assert_true(osb_metadata_key_valid(key));
        key[63] = 'k';
        key[64] = '\0';
        assert_false(osb_metadata_key_valid(key));
        snprintf(key, sizeof(key), "%.63s.%.63s.%.63s.%.61s/n", /* 253-byte prefix */
                 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
                 "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
                 "ccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc",
                 "ddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd");
        assert_true(osb_metadata_key_valid(key));
        snprintf(key, sizeof(key), "%.63s.%.63s.%.63s.%.62s/n", /* 254 */
                 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
                 "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
                 "ccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc",
                 "dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd");
        assert_false(osb_metadata_key_valid(key));

        assert_true(osb_metadata_value_valid(""));
        assert_true(osb_metadata_value_valid("v1.2_rc-3"));
        assert_false(osb_metadata_value_valid("-v"));
        assert_false(osb_metadata_value_valid("v/1"));
        assert_false(osb_metadata_value_valid("v 1"));
        assert_false(osb_metadata_value_valid("\xc3\xa9"));
        memset(key, 'v', 64);
        key[64] = '\0';
        assert_false(osb_metadata_value_valid(key));
        key[63] = '\0';
        assert_true(osb_metadata_value_valid(key));
}

static struct json_object *parse(const char *s)
{
        struct json_object *o = json_tokener_parse(s);

        assert_non_null(o);
        return o;
}

static void test_metadata_check_and_patch(void **state)
{
        char err[OSB_ERR_MAX];
        struct json_object *o;

        (void)state;
        o = parse("{\"team\":\"a\",\"x.io/owner\":\"\"}");
        assert_int_equal(osb_metadata_check(o, err), 0);
        json_object_put(o);
        o = parse("{\"team\":1}");
        assert_int_equal(osb_metadata_check(o, err), -EINVAL);
        assert_non_null(strstr(err, "team"));
        json_object_put(o);
        o = parse("{\"team\":null}"); /* null deletes in a patch, never in a create */
        assert_int_equal(osb_metadata_check(o, err), -EINVAL);
        assert_int_equal(osb_metadata_patch_check(o, err), 0);
        json_object_put(o);
        o = parse("{\"opensandbox.io/x\":\"a\"}");
        assert_int_equal(osb_metadata_check(o, err), -EINVAL);
        assert_int_equal(osb_metadata_patch_check(o, err), -EINVAL);
        assert_non_null(strstr(err, "reserved"));
        json_object_put(o);
        o = parse("[\"team\"]");
        assert_int_equal(osb_metadata_check(o, err), -EINVAL);
        assert_int_equal(osb_metadata_patch_check(o, err), -EINVAL);
        json_object_put(o);
        o = parse("{\"team\":{\"nested\":\"x\"}}");
        assert_int_equal(osb_metadata_patch_check(o, err), -EINVAL);
        json_object_put(o);
}

static void test_state_canonical(void **state)
{
        (void)state;
        assert_string_equal(osb_state_canonical("running"), "Running");
        assert_string_equal(osb_state_canonical("PAUSED"), "Paused");
        assert_string_equal(osb_state_canonical("Failed"), "Failed");
        assert_string_equal(osb_state_canonical("terminated"), "Terminated");
        assert_null(osb_state_canonical(""));
        assert_null(osb_state_canonical("Run"));
        assert_null(osb_state_canonical("Running "));
        assert_null(osb_state_canonical("Deleted"));
}

static void test_parse_time(void **state)
{
        int64_t ms = -1;

        (void)state;
        assert_int_equal(osb_parse_time("1970-01-01T00:00:00Z", &ms), 0);
        assert_int_equal(ms, 0);
        assert_int_equal(osb_parse_time("2025-11-16T14:30:45Z", &ms), 0);
        assert_int_equal(ms, 1763303445000LL);
        assert_int_equal(osb_parse_time("2025-11-16T14:30:45.5z", &ms), 0);
        assert_int_equal(ms, 1763303445500LL);
        assert_int_equal(osb_parse_time("2025-11-16T14:30:45.123456789Z", &ms), 0); /* ms kept */
        assert_int_equal(ms, 1763303445123LL);
        assert_int_equal(osb_parse_time("2025-11-16T16:30:45+02:00", &ms), 0);
        assert_int_equal(ms, 1763303445000LL);
        assert_int_equal(osb_parse_time("2025-11-16T12:30:45-02:00", &ms), 0);
        assert_int_equal(ms, 1763303445000LL);
        ms = 7;
        assert_int_equal(osb_parse_time("2025-11-16T14:30:45", &ms), -EINVAL); /* no zone */
        assert_int_equal(osb_parse_time("2025-11-16 14:30:45Z", &ms), -EINVAL);
        assert_int_equal(osb_parse_time("2025-11-16T14:30:45.Z", &ms), -EINVAL);
        assert_int_equal(osb_parse_time("2025-11-16T14:30:45Zjunk", &ms), -EINVAL);
        assert_int_equal(osb_parse_time("2025-13-16T14:30:45Z", &ms), -EINVAL);
        assert_int_equal(osb_parse_time("2025-11-00T14:30:45Z", &ms), -EINVAL);
        assert_int_equal(osb_parse_time("2025-11-16T24:00:00Z", &ms), -EINVAL);
        assert_int_equal(osb_parse_time("2025-11-16T14:60:00Z", &ms), -EINVAL);
        assert_int_equal(osb_parse_time("2025-11-16T14:30:45+0200", &ms), -EINVAL);
        assert_int_equal(osb_parse_time("25-11-16T14:30:45Z", &ms), -EINVAL);
        assert_int_equal(osb_parse_time("", &ms), -EINVAL);
        assert_int_equal(osb_parse_time("2025-11-16T14:30:45.000000000000000000000000000000000Z", &ms),
                         -EINVAL); /* over 40 bytes */
        assert_int_equal(ms, 7);
}

/* ---- create requests ---- */

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

static int create(const char *body, struct osb_create *c, char *err)
{
        struct json_object *o = parse(body);
        int r;

        err[0] = '\0';
        r = osb_create_parse(&cfg, o, c, err);
        json_object_put(o);
        return r;
}

#define MIN_BODY "\"image\":{\"uri\":\"busybox:1\"},\"entrypoint\":[\"sleep\",\"infinity\"]"

static void expect_create_refused(const char *body, const char *want);

/* extensions: kept as given (an object of strings, bounded); the renewal
 * key's value in ms, checked against its range and the longest timeout. */
static void test_create_extensions(void **state)
{
        struct osb_create *c = malloc(sizeof(*c));
        char err[OSB_ERR_MAX], big[2 * OSB_EXTENSIONS_MAX], *p = big;

        (void)state;
        assert_non_null(c);
        assert_int_equal(create("{" MIN_BODY "}", c, err), 0);
        assert_string_equal(c->extensions, "");
        assert_string_equal(c->renew_extend_ms, "");
        assert_int_equal(create("{" MIN_BODY ",\"extensions\":null}", c, err), 0);
        assert_string_equal(c->extensions, "");
        assert_int_equal(create("{" MIN_BODY ",\"extensions\":{\"a.b\":\"x\",\"" OSB_EXT_RENEW "\":\"300\"}}",
                                c, err), 0);
        assert_string_equal(c->extensions, "{\"a.b\":\"x\",\"" OSB_EXT_RENEW "\":\"300\"}");
        assert_string_equal(c->renew_extend_ms, "300000");
        assert_int_equal(create("{" MIN_BODY ",\"extensions\":{\"" OSB_EXT_RENEW "\":\"86400\"}}", c, err), 0);
        assert_string_equal(c->renew_extend_ms, "86400000");

        expect_create_refused("{" MIN_BODY ",\"extensions\":{\"" OSB_EXT_RENEW "\":\"299\"}}",
                              "from 300 to 86400");
        expect_create_refused("{" MIN_BODY ",\"extensions\":{\"" OSB_EXT_RENEW "\":\"86401\"}}",
                              "from 300 to 86400");
        expect_create_refused("{" MIN_BODY ",\"extensions\":{\"" OSB_EXT_RENEW "\":\"0000300\"}}",
                              "from 300 to 86400");
        expect_create_refused("{" MIN_BODY ",\"extensions\":{\"" OSB_EXT_RENEW "\":\" 300\"}}",
                              "from 300 to 86400");
        expect_create_refused("{" MIN_BODY ",\"extensions\":{\"" OSB_EXT_RENEW "\":300}}",
                              "the value must be a string");
        /* resourceRequests: checked like the limits, never above them */
        assert_int_equal(create("{" MIN_BODY ",\"resourceLimits\":{\"cpu\":\"1\",\"memory\":\"1Gi\"},"
                                "\"resourceRequests\":{\"cpu\":\"500m\",\"memory\":\"1Gi\"}}", c, err), 0);
        assert_int_equal(create("{" MIN_BODY ",\"resourceRequests\":null}", c, err), 0);
        expect_create_refused("{" MIN_BODY ",\"resourceLimits\":{\"cpu\":\"1\"},\"resourceRequests\":{\"cpu\":\"2\"}}",
                              "resourceRequests.cpu is more than");
        expect_create_refused("{" MIN_BODY ",\"resourceRequests\":{\"memory\":\"1Ti\"}}",
                              "resourceRequests.memory is more than");
        expect_create_refused("{" MIN_BODY ",\"resourceRequests\":{\"gpu\":\"1\"}}", "resourceRequests.gpu is not");
        expect_create_refused("{" MIN_BODY ",\"resourceRequests\":{\"cpu\":1}}", "resourceRequests.cpu must be");
        expect_create_refused("{" MIN_BODY ",\"resourceRequests\":[]}", "resourceRequests must be an object");
        /* lifecycle hooks: the sandbox agent's, so Docker only (test_create_lifecycle) */
        expect_create_refused("{" MIN_BODY ",\"lifecycle\":{\"preStart\":{\"command\":[\"true\"]}}}",
                              "lifecycle: hooks are run by the broker's sandbox agent");
        assert_int_equal(create("{" MIN_BODY ",\"lifecycle\":null}", c, err), 0);
        assert_null(c->lifecycle);
        expect_create_refused("{" MIN_BODY ",\"extensions\":[]}", "extensions must be an object");
        expect_create_refused("{" MIN_BODY ",\"extensions\":{\"\":\"x\"}}", "a key must be 1 to 128");
        cfg.osb_max_timeout_s = 3600;
        expect_create_refused("{" MIN_BODY ",\"extensions\":{\"" OSB_EXT_RENEW "\":\"7200\"}}",
                              "beyond the longest timeout");
        cfg.osb_max_timeout_s = 86400;
        /* 33 keys; then 4 KiB and more as JSON */
        p += sprintf(p, "{" MIN_BODY ",\"extensions\":{");
        for (int i = 0; i < 33; i++)
                p += sprintf(p, "%s\"k%d\":\"v\"", i ? "," : "", i);
        strcpy(p, "}}");
        expect_create_refused(big, "at most 32 keys");
        p = big + sprintf(big, "{" MIN_BODY ",\"extensions\":{");
        for (int i = 0; i < 9; i++) {
                p += sprintf(p, "%s\"k%d\":\"", i ? "," : "", i);
                memset(p, 'v', 500);
                p += 500;
                *p++ = '"';
        }
        strcpy(p, "}}");
        expect_create_refused(big, "extensions is larger than 4095 bytes");
        free(c);
}

/* extensions.runtime: an allowed runtime (SANDBOX_RUNTIME, SANDBOX_RUNTIMES),
 * Docker only; networkPolicy refused under runsc; never a warm-pool member
 * of another runtime. Other extensions stay opaque. */
static void test_create_runtime(void **state)
{
        struct osb_create *c = malloc(sizeof(*c));
        char err[OSB_ERR_MAX];

        (void)state;
        assert_non_null(c);
        strcpy(cfg.provider, "docker");
        strcpy(cfg.sandbox_runtime, "sandbox-runc");
        strcpy(cfg.sandbox_runtimes, "runsc");
        strcpy(cfg.pool, "busybox:1:2");
        cfg.n_pools = 1;
        strcpy(cfg.pools[0].image, "busybox:1");
        cfg.pools[0].size = 2;

        assert_int_equal(create("{" MIN_BODY "}", c, err), 0);
        assert_string_equal(c->runtime, "sandbox-runc");
        assert_string_equal(osb_create_pool(&cfg, c, false), "busybox:1");
        /* another spelling of the pool's image is served by it, under the
         * pool's own name (its Redis keys) */
        assert_int_equal(create("{\"image\":{\"uri\":\"docker.io/library/busybox:1\"},"
                                "\"entrypoint\":[\"sleep\",\"infinity\"]}", c, err), 0);
        assert_string_equal(osb_create_pool(&cfg, c, false), "busybox:1");
        assert_int_equal(create("{\"image\":{\"uri\":\"busybox\"},"
                                "\"entrypoint\":[\"sleep\",\"infinity\"]}", c, err), 0);
        assert_null(osb_create_pool(&cfg, c, false)); /* busybox:latest is another image */
        assert_int_equal(create("{" MIN_BODY ",\"extensions\":{\"other.key\":\"x\"}}", c, err), 0);
        assert_string_equal(c->runtime, "sandbox-runc");
        assert_int_equal(create("{" MIN_BODY ",\"extensions\":{\"runtime\":\"sandbox-runc\"}}", c, err), 0);
        assert_string_equal(osb_create_pool(&cfg, c, false), "busybox:1");
        assert_int_equal(create("{" MIN_BODY ",\"extensions\":{\"runtime\":\"runsc\"}}", c, err), 0);
        assert_string_equal(c->runtime, "runsc");
        assert_null(osb_create_pool(&cfg, c, false)); /* members run sandbox-runc */
        assert_int_equal(create("{" MIN_BODY ",\"extensions\":{\"runtime\":\"runsc\"},"
                                "\"networkPolicy\":null}", c, err), 0);

        expect_create_refused("{" MIN_BODY ",\"extensions\":{\"runtime\":\"kata\"}}",
                              "extensions.runtime: \"kata\" is not an allowed runtime (allowed: "
                              "sandbox-runc, runsc)");
        expect_create_refused("{" MIN_BODY ",\"extensions\":{\"runtime\":\"\"}}",
                              "is not an allowed runtime");
        expect_create_refused("{" MIN_BODY ",\"extensions\":{\"runtime\":7}}",
                              "extensions.runtime: a non-string is not an allowed runtime");
        /* gVisor sandboxes carry the agent (it dials): egress as under runc */
        assert_int_equal(create("{" MIN_BODY ",\"extensions\":{\"runtime\":\"runsc\"},"
                                "\"networkPolicy\":{\"defaultAction\":\"deny\"}}", c, err), 0);

        /* SANDBOX_RUNTIME_EXCLUSIVE is what a create without the key gets */
        strcpy(cfg.sandbox_runtime_mode[0], "runsc");
        assert_int_equal(create("{" MIN_BODY "}", c, err), 0);
        assert_string_equal(c->runtime, "runsc");
        assert_null(osb_create_pool(&cfg, c, false));
        cfg.sandbox_runtime_mode[0][0] = '\0';

        /* a pool of runsc members serves runsc creates: their agent dials */
        strcpy(cfg.sandbox_runtime, "runsc");
        assert_int_equal(create("{" MIN_BODY "}", c, err), 0);
        assert_string_equal(osb_create_pool(&cfg, c, false), "busybox:1");

        strcpy(cfg.provider, "daytona");
        expect_create_refused("{" MIN_BODY ",\"extensions\":{\"runtime\":\"runsc\"}}",
                              "extensions.runtime: not supported by this provider (daytona)");
        free(c);
}

static void expect_create_refused(const char *body, const char *want)
{
        struct osb_create *c = malloc(sizeof(*c));
        char err[OSB_ERR_MAX];

        assert_non_null(c);
        assert_int_equal(create(body, c, err), -EINVAL);
        if (!strstr(err, want))
                fail_msg("%s: error '%s' does not name '%s'", body, err, want);
        osb_create_wipe(c);
        free(c);
}

/* A body with lifecycle L, into a static buffer. */
static const char *with_lifecycle(const char *l)
{
        static char body[220 * 1024];

        snprintf(body, sizeof(body), "{" MIN_BODY ",\"lifecycle\":%s}", l);
        return body;
}

/* A JSON array of n strings of len bytes each, into a static buffer. */
static const char *strings(size_t n, size_t len)
{
        static char buf[150 * 1024];
        size_t k = 0;

        buf[k++] = '[';
        for (size_t i = 0; i < n; i++) {
                buf[k++] = '"';
                memset(buf + k, 'x', len);
                k += len;
                buf[k++] = '"';
                buf[k++] = i + 1 < n ? ',' : ']';
        }
        buf[k] = '\0';
        return buf;
}

/* lifecycle {preStart, periodic}: normalized (timeouts defaulted to 60),
 * each bound of lifecycle.h refused with the field's name; a warm pool
 * never serves a create with hooks. */
static void test_create_lifecycle(void **state)
{
        struct osb_create *c = malloc(sizeof(*c));
        static char l[200 * 1024];
        char err[OSB_ERR_MAX];

        (void)state;
        assert_non_null(c);
        strcpy(cfg.provider, "docker");
        assert_int_equal(create(with_lifecycle("{\"preStart\":{\"command\":[\"sh\",\"-c\",\"x\"]},"
                                               "\"periodic\":[{\"name\":\"a.b-c_1\",\"schedule\":\"@every 1s\","
                                               "\"command\":[\"true\"],\"timeoutSeconds\":300}]}"), c, err), 0);
        assert_non_null(c->lifecycle);
        assert_string_equal(c->lifecycle, "{\"preStart\":{\"command\":[\"sh\",\"-c\",\"x\"],\"timeoutSeconds\":60},"
                                          "\"periodic\":[{\"name\":\"a.b-c_1\",\"schedule\":\"@every 1s\","
                                          "\"command\":[\"true\"],\"timeoutSeconds\":300}]}");
        assert_null(osb_create_pool(&cfg, c, false));
        osb_create_wipe(c);
        assert_null(c->lifecycle);
        /* empty: no hooks at all */
        assert_int_equal(create(with_lifecycle("{}"), c, err), 0);
        assert_null(c->lifecycle);
        assert_int_equal(create(with_lifecycle("{\"preStart\":null,\"periodic\":[]}"), c, err), 0);
        assert_null(c->lifecycle);
        /* the caps themselves pass */
        snprintf(l, sizeof(l), "{\"preStart\":{\"command\":%s,\"timeoutSeconds\":10800}}", strings(256, 256));
        assert_int_equal(create(with_lifecycle(l), c, err), 0);
        osb_create_wipe(c);
        /* ... one byte or string more does not */
        snprintf(l, sizeof(l), "{\"preStart\":{\"command\":%s}}", strings(257, 1));
        expect_create_refused(with_lifecycle(l), "lifecycle.preStart.command must be an array of 1 to 256");
        snprintf(l, sizeof(l), "{\"preStart\":{\"command\":[\"x%s}}", strings(256, 256) + 2);
        expect_create_refused(with_lifecycle(l), "lifecycle.preStart.command is more than 65536 bytes");
        snprintf(l, sizeof(l), "{\"periodic\":[{\"name\":\"a\",\"schedule\":\"@hourly\",\"command\":%s},",
                 strings(2, 8192));
        snprintf(l + strlen(l), sizeof(l) - strlen(l), "{\"name\":\"b\",\"schedule\":\"@hourly\",\"command\":%s}]}",
                 strings(2, 8193));
        expect_create_refused(with_lifecycle(l), "lifecycle.periodic: the commands are more than 32768 bytes");
        expect_create_refused(with_lifecycle("[]"), "lifecycle must be an object");
        expect_create_refused(with_lifecycle("{\"postStop\":{}}"), "lifecycle: unknown field \"postStop\"");
        expect_create_refused(with_lifecycle("{\"preStart\":[]}"), "lifecycle.preStart must be an object");
        expect_create_refused(with_lifecycle("{\"preStart\":{}}"), "lifecycle.preStart.command must be");
        expect_create_refused(with_lifecycle("{\"preStart\":{\"command\":[\" \"]}}"),
                              "lifecycle.preStart.command[0] must be a non-blank string");
        expect_create_refused(with_lifecycle("{\"preStart\":{\"command\":[\"a\",1]}}"),
                              "lifecycle.preStart.command[1] must be a string");
        expect_create_refused(with_lifecycle("{\"preStart\":{\"command\":[\"a\\u0000b\"]}}"),
                              "lifecycle.preStart.command[0]");
        expect_create_refused(with_lifecycle("{\"preStart\":{\"command\":[\"a\"],\"timeoutSeconds\":0}}"),
                              "lifecycle.preStart.timeoutSeconds must be an integer from 1 to 10800");
        expect_create_refused(with_lifecycle("{\"preStart\":{\"command\":[\"a\"],\"timeoutSeconds\":\"5\"}}"),
                              "lifecycle.preStart.timeoutSeconds");
        expect_create_refused(with_lifecycle("{\"periodic\":{}}"), "lifecycle.periodic must be an array");
        expect_create_refused(with_lifecycle("{\"periodic\":[1]}"), "lifecycle.periodic[0] must be an object");
        expect_create_refused(with_lifecycle("{\"periodic\":[{\"name\":\"a\",\"schedule\":\"@hourly\"}]}"),
                              "lifecycle.periodic[0].command must be");
        expect_create_refused(with_lifecycle("{\"periodic\":[{\"name\":\"\",\"schedule\":\"@hourly\",\"command\":[\"a\"]}]}"),
                              "lifecycle.periodic[0].name must match");
        expect_create_refused(with_lifecycle("{\"periodic\":[{\"name\":\"../x\",\"schedule\":\"@hourly\",\"command\":[\"a\"]}]}"),
                              "lifecycle.periodic[0].name must match");
        expect_create_refused(with_lifecycle("{\"periodic\":[{\"name\":\"a\",\"schedule\":\"@every 0s\",\"command\":[\"a\"]}]}"),
                              "lifecycle.periodic[0].schedule must be");
        expect_create_refused(with_lifecycle("{\"periodic\":[{\"name\":\"a\",\"schedule\":5,\"command\":[\"a\"]}]}"),
                              "lifecycle.periodic[0].schedule must be");
        expect_create_refused(with_lifecycle("{\"periodic\":[{\"name\":\"a\",\"schedule\":\"0 0 31 4 *\",\"command\":[\"a\"]}]}"),
                              "never fires");
        expect_create_refused(with_lifecycle("{\"periodic\":[{\"name\":\"a\",\"schedule\":\"@hourly\",\"command\":[\"a\"],"
                                             "\"timeoutSeconds\":301}]}"),
                              "lifecycle.periodic[0].timeoutSeconds must be an integer from 1 to 300");
        expect_create_refused(with_lifecycle("{\"periodic\":[{\"name\":\"a\",\"schedule\":\"@hourly\",\"command\":[\"a\"]},"
                                             "{\"name\":\"a\",\"schedule\":\"@daily\",\"command\":[\"b\"]}]}"),
                              "lifecycle.periodic[1].name: \"a\" is the name of another");
        l[0] = '\0';
        strcat(l, "{\"periodic\":[");
        for (int i = 0; i < 17; i++)
                snprintf(l + strlen(l), sizeof(l) - strlen(l), "%s{\"name\":\"h%d\",\"schedule\":\"@hourly\","
                         "\"command\":[\"a\"]}", i ? "," : "", i);
        strcat(l, "]}");
        expect_create_refused(with_lifecycle(l), "lifecycle.periodic must be an array of at most 16");
        strcpy(cfg.provider, "daytona");
        expect_create_refused(with_lifecycle("{\"preStart\":{\"command\":[\"a\"]}}"), "this provider (daytona)");
        cfg.provider[0] = '\0';
        free(c);
}

/* resourceLimits.ephemeral-storage: the sandbox's disk in MiB (rounded
 * up), 64Mi to SANDBOX_DISK_MAX_MB, Docker with disks on only; not asked:
 * -1 (the store gives the default, or the tenant's cap). */
static void test_create_disk(void **state)
{
        struct osb_create *c = malloc(sizeof(*c));
        char err[OSB_ERR_MAX];

        (void)state;
        assert_non_null(c);
        strcpy(cfg.provider, "docker");
        cfg.sandbox_disk_mb = 1024;
        cfg.sandbox_disk_max_mb = 8192;
        assert_int_equal(create("{" MIN_BODY "}", c, err), 0);
        assert_int_equal(c->disk_mb, -1);
        assert_int_equal(create("{" MIN_BODY ",\"resourceLimits\":{\"ephemeral-storage\":\"2Gi\"}}", c, err), 0);
        assert_int_equal(c->disk_mb, 2048);
        assert_int_equal(create("{" MIN_BODY ",\"resourceLimits\":{\"ephemeral-storage\":\"100M\"}}", c, err), 0);
        assert_int_equal(c->disk_mb, 96); /* 100e6 bytes: 95.4 MiB, rounded up */
        assert_int_equal(create("{" MIN_BODY ",\"resourceLimits\":{\"ephemeral-storage\":\"64Mi\"}}", c, err), 0);
        assert_int_equal(c->disk_mb, 64);
        assert_int_equal(create("{" MIN_BODY ",\"resourceLimits\":{\"ephemeral-storage\":\"8Gi\"}}", c, err), 0);
        assert_int_equal(c->disk_mb, 8192); /* SANDBOX_DISK_MAX_MB's default */
        expect_create_refused("{" MIN_BODY ",\"resourceLimits\":{\"ephemeral-storage\":\"8193Mi\"}}",
                              "resourceLimits.ephemeral-storage must be like \"2Gi\" (64Mi to 8192Mi)");
        expect_create_refused("{" MIN_BODY ",\"resourceLimits\":{\"ephemeral-storage\":\"63Mi\"}}",
                              "(64Mi to");
        expect_create_refused("{" MIN_BODY ",\"resourceLimits\":{\"ephemeral-storage\":2048}}",
                              "resourceLimits.ephemeral-storage");
        expect_create_refused("{" MIN_BODY ",\"resourceLimits\":{\"ephemeral-storage\":\"-1Gi\"}}",
                              "resourceLimits.ephemeral-storage");
        expect_create_refused("{" MIN_BODY ",\"resourceLimits\":{\"ephemeral-storage\":\"1Gb\"}}",
                              "resourceLimits.ephemeral-storage");
        /* disks off: a bound asked for cannot be given, so it is refused */
        cfg.sandbox_disk_mb = 0;
        expect_create_refused("{" MIN_BODY ",\"resourceLimits\":{\"ephemeral-storage\":\"1Gi\"}}",
                              "no disk of their own (SANDBOX_DISK_MB=0)");
        assert_int_equal(create("{" MIN_BODY "}", c, err), 0);
        cfg.sandbox_disk_mb = 1024;
        strcpy(cfg.provider, "daytona");
        expect_create_refused("{" MIN_BODY ",\"resourceLimits\":{\"ephemeral-storage\":\"1Gi\"}}",
                              "no disk of their own");
        free(c);
}

static void test_create_minimal_and_full(void **state)
{
        struct osb_create *c = malloc(sizeof(*c));
        char err[OSB_ERR_MAX];

        (void)state;
        assert_non_null(c);
        assert_int_equal(create("{" MIN_BODY "}", c, err), 0);
        assert_string_equal(c->image, "busybox:1");
        assert_string_equal(c->entrypoint, "[\"sleep\",\"infinity\"]");
        assert_string_equal(c->env, "{}");
        assert_string_equal(c->metadata, "{}");
        assert_int_equal(c->timeout_s, -1);
        assert_int_equal(c->nano_cpus, 500000000); /* the broker's defaults */
        assert_int_equal(c->memory_bytes, 512LL << 20);
        assert_false(c->has_auth);

        assert_int_equal(create("{\"image\":{\"uri\":\"r.example/app:2\",\"auth\":{\"username\":\"u\","
                                "\"password\":\"p/w\"}},\"entrypoint\":[\"/bin/app\",\"\"],\"timeout\":60,"
                                "\"resourceLimits\":{\"cpu\":\"250m\",\"memory\":\"128Mi\",\"gpu\":\"0\"},"
                                "\"env\":{\"A_1\":\"x=y\",\"_B\":\"\"},\"metadata\":{\"team\":\"t\"},"
                                "\"platform\":{\"os\":\"linux\",\"arch\":\"amd64\"},\"volumes\":[],"
                                "\"extensions\":{\"anything\":\"1\"}}",
                                c, err),
                         0);
        assert_int_equal(c->timeout_s, 60);
        assert_int_equal(c->nano_cpus, 250000000);
        assert_int_equal(c->memory_bytes, 128LL << 20);
        assert_string_equal(c->env, "{\"A_1\":\"x=y\",\"_B\":\"\"}");
        assert_string_equal(c->metadata, "{\"team\":\"t\"}");
        assert_string_equal(c->entrypoint, "[\"/bin/app\",\"\"]"); /* later args may be empty */
        assert_true(c->has_auth);
        assert_string_equal(c->auth_user, "u");
        assert_string_equal(c->auth_pass, "p/w");
        osb_create_wipe(c);
        assert_false(c->has_auth);
        assert_string_equal(c->auth_user, "");
        assert_string_equal(c->auth_pass, "");
        free(c);
}

static void test_create_refusals(void **state)
{
        (void)state;
        expect_create_refused("{\"entrypoint\":[\"sh\"]}", "image.uri");
        expect_create_refused("{\"image\":\"busybox\",\"entrypoint\":[\"sh\"]}", "image.uri");
        expect_create_refused("{\"image\":{\"uri\":\"\"},\"entrypoint\":[\"sh\"]}", "image.uri");
        expect_create_refused("{\"image\":{\"uri\":\"a b\"},\"entrypoint\":[\"sh\"]}", "spaces");
        expect_create_refused("{\"image\":{\"uri\":\"a\\nb\"},\"entrypoint\":[\"sh\"]}", "control");
        expect_create_refused("{\"image\":{\"uri\":\"a\"}}", "entrypoint is required");
        expect_create_refused("{\"image\":{\"uri\":\"a\"},\"entrypoint\":[]}", "1 to 64");
        expect_create_refused("{\"image\":{\"uri\":\"a\"},\"entrypoint\":\"sh\"}", "1 to 64");
        expect_create_refused("{\"image\":{\"uri\":\"a\"},\"entrypoint\":[\"\"]}", "entrypoint[0]");
        expect_create_refused("{\"image\":{\"uri\":\"a\"},\"entrypoint\":[\"sh\",1]}", "entrypoint[1]");
        expect_create_refused("{\"image\":{\"uri\":\"a\"},\"entrypoint\":[\"s\\u0000h\"]}", "entrypoint[0]");
        expect_create_refused("{" MIN_BODY ",\"snapshotId\":\"s\"}", "snapshotId");
        expect_create_refused("{" MIN_BODY ",\"timeout\":59}", "timeout");
        expect_create_refused("{" MIN_BODY ",\"timeout\":86401}", "timeout");
        expect_create_refused("{" MIN_BODY ",\"timeout\":60.5}", "timeout");
        expect_create_refused("{" MIN_BODY ",\"timeout\":\"60\"}", "timeout");
        expect_create_refused("{" MIN_BODY ",\"resourceLimits\":[]}", "resourceLimits");
        expect_create_refused("{" MIN_BODY ",\"resourceLimits\":{\"cpu\":1}}", "resourceLimits.cpu");
        expect_create_refused("{" MIN_BODY ",\"resourceLimits\":{\"cpu\":\"100\"}}", "resourceLimits.cpu");
        expect_create_refused("{" MIN_BODY ",\"resourceLimits\":{\"memory\":\"1Ki\"}}", "resourceLimits.memory");
        expect_create_refused("{" MIN_BODY ",\"resourceLimits\":{\"gpu\":\"1\"}}", "GPU");
        expect_create_refused("{" MIN_BODY ",\"resourceLimits\":{\"disk\":\"1Gi\"}}", "resourceLimits.disk");
        expect_create_refused("{" MIN_BODY ",\"env\":[]}", "env");
        expect_create_refused("{" MIN_BODY ",\"env\":{\"1A\":\"x\"}}", "env");
        expect_create_refused("{" MIN_BODY ",\"env\":{\"A-B\":\"x\"}}", "env");
        expect_create_refused("{" MIN_BODY ",\"env\":{\"\":\"x\"}}", "env");
        expect_create_refused("{" MIN_BODY ",\"env\":{\"A\":1}}", "env");
        expect_create_refused("{" MIN_BODY ",\"env\":{\"A\":\"x\\u0000y\"}}", "env");
        expect_create_refused("{" MIN_BODY ",\"metadata\":{\"-bad\":\"x\"}}", "metadata key");
        expect_create_refused("{" MIN_BODY ",\"platform\":{\"os\":\"windows\",\"arch\":\"amd64\"}}", "linux/amd64");
        expect_create_refused("{" MIN_BODY ",\"platform\":{\"os\":\"linux\"}}", "linux/amd64");
        expect_create_refused("{\"image\":{\"uri\":\"a\",\"auth\":\"u:p\"},\"entrypoint\":[\"sh\"]}", "image.auth");
        expect_create_refused("{\"image\":{\"uri\":\"a\",\"auth\":{\"token\":\"t\"}},\"entrypoint\":[\"sh\"]}",
                              "unknown field");
        expect_create_refused("{\"image\":{\"uri\":\"a\",\"auth\":{\"username\":\"u\\r\\nX: y\"}},"
                              "\"entrypoint\":[\"sh\"]}", "control");
        expect_create_refused("{\"image\":{\"uri\":\"a\",\"auth\":{\"password\":7}},\"entrypoint\":[\"sh\"]}",
                              "image.auth.password");
}

/* null, or a non-string, where platform wants strings: a clear refusal */
static void test_create_platform_types(void **state)
{
        (void)state;
        expect_create_refused("{" MIN_BODY ",\"platform\":{\"os\":null,\"arch\":\"amd64\"}}", "linux/amd64");
        expect_create_refused("{" MIN_BODY ",\"platform\":{\"os\":\"linux\",\"arch\":null}}", "linux/amd64");
        expect_create_refused("{" MIN_BODY ",\"platform\":{\"os\":[\"linux\"],\"arch\":\"amd64\"}}", "linux/amd64");
        expect_create_refused("{" MIN_BODY ",\"platform\":\"linux/amd64\"}", "linux/amd64");
}

#define BODY_CAP (2 * OSB_ENV_MAX + 1024)

/* Append to a body of BODY_CAP bytes at *o (checked). */
static void __attribute__((format(printf, 3, 4))) put(char *body, size_t *o, const char *fmt, ...)
{
        va_list ap;
        int n;

        va_start(ap, fmt);
        n = vsnprintf(body + *o, BODY_CAP - *o, fmt, ap);
        va_end(ap);
        assert_true(n >= 0 && (size_t)n < BODY_CAP - *o);
        *o += (size_t)n;
}

static void fill(char *body, size_t *o, char c, size_t n)
{
        assert_true(*o + n < BODY_CAP);
        memset(body + *o, c, n);
        *o += n;
        body[*o] = '\0';
}

static void test_create_caps(void **state)
{
        char *body = malloc(BODY_CAP);
        struct osb_create *c = malloc(sizeof(*c));
        char err[OSB_ERR_MAX];
        size_t o, mark;

        (void)state;
        assert_non_null(body);
        assert_non_null(c);
        /* 64 entrypoint strings pass, 65 do not */
        o = 0;
        put(body, &o, "{\"image\":{\"uri\":\"a\"},\"entrypoint\":[\"x\"");
        for (int i = 1; i < 64; i++)
                put(body, &o, ",\"x\"");
        mark = o;
        put(body, &o, "]}");
        assert_int_equal(create(body, c, err), 0);
        o = mark;
        put(body, &o, ",\"x\"]}");
        assert_int_equal(create(body, c, err), -EINVAL);
        /* an entrypoint over OSB_ENTRYPOINT_MAX bytes as JSON */
        o = 0;
        put(body, &o, "{\"image\":{\"uri\":\"a\"},\"entrypoint\":[\"x\",\"");
        fill(body, &o, 'y', OSB_ENTRYPOINT_MAX);
        put(body, &o, "\"]}");
        assert_int_equal(create(body, c, err), -EINVAL);
        assert_non_null(strstr(err, "entrypoint is larger"));
        /* 128 env entries pass, 129 do not */
        o = 0;
        put(body, &o, "{" MIN_BODY ",\"env\":{\"V0\":\"\"");
        for (int i = 1; i < 128; i++)
                put(body, &o, ",\"V%d\":\"\"", i);
        mark = o;
        put(body, &o, "}}");
        assert_int_equal(create(body, c, err), 0);
        o = mark;
        put(body, &o, ",\"V128\":\"\"}}");
        assert_int_equal(create(body, c, err), -EINVAL);
        /* env over OSB_ENV_MAX bytes as JSON */
        o = 0;
        put(body, &o, "{" MIN_BODY ",\"env\":{\"BIG\":\"");
        fill(body, &o, 'e', OSB_ENV_MAX);
        put(body, &o, "\"}}");
        assert_int_equal(create(body, c, err), -EINVAL);
        assert_non_null(strstr(err, "env is larger"));
        /* an image name of 255 bytes fits, 256 do not */
        o = 0;
        put(body, &o, "{\"entrypoint\":[\"sh\"],\"image\":{\"uri\":\"");
        mark = o;
        fill(body, &o, 'i', 255);
        put(body, &o, "\"}}");
        assert_int_equal(create(body, c, err), 0);
        assert_int_equal(strlen(c->image), 255);
        o = mark;
        fill(body, &o, 'i', 256);
        put(body, &o, "\"}}");
        assert_int_equal(create(body, c, err), -EINVAL);
        /* a password up to OSB_AUTH_PASS_MAX - 1 */
        o = 0;
        put(body, &o, "{\"entrypoint\":[\"sh\"],\"image\":{\"uri\":\"a\",\"auth\":{\"password\":\"");
        mark = o;
        fill(body, &o, 'p', OSB_AUTH_PASS_MAX);
        put(body, &o, "\"}}}");
        assert_int_equal(create(body, c, err), -EINVAL);
        o = mark;
        fill(body, &o, 'p', OSB_AUTH_PASS_MAX - 1);
        put(body, &o, "\"}}}");
        assert_int_equal(create(body, c, err), 0);
        assert_int_equal(strlen(c->auth_pass), OSB_AUTH_PASS_MAX - 1);
        osb_create_wipe(c);
        free(c);
        free(body);
}

/* ---- records as Sandbox objects ---- */

static redisReply *hash_of(const char *const *kv, size_t n)
{
        redisReply *h = calloc(1, sizeof(*h));

        assert_non_null(h);
        h->type = REDIS_REPLY_ARRAY;
        h->elements = n;
        h->element = calloc(n ? n : 1, sizeof(*h->element));
        for (size_t i = 0; i < n; i++) {
                redisReply *e = calloc(1, sizeof(*e));
                e->type = REDIS_REPLY_STRING;
                e->str = strdup(kv[i]);
                e->len = strlen(kv[i]);
                h->element[i] = e;
        }
        return h;
}

static void hash_free(redisReply *h)
{
        for (size_t i = 0; i < h->elements; i++) {
                free(h->element[i]->str);
                free(h->element[i]);
        }
        free(h->element);
        free(h);
}

static const char *str_at(struct json_object *o, const char *a, const char *b)
{
        struct json_object *v;

        if (!json_object_object_get_ex(o, a, &v))
                return NULL;
        if (b && !json_object_object_get_ex(v, b, &v))
                return NULL;
        return json_object_get_string(v);
}

static void test_sandbox_json(void **state)
{
        static const char *const kv[] = {
                "sandboxId", "s1", "state", "Failed", "reason", "OOM_KILLED", "message", "out of memory",
                "lastTransitionAt", "1763303445000", "image", "busybox:1", "metadata", "{\"team\":\"t\"}",
                "entrypoint", "[\"sh\"]", "expiresAt", "", "createdAt", "1763303445123",
                "auth_pass", "never-shown", "extensions", "{\"storage.id\":\"w\"}", "poolRef", "busybox:1",
                "renewExtendMs", "300000",
        };
        redisReply *h = hash_of(kv, sizeof(kv) / sizeof(kv[0]));
        struct json_object *o = NULL, *v;

        (void)state;
        assert_int_equal(osb_sandbox_json(h, true, &o), 0);
        assert_string_equal(str_at(o, "id", NULL), "s1");
        assert_string_equal(str_at(o, "image", "uri"), "busybox:1");
        assert_string_equal(str_at(o, "status", "state"), "Failed");
        assert_string_equal(str_at(o, "status", "reason"), "OOM_KILLED");
        assert_string_equal(str_at(o, "status", "message"), "out of memory");
        assert_string_equal(str_at(o, "status", "lastTransitionAt"), "2025-11-16T14:30:45.000Z");
        assert_string_equal(str_at(o, "createdAt", NULL), "2025-11-16T14:30:45.123Z");
        assert_string_equal(str_at(o, "metadata", "team"), "t");
        assert_false(json_object_object_get_ex(o, "expiresAt", &v)); /* manual cleanup */
        assert_null(strstr(json_object_to_json_string(o), "never-shown")); /* only known fields */
        assert_null(strstr(json_object_to_json_string(o), "renewExtendMs"));
        assert_string_equal(str_at(o, "extensions", "storage.id"), "w");
        assert_string_equal(str_at(o, "allocation", "mode"), "pool");
        assert_string_equal(str_at(o, "allocation", "poolRef"), "busybox:1");
        assert_string_equal(str_at(o, "allocation", "state"), "allocated");
        json_object_put(o);
        /* the create answer's subset: no image, no allocation; extensions */
        assert_int_equal(osb_sandbox_json(h, false, &o), 0);
        assert_false(json_object_object_get_ex(o, "image", &v));
        assert_false(json_object_object_get_ex(o, "allocation", &v));
        assert_string_equal(str_at(o, "extensions", "storage.id"), "w");
        json_object_put(o);
        hash_free(h);
}

static void test_sandbox_json_bad_records(void **state)
{
        static const char *const no_state[] = { "sandboxId", "s1" };
        static const char *const odd[] = { "sandboxId", "s1", "state" };
        static const char *const junk[] = { "sandboxId", "s1", "state", "Running", "metadata", "{not json",
                                            "entrypoint", "7" };
        struct json_object *o = (struct json_object *)&o, *v;
        redisReply *h;

        (void)state;
        h = hash_of(NULL, 0);
        assert_int_equal(osb_sandbox_json(h, true, &o), -ENOENT);
        assert_null(o);
        hash_free(h);
        h = hash_of(no_state, 2);
        assert_int_equal(osb_sandbox_json(h, true, &o), -EPROTO);
        hash_free(h);
        h = hash_of(odd, 3);
        assert_int_equal(osb_sandbox_json(h, true, &o), -EPROTO);
        hash_free(h);
        assert_int_equal(osb_sandbox_json(NULL, true, &o), -EPROTO);
        /* unparsable stored JSON falls back to the defaults, never to garbage */
        h = hash_of(junk, 8);
        assert_int_equal(osb_sandbox_json(h, true, &o), 0);
        assert_true(json_object_object_get_ex(o, "metadata", &v) && json_object_is_type(v, json_type_object));
        assert_true(json_object_object_get_ex(o, "entrypoint", &v));
        json_object_put(o);
        hash_free(h);
        assert_null(reply_hash_get(NULL, "state"));
        h = hash_of(junk, 8);
        assert_string_equal(reply_hash_get(h, "state"), "Running");
        assert_null(reply_hash_get(h, "ref"));
        hash_free(h);
}

/* POST /v1/metrics/events (the SDKs' create telemetry): the model's
 * fields, each bounded; a bad one is refused with its reason. */
static int event(const char *text, struct osb_metrics_event *ev, char *err)
{
        struct json_object *o = parse(text);
        int r = osb_metrics_event_parse(o, ev, err);

        /* ev borrows from o: only what the caller checks below is kept */
        static char sid[200], img[300];
        if (r == 0) {
                snprintf(sid, sizeof(sid), "%s", ev->sandbox_id ? ev->sandbox_id : "(none)");
                snprintf(img, sizeof(img), "%s", ev->image ? ev->image : "(none)");
                ev->sandbox_id = sid;
                ev->image = img;
        }
        json_object_put(o);
        return r;
}

static void test_metrics_event(void **state)
{
        struct osb_metrics_event ev;
        char err[OSB_ERR_MAX], big[400], text[600];

        (void)state;
        /* what the Python SDK 1.1.1 sends (lifecycle_metrics._build_payload) */
        assert_int_equal(event("{\"eventType\":\"sandbox.create\",\"createDurationMs\":1234,\"success\":true,"
                               "\"sandboxId\":\"abc123\",\"image\":\"python:3.12-slim\"}", &ev, err), 0);
        assert_int_equal(ev.duration_ms, 1234);
        assert_true(ev.success);
        assert_string_equal(ev.sandbox_id, "abc123");
        assert_string_equal(ev.image, "python:3.12-slim");
        /* a failed create: no id; null is absent; unknown keys ignored */
        assert_int_equal(event("{\"eventType\":\"sandbox.create\",\"createDurationMs\":0,\"success\":false,"
                               "\"sandboxId\":null,\"extra\":[1,2]}", &ev, err), 0);
        assert_false(ev.success);
        assert_int_equal(ev.duration_ms, 0);
        assert_string_equal(ev.sandbox_id, "(none)");
        assert_string_equal(ev.image, "(none)");
        assert_int_equal(event("{\"eventType\":\"sandbox.create\",\"createDurationMs\":86400000,\"success\":true}",
                               &ev, err), 0);
        /* refused */
        assert_int_equal(event("{\"createDurationMs\":1,\"success\":true}", &ev, err), -EINVAL);
        assert_non_null(strstr(err, "eventType"));
        assert_int_equal(event("{\"eventType\":\"sandbox.delete\",\"createDurationMs\":1,\"success\":true}", &ev, err),
                         -EINVAL);
        assert_int_equal(event("{\"eventType\":\"sandbox.create\",\"success\":true}", &ev, err), -EINVAL);
        assert_non_null(strstr(err, "createDurationMs"));
        assert_int_equal(event("{\"eventType\":\"sandbox.create\",\"createDurationMs\":-1,\"success\":true}", &ev, err),
                         -EINVAL);
        assert_int_equal(event("{\"eventType\":\"sandbox.create\",\"createDurationMs\":86400001,\"success\":true}",
                               &ev, err), -EINVAL);
        assert_int_equal(event("{\"eventType\":\"sandbox.create\",\"createDurationMs\":99999999999999999999999,"
                               "\"success\":true}", &ev, err), -EINVAL);
        assert_int_equal(event("{\"eventType\":\"sandbox.create\",\"createDurationMs\":1.5,\"success\":true}", &ev, err),
                         -EINVAL);
        assert_int_equal(event("{\"eventType\":\"sandbox.create\",\"createDurationMs\":\"5\",\"success\":true}", &ev, err),
                         -EINVAL);
        assert_int_equal(event("{\"eventType\":\"sandbox.create\",\"createDurationMs\":5}", &ev, err), -EINVAL);
        assert_non_null(strstr(err, "success"));
        assert_int_equal(event("{\"eventType\":\"sandbox.create\",\"createDurationMs\":5,\"success\":1}", &ev, err),
                         -EINVAL);
        assert_int_equal(event("{\"eventType\":\"sandbox.create\",\"createDurationMs\":5,\"success\":true,"
                               "\"sandboxId\":\"a b\"}", &ev, err), -EINVAL);
        assert_non_null(strstr(err, "sandboxId"));
        assert_int_equal(event("{\"eventType\":\"sandbox.create\",\"createDurationMs\":5,\"success\":true,"
                               "\"sandboxId\":7}", &ev, err), -EINVAL);
        assert_int_equal(event("{\"eventType\":\"sandbox.create\",\"createDurationMs\":5,\"success\":true,"
                               "\"image\":\"\"}", &ev, err), -EINVAL);
        assert_int_equal(event("{\"eventType\":\"sandbox.create\",\"createDurationMs\":5,\"success\":true,"
                               "\"image\":\"a\\u0000b\"}", &ev, err), -EINVAL);
        memset(big, 'a', OSB_EVENT_IMAGE_MAX);
        big[OSB_EVENT_IMAGE_MAX] = '\0';
        snprintf(text, sizeof(text), "{\"eventType\":\"sandbox.create\",\"createDurationMs\":5,\"success\":true,"
                                     "\"image\":\"%s\"}", big);
        assert_int_equal(event(text, &ev, err), 0); /* at the cap */
        big[OSB_EVENT_IMAGE_MAX] = 'a';
        big[OSB_EVENT_IMAGE_MAX + 1] = '\0';
        snprintf(text, sizeof(text), "{\"eventType\":\"sandbox.create\",\"createDurationMs\":5,\"success\":true,"
                                     "\"image\":\"%s\"}", big);
        assert_int_equal(event(text, &ev, err), -EINVAL);
        assert_non_null(strstr(err, "image"));
}

/* Idempotency-Key (docs/API.md, "Idempotent creates"): bounded, one
 * charset, the draft's quoted form; nothing else gets in. */
static void test_idempotency_key(void **state)
{
        char key[OSB_IDEMPOTENCY_KEY_MAX + 1], err[OSB_ERR_MAX], big[OSB_IDEMPOTENCY_KEY_MAX + 8];
        static const char *const bad[] = {
                "", "\"\"", "a b", "a,b", "a, b", "ключ", "a\tb", "a\nb", "a\"b", "\"ab", "a;b",
                "a\\b", "a%20b", "a*", "a?b", "a#b",
        };

        (void)state;
        assert_int_equal(osb_idempotency_key_parse(NULL, key, err), 0);
        assert_string_equal(key, "");
        assert_int_equal(osb_idempotency_key_parse("8e03978e-40d5-43e8-bc93-6894a57f9324", key, err), 0);
        assert_string_equal(key, "8e03978e-40d5-43e8-bc93-6894a57f9324");
        /* the IETF draft's sf-string */
        assert_int_equal(osb_idempotency_key_parse("\"01HV3K:order/7+x=\"", key, err), 0);
        assert_string_equal(key, "01HV3K:order/7+x=");
        memset(big, 'k', sizeof(big));
        big[OSB_IDEMPOTENCY_KEY_MAX] = '\0';
        assert_int_equal(osb_idempotency_key_parse(big, key, err), 0);
        assert_int_equal(strlen(key), OSB_IDEMPOTENCY_KEY_MAX);
        big[OSB_IDEMPOTENCY_KEY_MAX] = 'k';
        big[OSB_IDEMPOTENCY_KEY_MAX + 1] = '\0';
        strcpy(key, "untouched");
        assert_int_equal(osb_idempotency_key_parse(big, key, err), -EINVAL);
        assert_string_equal(key, "");
        assert_non_null(strstr(err, "Idempotency-Key"));
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                err[0] = '\0';
                assert_int_equal(osb_idempotency_key_parse(bad[i], key, err), -EINVAL);
                assert_string_equal(key, "");
                assert_true(err[0] != '\0');
        }
}

static void fingerprint_of(const char *text, char fp[OSB_FINGERPRINT_MAX])
{
        struct json_object *o = json_tokener_parse(text);

        assert_non_null(o);
        assert_int_equal(osb_create_fingerprint(o, fp), 0);
        json_object_put(o);
}

/* "The same create": whitespace aside the same JSON, image.auth left out
 * (never kept, not even hashed); anything else that differs is another. */
static void test_create_fingerprint(void **state)
{
        char a[OSB_FINGERPRINT_MAX], b[OSB_FINGERPRINT_MAX];
        struct json_object *o, *img, *auth;
        const char *before;

        (void)state;
        fingerprint_of("{\"image\":{\"uri\":\"busybox\"},\"entrypoint\":[\"sleep\",\"1\"],\"timeout\":null}", a);
        assert_int_equal(strlen(a), 64);
        assert_int_equal(strspn(a, "0123456789abcdef"), 64);
        fingerprint_of(" { \"image\" : {\"uri\": \"busybox\"},\n\"entrypoint\": [\"sleep\", \"1\"], \"timeout\": null } ", b);
        assert_string_equal(a, b);
        fingerprint_of("{\"image\":{\"uri\":\"busybox\",\"auth\":{\"username\":\"u\",\"password\":\"p1\"}},"
                       "\"entrypoint\":[\"sleep\",\"1\"],\"timeout\":null}", b);
        assert_string_equal(a, b); /* a refreshed password is the same create */
        fingerprint_of("{\"image\":{\"uri\":\"busybox\",\"auth\":null},\"entrypoint\":[\"sleep\",\"1\"],\"timeout\":null}", b);
        assert_string_equal(a, b);
        fingerprint_of("{\"image\":{\"uri\":\"busybox\"},\"entrypoint\":[\"sleep\",\"2\"],\"timeout\":null}", b);
        assert_string_not_equal(a, b);
        fingerprint_of("{\"image\":{\"uri\":\"busybox\"},\"entrypoint\":[\"sleep\",\"1\"],\"timeout\":600}", b);
        assert_string_not_equal(a, b);
        fingerprint_of("{\"image\":{\"uri\":\"busybox\"},\"entrypoint\":[\"sleep\",\"1\"],\"timeout\":null,\"metadata\":{}}", b);
        assert_string_not_equal(a, b);
        /* the body keeps its content, auth included */
        o = json_tokener_parse("{\"image\":{\"auth\":{\"password\":\"p\"},\"uri\":\"x\"},\"env\":{}}");
        assert_non_null(o);
        before = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
        assert_non_null(strstr(before, "\"password\""));
        assert_int_equal(osb_create_fingerprint(o, a), 0);
        assert_true(json_object_object_get_ex(o, "image", &img));
        assert_true(json_object_object_get_ex(img, "auth", &auth));
        assert_true(json_object_object_get_ex(auth, "password", NULL));
        assert_true(json_object_object_get_ex(img, "uri", NULL));
        assert_int_equal(json_object_object_length(o), 2);
        json_object_put(o);
        /* an image that is no object is hashed as it is */
        fingerprint_of("{\"image\":\"busybox\"}", a);
        fingerprint_of("{\"image\":\"busybox2\"}", b);
        assert_string_not_equal(a, b);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup(test_create_lifecycle, setup),
                cmocka_unit_test(test_parse_cpu),
                cmocka_unit_test(test_parse_memory),
                cmocka_unit_test(test_metadata_keys_and_values),
                cmocka_unit_test(test_metadata_check_and_patch),
                cmocka_unit_test(test_state_canonical),
                cmocka_unit_test(test_parse_time),
                cmocka_unit_test_setup(test_create_minimal_and_full, setup),
                cmocka_unit_test_setup(test_create_refusals, setup),
                cmocka_unit_test_setup(test_create_disk, setup),
                cmocka_unit_test_setup(test_create_platform_types, setup),
                cmocka_unit_test_setup(test_create_caps, setup),
                cmocka_unit_test_setup(test_create_runtime, setup),
                cmocka_unit_test(test_sandbox_json),
                cmocka_unit_test(test_sandbox_json_bad_records),
                cmocka_unit_test(test_idempotency_key),
                cmocka_unit_test(test_metrics_event),
                cmocka_unit_test(test_create_fingerprint),
                cmocka_unit_test_setup(test_create_extensions, setup),
        };
        return cmocka_run_group_tests_name("opensandbox", tests, NULL, NULL);
}
