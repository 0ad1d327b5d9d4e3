/* h_snapshots: OpenSandbox snapshots (sandbox-lifecycle.yml of the
 * OpenSandbox project: POST /sandboxes/{id}/snapshots, GET /snapshots,
 * GET and DELETE /snapshots/{id}); docs/OPENSANDBOX.md, "Snapshots".
 *
 * A snapshot is the image of a sandbox's filesystem (Docker: POST /commit),
 * owned by the tenant of the API key; another tenant's snapshot does not
 * exist (404), for admin keys too. The create answers 202 Creating and the
 * commit runs after the answer in the same worker thread, as a create's
 * sandbox is made after its 202 (h_opensandbox.c), bounded by
 * SNAPSHOT_TIMEOUT_MS. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "sandbox/opensandbox.h"
#include "routes.h"
#include "sandbox/snapshot.h"
#include "sandbox/snapshot_store.h"
#include "core/timeutil.h"
#include "codec/url.h"

#define PAGE_SIZE_MAX 200

/* Snapshots need a provider that can make them; replies and returns -1 otherwise. */
static int snap_provider(struct request *req)
{
        if (!req->w->provider) {
                reply_error(req, API_NOT_FOUND, "this broker runs without a sandbox provider");
                return -1;
        }
        if (!provider_can_snapshot(req->w->provider)) {
                reply_error(req, API_NOT_IMPLEMENTED,
                            "snapshots are not supported by the %s provider", req->w->cfg->provider);
                return -1;
        }
        return 0;
}

/* After the 202: commit the snapshot (seconds; up to SNAPSHOT_TIMEOUT_MS). */
static void commit_after(struct request *req)
{
        char err[SNAPSHOT_ERR_MAX] = "";
        int r = snapshot_store_commit(req->w->redis, req->w->provider, req->w->cfg, req->after_arg,
                                      err);

        if (r < 0)
                log_warn(LOG_KV({ "SNAPSHOT_ID", req->after_arg }, { "REQUEST_ID", req->request_id }),
                         "snapshot failed: %s", err);
        else
                log_info(LOG_KV({ "SNAPSHOT_ID", req->after_arg }, { "REQUEST_ID", req->request_id }),
                         "snapshot ready");
}

void h_snap_create(struct request *req)
{
        const char *cl = FCGX_GetParam("CONTENT_LENGTH", req->fcgx->envp);
        struct json_object *body = NULL, *snap = NULL;
        char name[SNAPSHOT_NAME_MAX + 1], err[SNAPSHOT_ERR_MAX], id[SNAPSHOT_ID_LEN + 1];
        char state[SNAPSHOT_STATE_MAX] = "", location[96];
        long long n = 0;
        int r;

        if (snap_provider(req) < 0)
                return;
        /* the body is optional (CreateSnapshotRequest: {} or {"name": ...}) */
        if (cl && *cl && strcmp(cl, "0") != 0 && request_json_body(req, &body) < 0)
                return;
        if (snapshot_create_parse(body, name, err) < 0) {
                reply_error(req, API_INVALID_REQUEST, "%s", err);
                goto out;
        }
        if (timeutil_random_id(id, sizeof(id)) < 0) {
                reply_errno(req, -EIO, "snapshot");
                goto out;
        }
        r = snapshot_store_begin(req->w->redis, req->w->cfg, id, req->auth.tenant, req->path_arg,
                                 name, state, &n);
        if (r == -ENOENT) {
                reply_error(req, API_SANDBOX_NOT_FOUND, "no sandbox %s", req->path_arg);
                goto out;
        }
        if (r == -EBUSY) {
                reply_error(req, API_CONFLICT, "sandbox %s is %s; a snapshot needs it Running",
                            req->path_arg, state);
                goto out;
        }
        if (r == -EDQUOT && req->w->cfg->snapshot_max_per_tenant == 0) {
                reply_error(req, API_CONFLICT,
                            "snapshots are turned off on this broker (SNAPSHOT_MAX_PER_TENANT=0)");
                goto out;
        }
        if (r == -EDQUOT) {
                reply_error(req, API_CONFLICT,
                            "tenant %s already has %lld snapshots, the limit "
                            "(SNAPSHOT_MAX_PER_TENANT=%d): delete one first",
                            req->auth.tenant, n, req->w->cfg->snapshot_max_per_tenant);
                goto out;
        }
        if (r < 0) {
                reply_errno(req, r, "snapshot");
                goto out;
        }
        r = snapshot_store_get(req->w->redis, req->w->cfg, id, req->auth.tenant, &snap);
        if (r < 0) {
                reply_errno(req, r, "snapshot");
                goto out;
        }
        snprintf(location, sizeof(location), "Location: /v1/snapshots/%s", id);
        snprintf(req->after_arg, sizeof(req->after_arg), "%s", id);
        req->after = commit_after;
        reply_json_hdr(req, 202, location, snap);
out:
        json_object_put(snap);
        json_object_put(body);
}

