/* kubernetes_json: see kubernetes_json.h. */
#include "providers/kubernetes/kubernetes_json.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/digest.h"
#include "providers/docker/docker_json.h"
#include "core/json_input.h"

#define PARSE_DEPTH 32 /* a Pod nests ~8 deep */
#define LABEL_VALUE_MAX 63
#define OUR_LABEL "io.sandbox-broker."

static const char *const keepalive_cmd[] = { "sleep", "infinity", NULL };

int k8s_label_key(const char *provider_label, char *buf, size_t size)
{
        size_t n = sizeof(OUR_LABEL) - 1;

        if (strncmp(provider_label, OUR_LABEL, n) != 0 || !provider_label[n])
                return -EINVAL;
        if ((size_t)snprintf(buf, size, K8S_LABEL_DOMAIN "%s", provider_label + n) >= size)
                return -ENAMETOOLONG;
        return 0;
}

static bool alnum(char c)
{
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

bool k8s_label_value_valid(const char *s)
{
        size_t n = strlen(s);

        if (n == 0)
                return true;
        if (n > LABEL_VALUE_MAX || !alnum(s[0]) || !alnum(s[n - 1]))
                return false;
        for (size_t i = 0; i < n; i++)
                if (!alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
                        return false;
        return true;
}

int k8s_prefix_hash(const char *prefix, char *buf, size_t size)
{
        char hex[DIGEST_HEX_MAX];
        int r = digest_sha256_hex(prefix, strlen(prefix), hex);

        if (r < 0)
                return r;
        if ((size_t)snprintf(buf, size, "p%.32s", hex) >= size)
                return -ENAMETOOLONG;
        return 0;
}

int k8s_pod_name(const char *sandbox_id, char *buf, size_t size)
{
        size_t n = sandbox_id ? strlen(sandbox_id) : 0;

        if (n == 0)
                return -EINVAL;
        if (n > 60 || size < n + 4)
                return -ENAMETOOLONG;
        memcpy(buf, "sb-", 3);
        for (size_t i = 0; i < n; i++) {
                char c = sandbox_id[i];

                if (c >= 'A' && c <= 'Z')
                        c = (char)(c - 'A' + 'a');
                buf[3 + i] = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ? c : '-';
        }
        if (buf[3 + n - 1] == '-')
                buf[3 + n - 1] = 'x';
        buf[3 + n] = '\0';
        return 0;
}

/* ---- the manifest ---- */

static struct json_object *str_array(const char *const *v)
{
        struct json_object *a = json_object_new_array();

        for (; a && v && *v; v++) {
                struct json_object *s = json_object_new_string(*v);

                if (!s || json_object_array_add(a, s) < 0) {
                        json_put(s);
                        json_put(a);
                        return NULL;
                }
        }
        return a;
}

static int array_add(struct json_object *a, struct json_object *v)
{
        if (!v)
                return -ENOMEM;
        if (json_object_array_add(a, v) < 0) {
                json_put(v);
                return -ENOMEM;
        }
        return 0;
}

static int env_add(struct json_object *env, const char *name, size_t name_len, const char *value)
{
        struct json_object *e = json_object_new_object();
        int r;

        if (!e)
                return -ENOMEM;
        if ((r = json_add(e, "name", json_object_new_string_len(name, (int)name_len))) < 0 ||
            (r = json_add_str(e, "value", value)) < 0) {
                json_put(e);
                return r;
        }
        return array_add(env, e);
}

/* spec->env as [{name, value}]; a user's SANDBOX_AGENT_KEY is dropped (the
 * key is ours). */
static int env_array(const struct sandbox_spec *spec, const struct k8s_pod_opts *o,
                     struct json_object **ret)
{
        struct json_object *env = json_object_new_array();
        int r = -ENOMEM;

        if (!env)
                goto out;
        for (const char *const *e = spec->env; e && *e; e++) {
                const char *eq = strchr(*e, '=');

                if (!eq || eq == *e) {
                        r = -EINVAL;
                        goto out;
                }
                if ((size_t)(eq - *e) == sizeof(K8S_AGENT_ENV) - 1 &&
                    strncmp(*e, K8S_AGENT_ENV, sizeof(K8S_AGENT_ENV) - 1) == 0)
                        continue;
                if ((r = env_add(env, *e, (size_t)(eq - *e), eq + 1)) < 0)
                        goto out;
        }
        if (o->agent && (r = env_add(env, K8S_AGENT_ENV, sizeof(K8S_AGENT_ENV) - 1, o->agent_key)) < 0)
                goto out;
        r = 0;
out:
        if (r < 0) {
                json_put(env);
                env = NULL;
        }
        *ret = env;
        return r;
}

/* The main container's command: the agent, which runs the entrypoint (or
 * keeps the pod alive alone), or without the agent the entrypoint or a
 * keep-alive. */
static struct json_object *command(const struct sandbox_spec *spec, const struct k8s_pod_opts *o)
{
        struct json_object *a;
        char listen[32];

        if (!o->agent)
                return str_array(spec->entrypoint ? spec->entrypoint : keepalive_cmd);
        snprintf(listen, sizeof(listen), "0.0.0.0:%d", o->agent_port);
        a = str_array((const char *const[]){ K8S_AGENT_BIN, "--listen-tcp", listen, "--key-env",
                                             K8S_AGENT_ENV, "--", NULL });
        for (const char *const *e = spec->entrypoint; a && e && *e; e++)
                if (array_add(a, json_object_new_string(*e)) < 0) {
                        json_put(a);
                        return NULL;
                }
        return a;
}

/* Capabilities as the Docker provider's (docker_cap_add), no escalation. */
static struct json_object *security_context(void)
{
        struct json_object *sc = json_object_new_object(), *caps = json_object_new_object();

        if (!sc || !caps ||
            json_add(caps, "drop", str_array((const char *const[]){ "ALL", NULL })) < 0 ||
            json_add(caps, "add", str_array(docker_cap_add)) < 0) {
                json_put(sc);
                json_put(caps);
                return NULL;
        }
        if (json_add(sc, "capabilities", caps) < 0 ||
            json_add(sc, "allowPrivilegeEscalation", json_object_new_boolean(0)) < 0) {
                json_put(sc);
                return NULL;
        }
        return sc;
}

/* limits cpu (millicores), memory (bytes), ephemeral-storage (disk_mb);
 * requests: memory as its limit (never overcommitted), cpu a tenth of its
 * limit (a sandbox idles most of its life), ephemeral-storage none. */
static struct json_object *resources(const struct sandbox_limits *l)
{
        struct json_object *res = json_object_new_object(), *lim = json_object_new_object(),
                           *req = json_object_new_object();
        char v[32];
        int r = 0;

        if (!res || !lim || !req) {
                r = -ENOMEM;
                goto out;
        }
        if (l->nano_cpus > 0) {
                int64_t m = (l->nano_cpus + 999999) / 1000000;

                snprintf(v, sizeof(v), "%lldm", (long long)m);
                r = json_add_str(lim, "cpu", v);
                snprintf(v, sizeof(v), "%lldm", (long long)(m / 10 > 0 ? m / 10 : 1));
                if (r == 0)
                        r = json_add_str(req, "cpu", v);
        }
        if (r == 0 && l->memory_bytes > 0) {
                snprintf(v, sizeof(v), "%lld", (long long)l->memory_bytes);
                r = json_add_str(lim, "memory", v);
                if (r == 0)
                        r = json_add_str(req, "memory", v);
        }
        if (r == 0 && l->disk_mb > 0) {
                snprintf(v, sizeof(v), "%lldMi", (long long)l->disk_mb);
                r = json_add_str(lim, "ephemeral-storage", v);
        }
        if (r == 0 && (r = json_add(res, "limits", lim)) == 0) {
                lim = NULL;
                if ((r = json_add(res, "requests", req)) == 0)
                        req = NULL;
        } else {
                lim = NULL; /* json_add released it */
        }
out:
        json_put(lim);
        json_put(req);
        if (r < 0) {
                json_put(res);
                return NULL;
        }
        return res;
}

static struct json_object *volume_mount(bool read_only)
{
        struct json_object *m = json_object_new_object();

        if (!m || json_add_str(m, "name", "sandbox-agent") < 0 ||
            json_add_str(m, "mountPath", K8S_AGENT_BIN_DIR) < 0 ||
            json_add(m, "readOnly", json_object_new_boolean(read_only)) < 0) {
                json_put(m);
                return NULL;
        }
        return m;
}

static int labels_and_annotations(const struct sandbox_spec *spec, const struct k8s_pod_opts *o,
                                  struct json_object *meta)
{
        struct json_object *labels = json_object_new_object(), *ann = json_object_new_object();
        char key[96], hash[40];
        int r;

        if (!labels || !ann) {
                json_put(labels);
                json_put(ann);
                return -ENOMEM;
        }
        if ((r = json_add(meta, "labels", labels)) < 0) {
                json_put(ann);
                return r;
        }
        if ((r = json_add(meta, "annotations", ann)) < 0)
                return r;
        if ((r = k8s_label_key(PROVIDER_LABEL_MANAGED, key, sizeof(key))) < 0 ||
            (r = json_add_str(labels, key, "1")) < 0 ||
            (r = k8s_label_key(PROVIDER_LABEL_AGENT, key, sizeof(key))) < 0 ||
            (r = json_add_str(labels, key, o->agent ? "1" : "0")) < 0 ||
            (r = k8s_prefix_hash(spec->key_prefix ? spec->key_prefix : "", hash, sizeof(hash))) < 0 ||
            (r = json_add_str(labels, K8S_LABEL_PREFIX_HASH, hash)) < 0 ||
            (r = k8s_label_key(PROVIDER_LABEL_SANDBOX, key, sizeof(key))) < 0)
                return r;
        if (k8s_label_value_valid(spec->sandbox_id) &&
            (r = json_add_str(labels, key, spec->sandbox_id)) < 0)
                return r;
        if ((r = json_add_str(ann, key, spec->sandbox_id)) < 0 ||
            (r = k8s_label_key(PROVIDER_LABEL_PREFIX, key, sizeof(key))) < 0 ||
            (r = json_add_str(ann, key, spec->key_prefix ? spec->key_prefix : "")) < 0)
                return r;
        if (spec->limits.disk_mb > 0) {
                char v[24];

                snprintf(v, sizeof(v), "%lld", (long long)spec->limits.disk_mb);
                if ((r = k8s_label_key(PROVIDER_LABEL_DISK, key, sizeof(key))) < 0 ||
                    (r = json_add_str(labels, key, v)) < 0)
                        return r;
        }
        return 0;
}

static bool hex_key(const char *k)
{
        if (!k || strlen(k) != K8S_AGENT_KEY_HEX)
                return false;
        for (; *k; k++)
                if (!((*k >= '0' && *k <= '9') || (*k >= 'a' && *k <= 'f')))
                        return false;
        return true;
}

static int init_container(const struct k8s_pod_opts *o, struct json_object *spec_o)
{
        struct json_object *inits = json_object_new_array(), *c = json_object_new_object(),
                           *mounts = json_object_new_array();
        int r;

        if (!inits || !c || !mounts) {
                json_put(inits);
                json_put(c);
                json_put(mounts);
                return -ENOMEM;
        }
        if ((r = json_add(spec_o, "initContainers", inits)) < 0) {
                json_put(c);
                json_put(mounts);
                return r;
        }
        if ((r = array_add(inits, c)) < 0) {
                json_put(mounts);
                return r;
        }
        if ((r = json_add(c, "volumeMounts", mounts)) < 0 ||
            (r = array_add(mounts, volume_mount(false))) < 0 ||
            (r = json_add_str(c, "name", "sandbox-agent-install")) < 0 ||
            (r = json_add_str(c, "image", o->agent_image)) < 0 ||
            (r = json_add_str(c, "imagePullPolicy", o->pull_policy)) < 0 ||
            (r = json_add(c, "command",
                          str_array((const char *const[]){ K8S_AGENT_INSTALL, K8S_AGENT_BIN, NULL }))) <
                    0 ||
            (r = json_add(c, "securityContext", security_context())) < 0)
                return r;
        return json_add(c, "resources",
                        resources(&(struct sandbox_limits){ .nano_cpus = 100000000,
                                                            .memory_bytes = 32 << 20 }));
}

int k8s_json_pod_manifest(const struct sandbox_spec *spec, const struct k8s_pod_opts *o, char **ret)
{
        struct json_object *pod = NULL, *meta, *ps, *c, *containers, *mounts, *vols, *vol, *ed,
                           *env = NULL;
        char name[K8S_NAME_MAX];
        const char *s;
        int r = -EINVAL;

        *ret = NULL;
        if (!spec->image || !spec->image[0] || !o->pull_policy ||
            (strcmp(o->pull_policy, "Always") && strcmp(o->pull_policy, "IfNotPresent") &&
             strcmp(o->pull_policy, "Never")) ||
            (o->agent && (!o->agent_image || !o->agent_image[0] || !hex_key(o->agent_key) ||
                          o->agent_port < 1 || o->agent_port > 65535)))
                goto out;
        if ((r = k8s_pod_name(spec->sandbox_id, name, sizeof(name))) < 0)
                goto out;
        if ((r = env_array(spec, o, &env)) < 0)
                goto out;
        r = -ENOMEM;
        pod = json_object_new_object();
        meta = json_object_new_object();
        if (!pod || !meta) {
                json_put(meta);
                goto out;
        }
        if ((r = json_add_str(pod, "apiVersion", "v1")) < 0 ||
            (r = json_add_str(pod, "kind", "Pod")) < 0 ||
            (r = json_add(pod, "metadata", meta)) < 0 || (r = json_add_str(meta, "name", name)) < 0 ||
            (r = labels_and_annotations(spec, o, meta)) < 0)
                goto out;
        r = -ENOMEM;
        ps = json_object_new_object();
        if (!ps || (r = json_add(pod, "spec", ps)) < 0)
                goto out;
        if ((r = json_add_str(ps, "restartPolicy", "Never")) < 0 ||
            (r = json_add(ps, "automountServiceAccountToken", json_object_new_boolean(0))) < 0 ||
            (r = json_add(ps, "enableServiceLinks", json_object_new_boolean(0))) < 0 ||
            (r = json_add(ps, "terminationGracePeriodSeconds", json_object_new_int(o->grace_s))) < 0)
                goto out;
        s = spec->runtime;
        if (s && s[0] && (r = json_add_str(ps, "runtimeClassName", s)) < 0)
                goto out;
        if (o->agent && (r = init_container(o, ps)) < 0)
                goto out;
        r = -ENOMEM;
        containers = json_object_new_array();
        if (!containers || (r = json_add(ps, "containers", containers)) < 0)
                goto out;
        c = json_object_new_object();
        if ((r = array_add(containers, c)) < 0)
                goto out;
        if ((r = json_add_str(c, "name", K8S_CONTAINER)) < 0 ||
            (r = json_add_str(c, "image", spec->image)) < 0 ||
            (r = json_add_str(c, "imagePullPolicy", o->pull_policy)) < 0 ||
            (r = json_add(c, "command", command(spec, o))) < 0 ||
            (r = json_add(c, "securityContext", security_context())) < 0 ||
            (r = json_add(c, "resources", resources(&spec->limits))) < 0)
                goto out;
        r = json_add(c, "env", env);
        env = NULL;
        if (r < 0)
                goto out;
        if (spec->workdir && spec->workdir[0] &&
            (r = json_add_str(c, "workingDir", spec->workdir)) < 0)
                goto out;
        if (o->agent) {
                r = -ENOMEM;
                mounts = json_object_new_array();
                if (!mounts || (r = json_add(c, "volumeMounts", mounts)) < 0 ||
                    (r = array_add(mounts, volume_mount(true))) < 0)
                        goto out;
                r = -ENOMEM;
                vols = json_object_new_array();
                if (!vols || (r = json_add(ps, "volumes", vols)) < 0)
                        goto out;
                vol = json_object_new_object();
                if ((r = array_add(vols, vol)) < 0 ||
                    (r = json_add_str(vol, "name", "sandbox-agent")) < 0)
                        goto out;
                ed = json_object_new_object();
                if ((r = json_add(vol, "emptyDir", ed)) < 0 ||
                    (r = json_add_str(ed, "sizeLimit", "64Mi")) < 0)
                        goto out;
        }
        s = json_object_to_json_string_ext(pod, JSON_C_TO_STRING_PLAIN);
        *ret = s ? strdup(s) : NULL;
        r = *ret ? 0 : -ENOMEM;
out:
        json_put(env);
        json_put(pod);
        return r;
}

/* ---- parsing ---- */

static struct json_object *parse(const char *body, size_t len)
{
        struct json_tokener *t;
        struct json_object *o;

        if (!body || len == 0 || len > INT32_MAX)
                return NULL;
        t = json_tokener_new_ex(PARSE_DEPTH);
        if (!t)
                return NULL;
        o = json_tokener_parse_ex(t, body, (int)len);
        if (o && json_tokener_get_parse_end(t) < len) {
                /* trailing bytes: only whitespace */
                for (size_t i = json_tokener_get_parse_end(t); i < len; i++)
                        if (body[i] != ' ' && body[i] != '\n' && body[i] != '\r' && body[i] != '\t') {
                                json_put(o);
                                o = NULL;
                                break;
                        }
        }
        json_tokener_free(t);
        if (o && !json_object_is_type(o, json_type_object)) {
                json_put(o);
                o = NULL;
        }
        return o;
}

static struct json_object *get(struct json_object *o, const char *key)
{
        struct json_object *v = NULL;

        if (!o || !json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, key, &v))
                return NULL;
        return v;
}

/* A string member into buf; "" when absent, not a string or too long. */
static void copy_str(struct json_object *o, const char *key, char *buf, size_t size)
{
        const char *s = json_get_str(o, key);

        buf[0] = '\0';
        if (s && strlen(s) < size)
                memcpy(buf, s, strlen(s) + 1);
}

static void main_container_state(struct json_object *cs, struct k8s_pod *ret)
{
        struct json_object *st = get(cs, "state"), *term = get(st, "terminated"),
                           *wait = get(st, "waiting");

        if (term && json_object_is_type(term, json_type_object)) {
                struct json_object *code = get(term, "exitCode");

                ret->terminated = true;
                if (code && json_object_is_type(code, json_type_int)) {
                        int64_t c = json_object_get_int64(code);

                        ret->exit_code = c >= 0 && c <= 255 ? (int)c : -1;
                }
                copy_str(term, "reason", ret->reason, sizeof(ret->reason));
                copy_str(term, "message", ret->message, sizeof(ret->message));
        } else if (wait && json_object_is_type(wait, json_type_object)) {
                copy_str(wait, "reason", ret->reason, sizeof(ret->reason));
                copy_str(wait, "message", ret->message, sizeof(ret->message));
        }
}

/* A waiting init container's reason, when the main one has none. */
static void init_container_state(struct json_object *list, struct k8s_pod *ret)
{
        size_t n;

        if (ret->reason[0] || !list || !json_object_is_type(list, json_type_array))
                return;
        n = json_object_array_length(list);
        for (size_t i = 0; i < n && !ret->reason[0]; i++) {
                struct json_object *wait = get(get(json_object_array_get_idx(list, i), "state"),
                                               "waiting");

                copy_str(wait, "reason", ret->reason, sizeof(ret->reason));
                copy_str(wait, "message", ret->message, sizeof(ret->message));
        }
}

/* The main container's SANDBOX_AGENT_KEY (spec.containers[name=sandbox].env). */
static void agent_key(struct json_object *containers, struct k8s_pod *ret)
{
        size_t n;

        if (!containers || !json_object_is_type(containers, json_type_array))
                return;
        n = json_object_array_length(containers);
        for (size_t i = 0; i < n; i++) {
                struct json_object *c = json_object_array_get_idx(containers, i), *env;
                const char *cn = json_get_str(c, "name");

                if (!cn || strcmp(cn, K8S_CONTAINER))
                        continue;
                env = get(c, "env");
                if (!env || !json_object_is_type(env, json_type_array))
                        return;
                for (size_t j = 0; j < json_object_array_length(env); j++) {
                        struct json_object *e = json_object_array_get_idx(env, j);
                        const char *en = json_get_str(e, "name");

                        if (en && strcmp(en, K8S_AGENT_ENV) == 0) {
                                copy_str(e, "value", ret->agent_key, sizeof(ret->agent_key));
                                if (!hex_key(ret->agent_key))
                                        ret->agent_key[0] = '\0';
                        }
                }
                return;
        }
}

static int pod_from(struct json_object *o, struct k8s_pod *ret)
{
        struct json_object *meta = get(o, "metadata"), *status = get(o, "status"), *labels, *ann,
                           *list;
        char key[96], v[8];
        const char *kind = json_get_str(o, "kind");

        memset(ret, 0, sizeof(*ret));
        ret->exit_code = -1;
        if ((kind && strcmp(kind, "Pod")) || !meta)
                return -EPROTO;
        copy_str(meta, "name", ret->name, sizeof(ret->name));
        copy_str(meta, "resourceVersion", ret->rv, sizeof(ret->rv));
        if (!ret->name[0])
                return -EPROTO;
        ret->deleting = get(meta, "deletionTimestamp") &&
                        !json_object_is_type(get(meta, "deletionTimestamp"), json_type_null);
        labels = get(meta, "labels");
        ann = get(meta, "annotations");
        if (k8s_label_key(PROVIDER_LABEL_MANAGED, key, sizeof(key)) == 0) {
                copy_str(labels, key, v, sizeof(v));
                ret->managed = strcmp(v, "1") == 0;
        }
        if (k8s_label_key(PROVIDER_LABEL_AGENT, key, sizeof(key)) == 0) {
                copy_str(labels, key, v, sizeof(v));
                ret->agent = strcmp(v, "1") == 0;
        }
        if (k8s_label_key(PROVIDER_LABEL_SANDBOX, key, sizeof(key)) == 0)
                copy_str(ann, key, ret->sandbox_id, sizeof(ret->sandbox_id));
        if (k8s_label_key(PROVIDER_LABEL_PREFIX, key, sizeof(key)) == 0)
                copy_str(ann, key, ret->prefix, sizeof(ret->prefix));
        copy_str(status, "phase", ret->phase, sizeof(ret->phase));
        copy_str(status, "podIP", ret->ip, sizeof(ret->ip));
        list = get(status, "containerStatuses");
        if (list && json_object_is_type(list, json_type_array)) {
                for (size_t i = 0; i < json_object_array_length(list); i++) {
                        struct json_object *cs = json_object_array_get_idx(list, i);
                        const char *cn = json_get_str(cs, "name");

                        if (cn && strcmp(cn, K8S_CONTAINER) == 0)
                                main_container_state(cs, ret);
                }
        }
        init_container_state(get(status, "initContainerStatuses"), ret);
        /* a pod's own reason (Evicted, DeadlineExceeded) when no container gave one */
        if (!ret->reason[0]) {
                copy_str(status, "reason", ret->reason, sizeof(ret->reason));
                copy_str(status, "message", ret->message, sizeof(ret->message));
        }
        agent_key(get(get(o, "spec"), "containers"), ret);
        return 0;
}

int k8s_json_parse_pod(const char *body, size_t len, struct k8s_pod *ret)
{
        struct json_object *o = parse(body, len);
        int r = o ? pod_from(o, ret) : -EPROTO;

        if (!o)
                memset(ret, 0, sizeof(*ret));
        json_put(o);
        return r;
}

enum sandbox_run_state k8s_pod_state(const struct k8s_pod *pod)
{
        if (!strcmp(pod->phase, "Succeeded") || !strcmp(pod->phase, "Failed"))
                return SANDBOX_RUN_EXITED;
        if (pod->deleting || pod->terminated)
                return SANDBOX_RUN_EXITED;
        if (!strcmp(pod->phase, "Running"))
                return SANDBOX_RUN_RUNNING;
        return SANDBOX_RUN_CREATED;
}

bool k8s_pod_stuck(const struct k8s_pod *pod)
{
        static const char *const stuck[] = { "ErrImageNeverPull",          "ErrImagePull",
                                             "ImagePullBackOff",           "InvalidImageName",
                                             "CreateContainerConfigError", "CreateContainerError",
                                             "RunContainerError",          NULL };

        if (strcmp(pod->phase, "Pending") && pod->phase[0])
                return false;
        for (const char *const *s = stuck; *s; s++)
                if (strcmp(pod->reason, *s) == 0)
                        return true;
        return false;
}

void k8s_pod_info(const struct k8s_pod *pod, struct sandbox_info *ret)
{
        memset(ret, 0, sizeof(*ret));
        ret->state = k8s_pod_state(pod);
        snprintf(ret->sandbox_id, sizeof(ret->sandbox_id), "%s", pod->sandbox_id);
        snprintf(ret->prefix, sizeof(ret->prefix), "%s", pod->prefix);
        snprintf(ret->ref, sizeof(ret->ref), "%s", pod->name);
        ret->agent = pod->agent;
        ret->exit_code = pod->terminated ? pod->exit_code : -1;
        ret->oom_killed = strcmp(pod->reason, "OOMKilled") == 0;
}

int k8s_json_parse_list(const char *body, size_t len, void (*fn)(void *ud, const struct k8s_pod *pod),
                        void *ud, char *cont, size_t cont_size, char rv[K8S_RV_MAX])
{
        struct json_object *o = parse(body, len), *items, *meta;
        const char *c;
        int r = -EPROTO;

        cont[0] = '\0';
        rv[0] = '\0';
        if (!o)
                goto out;
        items = get(o, "items");
        meta = get(o, "metadata");
        if (!items || !json_object_is_type(items, json_type_array))
                goto out;
        c = json_get_str(meta, "continue");
        if (c && strlen(c) >= cont_size) {
                r = -ENAMETOOLONG;
                goto out;
        }
        if (c)
                memcpy(cont, c, strlen(c) + 1);
        copy_str(meta, "resourceVersion", rv, K8S_RV_MAX);
        for (size_t i = 0; i < json_object_array_length(items); i++) {
                struct k8s_pod pod;

                if (pod_from(json_object_array_get_idx(items, i), &pod) == 0)
                        fn(ud, &pod);
        }
        r = 0;
out:
        json_put(o);
        return r;
}

int k8s_json_parse_event(const char *line, size_t len, enum k8s_event_type *type,
                         struct k8s_pod *pod, int *code)
{
        static const char *const names[] = { "ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR" };
        struct json_object *o = parse(line, len), *obj;
        const char *t;
        int r = -EPROTO;

        memset(pod, 0, sizeof(*pod));
        pod->exit_code = -1;
        *code = 0;
        if (!o)
                goto out;
        t = json_get_str(o, "type");
        obj = get(o, "object");
        if (!t || !obj || !json_object_is_type(obj, json_type_object))
                goto out;
        for (int i = 0; i < 5; i++) {
                if (strcmp(t, names[i]))
                        continue;
                *type = (enum k8s_event_type)i;
                if (i == K8S_EV_BOOKMARK) {
                        copy_str(get(obj, "metadata"), "resourceVersion", pod->rv, sizeof(pod->rv));
                        r = pod->rv[0] ? 0 : -EPROTO;
                } else if (i == K8S_EV_ERROR) {
                        struct json_object *c = get(obj, "code");

                        *code = c && json_object_is_type(c, json_type_int) ? json_object_get_int(c)
                                                                           : 0;
                        r = 0;
                } else {
                        r = pod_from(obj, pod);
                }
                break;
        }
out:
        json_put(o);
        return r;
}

/* Which hint an error status gets: a 401 is the credentials; a 403 is the
 * RBAC Role only when the authorizer said so ("User \"...\" cannot <verb>");
 * a 403 from admission (an unknown RuntimeClass, a quota, a PodSecurity
 * level) has its own reason in the message, and no hint. */
static const char *error_hint(long status, const char *msg)
{
        const char *u;

        if (status == 401)
                return " (check the credentials: docs/KUBERNETES.md)";
        if (status != 403)
                return "";
        if (!msg)
                return " (check the credentials and the RBAC Role: docs/KUBERNETES.md)";
        u = strstr(msg, "User \"");
        if (u && strstr(u, "\" cannot "))
                return " (check the credentials and the RBAC Role: docs/KUBERNETES.md)";
        return "";
}

void k8s_json_error_message(const char *what, long status, const char *body, char *ret_err)
{
        struct json_object *o;
        const char *msg, *hint;
        size_t n, room;

        if (!ret_err)
                return;
        o = body ? parse(body, strlen(body)) : NULL;
        msg = json_get_str(o, "message");
        hint = error_hint(status, msg);
        snprintf(ret_err, PROVIDER_ERR_MAX, "kubernetes: %s: HTTP %ld", what, status);
        n = strlen(ret_err);
        /* the message cut (at most 180 bytes) so that the hint always fits */
        room = PROVIDER_ERR_MAX - 1 - n - strlen(hint);
        if (msg && room > 2 + 8)
                n += (size_t)snprintf(ret_err + n, PROVIDER_ERR_MAX - n, ": %.*s",
                                      (int)(room - 2 < 180 ? room - 2 : 180), msg);
        if (n + strlen(hint) < PROVIDER_ERR_MAX)
                memcpy(ret_err + n, hint, strlen(hint) + 1);
        json_put(o);
}
