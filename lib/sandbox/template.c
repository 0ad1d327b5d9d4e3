/* template: see template.h. */
#include "sandbox/template.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json_input.h"
#include "sandbox/opensandbox.h"
#include "core/timeutil.h"
#include "codec/url.h"

/* The reference's default entrypoint of a template (and of a restore). */
static const char *const default_entrypoint[] = { "tail", "-f", "/dev/null" };

/* Fields of CreateFsbTemplateRequest (extra = "forbid" in the reference). */
static const char *const request_fields[] = { "image",      "publish", "format",   "resourceLimits",
                                              "entrypoint", "env",     "metadata", "readiness" };

/* What a template-mode create may not name (the reference's conflicts). */
static const char *const workload_fields[] = { "image",    "snapshotId",     "entrypoint",
                                               "env",      "resourceLimits", "resourceRequests",
                                               "volumes",  "platform",       "credentialProxy",
                                               "lifecycle" };

bool template_id_valid(const char *s)
{
        if (!s || strlen(s) != TEMPLATE_ID_LEN || strncmp(s, "tpl-", 4) != 0)
                return false;
        for (const char *p = s + 4; *p; p++)
                if (!isdigit((unsigned char)*p) && !(*p >= 'a' && *p <= 'f'))
                        return false;
        return true;
}

static bool is_null(struct json_object *v)
{
        return !v || json_object_is_type(v, json_type_null);
}

/* A non-blank string of at most max bytes, without NULs or control
 * characters (it is echoed and may be logged by a client). */
static bool text_ok(struct json_object *v, size_t max)
{
        const char *s;
        bool blank = true;

        if (!json_object_is_type(v, json_type_string))
                return false;
        s = json_object_get_string(v);
        if (strlen(s) != (size_t)json_object_get_string_len(v) || strlen(s) > max)
                return false;
        for (; *s; s++) {
                if (iscntrl((unsigned char)*s))
                        return false;
                if (!isspace((unsigned char)*s))
                        blank = false;
        }
        return !blank;
}

static int copy_field(struct json_object *from, const char *key, struct json_object *to)
{
        struct json_object *v;

        if (!json_object_object_get_ex(from, key, &v) || is_null(v))
                return 0;
        return json_object_object_add(to, key, json_object_get(v)) < 0 ? -ENOMEM : 0;
}

static int parse_limits(struct json_object *v, char *err)
{
        if (!json_object_is_type(v, json_type_object)) {
                snprintf(err, TEMPLATE_ERR_MAX, "resourceLimits must be an object of strings");
                return -EINVAL;
        }
        json_object_object_foreach(v, k, lv) {
                if (strcmp(k, "cpu") && strcmp(k, "memory") && strcmp(k, "disk")) {
                        snprintf(err, TEMPLATE_ERR_MAX,
                                 "Unsupported resourceLimits keys for templates: %.64s; supported: "
                                 "cpu, "
                                 "memory, disk.",
                                 k);
                        return -EINVAL;
                }
                if (!json_object_is_type(lv, json_type_string)) {
                        snprintf(err, TEMPLATE_ERR_MAX, "resourceLimits.%s must be a string", k);
                        return -EINVAL;
                }
        }
        return 0;
}

static int parse_readiness(struct json_object *v, struct json_object **ret, char *err)
{
        struct json_object *probe = NULL, *warm = NULL, *o;

        *ret = NULL;
        if (!json_object_is_type(v, json_type_object)) {
                snprintf(err, TEMPLATE_ERR_MAX, "readiness must be an object");
                return -EINVAL;
        }
        json_object_object_get_ex(v, "probe", &probe);
        json_object_object_get_ex(v, "warmupSeconds", &warm);
        if (!is_null(probe) && !text_ok(probe, TEMPLATE_PROBE_MAX)) {
                snprintf(err, TEMPLATE_ERR_MAX,
                         "readiness.probe must be a string of at most %d bytes", TEMPLATE_PROBE_MAX);
                return -EINVAL;
        }
        if (!is_null(warm) &&
            (!json_object_is_type(warm, json_type_int) || json_object_get_int64(warm) < 0 ||
             json_object_get_int64(warm) > 86400)) {
                snprintf(err, TEMPLATE_ERR_MAX,
                         "readiness.warmupSeconds must be an integer from 0 to 86400");
                return -EINVAL;
        }
        /* the reference's model ignores other keys: keep only these two */
        if (!(o = json_object_new_object()))
                return -ENOMEM;
        if (copy_field(v, "probe", o) < 0 || copy_field(v, "warmupSeconds", o) < 0) {
                json_put(o);
                return -ENOMEM;
        }
        *ret = o;
        return 0;
}

