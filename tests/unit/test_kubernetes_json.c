/* Unit tests for the pure parts of the Kubernetes provider:
 * lib/providers/kubernetes/kubernetes_json.c (label mapping, pod names, the
 * Pod manifest with and without the agent, Pod / PodList / watch event
 * parsing, states, error messages), the agent key and marker of
 * kubernetes_agent.c (in a temp AGENT_DIR), and the KUBERNETES_* settings
 * of lib/core/config.c. */
#include <errno.h>
#include <json-c/json.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <cmocka.h>

#include "core/config.h"
#include "providers/kubernetes/kubernetes_internal.h"
#include "providers/kubernetes/kubernetes_json.h"

#define SID "0123456789abcdef0123456789abcdef"
#define KEY "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"

static const struct sandbox_spec spec = {
        .sandbox_id = SID,
        .key_prefix = "sb:",
        .image = "sandbox-broker/tiny:latest",
        .env = (const char *const[]){ "A=1", "B=two=three", "SANDBOX_AGENT_KEY=mine", NULL },
        .entrypoint = (const char *const[]){ "python3", "-m", "http.server", NULL },
        .workdir = "/workspace",
        .runtime = "gvisor",
        .limits = { .nano_cpus = 250000000, .memory_bytes = 128 << 20, .pids = 256, .disk_mb = 1024 },
};

static struct json_object *obj(struct json_object *o, const char *key)
{
        struct json_object *v = NULL;

        if (!json_object_object_get_ex(o, key, &v))
                fail_msg("no %s", key);
        return v;
}

static const char *str(struct json_object *o, const char *key)
{
        return json_object_get_string(obj(o, key));
}

static struct json_object *idx(struct json_object *a, size_t i)
{
        assert_true(json_object_is_type(a, json_type_array));
        assert_true(json_object_array_length(a) > i);
        return json_object_array_get_idx(a, i);
}

static void test_labels_and_names(void **state)
{
        char buf[96];

        (void)state;
        assert_int_equal(k8s_label_key(PROVIDER_LABEL_MANAGED, buf, sizeof(buf)), 0);
        assert_string_equal(buf, "sandbox-broker.io/managed");
        assert_int_equal(k8s_label_key(PROVIDER_LABEL_SANDBOX, buf, sizeof(buf)), 0);
        assert_string_equal(buf, "sandbox-broker.io/sandbox-id");
        assert_int_equal(k8s_label_key("app", buf, sizeof(buf)), -EINVAL);
        assert_int_equal(k8s_label_key("io.sandbox-broker.", buf, sizeof(buf)), -EINVAL);
        assert_int_equal(k8s_label_key(PROVIDER_LABEL_MANAGED, buf, 10), -ENAMETOOLONG);

        assert_true(k8s_label_value_valid(""));
        assert_true(k8s_label_value_valid(SID));
        assert_true(k8s_label_value_valid("a.b_c-d"));
        assert_false(k8s_label_value_valid("sb:"));
        assert_false(k8s_label_value_valid("-a"));
        assert_false(k8s_label_value_valid("a_"));
        assert_false(k8s_label_value_valid("a b"));
        memset(buf, 'a', 64);
        buf[64] = '\0';
        assert_false(k8s_label_value_valid(buf));
        buf[63] = '\0';
        assert_true(k8s_label_value_valid(buf));

        assert_int_equal(k8s_prefix_hash("sb:", buf, sizeof(buf)), 0);
        assert_int_equal(strlen(buf), 33);
        assert_int_equal(buf[0], 'p');
        assert_true(k8s_label_value_valid(buf));
        char other[40];
        assert_int_equal(k8s_prefix_hash("sb2:", other, sizeof(other)), 0);
        assert_string_not_equal(buf, other);

        assert_int_equal(k8s_pod_name(SID, buf, sizeof(buf)), 0);
        assert_string_equal(buf, "sb-" SID);
        assert_int_equal(k8s_pod_name("Ab_c/../", buf, sizeof(buf)), 0);
        assert_string_equal(buf, "sb-ab-c---x"); /* a DNS label: no '/', no '.', alnum at the end */
        assert_true(k8s_ref_valid(buf));
        assert_int_equal(k8s_pod_name("", buf, sizeof(buf)), -EINVAL);
        assert_int_equal(k8s_pod_name(NULL, buf, sizeof(buf)), -EINVAL);
        memset(buf, 'a', 61);
        buf[61] = '\0';
        char name[K8S_NAME_MAX];
        assert_int_equal(k8s_pod_name(buf, name, sizeof(name)), -ENAMETOOLONG);
        buf[60] = '\0';
        assert_int_equal(k8s_pod_name(buf, name, sizeof(name)), 0);
        assert_int_equal(strlen(name), 63);

        assert_true(k8s_ref_valid("sb-abc"));
        assert_false(k8s_ref_valid("../etc"));
        assert_false(k8s_ref_valid("sb/abc"));
        assert_false(k8s_ref_valid("-sb"));
        assert_false(k8s_ref_valid(""));
        assert_false(k8s_ref_valid("SB"));
}

