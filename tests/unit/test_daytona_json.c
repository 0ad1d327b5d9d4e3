/* Unit tests for the pure parts of the Daytona provider: lib/providers/daytona/daytona_json.c
 * (create/exec bodies, Sandbox and list parsing, state mapping, error
 * messages), lib/providers/daytona/daytona_exec.c (the command wrapper and its output),
 * daytona_api_retry_after_ms, and the DAYTONA_* settings of lib/core/config.c. */
#include <errno.h>
#include <json-c/json.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/config.h"
#include "providers/daytona/daytona_api.h"
#include "providers/daytona/daytona_exec.h"
#include "providers/daytona/daytona_json.h"

static const struct sandbox_spec spec = {
        .sandbox_id = "abc",
        .key_prefix = "sb:",
        .image = "snap-1",
        .env = (const char *const[]){ "A=1", "B=two=three", NULL },
        .network = "none",
};

static struct json_object *obj(struct json_object *o, const char *key)
{
        struct json_object *v = NULL;

        if (!json_object_object_get_ex(o, key, &v))
                fail_msg("no %s", key);
        return v;
}

static void test_create_body(void **state)
{
        struct daytona_create_opts o = { .user = "root", .target = "eu", .auto_stop_min = 0,
                                         .auto_delete_min = 10 };
        char *body = NULL;
        struct json_object *j;

        (void)state;
        assert_int_equal(daytona_json_create_body(&spec, &o, &body), 0);
        j = json_tokener_parse(body);
        assert_non_null(j);
        assert_string_equal(json_object_get_string(obj(j, "name")), "sb-abc");
        assert_string_equal(json_object_get_string(obj(j, "snapshot")), "snap-1");
        assert_string_equal(json_object_get_string(obj(j, "user")), "root");
        assert_string_equal(json_object_get_string(obj(j, "target")), "eu");
        assert_string_equal(json_object_get_string(obj(obj(j, "env"), "B")), "two=three");
        assert_string_equal(json_object_get_string(obj(obj(j, "labels"), PROVIDER_LABEL_MANAGED)), "1");
        assert_string_equal(json_object_get_string(obj(obj(j, "labels"), PROVIDER_LABEL_SANDBOX)), "abc");
        assert_string_equal(json_object_get_string(obj(obj(j, "labels"), PROVIDER_LABEL_PREFIX)), "sb:");
        assert_true(json_object_get_boolean(obj(j, "networkBlockAll")));
        assert_int_equal(json_object_get_int(obj(j, "autoStopInterval")), 0);
        assert_int_equal(json_object_get_int(obj(j, "autoDeleteInterval")), 10);
        json_object_put(j);
        free(body);

        struct sandbox_spec bad = spec;
        bad.image = "";
        assert_int_equal(daytona_json_create_body(&bad, &o, &body), -EINVAL);
        assert_null(body);
        bad = spec;
        bad.env = (const char *const[]){ "NOEQUALS", NULL };
        assert_int_equal(daytona_json_create_body(&bad, &o, &body), -EINVAL);
        bad = spec;
        bad.network = "bridge";
        o.target = NULL;
        assert_int_equal(daytona_json_create_body(&bad, &o, &body), 0);
        j = json_tokener_parse(body);
        assert_false(json_object_get_boolean(obj(j, "networkBlockAll")));
        assert_false(json_object_object_get_ex(j, "target", NULL));
        json_object_put(j);
        free(body);
}

static void test_parse_sandbox(void **state)
{
        struct daytona_sandbox s;

        (void)state;
        assert_int_equal(daytona_json_parse_sandbox(
                "{\"id\":\"d-1\",\"state\":\"error\",\"errorReason\":\"no disk\","
                "\"toolboxProxyUrl\":\"https://proxy/toolbox\",\"labels\":{\""
                PROVIDER_LABEL_MANAGED "\":\"1\",\"" PROVIDER_LABEL_SANDBOX "\":\"abc\",\""
                PROVIDER_LABEL_PREFIX "\":\"sb:\"}}", &s), 0);
        assert_string_equal(s.id, "d-1");
        assert_string_equal(s.state, "error");
        assert_string_equal(s.error_reason, "no disk");
        assert_string_equal(s.toolbox_url, "https://proxy/toolbox");
        assert_true(s.managed);
        assert_string_equal(s.sandbox_id, "abc");
        assert_string_equal(s.prefix, "sb:");
        assert_true(daytona_json_state_failed(s.state));
        /* errorReason null, no labels */
        assert_int_equal(daytona_json_parse_sandbox("{\"id\":\"x\",\"errorReason\":null}", &s), 0);
        assert_string_equal(s.error_reason, "");
        assert_false(s.managed);
        /* malformed */
        assert_int_equal(daytona_json_parse_sandbox("{\"id\": \"broken\", \"state\": ", &s), -EPROTO);
        assert_int_equal(daytona_json_parse_sandbox("{\"state\":\"started\"}", &s), -EPROTO);
        assert_int_equal(daytona_json_parse_sandbox("[1]", &s), -EPROTO);
        assert_int_equal(daytona_json_parse_sandbox(NULL, &s), -EPROTO);
        assert_int_equal(daytona_json_parse_sandbox("{\"id\":7}", &s), -EPROTO);
}

