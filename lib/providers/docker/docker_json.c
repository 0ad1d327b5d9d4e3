/* docker_json: see docker_json.h. */
#include "providers/docker/docker_json.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json_input.h"
#include "providers/docker/docker_agent.h"

/* Capabilities root inside a sandbox keeps (CapDrop ALL, then these).
 * The multi-user mode runs commands as per-seat Linux users and lets root in
 * the sandbox administer their homes, so root keeps just what that needs:
 *   CHOWN, FOWNER      hand files and directories to a seat user, chmod them
 *   DAC_OVERRIDE       reach into a seat's 0700 home (provisioning, cleanup)
 *   SETUID, SETGID     switch to a seat user from inside (su/runuser as root;
 *                      Docker's own exec User= switch happens in runc)
 *   KILL               stop a seat user's runaway processes
 * Left out on purpose: NET_RAW (raw sockets, spoofing), NET_BIND_SERVICE,
 * MKNOD, SYS_CHROOT, SETPCAP, SETFCAP, FSETID (keeping setuid bits on write),
 * AUDIT_WRITE. With no-new-privileges, no setuid binary (sudo) can raise a
 * seat user above this set either. */
const char *const docker_cap_add[] = { "CHOWN", "DAC_OVERRIDE", "FOWNER", "SETUID",
                                       "SETGID", "KILL", NULL };

static const char *const keepalive_cmd[] = { "sleep", "infinity", NULL };


static struct json_object *str_array(const char *const *v)
{
        struct json_object *a = json_object_new_array();

        if (!a)
                return NULL;
        for (; v && *v; v++) {
                struct json_object *s = json_object_new_string(*v);

                if (!s || json_object_array_add(a, s) < 0) {
                        json_put(s);
                        json_put(a);
                        return NULL;
                }
        }
        return a;
}

/* HostConfig.Mounts (Docker API "Mount"): a bind is of a directory the
 * broker resolved and checked (volume.h), and Mounts, unlike Binds,
 * never creates a missing source; a named volume is mounted without
 * copying the image's files into it (NoCopy), so that what a tenant's
 * volume holds is only what its sandboxes wrote. */
static struct json_object *mounts_json(const struct sandbox_spec *spec)
{
        struct json_object *a = json_object_new_array();

        for (size_t i = 0; a && i < spec->n_mounts; i++) {
                const struct sandbox_mount *m = &spec->mounts[i];
                struct json_object *o = json_object_new_object(), *opt = json_object_new_object();
                bool bind = m->kind == SANDBOX_MOUNT_BIND;
                int r = -ENOMEM;

                if (o && opt &&
                    (bind ? json_add_str(opt, "Propagation", "rprivate")
                          : json_add(opt, "NoCopy", json_object_new_boolean(1))) == 0) {
                        r = json_add(o, bind ? "BindOptions" : "VolumeOptions", opt);
                        opt = NULL; /* o's now, even on failure */
                }
                if (r < 0 || json_add_str(o, "Type", bind ? "bind" : "volume") < 0 ||
                    json_add_str(o, "Source", m->source) < 0 || json_add_str(o, "Target", m->target) < 0 ||
                    json_add(o, "ReadOnly", json_object_new_boolean(m->read_only)) < 0 ||
                    json_object_array_add(a, o) < 0) {
                        json_put(opt);
                        json_put(o);
                        json_put(a);
                        return NULL;
                }
        }
        return a;
}

/* HostConfig.LogConfig: json-file, rotated (DOCKER_LOG_*), whatever the
 * daemon's default driver: what a sandbox writes to its PID 1's output is
 * kept on the host, so it must be bounded too. */
static struct json_object *log_config(void)
{
        struct json_object *o = json_object_new_object(), *c = json_object_new_object();

        if (!o || !c || json_add_str(c, "max-size", DOCKER_LOG_MAX_SIZE) < 0 ||
            json_add_str(c, "max-file", DOCKER_LOG_MAX_FILE) < 0 ||
            json_add_str(o, "Type", "json-file") < 0) {
                json_put(c);
                json_put(o);
                return NULL;
        }
        if (json_add(o, "Config", c) < 0) {
                json_put(o);
                return NULL;
        }
        return o;
}

