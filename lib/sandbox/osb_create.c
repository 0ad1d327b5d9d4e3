/* osb_create: the body of an OpenSandbox create (CreateSandboxRequest),
 * checked and turned into struct osb_create; whether a warm-pool member
 * can serve it; its credentials wiped. See opensandbox.h. */
#include "sandbox/opensandbox.h"

#include <ctype.h>
#include <stdbool.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox/lifecycle.h"
#include "sandbox/snapshot.h"

static int store_json(struct json_object *o, char *buf, size_t size, const char *what, char *err)
{
        const char *s = o ? json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
                                                                  JSON_C_TO_STRING_NOSLASHESCAPE)
                          : "{}";
        if (strlen(s) >= size) {
                snprintf(err, OSB_ERR_MAX, "%s is larger than %zu bytes", what, size - 1);
                return -EINVAL;
        }
        strcpy(buf, s);
        return 0;
}

static int parse_entrypoint(struct json_object *ep, struct osb_create *c, char *err)
{
        size_t n;

        if (!json_object_is_type(ep, json_type_array) || (n = json_object_array_length(ep)) == 0 ||
            n > 64) {
                snprintf(err, OSB_ERR_MAX, "entrypoint must be an array of 1 to 64 strings");
                return -EINVAL;
        }
        for (size_t i = 0; i < n; i++) {
                struct json_object *a = json_object_array_get_idx(ep, i);
                if (!json_object_is_type(a, json_type_string) ||
                    (i == 0 && json_object_get_string_len(a) == 0) ||
                    strlen(json_object_get_string(a)) != (size_t)json_object_get_string_len(a)) {
                        snprintf(err, OSB_ERR_MAX, "entrypoint[%zu] must be a non-empty string", i);
                        return -EINVAL;
                }
        }
        return store_json(ep, c->entrypoint, sizeof(c->entrypoint), "entrypoint", err);
}

static int parse_env(struct json_object *env, struct osb_create *c, char *err)
{
        if (!env || json_object_is_type(env, json_type_null))
                return store_json(NULL, c->env, sizeof(c->env), "env", err);
        if (!json_object_is_type(env, json_type_object) || json_object_object_length(env) > 128) {
                snprintf(err, OSB_ERR_MAX, "env must be an object of at most 128 strings");
                return -EINVAL;
        }
        json_object_object_foreach(env, k, v) {
                bool ok = *k && !isdigit((unsigned char)*k) && strlen(k) < 128;
                for (const char *p = k; ok && *p; p++)
                        ok = isalnum((unsigned char)*p) || *p == '_';
                if (!ok || !json_object_is_type(v, json_type_string) ||
                    strlen(json_object_get_string(v)) != (size_t)json_object_get_string_len(v)) {
                        snprintf(err, OSB_ERR_MAX, "env: '%.64s' must be [A-Za-z_][A-Za-z0-9_]* with a string value", k);
                        return -EINVAL;
                }
        }
        return store_json(env, c->env, sizeof(c->env), "env", err);
}

/* One image.auth string into buf: printable, no newline (it goes into a
 * header), capped. */
static int auth_field(struct json_object *auth, const char *name, char *buf, size_t size,
                      char *err)
{
        struct json_object *v;
        const char *s;

        if (!json_object_object_get_ex(auth, name, &v) || json_object_is_type(v, json_type_null))
                return 0;
        if (!json_object_is_type(v, json_type_string) || json_object_get_string_len(v) >= (int)size) {
                snprintf(err, OSB_ERR_MAX, "image.auth.%s must be a string of at most %zu characters",
                         name, size - 1);
                return -EINVAL;
        }
        s = json_object_get_string(v);
        for (const char *p = s; *p; p++)
                if ((unsigned char)*p < ' ' || *p == 0x7f) {
                        snprintf(err, OSB_ERR_MAX, "image.auth.%s must not contain control characters",
                                 name);
                        return -EINVAL;
                }
        strcpy(buf, s);
        return 0;
}

/* image.auth {username, password} (the spec's ImageAuth, no other keys).
 * Kept in the request only: the caller never stores it. */
