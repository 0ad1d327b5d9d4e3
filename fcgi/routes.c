/* routes: see routes.h. nginx sends each group's paths to its own socket;
 * the table still checks the group so a mis-routed path is a clean 404. */
#include "routes.h"

#include <stdio.h>
#include <string.h>

#include "authn.h"
#include "execd.h"

struct route {
        const char *group;
        const char *method;
        const char *path;
        route_handler handler;
        enum route_auth auth; /* what the caller must show (authn.h) */
};

static const struct route routes[] = {
        { "status", "GET", "/health", h_health, ROUTE_OPEN },
        { "status", "GET", "/version", h_version, ROUTE_OPEN },
        { "status", "GET", "/v1/status", h_status, ROUTE_KEY },
        { "status", "GET", "/metrics", h_metrics, ROUTE_SCRAPE },
        { "leases", "POST", "/v1/leases/acquire", h_leases_acquire, ROUTE_KEY },
        { "leases", "GET", "/v1/leases/poll", h_leases_poll, ROUTE_KEY },
        { "leases", "POST", "/v1/leases/heartbeat", h_leases_heartbeat, ROUTE_KEY },
        { "leases", "POST", "/v1/leases/release", h_leases_release, ROUTE_KEY },
        { "sandboxes", "POST", "/v1/sandboxes/{}/exec", h_sbx_exec, ROUTE_KEY },
        { "sandboxes", "GET", "/v1/sandboxes/{}/exec/{}", h_sbx_exec_get, ROUTE_KEY },
        { "sandboxes", "POST", "/v1/sandboxes/{}/files/read", h_sbx_file_read, ROUTE_KEY },
        { "sandboxes", "POST", "/v1/sandboxes/{}/files/write", h_sbx_file_write, ROUTE_KEY },
        { "sandboxes", "POST", "/v1/sandboxes/{}/start", h_sbx_start, ROUTE_KEY },
        { "sandboxes", "POST", "/v1/sandboxes/{}/stop", h_sbx_stop, ROUTE_KEY },
        { "sandboxes", "DELETE", "/v1/sandboxes/{}", h_sbx_delete, ROUTE_KEY }, /* or h_osb_delete */
        /* OpenSandbox lifecycle (sandbox-lifecycle.yml), OPEN-SANDBOX-API-KEY */
        { "sandboxes", "POST", "/v1/sandboxes", h_osb_create, ROUTE_KEY },
        { "sandboxes", "GET", "/v1/sandboxes", h_osb_list, ROUTE_KEY },
        { "sandboxes", "GET", "/v1/sandboxes/{}", h_osb_get, ROUTE_KEY },
        { "sandboxes", "POST", "/v1/sandboxes/{}/pause", h_osb_pause, ROUTE_KEY },
        { "sandboxes", "POST", "/v1/sandboxes/{}/resume", h_osb_resume, ROUTE_KEY },
        { "sandboxes", "POST", "/v1/sandboxes/{}/renew-expiration", h_osb_renew, ROUTE_KEY },
        { "sandboxes", "PATCH", "/v1/sandboxes/{}/metadata", h_osb_metadata, ROUTE_KEY },
        { "sandboxes", "GET", "/v1/sandboxes/{}/endpoints/{}", h_osb_endpoint, ROUTE_KEY },
        /* every data-plane token of the sandbox replaced (docs/API.md; in no spec) */
        { "sandboxes", "POST", "/v1/sandboxes/{}/token/rotate", h_osb_token_rotate, ROUTE_KEY },
        /* the SDKs' create telemetry (in no spec): counted in /metrics, 204 */
        { "sandboxes", "POST", "/v1/metrics/events", h_osb_metrics_event, ROUTE_KEY },
        /* snapshots (h_snapshots.c) */
        { "sandboxes", "POST", "/v1/sandboxes/{}/snapshots", h_snap_create, ROUTE_KEY },
        { "sandboxes", "GET", "/v1/snapshots", h_snap_list, ROUTE_KEY },
        { "sandboxes", "GET", "/v1/snapshots/{}", h_snap_get, ROUTE_KEY },
        { "sandboxes", "DELETE", "/v1/snapshots/{}", h_snap_delete, ROUTE_KEY },
        /* templates (h_templates.c; opensandbox-server 1.1.1, in no spec) */
        { "sandboxes", "POST", "/v1/templates", h_tpl_create, ROUTE_KEY },
        { "sandboxes", "GET", "/v1/templates", h_tpl_list, ROUTE_KEY },
        { "sandboxes", "GET", "/v1/templates/{}", h_tpl_get, ROUTE_KEY },
        { "sandboxes", "DELETE", "/v1/templates/{}", h_tpl_delete, ROUTE_KEY },
        /* routes of the OpenSandbox specs this server does not serve (yet): 501 */
        /* a tenant's named volumes (no route in the spec: docs/OPENSANDBOX.md, "Volumes") */
        { "sandboxes", "GET", "/v1/volumes", h_volumes_list, ROUTE_KEY },
        { "sandboxes", "DELETE", "/v1/volumes/{}", h_volumes_delete, ROUTE_KEY },
        /* diagnostics (h_osb_diag.c) */
        { "sandboxes", "GET", "/v1/sandboxes/{}/diagnostics/logs", h_osb_diag_logs, ROUTE_KEY },
        { "sandboxes", "GET", "/v1/sandboxes/{}/diagnostics/events", h_osb_diag_events, ROUTE_KEY },
        /* what the SDKs and osb call beyond the specs: 501 with the reason, not "no such route" */
        { "sandboxes", "GET", "/v1/sandboxes/{}/diagnostics/{}", h_osb_not_implemented, ROUTE_KEY },
        { "sandboxes", "GET", "/v1/sandboxes/{}/networkpolicy", h_egress_policy_get, ROUTE_KEY },
        { "sandboxes", "PUT", "/v1/sandboxes/{}/networkpolicy", h_egress_policy_change, ROUTE_KEY },
        { "sandboxes", "PATCH", "/v1/sandboxes/{}/networkpolicy", h_egress_policy_change, ROUTE_KEY },
        { "sandboxes", "DELETE", "/v1/sandboxes/{}/networkpolicy", h_egress_policy_change, ROUTE_KEY },
        /* execd contract (execd-api.yaml) served by the broker, X-EXECD-ACCESS-TOKEN */
        { "execd", "GET", "/v1/sandboxes/{}/proxy/44772/ping", h_execd_ping, ROUTE_TOKEN },
        { "execd", "POST", "/v1/sandboxes/{}/proxy/44772/command", h_execd_run_command, ROUTE_TOKEN },
        { "execd", "DELETE", "/v1/sandboxes/{}/proxy/44772/command", h_execd_command_interrupt, ROUTE_TOKEN },
        { "execd", "GET", "/v1/sandboxes/{}/proxy/44772/command/status/{}", h_execd_command_status, ROUTE_TOKEN },
        { "execd", "GET", "/v1/sandboxes/{}/proxy/44772/command/{}/logs", h_execd_command_logs, ROUTE_TOKEN },
        { "execd", "POST", "/v1/sandboxes/{}/proxy/44772/files/upload", h_execd_upload, ROUTE_TOKEN },
        { "execd", "GET", "/v1/sandboxes/{}/proxy/44772/files/download", h_execd_download, ROUTE_TOKEN },
        { "execd", "GET", "/v1/sandboxes/{}/proxy/44772/files/info", h_execd_files_info, ROUTE_TOKEN },
        { "execd", "DELETE", "/v1/sandboxes/{}/proxy/44772/files", h_execd_files_delete, ROUTE_TOKEN },
        { "execd", "POST", "/v1/sandboxes/{}/proxy/44772/directories", h_execd_dirs_create, ROUTE_TOKEN },
        { "execd", "DELETE", "/v1/sandboxes/{}/proxy/44772/directories", h_execd_dirs_delete, ROUTE_TOKEN },
        { "execd", "GET", "/v1/sandboxes/{}/proxy/44772/metrics", h_execd_metrics, ROUTE_TOKEN },
        { "execd", "POST", "/v1/sandboxes/{}/proxy/44772/session", h_execd_session_create, ROUTE_TOKEN },
        { "execd", "POST", "/v1/sandboxes/{}/proxy/44772/session/{}/run", h_execd_session_run, ROUTE_TOKEN },
        { "execd", "DELETE", "/v1/sandboxes/{}/proxy/44772/session/{}", h_execd_session_delete, ROUTE_TOKEN },
        { "execd", "POST", "/v1/sandboxes/{}/proxy/44772/files/permissions", h_execd_files_chmod, ROUTE_TOKEN },
        { "execd", "POST", "/v1/sandboxes/{}/proxy/44772/files/mv", h_execd_files_mv, ROUTE_TOKEN },
        { "execd", "GET", "/v1/sandboxes/{}/proxy/44772/files/search", h_execd_files_search, ROUTE_TOKEN },
        { "execd", "POST", "/v1/sandboxes/{}/proxy/44772/files/replace", h_execd_files_replace, ROUTE_TOKEN },
        { "execd", "GET", "/v1/sandboxes/{}/proxy/44772/directories/list", h_execd_dirs_list, ROUTE_TOKEN },
        /* the same file routes as a uid/gid (the SDK's files.with_identity;
         * docs/EXECD.md, "Identity"): /v1/filesystem/{uid}/{gid}/... */
        { "execd", "POST", EXECD_IDENTITY_PREFIX "/files/upload", h_execd_upload, ROUTE_TOKEN },
        { "execd", "GET", EXECD_IDENTITY_PREFIX "/files/download", h_execd_download, ROUTE_TOKEN },
        { "execd", "GET", EXECD_IDENTITY_PREFIX "/files/info", h_execd_files_info, ROUTE_TOKEN },
        { "execd", "DELETE", EXECD_IDENTITY_PREFIX "/files", h_execd_files_delete, ROUTE_TOKEN },
        { "execd", "POST", EXECD_IDENTITY_PREFIX "/directories", h_execd_dirs_create, ROUTE_TOKEN },
        { "execd", "DELETE", EXECD_IDENTITY_PREFIX "/directories", h_execd_dirs_delete, ROUTE_TOKEN },
        { "execd", "POST", EXECD_IDENTITY_PREFIX "/files/permissions", h_execd_files_chmod, ROUTE_TOKEN },
        { "execd", "POST", EXECD_IDENTITY_PREFIX "/files/mv", h_execd_files_mv, ROUTE_TOKEN },
        { "execd", "GET", EXECD_IDENTITY_PREFIX "/files/search", h_execd_files_search, ROUTE_TOKEN },
        { "execd", "POST", EXECD_IDENTITY_PREFIX "/files/replace", h_execd_files_replace, ROUTE_TOKEN },
        { "execd", "GET", EXECD_IDENTITY_PREFIX "/directories/list", h_execd_dirs_list, ROUTE_TOKEN },
        /* the code interpreter (h_execd_code.c; a code-interpreter image's kernel-runner) */
        { "execd", "GET", "/v1/sandboxes/{}/proxy/44772/code/contexts", h_execd_code_contexts_list, ROUTE_TOKEN },
        { "execd", "DELETE", "/v1/sandboxes/{}/proxy/44772/code/contexts", h_execd_code_contexts_delete, ROUTE_TOKEN },
        { "execd", "GET", "/v1/sandboxes/{}/proxy/44772/code/contexts/{}", h_execd_code_context_get, ROUTE_TOKEN },
        { "execd", "DELETE", "/v1/sandboxes/{}/proxy/44772/code/contexts/{}", h_execd_code_context_delete, ROUTE_TOKEN },
        { "execd", "POST", "/v1/sandboxes/{}/proxy/44772/code/context", h_execd_code_context_create, ROUTE_TOKEN },
        { "execd", "POST", "/v1/sandboxes/{}/proxy/44772/code", h_execd_code_run, ROUTE_TOKEN },
        { "execd", "DELETE", "/v1/sandboxes/{}/proxy/44772/code", h_execd_code_interrupt, ROUTE_TOKEN },
        { "execd", "GET", "/v1/sandboxes/{}/proxy/44772/metrics/watch", h_execd_metrics_watch, ROUTE_TOKEN },
        /* the SDKs' isolated sessions (/v1/isolated/...: sessions, runs, their
         * files, commit, diff), in no spec: 501 with the reason, any method */
        { "execd", "*", "/v1/sandboxes/{}/proxy/44772/v1/isolated/*", h_execd_not_implemented, ROUTE_TOKEN },
        /* execd's PTY sessions (POST /pty, GET|DELETE /pty/{id}, GET /pty/{id}/ws): in
         * no SDK or CLI of the pinned versions: 501 with the reason, any method
         * (docs/OPENSANDBOX.md, "PTY sessions") */
        { "execd", "*", "/v1/sandboxes/{}/proxy/44772/pty", h_execd_not_implemented, ROUTE_TOKEN },
        { "execd", "*", "/v1/sandboxes/{}/proxy/44772/pty/*", h_execd_not_implemented, ROUTE_TOKEN },
        /* port endpoints: nginx's auth_request before sandbox-ingress (h_ingress.c) */
        { "execd", "GET", "/v1/sandboxes/{}/ingress-auth", h_ingress_auth, ROUTE_ENDPOINT },
        /* the lane: ping and the port endpoints' ingress-auth again, in a
         * process of their own that nginx sends them to, so that no
         * tenant's streams or slow bodies hold them up (tenant_share.h) */
        { "execd-lane", "GET", "/v1/sandboxes/{}/proxy/44772/ping", h_execd_ping, ROUTE_TOKEN },
        { "execd-lane", "GET", "/v1/sandboxes/{}/ingress-auth", h_ingress_auth, ROUTE_ENDPOINT },
        /* egress sidecar (egress-api.yaml) */
        { "execd", "GET", "/v1/sandboxes/{}/proxy/18080/policy", h_egress_policy_get, ROUTE_TOKEN },
        { "execd", "PATCH", "/v1/sandboxes/{}/proxy/18080/policy", h_egress_policy_change, ROUTE_TOKEN },
        { "execd", "DELETE", "/v1/sandboxes/{}/proxy/18080/policy", h_egress_policy_change, ROUTE_TOKEN },
        { "execd", "POST", "/v1/sandboxes/{}/proxy/18080/credential-vault", h_vault_change, ROUTE_TOKEN },
        { "execd", "GET", "/v1/sandboxes/{}/proxy/18080/credential-vault", h_vault_get, ROUTE_TOKEN },
        { "execd", "PATCH", "/v1/sandboxes/{}/proxy/18080/credential-vault", h_vault_change, ROUTE_TOKEN },
        { "execd", "DELETE", "/v1/sandboxes/{}/proxy/18080/credential-vault", h_vault_change, ROUTE_TOKEN },
        { "execd", "GET", "/v1/sandboxes/{}/proxy/18080/credential-vault/credentials", h_vault_get, ROUTE_TOKEN },
        { "execd", "GET", "/v1/sandboxes/{}/proxy/18080/credential-vault/credentials/{}", h_vault_get, ROUTE_TOKEN },
        { "execd", "GET", "/v1/sandboxes/{}/proxy/18080/credential-vault/bindings", h_vault_get, ROUTE_TOKEN },
        { "execd", "GET", "/v1/sandboxes/{}/proxy/18080/credential-vault/bindings/{}", h_vault_get, ROUTE_TOKEN },
};

