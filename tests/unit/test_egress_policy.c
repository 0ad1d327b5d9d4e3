/* Unit tests for lib/core/egress_policy.c: parsing untrusted NetworkPolicy
 * JSON, normalizing, matching, and the egress API's PATCH/DELETE semantics. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/config.h"
#include "core/egress_policy.h"
#include "sandbox/egress_store.h"

static struct egress_policy *parse_ok(const char *s)
{
        struct egress_policy *p = malloc(sizeof(*p));
        char err[256] = "";

        assert_non_null(p);
        if (egress_policy_parse(s, strlen(s), p, err, sizeof(err)) != 0)
                fail_msg("policy %s rejected: %s", s, err);
        return p;
}

static void expect_rejected(const char *s, const char *want)
{
        struct egress_policy *p = malloc(sizeof(*p));
        char err[256] = "";

        assert_non_null(p);
        p->n = 7777;
        if (egress_policy_parse(s, strlen(s), p, err, sizeof(err)) != -EINVAL)
                fail_msg("policy %.200s accepted", s);
        assert_int_equal(p->n, 7777); /* untouched */
        assert_true(err[0] != '\0');
        if (want && !strstr(err, want))
                fail_msg("policy %.200s: error \"%s\" lacks \"%s\"", s, err, want);
        free(p);
}

static void expect_json(const struct egress_policy *p, const char *want)
{
        char *s = NULL;

        assert_int_equal(egress_policy_to_json(p, &s), 0);
        assert_string_equal(s, want);
        free(s);
}

static void test_defaults(void **state)
{
        struct egress_policy *p;

        (void)state;
        p = parse_ok("{}"); /* the spec: empty object is allow-all */
        assert_true(p->default_allow);
        assert_int_equal(p->n, 0);
        expect_json(p, "{\"defaultAction\":\"allow\",\"egress\":[]}");
        assert_string_equal(egress_policy_mode(p), "allow_all");
        free(p);

        p = parse_ok("{\"egress\":[]}"); /* defaultAction omitted: deny */
        assert_false(p->default_allow);
        assert_string_equal(egress_policy_mode(p), "deny_all");
        assert_false(egress_policy_allows(p, "example.com"));
        free(p);

        p = parse_ok("{\"defaultAction\":null,\"egress\":null}"); /* null = absent, not {} */
        assert_false(p->default_allow);
        assert_int_equal(p->n, 0);
        free(p);

        p = parse_ok(" {\"defaultAction\":\"allow\"} \n");
        assert_true(egress_policy_allows(p, "example.com"));
        free(p);

        p = parse_ok("{\"defaultAction\":\"deny\"}");
        expect_json(p, "{\"defaultAction\":\"deny\",\"egress\":[]}");
        egress_policy_deny_all(p);
        assert_false(egress_policy_allows(p, "x.y"));
        free(p);
}

