/* kubernetes_api: a small HTTPS client for the Kubernetes API server
 * (libcurl). TLS is always verified against the configured CA (never the
 * system's store, never off); the client authenticates by a client
 * certificate and key or by a bearer token (a ServiceAccount's), read
 * from files at start. Every request is bounded by its timeout and its
 * answer by a size cap; redirects are not followed, only https is used.
 * A streamed answer (a watch) goes to a sink as it comes, with a tick
 * about once a second to end it.
 *
 * One persistent CURL easy handle per struct k8s_api (the connection is
 * reused). NOT thread-safe: each thread owns its own. The token is only
 * ever put in the header, never in a message. */
#pragma once
#include <stddef.h>

#include "providers/http_buf.h"
#include "providers/provider.h"

#define K8S_TOKEN_MAX 8192 /* a projected ServiceAccount token is ~1 KiB */

struct k8s_api;

struct k8s_auth {
        const char *ca_file;   /* PEM CA bundle the server's certificate must chain to */
        const char *cert_file; /* client certificate (PEM) and key, or */
        const char *key_file;
        const char *token_file; /* a bearer token (one line) */
};

struct k8s_request {
        const char *method; /* GET, POST, DELETE */
        const char *path;   /* after the base URL: "/api/v1/..." with its query */
        const char *json;   /* a JSON body, or NULL */
        int timeout_ms;     /* the whole exchange; > 0 */
        size_t max_resp;    /* cap of a 2xx body (without a sink): -EFBIG over it */
        /* Optional: a 2xx body's bytes as they come, instead of buffered;
         * a negative return aborts the transfer and is returned. */
        int (*sink)(void *ud, const void *data, size_t len);
        void *sink_ud;
        /* Optional: called about once a second while the transfer waits; a
         * negative return aborts it and is returned. */
        int (*tick)(void *ud);
        void *tick_ud;
};

/* Create a client of base (an https:// URL, copied) with auth: the
 * token is read now. Errors (a one-line reason in ret_err): -EINVAL (not
 * https, no CA, neither or both of cert+key and token, a token file
 * empty, over K8S_TOKEN_MAX or of several lines), the errno of a file
 * that cannot be read, -ENOMEM. */
int k8s_api_new(const char *base, const struct k8s_auth *auth, struct k8s_api **ret, char *ret_err);

/* Close the connection and free; accepts NULL. */
void k8s_api_free(struct k8s_api *api);

/* Run one request. On any HTTP answer returns 0 with *ret_status set and
 * ret_resp (if not NULL) holding the body (error bodies cut to 64 KiB).
 * Transport errors: -ECONNREFUSED, -ETIMEDOUT, -EFBIG (a 2xx body over
 * max_resp), -EACCES (TLS: the server's certificate or ours refused),
 * -EIO, or a sink's or tick's negative return; a one-line reason (with
 * the path) goes to ret_err, which may be NULL. */
int k8s_api_request(struct k8s_api *api, const struct k8s_request *req, long *ret_status,
                    struct http_buf *ret_resp, char *ret_err);

/* The API server's HTTP status as an errno: 2xx 0, 401/403 -EACCES, 404
 * -ENOENT, 409 -EBUSY, 410 -ESTALE, 422 and 400 -EINVAL, 429 -EAGAIN,
 * others -EREMOTEIO. */
int k8s_api_status_errno(long status);