static void test_manifest_without_agent(void **state)
{
        struct k8s_pod_opts o = { .pull_policy = "Never", .grace_s = 1 };
        struct json_object *j, *md, *ps, *c, *sc, *lim, *req, *env;
        char *body = NULL;
        bool mine = false;

        (void)state;
        assert_int_equal(k8s_json_pod_manifest(&spec, &o, &body), 0);
        j = json_tokener_parse(body);
        assert_non_null(j);
        assert_string_equal(str(j, "kind"), "Pod");
        md = obj(j, "metadata");
        assert_string_equal(str(md, "name"), "sb-" SID);
        assert_string_equal(str(obj(md, "labels"), "sandbox-broker.io/managed"), "1");
        assert_string_equal(str(obj(md, "labels"), "sandbox-broker.io/sandbox-id"), SID);
        assert_string_equal(str(obj(md, "labels"), "sandbox-broker.io/agent"), "0");
        assert_string_equal(str(obj(md, "labels"), "sandbox-broker.io/disk-mb"), "1024");
        assert_true(k8s_label_value_valid(str(obj(md, "labels"), K8S_LABEL_PREFIX_HASH)));
        assert_string_equal(str(obj(md, "annotations"), "sandbox-broker.io/prefix"), "sb:");
        assert_string_equal(str(obj(md, "annotations"), "sandbox-broker.io/sandbox-id"), SID);
        ps = obj(j, "spec");
        assert_string_equal(str(ps, "restartPolicy"), "Never");
        assert_false(json_object_get_boolean(obj(ps, "automountServiceAccountToken")));
        assert_false(json_object_get_boolean(obj(ps, "enableServiceLinks")));
        assert_int_equal(json_object_get_int(obj(ps, "terminationGracePeriodSeconds")), 1);
        assert_string_equal(str(ps, "runtimeClassName"), "gvisor");
        assert_false(json_object_object_get_ex(ps, "initContainers", NULL));
        assert_false(json_object_object_get_ex(ps, "volumes", NULL));
        c = idx(obj(ps, "containers"), 0);
        assert_string_equal(str(c, "name"), "sandbox");
        assert_string_equal(str(c, "image"), "sandbox-broker/tiny:latest");
        assert_string_equal(str(c, "imagePullPolicy"), "Never");
        assert_string_equal(str(c, "workingDir"), "/workspace");
        assert_string_equal(json_object_get_string(idx(obj(c, "command"), 0)), "python3");
        assert_int_equal(json_object_array_length(obj(c, "command")), 3);
        sc = obj(c, "securityContext");
        assert_false(json_object_get_boolean(obj(sc, "allowPrivilegeEscalation")));
        assert_string_equal(json_object_get_string(idx(obj(obj(sc, "capabilities"), "drop"), 0)),
                            "ALL");
        for (size_t i = 0; i < json_object_array_length(obj(obj(sc, "capabilities"), "add")); i++)
                assert_string_not_equal(
                        json_object_get_string(idx(obj(obj(sc, "capabilities"), "add"), i)),
                        "NET_RAW");
        lim = obj(obj(c, "resources"), "limits");
        req = obj(obj(c, "resources"), "requests");
        assert_string_equal(str(lim, "cpu"), "250m");
        assert_string_equal(str(req, "cpu"), "25m");
        assert_string_equal(str(lim, "memory"), "134217728");
        assert_string_equal(str(req, "memory"), "134217728");
        assert_string_equal(str(lim, "ephemeral-storage"), "1024Mi");
        env = obj(c, "env");
        assert_int_equal(json_object_array_length(env), 2); /* the user's SANDBOX_AGENT_KEY is dropped */
        assert_string_equal(str(idx(env, 1), "name"), "B");
        assert_string_equal(str(idx(env, 1), "value"), "two=three");
        for (size_t i = 0; i < json_object_array_length(env); i++)
                mine = mine || strcmp(str(idx(env, i), "name"), K8S_AGENT_ENV) == 0;
        assert_false(mine);
        json_object_put(j);
        free(body);

        /* no entrypoint: a keep-alive */
        struct sandbox_spec s2 = spec;
        s2.entrypoint = NULL;
        s2.runtime = "";
        assert_int_equal(k8s_json_pod_manifest(&s2, &o, &body), 0);
        j = json_tokener_parse(body);
        c = idx(obj(obj(j, "spec"), "containers"), 0);
        assert_string_equal(json_object_get_string(idx(obj(c, "command"), 0)), "sleep");
        assert_false(json_object_object_get_ex(obj(j, "spec"), "runtimeClassName", NULL));
        json_object_put(j);
        free(body);
}

