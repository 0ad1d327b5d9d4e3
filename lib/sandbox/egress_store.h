/* egress_store: a sandbox's egress policy in Redis, the field `egress_policy`
 * (normalized NetworkPolicy JSON, egress_policy.h) of its record
 * <prefix>sandbox:<sid>. It lives and dies with the record, so it survives
 * pause/resume, broker and Squid restarts; the Squid helper reads the same
 * field (docs/EGRESS.md). A record without the field (made before egress
 * policies existed) reads as deny-all: such sandboxes had no network.
 *
 * Changes are read-modify-write in C with a compare-and-set script
 * (lib/store/lua/egress_cas.lua), retried on conflict, so concurrent PATCHes
 * and DELETEs all land. Errors of every function, besides those listed:
 * -EIO (Redis), -EPROTO (unexpected reply or a stored policy that does not
 * parse), -ENOMEM. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <json-c/json.h>

#include "core/config.h"
#include "core/egress_policy.h"
#include "store/redis_conn.h"

/* The configured policy for lease mode (NULL or unknown: EGRESS_DEFAULT) as
 * normalized JSON into *ret (malloc'd, caller frees): EGRESS_POLICY_<MODE>
 * if set, else EGRESS_DEFAULT, "" meaning deny-all. -EINVAL if the setting
 * does not parse (config_load checks them, so only for a hand-made cfg). */
int egress_config_json(const struct broker_config *cfg, const char *mode, char **ret);

/* The policy of an OpenSandbox create body: its `networkPolicy` member; absent
 * or null means the broker's EGRESS_DEFAULT (not the spec's allow-all: a safe
 * default); `{}` is allow-all as the spec says. *ret gets normalized JSON
 * (malloc'd). -EINVAL with a client-facing message in err (errlen bytes). */
int egress_policy_for_create(const struct broker_config *cfg, struct json_object *body, char **ret,
                             char *err, size_t errlen);

/* The configured policies of lease sandboxes, normalized JSON (malloc'd):
 * pol[0] EGRESS_DEFAULT, pol[1..3] the modes exclusive, user_shared,
 * multi_user_shared ('' = the default), pol[4] EGRESS_POOL_POLICIES as
 * egress_pool_policies_parse gives it ('' = none). sandbox_claim.lua gives a record without a
 * policy the one of its pool, else of its mode. On error every pol[i] is
 * NULL. */
#define EGRESS_CONFIG_POLICIES 5
int egress_config_policies(const struct broker_config *cfg, char *pol[EGRESS_CONFIG_POLICIES]);

/* Read sid's policy into *ret. -ENOENT (no record). */
int egress_store_get(struct redis_conn *rc, const struct broker_config *cfg, const char *sid,
                     struct egress_policy *ret);

/* Replace sid's policy with p. -ENOENT. */
int egress_store_set(struct redis_conn *rc, const struct broker_config *cfg, const char *sid,
                     const struct egress_policy *p);

/* PATCH: merge rules in[0..n) (egress_policy_merge) into sid's policy,
 * atomically; *ret gets the result. -ENOENT; -EINVAL (too many rules; the
 * message in err); -EAGAIN when it kept losing races (try later). */
int egress_store_patch(struct redis_conn *rc, const struct broker_config *cfg, const char *sid,
                       const struct egress_rule *in, size_t n, struct egress_policy *ret, char *err,
                       size_t errlen);

/* DELETE: remove the rules of targets[0..n) from sid's policy, atomically;
 * *ret gets the result. -ENOENT; -EAGAIN as above. */
int egress_store_remove(struct redis_conn *rc, const struct broker_config *cfg, const char *sid,
                        char (*targets)[EGRESS_TARGET_MAX + 1], size_t n, struct egress_policy *ret);
