/* h_execd_download: GET /files/download of the execd contract
 * (execd-api.yaml): a whole file, a byte range (Range: bytes=a-b, a-, -n:
 * 206 with Content-Range, 416 past the end), or lines (offset/limit, as
 * text/plain).
 *
 * The file is stat'ed first (size, not a directory), then read by a
 * program in the sandbox (EXECD_SH_READ / EXECD_SH_LINES). On a backend that
 * streams, the headers go first and the bytes are passed from the exec
 * straight to the client (no copy held, no size cap); on one that does not
 * (provider_can_stream), the read is buffered (at most FILE_MAX_BYTES) and
 * its exit code known before the headers go. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "execd.h"
#include "execd_scripts.h"
#include "log.h"
#include "routes.h"

struct dl {
        struct request *req;
        int64_t left;      /* bytes still to send */
        bool broken;
        char err[512];
        size_t err_len;
};

static int dl_output(void *ud, int stream, const char *data, size_t len)
{
        struct dl *d = ud;

        if (stream == 2) {
                size_t n = len < sizeof(d->err) - 1 - d->err_len ? len : sizeof(d->err) - 1 - d->err_len;
                memcpy(d->err + d->err_len, data, n);
                d->err_len += n;
                d->err[d->err_len] = '\0';
                return 0;
        }
        if ((int64_t)len > d->left)
                len = (size_t)d->left;
        if (len && FCGX_PutStr(data, (int)len, d->req->fcgx->out) < 0) {
                d->broken = true;
                return -EPIPE;
        }
        d->left -= (int64_t)len;
        return 0;
}

/* "bytes=a-b" | "bytes=a-" | "bytes=-n" against size. Returns 0 with the
 * range, 1 for a header to ignore (several ranges, other units), -ERANGE
 * when unsatisfiable, -EINVAL when malformed. */
static int range_parse(const char *h, int64_t size, int64_t *ret_start, int64_t *ret_len)
{
        long long a = -1, b = -1;
        char *end;

        if (strncasecmp(h, "bytes=", 6) != 0 || strchr(h, ','))
                return 1;
        h += 6;
        if (*h == '-') {
                b = strtoll(h + 1, &end, 10);
                if (end == h + 1 || *end || b <= 0)
                        return -EINVAL;
                if (size == 0)
                        return -ERANGE;
                *ret_start = b >= size ? 0 : size - b;
                *ret_len = size - *ret_start;
                return 0;
        }
        a = strtoll(h, &end, 10);
        if (end == h || *end != '-' || a < 0)
                return -EINVAL;
        h = end + 1;
        if (*h) {
                b = strtoll(h, &end, 10);
                if (*end || b < a)
                        return -EINVAL;
        }
        if (a >= size)
                return -ERANGE;
        if (b < 0 || b >= size)
                b = size - 1;
        *ret_start = a;
        *ret_len = b - a + 1;
        return 0;
}

/* stat one path: 0 with *ret_size, or -1 after replying */
static int dl_stat(struct request *req, const struct execd *x, const char *path, int64_t *ret_size)
{
        const char *argv[] = { "sh", "-c", EXECD_SH_INFO, "sh", path, NULL };
        struct exec_result res = { 0 };
        unsigned int mode = 0;
        long long size = 0;
        int r = -1;

        if (execd_run(req, x, argv, NULL, 0, 4096, &res) < 0)
                return -1;
        if (res.exit_code != 0 || !res.out || res.out[0] == '-') {
                reply_error(req, API_FILE_NOT_FOUND, "%s: no such file", path);
                goto out;
        }
        if (sscanf(res.out, "%x|%lld|", &mode, &size) != 2) {
                reply_error(req, API_SANDBOX_FAILED, "%s: cannot stat it", path);
                goto out;
        }
        if ((mode & 0170000) == 0040000) {
                reply_error(req, API_INVALID_REQUEST, "%s: is a directory", path);
                goto out;
        }
        *ret_size = size;
        r = 0;
out:
        exec_result_free(&res);
        return r;
}

static int query_int(const struct request *req, const char *name, int64_t *v)
{
        char buf[32], *end;
        int r = request_query_param(req, name, buf, sizeof(buf));

        if (r < 0)
                return r;
        *v = strtoll(buf, &end, 10);
        return !buf[0] || *end || *v < 1 ? -EINVAL : 0;
}

