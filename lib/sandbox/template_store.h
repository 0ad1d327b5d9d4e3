/* template_store: a tenant's OpenSandbox templates (template.h) in Redis,
 * each operation one script of lib/store/lua/template_*.lua, so that the
 * handlers (fcgi/h_templates.c, and the create, fcgi/h_osb_create.c) never
 * speak Redis themselves.
 *
 * A template belongs to the tenant of the key that made it: every function
 * takes the caller's tenant and answers -ENOENT for another tenant's
 * template exactly as for an unknown one. Errors of every function,
 * besides those listed: -EIO (Redis), -EPROTO (an unexpected reply, or a
 * stored form that does not parse), -ENOMEM. */
#pragma once
#include <json-c/json.h>

#include "core/config.h"
#include "store/redis_conn.h"
#include "sandbox/template.h"

/* Store spec (a stored form, template_parse) as a new template of tenant;
 * *ret gets its FsbTemplate answer (the caller's). -EDQUOT: tenant already
 * has cfg's TEMPLATE_MAX_PER_TENANT (their number in *ret_n). */
int template_store_create(struct redis_conn *rc, const struct broker_config *cfg, const char *tenant,
                          struct json_object *spec, struct json_object **ret, long long *ret_n);

/* Tenant's template id as its FsbTemplate answer into *ret (the caller's).
 * -ENOENT (also for an id no template could have). */
int template_store_get(struct redis_conn *rc, const char *tenant, const char *id,
                       struct json_object **ret);

/* One page (1-based) of tenant's templates, newest first, those whose
 * metadata holds every pair of filter (NULL or {}: all): *ret_items a JSON
 * array of FsbTemplate answers (the caller's), *ret_total the number of
 * all that match. */
int template_store_list(struct redis_conn *rc, const struct broker_config *cfg, const char *tenant,
                        struct json_object *filter, long page, long size, long long *ret_total,
                        struct json_object **ret_items);

/* Delete tenant's template id; sandboxes made from it are unaffected.
 * -ENOENT. */
int template_store_delete(struct redis_conn *rc, const char *tenant, const char *id);

/* The create body of a CreateSandboxRequest body of tenant: when it names
 * a template (template_create_ref), that template's merge with it
 * (template_merge) into *ret, the caller's; else *ret = NULL and nothing
 * to do. -EINVAL with err (TEMPLATE_ERR_MAX) for a request a template
 * cannot take; -ENOENT (the id in err) for an unknown template or another
 * tenant's. */
int template_store_expand(struct redis_conn *rc, const char *tenant, struct json_object *body,
                          struct json_object **ret, char *err);