static void test_states(void **state)
{
        (void)state;
        assert_int_equal(daytona_json_state("started"), SANDBOX_RUN_RUNNING);
        assert_int_equal(daytona_json_state("stopped"), SANDBOX_RUN_EXITED);
        assert_int_equal(daytona_json_state("archived"), SANDBOX_RUN_EXITED);
        assert_int_equal(daytona_json_state("paused"), SANDBOX_RUN_PAUSED);
        assert_int_equal(daytona_json_state("destroyed"), SANDBOX_RUN_MISSING);
        assert_int_equal(daytona_json_state("creating"), SANDBOX_RUN_CREATED);
        assert_int_equal(daytona_json_state("pulling_snapshot"), SANDBOX_RUN_CREATED);
        assert_int_equal(daytona_json_state("something-new"), SANDBOX_RUN_CREATED);
        assert_int_equal(daytona_json_state(NULL), SANDBOX_RUN_CREATED);
        assert_true(daytona_json_state_failed("build_failed"));
        assert_false(daytona_json_state_failed("started"));
}

struct seen {
        int n;
        char last[320];
};

static void collect(void *ud, const struct sandbox_info *info)
{
        struct seen *s = ud;

        s->n++;
        snprintf(s->last, sizeof(s->last), "%s/%s/%s/%d", info->ref, info->sandbox_id, info->prefix,
                 (int)info->state);
}

static void test_parse_list(void **state)
{
        struct seen s = { 0 };
        char cursor[32];

        (void)state;
        assert_int_equal(daytona_json_parse_list(
                "{\"items\":[{\"id\":\"a\",\"state\":\"started\",\"labels\":{\"" PROVIDER_LABEL_MANAGED
                "\":\"1\",\"" PROVIDER_LABEL_SANDBOX "\":\"s1\",\"" PROVIDER_LABEL_PREFIX "\":\"p:\"}},"
                "{\"id\":\"b\",\"labels\":{}}],\"nextCursor\":\"200\"}", collect, &s, cursor,
                sizeof(cursor)), 0);
        assert_int_equal(s.n, 1);
        assert_string_equal(s.last, "a/s1/p:/2");
        assert_string_equal(cursor, "200");
        assert_int_equal(daytona_json_parse_list("{\"items\":[],\"nextCursor\":null}", collect, &s,
                                                 cursor, sizeof(cursor)), 0);
        assert_string_equal(cursor, "");
        assert_int_equal(daytona_json_parse_list("{\"items\":{}}", collect, &s, cursor, sizeof(cursor)),
                         -EPROTO);
        assert_int_equal(daytona_json_parse_list("{\"items\":[{\"noid\":1}]}", collect, &s, cursor,
                                                 sizeof(cursor)), -EPROTO);
        assert_int_equal(daytona_json_parse_list("not json", collect, &s, cursor, sizeof(cursor)),
                         -EPROTO);
}

static void test_exec_body_and_answer(void **state)
{
        const char *env[] = { "K=v w", NULL };
        char *body = NULL, *res = NULL;
        struct json_object *j;
        size_t len;
        int code;

        (void)state;
        assert_int_equal(daytona_json_exec_body("echo hi", env, "/workspace", 12, &body), 0);
        j = json_tokener_parse(body);
        assert_string_equal(json_object_get_string(obj(j, "command")), "echo hi");
        assert_string_equal(json_object_get_string(obj(j, "cwd")), "/workspace");
        assert_string_equal(json_object_get_string(obj(obj(j, "envs"), "K")), "v w");
        assert_int_equal(json_object_get_int(obj(j, "timeout")), 12);
        json_object_put(j);
        free(body);
        assert_int_equal(daytona_json_exec_body("x", NULL, NULL, 1, &body), 0);
        assert_string_equal(body, "{\"command\":\"x\",\"timeout\":1}");
        free(body);

        assert_int_equal(daytona_json_parse_exec("{\"exitCode\":3,\"result\":\"a\\nb\"}", &code, &res,
                                                 &len), 0);
        assert_int_equal(code, 3);
        assert_int_equal(len, 3);
        assert_string_equal(res, "a\nb");
        free(res);
        assert_int_equal(daytona_json_parse_exec("{\"result\":\"\"}", &code, &res, &len), 0);
        assert_int_equal(code, -1);
        free(res);
        assert_int_equal(daytona_json_parse_exec("{\"exitCode\":0}", &code, &res, &len), -EPROTO);
        assert_null(res);
        assert_int_equal(daytona_json_parse_exec("{", &code, &res, &len), -EPROTO);
}

