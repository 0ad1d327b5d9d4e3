/* Unit tests for lib/providers/docker/docker_json.c: the container-create body carries the
 * sandbox's image, command, labels, limits and hardening; exec bodies; and
 * the parsers of Docker's answers map states and labels. */
#include <errno.h>
#include <json-c/json.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "providers/docker/docker_agent.h"
#include "providers/docker/docker_json.h"

static struct json_object *get(struct json_object *o, const char *path)
{
        char buf[256], *save = NULL;

        snprintf(buf, sizeof(buf), "%s", path);
        for (char *k = strtok_r(buf, ".", &save); k; k = strtok_r(NULL, ".", &save)) {
                struct json_object *v;

                if (!json_object_object_get_ex(o, k, &v))
                        fail_msg("no %s in %s", k, path);
                o = v;
        }
        return o;
}

static const char *get_s(struct json_object *o, const char *path)
{
        return json_object_get_string(get(o, path));
}

/* Label keys contain dots: look them up directly. */
static const char *label(struct json_object *o, const char *key)
{
        struct json_object *v;

        if (!json_object_object_get_ex(get(o, "Labels"), key, &v))
                fail_msg("no label %s", key);
        return json_object_get_string(v);
}

static void assert_array(struct json_object *a, const char *const *want)
{
        size_t n = 0;

        assert_true(json_object_is_type(a, json_type_array));
        for (; want[n]; n++)
                assert_string_equal(json_object_get_string(json_object_array_get_idx(a, n)), want[n]);
        assert_int_equal(json_object_array_length(a), n);
}

static const struct sandbox_spec base_spec = {
        .sandbox_id = "sbx-1",
        .key_prefix = "broker:",
        .image = "sandbox-broker/base:latest",
        .env = (const char *const[]){ "A=1", "B=two words", NULL },
        .workdir = "/workspace",
        .network = "none",
        .runtime = "sandbox-runc",
        .limits = { .nano_cpus = 500000000, .memory_bytes = 512LL << 20, .pids = 256 },
};

static void count_volume(void *ud, const struct volume_info *v)
{
        assert_true(v->name[0] != '\0');
        (*(int *)ud)++;
}

static void test_create_body_full(void **state)
{
        char *body = NULL;
        struct json_object *o, *h;

        (void)state;
        assert_int_equal(docker_json_create_body(&base_spec, NULL, &body), 0);
        o = json_tokener_parse(body);
        assert_non_null(o);
        assert_string_equal(get_s(o, "Image"), "sandbox-broker/base:latest");
        /* No entrypoint: keep-alive default, imported images have no CMD. */
        assert_array(get(o, "Cmd"), (const char *const[]){ "sleep", "infinity", NULL });
        assert_array(get(o, "Env"), (const char *const[]){ "A=1", "B=two words", NULL });
        assert_string_equal(get_s(o, "WorkingDir"), "/workspace");
        assert_string_equal(label(o, PROVIDER_LABEL_MANAGED), "1");
        assert_string_equal(label(o, PROVIDER_LABEL_SANDBOX), "sbx-1");
        assert_string_equal(label(o, PROVIDER_LABEL_PREFIX), "broker:");
        h = get(o, "HostConfig");
        assert_int_equal(json_object_get_int64(get(h, "NanoCpus")), 500000000);
        assert_int_equal(json_object_get_int64(get(h, "Memory")), 512LL << 20);
        assert_int_equal(json_object_get_int64(get(h, "MemorySwap")), 512LL << 20);
        assert_int_equal(json_object_get_int64(get(h, "PidsLimit")), 256);
        json_object_put(o);
        free(body);
        /* gVisor's sentry counts in its sandbox's host pids (host_pids) */
        {
                struct sandbox_spec g = base_spec;
                g.runtime = "runsc";
                g.agent_dials = true;
                assert_int_equal(docker_json_create_body(&g, NULL, &body), 0);
                o = json_tokener_parse(body);
                assert_int_equal(json_object_get_int64(get(get(o, "HostConfig"), "PidsLimit")),
                                 256 * DOCKER_GVISOR_PIDS_FACTOR);
                json_object_put(o);
                free(body);
                assert_int_equal(docker_json_create_body(&base_spec, NULL, &body), 0);
                o = json_tokener_parse(body);
                h = get(o, "HostConfig");
        }
        assert_array(get(h, "CapDrop"), (const char *const[]){ "ALL", NULL });
        assert_array(get(h, "CapAdd"), docker_cap_add);
        assert_array(get(h, "SecurityOpt"), (const char *const[]){ "no-new-privileges", NULL });
        assert_string_equal(get_s(h, "NetworkMode"), "none");
        assert_string_equal(get_s(h, "Runtime"), "sandbox-runc");
        assert_false(json_object_get_boolean(get(h, "Privileged")));
        assert_false(json_object_get_boolean(get(h, "ReadonlyRootfs")));
        assert_true(json_object_get_boolean(get(h, "Init")));
        /* What must never be added. */
        for (const char *const *c = docker_cap_add; *c; c++) {
                assert_true(strcmp(*c, "SYS_ADMIN") != 0);
                assert_true(strcmp(*c, "NET_RAW") != 0);
                assert_true(strcmp(*c, "ALL") != 0);
        }
        json_object_put(o);
        free(body);
}

