/* egress_policy: a sandbox's outbound network policy (OpenSandbox
 * `NetworkPolicy`, sandbox-lifecycle.yml; the egress API of egress-api.yaml).
 *
 * Pure code: parsing and validating untrusted JSON, normalizing, merging and
 * matching. No I/O; storage lives in egress_store.c.
 *
 * Targets are DNS names, either exact ("pypi.org") or a wildcard "*.suffix"
 * ("*.example.com"). Matching is case-insensitive and ignores one trailing
 * dot. As in the OpenSandbox reference sidecar, "*.example.com" matches the
 * subdomains of example.com ("a.example.com", "a.b.example.com") and NOT
 * "example.com" itself: list both to allow both. IP literals and CIDR ranges
 * are rejected ("IP/CIDR targets are not supported"), as the spec's egress
 * MVP does. Labels are 1..63 characters of [a-z0-9_-] not starting or ending
 * with '-', the whole name at most 253 characters.
 *
 * Rules are evaluated in order; the first rule whose target matches the host
 * decides, else defaultAction. defaultAction defaults to "deny" when omitted,
 * except that an empty object `{}` means allow-all (the spec: "passing an
 * empty object or null results in allow-all behavior at startup"). Callers
 * decide what an absent policy or a JSON null means (the broker uses its
 * EGRESS_DEFAULT; docs/OPENSANDBOX.md). Normalized form: lower-case targets
 * without trailing dot, later duplicates of a target dropped (they could never
 * match), always both members:
 *   {"defaultAction":"deny","egress":[{"action":"allow","target":"pypi.org"}]}
 */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#define EGRESS_RULES_MAX 256
#define EGRESS_TARGET_MAX 253
/* Cap on any policy / rule-list / target-list JSON text we parse. */
#define EGRESS_JSON_MAX (128 * 1024)

struct egress_rule {
        bool allow;
        char target[EGRESS_TARGET_MAX + 1];
};

struct egress_policy {
        bool default_allow;
        size_t n;
        struct egress_rule rules[EGRESS_RULES_MAX];
};

/* OpenSandbox NetworkPolicy JSON (an object) -> *out, normalized.
 * Returns 0, or -EINVAL with a client-facing message in err (not JSON, not an
 * object, unknown member, bad action, bad target, too many rules, too large),
 * or -ENOMEM. *out is fully written on success only. */
int egress_policy_parse(const char *json, size_t len, struct egress_policy *out, char *err,
                        size_t errlen);

/* The normalized JSON text of p; *out is malloc'd, the caller frees it.
 * Returns 0 or -ENOMEM. */
int egress_policy_to_json(const struct egress_policy *p, char **out);

/* Whether p lets traffic to host out: the first rule matching host wins, else
 * the default. host is compared case-insensitively, one trailing dot ignored;
 * a host that is not a valid DNS name (an IP literal, too long) matches no
 * rule, so only the default applies. NULL or empty host: false. */
bool egress_policy_allows(const struct egress_policy *p, const char *host);

/* Deny everything: default deny, no rules. */
void egress_policy_deny_all(struct egress_policy *p);

/* Validate and normalize one target (see above) into out (EGRESS_TARGET_MAX+1
 * bytes). Returns 0 or -EINVAL with a message in err. */
int egress_target_normalize(const char *target, char *out, char *err, size_t errlen);

/* Derived mode for PolicyStatusResponse.mode: "allow_all" or "deny_all"
 * (the default action; rules are exceptions to it). Static string. */
const char *egress_policy_mode(const struct egress_policy *p);

/* The body of `PATCH /policy`: a JSON array (1..EGRESS_RULES_MAX items) of
 * NetworkRule. rules must hold EGRESS_RULES_MAX entries; *ret_n gets the count.
 * Duplicates are kept in order (the merge applies first-wins).
 * Returns 0, -EINVAL (message in err) or -ENOMEM. */
int egress_rules_parse(const char *json, size_t len, struct egress_rule *rules, size_t *ret_n,
                       char *err, size_t errlen);

/* Merge per the egress API's PATCH: incoming rules first, in order (of several
 * incoming rules with the same target the first wins), then p's rules whose
 * target no incoming rule names. The default action is unchanged. Returns 0,
 * or -EINVAL (message in err) when the result would exceed EGRESS_RULES_MAX
 * rules; p is unchanged on error. */
int egress_policy_merge(struct egress_policy *p, const struct egress_rule *in, size_t n, char *err,
                        size_t errlen);

/* The body of `DELETE /policy`: a JSON array (1..EGRESS_RULES_MAX items) of
 * target strings, each validated and normalized into targets[i] (an array of
 * EGRESS_RULES_MAX entries). Returns 0, -EINVAL (message in err) or -ENOMEM. */
int egress_targets_parse(const char *json, size_t len, char (*targets)[EGRESS_TARGET_MAX + 1],
                         size_t *ret_n, char *err, size_t errlen);

/* Remove the rules of p whose target is one of targets[0..n) (normalized);
 * unknown targets are ignored. Returns the number of rules removed. */
size_t egress_policy_remove(struct egress_policy *p, char (*targets)[EGRESS_TARGET_MAX + 1],
                            size_t n);

/* EGRESS_POOL_POLICIES (docs/CONFIGURATION.md): a JSON object mapping a
 * multi_user_shared poolId ("build", or "<tenant>/build" for one tenant's
 * pool) to a NetworkPolicy. At most EGRESS_POOL_POLICIES_MAX pools, keys of
 * 1..EGRESS_POOL_KEY_MAX printable characters without spaces or braces,
 * the text at most EGRESS_JSON_MAX bytes. *ret (malloc'd) gets a JSON object
 * mapping each key to its normalized policy as a JSON string (the form
 * sandbox_claim.lua reads). Returns 0, -EINVAL (message in err naming the
 * pool) or -ENOMEM. */
#define EGRESS_POOL_POLICIES_MAX 64
#define EGRESS_POOL_KEY_MAX 255
int egress_pool_policies_parse(const char *json, size_t len, char **ret, char *err, size_t errlen);
