/* h_vault: the Credential Vault of the egress API (OpenSandbox 1.1.1
 * egress-api.yaml) at /v1/sandboxes/{id}/proxy/18080/credential-vault:
 * POST (create), GET (the sanitized state), PATCH (atomic add / replace /
 * delete of credentials and bindings), DELETE; GET .../credentials,
 * .../credentials/{name}, .../bindings, .../bindings/{name}. Authenticated
 * as every data-plane route (execd_open: the sandbox's token, or an API key
 * of its owner; another tenant's sandbox is 404). The vault lives in the
 * sandbox's record (vault_store.h); no answer, log line or error message
 * carries a credential's value (vault.h's views; messages name members). */
#include <errno.h>
#include <string.h>
#include <openssl/crypto.h>

#include "execd.h"
#include "core/json_input.h"
#include "core/log.h"
#include "routes.h"
#include "sandbox/vault.h"
#include "sandbox/vault_view.h"
#include "sandbox/vault_seal.h"
#include "sandbox/vault_store.h"

static void reply_store_error(struct request *req, const struct execd *x, int r, const char *err)
{
        if (r == -ENOENT)
                reply_error(req, API_SANDBOX_NOT_FOUND, "sandbox %s not found", x->sandbox_id);
        else if (r == -ENODATA)
                reply_error(req, API_NOT_FOUND, "sandbox %s has no credential vault", x->sandbox_id);
        else if (r == -EINVAL)
                reply_error(req, API_INVALID_REQUEST, "%s", err);
        else if (r == -EEXIST)
                reply_error(req, API_CONFLICT,
                            "sandbox %s has a credential vault already: PATCH it", x->sandbox_id);
        else if (r == -ESTALE)
                reply_error(req, API_CONFLICT, "%s", err);
        else if (r == -EAGAIN)
                reply_error(req, API_CONFLICT, "the vault changed too often meanwhile; try again");
        else {
                log_err(execd_kv(req, x), "credential vault: %s", strerror(-r));
                reply_errno(req, r, "credential vault");
        }
}

static void reply_view(struct request *req, struct json_object *v, enum vault_view what, int status)
{
        struct json_object *o = NULL;

        if (vault_view(v, what, &o) < 0)
                reply_error(req, API_INTERNAL, "out of memory");
        else
                reply_json(req, status, o);
        json_put(o);
}

/* GET of the vault, its lists, or one entry (the route's second {}). */
void h_vault_get(struct request *req)
{
        const char *tail = strstr(req->path, "/credential-vault");
        struct json_object *v = NULL, *one = NULL;
        enum vault_view what = VAULT_VIEW_STATE;
        struct execd x;
        int r;

        if (execd_open(req, &x, false) < 0)
                return;
        if (tail && strstr(tail, "/credentials"))
                what = VAULT_VIEW_CREDENTIALS;
        else if (tail && strstr(tail, "/bindings"))
                what = VAULT_VIEW_BINDINGS;
        r = vault_store_get(req->w->redis, x.sandbox_id, &v);
        if (r < 0) {
                reply_store_error(req, &x, r, "");
                goto out;
        }
        if (!req->path_arg2[0]) {
                reply_view(req, v, what, 200);
                goto out;
        }
        r = vault_name_valid(req->path_arg2) ? vault_view_one(v, what, req->path_arg2, &one)
                                             : -ENOENT;
        if (r == -ENOENT)
                reply_error(req, API_NOT_FOUND, "the vault holds no %s of that name",
                            what == VAULT_VIEW_BINDINGS ? "binding" : "credential");
        else if (r < 0)
                reply_error(req, API_INTERNAL, "out of memory");
        else
                reply_json(req, 200, one);
out:
        json_put(one);
        json_put(v);
}

/* POST creates, PATCH changes, DELETE removes the vault. */
void h_vault_change(struct request *req)
{
        bool post = !strcmp(req->method, "POST"), patch = !strcmp(req->method, "PATCH");
        size_t max = VAULT_JSON_MAX < req->w->max_body ? VAULT_JSON_MAX : req->w->max_body;
        struct json_object *v = NULL;
        uint8_t key[VAULT_KEY_BYTES];
        bool have_key = false;
        char err[320] = "";
        struct execd x;
        int r;

        if (execd_open(req, &x, false) < 0)
                return;
        if (!post && !patch) {
                r = vault_store_delete(req->w->redis, x.sandbox_id);
                if (r < 0) {
                        reply_store_error(req, &x, r, err);
                        return;
                }
                log_info(execd_kv(req, &x), "credential vault deleted");
                reply_empty(req, 204);
                return;
        }
        if (request_read_json_body(req, max) < 0)
                return;
        if (req->w->cfg->vault_key_file[0]) {
                /* read at each write: a key replaced on disk is used at once */
                if (vault_key_load(req->w->cfg->vault_key_file, key, err, sizeof(err)) < 0) {
                        log_err(execd_kv(req, &x), "credential vault: %s", err);
                        reply_error(req, API_UNAVAILABLE, "the credential vault's key is unusable");
                        return;
                }
                have_key = true;
        }
        if (post) {
                r = vault_parse_create(req->body, req->body_len, &v, err, sizeof(err));
                if (r == 0)
                        r = vault_store_create(req->w->redis, have_key ? key : NULL, x.sandbox_id, v);
        } else {
                r = vault_store_patch(req->w->redis, have_key ? key : NULL, x.sandbox_id, req->body,
                                      req->body_len, &v, err, sizeof(err));
        }
        OPENSSL_cleanse(key, sizeof(key));
        if (r < 0) {
                reply_store_error(req, &x, r, err);
                goto out;
        }
        {
                struct json_object *c = NULL, *b = NULL, *rev = NULL;

                (void)json_object_object_get_ex(v, "credentials", &c);
                (void)json_object_object_get_ex(v, "bindings", &b);
                (void)json_object_object_get_ex(v, "revision", &rev);
                log_info(execd_kv(req, &x),
                         "credential vault %s: revision %lld, %zu credentials, %zu bindings",
                         post ? "created" : "patched", (long long)json_object_get_int64(rev),
                         json_object_array_length(c), json_object_array_length(b));
        }
        reply_view(req, v, VAULT_VIEW_STATE, post ? 201 : 200);
out:
        json_put(v);
}