/* With sandbox-agent: PID 1 is the agent (no docker-init), its binary and
 * run directory are mounted, the sandbox's command follows "--", and no
 * keep-alive command is added when there is none. */
static void test_create_body_agent(void **state)
{
        struct docker_agent_mount m = { .bin = "/usr/libexec/sb/sandbox-agent",
                                        .source = "/run/sb/agents/sb-sbx-1" };
        struct sandbox_spec s = base_spec;
        char *body = NULL;
        struct json_object *o, *h;

        (void)state;
        assert_int_equal(docker_json_create_body(&s, &m, &body), 0);
        o = json_tokener_parse(body);
        assert_non_null(o);
        assert_array(get(o, "Entrypoint"), (const char *const[]){ "/.sandbox-broker/agent", "--socket",
                                                                  "/.sandbox-broker/run/agent.sock", "--",
                                                                  NULL });
        assert_array(get(o, "Cmd"), (const char *const[]){ NULL });
        assert_string_equal(label(o, PROVIDER_LABEL_AGENT), "1");
        h = get(o, "HostConfig");
        assert_false(json_object_get_boolean(get(h, "Init")));
        assert_array(get(h, "Binds"),
                     (const char *const[]){ "/usr/libexec/sb/sandbox-agent:/.sandbox-broker/agent:ro",
                                            "/run/sb/agents/sb-sbx-1:/.sandbox-broker/run:rw", NULL });
        json_object_put(o);
        free(body);

        s.entrypoint = (const char *const[]){ "python3", "-m", "http.server", NULL };
        assert_int_equal(docker_json_create_body(&s, &m, &body), 0);
        o = json_tokener_parse(body);
        assert_array(get(o, "Cmd"), s.entrypoint);
        assert_array(get(o, "Env"), s.env); /* commands not through the agent: no env file */
        json_object_put(o);
        free(body);

        /* periodic lifecycle hooks: the agent's own arguments, before "--",
         * never in Cmd (the sandbox's command) */
        s.agent_args = (const char *const[]){ "--hook", "a 60 @hourly true", "--hook", "b 1 @every%201s x", NULL };
        assert_int_equal(docker_json_create_body(&s, &m, &body), 0);
        o = json_tokener_parse(body);
        assert_array(get(o, "Entrypoint"),
                     (const char *const[]){ "/.sandbox-broker/agent", "--socket", "/.sandbox-broker/run/agent.sock",
                                            "--hook", "a 60 @hourly true", "--hook", "b 1 @every%201s x", "--",
                                            NULL });
        assert_array(get(o, "Cmd"), s.entrypoint);
        json_object_put(o);
        free(body);
}

/* Commands through the agent: the sandbox names the env file of the SDK's
 * set_env (EXECD_ENVS), unless its own env already does. */
static void test_create_body_agent_env_file(void **state)
{
        struct docker_agent_mount m = { .bin = "/b", .source = "/s", .env_file = true };
        struct sandbox_spec s = base_spec;
        char *body = NULL;
        struct json_object *o;

        (void)state;
        assert_int_equal(docker_json_create_body(&s, &m, &body), 0);
        o = json_tokener_parse(body);
        assert_array(get(o, "Env"), (const char *const[]){ "A=1", "B=two words",
                                                           "EXECD_ENVS=" DOCKER_AGENT_ENV_FILE, NULL });
        json_object_put(o);
        free(body);

        s.env = (const char *const[]){ "EXECD_ENVS=/mine", NULL };
        assert_int_equal(docker_json_create_body(&s, &m, &body), 0);
        o = json_tokener_parse(body);
        assert_array(get(o, "Env"), s.env);
        json_object_put(o);
        free(body);
}

/* GET /events lines: a container's "die" with our labels is one; anything
 * else is not; garbage is -EPROTO, never a crash. */
static void test_create_body_mounts(void **state)
{
        const struct sandbox_mount mounts[] = {
                { SANDBOX_MOUNT_BIND, "/srv/projects/a", "/workspace/a", true },
                { SANDBOX_MOUNT_VOLUME, "sbv-0011223344556677-ws", "/ws", false },
        };
        struct sandbox_spec s = base_spec;
        char *body = NULL;
        struct json_object *o, *h, *a, *m;

        (void)state;
        s.mounts = mounts;
        s.n_mounts = 2;
        assert_int_equal(docker_json_create_body(&s, NULL, &body), 0);
        o = json_tokener_parse(body);
        assert_non_null(o);
        h = get(o, "HostConfig");
        /* Mounts, never Binds (a Binds source that is missing is made) */
        assert_false(json_object_object_get_ex(h, "Binds", NULL));
        a = get(h, "Mounts");
        assert_int_equal(json_object_array_length(a), 2);
        m = json_object_array_get_idx(a, 0);
        assert_string_equal(get_s(m, "Type"), "bind");
        assert_string_equal(get_s(m, "Source"), "/srv/projects/a");
        assert_string_equal(get_s(m, "Target"), "/workspace/a");
        assert_true(json_object_get_boolean(get(m, "ReadOnly")));
        assert_string_equal(get_s(get(m, "BindOptions"), "Propagation"), "rprivate");
        m = json_object_array_get_idx(a, 1);
        assert_string_equal(get_s(m, "Type"), "volume");
        assert_string_equal(get_s(m, "Source"), "sbv-0011223344556677-ws");
        assert_false(json_object_get_boolean(get(m, "ReadOnly")));
        assert_true(json_object_get_boolean(get(get(m, "VolumeOptions"), "NoCopy")));
        json_object_put(o);
        free(body);
}

