/* docker_api: see docker_api.h. */
#include "providers/docker/docker_api.h"

#include <curl/curl.h>

#include "providers/curl_release.h"
#include "providers/docker/docker_json.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DOCKER_ERR_BODY_MAX (64 * 1024) /* error bodies kept for the message */

struct docker_api {
        CURL *curl;
        char *socket_path;
};

/* ---- demultiplexer ---- */

int docker_demux_feed_fn(struct docker_demux *d, const void *data, size_t len,
                         int (*fn)(void *ud, int stream, const void *p, size_t n), void *ud)
{
        const uint8_t *p = data;

        while (len > 0) {
                size_t take;
                int r;

                if (d->failed)
                        return -EPROTO;
                if (!d->in_frame) {
                        take = sizeof(d->hdr) - d->hdr_len;
                        if (take > len)
                                take = len;
                        memcpy(d->hdr + d->hdr_len, p, take);
                        d->hdr_len += take;
                        p += take;
                        len -= take;
                        if (d->hdr_len < sizeof(d->hdr))
                                break;
                        /* Docker API, "Attach to a container": header :=
                         * [8]byte{STREAM_TYPE, 0, 0, 0, SIZE1, SIZE2, SIZE3, SIZE4} */
                        if (d->hdr[0] > 2 || d->hdr[1] || d->hdr[2] || d->hdr[3]) {
                                d->failed = true;
                                return -EPROTO;
                        }
                        d->stream = d->hdr[0];
                        d->remaining = (uint32_t)d->hdr[4] << 24 | (uint32_t)d->hdr[5] << 16 |
                                       (uint32_t)d->hdr[6] << 8 | (uint32_t)d->hdr[7];
                        d->hdr_len = 0;
                        d->in_frame = d->remaining > 0;
                        continue;
                }
                take = d->remaining < len ? d->remaining : len;
                r = fn(ud, d->stream == 2 ? 2 : 1, p, take);
                if (r < 0)
                        return r;
                p += take;
                len -= take;
                d->remaining -= (uint32_t)take;
                d->in_frame = d->remaining > 0;
        }
        return d->failed ? -EPROTO : 0;
}

struct demux_bufs {
        struct http_buf *out, *err;
};

static int demux_to_bufs(void *ud, int stream, const void *p, size_t n)
{
        struct demux_bufs *b = ud;

        return http_buf_append(stream == 2 ? b->err : b->out, p, n);
}

int docker_demux_feed(struct docker_demux *d, const void *data, size_t len,
                      struct http_buf *out, struct http_buf *err)
{
        struct demux_bufs b = { out, err };

        return docker_demux_feed_fn(d, data, len, demux_to_bufs, &b);
}

bool docker_demux_complete(const struct docker_demux *d)
{
        return !d->failed && !d->in_frame && d->hdr_len == 0;
}

/* ---- HTTP ---- */

int docker_api_new(const char *socket_path, struct docker_api **ret)
{
        struct docker_api *api = calloc(1, sizeof(*api));
        int r = -ENOMEM;

        if (!api)
                goto out;
        api->socket_path = strdup(socket_path ? socket_path : DOCKER_SOCKET_DEFAULT);
        api->curl = curl_easy_init();
        if (!api->socket_path || !api->curl)
                goto out;
        r = 0;
out:
        if (r < 0) {
                docker_api_free(api);
                api = NULL;
        }
        *ret = api;
        return r;
}

void docker_api_free(struct docker_api *api)
{
        if (!api)
                return;
        curl_free_handle(api->curl);
        free(api->socket_path);
        free(api);
}

struct xfer {
        const struct docker_request *req;
        CURL *curl;
        struct http_buf body;
        long status;
        int err; /* why the write callback stopped the transfer */
};

static size_t on_write(char *p, size_t size, size_t n, void *ud)
{
        struct xfer *x = ud;
        size_t len = size * n;
        int r;

        if (x->status == 0)
                curl_easy_getinfo(x->curl, CURLINFO_RESPONSE_CODE, &x->status);
        if (x->status / 100 == 2) {
                if (x->req->sink) {
                        r = x->req->sink(x->req->sink_ud, p, len);
                        if (r < 0) {
                                x->err = r;
                                return 0; /* aborts with CURLE_WRITE_ERROR */
                        }
                        return len;
                }
                if (len > x->req->max_resp - x->body.len) {
                        x->err = -EFBIG;
                        return 0;
                }
        }
        /* Error bodies are only read for their message: keep a prefix. */
        r = http_buf_append(&x->body, p, len);
        if (r < 0) {
                x->err = r;
                return 0;
        }
        return len;
}

