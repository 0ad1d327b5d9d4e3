/* routes: see routes.h. nginx sends each group's paths to its own socket;
 * the table still checks the group so a mis-routed path is a clean 404. */
#include "routes.h"

#include <stdio.h>
#include <string.h>

struct route {
        const char *group;
        const char *method;
        const char *path;
        route_handler handler;
};

static const struct route routes[] = {
        { "status", "GET", "/health", h_health },
        { "status", "GET", "/v1/status", h_status },
        { "leases", "POST", "/v1/leases/acquire", h_leases_acquire },
        { "leases", "GET", "/v1/leases/poll", h_leases_poll },
        { "leases", "POST", "/v1/leases/heartbeat", h_leases_heartbeat },
        { "leases", "POST", "/v1/leases/release", h_leases_release },
        { "sandboxes", "POST", "/v1/sandboxes/{}/exec", h_sbx_exec },
        { "sandboxes", "POST", "/v1/sandboxes/{}/files/read", h_sbx_file_read },
        { "sandboxes", "POST", "/v1/sandboxes/{}/files/write", h_sbx_file_write },
        { "sandboxes", "POST", "/v1/sandboxes/{}/start", h_sbx_start },
        { "sandboxes", "POST", "/v1/sandboxes/{}/stop", h_sbx_stop },
        { "sandboxes", "DELETE", "/v1/sandboxes/{}", h_sbx_delete },
};

#define N_ROUTES (sizeof(routes) / sizeof(routes[0]))

int routes_group_known(const char *group)
{
        for (size_t i = 0; i < N_ROUTES; i++)
                if (strcmp(routes[i].group, group) == 0)
                        return 1;
        return 0;
}

/* Match path against pattern, where "{}" stands for one non-empty segment
 * of at most sizeof(req->path_arg) - 1 bytes, copied into arg. */
static int path_match(const char *pattern, const char *path, char *arg, size_t argsz)
{
        const char *hole = strstr(pattern, "{}");
        size_t pre, seg;

        if (!hole)
                return strcmp(pattern, path) == 0;
        pre = (size_t)(hole - pattern);
        if (strncmp(pattern, path, pre) != 0)
                return 0;
        seg = strcspn(path + pre, "/");
        if (seg == 0 || seg >= argsz || strcmp(hole + 2, path + pre + seg) != 0)
                return 0;
        memcpy(arg, path + pre, seg);
        arg[seg] = '\0';
        return 1;
}

void routes_dispatch(const char *group, struct request *req)
{
        char allow[64] = "";

        for (size_t i = 0; i < N_ROUTES; i++) {
                const struct route *r = &routes[i];
                if (strcmp(r->group, group) ||
                    !path_match(r->path, req->path, req->path_arg, sizeof(req->path_arg)))
                        continue;
                if (strcmp(r->method, req->method) == 0 ||
                    (strcmp(req->method, "HEAD") == 0 && strcmp(r->method, "GET") == 0)) {
                        r->handler(req);
                        return;
                }
                snprintf(allow, sizeof(allow), "Allow: %s", r->method);
        }
        if (allow[0])
                reply_error_hdr(req, API_METHOD_NOT_ALLOWED, allow, "%s is not allowed on %s",
                                req->method, req->path);
        else
                reply_error(req, API_NOT_FOUND, "no such route");
}
