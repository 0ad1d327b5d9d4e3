/* authn: see authn.h. */
#include "authn.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <openssl/crypto.h>

#include "core/log.h"

#define WWW_AUTH "WWW-Authenticate: Bearer realm=\"sandbox-broker\""

/* The key of a request: OPEN-SANDBOX-API-KEY (the OpenSandbox spec's
 * header) or "Authorization: Bearer <key>". Both may be sent, but then
 * they must agree. Returns the key, "" for none, NULL for a conflict or a
 * non-Bearer Authorization. */
static const char *presented_key(struct request *req)
{
        const char *osb = FCGX_GetParam("HTTP_OPEN_SANDBOX_API_KEY", req->fcgx->envp);
        const char *authz = FCGX_GetParam("HTTP_AUTHORIZATION", req->fcgx->envp);
        const char *bearer = NULL;

        if (authz && *authz) {
                if (strncasecmp(authz, "Bearer ", 7) != 0)
                        return NULL;
                bearer = authz + 7;
                while (*bearer == ' ')
                        bearer++;
        }
        if (osb && *osb && bearer && strcmp(osb, bearer) != 0)
                return NULL;
        if (osb && *osb)
                return osb;
        return bearer ? bearer : "";
}

static int deny(struct request *req, const char *why)
{
        char what[600];

        snprintf(what, sizeof(what), "%s %s: %s", req->method, req->path, why);
        request_audit(req, (struct audit_event){ .type = AUDIT_AUTH_DENIED, .reason = what });
        reply_error_hdr(req, API_UNAUTHORIZED, WWW_AUTH, "%s", why);
        return -1;
}

/* Equal strings in time that depends on their lengths only. */
static bool token_equal(const char *a, const char *b)
{
        size_t al = strlen(a), bl = strlen(b);

        return al == bl && CRYPTO_memcmp(a, b, al) == 0;
}

static int lookup(struct request *req, const char *key)
{
        int r = auth_lookup(req->w->redis, req->w->cfg, key, &req->auth);

        if (r == -EACCES)
                return deny(req, "invalid API key");
        if (r < 0) {
                reply_errno(req, r, "authentication");
                return -1;
        }
        req->authed = true;
        return 0;
}

/* ROUTE_ENDPOINT: OPEN-SANDBOX-API-KEY is the broker's; Authorization is
 * the service's unless it is "Bearer <a valid API key>" (then it is the
 * broker's too, and never forwarded: req->authz_is_key). */
static int endpoint_check(struct request *req)
{
        const char *osb = FCGX_GetParam("HTTP_OPEN_SANDBOX_API_KEY", req->fcgx->envp);
        const char *authz = FCGX_GetParam("HTTP_AUTHORIZATION", req->fcgx->envp);
        const char *bearer = NULL;
        int r;

        if (authz && strncasecmp(authz, "Bearer ", 7) == 0) {
                bearer = authz + 7;
                while (*bearer == ' ')
                        bearer++;
        }
        if (osb && *osb) {
                if (lookup(req, osb) < 0)
                        return -1;
                req->authz_is_key = bearer && strcmp(bearer, osb) == 0;
                return 0;
        }
        if (!bearer || !*bearer)
                return 0;
        r = auth_lookup(req->w->redis, req->w->cfg, bearer, &req->auth);
        if (r == -EACCES)
                return 0; /* not ours: the service's own token */
        if (r < 0) {
                reply_errno(req, r, "authentication");
                return -1;
        }
        req->authed = true;
        req->authz_is_key = true;
        return 0;
}

int authn_check(struct request *req, enum route_auth need)
{
        const char *key;

        if (need == ROUTE_OPEN)
                return 0;
        if (need == ROUTE_ENDPOINT)
                return endpoint_check(req);
        key = presented_key(req);
        if (!key)
                return deny(req, "send one API key, as OPEN-SANDBOX-API-KEY or Authorization: Bearer");
        if (need == ROUTE_SCRAPE) {
                if (*key && req->w->cfg->metrics_token[0] && token_equal(key, req->w->cfg->metrics_token))
                        return 0;
                if (!*key)
                        return deny(req, "GET /metrics needs the METRICS_TOKEN bearer token or an admin API key");
                if (lookup(req, key) < 0)
                        return -1;
                if (!req->auth.admin)
                        return deny(req, "GET /metrics needs the METRICS_TOKEN bearer token or an admin API key");
                return 0;
        }
        if (!*key) {
                if (need == ROUTE_TOKEN)
                        return 0; /* the handler checks the sandbox's access token */
                return deny(req, "an API key is required (Authorization: Bearer <key> or OPEN-SANDBOX-API-KEY)");
        }
        return lookup(req, key);
}