/* Bind mounts of the host's etc directory's files (read-only) over the
 * sandbox's own, appended to HostConfig.Mounts: Docker leaves out its
 * writable /etc/hosts, /etc/hostname and /etc/resolv.conf when a mount
 * names their path. */
static int etc_mounts(struct json_object *h, const char *etc)
{
        static const char *const files[] = { "hosts", "hostname", "resolv.conf" };
        struct json_object *a = NULL;

        if (!json_object_object_get_ex(h, "Mounts", &a)) {
                a = json_object_new_array();
                if (!a || json_add(h, "Mounts", a) < 0)
                        return -ENOMEM;
        }
        for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
                struct json_object *o = json_object_new_object(), *opt = json_object_new_object();
                char src[sizeof(((struct docker_agent_mount *)0)->etc) + 16], dst[32];

                snprintf(src, sizeof(src), "%s/%s", etc, files[i]);
                snprintf(dst, sizeof(dst), "/etc/%s", files[i]);
                if (!o || !opt || json_add_str(opt, "Propagation", "rprivate") < 0) {
                        json_put(opt);
                        json_put(o);
                        return -ENOMEM;
                }
                if (json_add(o, "BindOptions", opt) < 0 || json_add_str(o, "Type", "bind") < 0 ||
                    json_add_str(o, "Source", src) < 0 || json_add_str(o, "Target", dst) < 0 ||
                    json_add(o, "ReadOnly", json_object_new_boolean(1)) < 0 ||
                    json_object_array_add(a, o) < 0) {
                        json_put(o);
                        return -ENOMEM;
                }
        }
        return 0;
}

static int to_string(struct json_object *o, char **ret)
{
        const char *s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
                                                              JSON_C_TO_STRING_NOSLASHESCAPE);

        *ret = s ? strdup(s) : NULL;
        return *ret ? 0 : -ENOMEM;
}

/* The container's pids limit. A gVisor sandbox (the runtimes whose agent
 * dials, config_runtime_dials) is one host cgroup for its sentry, gofer
 * and, on the ptrace platform of Debian 12's runsc, host processes with
 * threads of their own for every address space it runs: measured, 16 shell
 * loops took 1,089 host pids, 4 took 193. The sentry dies when it cannot
 * make one ("error initializing first thread"), and with it the sandbox
 * (Failed, exit 2), so gVisor gets DOCKER_GVISOR_PIDS_FACTOR times the
 * limit: still a bound on the host, and what a fork bomb inside reaches
 * (docs/OPERATIONS.md, "gVisor"). */
static int64_t host_pids(const struct sandbox_spec *spec)
{
        return spec->agent_dials ? spec->limits.pids * DOCKER_GVISOR_PIDS_FACTOR : spec->limits.pids;
}