static void test_volume_bodies(void **state)
{
        struct volume_info v = { .name = "sbv-00-ws", .prefix = "sb:", .tenant = "alpha",
                                 .volume = "ws", .sandbox_id = "sbx-1" }, r;
        struct json_object *o;
        char *body = NULL;
        int calls = 0;

        (void)state;
        assert_int_equal(docker_json_volume_create_body(&v, &body), 0);
        o = json_tokener_parse(body);
        assert_non_null(o);
        assert_string_equal(get_s(o, "Name"), "sbv-00-ws");
        assert_string_equal(get_s(o, "Driver"), "local");
        assert_string_equal(label(o, PROVIDER_LABEL_MANAGED), "1");
        assert_string_equal(label(o, PROVIDER_LABEL_TENANT), "alpha");
        assert_string_equal(label(o, PROVIDER_LABEL_VOLUME), "ws");
        assert_string_equal(label(o, PROVIDER_LABEL_PREFIX), "sb:");
        assert_string_equal(label(o, PROVIDER_LABEL_SANDBOX), "sbx-1");
        json_object_put(o);
        /* read back as Docker answers it */
        assert_int_equal(docker_json_parse_volume("{\"Name\":\"sbv-00-ws\",\"CreatedAt\":\"2026-12-03T15:00:00Z\","
                                                  "\"Labels\":{\"io.sandbox-broker.managed\":\"1\","
                                                  "\"io.sandbox-broker.tenant\":\"alpha\"}}", &r), 0);
        assert_string_equal(r.name, "sbv-00-ws");
        assert_string_equal(r.tenant, "alpha");
        assert_string_equal(r.created_at, "2026-12-03T15:00:00Z");
        assert_true(r.managed);
        assert_int_equal(docker_json_parse_volume("{\"Name\":\"x\",\"Labels\":null}", &r), 0);
        assert_false(r.managed);
        assert_string_equal(r.tenant, "");
        assert_int_equal(docker_json_parse_volume("{}", &r), -EPROTO);
        assert_int_equal(docker_json_parse_volume("[]", &r), -EPROTO);
        assert_int_equal(docker_json_parse_volumes("{\"Volumes\":null,\"Warnings\":null}", count_volume, &calls), 0);
        assert_int_equal(calls, 0);
        assert_int_equal(docker_json_parse_volumes("{\"Volumes\":[{\"Name\":\"a\"},{\"Name\":\"\"},5,"
                                                   "{\"Name\":\"b\"}]}", count_volume, &calls), 0);
        assert_int_equal(calls, 2);
        assert_int_equal(docker_json_parse_volumes("[]", count_volume, &calls), -EPROTO);
        free(body);
}

static void test_parse_event(void **state)
{
        static const char die[] =
                "{\"status\":\"die\",\"id\":\"abc123\",\"Type\":\"container\",\"Action\":\"die\","
                "\"Actor\":{\"ID\":\"abc123\",\"Attributes\":{\"exitCode\":\"3\","
                "\"" PROVIDER_LABEL_SANDBOX "\":\"sid-1\",\"" PROVIDER_LABEL_PREFIX "\":\"p:\"}}}";
        static const char start[] =
                "{\"Type\":\"container\",\"Action\":\"start\",\"Actor\":{\"ID\":\"abc\"}}";
        struct sandbox_event ev;

        (void)state;
        assert_int_equal(docker_json_parse_event(die, strlen(die), &ev), 1);
        assert_int_equal(ev.kind, SANDBOX_EVENT_EXITED);
        assert_string_equal(ev.info.ref, "abc123");
        assert_string_equal(ev.info.sandbox_id, "sid-1");
        assert_string_equal(ev.info.prefix, "p:");
        assert_int_equal(ev.info.exit_code, 3);
        assert_int_equal(ev.info.state, SANDBOX_RUN_EXITED);
        assert_int_equal(docker_json_parse_event(start, strlen(start), &ev), 0);
        /* only the given length is read: a prefix of a valid event is not one */
        assert_int_equal(docker_json_parse_event(die, 40, &ev), -EPROTO);
        assert_int_equal(docker_json_parse_event("[1,2]", 5, &ev), -EPROTO);
        assert_int_equal(docker_json_parse_event("", 0, &ev), -EPROTO);
}

