/* template_store: see template_store.h. */
#include "sandbox/template_store.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json_input.h"
#include "store/lua_scripts.h"
#include "core/timeutil.h"

/* The FsbTemplate answer of one stored record (its parts as Redis strings). */
static int render(const char *id, const redisReply *spec, const redisReply *created,
                  const redisReply *updated, struct json_object **ret_spec, struct json_object **ret)
{
        struct json_object *s;

        *ret = NULL;
        if (!reply_is_str(spec, NULL) || !reply_is_str(created, NULL) || !reply_is_str(updated, NULL))
                return -EPROTO;
        if (!(s = json_parse_or_null(spec->str)) || !json_object_is_type(s, json_type_object)) {
                json_put(s);
                return -EPROTO;
        }
        *ret = template_json(s, id, atoll(created->str), atoll(updated->str));
        if (ret_spec)
                *ret_spec = s;
        else
                json_put(s);
        if (!*ret) {
                if (ret_spec) {
                        json_put(*ret_spec);
                        *ret_spec = NULL;
                }
                return -ENOMEM;
        }
        return 0;
}

/* Tenant's template id: its stored form into *ret_spec and/or its answer
 * into *ret (either may be NULL). */
static int load(struct redis_conn *rc, const char *tenant, const char *id,
                struct json_object **ret_spec, struct json_object **ret)
{
        const char *argv[] = { id, tenant };
        struct json_object *answer = NULL;
        redisReply *rep = NULL;
        int r;

        if (ret_spec)
                *ret_spec = NULL;
        if (ret)
                *ret = NULL;
        if (!template_id_valid(id))
                return -ENOENT;
        r = redis_conn_script_tagged(rc, LUA_TEMPLATE_GET, 2, argv, &rep);
        if (r < 0)
                return r;
        if (reply_is_str(rep->element[0], "notfound"))
                r = -ENOENT;
        else if (!reply_is_str(rep->element[0], "ok") || rep->elements < 4)
                r = -EPROTO;
        else
                r = render(id, rep->element[1], rep->element[2], rep->element[3], ret_spec, &answer);
        reply_free(rep);
        if (r == 0 && ret)
                *ret = answer;
        else
                json_put(answer);
        return r;
}

int template_store_create(struct redis_conn *rc, const struct broker_config *cfg, const char *tenant,
                          struct json_object *spec, struct json_object **ret, long long *ret_n)
{
        const char *text = json_object_to_json_string_ext(spec, JSON_C_TO_STRING_PLAIN);
        char id[TEMPLATE_ID_LEN + 1], max[16];
        redisReply *rep = NULL;
        int r = -EEXIST;

        *ret = NULL;
        *ret_n = 0;
        if (!text)
                return -ENOMEM;
        snprintf(max, sizeof(max), "%d", cfg->template_max_per_tenant);
        /* an id drawn twice (2^-128) is drawn again */
        for (int i = 0; i < 4 && r == -EEXIST; i++) {
                const char *argv[] = { id, tenant, text, max };

                memcpy(id, "tpl-", 4);
                if (timeutil_random_id(id + 4, sizeof(id) - 4) < 0)
                        return -EIO;
                r = redis_conn_script_tagged(rc, LUA_TEMPLATE_CREATE, 4, argv, &rep);
                if (r < 0)
                        return r;
                if (reply_is_str(rep->element[0], "exists")) {
                        r = -EEXIST;
                } else if (reply_is_str(rep->element[0], "limit") && rep->elements > 1 &&
                           rep->element[1]->type == REDIS_REPLY_INTEGER) {
                        *ret_n = rep->element[1]->integer;
                        r = -EDQUOT;
                } else if (reply_is_str(rep->element[0], "ok") && rep->elements > 1 &&
                           reply_is_str(rep->element[1], NULL)) {
                        long long now = atoll(rep->element[1]->str);
                        r = (*ret = template_json(spec, id, now, now)) ? 0 : -ENOMEM;
                } else {
                        r = -EPROTO;
                }
                reply_free(rep);
                rep = NULL;
        }
        return r == -EEXIST ? -EIO : r;
}

int template_store_get(struct redis_conn *rc, const char *tenant, const char *id,
                       struct json_object **ret)
{
        return load(rc, tenant, id, NULL, ret);
}

int template_store_list(struct redis_conn *rc, const struct broker_config *cfg, const char *tenant,
                        struct json_object *filter, long page, long size, long long *ret_total,
                        struct json_object **ret_items)
{
        char max[16];
        const char *argv[] = { tenant, max };
        struct json_object *items = NULL;
        redisReply *rep = NULL;
        long long total = 0, first = (long long)(page - 1) * size;
        int r;

        *ret_items = NULL;
        *ret_total = 0;
        /* at least one, so that a lowered cap still lists what was stored */
        snprintf(max, sizeof(max), "%d",
                 cfg->template_max_per_tenant > 0 ? cfg->template_max_per_tenant * 2 : 1);
        r = redis_conn_script(rc, LUA_TEMPLATE_LIST, 2, argv, &rep);
        if (r < 0)
                return r;
        r = -EPROTO;
        if (rep->type != REDIS_REPLY_ARRAY || rep->elements % 4)
                goto out;
        r = -ENOMEM;
        if (!(items = json_object_new_array()))
                goto out;
        for (size_t i = 0; i < rep->elements; i += 4) {
                struct json_object *spec = NULL, *answer = NULL;

                if (!reply_is_str(rep->element[i], NULL)) {
                        r = -EPROTO;
                        goto out;
                }
                r = render(rep->element[i]->str, rep->element[i + 1], rep->element[i + 2],
                           rep->element[i + 3], &spec, &answer);
                if (r < 0)
                        goto out;
                if (template_filter_match(spec, filter)) {
                        if (total >= first && total < first + size) {
                                if (json_object_array_add(items, answer) < 0) {
                                        json_put(spec);
                                        json_put(answer);
                                        r = -ENOMEM;
                                        goto out;
                                }
                                answer = NULL;
                        }
                        total++;
                }
                json_put(spec);
                json_put(answer);
        }
        *ret_items = items;
        *ret_total = total;
        items = NULL;
        r = 0;
out:
        json_put(items);
        reply_free(rep);
        return r;
}

int template_store_delete(struct redis_conn *rc, const char *tenant, const char *id)
{
        const char *argv[] = { id, tenant };
        redisReply *rep = NULL;
        int r;

        if (!template_id_valid(id))
                return -ENOENT;
        r = redis_conn_script_tagged(rc, LUA_TEMPLATE_DELETE, 2, argv, &rep);
        if (r < 0)
                return r;
        if (reply_is_str(rep->element[0], "ok"))
                r = 0;
        else
                r = reply_is_str(rep->element[0], "notfound") ? -ENOENT : -EPROTO;
        reply_free(rep);
        return r;
}

int template_store_expand(struct redis_conn *rc, const char *tenant, struct json_object *body,
                          struct json_object **ret, char *err)
{
        struct json_object *spec = NULL;
        const char *id;
        int r = template_create_ref(body, &id, err);

        *ret = NULL;
        if (r < 0 || !id)
                return r;
        r = load(rc, tenant, id, &spec, NULL);
        if (r == -ENOENT)
                snprintf(err, TEMPLATE_ERR_MAX, "%.64s", id);
        if (r == 0)
                r = template_merge(spec, body, ret, err);
        json_put(spec);
        return r;
}