static void test_manifest_with_agent(void **state)
{
        struct k8s_pod_opts o = { .pull_policy = "IfNotPresent",
                                  .agent = true,
                                  .agent_image = "sandbox-broker/agent:latest",
                                  .agent_port = 7070,
                                  .agent_key = KEY,
                                  .grace_s = 1 };
        struct json_object *j, *ps, *c, *init, *cmd, *env, *vm;
        char *body = NULL;
        const char *want[] = { K8S_AGENT_BIN,       "--listen-tcp", "0.0.0.0:7070", "--key-env",
                               "SANDBOX_AGENT_KEY", "--",           "python3",      "-m",
                               "http.server" };

        (void)state;
        assert_int_equal(k8s_json_pod_manifest(&spec, &o, &body), 0);
        j = json_tokener_parse(body);
        ps = obj(j, "spec");
        assert_string_equal(str(obj(obj(j, "metadata"), "labels"), "sandbox-broker.io/agent"), "1");
        init = idx(obj(ps, "initContainers"), 0);
        assert_string_equal(str(init, "image"), "sandbox-broker/agent:latest");
        assert_string_equal(json_object_get_string(idx(obj(init, "command"), 0)), K8S_AGENT_INSTALL);
        assert_string_equal(json_object_get_string(idx(obj(init, "command"), 1)), K8S_AGENT_BIN);
        assert_false(json_object_get_boolean(obj(idx(obj(init, "volumeMounts"), 0), "readOnly")));
        assert_string_equal(str(obj(idx(obj(ps, "volumes"), 0), "emptyDir"), "sizeLimit"), "64Mi");
        c = idx(obj(ps, "containers"), 0);
        cmd = obj(c, "command");
        assert_int_equal(json_object_array_length(cmd), sizeof(want) / sizeof(want[0]));
        for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
                assert_string_equal(json_object_get_string(idx(cmd, i)), want[i]);
        vm = idx(obj(c, "volumeMounts"), 0);
        assert_string_equal(str(vm, "mountPath"), K8S_AGENT_BIN_DIR);
        assert_true(json_object_get_boolean(obj(vm, "readOnly")));
        env = obj(c, "env");
        assert_int_equal(json_object_array_length(env), 3);
        assert_string_equal(str(idx(env, 2), "name"), K8S_AGENT_ENV);
        assert_string_equal(str(idx(env, 2), "value"), KEY); /* ours, not the user's "mine" */
        json_object_put(j);
        free(body);

        /* the pod a parser reads back: the key of the main container */
        struct k8s_pod pod;
        assert_int_equal(k8s_json_parse_pod(body = NULL, 0, &pod), -EPROTO);
        assert_int_equal(k8s_json_pod_manifest(&spec, &o, &body), 0);
        assert_int_equal(k8s_json_parse_pod(body, strlen(body), &pod), 0);
        assert_string_equal(pod.agent_key, KEY);
        assert_true(pod.agent && pod.managed);
        assert_string_equal(pod.sandbox_id, SID);
        assert_string_equal(pod.prefix, "sb:");
        free(body);

        /* refused */
        struct k8s_pod_opts bad = o;
        bad.agent_key = "00";
        assert_int_equal(k8s_json_pod_manifest(&spec, &bad, &body), -EINVAL);
        bad = o;
        bad.agent_key = "00112233445566778899AABBCCDDEEFF00112233445566778899aabbccddeeff";
        assert_int_equal(k8s_json_pod_manifest(&spec, &bad, &body), -EINVAL);
        bad = o;
        bad.agent_image = "";
        assert_int_equal(k8s_json_pod_manifest(&spec, &bad, &body), -EINVAL);
        bad = o;
        bad.pull_policy = "Sometimes";
        assert_int_equal(k8s_json_pod_manifest(&spec, &bad, &body), -EINVAL);
        struct sandbox_spec s2 = spec;
        s2.env = (const char *const[]){ "NOEQUALS", NULL };
        assert_int_equal(k8s_json_pod_manifest(&s2, &o, &body), -EINVAL);
        s2.env = (const char *const[]){ "=x", NULL };
        assert_int_equal(k8s_json_pod_manifest(&s2, &o, &body), -EINVAL);
        s2 = spec;
        s2.image = "";
        assert_int_equal(k8s_json_pod_manifest(&s2, &o, &body), -EINVAL);
        s2 = spec;
        s2.sandbox_id = "";
        assert_int_equal(k8s_json_pod_manifest(&s2, &o, &body), -EINVAL);
        assert_null(body);
}

