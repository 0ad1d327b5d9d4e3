/* egress_store: see egress_store.h. */
#include "sandbox/egress_store.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json_input.h"
#include "store/lua_scripts.h"
#include "store/sandbox_record.h"

#define EGRESS_CAS_TRIES 32

int egress_config_json(const struct broker_config *cfg, const char *mode, char **ret)
{
        const char *v = NULL;
        struct egress_policy *p = malloc(sizeof(*p));
        char err[256];
        int r;

        *ret = NULL;
        if (!p)
                return -ENOMEM;
        if (mode && !strcmp(mode, "exclusive"))
                v = cfg->egress_policy_exclusive;
        else if (mode && !strcmp(mode, "user_shared"))
                v = cfg->egress_policy_user_shared;
        else if (mode && !strcmp(mode, "multi_user_shared"))
                v = cfg->egress_policy_multi_user_shared;
        if (!v || !v[0])
                v = cfg->egress_default;
        if (v[0])
                r = egress_policy_parse(v, strlen(v), p, err, sizeof(err));
        else
                egress_policy_deny_all(p), r = 0;
        if (r == 0)
                r = egress_policy_to_json(p, ret);
        free(p);
        return r;
}

int egress_policy_for_create(const struct broker_config *cfg, struct json_object *body, char **ret,
                             char *err, size_t errlen)
{
        struct egress_policy *p = NULL;
        struct json_object *v;
        const char *text;
        char why[256];
        int r;

        *ret = NULL;
        if (!json_object_object_get_ex(body, "networkPolicy", &v) ||
            json_object_is_type(v, json_type_null))
                return egress_config_json(cfg, "exclusive", ret);
        if (!json_object_is_type(v, json_type_object)) {
                snprintf(err, errlen, "networkPolicy must be an object {defaultAction, egress}");
                return -EINVAL;
        }
        p = malloc(sizeof(*p));
        if (!p)
                return -ENOMEM;
        text = json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN);
        r = text ? egress_policy_parse(text, strlen(text), p, why, sizeof(why)) : -ENOMEM;
        if (r == -EINVAL)
                snprintf(err, errlen, "networkPolicy: %s", why);
        if (r == 0)
                r = egress_policy_to_json(p, ret);
        free(p);
        return r;
}

/* Run an egress script; *ret_word gets its first word. */
static int run(struct redis_conn *rc, enum lua_script_id id, int argc, const char **argv,
               char *ret_word, size_t size)
{
        redisReply *rep = NULL;
        int r = redis_conn_script(rc, id, argc, argv, &rep);

        if (r < 0)
                return r;
        if (rep->type != REDIS_REPLY_ARRAY || rep->elements < 1 ||
            rep->element[0]->type != REDIS_REPLY_STRING) {
                reply_free(rep);
                return -EPROTO;
        }
        snprintf(ret_word, size, "%s", rep->element[0]->str);
        reply_free(rep);
        return 0;
}

int egress_config_policies(const struct broker_config *cfg, char *pol[EGRESS_CONFIG_POLICIES])
{
        static const char *const modes[] = { NULL, "exclusive", "user_shared", "multi_user_shared" };
        int r = 0;

        for (int i = 0; i < EGRESS_CONFIG_POLICIES; i++)
                pol[i] = NULL;
        for (int i = 0; i < 4 && r == 0; i++) {
                /* Unset mode settings are '': the claim script falls back on the default. */
                const char *set = i == 1   ? cfg->egress_policy_exclusive
                                  : i == 2 ? cfg->egress_policy_user_shared
                                  : i == 3 ? cfg->egress_policy_multi_user_shared
                                           : "x";
                if (set[0])
                        r = egress_config_json(cfg, modes[i], &pol[i]);
                else if (!(pol[i] = strdup("")))
                        r = -ENOMEM;
        }
        if (r == 0 && cfg->egress_pool_policies[0]) {
                char err[256];

                r = egress_pool_policies_parse(cfg->egress_pool_policies,
                                               strlen(cfg->egress_pool_policies), &pol[4], err,
                                               sizeof(err));
        } else if (r == 0 && !(pol[4] = strdup(""))) {
                r = -ENOMEM;
        }
        if (r < 0)
                for (int i = 0; i < EGRESS_CONFIG_POLICIES; i++) {
                        free(pol[i]);
                        pol[i] = NULL;
                }
        return r;
}

/* Read the stored text (*ret_text malloc'd, "" when the field is absent) and
 * parse it into *p. */