static int parse_action(const char *action, const char *attrs, struct sandbox_event *ev)
{
        char line[512];

        snprintf(line, sizeof(line),
                 "{\"Type\":\"container\",\"Action\":\"%s\",\"Actor\":{\"ID\":\"c1\","
                 "\"Attributes\":{%s\"" PROVIDER_LABEL_SANDBOX "\":\"s1\",\"" PROVIDER_LABEL_PREFIX
                 "\":\"p:\"}}}",
                 action, attrs);
        return docker_json_parse_event(line, strlen(line), ev);
}

/* pause, unpause and oom are events too (the supervisor's watch); kill is
 * not (its die follows); the exit code is a small number or unknown. */
static void test_parse_event_kinds(void **state)
{
        struct sandbox_event ev;

        (void)state;
        assert_int_equal(parse_action("pause", "", &ev), 1);
        assert_int_equal(ev.kind, SANDBOX_EVENT_PAUSED);
        assert_int_equal(ev.info.state, SANDBOX_RUN_PAUSED);
        assert_string_equal(ev.info.sandbox_id, "s1");
        assert_string_equal(ev.info.ref, "c1");
        assert_int_equal(ev.info.exit_code, -1);
        assert_int_equal(parse_action("unpause", "", &ev), 1);
        assert_int_equal(ev.kind, SANDBOX_EVENT_UNPAUSED);
        assert_int_equal(ev.info.state, SANDBOX_RUN_RUNNING);
        assert_int_equal(parse_action("oom", "", &ev), 1);
        assert_int_equal(ev.kind, SANDBOX_EVENT_OOM);
        /* an exit code on anything but die is ignored */
        assert_int_equal(parse_action("oom", "\"exitCode\":\"137\",", &ev), 1);
        assert_int_equal(ev.info.exit_code, -1);
        assert_int_equal(parse_action("kill", "\"signal\":\"9\",", &ev), 0);
        assert_int_equal(parse_action("start", "", &ev), 0);
        assert_int_equal(parse_action("Die", "", &ev), 0); /* actions are case-sensitive */
        assert_int_equal(parse_action("die", "\"exitCode\":\"137\",", &ev), 1);
        assert_int_equal(ev.info.exit_code, 137);
        assert_int_equal(ev.info.state, SANDBOX_RUN_EXITED);
        /* not a small decimal: unknown, never an overflowing atoi */
        assert_int_equal(parse_action("die", "\"exitCode\":\"99999999999\",", &ev), 1);
        assert_int_equal(ev.info.exit_code, -1);
        assert_int_equal(parse_action("die", "\"exitCode\":\"-1\",", &ev), 1);
        assert_int_equal(ev.info.exit_code, -1);
        assert_int_equal(parse_action("die", "\"exitCode\":\"\",", &ev), 1);
        assert_int_equal(ev.info.exit_code, -1);
        assert_int_equal(parse_action("die", "\"exitCode\":3,", &ev), 1); /* not a string */
        assert_int_equal(ev.info.exit_code, -1);
        /* no labels: an event, but of no sandbox (the watcher skips it) */
        static const char bare[] = "{\"Type\":\"container\",\"Action\":\"pause\","
                                   "\"Actor\":{\"ID\":\"c2\",\"Attributes\":{}}}";
        assert_int_equal(docker_json_parse_event(bare, strlen(bare), &ev), 1);
        assert_string_equal(ev.info.sandbox_id, "");
        /* a wanted action without its Actor is malformed */
        static const char noactor[] = "{\"Type\":\"container\",\"Action\":\"oom\"}";
        assert_int_equal(docker_json_parse_event(noactor, strlen(noactor), &ev), -EPROTO);
        /* an image's or network's "pause" is not a container's */
        static const char image[] = "{\"Type\":\"image\",\"Action\":\"pause\","
                                    "\"Actor\":{\"ID\":\"c2\",\"Attributes\":{}}}";
        assert_int_equal(docker_json_parse_event(image, strlen(image), &ev), 0);
}

static void test_create_body_minimal(void **state)
{
        struct sandbox_spec s = { .sandbox_id = "x", .image = "img",
                                  .entrypoint = (const char *const[]){ "/bin/agent", "-v", NULL } };
        char *body = NULL;
        struct json_object *o, *h, *v;

        (void)state;
        assert_int_equal(docker_json_create_body(&s, NULL, &body), 0);
        o = json_tokener_parse(body);
        assert_non_null(o);
        assert_array(get(o, "Cmd"), (const char *const[]){ "/bin/agent", "-v", NULL });
        assert_array(get(o, "Env"), (const char *const[]){ NULL });
        assert_false(json_object_object_get_ex(o, "WorkingDir", &v));
        assert_string_equal(label(o, PROVIDER_LABEL_PREFIX), "");
        h = get(o, "HostConfig");
        /* Zero limits are left out (Docker: unlimited), network defaults to
         * none, no runtime is dockerd's default. */
        assert_false(json_object_object_get_ex(h, "NanoCpus", &v));
        assert_false(json_object_object_get_ex(h, "Memory", &v));
        assert_false(json_object_object_get_ex(h, "PidsLimit", &v));
        assert_false(json_object_object_get_ex(h, "Runtime", &v));
        assert_string_equal(get_s(h, "NetworkMode"), "none");
        json_object_put(o);
        free(body);
        /* "" (SANDBOX_RUNTIME=) is dockerd's default too */
        s.runtime = "";
        assert_int_equal(docker_json_create_body(&s, NULL, &body), 0);
        o = json_tokener_parse(body);
        assert_non_null(o);
        assert_false(json_object_object_get_ex(get(o, "HostConfig"), "Runtime", &v));
        json_object_put(o);
        free(body);
}