static int host_config(const struct sandbox_spec *spec, bool agent, struct json_object **ret)
{
        const struct sandbox_limits *l = &spec->limits;
        struct json_object *h = json_object_new_object();
        int r = -ENOMEM;

        if (!h)
                goto out;
        if (l->nano_cpus > 0 && (r = json_add(h, "NanoCpus", json_object_new_int64(l->nano_cpus))) < 0)
                goto out;
        if (l->memory_bytes > 0) {
                /* MemorySwap == Memory: no swap on top of the memory limit. */
                if ((r = json_add(h, "Memory", json_object_new_int64(l->memory_bytes))) < 0 ||
                    (r = json_add(h, "MemorySwap", json_object_new_int64(l->memory_bytes))) < 0)
                        goto out;
        }
        if (l->pids > 0 && (r = json_add(h, "PidsLimit", json_object_new_int64(host_pids(spec)))) < 0)
                goto out;
        if ((r = json_add(h, "CapDrop", str_array((const char *const[]){ "ALL", NULL }))) < 0 ||
            (r = json_add(h, "CapAdd", str_array(docker_cap_add))) < 0 ||
            (r = json_add(h, "SecurityOpt",
                     str_array((const char *const[]){ "no-new-privileges", NULL }))) < 0 ||
            (r = json_add_str(h, "NetworkMode", spec->network ? spec->network : "none")) < 0 ||
            /* sandbox-runc (runtime/sandbox-runc.c) mounts /proc hidepid=invisible */
            (spec->runtime && spec->runtime[0] &&
             (r = json_add_str(h, "Runtime", spec->runtime)) < 0) ||
            (r = json_add(h, "Privileged", json_object_new_boolean(0))) < 0 ||
            (r = json_add(h, "ReadonlyRootfs", json_object_new_boolean(0))) < 0 ||
            /* A PID 1 that reaps the zombies commands leave behind and
             * forwards SIGTERM, so stop does not wait out the grace period
             * on a PID-1 `sleep` that ignores it: sandbox-agent, or else
             * docker-init (tini). */
            (r = json_add(h, "Init", json_object_new_boolean(!agent))) < 0)
                goto out;
        if ((r = json_add(h, "LogConfig", log_config())) < 0)
                goto out;
        if (spec->n_mounts && (r = json_add(h, "Mounts", mounts_json(spec))) < 0)
                goto out;
        r = 0;
out:
        if (r < 0) {
                json_put(h);
                h = NULL;
        }
        *ret = h;
        return r;
}

/* Add kv ("K=V") to the array env unless it sets K already: the sandbox's
 * own setting wins. */
static int env_default(struct json_object *env, const char *kv)
{
        size_t k = strcspn(kv, "=") + 1;
        struct json_object *v;

        for (size_t j = 0; j < json_object_array_length(env); j++) {
                const char *e = json_object_get_string(json_object_array_get_idx(env, j));
                if (e && !strncmp(e, kv, k))
                        return 0;
        }
        v = json_object_new_string(kv);
        if (!v || json_object_array_add(env, v) < 0) {
                json_put(v);
                return -ENOMEM;
        }
        return 0;
}

/* The agent's argv: its transport, extra (spec->agent_args, may be NULL),
 * "--"; malloc'd, NULL-terminated. */
static const char **agent_argv(const struct docker_agent_mount *a, const char *const *extra)
{
        size_t n = 0, i = 0;
        const char **v;

        while (extra && extra[n])
                n++;
        v = calloc(n + 5, sizeof(*v));
        if (!v)
                return NULL;
        v[i++] = DOCKER_AGENT_BIN_IN;
        v[i++] = a->dials ? "--dial" : "--socket";
        v[i++] = a->dials ? DOCKER_AGENT_DIAL_IN : DOCKER_AGENT_SOCK_IN;
        for (size_t j = 0; j < n; j++)
                v[i++] = extra[j];
        v[i] = "--";
        return v;
}

/* The agent as PID 1: its binary and run directory mounted, the sandbox's
 * own command (or none: the agent alone keeps it alive) after "--". */
