/* snapshot: see snapshot.h. */
#include "sandbox/snapshot.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "store/redis_conn.h"
#include "sandbox/snapshot_reply.h"
#include "core/timeutil.h"

bool snapshot_id_valid(const char *id)
{
        if (!id || strlen(id) != SNAPSHOT_ID_LEN)
                return false;
        return strspn(id, "0123456789abcdef") == SNAPSHOT_ID_LEN;
}

int snapshot_image_name(const char *id, char *buf, size_t size)
{
        if (!snapshot_id_valid(id) || size < SNAPSHOT_IMAGE_MAX)
                return -EINVAL;
        snprintf(buf, size, "%s:%s", SNAPSHOT_IMAGE_REPO, id);
        return 0;
}

int snapshot_create_parse(struct json_object *body, char *ret_name, char *err)
{
        struct json_object *v;
        const char *s;
        int len;

        ret_name[0] = '\0';
        if (!body || json_object_is_type(body, json_type_null))
                return 0;
        if (!json_object_is_type(body, json_type_object)) {
                snprintf(err, SNAPSHOT_ERR_MAX, "the body must be an object {\"name\": ...}");
                return -EINVAL;
        }
        /* additionalProperties: false */
        json_object_object_foreach(body, k, val) {
                (void)val;
                if (strcmp(k, "name") != 0) {
                        snprintf(err, SNAPSHOT_ERR_MAX,
                                 "unknown field '%.64s' (a snapshot takes only name)", k);
                        return -EINVAL;
                }
        }
        if (!json_object_object_get_ex(body, "name", &v) || json_object_is_type(v, json_type_null))
                return 0;
        len = json_object_is_type(v, json_type_string) ? json_object_get_string_len(v) : -1;
        s = len > 0 ? json_object_get_string(v) : NULL;
        if (!s || len > SNAPSHOT_NAME_MAX || strlen(s) != (size_t)len) {
                snprintf(err, SNAPSHOT_ERR_MAX, "name must be a string of 1 to %d bytes",
                         SNAPSHOT_NAME_MAX);
                return -EINVAL;
        }
        for (const char *p = s; *p; p++)
                if ((unsigned char)*p < ' ' || *p == 0x7f) {
                        snprintf(err, SNAPSHOT_ERR_MAX, "name must not contain control characters");
                        return -EINVAL;
                }
        memcpy(ret_name, s, (size_t)len + 1);
        return 0;
}

const char *snapshot_state_canonical(const char *s)
{
        static const char *const states[] = { "Creating", "Deleting", "Ready", "Failed" };

        for (size_t i = 0; s && i < sizeof(states) / sizeof(states[0]); i++)
                if (strcasecmp(s, states[i]) == 0)
                        return states[i];
        return NULL;
}

/* epoch ms (text) as an RFC 3339 string, or NULL */
static struct json_object *iso(const char *ms)
{
        char buf[32];

        if (!ms || !*ms || timeutil_format_iso(atoll(ms), buf, sizeof(buf)) < 0)
                return NULL;
        return json_object_new_string(buf);
}

int snapshot_json(const redisReply *h, struct json_object **ret)
{
        struct json_object *o = NULL, *st = NULL;
        const char *id, *state, *v;
        int r = -ENOMEM;

        *ret = NULL;
        if (!h || h->type != REDIS_REPLY_ARRAY || h->elements % 2)
                return -EPROTO;
        if (h->elements == 0)
                return -ENOENT;
        id = reply_hash_get(h, "id");
        state = reply_hash_get(h, "state");
        if (!id || !state)
                return -EPROTO;
        o = json_object_new_object();
        st = json_object_new_object();
        if (!o || !st)
                goto out;
        json_object_object_add(o, "id", json_object_new_string(id));
        json_object_object_add(o, "sandboxId",
                               json_object_new_string((v = reply_hash_get(h, "sandboxId")) ? v : ""));
        if ((v = reply_hash_get(h, "name")) && *v)
                json_object_object_add(o, "name", json_object_new_string(v));
        json_object_object_add(st, "state", json_object_new_string(state));
        if ((v = reply_hash_get(h, "reason")) && *v)
                json_object_object_add(st, "reason", json_object_new_string(v));
        if ((v = reply_hash_get(h, "message")) && *v)
                json_object_object_add(st, "message", json_object_new_string(v));
        if ((v = reply_hash_get(h, "lastTransitionAt")) && *v)
                json_object_object_add(st, "lastTransitionAt", iso(v));
        json_object_object_add(o, "status", st);
        st = NULL;
        json_object_object_add(o, "createdAt", iso(reply_hash_get(h, "createdAt")));
        *ret = o;
        o = NULL;
        r = 0;
out:
        json_object_put(st);
        json_object_put(o);
        return r;
}