#define POD(meta, status)                                                                       \
        "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"sb-x\",\"resourceVersion\":\"42\","         \
        "\"labels\":{\"sandbox-broker.io/managed\":\"1\",\"sandbox-broker.io/agent\":\"1\"},"   \
        "\"annotations\":{\"sandbox-broker.io/sandbox-id\":\"x\",\"sandbox-broker.io/"          \
        "prefix\":\"sb:\"}" meta "},\"spec\":{\"containers\":[{\"name\":\"sandbox\",\"env\":[{" \
                                 "\"name\":\"SANDBOX_AGENT_KEY\","                              \
        "\"value\":\"" KEY "\"}]}]},\"status\":" status "}"

static int parse(const char *s, struct k8s_pod *pod)
{
        return k8s_json_parse_pod(s, strlen(s), pod);
}

static void test_parse_pod_states(void **state)
{
        struct k8s_pod pod;
        struct sandbox_info info;

        (void)state;
        assert_int_equal(
                parse(POD("",
                          "{\"phase\":\"Running\",\"podIP\":\"10.244.1.5\",\"containerStatuses\":"
                          "[{\"name\":\"sandbox\",\"state\":{\"running\":{}}}]}"),
                      &pod),
                0);
        assert_string_equal(pod.name, "sb-x");
        assert_string_equal(pod.rv, "42");
        assert_string_equal(pod.ip, "10.244.1.5");
        assert_int_equal(k8s_pod_state(&pod), SANDBOX_RUN_RUNNING);
        assert_false(k8s_pod_stuck(&pod));
        k8s_pod_info(&pod, &info);
        assert_string_equal(info.ref, "sb-x");
        assert_string_equal(info.sandbox_id, "x");
        assert_string_equal(info.prefix, "sb:");
        assert_true(info.agent);
        assert_int_equal(info.exit_code, -1);

        /* OOM killed: EXITED, 137, oom_killed */
        assert_int_equal(
                parse(POD("", "{\"phase\":\"Failed\",\"containerStatuses\":[{\"name\":\"sandbox\","
                              "\"state\":{\"terminated\":{\"exitCode\":137,\"reason\":"
                              "\"OOMKilled\"}}}]}"),
                      &pod),
                0);
        k8s_pod_info(&pod, &info);
        assert_int_equal(info.state, SANDBOX_RUN_EXITED);
        assert_int_equal(info.exit_code, 137);
        assert_true(info.oom_killed);

        /* the main container ended while the phase still says Running */
        assert_int_equal(
                parse(POD("", "{\"phase\":\"Running\",\"containerStatuses\":[{\"name\":\"sidecar\","
                              "\"state\":{\"running\":{}}},{\"name\":\"sandbox\",\"state\":"
                              "{\"terminated\":{\"exitCode\":3,\"reason\":\"Error\"}}}]}"),
                      &pod),
                0);
        assert_int_equal(k8s_pod_state(&pod), SANDBOX_RUN_EXITED);
        assert_int_equal(pod.exit_code, 3);

        /* being deleted */
        assert_int_equal(parse(POD(",\"deletionTimestamp\":\"2026-12-05T00:00:00Z\"",
                                   "{\"phase\":\"Running\"}"),
                               &pod),
                         0);
        assert_true(pod.deleting);
        assert_int_equal(k8s_pod_state(&pod), SANDBOX_RUN_EXITED);

        /* evicted: the pod's reason */
        assert_int_equal(
                parse(POD("", "{\"phase\":\"Failed\",\"reason\":\"Evicted\",\"message\":\"disk\"}"),
                      &pod),
                0);
        assert_string_equal(pod.reason, "Evicted");
        assert_int_equal(k8s_pod_state(&pod), SANDBOX_RUN_EXITED);

        /* pending, stuck on an image it may not pull; on an init container's */
        assert_int_equal(
                parse(POD("", "{\"phase\":\"Pending\",\"containerStatuses\":[{\"name\":\"sandbox\","
                              "\"state\":{\"waiting\":{\"reason\":\"ErrImageNeverPull\","
                              "\"message\":\"no image\"}}}]}"),
                      &pod),
                0);
        assert_int_equal(k8s_pod_state(&pod), SANDBOX_RUN_CREATED);
        assert_true(k8s_pod_stuck(&pod));
        assert_string_equal(pod.message, "no image");
        assert_int_equal(
                parse(POD("", "{\"phase\":\"Pending\",\"initContainerStatuses\":[{\"name\":\"i\","
                              "\"state\":{\"waiting\":{\"reason\":\"ImagePullBackOff\"}}}]}"),
                      &pod),
                0);
        assert_true(k8s_pod_stuck(&pod));
        assert_int_equal(
                parse(POD("", "{\"phase\":\"Pending\",\"containerStatuses\":[{\"name\":\"sandbox\","
                              "\"state\":{\"waiting\":{\"reason\":\"ContainerCreating\"}}}]}"),
                      &pod),
                0);
        assert_false(k8s_pod_stuck(&pod));

        /* what is not a Pod; fields of the wrong type are ignored */
        assert_int_equal(parse("{\"kind\":\"Status\",\"metadata\":{\"name\":\"x\"}}", &pod), -EPROTO);
        assert_int_equal(parse("{\"metadata\":{}}", &pod), -EPROTO);
        assert_int_equal(parse("[]", &pod), -EPROTO);
        assert_int_equal(parse("{\"metadata\":{\"name\":\"a\"}} x", &pod), -EPROTO);
        assert_int_equal(
                parse("{\"metadata\":{\"name\":\"a\"},\"status\":{\"phase\":7,"
                      "\"containerStatuses\":"
                      "[{\"name\":\"sandbox\",\"state\":{\"terminated\":{\"exitCode\":\"x\"}}}]}}",
                      &pod),
                0);
        assert_int_equal(pod.exit_code, -1);
        assert_string_equal(pod.phase, "");
        /* a key that is not 64 hex is no key */
        assert_int_equal(parse("{\"metadata\":{\"name\":\"a\"},\"spec\":{\"containers\":[{\"name\":"
                               "\"sandbox\","
                               "\"env\":[{\"name\":\"SANDBOX_AGENT_KEY\",\"value\":\"zz\"}]}]}}",
                               &pod),
                         0);
        assert_string_equal(pod.agent_key, "");
}