/* The create body of spec and body's non-workload fields (no checks). */
static int merge_into(struct json_object *spec, struct json_object *body, struct json_object **ret)
{
        struct json_object *o = json_object_new_object(), *image = json_object_new_object(), *v, *lim;
        int r = -ENOMEM;

        *ret = NULL;
        if (!o || !image)
                goto out;
        json_object_object_foreach(body, k, bv) {
                if (strcmp(k, "templateId") == 0)
                        continue;
                if (json_object_object_add(o, k, json_object_get(bv)) < 0)
                        goto out;
        }
        if (json_add_str(image, "uri", json_get_str(spec, "image")) < 0)
                goto out;
        r = json_object_object_add(o, "image", image) < 0 ? -ENOMEM : 0;
        image = NULL;
        if (r < 0)
                goto out;
        r = -ENOMEM;
        if (json_object_object_get_ex(spec, "entrypoint", &v) && !is_null(v)) {
                if (json_object_object_add(o, "entrypoint", json_object_get(v)) < 0)
                        goto out;
        } else {
                struct json_object *ep = json_object_new_array();
                for (size_t i = 0;
                     ep && i < sizeof(default_entrypoint) / sizeof(default_entrypoint[0]); i++)
                        if (json_object_array_add(ep, json_object_new_string(default_entrypoint[i])) <
                            0) {
                                json_put(ep);
                                ep = NULL;
                        }
                if (json_add(o, "entrypoint", ep) < 0)
                        goto out;
        }
        if (copy_field(spec, "env", o) < 0)
                goto out;
        if (json_object_object_get_ex(spec, "resourceLimits", &v) && !is_null(v)) {
                /* the template's disk is the sandbox's ephemeral-storage */
                if (!(lim = json_object_new_object()) || json_add(o, "resourceLimits", lim) < 0)
                        goto out;
                json_object_object_foreach(v, k2, lv) {
                        const char *key = strcmp(k2, "disk") == 0 ? OSB_LIMIT_DISK : k2;
                        if (json_object_object_add(lim, key, json_object_get(lv)) < 0)
                                goto out;
                }
        }
        *ret = o;
        o = NULL;
        r = 0;
out:
        json_put(image);
        json_put(o);
        return r;
}

int template_parse(const struct broker_config *cfg, struct json_object *body,
                   struct json_object **ret, char *err)
{
        struct json_object *o = NULL, *v, *readiness = NULL, *trial = NULL, *empty = NULL;
        struct osb_create *c = NULL;
        const char *format = "overlaybd";
        char cerr[OSB_ERR_MAX];
        int r = -EINVAL;