static int agent_config(struct json_object *o, struct json_object *h, const struct docker_agent_mount *a,
                        const char *const *extra)
{
        const char **entry = agent_argv(a, extra);
        static const char *const proxy_env[] = {
                "HTTP_PROXY=" DOCKER_EGRESS_PROXY, "HTTPS_PROXY=" DOCKER_EGRESS_PROXY,
                "http_proxy=" DOCKER_EGRESS_PROXY, "https_proxy=" DOCKER_EGRESS_PROXY,
                "NO_PROXY=localhost,127.0.0.1",    "no_proxy=localhost,127.0.0.1",
        };
        char bin[sizeof(a->bin) + 64], run[sizeof(a->source) + 64];
        struct json_object *env = NULL;
        int r;

        char egress[sizeof(a->egress) + 64];
        snprintf(bin, sizeof(bin), "%s:%s:ro", a->bin, DOCKER_AGENT_BIN_IN);
        /* a dialing agent binds nothing: its run directory holds the
         * relay's sockets, which the sandbox must not replace */
        snprintf(run, sizeof(run), "%s:%s:%s", a->source, DOCKER_AGENT_RUN_IN, a->dials ? "ro" : "rw");
        /* egress (docs/EGRESS.md): read-only, so that the sandbox cannot
         * replace the socket the host relay listens on */
        snprintf(egress, sizeof(egress), "%s:%s:ro", a->egress, DOCKER_EGRESS_DIR_IN);
        if (!entry)
                return -ENOMEM;
        r = json_add(o, "Entrypoint", str_array(entry));
        free(entry);
        if (r < 0 ||
            (r = json_add(h, "Binds", str_array((const char *const[]){ bin, run,
                                                                       a->egress[0] ? egress : NULL,
                                                                       NULL }))) < 0)
                return r;
        if (a->etc[0] && (r = etc_mounts(h, a->etc)) < 0)
                return r;
        if (!json_object_object_get_ex(o, "Env", &env) || !json_object_is_type(env, json_type_array))
                return -EINVAL;
        for (size_t i = 0; a->egress[0] && i < sizeof(proxy_env) / sizeof(proxy_env[0]); i++)
                if ((r = env_default(env, proxy_env[i])) < 0)
                        return r;
        /* the SDK's set_env appends to the file EXECD_ENVS names; the agent
         * loads it for every user command (docs/EXECD.md) */
        if (a->env_file && (r = env_default(env, "EXECD_ENVS=" DOCKER_AGENT_ENV_FILE)) < 0)
                return r;
        return 0;
}

int docker_json_create_body(const struct sandbox_spec *spec, const struct docker_agent_mount *agent,
                            char **ret)
{
        struct json_object *o = NULL, *labels = NULL, *h = NULL;
        int r = -EINVAL;

        *ret = NULL;
        if (!spec->image || !spec->image[0] || !spec->sandbox_id || !spec->sandbox_id[0])
                goto out;
        r = -ENOMEM;
        o = json_object_new_object();
        if (!o)
                goto out;
        if ((r = json_add_str(o, "Image", spec->image)) < 0 ||
            /* Imported images have no CMD: always pass one (the agent
             * needs none: it keeps the sandbox alive by itself). */
            (r = json_add(o, "Cmd", str_array(spec->entrypoint ? spec->entrypoint :
                                              agent ? (const char *const[]){ NULL } : keepalive_cmd))) < 0 ||
            (r = json_add(o, "Env", str_array(spec->env))) < 0 ||
            (r = json_add(o, "Tty", json_object_new_boolean(0))) < 0 ||
            (r = json_add(o, "OpenStdin", json_object_new_boolean(0))) < 0)
                goto out;
        if (spec->workdir && spec->workdir[0] && (r = json_add_str(o, "WorkingDir", spec->workdir)) < 0)
                goto out;
        labels = json_object_new_object();
        if (!labels) {
                r = -ENOMEM;
                goto out;
        }
        if ((r = json_add_str(labels, PROVIDER_LABEL_MANAGED, "1")) < 0 ||
            (r = json_add_str(labels, PROVIDER_LABEL_SANDBOX, spec->sandbox_id)) < 0 ||
            (r = json_add_str(labels, PROVIDER_LABEL_PREFIX, spec->key_prefix ? spec->key_prefix : "")) < 0 ||
            (agent && (r = json_add_str(labels, PROVIDER_LABEL_AGENT, agent->dials ? "dial" : "1")) < 0))
                goto out;
        if (spec->limits.disk_mb > 0) {
                char mb[24];

                snprintf(mb, sizeof(mb), "%lld", (long long)spec->limits.disk_mb);
                if ((r = json_add_str(labels, PROVIDER_LABEL_DISK, mb)) < 0)
                        goto out;
        }
        r = json_add(o, "Labels", labels);
        labels = NULL; /* owned by o, even on failure (add puts it) */
        if (r < 0)
                goto out;
        if ((r = host_config(spec, agent != NULL, &h)) < 0 ||
            (agent && (r = agent_config(o, h, agent, spec->agent_args)) < 0)) {
                json_put(h);
                goto out;
        }
        r = json_add(o, "HostConfig", h);
        if (r < 0)
                goto out;
        r = to_string(o, ret);
out:
        json_put(labels);
        json_put(o);
        return r;
}