/* Values with JSON specials stay one string each (no injection). */
static void test_create_body_escaping(void **state)
{
        struct sandbox_spec s = base_spec;
        char *body = NULL;
        struct json_object *o;

        (void)state;
        s.sandbox_id = "a\"b\\c";
        s.env = (const char *const[]){ "X=\"},\"HostConfig\":{\"Privileged\":true}", NULL };
        assert_int_equal(docker_json_create_body(&s, NULL, &body), 0);
        o = json_tokener_parse(body);
        assert_non_null(o);
        assert_string_equal(label(o, PROVIDER_LABEL_SANDBOX), "a\"b\\c");
        assert_array(get(o, "Env"), s.env);
        assert_false(json_object_get_boolean(get(o, "HostConfig.Privileged")));
        json_object_put(o);
        free(body);
}

static void test_create_body_invalid(void **state)
{
        struct sandbox_spec s = base_spec;
        char *body = (char *)1;

        (void)state;
        s.image = NULL;
        assert_int_equal(docker_json_create_body(&s, NULL, &body), -EINVAL);
        assert_null(body);
        s = base_spec;
        s.sandbox_id = "";
        assert_int_equal(docker_json_create_body(&s, NULL, &body), -EINVAL);
}

static void test_exec_body(void **state)
{
        char *body = NULL;
        struct json_object *o, *v;

        (void)state;
        assert_int_equal(docker_json_exec_body((const char *const[]){ "ls", "-l", NULL },
                                               (const char *const[]){ "K=V", NULL }, "/w", "sbu1",
                                               &body),
                         0);
        o = json_tokener_parse(body);
        assert_true(json_object_get_boolean(get(o, "AttachStdout")));
        assert_true(json_object_get_boolean(get(o, "AttachStderr")));
        assert_false(json_object_get_boolean(get(o, "AttachStdin")));
        assert_false(json_object_get_boolean(get(o, "Tty")));
        assert_array(get(o, "Cmd"), (const char *const[]){ "ls", "-l", NULL });
        assert_array(get(o, "Env"), (const char *const[]){ "K=V", NULL });
        assert_string_equal(get_s(o, "WorkingDir"), "/w");
        assert_string_equal(get_s(o, "User"), "sbu1");
        json_object_put(o);
        free(body);

        assert_int_equal(docker_json_exec_body((const char *const[]){ "true", NULL }, NULL, NULL,
                                               NULL, &body),
                         0);
        o = json_tokener_parse(body);
        assert_false(json_object_object_get_ex(o, "User", &v));
        assert_false(json_object_object_get_ex(o, "WorkingDir", &v));
        assert_false(json_object_object_get_ex(o, "Env", &v));
        json_object_put(o);
        free(body);

        assert_int_equal(docker_json_exec_body((const char *const[]){ NULL }, NULL, NULL, NULL,
                                               &body),
                         -EINVAL);
}

static void test_parse_id(void **state)
{
        char id[PROVIDER_REF_MAX];

        (void)state;
        assert_int_equal(docker_json_parse_id("{\"Id\":\"abc123\",\"Warnings\":[]}", id, sizeof(id)),
                         0);
        assert_string_equal(id, "abc123");
        assert_int_equal(docker_json_parse_id("{\"Warnings\":[]}", id, sizeof(id)), -EPROTO);
        assert_int_equal(docker_json_parse_id("not json", id, sizeof(id)), -EPROTO);
        assert_int_equal(docker_json_parse_id("{\"Id\":\"0123456789\"}", id, 5), -EPROTO);
        assert_int_equal(docker_json_parse_id(NULL, id, sizeof(id)), -EPROTO);
}

static void test_states(void **state)
{
        (void)state;
        assert_int_equal(docker_json_state("created"), SANDBOX_RUN_CREATED);
        assert_int_equal(docker_json_state("running"), SANDBOX_RUN_RUNNING);
        assert_int_equal(docker_json_state("restarting"), SANDBOX_RUN_RUNNING);
        assert_int_equal(docker_json_state("paused"), SANDBOX_RUN_PAUSED);
        assert_int_equal(docker_json_state("exited"), SANDBOX_RUN_EXITED);
        assert_int_equal(docker_json_state("dead"), SANDBOX_RUN_EXITED);
        assert_int_equal(docker_json_state(NULL), SANDBOX_RUN_MISSING);
}