        *ret = NULL;
        json_object_object_foreach(body, k, fv) {
                bool known = false;
                (void)fv;
                for (size_t i = 0; i < sizeof(request_fields) / sizeof(request_fields[0]); i++)
                        known = known || strcmp(k, request_fields[i]) == 0;
                if (!known) {
                        snprintf(err, TEMPLATE_ERR_MAX, "%.64s: no such field of a template", k);
                        goto out;
                }
        }
        if (!json_object_object_get_ex(body, "image", &v) || !text_ok(v, 255)) {
                snprintf(err, TEMPLATE_ERR_MAX,
                         "image is required: an image reference of at most 255 bytes");
                goto out;
        }
        if (!json_object_object_get_ex(body, "publish", &v) || !text_ok(v, TEMPLATE_PUBLISH_MAX)) {
                snprintf(err, TEMPLATE_ERR_MAX, "publish is required: a string of at most %d bytes",
                         TEMPLATE_PUBLISH_MAX);
                goto out;
        }
        if (json_object_object_get_ex(body, "format", &v) && !is_null(v)) {
                format = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";
                if (strcmp(format, "native") && strcmp(format, "overlaybd")) {
                        snprintf(err, TEMPLATE_ERR_MAX, "format must be \"native\" or \"overlaybd\"");
                        goto out;
                }
        }
        if (json_object_object_get_ex(body, "resourceLimits", &v) && !is_null(v) &&
            parse_limits(v, err) < 0)
                goto out;
        if (json_object_object_get_ex(body, "metadata", &v) && !is_null(v)) {
                if (osb_metadata_check(v, cerr) < 0) {
                        snprintf(err, TEMPLATE_ERR_MAX, "%s", cerr);
                        goto out;
                }
                if (strlen(json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN)) >=
                    OSB_METADATA_MAX) {
                        snprintf(err, TEMPLATE_ERR_MAX, "metadata is larger than %d bytes",
                                 OSB_METADATA_MAX - 1);
                        goto out;
                }
        }
        if (json_object_object_get_ex(body, "readiness", &v) && !is_null(v) &&
            (r = parse_readiness(v, &readiness, err)) < 0)
                goto out;
        r = -ENOMEM;
        if (!(o = json_object_new_object()))
                goto out;
        if (json_add_str(o, "format", format) < 0)
                goto out;
        for (const char *const *f = (const char *const[]){ "resourceLimits", "entrypoint", "env",
                                                           "metadata", NULL };
             *f; f++)
                if (copy_field(body, *f, o) < 0)
                        goto out;
        if (readiness && json_add(o, "readiness", json_object_get(readiness)) < 0)
                goto out;
        for (const char *const *f = (const char *const[]){ "image", "publish", NULL }; *f; f++) {
                /* stored stripped of surrounding spaces, as the reference does */
                const char *b = json_get_str(body, *f), *e = b + strlen(b);
                while (isspace((unsigned char)*b))
                        b++;
                while (e > b && isspace((unsigned char)e[-1]))
                        e--;
                if (json_add(o, *f, json_object_new_string_len(b, (int)(e - b))) < 0)
                        goto out;
        }
        /* the create it stands for must be valid here: the same parser a
         * create runs, so a stored template can always be used */
        if (!(empty = json_object_new_object()) || (r = merge_into(o, empty, &trial)) < 0 ||
            !(c = calloc(1, sizeof(*c)))) {
                r = -ENOMEM;
                goto out;
        }
        if (osb_create_parse(cfg, trial, c, cerr) < 0) {
                snprintf(err, TEMPLATE_ERR_MAX, "%s", cerr);
                r = -EINVAL;
                goto out;
        }
        if (strlen(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN)) >= TEMPLATE_STORED_MAX) {
                snprintf(err, TEMPLATE_ERR_MAX, "a template is at most %d bytes as JSON",
                         TEMPLATE_STORED_MAX);
                r = -EINVAL;
                goto out;
        }
        *ret = o;
        o = NULL;
        r = 0;
out:
        if (c)
                osb_create_wipe(c);
        free(c);
        json_put(readiness);
        json_put(trial);
        json_put(empty);
        json_put(o);
        return r;
}

static struct json_object *iso(long long ms)
{
        char buf[40];

        if (timeutil_format_iso(ms, buf, sizeof(buf)) < 0)
                return NULL;
        return json_object_new_string(buf);
}