static int parse_image_auth(struct json_object *auth, struct osb_create *c, char *err)
{
        if (!json_object_is_type(auth, json_type_object)) {
                snprintf(err, OSB_ERR_MAX, "image.auth must be an object {username, password}");
                return -EINVAL;
        }
        json_object_object_foreach(auth, k, val) {
                (void)val;
                if (strcmp(k, "username") && strcmp(k, "password")) {
                        snprintf(err, OSB_ERR_MAX, "image.auth: unknown field (username, password)");
                        return -EINVAL;
                }
        }
        if (auth_field(auth, "username", c->auth_user, sizeof(c->auth_user), err) < 0 ||
            auth_field(auth, "password", c->auth_pass, sizeof(c->auth_pass), err) < 0)
                return -EINVAL;
        c->has_auth = c->auth_user[0] || c->auth_pass[0];
        return 0;
}

/* extensions.runtime, and what a runtime without the agent cannot take. */
static int parse_runtime(const struct broker_config *cfg, struct json_object *body,
                         struct osb_create *c, char *err)
{
        struct json_object *ext, *v;
        char allowed[CONFIG_RUNTIME_LIST_MAX];

        snprintf(c->runtime, sizeof(c->runtime), "%s", config_runtime_for_mode(cfg, "exclusive"));
        if (json_object_object_get_ex(body, "extensions", &ext) && !json_object_is_type(ext, json_type_null) &&
            json_object_object_get_ex(ext, OSB_EXT_RUNTIME, &v) && !json_object_is_type(v, json_type_null)) {
                if (strcmp(cfg->provider, "docker") != 0) {
                        snprintf(err, OSB_ERR_MAX, "extensions." OSB_EXT_RUNTIME ": not supported by this "
                                 "provider (%.32s)", cfg->provider);
                        return -EINVAL;
                }
                config_runtimes_list(cfg, allowed, sizeof(allowed));
                if (!json_object_is_type(v, json_type_string) ||
                    !config_runtime_allowed(cfg, json_object_get_string(v))) {
                        snprintf(err, OSB_ERR_MAX, "extensions." OSB_EXT_RUNTIME ": %s%.40s%s is not an "
                                 "allowed runtime (allowed: %.100s)",
                                 json_object_is_type(v, json_type_string) ? "\"" : "",
                                 json_object_is_type(v, json_type_string) ? json_object_get_string(v)
                                                                          : "a non-string",
                                 json_object_is_type(v, json_type_string) ? "\"" : "", allowed);
                        return -EINVAL;
                }
                snprintf(c->runtime, sizeof(c->runtime), "%s", json_object_get_string(v));
        }
        return 0;
}

/* extensions: bounded, strings only, kept as given; OSB_EXT_RENEW checked
 * (opensandbox.h). Runs after parse_runtime, whose messages come first. */
static int parse_extensions(const struct broker_config *cfg, struct json_object *body,
                            struct osb_create *c, char *err)
{
        struct json_object *ext;
        size_t n = 0;

        if (!json_object_object_get_ex(body, "extensions", &ext) || json_object_is_type(ext, json_type_null))
                return 0;
        if (!json_object_is_type(ext, json_type_object)) {
                snprintf(err, OSB_ERR_MAX, "extensions must be an object of strings");
                return -EINVAL;
        }
        json_object_object_foreach(ext, k, v) {
                size_t klen = strlen(k);

                if (++n > OSB_EXT_KEYS_MAX) {
                        snprintf(err, OSB_ERR_MAX, "extensions: at most %d keys", OSB_EXT_KEYS_MAX);
                        return -EINVAL;
                }
                if (klen == 0 || klen > OSB_EXT_KEY_MAX) {
                        snprintf(err, OSB_ERR_MAX, "extensions: a key must be 1 to %d bytes", OSB_EXT_KEY_MAX);
                        return -EINVAL;
                }
                if (!json_object_is_type(v, json_type_string)) {
                        snprintf(err, OSB_ERR_MAX, "extensions.%.64s: the value must be a string", k);
                        return -EINVAL;
                }
                if (strcmp(k, OSB_EXT_RENEW) == 0) {
                        const char *s = json_object_get_string(v);
                        size_t len = strlen(s);
                        long long secs = 0;

                        for (size_t i = 0; i < len && len <= 6; i++)
                                secs = isdigit((unsigned char)s[i]) ? secs * 10 + (s[i] - '0') : -1;
                        if (len == 0 || len > 6 || secs < OSB_RENEW_EXTEND_MIN_S || secs > OSB_RENEW_EXTEND_MAX_S) {
                                snprintf(err, OSB_ERR_MAX,
                                         "extensions[\"" OSB_EXT_RENEW "\"]: a base-10 integer string from %d "
                                         "to %d (seconds), got \"%.16s\"",
                                         OSB_RENEW_EXTEND_MIN_S, OSB_RENEW_EXTEND_MAX_S, s);
                                return -EINVAL;
                        }
                        if (secs > cfg->osb_max_timeout_s) {
                                snprintf(err, OSB_ERR_MAX,
                                         "extensions[\"" OSB_EXT_RENEW "\"]: %lld s is beyond the longest "
                                         "timeout this server allows (%d s, OPENSANDBOX_MAX_TIMEOUT_S)",
                                         secs, cfg->osb_max_timeout_s);
                                return -EINVAL;
                        }
                        snprintf(c->renew_extend_ms, sizeof(c->renew_extend_ms), "%lld", secs * 1000);
                }
        }
        return store_json(ext, c->extensions, sizeof(c->extensions), "extensions", err);
}

