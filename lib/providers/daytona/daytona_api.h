/* daytona_api: a small HTTP(S) client for Daytona's REST API and its
 * toolbox proxy (libcurl). Every request carries "Authorization: Bearer
 * <key>" and, when configured, "X-Daytona-Organization-ID"; every request is
 * bounded by its timeout and its answer by a size cap; redirects are not
 * followed and only http/https URLs are used.
 *
 * 429 Too Many Requests is retried here, at most DAYTONA_API_RETRIES times,
 * after the Retry-After seconds (capped at DAYTONA_API_RETRY_MAX_MS, and
 * never past the request's own timeout); still 429 after that, the status
 * is returned as is.
 *
 * One persistent CURL easy handle per struct daytona_api (connections are
 * reused). NOT thread-safe: each thread owns its own. The API key is only
 * ever put in the header, never in a message. */
#pragma once
#include <stddef.h>

#include "providers/http_buf.h"
#include "providers/provider.h"

#define DAYTONA_API_RETRIES 3
#define DAYTONA_API_RETRY_MAX_MS 5000

struct daytona_api;

/* One file part for a multipart/form-data body (toolbox /files/upload). */
struct daytona_part {
        const char *name;     /* the form field: "file" */
        const char *filename;
        const void *data;
        size_t len;
};

struct daytona_request {
        const char *method;       /* GET, POST, DELETE */
        const char *url;          /* absolute: base or toolbox URL + path + query */
        const char *json;         /* a JSON body, or NULL */
        const struct daytona_part *part; /* or a multipart body, or NULL */
        int timeout_ms;           /* the whole exchange including 429 waits; > 0 */
        size_t max_resp;          /* cap of a 2xx body: -EFBIG over it */
};

/* Create a client; key and org_id (may be NULL or "") are copied.
 * Returns 0, -EINVAL (no key), -ENOMEM. */
int daytona_api_new(const char *api_key, const char *org_id, struct daytona_api **ret);

/* Close connections and free; accepts NULL. */
void daytona_api_free(struct daytona_api *api);

/* Run one request. On any HTTP answer returns 0 with *ret_status set and
 * ret_resp (if not NULL) holding the body (owned by the caller,
 * http_buf_release; error bodies are cut to 64 KiB). Transport errors:
 * -ECONNREFUSED (nothing listens, or the name does not resolve),
 * -ETIMEDOUT, -EFBIG (a 2xx body over max_resp), -EIO; a one-line reason
 * (with the path, never the key) goes to ret_err, which may be NULL. */
int daytona_api_request(struct daytona_api *api, const struct daytona_request *req,
                        long *ret_status, struct http_buf *ret_resp, char *ret_err);

/* Parse a Retry-After value (delta-seconds; an HTTP date counts as 1 s)
 * into milliseconds, capped at cap_ms; -1 when absent or malformed. */
long daytona_api_retry_after_ms(const char *value, long cap_ms);
