/* daytona_api: see daytona_api.h. */
#include "providers/daytona/daytona_api.h"

#include <curl/curl.h>

#include "providers/curl_release.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "core/timeutil.h"

#define DAYTONA_ERR_BODY_MAX (64 * 1024)
#define DAYTONA_BACKOFF_MS 250 /* a 429 without Retry-After: 250, 500, 1000 ms */

struct daytona_api {
        CURL *curl;
        char *auth;  /* "Authorization: Bearer ..." */
        char *org;   /* "X-Daytona-Organization-ID: ..." or NULL */
};

/* Header values must not smuggle a line break into the request. */
static bool header_safe(const char *s)
{
        return strcspn(s, "\r\n") == strlen(s);
}

int daytona_api_new(const char *api_key, const char *org_id, struct daytona_api **ret)
{
        struct daytona_api *api = NULL;
        int r = -EINVAL;

        if (!api_key || !api_key[0] || !header_safe(api_key) || (org_id && !header_safe(org_id)))
                goto out;
        r = -ENOMEM;
        api = calloc(1, sizeof(*api));
        if (!api)
                goto out;
        api->curl = curl_easy_init();
        if (!api->curl || asprintf(&api->auth, "Authorization: Bearer %s", api_key) < 0) {
                api->auth = NULL;
                goto out;
        }
        if (org_id && org_id[0] &&
            asprintf(&api->org, "X-Daytona-Organization-ID: %s", org_id) < 0) {
                api->org = NULL;
                goto out;
        }
        r = 0;
out:
        if (r < 0) {
                daytona_api_free(api);
                api = NULL;
        }
        *ret = api;
        return r;
}

void daytona_api_free(struct daytona_api *api)
{
        if (!api)
                return;
        curl_free_handle(api->curl);
        if (api->auth) /* the key: wipe before it goes back to the heap */
                explicit_bzero(api->auth, strlen(api->auth));
        free(api->auth);
        free(api->org);
        free(api);
}

long daytona_api_retry_after_ms(const char *v, long cap_ms)
{
        char *end;
        long s;

        if (!v)
                return -1;
        while (*v == ' ' || *v == '\t')
                v++;
        if (!*v)
                return -1;
        if (*v == '-' || *v == '+')
                return -1;
        if (*v < '0' || *v > '9')
                return 1000 < cap_ms ? 1000 : cap_ms; /* an HTTP-date: do not trust clocks */
        errno = 0;
        s = strtol(v, &end, 10);
        while (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n')
                end++;
        if (errno || *end || s < 0)
                return -1;
        return s >= cap_ms / 1000 ? cap_ms : s * 1000;
}

struct xfer {
        const struct daytona_request *req;
        CURL *curl;
        struct http_buf body;
        long status;
        int err;
        char retry_after[32];
};

static size_t on_write(char *p, size_t size, size_t n, void *ud)
{
        struct xfer *x = ud;
        size_t len = size * n;

        if (x->status == 0)
                curl_easy_getinfo(x->curl, CURLINFO_RESPONSE_CODE, &x->status);
        if (x->status / 100 == 2 && len > x->req->max_resp - x->body.len) {
                x->err = -EFBIG;
                return 0;
        }
        /* Error bodies are only read for their message: a prefix is kept. */
        if (http_buf_append(&x->body, p, len) < 0) {
                x->err = -ENOMEM;
                return 0;
        }
        return len;
}

static size_t on_header(char *p, size_t size, size_t n, void *ud)
{
        struct xfer *x = ud;
        size_t len = size * n;
        static const char name[] = "retry-after:";

        if (len > sizeof(name) - 1 && strncasecmp(p, name, sizeof(name) - 1) == 0) {
                size_t v = len - (sizeof(name) - 1);

                if (v >= sizeof(x->retry_after))
                        v = sizeof(x->retry_after) - 1;
                memcpy(x->retry_after, p + sizeof(name) - 1, v);
                x->retry_after[v] = '\0';
        }
        return len;
}

static void err_set(char *ret_err, const char *fmt, const char *a, const char *b)
{
        if (ret_err)
                snprintf(ret_err, PROVIDER_ERR_MAX, fmt, a, b);
}

/* The path and query of a URL, for messages (no scheme or host). */
static const char *url_path(const char *url)
{
        const char *p = strstr(url, "://");

        p = p ? strchr(p + 3, '/') : NULL;
        return p ? p : url;
}

/* One exchange, no retries. */
static int perform(struct daytona_api *api, const struct daytona_request *req, int timeout_ms,
                   struct xfer *x, char *ret_err)
{
        char cerr[CURL_ERROR_SIZE] = "";
        struct curl_slist *hdrs = NULL, *h;
        curl_mime *mime = NULL;
        CURL *c = api->curl;
        CURLcode cc;
        int r = -ENOMEM;

        curl_easy_reset(c); /* keeps the live connections */
        if (!(h = curl_slist_append(hdrs, api->auth)))
                goto out;
        hdrs = h;
        if (api->org) {
                if (!(h = curl_slist_append(hdrs, api->org)))
                        goto out;
                hdrs = h;
        }
        if (!(h = curl_slist_append(hdrs, "Expect:")))
                goto out;
        hdrs = h;
        if (req->json) {
                if (!(h = curl_slist_append(hdrs, "Content-Type: application/json")))
                        goto out;
                hdrs = h;
        }
        curl_easy_setopt(c, CURLOPT_URL, req->url);
        curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
        curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
        curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)(timeout_ms < 10000 ? timeout_ms : 10000));
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_write);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, x);
        curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
        curl_easy_setopt(c, CURLOPT_HEADERDATA, x);
        curl_easy_setopt(c, CURLOPT_ERRORBUFFER, cerr);
        if (req->part) {
                curl_mimepart *part;

                mime = curl_mime_init(c);
                part = mime ? curl_mime_addpart(mime) : NULL;
                if (!part || curl_mime_name(part, req->part->name) != CURLE_OK ||
                    curl_mime_filename(part, req->part->filename) != CURLE_OK ||
                    curl_mime_type(part, "application/octet-stream") != CURLE_OK ||
                    curl_mime_data(part, req->part->data, req->part->len) != CURLE_OK)
                        goto out;
                curl_easy_setopt(c, CURLOPT_MIMEPOST, mime);
                if (strcmp(req->method, "POST") != 0)
                        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, req->method);
        } else {
                http_curl_method(c, req->method, req->json);
        }

        cc = curl_easy_perform(c);
        if (cc != CURLE_OK) {
                r = cc == CURLE_WRITE_ERROR && x->err ? x->err : http_curl_errno(cc);
                if (r == -EFBIG)
                        err_set(ret_err, "daytona: %s %s: answer over the size cap", req->method,
                                url_path(req->url));
                else if (r == -ETIMEDOUT)
                        err_set(ret_err, "daytona: %s %s: timed out", req->method, url_path(req->url));
                else
                        err_set(ret_err, "daytona: %s: %s", url_path(req->url),
                                cerr[0] ? cerr : curl_easy_strerror(cc));
                goto out;
        }
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &x->status);
        r = 0;