/* The cpu or memory quantity s of a resource object (what: its name in
 * messages, "resourceLimits" or "resourceRequests") into *ret. */
static int parse_cpu_memory(const char *what, bool cpu, const char *s, int64_t *ret, char *err)
{
        if (cpu && (!s || osb_parse_cpu(s, ret) < 0)) {
                snprintf(err, OSB_ERR_MAX, "%s.cpu must be like \"500m\" or \"1\" (0.01 to 64 CPUs)", what);
                return -EINVAL;
        }
        if (!cpu && (!s || osb_parse_memory(s, ret) < 0)) {
                snprintf(err, OSB_ERR_MAX, "%s.memory must be like \"512Mi\" or \"2Gi\" (6Mi to 1Ti)", what);
                return -EINVAL;
        }
        return 0;
}

/* resourceRequests: what a scheduler would reserve. Checked as the limits
 * are (cpu, memory; each at most its limit, as Kubernetes requires); the
 * Docker provider places nothing (one host), so nothing is kept. */
static int parse_requests(struct json_object *body, const struct osb_create *c, char *err)
{
        struct json_object *req;

        if (!json_object_object_get_ex(body, "resourceRequests", &req) || json_object_is_type(req, json_type_null))
                return 0;
        if (!json_object_is_type(req, json_type_object)) {
                snprintf(err, OSB_ERR_MAX, "resourceRequests must be an object of strings");
                return -EINVAL;
        }
        json_object_object_foreach(req, k, v) {
                const char *s = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
                int64_t n;

                if (strcmp(k, "cpu") == 0) {
                        if (parse_cpu_memory("resourceRequests", true, s, &n, err) < 0)
                                return -EINVAL;
                        if (n > c->nano_cpus) {
                                snprintf(err, OSB_ERR_MAX, "resourceRequests.cpu is more than the sandbox's cpu limit");
                                return -EINVAL;
                        }
                } else if (strcmp(k, "memory") == 0) {
                        if (parse_cpu_memory("resourceRequests", false, s, &n, err) < 0)
                                return -EINVAL;
                        if (n > c->memory_bytes) {
                                snprintf(err, OSB_ERR_MAX, "resourceRequests.memory is more than the sandbox's memory limit");
                                return -EINVAL;
                        }
                } else {
                        snprintf(err, OSB_ERR_MAX, "resourceRequests.%.64s is not a resource this server knows "
                                 "(cpu, memory)", k);
                        return -EINVAL;
                }
        }
        return 0;
}

