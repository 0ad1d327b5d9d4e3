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
};

#define N_ROUTES (sizeof(routes) / sizeof(routes[0]))

int routes_group_known(const char *group)
{
        for (size_t i = 0; i < N_ROUTES; i++)
                if (strcmp(routes[i].group, group) == 0)
                        return 1;
        return 0;
}

void routes_dispatch(const char *group, struct request *req)
{
        char allow[64] = "";

        for (size_t i = 0; i < N_ROUTES; i++) {
                const struct route *r = &routes[i];
                if (strcmp(r->group, group) || strcmp(r->path, req->path))
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