static void test_error_message(void **state)
{
        char err[PROVIDER_ERR_MAX];

        (void)state;
        daytona_json_error_message("create", 401, "{\"statusCode\":401,\"message\":\"Unauthorized\"}", err);
        assert_string_equal(err, "daytona: create: HTTP 401: Unauthorized");
        daytona_json_error_message("create", 400, "{\"message\":[\"snapshot must be a string\"]}", err);
        assert_string_equal(err, "daytona: create: HTTP 400: snapshot must be a string");
        daytona_json_error_message("exec", 500, "{\"error\":\"boom\"}", err);
        assert_string_equal(err, "daytona: exec: HTTP 500: boom");
        daytona_json_error_message("get", 502, "<html>bad gateway</html>", err);
        assert_string_equal(err, "daytona: get: HTTP 502: <html>bad gateway</html>");
        daytona_json_error_message("get", 503, NULL, err);
        assert_string_equal(err, "daytona: get: HTTP 503");
        daytona_json_error_message("get", 503, "x", NULL);
}

static void test_exec_command_quotes(void **state)
{
        const char *argv[] = { "printf", "%s", "it's", NULL };
        struct daytona_exec_wrap w = { .nonce = "0123abcd", .timeout_ms = 1500, .max_output = 100 };
        char *cmd = NULL;

        (void)state;
        assert_int_equal(daytona_exec_command(argv, &w, &cmd), 0);
        assert_non_null(strstr(cmd, "'sh' '-c' '"));
        assert_non_null(strstr(cmd, " 'sh' '0123abcd' '100' '' '1.500' '' 'printf' '%s' 'it'\\''s'"));
        free(cmd);
        w.stdin_path = "/tmp/.sb-stdin-x";
        w.run_as = "sbu1";
        assert_int_equal(daytona_exec_command(argv, &w, &cmd), 0);
        assert_non_null(strstr(cmd, "'/tmp/.sb-stdin-x' '1.500' 'sbu1' 'printf'"));
        free(cmd);
        assert_int_equal(daytona_exec_command((const char *const[]){ NULL }, &w, &cmd), -EINVAL);
        assert_null(cmd);
        w.timeout_ms = 0;
        assert_int_equal(daytona_exec_command(argv, &w, &cmd), -EINVAL);
}

static void test_exec_decode(void **state)
{
        struct exec_result r;
        /* "out\n" = b3V0Cg==, "err" = ZXJy; 76-column wrapping tolerated */
        const char ok[] = "noise:n1: 3 4 3\nb3V0\nCg==\n:n1:\nZXJy\n";
        const char trunc[] = ":n1: 0 500 0\nYWFh\n:n1:\n";
        const char empty[] = ":n1: 137 0 0\n\n:n1:\n";

        (void)state;
        assert_int_equal(daytona_exec_decode(ok, strlen(ok), "n1", 100, &r), 0);
        assert_int_equal(r.exit_code, 3);
        assert_string_equal(r.out, "out\n");
        assert_int_equal(r.out_len, 4);
        assert_string_equal(r.err, "err");
        assert_false(r.out_truncated || r.err_truncated);
        exec_result_free(&r);
        assert_int_equal(daytona_exec_decode(trunc, strlen(trunc), "n1", 3, &r), 0);
        assert_string_equal(r.out, "aaa");
        assert_true(r.out_truncated);
        assert_false(r.err_truncated);
        exec_result_free(&r);
        assert_int_equal(daytona_exec_decode(empty, strlen(empty), "n1", 3, &r), 0);
        assert_int_equal(r.exit_code, 137);
        assert_int_equal(r.out_len + r.err_len, 0);
        exec_result_free(&r);
        /* a forged or missing header, bad base64, a stream over the cap */
        assert_int_equal(daytona_exec_decode(ok, strlen(ok), "n2", 100, &r), -EPROTO);
        assert_int_equal(r.exit_code, -1);
        assert_int_equal(daytona_exec_decode("sh: not found", 13, "n1", 100, &r), -EPROTO);
        assert_int_equal(daytona_exec_decode(":n1: 0 1 0\n***\n:n1:\n", 20, "n1", 100, &r), -EPROTO);
        assert_int_equal(daytona_exec_decode(":n1: 0 4 0\nb3V0Cg==\n", 20, "n1", 100, &r), -EPROTO);
        assert_int_equal(daytona_exec_decode(ok, strlen(ok), "n1", 2, &r), -EPROTO);
        assert_null(r.out);
        assert_int_equal(daytona_exec_decode(":n1: x\n:n1:\n", 12, "n1", 100, &r), -EPROTO);
}