/* resourceLimits OSB_LIMIT_DISK (opensandbox.h). */
static int parse_disk(const struct broker_config *cfg, const char *s, struct osb_create *c, char *err)
{
        int64_t bytes;

        if (cfg->sandbox_disk_mb == 0 || strcmp(cfg->provider, "docker")) {
                snprintf(err, OSB_ERR_MAX, "resourceLimits." OSB_LIMIT_DISK ": this server gives "
                         "sandboxes no disk of their own%s",
                         cfg->sandbox_disk_mb == 0 ? " (SANDBOX_DISK_MB=0)" : "");
                return -EINVAL;
        }
        if (!s || osb_parse_memory(s, &bytes) < 0 || bytes < (int64_t)CONFIG_DISK_MIN_MB * 1048576 ||
            (bytes + 1048575) / 1048576 > cfg->sandbox_disk_max_mb) {
                snprintf(err, OSB_ERR_MAX, "resourceLimits." OSB_LIMIT_DISK " must be like \"2Gi\" "
                         "(%dMi to %dMi)", CONFIG_DISK_MIN_MB, cfg->sandbox_disk_max_mb);
                return -EINVAL;
        }
        c->disk_mb = (bytes + 1048575) / 1048576;
        return 0;
}

int osb_create_parse(const struct broker_config *cfg, struct json_object *body,
                     struct osb_create *c, char *err)
{
        struct json_object *image, *uri, *v, *limits;

        memset(c, 0, sizeof(*c));
        /* the spec: exactly one startup source, image or snapshotId */
        if (json_object_object_get_ex(body, "snapshotId", &v) && !json_object_is_type(v, json_type_null)) {
                if (json_object_object_get_ex(body, "image", &image) &&
                    !json_object_is_type(image, json_type_null)) {
                        snprintf(err, OSB_ERR_MAX, "give either image or snapshotId, not both");
                        return -EINVAL;
                }
                if (!json_object_is_type(v, json_type_string) ||
                    !snapshot_id_valid(json_object_get_string(v))) {
                        snprintf(err, OSB_ERR_MAX, "snapshotId must be a snapshot id (32 lowercase hex characters)");
                        return -EINVAL;
                }
                strcpy(c->snapshot_id, json_object_get_string(v));
                /* without an entrypoint the spec's default for a restore */
                if (!json_object_object_get_ex(body, "entrypoint", &v) || json_object_is_type(v, json_type_null))
                        strcpy(c->entrypoint, "[\"tail\",\"-f\",\"/dev/null\"]");
                else if (parse_entrypoint(v, c, err) < 0)
                        return -EINVAL;
                goto rest;
        }
        if (!json_object_object_get_ex(body, "image", &image) ||
            !json_object_is_type(image, json_type_object) ||
            !json_object_object_get_ex(image, "uri", &uri) || !json_object_is_type(uri, json_type_string) ||
            json_object_get_string_len(uri) == 0 || json_object_get_string_len(uri) >= (int)sizeof(c->image)) {
                snprintf(err, OSB_ERR_MAX, "image.uri is required (a string of at most %zu characters)",
                         sizeof(c->image) - 1);
                return -EINVAL;
        }
        for (const char *p = json_object_get_string(uri); *p; p++)
                if (!isgraph((unsigned char)*p)) {
                        snprintf(err, OSB_ERR_MAX, "image.uri must not contain spaces or control characters");
                        return -EINVAL;
                }
        strcpy(c->image, json_object_get_string(uri));
        if (json_object_object_get_ex(image, "auth", &v) && !json_object_is_type(v, json_type_null) &&
            parse_image_auth(v, c, err) < 0)
                return -EINVAL;
        if (!json_object_object_get_ex(body, "entrypoint", &v)) {
                snprintf(err, OSB_ERR_MAX, "entrypoint is required when image is given");
                return -EINVAL;
        }
        if (parse_entrypoint(v, c, err) < 0)
                return -EINVAL;
rest:
        c->timeout_s = -1;
        if (json_object_object_get_ex(body, "timeout", &v) && !json_object_is_type(v, json_type_null)) {
                int64_t t = json_object_get_int64(v);
                if (!json_object_is_type(v, json_type_int) || t < 60 || t > cfg->osb_max_timeout_s) {
                        snprintf(err, OSB_ERR_MAX, "timeout must be an integer from 60 to %d seconds, or null",
                                 cfg->osb_max_timeout_s);
                        return -EINVAL;
                }
                c->timeout_s = t;
        }