int docker_json_exec_body(const char *const *argv, const char *const *env, const char *cwd,
                          const char *user, char **ret)
{
        struct json_object *o = NULL;
        int r = -EINVAL;

        *ret = NULL;
        if (!argv || !argv[0])
                goto out;
        r = -ENOMEM;
        o = json_object_new_object();
        if (!o)
                goto out;
        if ((r = json_add(o, "AttachStdin", json_object_new_boolean(0))) < 0 ||
            (r = json_add(o, "AttachStdout", json_object_new_boolean(1))) < 0 ||
            (r = json_add(o, "AttachStderr", json_object_new_boolean(1))) < 0 ||
            (r = json_add(o, "Tty", json_object_new_boolean(0))) < 0 ||
            (r = json_add(o, "Cmd", str_array(argv))) < 0)
                goto out;
        if (env && (r = json_add(o, "Env", str_array(env))) < 0)
                goto out;
        if (cwd && cwd[0] && (r = json_add_str(o, "WorkingDir", cwd)) < 0)
                goto out;
        if (user && user[0] && (r = json_add_str(o, "User", user)) < 0)
                goto out;
        r = to_string(o, ret);
out:
        json_put(o);
        return r;
}

static void copy(char *dst, size_t size, const char *src)
{
        snprintf(dst, size, "%s", src ? src : "");
}

int docker_json_parse_id(const char *body, char *ret_id, size_t size)
{
        struct json_object *o = json_parse_or_null(body);
        const char *id = json_get_str(o, "Id");
        int r = -EPROTO;

        if (id && id[0] && strlen(id) < size) {
                copy(ret_id, size, id);
                r = 0;
        }
        json_put(o);
        return r;
}

enum sandbox_run_state docker_json_state(const char *status)
{
        if (!status)
                return SANDBOX_RUN_MISSING;
        if (strcmp(status, "created") == 0)
                return SANDBOX_RUN_CREATED;
        if (strcmp(status, "running") == 0 || strcmp(status, "restarting") == 0)
                return SANDBOX_RUN_RUNNING;
        if (strcmp(status, "paused") == 0)
                return SANDBOX_RUN_PAUSED;
        /* exited, dead, removing: not usable any more */
        return SANDBOX_RUN_EXITED;
}

static void info_fill(struct sandbox_info *info, const char *id, const char *status,
                      struct json_object *labels)
{
        memset(info, 0, sizeof(*info));
        info->state = docker_json_state(status);
        copy(info->ref, sizeof(info->ref), id);
        copy(info->sandbox_id, sizeof(info->sandbox_id), json_get_str(labels, PROVIDER_LABEL_SANDBOX));
        copy(info->prefix, sizeof(info->prefix), json_get_str(labels, PROVIDER_LABEL_PREFIX));
        const char *agent = labels ? json_get_str(labels, PROVIDER_LABEL_AGENT) : NULL;

        info->agent_dials = agent && !strcmp(agent, "dial");
        info->agent = agent && (!strcmp(agent, "1") || info->agent_dials);
}

int docker_json_parse_inspect(const char *body, struct sandbox_info *ret)
{
        struct json_object *o = json_parse_or_null(body), *state = NULL, *config = NULL, *labels = NULL;
        const char *id = json_get_str(o, "Id");
        int r = -EPROTO;

        if (!id || !json_object_object_get_ex(o, "State", &state))
                goto out;
        if (json_object_object_get_ex(o, "Config", &config))
                json_object_object_get_ex(config, "Labels", &labels);
        info_fill(ret, id, json_get_str(state, "Status"), labels);
        {
                struct json_object *code = NULL;
                ret->exit_code = json_object_object_get_ex(state, "ExitCode", &code) &&
                                                 json_object_is_type(code, json_type_int) ?
                                         json_object_get_int(code) : -1;
        }
        {
                struct json_object *oom = NULL;
                ret->oom_killed = json_object_object_get_ex(state, "OOMKilled", &oom) &&
                                  json_object_is_type(oom, json_type_boolean) &&
                                  json_object_get_boolean(oom);
        }
        r = 0;
out:
        json_put(o);
        return r;
}

