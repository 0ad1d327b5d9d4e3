/* opensandbox: see opensandbox.h. */
#include "opensandbox.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "digest.h"
#include "json_input.h"
#include "snapshot.h"
#include "timeutil.h"

int osb_parse_cpu(const char *s, int64_t *ret)
{
        char *end;
        double v;

        if (!*s || isspace((unsigned char)*s))
                return -EINVAL;
        errno = 0;
        v = strtod(s, &end);
        if (errno || end == s)
                return -EINVAL;
        if (strcmp(end, "m") == 0)
                v /= 1000.0;
        else if (*end)
                return -EINVAL;
        if (!(v >= 0.01 && v <= 64.0))
                return -EINVAL;
        *ret = (int64_t)(v * 1e9 + 0.5);
        return 0;
}

int osb_parse_memory(const char *s, int64_t *ret)
{
        static const struct { const char *suffix; double mult; } units[] = {
                { "", 1 }, { "Ki", 1024.0 }, { "Mi", 1048576.0 }, { "Gi", 1073741824.0 },
                { "Ti", 1099511627776.0 }, { "K", 1e3 }, { "M", 1e6 }, { "G", 1e9 }, { "T", 1e12 },
        };
        char *end;
        double v;

        if (!*s || !isdigit((unsigned char)*s))
                return -EINVAL;
        errno = 0;
        v = strtod(s, &end);
        if (errno || end == s)
                return -EINVAL;
        for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
                if (strcmp(end, units[i].suffix) == 0) {
                        v *= units[i].mult;
                        /* Docker's floor is 6 MiB; above 1 TiB is a typo */
                        if (!(v >= 6.0 * 1048576 && v <= 1099511627776.0))
                                return -EINVAL;
                        *ret = (int64_t)v;
                        return 0;
                }
        return -EINVAL;
}

/* [a-z0-9]([-a-z0-9]*[a-z0-9])? of at most max characters (n of them). */
static bool dns_label(const char *s, size_t n, size_t max, bool upper_ok, const char *extra)
{
        if (n == 0 || n > max)
                return false;
        for (size_t i = 0; i < n; i++) {
                unsigned char c = (unsigned char)s[i];
                bool alnum = isdigit(c) || (c >= 'a' && c <= 'z') || (upper_ok && c >= 'A' && c <= 'Z');
                if (!alnum && !(i > 0 && i + 1 < n && strchr(extra, c)))
                        return false;
        }
        return true;
}

bool osb_metadata_key_valid(const char *key)
{
        const char *slash = strchr(key, '/');
        const char *name = slash ? slash + 1 : key;

        if (strncmp(key, "opensandbox.io/", 15) == 0)
                return false; /* reserved by the spec */
        if (slash) {
                /* prefix: a DNS subdomain of labels joined by '.', at most 253 */
                size_t plen = (size_t)(slash - key);
                const char *p = key;
                if (plen == 0 || plen > 253)
                        return false;
                while (p < slash) {
                        size_t n = strcspn(p, "./");
                        if (p + n > slash || !dns_label(p, n, 63, false, "-"))
                                return false;
                        p += n;
                        if (*p == '.')
                                p++;
                }
        }
        return dns_label(name, strlen(name), 63, true, "-_.");
}

bool osb_metadata_value_valid(const char *value)
{
        size_t n = strlen(value);
        return n == 0 || dns_label(value, n, 63, true, "-_.");
}

int osb_metadata_check(struct json_object *md, char *err)
{
        if (!json_object_is_type(md, json_type_object)) {
                snprintf(err, OSB_ERR_MAX, "metadata must be an object of strings");
                return -EINVAL;
        }
        json_object_object_foreach(md, k, v) {
                if (!osb_metadata_key_valid(k)) {
                        snprintf(err, OSB_ERR_MAX,
                                 "metadata key '%.64s' is not a valid label key (or is reserved)", k);
                        return -EINVAL;
                }
                if (!json_object_is_type(v, json_type_string) ||
                    !osb_metadata_value_valid(json_object_get_string(v))) {
                        snprintf(err, OSB_ERR_MAX,
                                 "metadata value of '%.64s' must be a string of at most 63 label characters", k);
                        return -EINVAL;
                }
        }
        return 0;
}

