/* h_templates: OpenSandbox templates (the /templates routes of
 * opensandbox-server 1.1.1, which its SDKs' SandboxManager.*_template and
 * `osb template` call): POST /templates, GET /templates, GET and DELETE
 * /templates/{id}; docs/OPENSANDBOX.md, "Templates". A create from a
 * template is the ordinary create (h_osb_create.c) of the body the
 * template and the request make together (template_store_expand).
 *
 * A template belongs to the tenant of the API key; another tenant's does
 * not exist (404), for admin keys too. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "h_opensandbox.h"
#include "core/json_input.h"
#include "core/log.h"
#include "sandbox/opensandbox.h"
#include "routes.h"
#include "sandbox/sandbox.h"
#include "sandbox/template_store.h"
#include "codec/url.h"

#define PAGE_SIZE_MAX 200

void h_tpl_create(struct request *req)
{
        struct json_object *body = NULL, *spec = NULL, *tpl = NULL;
        char err[TEMPLATE_ERR_MAX], location[96];
        long long n = 0;
        struct osb o;
        int r;

        if (h_osb_auth(req, &o) < 0)
                return;
        if (request_json_body(req, &body) < 0)
                return;
        r = template_parse(req->w->cfg, body, &spec, err);
        if (r == -EINVAL) {
                reply_error(req, API_INVALID_REQUEST, "%s", err);
                goto out;
        }
        if (r == 0 && sandbox_image_admissible(req->w->provider, req->w->cfg,
                                               json_get_str(spec, "image"), err) == -EPERM) {
                reply_error(req, API_INVALID_REQUEST, "%s", err);
                goto out;
        }
        if (r == 0)
                r = template_store_create(req->w->redis, req->w->cfg, o.tenant, spec, &tpl, &n);
        if (r == -EDQUOT && req->w->cfg->template_max_per_tenant == 0) {
                reply_error(req, API_CONFLICT,
                            "templates are turned off on this broker (TEMPLATE_MAX_PER_TENANT=0)");
        } else if (r == -EDQUOT) {
                reply_error(req, API_CONFLICT,
                            "tenant %s already has %lld templates, the limit "
                            "(TEMPLATE_MAX_PER_TENANT=%d): "
                            "delete one first",
                            o.tenant, n, req->w->cfg->template_max_per_tenant);
        } else if (r < 0) {
                reply_errno(req, r, "template");
        } else {
                log_info(LOG_KV({ "TEMPLATE_ID", json_get_str(tpl, "templateId") },
                                { "REQUEST_ID", req->request_id }),
                         "template created");
                snprintf(location, sizeof(location), "Location: /v1/templates/%s",
                         json_get_str(tpl, "templateId"));
                reply_json_hdr(req, 201, location, tpl);
        }
out:
        json_put(tpl);
        json_put(spec);
        json_put(body);
}

void h_tpl_get(struct request *req)
{
        struct json_object *tpl = NULL;
        struct osb o;
        int r;

        if (h_osb_auth(req, &o) < 0)
                return;
        r = template_store_get(req->w->redis, o.tenant, req->path_arg, &tpl);
        if (r == -ENOENT)
                reply_error(req, API_NOT_FOUND, "no template %s", req->path_arg);
        else if (r < 0)
                reply_errno(req, r, "template");
        else
                reply_json(req, 200, tpl);
        json_put(tpl);
}

void h_tpl_list(struct request *req)
{
        struct json_object *items = NULL, *filter = NULL, *o;
        const char *cursor = req->query;
        char qname[32], value[4096], err[TEMPLATE_ERR_MAX];
        long page = 1, size = 20;
        long long total;
        struct osb a;
        int r;

        if (h_osb_auth(req, &a) < 0)
                return;
        while ((r = url_query_next(&cursor, qname, sizeof(qname), value, sizeof(value))) == 1) {
                if (strcmp(qname, "metadata") == 0) {
                        json_put(filter);
                        if (template_filter_parse(value, &filter, err) < 0) {
                                reply_error(req, API_INVALID_REQUEST, "%s", err);
                                return;
                        }
                } else if (strcmp(qname, "page") == 0 || strcmp(qname, "pageSize") == 0) {
                        char *end;
                        long v = strtol(value, &end, 10);
                        bool is_size = qname[4] != '\0';
                        if (*end || end == value || v < 1 || v > (is_size ? PAGE_SIZE_MAX : 1000000)) {
                                reply_error(req, API_INVALID_REQUEST,
                                            "%s must be an integer from 1 to %d", qname,
                                            is_size ? PAGE_SIZE_MAX : 1000000);
                                json_put(filter);
                                return;
                        }
                        *(is_size ? &size : &page) = v;
                }
        }
        if (r < 0) {
                reply_error(req, API_INVALID_REQUEST, "malformed query string");
                json_put(filter);
                return;
        }
        r = template_store_list(req->w->redis, req->w->cfg, a.tenant, filter, page, size, &total,
                                &items);
        json_put(filter);
        if (r < 0) {
                reply_errno(req, r, "templates");
                return;
        }
        o = osb_page_json(items, page, size, total);
        reply_json(req, 200, o);
        json_put(o);
}

void h_tpl_delete(struct request *req)
{
        struct osb o;
        int r;

        if (h_osb_auth(req, &o) < 0)
                return;
        r = template_store_delete(req->w->redis, o.tenant, req->path_arg);
        if (r == -ENOENT) {
                reply_error(req, API_NOT_FOUND, "no template %s", req->path_arg);
        } else if (r < 0) {
                reply_errno(req, r, "template delete");
        } else {
                log_info(LOG_KV({ "TEMPLATE_ID", req->path_arg }, { "REQUEST_ID", req->request_id }),
                         "template deleted");
                reply_empty(req, 204);
        }
}
