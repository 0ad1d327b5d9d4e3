/* opensandbox: see opensandbox.h. */
#include "sandbox/opensandbox.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "codec/digest.h"
#include "core/json_input.h"
#include "sandbox/opensandbox_reply.h"
#include "store/redis_conn.h"
#include "core/timeutil.h"

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
        id = reply_hash_get(h, "sandboxId");
        state = reply_hash_get(h, "state");
        if (!id || !state)
                return -EPROTO;
        o = json_object_new_object();
        st = json_object_new_object();
        json_object_object_add(o, "id", json_object_new_string(id));
        /* a restored sandbox names its snapshot instead of an image (the spec's Sandbox) */
        if (full && (v = reply_hash_get(h, "snapshotId")) && *v) {
                json_object_object_add(o, "snapshotId", json_object_new_string(v));
        } else if (full && (v = reply_hash_get(h, "image"))) {
                struct json_object *img = json_object_new_object();
                json_object_object_add(img, "uri", json_object_new_string(v));
                json_object_object_add(o, "image", img);
        }
        json_object_object_add(st, "state", json_object_new_string(state));
        if ((v = reply_hash_get(h, "reason")) && *v)
                json_object_object_add(st, "reason", json_object_new_string(v));
        if ((v = reply_hash_get(h, "message")) && *v)
                json_object_object_add(st, "message", json_object_new_string(v));
        if ((v = reply_hash_get(h, "lastTransitionAt")))
                json_object_object_add(st, "lastTransitionAt", iso_time(v));
        json_object_object_add(o, "status", st);
        json_object_object_add(o, "metadata", parsed(reply_hash_get(h, "metadata"), "{}"));
        if ((v = reply_hash_get(h, "extensions")) && *v)
                json_object_object_add(o, "extensions", parsed(v, "{}"));
        /* a sandbox served by a warm-pool member: the spec's AllocationSummary */
        if (full && (v = reply_hash_get(h, "poolRef")) && *v) {
                struct json_object *a = json_object_new_object();

                json_object_object_add(a, "mode", json_object_new_string("pool"));
                json_object_object_add(a, "poolRef", json_object_new_string(v));
                json_object_object_add(a, "state", json_object_new_string("allocated"));
                json_object_object_add(o, "allocation", a);
        }
        json_object_object_add(o, "entrypoint", parsed(reply_hash_get(h, "entrypoint"), "[\"sleep\",\"infinity\"]"));
        /* expiresAt is omitted for manual cleanup, as the spec says */
        if ((v = reply_hash_get(h, "expiresAt")) && *v)
                json_object_object_add(o, "expiresAt", iso_time(v));
        json_object_object_add(o, "createdAt", iso_time(reply_hash_get(h, "createdAt")));
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