out:
        /* The handle must not keep pointers into this frame. */
        curl_easy_setopt(c, CURLOPT_ERRORBUFFER, NULL);
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, NULL);
        curl_easy_setopt(c, CURLOPT_MIMEPOST, NULL);
        mime_free(mime);
        slist_free(hdrs);
        return r;
}

int daytona_api_request(struct daytona_api *api, const struct daytona_request *req,
                        long *ret_status, struct http_buf *ret_resp, char *ret_err)
{
        int64_t deadline = timeutil_mono_ms() + req->timeout_ms;
        struct xfer x = { 0 };
        int r = -EINVAL;

        for (int attempt = 0;; attempt++) {
                int64_t left = deadline - timeutil_mono_ms();
                long wait;

                http_buf_release(&x.body);
                x = (struct xfer){ .req = req, .curl = api->curl };
                x.body.max = req->max_resp > DAYTONA_ERR_BODY_MAX ? req->max_resp : DAYTONA_ERR_BODY_MAX;
                if (left <= 0) {
                        r = -ETIMEDOUT;
                        err_set(ret_err, "daytona: %s %s: timed out (rate limited)", req->method,
                                url_path(req->url));
                        goto out;
                }
                r = perform(api, req, (int)left, &x, ret_err);
                if (r < 0)
                        goto out;
                if (x.status != 429 || attempt >= DAYTONA_API_RETRIES)
                        break;
                wait = daytona_api_retry_after_ms(x.retry_after, DAYTONA_API_RETRY_MAX_MS);
                if (wait < 0)
                        wait = DAYTONA_BACKOFF_MS << attempt;
                if (wait >= deadline - timeutil_mono_ms())
                        break; /* no time left to wait: report the 429 */
                nanosleep(&(struct timespec){ wait / 1000, (wait % 1000) * 1000000L }, NULL);
        }
        *ret_status = x.status;
        if (ret_resp) {
                *ret_resp = x.body;
                x.body = (struct http_buf){ 0 };
        }
        r = 0;
out:
        http_buf_release(&x.body);
        return r;
}