static int seen;

static void count(void *ud, const struct k8s_pod *pod)
{
        (void)ud;
        assert_true(pod->name[0]);
        seen++;
}

static void test_parse_list_and_events(void **state)
{
        const char *list = "{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"77\","
                           "\"continue\":\"abc\"},"
                           "\"items\":[" POD("", "{}") ",{\"metadata\":{}}," POD("", "{}") "]}";
        char cont[16], rv[K8S_RV_MAX], small[2];
        enum k8s_event_type type;
        struct k8s_pod pod;
        int code;

        (void)state;
        seen = 0;
        assert_int_equal(
                k8s_json_parse_list(list, strlen(list), count, NULL, cont, sizeof(cont), rv), 0);
        assert_int_equal(seen, 2); /* the nameless item is skipped */
        assert_string_equal(cont, "abc");
        assert_string_equal(rv, "77");
        assert_int_equal(
                k8s_json_parse_list(list, strlen(list), count, NULL, small, sizeof(small), rv),
                -ENAMETOOLONG);
        assert_int_equal(
                k8s_json_parse_list("{\"items\":{}}", 12, count, NULL, cont, sizeof(cont), rv),
                -EPROTO);

        const char *ev = "{\"type\":\"DELETED\",\"object\":" POD("", "{\"phase\":\"Running\"}") "}";
        assert_int_equal(k8s_json_parse_event(ev, strlen(ev), &type, &pod, &code), 0);
        assert_int_equal(type, K8S_EV_DELETED);
        assert_string_equal(pod.name, "sb-x");
        ev = "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Pod\",\"metadata\":{"
             "\"resourceVersion\":\"99\"}}}";
        assert_int_equal(k8s_json_parse_event(ev, strlen(ev), &type, &pod, &code), 0);
        assert_int_equal(type, K8S_EV_BOOKMARK);
        assert_string_equal(pod.rv, "99");
        ev = "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410,\"reason\":"
             "\"Expired\"}}";
        assert_int_equal(k8s_json_parse_event(ev, strlen(ev), &type, &pod, &code), 0);
        assert_int_equal(type, K8S_EV_ERROR);
        assert_int_equal(code, 410);
        ev = "{\"type\":\"SOMETHING\",\"object\":{}}";
        assert_int_equal(k8s_json_parse_event(ev, strlen(ev), &type, &pod, &code), -EPROTO);
        ev = "{\"type\":\"ADDED\"}";
        assert_int_equal(k8s_json_parse_event(ev, strlen(ev), &type, &pod, &code), -EPROTO);
        assert_int_equal(k8s_json_parse_event("{\"ty", 4, &type, &pod, &code), -EPROTO);
        assert_int_equal(k8s_json_parse_event("", 0, &type, &pod, &code), -EPROTO);
}

