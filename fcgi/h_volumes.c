/* h_volumes: a tenant's named volumes (the OpenSandbox `pvc` volumes of
 * its sandboxes, lib/sandbox/volume.h), which the OpenSandbox
 * specification gives no route: GET /v1/volumes lists them, DELETE
 * /v1/volumes/{name} removes one that no sandbox mounts (docs/OPENSANDBOX.md,
 * "Volumes"). Tenant-scoped by the API key; another tenant's volume of the
 * same name is another volume, and never seen here. */
#include <errno.h>

#include "core/json_input.h"
#include "routes.h"
#include "sandbox/volume.h"

/* Replies and returns -1 when the broker cannot have volumes. */
static int volumes_open(struct request *req)
{
        if (!req->w->provider) {
                reply_error(req, API_NOT_FOUND, "this broker runs without a sandbox provider");
                return -1;
        }
        if (!provider_has_volumes(req->w->provider)) {
                reply_error(req, API_INVALID_REQUEST,
                            "volumes are not supported by this provider (%s)",
                            provider_name(req->w->provider));
                return -1;
        }
        return 0;
}

static void reply_volume_error(struct request *req, int r, const char *what, const char *err)
{
        char msg[PROVIDER_ERR_MAX + 64];

        if (r == -EINVAL)
                reply_error(req, API_INVALID_REQUEST, "%s", err);
        else if (r == -ENOENT)
                reply_error(req, API_NOT_FOUND, "%s", err);
        else if (r == -EBUSY)
                reply_error(req, API_CONFLICT, "%s", err);
        else if (r == -ENOMEM)
                reply_errno(req, r, what);
        else
                reply_error(req, provider_api_error(r, what, err, msg, sizeof(msg)), "%s", msg);
}

void h_volumes_list(struct request *req)
{
        struct json_object *o = NULL;
        char err[PROVIDER_ERR_MAX] = "";
        int r;

        if (volumes_open(req) < 0)
                return;
        r = volume_list_json(req->w->provider, req->w->cfg, req->auth.tenant, &o, err);
        if (r < 0) {
                reply_volume_error(req, r, "volumes", err);
                return;
        }
        reply_json(req, 200, o);
        json_put(o);
}

void h_volumes_delete(struct request *req)
{
        char err[PROVIDER_ERR_MAX] = "";
        int r;

        if (volumes_open(req) < 0)
                return;
        r = volume_delete(req->w->provider, req->w->cfg, req->auth.tenant, req->path_arg, err);
        if (r < 0) {
                reply_volume_error(req, r, "volume delete", err);
                return;
        }
        reply_empty(req, 204);
}
