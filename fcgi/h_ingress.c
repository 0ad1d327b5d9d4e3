/* h_ingress: the broker's half of port endpoints (docs/INGRESS.md).
 *
 * GET /v1/sandboxes/{id}/ingress-auth is nginx's auth_request for every
 * request to /v1/sandboxes/{id}/proxy/{port}/... (a port other than execd's
 * and egress's): the caller's credential is checked as for the execd routes
 * (execd_open: the sandbox's X-EXECD-ACCESS-TOKEN or its owner's API key),
 * the sandbox must be Running, and the answer names the directory of its
 * agent socket (X-Sandbox-Ingress-Agent) and its owner
 * (X-Sandbox-Ingress-Tenant: sandbox-ingress's per-tenant connection cap),
 * which nginx hands to sandbox-ingress. Errors go back through the auth_subrequest path of
 * request.c (nginx answers them with their real status and body). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "execd.h"
#include "core/json_input.h"
#include "routes.h"

void h_ingress_auth(struct request *req)
{
        char name[PROVIDER_REF_MAX], err[PROVIDER_ERR_MAX] = "", hdr[2 * PROVIDER_REF_MAX + 256];
        struct json_object *o;
        struct execd x;
        int r;

        if (execd_open(req, &x, true) < 0)
                return;
        if (!json_input_id_valid(x.tenant)) {
                /* every OpenSandbox sandbox has an owner: never an endpoint
                 * outside every tenant's cap */
                reply_error(req, API_INTERNAL, "sandbox %s has no valid owner tenant", x.sandbox_id);
                return;
        }
        r = provider_agent_dir_name(req->w->provider, x.ref, name, sizeof(name), err);
        if (r == -EOPNOTSUPP) {
                reply_error(req, API_NOT_IMPLEMENTED,
                            "sandbox %s has no agent: its ports cannot be reached", x.sandbox_id);
                return;
        }
        if (r < 0) {
                execd_reply_provider(req, &x, r, "ingress", err);
                return;
        }
        /* Authorization carried the API key (authn.c, ROUTE_ENDPOINT): nginx
         * must not forward it into the sandbox. Any other Authorization is
         * the service's own business and passes. */
        snprintf(hdr, sizeof(hdr),
                 "X-Sandbox-Ingress-Agent: %s\r\nX-Sandbox-Ingress-Tenant: %s\r\n"
                 "X-Sandbox-Ingress-Strip-Authorization: %d",
                 name, x.tenant, req->authz_is_key);
        o = json_object_new_object();
        reply_json_hdr(req, 200, hdr, o);
        json_put(o);
}