struct json_object *template_json(struct json_object *spec, const char *id, long long created_ms,
                                  long long updated_ms)
{
        struct json_object *o = json_object_new_object(), *st = json_object_new_object();

        if (!o || !st)
                goto fail;
        if (json_add_str(o, "templateId", id) < 0)
                goto fail;
        json_object_object_foreach(spec, k, v)
                if (json_object_object_add(o, k, json_object_get(v)) < 0)
                        goto fail;
        /* nothing to build: the image runs as it is (template.h) */
        if (json_add_str(st, "phase", "Succeeded") < 0 || json_add(o, "status", st) < 0) {
                st = NULL;
                goto fail;
        }
        st = NULL;
        if (json_add(o, "createdAt", iso(created_ms)) < 0 ||
            json_add(o, "updatedAt", iso(updated_ms)) < 0)
                goto fail;
        return o;
fail:
        json_put(st);
        json_put(o);
        return NULL;
}

int template_filter_parse(const char *s, struct json_object **ret, char *err)
{
        struct json_object *o = json_object_new_object();
        char k[128], v[128];
        int r, n = 0;

        *ret = NULL;
        if (!o)
                return -ENOMEM;
        /* the value is itself a query string ("a=b&c=d"), its parts encoded once more */
        while ((r = url_query_next(&s, k, sizeof(k), v, sizeof(v))) == 1) {
                if (!*k || ++n > TEMPLATE_FILTER_MAX) {
                        r = -EINVAL;
                        break;
                }
                if (json_add_str(o, k, v) < 0) {
                        json_put(o);
                        return -ENOMEM;
                }
        }
        if (r < 0) {
                snprintf(err, TEMPLATE_ERR_MAX,
                         "metadata filter must be at most %d k=v pairs joined by &",
                         TEMPLATE_FILTER_MAX);
                json_put(o);
                return -EINVAL;
        }
        *ret = o;
        return 0;
}

bool template_filter_match(struct json_object *spec, struct json_object *filter)
{
        struct json_object *md = NULL;

        if (!filter || json_object_object_length(filter) == 0)
                return true;
        if (!json_object_object_get_ex(spec, "metadata", &md) ||
            !json_object_is_type(md, json_type_object))
                return false;
        json_object_object_foreach(filter, k, want) {
                const char *have = json_get_str(md, k);
                if (!have || strcmp(have, json_object_get_string(want)) != 0)
                        return false;
        }
        return true;
}

int template_create_ref(struct json_object *body, const char **ret, char *err)
{
        struct json_object *v;
        const char *s;

        *ret = NULL;
        if (!json_object_object_get_ex(body, "templateId", &v) || is_null(v))
                return 0;
        if (!json_object_is_type(v, json_type_string)) {
                snprintf(err, TEMPLATE_ERR_MAX, "templateId must be a string");
                return -EINVAL;
        }
        for (s = json_object_get_string(v); *s && isspace((unsigned char)*s); s++)
                ;
        if (*s)
                *ret = json_object_get_string(v);
        return 0;
}

int template_merge(struct json_object *spec, struct json_object *body, struct json_object **ret,
                   char *err)
{
        struct json_object *v;
        char names[160] = "";
        size_t len = 0;

        *ret = NULL;
        for (size_t i = 0; i < sizeof(workload_fields) / sizeof(workload_fields[0]); i++)
                if (json_object_object_get_ex(body, workload_fields[i], &v) && !is_null(v))
                        len += (size_t)snprintf(names + len,
                                                len < sizeof(names) ? sizeof(names) - len : 0,
                                                "%s%s", len ? ", " : "", workload_fields[i]);
        if (json_object_object_get_ex(body, "secureAccess", &v) && json_object_get_boolean(v))
                len += (size_t)snprintf(names + len, len < sizeof(names) ? sizeof(names) - len : 0,
                                        "%ssecureAccess", len ? ", " : "");
        if (len) {
                snprintf(err,
                         TEMPLATE_ERR_MAX, "templateId cannot be combined with: %s; the workload shape is fixed by the template",
                         names);
                return -EINVAL;
        }
        if (!json_object_object_get_ex(body, "timeout", &v) || is_null(v)) {
                snprintf(err, TEMPLATE_ERR_MAX, "timeout is required when templateId is provided.");
                return -EINVAL;
        }
        return merge_into(spec, body, ret);
}