static void test_parse_inspect(void **state)
{
        struct sandbox_info info;

        (void)state;
        assert_int_equal(docker_json_parse_inspect(
                                 "{\"Id\":\"c0ffee\",\"State\":{\"Status\":\"paused\",\"Paused\":true},"
                                 "\"Config\":{\"Labels\":{\"" PROVIDER_LABEL_SANDBOX "\":\"s1\",\"" PROVIDER_LABEL_PREFIX
                                 "\":\"p:\"}}}",
                                 &info),
                         0);
        assert_int_equal(info.state, SANDBOX_RUN_PAUSED);
        assert_string_equal(info.ref, "c0ffee");
        assert_string_equal(info.sandbox_id, "s1");
        assert_string_equal(info.prefix, "p:");
        assert_false(info.oom_killed);
        /* an OOM kill: the exit code and Docker's flag */
        assert_int_equal(docker_json_parse_inspect(
                                 "{\"Id\":\"c1\",\"State\":{\"Status\":\"exited\",\"ExitCode\":137,"
                                 "\"OOMKilled\":true},\"Config\":{\"Labels\":{}}}",
                                 &info),
                         0);
        assert_int_equal(info.state, SANDBOX_RUN_EXITED);
        assert_int_equal(info.exit_code, 137);
        assert_true(info.oom_killed);
        /* a non-boolean flag is no OOM */
        assert_int_equal(docker_json_parse_inspect(
                                 "{\"Id\":\"c1\",\"State\":{\"Status\":\"exited\",\"OOMKilled\":\"yes\"}}",
                                 &info),
                         0);
        assert_false(info.oom_killed);
        /* No labels: empty strings. */
        assert_int_equal(docker_json_parse_inspect(
                                 "{\"Id\":\"c\",\"State\":{\"Status\":\"running\"},\"Config\":{\"Labels\":null}}",
                                 &info),
                         0);
        assert_string_equal(info.sandbox_id, "");
        assert_int_equal(docker_json_parse_inspect("{\"message\":\"x\"}", &info), -EPROTO);
        assert_int_equal(docker_json_parse_inspect("[", &info), -EPROTO);
}

struct seen {
        int n;
        struct sandbox_info last;
};

static void on_info(void *ud, const struct sandbox_info *info)
{
        struct seen *s = ud;

        s->n++;
        s->last = *info;
}

/* A create's host bounds: logs rotated whatever the daemon's default,
 * the disk's label only with a disk, and the read-only etc files (Docker
 * leaves out its own writable ones when a mount names their path). */
static void test_create_body_bounds(void **state)
{
        struct docker_agent_mount m = { .bin = "/usr/libexec/sb/sandbox-agent",
                                        .source = "/run/sb/agents/sb-sbx-1",
                                        .etc = "/run/sb/agents/etc-sbx-1" };
        struct sandbox_spec s = base_spec;
        struct json_object *o, *h, *mounts, *lbl;
        char *body = NULL;

        (void)state;
        assert_int_equal(docker_json_create_body(&s, NULL, &body), 0);
        o = json_tokener_parse(body);
        h = get(o, "HostConfig");
        assert_string_equal(get_s(h, "LogConfig.Type"), "json-file");
        assert_string_equal(get_s(h, "LogConfig.Config.max-size"), DOCKER_LOG_MAX_SIZE);
        assert_string_equal(get_s(h, "LogConfig.Config.max-file"), DOCKER_LOG_MAX_FILE);
        assert_false(json_object_object_get_ex(get(o, "Labels"), PROVIDER_LABEL_DISK, &lbl));
        assert_false(json_object_object_get_ex(h, "Mounts", &mounts));
        json_object_put(o);
        free(body);

        s.limits.disk_mb = 2048;
        assert_int_equal(docker_json_create_body(&s, &m, &body), 0);
        o = json_tokener_parse(body);
        assert_string_equal(label(o, PROVIDER_LABEL_DISK), "2048");
        mounts = get(get(o, "HostConfig"), "Mounts");
        assert_int_equal(json_object_array_length(mounts), 3);
        static const char *const names[] = { "hosts", "hostname", "resolv.conf" };
        for (size_t i = 0; i < 3; i++) {
                struct json_object *mt = json_object_array_get_idx(mounts, i);
                char src[128], dst[32];

                snprintf(src, sizeof(src), "/run/sb/agents/etc-sbx-1/%s", names[i]);
                snprintf(dst, sizeof(dst), "/etc/%s", names[i]);
                assert_string_equal(get_s(mt, "Type"), "bind");
                assert_string_equal(get_s(mt, "Source"), src);
                assert_string_equal(get_s(mt, "Target"), dst);
                assert_true(json_object_get_boolean(get(mt, "ReadOnly")));
        }
        json_object_put(o);
        free(body);

        /* with volumes: theirs first, the etc files after them */
        const struct sandbox_mount vm[] = { { SANDBOX_MOUNT_VOLUME, "sbv-x", "/data", false } };
        s.mounts = vm;
        s.n_mounts = 1;
        assert_int_equal(docker_json_create_body(&s, &m, &body), 0);
        o = json_tokener_parse(body);
        mounts = get(get(o, "HostConfig"), "Mounts");
        assert_int_equal(json_object_array_length(mounts), 4);
        assert_string_equal(get_s(json_object_array_get_idx(mounts, 0), "Target"), "/data");
        json_object_put(o);
        free(body);
}

/* GraphDriver of an overlay2 container: its writable layer's id, only
 * when UpperDir and WorkDir are that layer's diff and work. */
