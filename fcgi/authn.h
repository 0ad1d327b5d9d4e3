/* authn: who a request acts for (lib/store/auth.h), checked once per request by
 * the route table before any handler runs. */
#pragma once
#include "request.h"

/* What a route asks of its caller. */
enum route_auth {
        ROUTE_KEY,    /* the default: an API key, Authorization: Bearer or OPEN-SANDBOX-API-KEY */
        ROUTE_OPEN,   /* /health: nothing */
        ROUTE_SCRAPE, /* /metrics: the METRICS_TOKEN bearer, or an admin key */
        ROUTE_TOKEN,  /* execd data plane: the sandbox's access token (checked by
                       * the handler); an API key is optional but must be valid */
        ROUTE_ENDPOINT, /* a port endpoint (h_ingress.c): as ROUTE_TOKEN, but
                         * Authorization belongs to the sandbox's service: it
                         * counts only when it is a valid API key (Bearer), and is
                         * ignored otherwise (req->authz_is_key says which) */
};

/* Authenticate req for a route of kind `need`: 0 with req->auth filled (for
 * ROUTE_KEY; for ROUTE_TOKEN when a key was sent), or -1 after a 401 (no or
 * an unknown, revoked or malformed key) or a 503 (Redis down). */
int authn_check(struct request *req, enum route_auth need);
