/* kubernetes_api: see kubernetes_api.h. */
#include "providers/kubernetes/kubernetes_api.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "providers/curl_release.h"

#define K8S_ERR_BODY_MAX (64 * 1024)

struct k8s_api {
        CURL *curl;
        char *base, *ca, *cert, *key;
        char *auth; /* "Authorization: Bearer ..." or NULL */
};

static void errf(char *ret_err, const char *fmt, const char *a, const char *b)
{
        if (ret_err)
                snprintf(ret_err, PROVIDER_ERR_MAX, fmt, a, b);
}

/* The token file: one line (a trailing newline allowed), 1..K8S_TOKEN_MAX. */
static int read_token(const char *path, char **ret, char *ret_err)
{
        char *buf = malloc(K8S_TOKEN_MAX + 2);
        ssize_t n = 0, got;
        int fd, r = 0;

        *ret = NULL;
        if (!buf)
                return -ENOMEM;
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0) {
                r = -errno;
                errf(ret_err, "KUBERNETES_TOKEN_FILE %s: %s", path, strerror(-r));
                goto out;
        }
        while (n < K8S_TOKEN_MAX + 1 && (got = read(fd, buf + n, (size_t)(K8S_TOKEN_MAX + 1 - n))) > 0)
                n += got;
        close(fd);
        while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
                n--;
        buf[n] = '\0';
        if (n == 0 || n > K8S_TOKEN_MAX || strcspn(buf, "\r\n") != (size_t)n) {
                errf(ret_err, "KUBERNETES_TOKEN_FILE %s: %s", path,
                     "must hold one line of at most 8192 bytes");
                r = -EINVAL;
                goto out;
        }
        if (asprintf(ret, "Authorization: Bearer %s", buf) < 0) {
                *ret = NULL;
                r = -ENOMEM;
        }
out:
        explicit_bzero(buf, K8S_TOKEN_MAX + 2);
        free(buf);
        return r;
}

static int readable(const char *what, const char *path, char *ret_err)
{
        if (access(path, R_OK) < 0) {
                int r = -errno;

                errf(ret_err, "%s: %s", what, path);
                if (ret_err)
                        snprintf(ret_err + strlen(ret_err), PROVIDER_ERR_MAX - strlen(ret_err),
                                 ": %s", strerror(-r));
                return r;
        }
        return 0;
}

int k8s_api_new(const char *base, const struct k8s_auth *a, struct k8s_api **ret, char *ret_err)
{
        struct k8s_api *api = NULL;
        bool cert = a->cert_file && a->cert_file[0], key = a->key_file && a->key_file[0],
             token = a->token_file && a->token_file[0];
        size_t n;
        int r = -EINVAL;

        *ret = NULL;
        if (!base || strncmp(base, "https://", 8) || strcspn(base, " \r\n") != strlen(base)) {
                errf(ret_err, "KUBERNETES_API_URL must be an https:// URL%s%s", "", "");
                goto out;
        }
        if (!a->ca_file || !a->ca_file[0]) {
                errf(ret_err, "KUBERNETES_CA_FILE is required (TLS is always verified)%s%s", "", "");
                goto out;
        }
        if (cert != key || cert == token) {
                errf(ret_err, "give KUBERNETES_CERT_FILE with KUBERNETES_KEY_FILE, or KUBERNETES_TOKEN_FILE%s%s",
                     "", " (one of the two)");
                goto out;
        }
        if ((r = readable("KUBERNETES_CA_FILE", a->ca_file, ret_err)) < 0 ||
            (cert && (r = readable("KUBERNETES_CERT_FILE", a->cert_file, ret_err)) < 0) ||
            (key && (r = readable("KUBERNETES_KEY_FILE", a->key_file, ret_err)) < 0))
                goto out;
        r = -ENOMEM;
        api = calloc(1, sizeof(*api));
        if (!api)
                goto out;
        n = strlen(base);
        while (n > 8 && base[n - 1] == '/')
                n--;
        api->base = strndup(base, n);
        api->ca = strdup(a->ca_file);
        api->cert = cert ? strdup(a->cert_file) : NULL;
        api->key = key ? strdup(a->key_file) : NULL;
        api->curl = curl_easy_init();
        if (!api->base || !api->ca || (cert && (!api->cert || !api->key)) || !api->curl)
                goto out;
        if (token && (r = read_token(a->token_file, &api->auth, ret_err)) < 0)
                goto out;
        r = 0;
out:
        if (r < 0) {
                if (r == -ENOMEM && ret_err && !ret_err[0])
                        errf(ret_err, "kubernetes: out of memory%s%s", "", "");
                k8s_api_free(api);
                api = NULL;
        }
        *ret = api;
        return r;
}

void k8s_api_free(struct k8s_api *api)
{
        if (!api)
                return;
        curl_free_handle(api->curl);
        if (api->auth)
                explicit_bzero(api->auth, strlen(api->auth));
        free(api->auth);
        free(api->base);
        free(api->ca);
        free(api->cert);
        free(api->key);
        free(api);
}