int osb_metadata_patch_check(struct json_object *patch, char *err)
{
        if (!json_object_is_type(patch, json_type_object)) {
                snprintf(err, OSB_ERR_MAX, "the patch must be a JSON object (RFC 7396)");
                return -EINVAL;
        }
        json_object_object_foreach(patch, k, v) {
                if (!osb_metadata_key_valid(k)) {
                        snprintf(err, OSB_ERR_MAX,
                                 "metadata key '%.64s' is not a valid label key (or is reserved)", k);
                        return -EINVAL;
                }
                if (json_object_is_type(v, json_type_null))
                        continue; /* deletes the key */
                if (!json_object_is_type(v, json_type_string) ||
                    !osb_metadata_value_valid(json_object_get_string(v))) {
                        snprintf(err, OSB_ERR_MAX,
                                 "metadata value of '%.64s' must be a string of at most 63 label characters", k);
                        return -EINVAL;
                }
        }
        return 0;
}

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
                        if (!s || osb_parse_cpu(s, &n) < 0) {
                                snprintf(err, OSB_ERR_MAX, "resourceRequests.cpu must be like \"500m\" or \"1\" (0.01 to 64 CPUs)");
                                return -EINVAL;
                        }
                        if (n > c->nano_cpus) {
                                snprintf(err, OSB_ERR_MAX, "resourceRequests.cpu is more than the sandbox's cpu limit");
                                return -EINVAL;
                        }
                } else if (strcmp(k, "memory") == 0) {
                        if (!s || osb_parse_memory(s, &n) < 0) {
                                snprintf(err, OSB_ERR_MAX, "resourceRequests.memory must be like \"512Mi\" or \"2Gi\" (6Mi to 1Ti)");
                                return -EINVAL;
                        }
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
                        if (strcmp(k, "cpu") == 0) {
                                if (!s || osb_parse_cpu(s, &c->nano_cpus) < 0) {
                                        snprintf(err, OSB_ERR_MAX, "resourceLimits.cpu must be like \"500m\" or \"1\" (0.01 to 64 CPUs)");
                                        return -EINVAL;
                                }
                        } else if (strcmp(k, "memory") == 0) {
                                if (!s || osb_parse_memory(s, &c->memory_bytes) < 0) {
                                        snprintf(err, OSB_ERR_MAX, "resourceLimits.memory must be like \"512Mi\" or \"2Gi\" (6Mi to 1Ti)");
                                        return -EINVAL;
                                }
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
        /* hooks would run silently never: refused, as the reference's own
         * Docker provider refuses them */
        if (json_object_object_get_ex(body, "lifecycle", &v) && !json_object_is_type(v, json_type_null)) {
                snprintf(err, OSB_ERR_MAX, "lifecycle hooks (preStart, periodic) are not supported by this "
                         "server; run setup commands through execd once the sandbox is Running");
                return -EINVAL;
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

static const char *hash_get(const redisReply *h, const char *name)
{
        for (size_t i = 0; i + 1 < h->elements; i += 2)
                if (h->element[i]->type == REDIS_REPLY_STRING && strcmp(h->element[i]->str, name) == 0 &&
                    h->element[i + 1]->type == REDIS_REPLY_STRING)
                        return h->element[i + 1]->str;
        return NULL;
}

const char *osb_record_field(const redisReply *h, const char *name)
{
        if (!h || h->type != REDIS_REPLY_ARRAY)
                return NULL;
        return hash_get(h, name);
}

static struct json_object *iso_time(const char *ms)
{
        char buf[32];
        long long v;

        if (!ms || !*ms)
                return NULL;
        v = atoll(ms);
        if (timeutil_format_iso(v, buf, sizeof(buf)) < 0)
                return NULL;
        return json_object_new_string(buf);
}

static struct json_object *parsed(const char *text, const char *fallback)
{
        struct json_object *o = text ? json_tokener_parse(text) : NULL;
        return o ? o : json_tokener_parse(fallback);
}

int osb_sandbox_json(const redisReply *h, bool full, struct json_object **ret)
{
        struct json_object *o, *st;
        const char *id, *state, *v;

        *ret = NULL;
        if (!h || h->type != REDIS_REPLY_ARRAY || h->elements % 2)
                return -EPROTO;
        if (h->elements == 0)
                return -ENOENT;
        id = hash_get(h, "sandboxId");
        state = hash_get(h, "state");
        if (!id || !state)
                return -EPROTO;
        o = json_object_new_object();
        st = json_object_new_object();
        json_object_object_add(o, "id", json_object_new_string(id));
        /* a restored sandbox names its snapshot instead of an image (the spec's Sandbox) */
        if (full && (v = hash_get(h, "snapshotId")) && *v) {
                json_object_object_add(o, "snapshotId", json_object_new_string(v));
        } else if (full && (v = hash_get(h, "image"))) {
                struct json_object *img = json_object_new_object();
                json_object_object_add(img, "uri", json_object_new_string(v));
                json_object_object_add(o, "image", img);
        }
        json_object_object_add(st, "state", json_object_new_string(state));
        if ((v = hash_get(h, "reason")) && *v)
                json_object_object_add(st, "reason", json_object_new_string(v));
        if ((v = hash_get(h, "message")) && *v)
                json_object_object_add(st, "message", json_object_new_string(v));
        if ((v = hash_get(h, "lastTransitionAt")))
                json_object_object_add(st, "lastTransitionAt", iso_time(v));
        json_object_object_add(o, "status", st);
        json_object_object_add(o, "metadata", parsed(hash_get(h, "metadata"), "{}"));
        if ((v = hash_get(h, "extensions")) && *v)
                json_object_object_add(o, "extensions", parsed(v, "{}"));
        /* a sandbox served by a warm-pool member: the spec's AllocationSummary */
        if (full && (v = hash_get(h, "poolRef")) && *v) {
                struct json_object *a = json_object_new_object();

                json_object_object_add(a, "mode", json_object_new_string("pool"));
                json_object_object_add(a, "poolRef", json_object_new_string(v));
                json_object_object_add(a, "state", json_object_new_string("allocated"));
                json_object_object_add(o, "allocation", a);
        }
        json_object_object_add(o, "entrypoint", parsed(hash_get(h, "entrypoint"), "[\"sleep\",\"infinity\"]"));
        /* expiresAt is omitted for manual cleanup, as the spec says */
        if ((v = hash_get(h, "expiresAt")) && *v)
                json_object_object_add(o, "expiresAt", iso_time(v));
        json_object_object_add(o, "createdAt", iso_time(hash_get(h, "createdAt")));
        *ret = o;
        return 0;
}

int osb_parse_time(const char *s, int64_t *ret)
{
        struct tm tm = { 0 };
        int ms = 0, n = 0, off = 0;
        const char *p;
        time_t t;

        if (strlen(s) > 40 || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                                    &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &n) != 6 || n != 19)
                return -EINVAL;
        p = s + n;
        if (*p == '.') {
                int digits = 0;
                for (p++; isdigit((unsigned char)*p); p++, digits++)
                        if (digits < 3)
                                ms = ms * 10 + (*p - '0');
                if (digits == 0)
                        return -EINVAL;
                for (; digits < 3; digits++)
                        ms *= 10;
        }
        if (*p == 'Z' || *p == 'z') {
                p++;
        } else if ((*p == '+' || *p == '-') && isdigit((unsigned char)p[1]) && isdigit((unsigned char)p[2]) &&
                   p[3] == ':' && isdigit((unsigned char)p[4]) && isdigit((unsigned char)p[5])) {
                off = ((p[1] - '0') * 10 + (p[2] - '0')) * 60 + (p[4] - '0') * 10 + (p[5] - '0');
                if (*p == '-')
                        off = -off;
                p += 6;
        } else {
                return -EINVAL;
        }
        if (*p || tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31 ||
            tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 60)
                return -EINVAL;
        tm.tm_year -= 1900;
        tm.tm_mon -= 1;
        t = timegm(&tm);
        if (t == (time_t)-1)
                return -EINVAL;
        *ret = ((int64_t)t - (int64_t)off * 60) * 1000 + ms;
        return 0;
}

const char *osb_state_canonical(const char *s)
{
        static const char *const states[] = { "Pending", "Running", "Pausing", "Paused",
                                              "Stopping", "Stopped", "Terminated", "Failed" };

        for (size_t i = 0; i < sizeof(states) / sizeof(states[0]); i++)
                if (strcasecmp(s, states[i]) == 0)
                        return states[i];
        return NULL;
}

const char *osb_create_pool(const struct broker_config *cfg, const struct osb_create *c, bool has_volumes)
{
        int i;

        /* volumes are mounts, a snapshot is another image and a runtime
         * another kind of container: each shapes the container itself.
         * Members run SANDBOX_RUNTIME. */
        if (has_volumes || c->snapshot_id[0] || !c->image[0] || strcmp(c->runtime, cfg->sandbox_runtime))
                return NULL;
        i = config_pool_find(cfg, c->image);
        return i < 0 ? NULL : cfg->pools[i].image;
}

void osb_create_wipe(struct osb_create *c)
{
        explicit_bzero(c->auth_user, sizeof(c->auth_user));
        explicit_bzero(c->auth_pass, sizeof(c->auth_pass));
        c->has_auth = false;
}

struct json_object *osb_page_json(struct json_object *items, long page, long size, long long total)
{
        struct json_object *o = json_object_new_object(), *pg = json_object_new_object();

        json_object_object_add(o, "items", items);
        json_object_object_add(pg, "page", json_object_new_int64(page));
        json_object_object_add(pg, "pageSize", json_object_new_int64(size));
        json_object_object_add(pg, "totalItems", json_object_new_int64(total));
        json_object_object_add(pg, "totalPages", json_object_new_int64((total + size - 1) / size));
        json_object_object_add(pg, "hasNextPage", json_object_new_boolean((long long)page * size < total));
        json_object_object_add(o, "pagination", pg);
        return o;
}

int osb_idempotency_key_parse(const char *hdr, char *ret, char *err)
{
        size_t n;

        ret[0] = '\0';
        if (!hdr)
                return 0;
        n = strlen(hdr);
        /* the draft's sf-string: "key" */
        if (n >= 2 && hdr[0] == '"' && hdr[n - 1] == '"') {
                hdr++;
                n -= 2;
        }
        if (n == 0 || n > OSB_IDEMPOTENCY_KEY_MAX ||
            strspn(hdr, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.:+/=") < n) {
                snprintf(err, OSB_ERR_MAX,
                         "Idempotency-Key must be 1 to %d characters of A-Z a-z 0-9 - _ . : + / = "
                         "(one header)", OSB_IDEMPOTENCY_KEY_MAX);
                return -EINVAL;
        }
        memcpy(ret, hdr, n);
        ret[n] = '\0';
        return 0;
}

int osb_create_fingerprint(struct json_object *body, char ret[OSB_FINGERPRINT_MAX])
{
        struct json_object *image = NULL, *auth = NULL;
        bool had_auth = false;
        const char *text;
        int r;

        /* image.auth is taken out for the hash and put back (last among
         * image's keys, which nothing after the parse minds) */
        if (json_object_object_get_ex(body, "image", &image) &&
            json_object_is_type(image, json_type_object) &&
            json_object_object_get_ex(image, "auth", &auth)) {
                had_auth = true;
                json_object_get(auth);
                json_object_object_del(image, "auth");
        }
        text = json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN);
        r = text ? digest_sha256_hex(text, strlen(text), ret) : -ENOMEM;
        if (had_auth)
                json_object_object_add(image, "auth", auth);
        return r;
}

/* an optional string member: absent or null gives *ret = NULL */
static int event_str(struct json_object *body, const char *key, const char **ret)
{
        struct json_object *v;

        *ret = NULL;
        if (!json_object_object_get_ex(body, key, &v) || json_object_is_type(v, json_type_null))
                return 0;
        if (!json_object_is_type(v, json_type_string) ||
            strlen(json_object_get_string(v)) != (size_t)json_object_get_string_len(v))
                return -EINVAL;
        *ret = json_object_get_string(v);
        return 0;
}

int osb_metrics_event_parse(struct json_object *body, struct osb_metrics_event *ret, char *err)
{
        struct json_object *v;
        const char *type;

        memset(ret, 0, sizeof(*ret));
        if (event_str(body, "eventType", &type) < 0 || !type || strcmp(type, "sandbox.create") != 0) {
                snprintf(err, OSB_ERR_MAX, "eventType must be \"sandbox.create\" (the only event known)");
                return -EINVAL;
        }
        if (!json_object_object_get_ex(body, "createDurationMs", &v) || !json_object_is_type(v, json_type_int) ||
            json_object_get_int64(v) < 0 || json_object_get_int64(v) > OSB_EVENT_DURATION_MAX_MS) {
                snprintf(err, OSB_ERR_MAX, "createDurationMs must be an integer from 0 to %lld (milliseconds)",
                         (long long)OSB_EVENT_DURATION_MAX_MS);
                return -EINVAL;
        }
        ret->duration_ms = json_object_get_int64(v);
        if (!json_object_object_get_ex(body, "success", &v) || !json_object_is_type(v, json_type_boolean)) {
                snprintf(err, OSB_ERR_MAX, "success must be a boolean");
                return -EINVAL;
        }
        ret->success = json_object_get_boolean(v);
        if (event_str(body, "sandboxId", &ret->sandbox_id) < 0 ||
            (ret->sandbox_id && !json_input_id_valid(ret->sandbox_id))) {
                snprintf(err, OSB_ERR_MAX, "sandboxId must be a sandbox id (1 to %d of [A-Za-z0-9._@-])",
                         JSON_INPUT_ID_MAX);
                return -EINVAL;
        }
        if (event_str(body, "image", &ret->image) < 0 ||
            (ret->image && (!ret->image[0] || strlen(ret->image) > OSB_EVENT_IMAGE_MAX))) {
                snprintf(err, OSB_ERR_MAX, "image must be a string of 1 to %d bytes", OSB_EVENT_IMAGE_MAX);
                return -EINVAL;
        }
        return 0;
}