#define N_ROUTES (sizeof(routes) / sizeof(routes[0]))

int routes_group_known(const char *group)
{
        for (size_t i = 0; i < N_ROUTES; i++)
                if (strcmp(routes[i].group, group) == 0)
                        return 1;
        return 0;
}

/* A pattern ending in "/" then "*" matches every path below it (one segment at
 * least); else url_path_match's whole-path match. */
static int route_match(const char *pattern, const char *path, char args[][URL_PATH_ARG_MAX])
{
        size_t len = strlen(pattern), slashes = 0;
        char pat[160], head[512];
        const char *p = path;

        if (len < 2 || strcmp(pattern + len - 2, "/*") != 0)
                return url_path_match(pattern, path, args, 3);
        if (len - 2 >= sizeof(pat))
                return 0;
        memcpy(pat, pattern, len - 2);
        pat[len - 2] = '\0';
        for (size_t i = 0; i < len - 1; i++)
                slashes += pattern[i] == '/';
        /* path's head up to its slashes-th '/', which something must follow */
        for (size_t seen = 0; *p && seen < slashes; p++)
                seen += *p == '/';
        if (!*p || (size_t)(p - 1 - path) >= sizeof(head) || p[-1] != '/')
                return 0;
        memcpy(head, path, (size_t)(p - 1 - path));
        head[p - 1 - path] = '\0';
        return url_path_match(pat, head, args, 3);
}