int docker_json_parse_disk(const char *body, struct docker_disk_info *ret)
{
        struct json_object *o = json_parse_or_null(body), *config = NULL, *labels = NULL, *gd = NULL,
                           *data = NULL;
        const char *mb, *upper, *work;
        int r = -EPROTO;

        memset(ret, 0, sizeof(*ret));
        if (!json_get_str(o, "Id"))
                goto out;
        if (json_object_object_get_ex(o, "Config", &config))
                json_object_object_get_ex(config, "Labels", &labels);
        copy(ret->sandbox_id, sizeof(ret->sandbox_id), json_get_str(labels, PROVIDER_LABEL_SANDBOX));
        mb = json_get_str(labels, PROVIDER_LABEL_DISK);
        if (mb) {
                char *end;
                long long v = strtoll(mb, &end, 10);

                ret->disk_mb = end != mb && !*end && v > 0 ? v : 0;
        }
        if (json_object_object_get_ex(o, "GraphDriver", &gd)) {
                copy(ret->driver, sizeof(ret->driver), json_get_str(gd, "Name"));
                json_object_object_get_ex(gd, "Data", &data);
        }
        /* overlay2: <root>/overlay2/<layer>/diff and .../<layer>/work */
        upper = json_get_str(data, "UpperDir");
        work = json_get_str(data, "WorkDir");
        if (!strcmp(ret->driver, "overlay2") && upper && work) {
                size_t n = strlen(upper);
                const char *id = n >= 79 ? upper + n - 69 : NULL;

                if (id && !strncmp(id - 10, "/overlay2/", 10) && !strcmp(id + 64, "/diff") &&
                    strspn(id, "0123456789abcdef") == 64 && strlen(work) == n &&
                    !strncmp(work, upper, n - 4) && !strcmp(work + n - 4, "work")) {
                        memcpy(ret->layer, id, 64);
                        ret->layer[64] = '\0';
                }
        }
        r = 0;
out:
        json_put(o);
        return r;
}

int docker_json_parse_list(const char *body, void (*fn)(void *ud, const struct sandbox_info *info),
                           void *ud)
{
        struct json_object *o = json_parse_or_null(body);
        int r = -EPROTO;

        if (!o || !json_object_is_type(o, json_type_array))
                goto out;
        for (size_t i = 0; i < json_object_array_length(o); i++) {
                struct json_object *c = json_object_array_get_idx(o, i), *labels = NULL;
                struct sandbox_info info;
                const char *id = json_get_str(c, "Id");

                if (!id)
                        continue;
                json_object_object_get_ex(c, "Labels", &labels);
                info_fill(&info, id, json_get_str(c, "State"), labels);
                fn(ud, &info);
        }
        r = 0;
out:
        json_put(o);
        return r;
}

int docker_json_parse_exec_inspect(const char *body, bool *ret_running, int *ret_exit_code)
{
        struct json_object *o = json_parse_or_null(body), *v;
        int r = -EPROTO;

        if (!o || !json_object_is_type(o, json_type_object))
                goto out;
        *ret_running = json_object_object_get_ex(o, "Running", &v) && json_object_get_boolean(v);
        *ret_exit_code = json_object_object_get_ex(o, "ExitCode", &v) &&
                                         json_object_is_type(v, json_type_int)
                                 ? json_object_get_int(v)
                                 : -1;
        r = 0;
out:
        json_put(o);
        return r;
}

void docker_json_error_message(const char *what, long status, const char *body, char *ret_err)
{
        struct json_object *o;
        const char *msg;

        if (!ret_err)
                return;
        o = json_parse_or_null(body);
        msg = json_get_str(o, "message");
        if (msg)
                snprintf(ret_err, PROVIDER_ERR_MAX, "docker: %s: %s", what, msg);
        else
                snprintf(ret_err, PROVIDER_ERR_MAX, "docker: %s: HTTP %ld%s%.120s", what, status,
                         body && body[0] ? ": " : "", body ? body : "");
        json_put(o);
}