static void test_retry_after(void **state)
{
        (void)state;
        assert_int_equal(daytona_api_retry_after_ms(" 2\r\n", 5000), 2000);
        assert_int_equal(daytona_api_retry_after_ms("0", 5000), 0);
        assert_int_equal(daytona_api_retry_after_ms("120", 5000), 5000);
        assert_int_equal(daytona_api_retry_after_ms("Wed, 21 Oct 2015 07:28:00 GMT", 5000), 1000);
        assert_int_equal(daytona_api_retry_after_ms("-1", 5000), -1);
        assert_int_equal(daytona_api_retry_after_ms("2x", 5000), -1);
        assert_int_equal(daytona_api_retry_after_ms("", 5000), -1);
        assert_int_equal(daytona_api_retry_after_ms(NULL, 5000), -1);
}

static const char *const *cfg_env;

static const char *lookup(const char *name)
{
        for (const char *const *e = cfg_env; e && *e; e += 2)
                if (strcmp(e[0], name) == 0)
                        return e[1];
        return NULL;
}

static int load(const char *const *env, struct broker_config *cfg, char *err)
{
        cfg_env = env;
        return config_load_from(cfg, lookup, err, 256);
}

static void test_config(void **state)
{
        struct broker_config cfg;
        char err[256] = "";

        (void)state;
        assert_int_equal(load((const char *const[]){ "SANDBOX_PROVIDER", "daytona",
                                                     "DAYTONA_API_URL", "https://app.daytona.io/api",
                                                     "DAYTONA_API_KEY", "secret-key",
                                                     "DAYTONA_SNAPSHOT", "snap-a",
                                                     "DAYTONA_MULTIUSER_SNAPSHOT", "snap-m", NULL },
                              &cfg, err), 0);
        assert_string_equal(cfg.provider, "daytona");
        assert_string_equal(cfg.sandbox_image, "snap-a");
        assert_string_equal(cfg.sandbox_multiuser_image, "snap-m");
        assert_string_equal(cfg.daytona_user, "root");
        assert_int_equal(cfg.daytona_timeout_ms, 15000);
        assert_int_equal(cfg.daytona_poll_max_ms, 45000);
        assert_int_equal(cfg.daytona_auto_stop_min, 0);

        assert_int_equal(load((const char *const[]){ "SANDBOX_PROVIDER", "daytona",
                                                     "DAYTONA_API_KEY", "secret-key", NULL },
                              &cfg, err), -EINVAL);
        assert_non_null(strstr(err, "DAYTONA_API_URL"));
        assert_int_equal(load((const char *const[]){ "SANDBOX_PROVIDER", "daytona",
                                                     "DAYTONA_API_URL", "http://x", NULL },
                              &cfg, err), -EINVAL);
        assert_non_null(strstr(err, "DAYTONA_API_KEY"));
        assert_int_equal(load((const char *const[]){ "SANDBOX_PROVIDER", "daytona",
                                                     "DAYTONA_API_URL", "http://x",
                                                     "DAYTONA_API_KEY", "secret-key",
                                                     "DAYTONA_POLL_MAX_MS", "600000", NULL },
                              &cfg, err), 0); /* the lock follows the provider's deadline */
        assert_int_equal(load((const char *const[]){ "SANDBOX_PROVIDER", "daytona",
                                                     "DAYTONA_API_URL", "http://x",
                                                     "DAYTONA_API_KEY", "secret-key",
                                                     "DAYTONA_POLL_MAX_MS", "3600001", NULL },
                              &cfg, err), -EINVAL);
        assert_non_null(strstr(err, "DAYTONA_POLL_MAX_MS"));
        assert_null(strstr(err, "secret-key"));
        assert_int_equal(load((const char *const[]){ "SANDBOX_PROVIDER", "nomad", NULL }, &cfg,
                              err), -EINVAL);
        assert_non_null(strstr(err, "daytona"));
        /* docker keeps its images */
        assert_int_equal(load((const char *const[]){ "SANDBOX_PROVIDER", "docker",
                                                     "DAYTONA_SNAPSHOT", "snap-a", NULL }, &cfg, err), 0);
        assert_string_equal(cfg.sandbox_image, "sandbox-broker/base:latest");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_create_body),   cmocka_unit_test(test_parse_sandbox),
                cmocka_unit_test(test_states),        cmocka_unit_test(test_parse_list),
                cmocka_unit_test(test_exec_body_and_answer), cmocka_unit_test(test_error_message),
                cmocka_unit_test(test_exec_command_quotes),  cmocka_unit_test(test_exec_decode),
                cmocka_unit_test(test_retry_after),   cmocka_unit_test(test_config),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