/* libcurl's progress callback: the request's tick, for keep-alives. */
static int on_progress(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow)
{
        struct xfer *x = ud;
        int r;

        (void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
        r = x->req->tick(x->req->tick_ud);
        if (r < 0) {
                x->err = r;
                return 1; /* aborts with CURLE_ABORTED_BY_CALLBACK */
        }
        return 0;
}

static void err_set(char *ret_err, const char *fmt, const char *a, const char *b)
{
        if (ret_err)
                snprintf(ret_err, PROVIDER_ERR_MAX, fmt, a, b);
}

int docker_api_request(struct docker_api *api, const struct docker_request *req,
                       long *ret_status, struct http_buf *ret_resp, char *ret_err)
{
        char url[2048], cerr[CURL_ERROR_SIZE] = "";
        struct curl_slist *hdrs = NULL, *h;
        struct xfer x = { .req = req, .curl = api->curl };
        CURL *c = api->curl;
        CURLcode cc;
        int r = -ENOMEM;

        x.body.max = req->sink || req->max_resp == 0 ? DOCKER_ERR_BODY_MAX : req->max_resp;
        if (snprintf(url, sizeof(url), "http://docker/v" DOCKER_API_VERSION "%s", req->path) >=
            (int)sizeof(url)) {
                r = -EINVAL;
                err_set(ret_err, "docker: request path too long%s%s", "", "");
                goto out;
        }
        /* reset keeps the live connection: only the options start over. */
        curl_easy_reset(c);
        if (req->body || (req->method && strcmp(req->method, "POST") == 0)) {
                char ct[128];

                snprintf(ct, sizeof(ct), "Content-Type: %s",
                         req->content_type ? req->content_type : "application/json");
                h = curl_slist_append(hdrs, ct);
                if (!h)
                        goto out;
                hdrs = h;
        }
        for (size_t i = 0; req->headers && req->headers[i]; i++) {
                h = curl_slist_append(hdrs, req->headers[i]);
                if (!h)
                        goto out;
                hdrs = h;
        }
        /* No "Expect: 100-continue" round trip for large PUT/POST bodies. */
        h = curl_slist_append(hdrs, "Expect:");
        if (!h)
                goto out;
        hdrs = h;

        curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, api->socket_path);
        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)req->timeout_ms);
        curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
                         (long)(req->timeout_ms < 5000 ? req->timeout_ms : 5000));
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_write);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, &x);
        curl_easy_setopt(c, CURLOPT_ERRORBUFFER, cerr);
        if (req->tick) {
                curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
                curl_easy_setopt(c, CURLOPT_XFERINFODATA, &x);
                curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
        }
        if (strcmp(req->method, "GET") == 0) {
                curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
        } else if (strcmp(req->method, "HEAD") == 0) {
                curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
        } else {
                if (req->body || strcmp(req->method, "POST") == 0) {
                        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE,
                                         (curl_off_t)(req->body ? req->body_len : 0));
                        curl_easy_setopt(c, CURLOPT_POSTFIELDS, req->body ? req->body : "");
                }
                if (strcmp(req->method, "POST") != 0)
                        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, req->method);
        }

        cc = curl_easy_perform(c);
        if (cc != CURLE_OK) {
                r = (cc == CURLE_WRITE_ERROR || cc == CURLE_ABORTED_BY_CALLBACK) && x.err
                            ? x.err : http_curl_errno(cc);
                if (r == -EFBIG)
                        err_set(ret_err, "docker: %s %s: answer over the size cap", req->method,
                                req->path);
                else
                        err_set(ret_err, "docker: %s: %s", req->path,
                                cerr[0] ? cerr : curl_easy_strerror(cc));
                goto out;
        }
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &x.status);
        *ret_status = x.status;
        if (ret_resp) {
                *ret_resp = x.body;
                x.body = (struct http_buf){ 0 };
        }
        r = 0;
out:
        /* The handle must not keep pointers into this frame. */
        curl_easy_setopt(c, CURLOPT_ERRORBUFFER, NULL);
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, NULL);
        slist_free(hdrs);
        http_buf_release(&x.body);
        return r;
}

int docker_api_call(struct docker_api *api, const char *method, const char *path,
                    const char *json_body, int timeout_ms, long *ret_status,
                    struct http_buf *ret_resp, size_t max_resp, char *ret_err)
{
        struct docker_request req = {
                .method = method,
                .path = path,
                .body = json_body,
                .body_len = json_body ? strlen(json_body) : 0,
                .timeout_ms = timeout_ms,
                .max_resp = max_resp,
        };

        return docker_api_request(api, &req, ret_status, ret_resp, ret_err);
}

int docker_api_status_errno(long status)
{
        if (status / 100 == 2 || status == 304)
                return 0;
        if (status == 404)
                return -ENOENT;
        if (status == 409)
                return -EBUSY;
        return -EIO;
}

int docker_api_json(struct docker_api *api, const char *method, const char *path, const char *body,
                    int timeout_ms, size_t max_resp, struct http_buf *resp, const char *what,
                    char *ret_err)
{
        struct http_buf b = { 0 };
        long status = 0;
        int r;

        if (!path) {
                provider_errf(ret_err, "docker: %s: out of memory", what);
                return -ENOMEM;
        }
        r = docker_api_call(api, method, path, body, timeout_ms, &status, &b, max_resp, ret_err);
        if (r == 0 && (r = docker_api_status_errno(status)) < 0)
                docker_json_error_message(what, status, b.data, ret_err);
        if (r == 0 && resp) {
                *resp = b;
                b = (struct http_buf){ 0 };
        }
        http_buf_release(&b);
        return r;
}