static const struct {
        const char *action;
        enum sandbox_event_kind kind;
        enum sandbox_run_state state;
} event_actions[] = {
        { "die", SANDBOX_EVENT_EXITED, SANDBOX_RUN_EXITED },
        { "pause", SANDBOX_EVENT_PAUSED, SANDBOX_RUN_PAUSED },
        { "unpause", SANDBOX_EVENT_UNPAUSED, SANDBOX_RUN_RUNNING },
        { "oom", SANDBOX_EVENT_OOM, SANDBOX_RUN_RUNNING },
};

int docker_json_parse_event(const char *line, size_t len, struct sandbox_event *ret)
{
        struct json_tokener *tok = json_tokener_new_ex(8);
        struct json_object *o = NULL, *actor = NULL, *attrs = NULL;
        const char *type, *action, *id, *code;
        size_t a;
        int r = -EPROTO;

        memset(ret, 0, sizeof(*ret));
        if (!tok)
                return -ENOMEM;
        if (len > 0 && len <= INT32_MAX)
                o = json_tokener_parse_ex(tok, line, (int)len);
        if (!o || json_tokener_get_error(tok) != json_tokener_success ||
            !json_object_is_type(o, json_type_object))
                goto out;
        type = json_get_str(o, "Type");
        action = json_get_str(o, "Action");
        r = 0;
        if (!type || !action || strcmp(type, "container"))
                goto out;
        for (a = 0; a < sizeof(event_actions) / sizeof(event_actions[0]); a++)
                if (!strcmp(action, event_actions[a].action))
                        break;
        if (a == sizeof(event_actions) / sizeof(event_actions[0]))
                goto out;
        r = -EPROTO;
        if (!json_object_object_get_ex(o, "Actor", &actor) ||
            !json_object_object_get_ex(actor, "Attributes", &attrs) ||
            !(id = json_get_str(actor, "ID")))
                goto out;
        info_fill(&ret->info, id, "", attrs);
        ret->kind = event_actions[a].kind;
        ret->info.state = event_actions[a].state;
        ret->info.exit_code = -1;
        code = json_get_str(attrs, "exitCode");
        /* at most 3 digits: an exit status is 0..255 */
        if (ret->kind == SANDBOX_EVENT_EXITED && code && code[0] && strlen(code) <= 3 &&
            strspn(code, "0123456789") == strlen(code))
                ret->info.exit_code = atoi(code);
        r = 1;
out:
        json_put(o);
        json_tokener_free(tok);
        return r;
}

int docker_json_volume_create_body(const struct volume_info *v, char **ret)
{
        struct json_object *o = json_object_new_object(), *labels = json_object_new_object();
        int r = -ENOMEM;

        *ret = NULL;
        if (!o || !labels)
                goto out;
        if (json_add_str(labels, PROVIDER_LABEL_MANAGED, "1") < 0 ||
            json_add_str(labels, PROVIDER_LABEL_PREFIX, v->prefix) < 0 ||
            json_add_str(labels, PROVIDER_LABEL_TENANT, v->tenant) < 0 ||
            json_add_str(labels, PROVIDER_LABEL_VOLUME, v->volume) < 0 ||
            json_add_str(labels, PROVIDER_LABEL_SANDBOX, v->sandbox_id) < 0)
                goto out;
        if (json_add_str(o, "Name", v->name) < 0 || json_add_str(o, "Driver", "local") < 0)
                goto out;
        r = json_add(o, "Labels", labels);
        labels = NULL; /* owned by o, even on failure */
        if (r == 0)
                r = to_string(o, ret);
out:
        json_put(labels);
        json_put(o);
        return r;
}