int k8s_api_status_errno(long status)
{
        if (status / 100 == 2)
                return 0;
        switch (status) {
        case 400:
        case 422: return -EINVAL;
        case 401:
        case 403: return -EACCES;
        case 404: return -ENOENT;
        case 409: return -EBUSY;
        case 410: return -ESTALE;
        case 429: return -EAGAIN;
        default: return -EREMOTEIO;
        }
}

struct xfer {
        const struct k8s_request *req;
        CURL *curl;
        struct http_buf body;
        long status;
        int err;
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
                                return 0;
                        }
                        return len;
                }
                if (len > x->req->max_resp - x->body.len) {
                        x->err = -EFBIG;
                        return 0;
                }
        }
        /* error bodies are read for their message only: a prefix is kept */
        if (http_buf_append(&x->body, p, len) < 0) {
                x->err = -ENOMEM;
                return 0;
        }
        return len;
}

static int on_progress(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow)
{
        struct xfer *x = ud;
        int r;

        (void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
        r = x->req->tick(x->req->tick_ud);
        if (r < 0) {
                x->err = r;
                return 1;
        }
        return 0;
}

static int curl_errno(CURLcode c)
{
        switch (c) {
        case CURLE_PEER_FAILED_VERIFICATION:
        case CURLE_SSL_CERTPROBLEM:
        case CURLE_SSL_CACERT_BADFILE: return -EACCES;
        default: return http_curl_errno(c);
        }
}

int k8s_api_request(struct k8s_api *api, const struct k8s_request *req, long *ret_status,
                    struct http_buf *ret_resp, char *ret_err)
{
        char cerr[CURL_ERROR_SIZE] = "", *url = NULL;
        struct curl_slist *hdrs = NULL, *h;
        struct xfer x = { .req = req, .curl = api->curl };
        CURL *c = api->curl;
        CURLcode cc;
        int r = -ENOMEM;

        *ret_status = 0;
        x.body.max = req->sink || req->max_resp < K8S_ERR_BODY_MAX ? K8S_ERR_BODY_MAX : req->max_resp;
        if (req->timeout_ms <= 0 || !req->path || req->path[0] != '/') {
                r = -EINVAL;
                goto out;
        }
        if (asprintf(&url, "%s%s", api->base, req->path) < 0) {
                url = NULL;
                goto out;
        }
        curl_easy_reset(c); /* keeps the live connection */
        if (api->auth) {
                if (!(h = curl_slist_append(hdrs, api->auth)))
                        goto out;
                hdrs = h;
        }
        if (!(h = curl_slist_append(hdrs, "Accept: application/json")))
                goto out;
        hdrs = h;
        if (req->json) {
                if (!(h = curl_slist_append(hdrs, "Content-Type: application/json")))
                        goto out;
                hdrs = h;
        }
        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "https");
        curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
        curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
        curl_easy_setopt(c, CURLOPT_CAINFO, api->ca);
        curl_easy_setopt(c, CURLOPT_CAPATH, NULL);
        if (api->cert) {
                curl_easy_setopt(c, CURLOPT_SSLCERT, api->cert);
                curl_easy_setopt(c, CURLOPT_SSLKEY, api->key);
        }
        curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)req->timeout_ms);
        curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
                         (long)(req->timeout_ms < 10000 ? req->timeout_ms : 10000));
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_write);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, &x);
        curl_easy_setopt(c, CURLOPT_ERRORBUFFER, cerr);
        if (req->tick) {
                curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
                curl_easy_setopt(c, CURLOPT_XFERINFODATA, &x);
                curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
        }
        http_curl_method(c, req->method, req->json);

        cc = curl_easy_perform(c);
        if (cc != CURLE_OK) {
                const char *path = req->path;
                char shortpath[96];

                snprintf(shortpath, sizeof(shortpath), "%.80s%s", path,
                         strlen(path) > 80 ? "..." : "");
                r = (cc == CURLE_WRITE_ERROR || cc == CURLE_ABORTED_BY_CALLBACK) && x.err
                            ? x.err
                            : curl_errno(cc);
                if (r == -EFBIG)
                        errf(ret_err, "kubernetes: %s %s: answer over the size cap", req->method,
                             shortpath);
                else if (r == -ETIMEDOUT)
                        errf(ret_err, "kubernetes: %s %s: timed out", req->method, shortpath);
                else if (r > -4096 && x.err == r) /* a sink's or tick's own: its message */
                        ;
                else
                        errf(ret_err, "kubernetes: %s: %s", shortpath,
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
        curl_easy_setopt(c, CURLOPT_ERRORBUFFER, NULL);
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, NULL);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, NULL);
        curl_easy_setopt(c, CURLOPT_XFERINFODATA, NULL);
        slist_free(hdrs);
        http_buf_release(&x.body);
        free(url);
        return r;
}