static void test_parse_disk(void **state)
{
#define LAYER "4d15b73d967e254c9e18741228bbef07e4a5576c30cfef6fa1c1028ce64419e4"
#define SID "0123456789abcdef0123456789abcdef"
        struct docker_disk_info di;
        char body[2048];

        (void)state;
        snprintf(body, sizeof(body),
                 "{\"Id\":\"c1\",\"Config\":{\"Labels\":{\"" PROVIDER_LABEL_SANDBOX "\":\"" SID "\","
                 "\"" PROVIDER_LABEL_DISK "\":\"512\"}},\"GraphDriver\":{\"Name\":\"overlay2\",\"Data\":{"
                 "\"UpperDir\":\"/var/lib/docker/overlay2/" LAYER "/diff\","
                 "\"WorkDir\":\"/var/lib/docker/overlay2/" LAYER "/work\"}}}");
        assert_int_equal(docker_json_parse_disk(body, &di), 0);
        assert_string_equal(di.sandbox_id, SID);
        assert_int_equal(di.disk_mb, 512);
        assert_string_equal(di.driver, "overlay2");
        assert_string_equal(di.layer, LAYER);

        /* no disk label, a bad one: 0 */
        assert_int_equal(docker_json_parse_disk("{\"Id\":\"c\",\"Config\":{\"Labels\":{\"" PROVIDER_LABEL_DISK
                                                "\":\"-5\"}}}", &di), 0);
        assert_int_equal(di.disk_mb, 0);
        assert_string_equal(di.layer, "");
        assert_int_equal(docker_json_parse_disk("{\"Id\":\"c\"}", &di), 0);
        assert_int_equal(di.disk_mb, 0);

        /* what is not an overlay2 layer gives no layer */
        static const char *const bad[][3] = {
                { "devicemapper", "/var/lib/docker/overlay2/" LAYER "/diff", "/var/lib/docker/overlay2/" LAYER "/work" },
                { "overlay2", "/var/lib/docker/overlay2/" LAYER "/diff", "/var/lib/docker/overlay2/" LAYER "/x" },
                { "overlay2", "/var/lib/docker/overlay2/../" LAYER "/diff", "/var/lib/docker/overlay2/../" LAYER "/work" },
                { "overlay2", "/var/lib/docker/other/" LAYER "/diff", "/var/lib/docker/other/" LAYER "/work" },
                { "overlay2", "/var/lib/docker/overlay2/" LAYER "X/diff", "/var/lib/docker/overlay2/" LAYER "X/work" },
                { "overlay2", "overlay2/" LAYER "/diff", "overlay2/" LAYER "/work" },
                { "overlay2", "/var/lib/docker/overlay2/4D15b73d967e254c9e18741228bbef07e4a5576c30cfef6fa1c1028ce64419e4/diff",
                  "/var/lib/docker/overlay2/4D15b73d967e254c9e18741228bbef07e4a5576c30cfef6fa1c1028ce64419e4/work" },
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                snprintf(body, sizeof(body),
                         "{\"Id\":\"c1\",\"GraphDriver\":{\"Name\":\"%s\",\"Data\":{\"UpperDir\":\"%s\","
                         "\"WorkDir\":\"%s\"}}}", bad[i][0], bad[i][1], bad[i][2]);
                assert_int_equal(docker_json_parse_disk(body, &di), 0);
                if (di.layer[0])
                        fail_msg("a layer out of %s %s", bad[i][0], bad[i][1]);
        }
        assert_int_equal(docker_json_parse_disk("[", &di), -EPROTO);
        assert_int_equal(docker_json_parse_disk("{\"message\":\"no such container\"}", &di), -EPROTO);
#undef LAYER
#undef SID
}

static void test_parse_list(void **state)
{
        struct seen s = { 0 };

        (void)state;
        assert_int_equal(docker_json_parse_list(
                                 "[{\"Id\":\"a\",\"State\":\"exited\",\"Labels\":{}},"
                                 "{\"Names\":[\"/noid\"]},"
                                 "{\"Id\":\"b\",\"State\":\"running\",\"Labels\":{\"" PROVIDER_LABEL_SANDBOX
                                 "\":\"sb\"}}]",
                                 on_info, &s),
                         0);
        assert_int_equal(s.n, 2);
        assert_string_equal(s.last.ref, "b");
        assert_string_equal(s.last.sandbox_id, "sb");
        assert_int_equal(s.last.state, SANDBOX_RUN_RUNNING);
        assert_int_equal(docker_json_parse_list("{}", on_info, &s), -EPROTO);
        assert_int_equal(docker_json_parse_list("[]", on_info, &s), 0);
        assert_int_equal(s.n, 2);
}

static void test_parse_exec_inspect(void **state)
{
        bool running = true;
        int code = 5;

        (void)state;
        assert_int_equal(docker_json_parse_exec_inspect("{\"Running\":false,\"ExitCode\":3}", &running,
                                                        &code),
                         0);
        assert_false(running);
        assert_int_equal(code, 3);
        assert_int_equal(docker_json_parse_exec_inspect("{\"Running\":true,\"ExitCode\":null}",
                                                        &running, &code),
                         0);
        assert_true(running);
        assert_int_equal(code, -1);
        assert_int_equal(docker_json_parse_exec_inspect("nope", &running, &code), -EPROTO);
}