void h_snap_get(struct request *req)
{
        struct json_object *snap = NULL;
        int r;

        if (snap_provider(req) < 0)
                return;
        r = snapshot_id_valid(req->path_arg)
                    ? snapshot_store_get(req->w->redis, req->w->cfg, req->path_arg,
                                         req->auth.tenant, &snap)
                    : -ENOENT;
        if (r == -ENOENT)
                reply_error(req, API_NOT_FOUND, "no snapshot %s", req->path_arg);
        else if (r < 0)
                reply_errno(req, r, "snapshot");
        else
                reply_json(req, 200, snap);
        json_object_put(snap);
}

void h_snap_list(struct request *req)
{
        struct json_object *items = NULL, *o;
        const char *cursor = req->query, *states[8];
        char qname[32], value[256], sid[64] = "", name[SNAPSHOT_NAME_MAX + 1] = "";
        char unknown[8][SNAPSHOT_STATE_MAX];
        long page = 1, size = 20;
        long long total;
        int n_states = 0, r;

        if (snap_provider(req) < 0)
                return;
        while ((r = url_query_next(&cursor, qname, sizeof(qname), value, sizeof(value))) == 1) {
                char *end;
                if (strcmp(qname, "state") == 0) {
                        /* any letter case; a state this server never gives
                         * (clients must tolerate new ones, the spec says)
                         * matches nothing, as given */
                        const char *st = snapshot_state_canonical(value);
                        if (!st && (!*value || strlen(value) >= SNAPSHOT_STATE_MAX)) {
                                reply_error(req, API_INVALID_REQUEST, "state must be 1 to %d bytes",
                                            SNAPSHOT_STATE_MAX - 1);
                                return;
                        }
                        if (n_states == 8) {
                                reply_error(req, API_INVALID_REQUEST, "at most 8 state filters");
                                return;
                        }
                        if (!st)
                                st = strcpy(unknown[n_states], value);
                        states[n_states++] = st;
                } else if (strcmp(qname, "sandboxId") == 0) {
                        if (strlen(value) >= sizeof(sid)) {
                                reply_error(req, API_INVALID_REQUEST, "sandboxId is too long");
                                return;
                        }
                        strcpy(sid, value);
                } else if (strcmp(qname, "name") == 0) {
                        if (strlen(value) >= sizeof(name)) {
                                reply_error(req, API_INVALID_REQUEST,
                                            "name is longer than %d bytes", SNAPSHOT_NAME_MAX);
                                return;
                        }
                        strcpy(name, value);
                } else if (strcmp(qname, "page") == 0 || strcmp(qname, "pageSize") == 0) {
                        long v = strtol(value, &end, 10);
                        bool is_size = qname[4] != '\0';
                        if (*end || end == value || v < 1 || v > (is_size ? PAGE_SIZE_MAX : 1000000)) {
                                reply_error(req, API_INVALID_REQUEST,
                                            "%s must be an integer from 1 to %d", qname,
                                            is_size ? PAGE_SIZE_MAX : 1000000);
                                return;
                        }
                        *(is_size ? &size : &page) = v;
                }
        }
        if (r < 0) {
                reply_error(req, API_INVALID_REQUEST, "malformed query string");
                return;
        }
        r = snapshot_store_list(req->w->redis, req->auth.tenant, page, size, sid, name, states,
                                n_states, &total, &items);
        if (r < 0) {
                reply_errno(req, r, "snapshots");
                return;
        }
        o = osb_page_json(items, page, size, total);
        reply_json(req, 200, o);
        json_object_put(o);
}

void h_snap_delete(struct request *req)
{
        char state[SNAPSHOT_STATE_MAX] = "", err[SNAPSHOT_ERR_MAX] = "";
        int r;

        if (snap_provider(req) < 0)
                return;
        r = snapshot_id_valid(req->path_arg)
                    ? snapshot_store_delete(req->w->redis, req->w->provider, req->w->cfg,
                                            req->path_arg, req->auth.tenant, state, err)
                    : -ENOENT;
        if (r == -ENOENT) {
                reply_error(req, API_NOT_FOUND, "no snapshot %s", req->path_arg);
        } else if (r == -EBUSY) {
                reply_error(req, API_CONFLICT,
                            "snapshot %s is %s; it can be deleted once Ready or Failed",
                            req->path_arg, state);
        } else if (r == -EIO || r == -EPROTO || r == -ENOMEM) {
                reply_errno(req, r, "snapshot delete");
        } else if (r < 0) {
                log_err(LOG_KV({ "SNAPSHOT_ID", req->path_arg }, { "REQUEST_ID", req->request_id }),
                        "snapshot delete failed: %s", err);
                reply_error(req, r == -ECONNREFUSED ? API_UNAVAILABLE : API_SANDBOX_FAILED,
                            "snapshot delete: %s", err);
        } else {
                reply_empty(req, 204);
        }
}
