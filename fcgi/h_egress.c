/* h_egress: the egress API (egress-api.yaml of OpenSandbox) served by the
 * broker at /v1/sandboxes/{id}/proxy/18080/policy: GET, PATCH (merge) and
 * DELETE (by target) of the sandbox's egress policy; the same policy through
 * the lifecycle API at /v1/sandboxes/{id}/networkpolicy (what OpenSandbox
 * 1.1.1's server serves for its template sandboxes): GET, PATCH, DELETE and
 * PUT (replace the whole policy). The policy lives in its
 * Redis record (egress_store.h) and is enforced by the egress proxy
 * (docs/EGRESS.md). Authenticated as every data-plane route (execd_open:
 * the sandbox's token, or an API key of its owner); a paused sandbox's
 * policy can be read and changed too (it is kept for its resume).
 *
 * Answers are the spec's PolicyStatusResponse: status "ok", mode (the
 * default action: deny_all or allow_all), enforcementMode "proxy" (the
 * policy is enforced by a forward proxy by host name, not by a DNS filter),
 * and the resulting policy. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sandbox/egress_store.h"
#include "execd.h"
#include "core/json_input.h"
#include "core/log.h"
#include "routes.h"

#define EGRESS_ENFORCEMENT_MODE "proxy"

static void reply_policy(struct request *req, const struct egress_policy *p)
{
        struct json_object *o = json_object_new_object(), *pol = NULL;
        char *text = NULL;

        if (!o || egress_policy_to_json(p, &text) < 0 || !(pol = json_tokener_parse(text)) ||
            json_add_str(o, "status", "ok") < 0 ||
            json_add_str(o, "mode", egress_policy_mode(p)) < 0 ||
            json_add_str(o, "enforcementMode", EGRESS_ENFORCEMENT_MODE) < 0) {
                json_put(pol);
                reply_error(req, API_INTERNAL, "out of memory");
                goto out;
        }
        if (json_add(o, "policy", pol) < 0) {
                reply_error(req, API_INTERNAL, "out of memory");
                goto out;
        }
        reply_json(req, 200, o);
out:
        free(text);
        json_put(o);
}

static void reply_store_error(struct request *req, const struct execd *x, int r, const char *err)
{
        if (r == -ENOENT)
                reply_error(req, API_SANDBOX_NOT_FOUND, "sandbox %s not found", x->sandbox_id);
        else if (r == -EINVAL)
                reply_error(req, API_INVALID_REQUEST, "%s", err);
        else if (r == -EAGAIN)
                reply_error(req, API_CONFLICT, "%s", err);
        else {
                log_err(execd_kv(req, x), "egress policy: %s", strerror(-r));
                reply_errno(req, r, "egress policy");
        }
}


void h_egress_policy_get(struct request *req)
{
        struct egress_policy *p = NULL;
        struct execd x;
        int r;

        if (execd_open(req, &x, false) < 0)
                return;
        p = malloc(sizeof(*p));
        if (!p) {
                reply_error(req, API_INTERNAL, "out of memory");
                return;
        }
        r = egress_store_get(req->w->redis, req->w->cfg, x.sandbox_id, p);
        if (r < 0)
                reply_store_error(req, &x, r, "");
        else
                reply_policy(req, p);
        free(p);
}

/* PATCH: merge a rule list; DELETE: remove a target list; PUT (lifecycle
 * networkpolicy): a whole NetworkPolicy, as at create, replaces the policy. */
void h_egress_policy_change(struct request *req)
{
        bool patch = strcmp(req->method, "PATCH") == 0, put = strcmp(req->method, "PUT") == 0;
        struct egress_policy *p = NULL;
        struct egress_rule *rules = NULL;
        char(*targets)[EGRESS_TARGET_MAX + 1] = NULL;
        char err[320] = "";
        struct execd x;
        size_t n = 0, max = EGRESS_JSON_MAX < req->w->max_body ? EGRESS_JSON_MAX : req->w->max_body;
        int r;

        if (execd_open(req, &x, false) < 0 ||
            request_read_json_body(req, max) < 0)
                goto out;
        p = malloc(sizeof(*p));
        if (patch)
                rules = malloc(sizeof(*rules) * EGRESS_RULES_MAX);
        else if (!put)
                targets = malloc(sizeof(*targets) * EGRESS_RULES_MAX);
        if (!p || (!put && !rules && !targets)) {
                reply_error(req, API_INTERNAL, "out of memory");
                goto out;
        }
        r = put     ? egress_policy_parse(req->body, req->body_len, p, err, sizeof(err))
            : patch ? egress_rules_parse(req->body, req->body_len, rules, &n, err, sizeof(err))
                    : egress_targets_parse(req->body, req->body_len, targets, &n, err, sizeof(err));
        if (r < 0) {
                reply_store_error(req, &x, r, err);
                goto out;
        }
        r = put     ? egress_store_set(req->w->redis, req->w->cfg, x.sandbox_id, p)
            : patch ? egress_store_patch(req->w->redis, req->w->cfg, x.sandbox_id, rules, n, p, err,
                                         sizeof(err))
                    : egress_store_remove(req->w->redis, req->w->cfg, x.sandbox_id, targets, n, p);
        if (r < 0) {
                if (r == -EAGAIN && !err[0])
                        snprintf(err, sizeof(err),
                                 "the policy changed too often meanwhile; try again");
                reply_store_error(req, &x, r, err);
                goto out;
        }
        if (put)
                log_info(execd_kv(req, &x), "egress policy replaced: now %zu rules, default %s", p->n,
                         p->default_allow ? "allow" : "deny");
        else
                log_info(execd_kv(req, &x), "egress policy %s: %zu %s, now %zu rules, default %s",
                         patch ? "patched" : "rules removed", n, patch ? "rules" : "targets", p->n,
                         p->default_allow ? "allow" : "deny");
        reply_policy(req, p);
out:
        free(targets);
        free(rules);
        free(p);
}