void h_execd_download(struct request *req)
{
        const char *range = FCGX_GetParam("HTTP_RANGE", req->fcgx->envp), *vals[1], *base;
        char *qbuf = NULL, path[EXECD_PATH_MAX], start_s[32], len_s[32], hdr[EXECD_PATH_MAX + 256];
        char err[PROVIDER_ERR_MAX] = "";
        int64_t size = 0, start = 0, len = -1, offset = 0, limit = 0;
        bool lines = false;
        struct exec_result res = { 0 };
        struct execd x;
        struct dl d = { .req = req };
        int r, ro, rl;

        if (execd_open(req, &x, true) < 0)
                return;
        qbuf = malloc(EXECD_QUERY_BUF);
        if (!qbuf) {
                reply_error(req, API_INTERNAL, "out of memory");
                return;
        }
        r = execd_query_values(req, "path", vals, 1, qbuf, EXECD_QUERY_BUF);
        if (r != 1) {
                reply_error(req, API_INVALID_REQUEST, "one path query parameter is required");
                goto out;
        }
        if ((r = execd_path_normalize(vals[0], path, sizeof(path))) < 0) {
                reply_error(req, API_INVALID_REQUEST, "path: %s", execd_path_strerror(r));
                goto out;
        }
        ro = query_int(req, "offset", &offset);
        rl = query_int(req, "limit", &limit);
        if (ro == -EINVAL || rl == -EINVAL || ro == -E2BIG || rl == -E2BIG) {
                reply_error(req, API_INVALID_REQUEST, "offset and limit must be integers from 1");
                goto out;
        }
        lines = ro == 0 || rl == 0;
        if (lines && range) {
                reply_error(req, API_INVALID_REQUEST, "offset/limit and Range exclude each other");
                goto out;
        }
        if (dl_stat(req, &x, path, &size) < 0)
                goto out;
        base = strrchr(path, '/');
        base = base && base[1] ? base + 1 : "file";
        if (lines) {
                const char *argv[] = { "sh", "-c", EXECD_SH_LINES, "sh", path, start_s, len_s, NULL };
                snprintf(start_s, sizeof(start_s), "%lld", (long long)(ro == 0 ? offset : 1));
                snprintf(len_s, sizeof(len_s), "%lld", (long long)(rl == 0 ? limit : 0));
                if (execd_run(req, &x, argv, NULL, 0, (size_t)req->w->cfg->file_max_bytes, &res) < 0)
                        goto out;
                if (res.exit_code != 0) {
                        execd_reply_fs_error(req, path, &res);
                        goto out;
                }
                if (res.out_truncated) {
                        reply_error(req, API_FILE_TOO_LARGE, "the lines asked for exceed %d bytes",
                                    req->w->cfg->file_max_bytes);
                        goto out;
                }
                execd_reply_headers(req, 200, "text/plain; charset=utf-8", NULL);
                FCGX_PutStr(res.out, (int)res.out_len, req->fcgx->out);
                goto out;
        }
        r = range ? range_parse(range, size, &start, &len) : 1;
        if (r == -ERANGE || r == -EINVAL) {
                snprintf(hdr, sizeof(hdr), "Content-Range: bytes */%lld", (long long)size);
                reply_error_hdr(req, API_RANGE_NOT_SATISFIABLE, hdr,
                                "range %.64s is not satisfiable for %lld bytes", range, (long long)size);
                goto out;
        }
        if (r == 1) {
                start = 0;
                len = size;
        }
        snprintf(start_s, sizeof(start_s), "%lld", (long long)start);
        snprintf(len_s, sizeof(len_s), "%lld", r == 1 ? -1LL : (long long)len);
        {
                const char *argv[] = { "sh", "-c", EXECD_SH_READ, "sh", path, start_s, len_s, NULL };
                struct exec_spec spec = { .argv = argv, .user = "root", .cwd = "/",
                                          .timeout_ms = req->w->cfg->exec_max_timeout_ms,
                                          .max_output = (size_t)req->w->cfg->file_max_bytes };
                struct exec_stream_cb cb = { .on_output = dl_output, .ud = &d };
                int n = 0;

                /* the headers go first: the bytes are streamed as they come */
                n += snprintf(hdr + n, sizeof(hdr) - (size_t)n, "Content-Length: %lld\r\nAccept-Ranges: bytes\r\n",
                              (long long)len);
                if (r == 0)
                        n += snprintf(hdr + n, sizeof(hdr) - (size_t)n, "Content-Range: bytes %lld-%lld/%lld\r\n",
                                      (long long)start, (long long)(start + len - 1), (long long)size);
                {
                        /* a name for the attachment: quotes and controls replaced */
                        char name[256];
                        size_t k = 0;
                        for (const char *p = base; *p && k < sizeof(name) - 1; p++)
                                name[k++] = (*p == '"' || *p == '\\' || (unsigned char)*p < 0x20) ? '_' : *p;
                        name[k] = '\0';
                        snprintf(hdr + n, sizeof(hdr) - (size_t)n,
                                 "Content-Disposition: attachment; filename=\"%s\"\r\n", name);
                }
                d.left = len;
                if (!provider_can_stream(req->w->provider)) {
                        /* buffered: the exit code is known before the headers go */
                        r = provider_exec(req->w->provider, x.ref, &spec, &res, err);
                        if (r == 0 && res.exit_code == 0 && !res.out_truncated) {
                                execd_reply_headers(req, r == 0 && range ? 206 : 200,
                                                    "application/octet-stream", hdr);
                                dl_output(&d, 1, res.out, res.out_len);
                        } else if (r == 0) {
                                execd_reply_fs_error(req, path, &res);
                        } else {
                                execd_reply_provider(req, &x, r, "download", err);
                        }
                        goto out;
                }
                execd_reply_headers(req, range && r == 0 ? 206 : 200, "application/octet-stream", hdr);
                r = provider_exec_stream(req->w->provider, x.ref, &spec, &cb, &res, err);
                if (r < 0 && !d.broken)
                        log_err(execd_kv(req, &x), "download of %s failed: %s (%s)", path, err, strerror(-r));
                else if (r == 0 && (res.exit_code != 0 || d.left > 0))
                        log_warn(execd_kv(req, &x), "download of %s ended short (%lld bytes missing): %s",
                                 path, (long long)d.left, d.err);
        }
out:
        exec_result_free(&res);
        free(qbuf);
}