static void test_error_message(void **state)
{
        char err[PROVIDER_ERR_MAX];

        (void)state;
        k8s_json_error_message("create", 403,
                               "{\"kind\":\"Status\",\"message\":\"pods is forbidden\"}", err);
        assert_string_equal(err, "kubernetes: create: HTTP 403: pods is forbidden");
        /* the authorizer's 403: the RBAC hint */
        k8s_json_error_message("create", 403,
                               "{\"kind\":\"Status\",\"reason\":\"Forbidden\",\"message\":"
                               "\"pods is forbidden: User \\\"sa\\\" cannot create resource \\\"pods\\\" "
                               "in API group \\\"\\\" in the namespace \\\"x\\\"\"}",
                               err);
        assert_non_null(strstr(err, "HTTP 403: pods is forbidden: User \"sa\" cannot create"));
        assert_non_null(strstr(err, "(check the credentials and the RBAC Role: docs/KUBERNETES.md)"));
        /* admission's 403 (an unknown RuntimeClass): its own reason, no RBAC hint */
        k8s_json_error_message("create", 403,
                               "{\"kind\":\"Status\",\"reason\":\"Forbidden\",\"message\":"
                               "\"pods \\\"sb-1\\\" is forbidden: pod rejected: RuntimeClass "
                               "\\\"gvisor\\\" not found\"}",
                               err);
        assert_string_equal(err, "kubernetes: create: HTTP 403: pods \"sb-1\" is forbidden: pod "
                                 "rejected: RuntimeClass \"gvisor\" not found");
        assert_null(strstr(err, "RBAC"));
        /* a long message is cut, the hint kept whole */
        {
                char body[600];

                snprintf(body, sizeof(body),
                         "{\"message\":\"pods is forbidden: User \\\"system:serviceaccount:%0300d\\\" "
                         "cannot list resource\"}",
                         0);
                k8s_json_error_message("list pods of the namespace", 403, body, err);
                assert_true(strlen(err) < PROVIDER_ERR_MAX);
                assert_non_null(strstr(err, "HTTP 403: pods is forbidden: User"));
                assert_non_null(strstr(err, "(check the credentials and the RBAC Role: docs/KUBERNETES.md)"));
        }
        /* a 401: the credentials; a 403 without a body: both */
        k8s_json_error_message("list", 401, "{\"message\":\"Unauthorized\"}", err);
        assert_string_equal(err, "kubernetes: list: HTTP 401: Unauthorized (check the credentials: "
                                 "docs/KUBERNETES.md)");
        k8s_json_error_message("list", 403, NULL, err);
        assert_string_equal(err, "kubernetes: list: HTTP 403 (check the credentials and the RBAC Role: "
                                 "docs/KUBERNETES.md)");
        k8s_json_error_message("create", 502, "<html>", err);
        assert_string_equal(err, "kubernetes: create: HTTP 502");
        k8s_json_error_message("create", 500, NULL, err);
        assert_string_equal(err, "kubernetes: create: HTTP 500");
}