static void test_normalize_and_match(void **state)
{
        struct egress_policy *p;

        (void)state;
        p = parse_ok("{\"defaultAction\":\"deny\",\"egress\":["
                     "{\"action\":\"deny\",\"target\":\"Bad.Example.COM.\"},"
                     "{\"target\":\"*.example.com\",\"action\":\"allow\"},"
                     "{\"action\":\"allow\",\"target\":\"pypi.org\"},"
                     "{\"action\":\"deny\",\"target\":\"PYPI.org\"}]}");
        /* lower case, trailing dot dropped, the dead duplicate dropped */
        expect_json(p, "{\"defaultAction\":\"deny\",\"egress\":["
                       "{\"action\":\"deny\",\"target\":\"bad.example.com\"},"
                       "{\"action\":\"allow\",\"target\":\"*.example.com\"},"
                       "{\"action\":\"allow\",\"target\":\"pypi.org\"}]}");
        assert_true(egress_policy_allows(p, "a.example.com"));
        assert_true(egress_policy_allows(p, "A.B.EXAMPLE.com."));
        assert_false(egress_policy_allows(p, "bad.example.com")); /* first rule wins */
        assert_false(egress_policy_allows(p, "BAD.example.com."));
        assert_true(egress_policy_allows(p, "x.bad.example.com"));
        assert_false(egress_policy_allows(p, "example.com")); /* wildcard: subdomains only */
        assert_false(egress_policy_allows(p, "notexample.com"));
        assert_false(egress_policy_allows(p, "example.com.evil.org"));
        assert_true(egress_policy_allows(p, "pypi.org"));
        assert_true(egress_policy_allows(p, "PyPI.org."));
        assert_false(egress_policy_allows(p, "files.pypi.org"));
        assert_false(egress_policy_allows(p, "127.0.0.1"));
        assert_false(egress_policy_allows(p, ""));
        assert_false(egress_policy_allows(p, NULL));
        assert_false(egress_policy_allows(p, "a..example.com"));
        free(p);

        /* allow by default, deny-list */
        p = parse_ok("{\"defaultAction\":\"allow\",\"egress\":[{\"action\":\"deny\","
                     "\"target\":\"*.evil.org\"}]}");
        assert_false(egress_policy_allows(p, "www.evil.org"));
        assert_true(egress_policy_allows(p, "evil.org"));
        assert_true(egress_policy_allows(p, "good.org"));
        free(p);
}