static void test_error_message(void **state)
{
        char err[PROVIDER_ERR_MAX];

        (void)state;
        docker_json_error_message("create", 409,
                                  "{\"message\":\"Conflict. The container name \\\"/sb-1\\\" is already in use\"}",
                                  err);
        assert_string_equal(err, "docker: create: Conflict. The container name \"/sb-1\" is already in use");
        docker_json_error_message("start", 500, "plain text", err);
        assert_string_equal(err, "docker: start: HTTP 500: plain text");
        docker_json_error_message("start", 502, NULL, err);
        assert_string_equal(err, "docker: start: HTTP 502");
        docker_json_error_message("x", 500, "y", NULL); /* tolerated */
}

struct images_seen {
        struct snapshot_image im[8];
        size_t n;
};

static void on_image(void *ud, const struct snapshot_image *im)
{
        struct images_seen *s = ud;

        assert_true(s->n < 8);
        s->im[s->n++] = *im;
}

/* GET /images/json: what the reconciler reads to find snapshot images. */
static void test_parse_images(void **state)
{
        struct images_seen s = { 0 };
        char body[2048];

        (void)state;
        snprintf(body, sizeof(body),
                 "[{\"Id\":\"sha256:aa\",\"RepoTags\":[\"sandbox-broker/snapshot:0123\"],"
                 "\"Labels\":{\"" PROVIDER_LABEL_SNAPSHOT "\":\"0123\",\"" PROVIDER_LABEL_PREFIX "\":\"sb:\"}},"
                 /* dangling: RepoTags null, or the <none> placeholder */
                 "{\"Id\":\"sha256:bb\",\"RepoTags\":null,\"Labels\":{\"" PROVIDER_LABEL_SNAPSHOT "\":\"4567\"}},"
                 "{\"Id\":\"sha256:cc\",\"RepoTags\":[\"<none>:<none>\"],\"Labels\":null},"
                 "{\"Id\":\"sha256:dd\",\"RepoTags\":[\"a:1\",\"b:2\"],\"Labels\":{}},"
                 /* skipped: no Id, an Id that does not fit, not an object */
                 "{\"RepoTags\":[]},{\"Id\":\"%0100d\"},7,"
                 /* labels that are no strings read as absent */
                 "{\"Id\":\"sha256:ee\",\"RepoTags\":[5],\"Labels\":{\"" PROVIDER_LABEL_SNAPSHOT "\":9}}]",
                 0);
        assert_int_equal(docker_json_parse_images(body, on_image, &s), 0);
        assert_int_equal(s.n, 5);
        assert_string_equal(s.im[0].id, "sha256:aa");
        assert_string_equal(s.im[0].snapshot_id, "0123");
        assert_string_equal(s.im[0].prefix, "sb:");
        assert_int_equal(s.im[0].names, 1);
        assert_string_equal(s.im[0].name, "sandbox-broker/snapshot:0123");
        assert_string_equal(s.im[1].snapshot_id, "4567");
        assert_string_equal(s.im[1].prefix, "");
        assert_int_equal(s.im[1].names, 0);
        assert_string_equal(s.im[1].name, "");
        assert_int_equal(s.im[2].names, 0);
        assert_string_equal(s.im[2].snapshot_id, "");
        assert_int_equal(s.im[3].names, 2);
        assert_string_equal(s.im[3].name, ""); /* several names: none of them */
        assert_string_equal(s.im[4].snapshot_id, "");
        assert_int_equal(s.im[4].names, 1); /* a name we cannot read is still a name */
        s.n = 0;
        assert_int_equal(docker_json_parse_images("[]", on_image, &s), 0);
        assert_int_equal(s.n, 0);
        assert_int_equal(docker_json_parse_images("{}", on_image, &s), -EPROTO);
        assert_int_equal(docker_json_parse_images("", on_image, &s), -EPROTO);
        assert_int_equal(docker_json_parse_images(NULL, on_image, &s), -EPROTO);
        assert_int_equal(s.n, 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_create_body_full),   cmocka_unit_test(test_create_body_minimal),
                cmocka_unit_test(test_create_body_agent),
                cmocka_unit_test(test_create_body_agent_env_file),  cmocka_unit_test(test_parse_event),
                cmocka_unit_test(test_parse_event_kinds),
                cmocka_unit_test(test_create_body_escaping), cmocka_unit_test(test_create_body_invalid),
                cmocka_unit_test(test_exec_body),          cmocka_unit_test(test_parse_id),
                cmocka_unit_test(test_states),             cmocka_unit_test(test_parse_inspect),
                cmocka_unit_test(test_parse_list),
                cmocka_unit_test(test_parse_disk),
                cmocka_unit_test(test_create_body_bounds),         cmocka_unit_test(test_parse_exec_inspect),
                cmocka_unit_test(test_error_message),
                cmocka_unit_test(test_create_body_mounts), cmocka_unit_test(test_volume_bodies),
                cmocka_unit_test(test_parse_images),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