        c->nano_cpus = (int64_t)cfg->sandbox_millicpus * 1000000;
        c->memory_bytes = (int64_t)cfg->sandbox_memory_mb * 1048576;
        c->disk_mb = -1;
        if (json_object_object_get_ex(body, "resourceLimits", &limits) &&
            !json_object_is_type(limits, json_type_null)) {
                if (!json_object_is_type(limits, json_type_object)) {
                        snprintf(err, OSB_ERR_MAX, "resourceLimits must be an object of strings");
                        return -EINVAL;
                }
                json_object_object_foreach(limits, k, lv) {
                        const char *s = json_object_is_type(lv, json_type_string) ? json_object_get_string(lv) : NULL;
                        if (strcmp(k, "cpu") == 0 || strcmp(k, "memory") == 0) {
                                bool cpu = k[0] == 'c';

                                if (parse_cpu_memory("resourceLimits", cpu, s, cpu ? &c->nano_cpus : &c->memory_bytes,
                                                     err) < 0)
                                        return -EINVAL;
                        } else if (strcmp(k, OSB_LIMIT_DISK) == 0) {
                                if (parse_disk(cfg, s, c, err) < 0)
                                        return -EINVAL;
                        } else if (strcmp(k, "gpu") == 0) {
                                if (!s || strcmp(s, "0") != 0) {
                                        snprintf(err, OSB_ERR_MAX, "resourceLimits.gpu: this server has no GPUs");
                                        return -EINVAL;
                                }
                        } else {
                                snprintf(err, OSB_ERR_MAX, "resourceLimits.%.64s is not a resource this server knows", k);
                                return -EINVAL;
                        }
                }
        }
        if (parse_requests(body, c, err) < 0)
                return -EINVAL;
        /* lifecycle hooks (lifecycle.h): run by the agent, so Docker only */
        if (json_object_object_get_ex(body, "lifecycle", &v)) {
                int r = lifecycle_parse(cfg, v, &c->lifecycle, err);

                if (r < 0)
                        return r;
        }
        if (parse_env(json_object_object_get_ex(body, "env", &v) ? v : NULL, c, err) < 0)
                return -EINVAL;
        if (json_object_object_get_ex(body, "metadata", &v) && !json_object_is_type(v, json_type_null)) {
                if (osb_metadata_check(v, err) < 0)
                        return -EINVAL;
                if (store_json(v, c->metadata, sizeof(c->metadata), "metadata", err) < 0)
                        return -EINVAL;
        } else {
                strcpy(c->metadata, "{}");
        }
        if (json_object_object_get_ex(body, "platform", &v) && !json_object_is_type(v, json_type_null)) {
                struct json_object *os = NULL, *arch = NULL;
                /* strings only: a JSON null reads as a NULL object here */
                if (!json_object_object_get_ex(v, "os", &os) || !json_object_object_get_ex(v, "arch", &arch) ||
                    !json_object_is_type(os, json_type_string) || !json_object_is_type(arch, json_type_string) ||
                    strcmp(json_object_get_string(os), "linux") || strcmp(json_object_get_string(arch), "amd64")) {
                        snprintf(err, OSB_ERR_MAX, "platform: this server runs linux/amd64 only");
                        return -EINVAL;
                }
        }
        if (parse_runtime(cfg, body, c, err) < 0)
                return -EINVAL;
        if (parse_extensions(cfg, body, c, err) < 0)
                return -EINVAL;
        /* networkPolicy is validated and stored by egress_policy_for_create
         * (egress_store.h), volumes by volume_for_create (volume.h). */
        return 0;
}

const char *osb_create_pool(const struct broker_config *cfg, const struct osb_create *c, bool has_volumes)
{
        int i;

        /* volumes are mounts, a snapshot is another image and a runtime
         * another kind of container: each shapes the container itself.
         * Members run SANDBOX_RUNTIME. */
        if (has_volumes || c->snapshot_id[0] || !c->image[0] || strcmp(c->runtime, cfg->sandbox_runtime) ||
            c->lifecycle)
                return NULL;
        i = config_pool_find(cfg, c->image);
        return i < 0 ? NULL : cfg->pools[i].image;
}

void osb_create_wipe(struct osb_create *c)
{
        explicit_bzero(c->auth_user, sizeof(c->auth_user));
        explicit_bzero(c->auth_pass, sizeof(c->auth_pass));
        c->has_auth = false;
        free(c->lifecycle);
        c->lifecycle = NULL;
}