static int volume_fill(struct json_object *o, struct volume_info *v)
{
        struct json_object *labels = NULL;
        const char *name = json_get_str(o, "Name"), *m;

        memset(v, 0, sizeof(*v));
        if (!name || !name[0] || strlen(name) >= sizeof(v->name))
                return -EPROTO;
        copy(v->name, sizeof(v->name), name);
        copy(v->created_at, sizeof(v->created_at), json_get_str(o, "CreatedAt"));
        json_object_object_get_ex(o, "Labels", &labels);
        if (!labels || !json_object_is_type(labels, json_type_object))
                return 0;
        copy(v->prefix, sizeof(v->prefix), json_get_str(labels, PROVIDER_LABEL_PREFIX));
        copy(v->tenant, sizeof(v->tenant), json_get_str(labels, PROVIDER_LABEL_TENANT));
        copy(v->volume, sizeof(v->volume), json_get_str(labels, PROVIDER_LABEL_VOLUME));
        copy(v->sandbox_id, sizeof(v->sandbox_id), json_get_str(labels, PROVIDER_LABEL_SANDBOX));
        m = json_get_str(labels, PROVIDER_LABEL_MANAGED);
        v->managed = m && strcmp(m, "1") == 0;
        return 0;
}

int docker_json_parse_volume(const char *body, struct volume_info *ret)
{
        struct json_object *o = json_parse_or_null(body);
        int r = o && json_object_is_type(o, json_type_object) ? volume_fill(o, ret) : -EPROTO;

        json_put(o);
        return r;
}

int docker_json_parse_volumes(const char *body, void (*fn)(void *ud, const struct volume_info *v),
                              void *ud)
{
        struct json_object *o = json_parse_or_null(body), *a = NULL;
        struct volume_info v;
        int r = -EPROTO;

        if (!o || !json_object_object_get_ex(o, "Volumes", &a))
                goto out;
        r = 0;
        if (json_object_is_type(a, json_type_null))
                goto out; /* no volumes at all */
        if (!json_object_is_type(a, json_type_array)) {
                r = -EPROTO;
                goto out;
        }
        for (size_t i = 0; i < json_object_array_length(a); i++) {
                struct json_object *e = json_object_array_get_idx(a, i);
                if (json_object_is_type(e, json_type_object) && volume_fill(e, &v) == 0)
                        fn(ud, &v);
        }
out:
        json_put(o);
        return r;
}

int docker_json_parse_images(const char *body, void (*fn)(void *ud, const struct snapshot_image *im),
                             void *ud)
{
        struct json_object *a = json_parse_or_null(body);
        int r = -EPROTO;

        if (!a || !json_object_is_type(a, json_type_array))
                goto out;
        for (size_t i = 0; i < json_object_array_length(a); i++) {
                struct json_object *e = json_object_array_get_idx(a, i), *labels = NULL, *tags = NULL;
                struct snapshot_image im = { 0 };
                const char *id;

                if (!json_object_is_type(e, json_type_object))
                        continue;
                id = json_get_str(e, "Id");
                if (!id || !id[0] || strlen(id) >= sizeof(im.id))
                        continue;
                copy(im.id, sizeof(im.id), id);
                /* RepoTags: null, [] or ["<none>:<none>"] when untagged */
                if (json_object_object_get_ex(e, "RepoTags", &tags) &&
                    json_object_is_type(tags, json_type_array))
                        for (size_t t = 0; t < json_object_array_length(tags); t++) {
                                struct json_object *tag = json_object_array_get_idx(tags, t);
                                const char *v = json_object_is_type(tag, json_type_string)
                                                        ? json_object_get_string(tag) : "?";
                                if (strcmp(v, "<none>:<none>") == 0)
                                        continue;
                                if (im.names++ == 0 && strlen(v) < sizeof(im.name))
                                        copy(im.name, sizeof(im.name), v);
                        }
                if (im.names != 1)
                        im.name[0] = '\0';
                if (json_object_object_get_ex(e, "Labels", &labels) &&
                    json_object_is_type(labels, json_type_object)) {
                        const char *v = json_get_str(labels, PROVIDER_LABEL_SNAPSHOT);
                        if (v && strlen(v) < sizeof(im.snapshot_id))
                                copy(im.snapshot_id, sizeof(im.snapshot_id), v);
                        v = json_get_str(labels, PROVIDER_LABEL_PREFIX);
                        if (v && strlen(v) < sizeof(im.prefix))
                                copy(im.prefix, sizeof(im.prefix), v);
                }
                fn(ud, &im);
        }
        r = 0;
out:
        json_put(a);
        return r;
}
