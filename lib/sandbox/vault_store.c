/* vault_store: see vault_store.h. */
#include "sandbox/vault_store.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/json_input.h"
#include "store/lua_scripts.h"
#include "sandbox/vault.h"
#include "sandbox/vault_seal.h"

#define VAULT_CAS_TRIES 32

/* The stored text of sid's vault into *ret (malloc'd; "" = none). */
static int read_raw(struct redis_conn *rc, const char *sid, char **ret)
{
        const char *argv[] = { sid };
        redisReply *rep = NULL;
        int r = redis_conn_script(rc, LUA_VAULT_GET, 1, argv, &rep);

        *ret = NULL;
        if (r < 0)
                return r;
        r = -EPROTO;
        if (rep->type != REDIS_REPLY_ARRAY || rep->elements < 1 ||
            rep->element[0]->type != REDIS_REPLY_STRING)
                goto out;
        if (!strcmp(rep->element[0]->str, "notfound")) {
                r = -ENOENT;
                goto out;
        }
        if (rep->elements < 2 || rep->element[1]->type != REDIS_REPLY_STRING)
                goto out;
        r = (*ret = strdup(rep->element[1]->str)) ? 0 : -ENOMEM;
out:
        reply_free(rep);
        return r;
}

/* Parse a stored text; "" is -ENODATA. */
static int parse_stored(const char *text, struct json_object **ret)
{
        *ret = NULL;
        if (!text[0])
                return -ENODATA;
        if (!(*ret = json_parse_or_null(text)) || vault_check(*ret) < 0) {
                json_put(*ret);
                *ret = NULL;
                return -EPROTO;
        }
        return 0;
}

/* Write new_text ('' = remove) if the field still reads old_text. */
static int cas(struct redis_conn *rc, const char *sid, const char *old_text, const char *new_text)
{
        const char *argv[] = { sid, old_text, new_text };
        redisReply *rep = NULL;
        int r = redis_conn_script(rc, LUA_VAULT_CAS, 3, argv, &rep);

        if (r < 0)
                return r;
        if (rep->type != REDIS_REPLY_ARRAY || rep->elements < 1 ||
            rep->element[0]->type != REDIS_REPLY_STRING)
                r = -EPROTO;
        else if (!strcmp(rep->element[0]->str, "notfound"))
                r = -ENOENT;
        else
                r = !strcmp(rep->element[0]->str, "ok") ? 0 : -EAGAIN;
        reply_free(rep);
        return r;
}

static const char *text_of(struct json_object *v)
{
        return json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN);
}

int vault_store_get(struct redis_conn *rc, const char *sid, struct json_object **ret)
{
        char *text = NULL;
        int r = read_raw(rc, sid, &text);

        *ret = NULL;
        if (r == 0)
                r = parse_stored(text, ret);
        free(text);
        return r;
}

int vault_store_create(struct redis_conn *rc, const uint8_t *key, const char *sid,
                       struct json_object *v)
{
        const char *text;
        char *old = NULL;
        int r = key ? vault_seal_values(v, key, sid) : 0;

        if (r < 0)
                return r;
        if (!(text = text_of(v)))
                return -ENOMEM;
        r = read_raw(rc, sid, &old);
        if (r == 0 && old[0])
                r = -EEXIST;
        else if (r == 0)
                /* a conflict here means another create won meanwhile */
                r = cas(rc, sid, "", text) == -EAGAIN ? -EEXIST : 0;
        free(old);
        return r;
}

int vault_store_patch(struct redis_conn *rc, const uint8_t *key, const char *sid, const char *json,
                      size_t len, struct json_object **ret, char *err, size_t errlen)
{
        int r = -EAGAIN;

        *ret = NULL;
        for (int i = 0; i < VAULT_CAS_TRIES && r == -EAGAIN; i++) {
                struct json_object *cur = NULL, *next = NULL;
                const char *text;
                char *old = NULL;

                r = read_raw(rc, sid, &old);
                if (r == 0)
                        r = parse_stored(old, &cur);
                if (r == 0)
                        r = vault_apply_patch(cur, json, len, &next, err, errlen);
                if (r == 0 && key)
                        r = vault_seal_values(next, key, sid);
                if (r == 0)
                        r = (text = text_of(next)) ? cas(rc, sid, old, text) : -ENOMEM;
                if (r == 0) {
                        *ret = next;
                        next = NULL;
                }
                json_put(cur);
                json_put(next);
                free(old);
        }
        return r;
}

int vault_store_delete(struct redis_conn *rc, const char *sid)
{
        int r = -EAGAIN;

        for (int i = 0; i < VAULT_CAS_TRIES && r == -EAGAIN; i++) {
                char *old = NULL;

                r = read_raw(rc, sid, &old);
                if (r == 0 && !old[0])
                        r = -ENODATA;
                else if (r == 0)
                        r = cas(rc, sid, old, "");
                free(old);
        }
        return r;
}