static int read_raw(struct redis_conn *rc, const struct broker_config *cfg, const char *sid,
                    char **ret_text, struct egress_policy *p)
{
        char err[256];
        struct sandbox_record rec;
        int r;

        *ret_text = NULL;
        r = sandbox_record_read(rc, cfg, sid, SANDBOX_RECORD_EGRESS, &rec);
        if (r < 0)
                return r;
        r = -ENOENT;
        if (!strcmp(rec.state, "Terminated"))
                goto out;
        if (rec.egress_policy[0]) {
                r = egress_policy_parse(rec.egress_policy, strlen(rec.egress_policy), p, err, sizeof(err));
                if (r == -EINVAL)
                        r = -EPROTO;
                if (r < 0)
                        goto out;
        } else {
                egress_policy_deny_all(p);
        }
        *ret_text = rec.egress_policy; /* handed over */
        rec.egress_policy = NULL;
        r = 0;
out:
        sandbox_record_clear(&rec);
        return r;
}

int egress_store_get(struct redis_conn *rc, const struct broker_config *cfg, const char *sid,
                     struct egress_policy *ret)
{
        char *text = NULL;
        int r = read_raw(rc, cfg, sid, &text, ret);

        free(text);
        return r;
}

/* Write new_p if the field still reads old_text. */
static int cas(struct redis_conn *rc, const char *sid, const char *old_text,
               const struct egress_policy *new_p)
{
        char *text = NULL, word[16];
        int r = egress_policy_to_json(new_p, &text);

        if (r < 0)
                return r;
        const char *argv[] = { sid, old_text, text };
        r = run(rc, LUA_EGRESS_CAS, 3, argv, word, sizeof(word));
        free(text);
        if (r < 0)
                return r;
        if (!strcmp(word, "notfound"))
                return -ENOENT;
        return !strcmp(word, "ok") ? 0 : -EAGAIN;
}

/* Read, change with op, compare-and-set; again on a conflict. */
static int modify(struct redis_conn *rc, const struct broker_config *cfg, const char *sid,
                  int (*op)(struct egress_policy *p, const void *arg, char *err, size_t errlen),
                  const void *arg, struct egress_policy *ret, char *err, size_t errlen)
{
        int r = -EAGAIN;

        for (int i = 0; i < EGRESS_CAS_TRIES && r == -EAGAIN; i++) {
                char *old = NULL;

                r = read_raw(rc, cfg, sid, &old, ret);
                if (r == 0)
                        r = op(ret, arg, err, errlen);
                if (r == 0)
                        r = cas(rc, sid, old, ret);
                free(old);
        }
        if (r == -EAGAIN)
                snprintf(err, errlen, "the policy changed too often meanwhile; try again");
        return r;
}

int egress_store_set(struct redis_conn *rc, const struct broker_config *cfg, const char *sid,
                     const struct egress_policy *p)
{
        struct egress_policy *cur = malloc(sizeof(*cur));
        int r = -EAGAIN;

        if (!cur)
                return -ENOMEM;
        for (int i = 0; i < EGRESS_CAS_TRIES && r == -EAGAIN; i++) {
                char *old = NULL;

                r = read_raw(rc, cfg, sid, &old, cur);
                if (r == 0)
                        r = cas(rc, sid, old, p);
                free(old);
        }
        free(cur);
        return r;
}

struct patch_arg {
        const struct egress_rule *in;
        size_t n;
};

static int op_patch(struct egress_policy *p, const void *arg, char *err, size_t errlen)
{
        const struct patch_arg *a = arg;

        return egress_policy_merge(p, a->in, a->n, err, errlen);
}

int egress_store_patch(struct redis_conn *rc, const struct broker_config *cfg, const char *sid,
                       const struct egress_rule *in, size_t n, struct egress_policy *ret, char *err,
                       size_t errlen)
{
        struct patch_arg a = { in, n };

        return modify(rc, cfg, sid, op_patch, &a, ret, err, errlen);
}

struct remove_arg {
        char (*targets)[EGRESS_TARGET_MAX + 1];
        size_t n;
};

static int op_remove(struct egress_policy *p, const void *arg, char *err, size_t errlen)
{
        const struct remove_arg *a = arg;

        (void)err;
        (void)errlen;
        (void)egress_policy_remove(p, a->targets, a->n);
        return 0;
}

int egress_store_remove(struct redis_conn *rc, const struct broker_config *cfg, const char *sid,
                        char (*targets)[EGRESS_TARGET_MAX + 1], size_t n, struct egress_policy *ret)
{
        struct remove_arg a = { targets, n };
        char err[128];

        return modify(rc, cfg, sid, op_remove, &a, ret, err, sizeof(err));
}