void routes_dispatch(const char *group, struct request *req)
{
        char allow[96] = "";

        for (size_t i = 0; i < N_ROUTES; i++) {
                const struct route *r = &routes[i];
                char args[3][URL_PATH_ARG_MAX] = { "", "", "" };
                if (strcmp(r->group, group) || !route_match(r->path, req->path, args))
                        continue;
                memcpy(req->path_arg, args[0], sizeof(args[0]));
                memcpy(req->path_arg2, args[1], sizeof(args[1]));
                memcpy(req->path_arg3, args[2], sizeof(args[2]));
                if (strcmp(r->method, "*") == 0 || strcmp(r->method, req->method) == 0 ||
                    (strcmp(req->method, "HEAD") == 0 && strcmp(r->method, "GET") == 0)) {
                        req->route = r->path;
                        if (authn_check(req, r->auth) < 0)
                                return;
                        /* the sandboxes group's threads are shared by the API
                         * key's tenant (tenant_share.h; the execd group's by
                         * the sandbox owner, in execd_open) */
                        if (strcmp(group, "sandboxes") == 0 && r->auth == ROUTE_KEY &&
                            request_share_take(req, req->auth.tenant, NULL) < 0)
                                return;
                        r->handler(req);
                        return;
                }
                /* every method the path has, e.g. "Allow: GET, POST" */
                size_t n = strlen(allow);
                snprintf(allow + n, sizeof(allow) - n, "%s%s", n ? ", " : "Allow: ", r->method);
        }
        if (allow[0])
                reply_error_hdr(req, API_METHOD_NOT_ALLOWED, allow, "%s is not allowed on %s",
                                req->method, req->path);
        else
                reply_error(req, API_NOT_FOUND, "no such route");
}