static void test_agent_key_and_marker(void **state)
{
        char dir[] = "/tmp/k8s-unit-XXXXXX", path[256], line[256], key[K8S_AGENT_KEY_HEX + 1],
             key2[sizeof(key)];
        struct k8s k = { .agent = true, .agent_port = 7070 };
        struct k8s_pod pod = { .name = "sb-x", .ip = "10.244.1.5", .agent_key = KEY };
        struct stat st;
        FILE *f;

        (void)state;
        assert_int_equal(k8s_agent_key(key, sizeof(key)), 0);
        assert_int_equal(k8s_agent_key(key2, sizeof(key2)), 0);
        assert_int_equal(strlen(key), K8S_AGENT_KEY_HEX);
        assert_int_equal(strspn(key, "0123456789abcdef"), K8S_AGENT_KEY_HEX);
        assert_string_not_equal(key, key2);
        assert_int_equal(k8s_agent_key(key, K8S_AGENT_KEY_HEX), -ENAMETOOLONG);

        assert_non_null(mkdtemp(dir));
        snprintf(k.agent_dir, sizeof(k.agent_dir), "%s/agents", dir);
        assert_int_equal(k8s_agent_marker_write(&k, &pod, false, NULL), 0);
        snprintf(path, sizeof(path), "%s/sb-x", k.agent_dir);
        assert_int_equal(lstat(path, &st), 0);
        assert_true(S_ISDIR(st.st_mode));
        assert_int_equal(st.st_mode & 07777, 0700);
        snprintf(path, sizeof(path), "%s/sb-x.tcp", k.agent_dir);
        assert_int_equal(lstat(path, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0600);
        f = fopen(path, "r");
        assert_non_null(f);
        assert_non_null(fgets(line, sizeof(line), f));
        fclose(f);
        assert_string_equal(line, "10.244.1.5 7070 " KEY "\n");
        /* only_missing keeps what is there; a rewrite replaces it */
        strcpy(pod.ip, "10.244.1.6");
        assert_int_equal(k8s_agent_marker_write(&k, &pod, true, NULL), 0);
        f = fopen(path, "r");
        assert_non_null(fgets(line, sizeof(line), f));
        fclose(f);
        assert_string_equal(line, "10.244.1.5 7070 " KEY "\n");
        assert_int_equal(k8s_agent_marker_write(&k, &pod, false, NULL), 0);
        f = fopen(path, "r");
        assert_non_null(fgets(line, sizeof(line), f));
        fclose(f);
        assert_string_equal(line, "10.244.1.6 7070 " KEY "\n");
        /* no IP, no key, a name that is not a pod's: nothing written */
        struct k8s_pod bad = pod;
        bad.ip[0] = '\0';
        assert_int_equal(k8s_agent_marker_write(&k, &bad, false, NULL), -EPROTO);
        bad = pod;
        bad.agent_key[0] = '\0';
        assert_int_equal(k8s_agent_marker_write(&k, &bad, false, NULL), -EPROTO);
        bad = pod;
        strcpy(bad.ip, "10.0.0.1 1 x\n9.9.9.9"); /* one line, an address: nothing smuggled */
        assert_int_equal(k8s_agent_marker_write(&k, &bad, false, NULL), -EPROTO);
        bad = pod;
        strcpy(bad.ip, "fd00::5");
        assert_int_equal(k8s_agent_marker_write(&k, &bad, true, NULL), 0); /* exists: kept */
        bad = pod;
        strcpy(bad.name, "../x");
        assert_int_equal(k8s_agent_marker_write(&k, &bad, false, NULL), -EPROTO);

        /* the relay's agent.sock still in the run directory (it unlinks it
         * on its own time), and a link there: both go, the link's target stays */
        {
                char sock[300], link_path[300], target[300];
                struct sockaddr_un sa = { .sun_family = AF_UNIX };
                int fd = socket(AF_UNIX, SOCK_STREAM, 0);

                snprintf(sock, sizeof(sock), "%s/sb-x/agent.sock", k.agent_dir);
                assert_true(strlen(sock) < sizeof(sa.sun_path));
                memcpy(sa.sun_path, sock, strlen(sock) + 1);
                assert_true(fd >= 0);
                assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
                close(fd);
                snprintf(target, sizeof(target), "%s/keep", dir);
                fd = open(target, O_WRONLY | O_CREAT | O_EXCL, 0600);
                assert_true(fd >= 0);
                close(fd);
                snprintf(link_path, sizeof(link_path), "%s/sb-x/link", k.agent_dir);
                assert_int_equal(symlink(target, link_path), 0);
                k8s_agent_marker_remove(&k, "sb-x");
                assert_int_equal(lstat(sock, &st), -1);
                assert_int_equal(lstat(link_path, &st), -1);
                assert_int_equal(lstat(target, &st), 0);
                assert_int_equal(unlink(target), 0);
        }
        assert_int_equal(lstat(path, &st), -1);
        snprintf(path, sizeof(path), "%s/sb-x", k.agent_dir);
        assert_int_equal(lstat(path, &st), -1);
        k8s_agent_marker_remove(&k, "sb-x"); /* twice: fine */
        assert_int_equal(rmdir(k.agent_dir), 0);
        assert_int_equal(rmdir(dir), 0);
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
        err[0] = '\0';
        return config_load_from(cfg, lookup, err, 256);
}

static void test_config(void **state)
{
        struct broker_config cfg;
        char err[256];

        (void)state;
        /* any readable file stands in for the CA, cert, key and token */
#define F "/proc/self/cmdline"
        assert_int_equal(
                load((const char *const[]){ "SANDBOX_PROVIDER", "kubernetes", "KUBERNETES_API_URL",
                                            "https://127.0.0.1:6443", "KUBERNETES_CA_FILE", F,
                                            "KUBERNETES_TOKEN_FILE", F, NULL },
                     &cfg, err),
                0);
        assert_string_equal(cfg.kubernetes_namespace, "sandbox-broker");
        assert_string_equal(cfg.kubernetes_pull_policy, "IfNotPresent");
        assert_string_equal(cfg.kubernetes_agent_image, "sandbox-broker/agent:latest");
        assert_int_equal(cfg.kubernetes_agent, 1);
        assert_int_equal(cfg.kubernetes_agent_port, 7070);
        assert_int_equal(cfg.kubernetes_timeout_ms, 10000);
        assert_int_equal(cfg.kubernetes_pod_wait_ms, 60000);
        assert_string_equal(cfg.sandbox_runtime, ""); /* the cluster's default RuntimeClass */

        assert_int_equal(
                load((const char *const[]){ "SANDBOX_PROVIDER", "kubernetes", "KUBERNETES_API_URL",
                                            "http://127.0.0.1:8080", "KUBERNETES_CA_FILE", F,
                                            "KUBERNETES_TOKEN_FILE", F, NULL },
                     &cfg, err),
                -EINVAL);
        assert_non_null(strstr(err, "KUBERNETES_API_URL"));
        assert_int_equal(
                load((const char *const[]){ "SANDBOX_PROVIDER", "kubernetes", "KUBERNETES_API_URL",
                                            "https://h", "KUBERNETES_TOKEN_FILE", F, NULL },
                     &cfg, err),
                -EINVAL);
        assert_non_null(strstr(err, "KUBERNETES_CA_FILE"));
        /* both ways of authenticating, or neither, or half of one */
        assert_int_equal(
                load((const char *const[]){ "SANDBOX_PROVIDER", "kubernetes", "KUBERNETES_API_URL",
                                            "https://h", "KUBERNETES_CA_FILE", F,
                                            "KUBERNETES_TOKEN_FILE", F, "KUBERNETES_CERT_FILE", F,
                                            "KUBERNETES_KEY_FILE", F, NULL },
                     &cfg, err),
                -EINVAL);
        assert_non_null(strstr(err, "KUBERNETES_TOKEN_FILE"));
        assert_int_equal(
                load((const char *const[]){ "SANDBOX_PROVIDER", "kubernetes", "KUBERNETES_API_URL",
                                            "https://h", "KUBERNETES_CA_FILE", F, NULL },
                     &cfg, err),
                -EINVAL);
        assert_int_equal(
                load((const char *const[]){ "SANDBOX_PROVIDER", "kubernetes", "KUBERNETES_API_URL",
                                            "https://h", "KUBERNETES_CA_FILE", F,
                                            "KUBERNETES_CERT_FILE", F, NULL },
                     &cfg, err),
                -EINVAL);
        assert_int_equal(load((const char *const[]){ "SANDBOX_PROVIDER", "kubernetes",
                                                     "KUBERNETES_API_URL", "https://h",
                                                     "KUBERNETES_CA_FILE", "/nonexistent/ca.crt",
                                                     "KUBERNETES_TOKEN_FILE", F, NULL },
                              &cfg, err),
                         -EINVAL);
        assert_non_null(strstr(err, "/nonexistent/ca.crt"));
        assert_int_equal(load((const char *const[]){ "SANDBOX_PROVIDER", "kubernetes",
                                                     "KUBERNETES_API_URL", "https://h",
                                                     "KUBERNETES_CA_FILE", F, "KUBERNETES_TOKEN_FILE",
                                                     F, "KUBERNETES_NAMESPACE", "Bad_NS", NULL },
                              &cfg, err),
                         -EINVAL);
        assert_non_null(strstr(err, "KUBERNETES_NAMESPACE"));
        assert_int_equal(
                load((const char *const[]){ "SANDBOX_PROVIDER", "kubernetes", "KUBERNETES_API_URL",
                                            "https://h", "KUBERNETES_CA_FILE", F,
                                            "KUBERNETES_TOKEN_FILE", F,
                                            "KUBERNETES_IMAGE_PULL_POLICY", "never", NULL },
                     &cfg, err),
                -EINVAL);
        assert_non_null(strstr(err, "KUBERNETES_IMAGE_PULL_POLICY"));
        assert_int_equal(load((const char *const[]){ "SANDBOX_PROVIDER", "kubernetes",
                                                     "KUBERNETES_API_URL", "https://h",
                                                     "KUBERNETES_CA_FILE", F, "KUBERNETES_TOKEN_FILE",
                                                     F, "KUBERNETES_AGENT_PORT", "0", NULL },
                              &cfg, err),
                         -EINVAL);
        /* the Docker provider keeps its runtime default */
        assert_int_equal(
                load((const char *const[]){ "SANDBOX_PROVIDER", "docker", NULL }, &cfg, err), 0);
        assert_string_equal(cfg.sandbox_runtime, "sandbox-runc");
#undef F
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_labels_and_names),
                cmocka_unit_test(test_manifest_without_agent),
                cmocka_unit_test(test_manifest_with_agent),
                cmocka_unit_test(test_parse_pod_states),
                cmocka_unit_test(test_parse_list_and_events),
                cmocka_unit_test(test_error_message),
                cmocka_unit_test(test_agent_key_and_marker),
                cmocka_unit_test(test_config),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