static void test_rejected(void **state)
{
        char big[300], json[512];

        (void)state;
        expect_rejected("", "empty");
        expect_rejected("null", "object");
        expect_rejected("[]", "object");
        expect_rejected("\"x\"", "object");
        expect_rejected("{", "JSON");
        expect_rejected("{} {}", NULL);
        expect_rejected("{\"defaultAction\":\"maybe\"}", "defaultAction");
        expect_rejected("{\"defaultAction\":true}", "defaultAction");
        expect_rejected("{\"defaultAction\":\"ALLOW\"}", "defaultAction");
        expect_rejected("{\"ingress\":[]}", "unknown member");
        expect_rejected("{\"egress\":{}}", "array");
        expect_rejected("{\"egress\":[1]}", "object");
        expect_rejected("{\"egress\":[{\"action\":\"allow\"}]}", "target");
        expect_rejected("{\"egress\":[{\"target\":\"a.com\"}]}", "action");
        expect_rejected("{\"egress\":[{\"action\":\"permit\",\"target\":\"a.com\"}]}", "action");
        expect_rejected("{\"egress\":[{\"action\":\"allow\",\"target\":\"a.com\",\"port\":1}]}",
                        "unknown member");
        expect_rejected("{\"egress\":[{\"action\":\"allow\",\"target\":5}]}", "string");
        expect_rejected("{\"egress\":[{\"action\":\"allow\",\"target\":\"a\\u0000b.com\"}]}",
                        "string");
        expect_rejected("{\"egress\":[{\"action\":\"allow\",\"target\":\"10.0.0.1\"}]}",
                        "IP/CIDR targets are not supported");
        expect_rejected("{\"egress\":[{\"action\":\"allow\",\"target\":\"10.0.0.0/8\"}]}",
                        "IP/CIDR targets are not supported");
        expect_rejected("{\"egress\":[{\"action\":\"allow\",\"target\":\"0x7f000001\"}]}",
                        "IP/CIDR targets are not supported");
        expect_rejected("{\"egress\":[{\"action\":\"allow\",\"target\":\"2130706433\"}]}",
                        "IP/CIDR targets are not supported");
        expect_rejected("{\"egress\":[{\"action\":\"allow\",\"target\":\"::1\"}]}",
                        "IP/CIDR targets are not supported");
        expect_rejected("{\"egress\":[{\"action\":\"allow\",\"target\":\"[::1]\"}]}",
                        "IP/CIDR targets are not supported");
        expect_rejected("{\"egress\":[{\"action\":\"allow\",\"target\":\"a.com:443\"}]}",
                        "IP/CIDR targets are not supported");
        expect_rejected("{\"egress\":[{\"action\":\"allow\",\"target\":\"\"}]}", "empty");
        expect_rejected("{\"egress\":[{\"action\":\"allow\",\"target\":\".\"}]}", "empty");
        expect_rejected("{\"egress\":[{\"action\":\"allow\",\"target\":\"*\"}]}", "DNS name");
        expect_rejected("{\"egress\":[{\"action\":\"allow\",\"target\":\"*.\"}]}", "DNS name");
        expect_rejected("{\"egress\":[{\"action\":\"allow\",\"target\":\"*..\"}]}", "empty");
        expect_rejected("{\"egress\":[{\"action\":\"allow\",\"target\":\"a.com..\"}]}",
                        "empty label");
        expect_rejected("{\"egress\":[{\"action\":\"allow\",\"target\":\"a.*.com\"}]}", "DNS name");
        expect_rejected("{\"egress\":[{\"action\":\"allow\",\"target\":\"**.com\"}]}", "DNS name");
        expect_rejected("{\"egress\":[{\"action\":\"allow\",\"target\":\"a..com\"}]}",
                        "empty label");
        expect_rejected("{\"egress\":[{\"action\":\"allow\",\"target\":\"-a.com\"}]}", "'-'");
        expect_rejected("{\"egress\":[{\"action\":\"allow\",\"target\":\"a-.com\"}]}", "'-'");
        expect_rejected("{\"egress\":[{\"action\":\"allow\",\"target\":\"a b.com\"}]}", "DNS name");
        expect_rejected("{\"egress\":[{\"action\":\"allow\",\"target\":\"\xc3\xa9.com\"}]}",
                        "DNS name");
        expect_rejected("{\"egress\":[[[[[[[]]]]]]]}", "deep");

        memset(big, 'a', 64);
        big[64] = '\0';
        snprintf(json, sizeof(json), "{\"egress\":[{\"action\":\"allow\",\"target\":\"%s.com\"}]}",
                 big);
        expect_rejected(json, "63");
        for (int i = 0; i < 5; i++)
                memcpy(big + i * 50, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.", 50);
        big[250] = '\0';
        strcat(big, "com"); /* 253: fine */
        snprintf(json, sizeof(json), "{\"egress\":[{\"action\":\"allow\",\"target\":\"%s\"}]}", big);
        free(parse_ok(json));
        snprintf(json, sizeof(json), "{\"egress\":[{\"action\":\"allow\",\"target\":\"%s.\"}]}", big);
        free(parse_ok(json));
        snprintf(json, sizeof(json), "{\"egress\":[{\"action\":\"allow\",\"target\":\"*.%s\"}]}",
                 big);
        expect_rejected(json, "253");
        strcat(big, "x"); /* 254 */
        snprintf(json, sizeof(json), "{\"egress\":[{\"action\":\"allow\",\"target\":\"%s\"}]}", big);
        expect_rejected(json, "253");
}

static char *many_rules(int n, const char *pre, const char *post)
{
        size_t cap = (size_t)n * 64 + 64;
        char *s = malloc(cap), *q = s;

        assert_non_null(s);
        q += sprintf(q, "%s", pre);
        for (int i = 0; i < n; i++)
                q += sprintf(q, "%s{\"action\":\"allow\",\"target\":\"h%d.example.com\"}",
                             i ? "," : "", i);
        sprintf(q, "%s", post);
        return s;
}

static void test_limits(void **state)
{
        char *s;
        struct egress_policy *p;
        char err[256];

        (void)state;
        s = many_rules(EGRESS_RULES_MAX, "{\"egress\":[", "]}");
        p = parse_ok(s);
        assert_int_equal(p->n, EGRESS_RULES_MAX);
        free(s);
        s = many_rules(EGRESS_RULES_MAX + 1, "{\"egress\":[", "]}");
        expect_rejected(s, "too many");
        free(s);
        /* larger than EGRESS_JSON_MAX */
        s = malloc(EGRESS_JSON_MAX + 16);
        assert_non_null(s);
        memset(s, ' ', EGRESS_JSON_MAX + 8);
        s[0] = '{';
        s[EGRESS_JSON_MAX + 8] = '}';
        s[EGRESS_JSON_MAX + 9] = '\0';
        expect_rejected(s, "too large");
        assert_int_equal(egress_policy_parse("{}\0", 3, p, err, sizeof(err)), -EINVAL);
        free(s);
        free(p);
}

static void test_patch_merge(void **state)
{
        struct egress_policy *p = parse_ok(
                "{\"egress\":[{\"action\":\"allow\",\"target\":\"a.com\"},"
                "{\"action\":\"allow\",\"target\":\"b.com\"}]}");
        struct egress_rule *in = malloc(sizeof(*in) * EGRESS_RULES_MAX);
        const char *body = "[{\"action\":\"deny\",\"target\":\"B.com\"},"
                           "{\"action\":\"allow\",\"target\":\"c.com\"},"
                           "{\"action\":\"allow\",\"target\":\"b.com\"}]";
        char err[256] = "";
        size_t n = 0;

        (void)state;
        assert_int_equal(egress_rules_parse(body, strlen(body), in, &n, err, sizeof(err)), 0);
        assert_int_equal(n, 3);
        assert_int_equal(egress_policy_merge(p, in, n, err, sizeof(err)), 0);
        expect_json(p, "{\"defaultAction\":\"deny\",\"egress\":["
                       "{\"action\":\"deny\",\"target\":\"b.com\"},"
                       "{\"action\":\"allow\",\"target\":\"c.com\"},"
                       "{\"action\":\"allow\",\"target\":\"a.com\"}]}");
        assert_false(egress_policy_allows(p, "b.com"));

        assert_int_equal(egress_rules_parse("[]", 2, in, &n, err, sizeof(err)), -EINVAL);
        assert_int_equal(egress_rules_parse("{}", 2, in, &n, err, sizeof(err)), -EINVAL);
        assert_int_equal(egress_rules_parse("[{\"action\":\"allow\"}]", 20, in, &n, err, sizeof(err)),
                         -EINVAL);
        body = "[{\"action\":\"allow\",\"target\":\"1.2.3.4\"}]";
        assert_int_equal(egress_rules_parse(body, strlen(body), in, &n, err, sizeof(err)), -EINVAL);
        assert_non_null(strstr(err, "IP/CIDR"));

        /* a merge past the cap fails and changes nothing */
        char *many = many_rules(EGRESS_RULES_MAX, "[", "]");
        assert_int_equal(egress_rules_parse(many, strlen(many), in, &n, err, sizeof(err)), 0);
        assert_int_equal(egress_policy_merge(p, in, n, err, sizeof(err)), -EINVAL);
        assert_int_equal(p->n, 3);
        free(many);
        free(in);
        free(p);
}

static void test_delete(void **state)
{
        struct egress_policy *p = parse_ok(
                "{\"egress\":[{\"action\":\"allow\",\"target\":\"a.com\"},"
                "{\"action\":\"allow\",\"target\":\"*.b.com\"},"
                "{\"action\":\"deny\",\"target\":\"c.com\"}]}");
        char(*t)[EGRESS_TARGET_MAX + 1] = malloc(sizeof(*t) * EGRESS_RULES_MAX);
        const char *body = "[\"*.B.com.\", \"nothere.org\", \"a.com\"]";
        char err[256] = "";
        size_t n = 0;

        (void)state;
        assert_int_equal(egress_targets_parse(body, strlen(body), t, &n, err, sizeof(err)), 0);
        assert_int_equal(n, 3);
        assert_int_equal(egress_policy_remove(p, t, n), 2);
        expect_json(p, "{\"defaultAction\":\"deny\",\"egress\":["
                       "{\"action\":\"deny\",\"target\":\"c.com\"}]}");
        assert_int_equal(egress_policy_remove(p, t, n), 0); /* idempotent */

        assert_int_equal(egress_targets_parse("[]", 2, t, &n, err, sizeof(err)), -EINVAL);
        assert_int_equal(egress_targets_parse("[1]", 3, t, &n, err, sizeof(err)), -EINVAL);
        assert_int_equal(egress_targets_parse("[\"10.0.0.0/8\"]", 14, t, &n, err, sizeof(err)),
                         -EINVAL);
        assert_int_equal(egress_targets_parse("\"a.com\"", 7, t, &n, err, sizeof(err)), -EINVAL);
        free(t);
        free(p);
}

static void test_roundtrip(void **state)
{
        struct egress_policy *p = parse_ok(
                "{\"defaultAction\":\"allow\",\"egress\":[{\"action\":\"deny\",\"target\":"
                "\"*.Tracker.io\"},{\"action\":\"allow\",\"target\":\"x_y.internal\"}]}");
        struct egress_policy *q;
        char *s = NULL, *s2 = NULL;

        (void)state;
        assert_int_equal(egress_policy_to_json(p, &s), 0);
        q = parse_ok(s);
        assert_int_equal(egress_policy_to_json(q, &s2), 0);
        assert_string_equal(s, s2);
        assert_int_equal(q->n, 2);
        free(s);
        free(s2);
        free(q);
        free(p);
}

/* The configuration: EGRESS_DEFAULT and EGRESS_POLICY_<MODE>. */
static const char *cfg_default, *cfg_exclusive, *cfg_pools;

static const char *lookup(const char *name)
{
        if (!strcmp(name, "EGRESS_POOL_POLICIES"))
                return cfg_pools;
        if (!strcmp(name, "EGRESS_DEFAULT"))
                return cfg_default;
        if (!strcmp(name, "EGRESS_POLICY_EXCLUSIVE"))
                return cfg_exclusive;
        if (!strcmp(name, "SANDBOX_AGENT"))
                return ""; /* no agent binary needed here */
        return NULL;
}

static void test_config(void **state)
{
        struct broker_config *cfg = calloc(1, sizeof(*cfg));
        char err[512] = "", *s = NULL;

        (void)state;
        assert_non_null(cfg);
        cfg_default = NULL;
        cfg_exclusive = NULL;
        assert_int_equal(config_load_from(cfg, lookup, err, sizeof(err)), 0);
        assert_int_equal(egress_config_json(cfg, "user_shared", &s), 0);
        assert_string_equal(s, "{\"defaultAction\":\"deny\",\"egress\":[]}"); /* "" = deny all */
        free(s);

        cfg_default = "{\"defaultAction\":\"allow\"}";
        cfg_exclusive = "{\"egress\":[{\"action\":\"allow\",\"target\":\"PyPI.org\"}]}";
        assert_int_equal(config_load_from(cfg, lookup, err, sizeof(err)), 0);
        assert_int_equal(egress_config_json(cfg, "exclusive", &s), 0);
        assert_string_equal(s, "{\"defaultAction\":\"deny\",\"egress\":[{\"action\":\"allow\","
                               "\"target\":\"pypi.org\"}]}");
        free(s);
        assert_int_equal(egress_config_json(cfg, "multi_user_shared", &s), 0);
        assert_string_equal(s, "{\"defaultAction\":\"allow\",\"egress\":[]}");
        free(s);
        assert_int_equal(egress_config_json(cfg, NULL, &s), 0);
        assert_string_equal(s, "{\"defaultAction\":\"allow\",\"egress\":[]}");
        free(s);

        cfg_default = "{\"egress\":[{\"action\":\"allow\",\"target\":\"10.0.0.0/8\"}]}";
        assert_int_equal(config_load_from(cfg, lookup, err, sizeof(err)), -EINVAL);
        assert_non_null(strstr(err, "EGRESS_DEFAULT"));
        assert_non_null(strstr(err, "IP/CIDR"));
        cfg_default = NULL;
        cfg_exclusive = "{\"defaultAction\":\"maybe\"}";
        assert_int_equal(config_load_from(cfg, lookup, err, sizeof(err)), -EINVAL);
        assert_non_null(strstr(err, "EGRESS_POLICY_EXCLUSIVE"));
        free(cfg);
}

/* EGRESS_POOL_POLICIES: a map poolId -> NetworkPolicy, checked at start and
 * handed to sandbox_claim.lua as poolId -> normalized text. */
static void test_config_pools(void **state)
{
        struct broker_config *cfg = calloc(1, sizeof(*cfg));
        char err[512] = "", *pol[EGRESS_CONFIG_POLICIES];
        struct json_object *o, *v;

        (void)state;
        assert_non_null(cfg);
        cfg_default = NULL;
        cfg_exclusive = NULL;
        cfg_pools = "{\"build\":{\"egress\":[{\"action\":\"allow\",\"target\":\"PyPI.org.\"}]},"
                    "\"acme/web\":{}}";
        assert_int_equal(config_load_from(cfg, lookup, err, sizeof(err)), 0);
        assert_int_equal(egress_config_policies(cfg, pol), 0);
        assert_string_equal(pol[3], ""); /* the mode's stays unset */
        o = json_tokener_parse(pol[4]);
        assert_non_null(o);
        assert_true(json_object_object_get_ex(o, "build", &v));
        assert_string_equal(json_object_get_string(v),
                            "{\"defaultAction\":\"deny\",\"egress\":"
                            "[{\"action\":\"allow\",\"target\":\"pypi.org\"}]}");
        assert_true(json_object_object_get_ex(o, "acme/web", &v));
        assert_string_equal(json_object_get_string(v),
                            "{\"defaultAction\":\"allow\",\"egress\":[]}");
        assert_int_equal(json_object_object_length(o), 2);
        json_object_put(o);
        for (int i = 0; i < EGRESS_CONFIG_POLICIES; i++)
                free(pol[i]);

        /* a mode under runsc has egress as any other (its agent dials) */
        strcpy(cfg->sandbox_runtime_mode[2], "runsc");
        assert_int_equal(egress_config_policies(cfg, pol), 0);
        assert_string_equal(pol[3], "");
        assert_non_null(strstr(pol[4], "pypi.org"));
        for (int i = 0; i < EGRESS_CONFIG_POLICIES; i++)
                free(pol[i]);
        cfg->sandbox_runtime_mode[2][0] = '\0';

        /* unset: the script gets '' */
        cfg_pools = NULL;
        assert_int_equal(config_load_from(cfg, lookup, err, sizeof(err)), 0);
        assert_int_equal(egress_config_policies(cfg, pol), 0);
        assert_string_equal(pol[4], "");
        for (int i = 0; i < EGRESS_CONFIG_POLICIES; i++)
                free(pol[i]);

        /* each mistake stops the broker, naming the setting and the pool */
        static const struct {
                const char *v, *want;
        } bad[] = {
                { "[]", "must be a JSON object" },
                { "{\"build\":{\"egress\":[{\"action\":\"allow\",\"target\":\"10.0.0.1\"}]}}",
                  "\"build\": egress[0]: IP/CIDR" },
                { "{\"build\":\"allow\"}", "\"build\": the policy must be a NetworkPolicy" },
                { "{\"a b\":{}}", "not a poolId" },
                { "{\"\":{}}", "not a poolId" },
                { "{\"a/b/c\":{}}", "not a poolId" },
                { "{\"build\":{\"defaultAction\":\"maybe\"}}", "\"build\": defaultAction" },
                { "{\"build\":{}", "not valid JSON" },
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                cfg_pools = bad[i].v;
                err[0] = '\0';
                assert_int_equal(config_load_from(cfg, lookup, err, sizeof(err)), -EINVAL);
                assert_non_null(strstr(err, "EGRESS_POOL_POLICIES"));
                if (!strstr(err, bad[i].want))
                        fail_msg("%s: got \"%s\", want \"%s\"", bad[i].v, err, bad[i].want);
        }

        /* at most EGRESS_POOL_POLICIES_MAX pools */
        size_t n = 0;
        char *big = malloc(sizeof(cfg->egress_pool_policies));
        assert_non_null(big);
        n += (size_t)sprintf(big + n, "{");
        for (int i = 0; i <= EGRESS_POOL_POLICIES_MAX; i++)
                n += (size_t)sprintf(big + n, "%s\"p%d\":{}", i ? "," : "", i);
        sprintf(big + n, "}");
        cfg_pools = big;
        assert_int_equal(config_load_from(cfg, lookup, err, sizeof(err)), -EINVAL);
        assert_non_null(strstr(err, "at most 64 pools"));
        free(big);
        cfg_pools = NULL;
        free(cfg);
}

/* networkPolicy of a create body: absent/null = EGRESS_DEFAULT, {} = allow all. */
static void test_for_create(void **state)
{
        struct broker_config *cfg = calloc(1, sizeof(*cfg));
        struct json_object *body;
        char err[256] = "", *s = NULL;

        (void)state;
        assert_non_null(cfg);
        strcpy(cfg->egress_default, "{\"egress\":[{\"action\":\"allow\",\"target\":\"a.com\"}]}");
        body = json_tokener_parse("{\"image\":{}}");
        assert_int_equal(egress_policy_for_create(cfg, body, &s, err, sizeof(err)), 0);
        assert_string_equal(s, "{\"defaultAction\":\"deny\",\"egress\":[{\"action\":\"allow\","
                               "\"target\":\"a.com\"}]}");
        free(s);
        json_object_put(body);
        body = json_tokener_parse("{\"networkPolicy\":null}");
        assert_int_equal(egress_policy_for_create(cfg, body, &s, err, sizeof(err)), 0);
        assert_non_null(strstr(s, "a.com"));
        free(s);
        json_object_put(body);
        body = json_tokener_parse("{\"networkPolicy\":{}}");
        assert_int_equal(egress_policy_for_create(cfg, body, &s, err, sizeof(err)), 0);
        assert_string_equal(s, "{\"defaultAction\":\"allow\",\"egress\":[]}");
        free(s);
        json_object_put(body);
        body = json_tokener_parse("{\"networkPolicy\":[]}");
        assert_int_equal(egress_policy_for_create(cfg, body, &s, err, sizeof(err)), -EINVAL);
        assert_null(s);
        assert_non_null(strstr(err, "networkPolicy"));
        json_object_put(body);
        body = json_tokener_parse("{\"networkPolicy\":{\"egress\":[{\"action\":\"allow\","
                                  "\"target\":\"::1\"}]}}");
        assert_int_equal(egress_policy_for_create(cfg, body, &s, err, sizeof(err)), -EINVAL);
        assert_non_null(strstr(err, "networkPolicy: egress[0]: IP/CIDR targets are not supported"));
        json_object_put(body);
        free(cfg);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_defaults),     cmocka_unit_test(test_normalize_and_match),
                cmocka_unit_test(test_rejected),     cmocka_unit_test(test_limits),
                cmocka_unit_test(test_patch_merge),  cmocka_unit_test(test_delete),
                cmocka_unit_test(test_roundtrip),    cmocka_unit_test(test_config),
                cmocka_unit_test(test_config_pools), cmocka_unit_test(test_for_create),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
