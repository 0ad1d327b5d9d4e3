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

#include "body_out.h"
#include "execd.h"
#include "execd_scripts.h"
#include "core/log.h"
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
        if (body_put(d->req, data, len) < 0) {
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

/* stat one path (and, as an identity, check it opens for reading): 0 with
 * *ret_size, or -1 after replying */
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
        /* as an identity, the kernel may refuse the read: ask before the
         * headers go (a streamed answer cannot turn into a 403 later) */
        if (x->identity) {
                const char *can[] = { "sh", "-c", EXECD_SH_CAN_READ, "sh", path, NULL };

                exec_result_free(&res);
                if (execd_run(req, x, can, NULL, 0, 4096, &res) < 0)
                        return -1;
                if (res.exit_code != 0) {
                        execd_reply_fs_error(req, path, &res);
                        goto out;
                }
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

/* The headers of a 200/206 answer of len bytes from start of a size-byte
 * file (ranged: Content-Range), named after base, into hdr. */
static void dl_headers(char *hdr, size_t size, int64_t start, int64_t len, int64_t fsize,
                       bool ranged, const char *base)
{
        char name[256];
        size_t k = 0;
        int n = 0;

        n += snprintf(hdr + n, size - (size_t)n, "Content-Length: %lld\r\nAccept-Ranges: bytes\r\n",
                      (long long)len);
        if (ranged)
                n += snprintf(hdr + n, size - (size_t)n, "Content-Range: bytes %lld-%lld/%lld\r\n",
                              (long long)start, (long long)(start + len - 1), (long long)fsize);
        /* a name for the attachment: quotes and controls replaced */
        for (const char *p = base; *p && k < sizeof(name) - 1; p++)
                name[k++] = (*p == '"' || *p == '\\' || (unsigned char)*p < 0x20) ? '_' : *p;
        name[k] = '\0';
        snprintf(hdr + n, size - (size_t)n, "Content-Disposition: attachment; filename=\"%s\"\r\n",
                 name);
}

/* The Range header (may be NULL) against size: 0 with a range, 1 for the
 * whole file, or -1 after replying 416. */
static int dl_range(struct request *req, const char *range, int64_t size, int64_t *start,
                    int64_t *len)
{
        char hdr[128];
        int r = range ? range_parse(range, size, start, len) : 1;

        if (r == -ERANGE || r == -EINVAL) {
                snprintf(hdr, sizeof(hdr), "Content-Range: bytes */%lld", (long long)size);
                reply_error_hdr(req, API_RANGE_NOT_SATISFIABLE, hdr,
                                "range %.64s is not satisfiable for %lld bytes", range, (long long)size);
                return -1;
        }
        if (r == 1) {
                *start = 0;
                *len = size;
        }
        return r;
}

/* ---- the fast path: the provider reads the file itself (no command) ---- */

struct fast_read {
        char *buf;
        size_t len, cap, max;
        /* streaming: the size came first (data NULL), the headers went,
         * the bytes go straight to the client */
        struct request *req;
        const char *range, *base;
        bool streaming, broken;
};

/* Over max: -EOVERFLOW, which no provider returns, so the caller knows
 * to stream it through a command instead. */
static int fast_on_data(void *ud, const char *data, size_t n)
{
        struct fast_read *f = ud;

        if (!data) {
                /* the size before the bytes: a whole file is streamed with
                 * its Content-Length (a range is cut from the buffer) */
                if (!f->range && n > 0) {
                        char hdr[512];

                        dl_headers(hdr, sizeof(hdr), 0, (int64_t)n, (int64_t)n, false, f->base);
                        execd_reply_headers(f->req, 200, "application/octet-stream", hdr);
                        f->streaming = true;
                }
                return 0;
        }
        if (f->streaming) {
                if (body_put(f->req, data, n) < 0) {
                        f->broken = true;
                        return -EPIPE;
                }
                return 0;
        }

        if (n > f->max - f->len)
                return -EOVERFLOW;
        if (f->len + n > f->cap) {
                size_t cap = f->cap ? f->cap : 65536;
                char *b;

                while (cap < f->len + n)
                        cap *= 2;
                if (cap > f->max)
                        cap = f->max;
                b = realloc(f->buf, cap);
                if (!b)
                        return -ENOMEM;
                f->buf = b;
                f->cap = cap;
        }
        memcpy(f->buf + f->len, data, n);
        f->len += n;
        return 0;
}

/* Once streaming, the bytes are spliced from the agent's socket to the
 * client's connection (body_splice), never read into the handler. */
static ssize_t fast_on_fd(void *ud, int fd, size_t max)
{
        struct fast_read *f = ud;
        ssize_t n;

        if (!f->streaming || f->broken)
                return -EOPNOTSUPP;
        n = body_splice(f->req, fd, max);
        if (n == -EPIPE)
                f->broken = true;
        return n;
}

/* A failed fast read as an API error (the meaning of the script path's). */
static void fast_reply_error(struct request *req, const struct execd *x, const char *path, int r,
                             const char *err)
{
        switch (r) {
        case -ENOENT:
                reply_error(req, API_FILE_NOT_FOUND, "%s: no such file", path);
                break;
        case -EISDIR:
                reply_error(req, API_INVALID_REQUEST, "%s: %s", path,
                            strstr(err, "directory") ? "is a directory" : "not a regular file");
                break;
        case -EACCES:
                reply_error(req, API_PERMISSION_DENIED, "%s: permission denied", path);
                break;
        case -ENOMEM:
                reply_error(req, API_INTERNAL, "out of memory");
                break;
        default:
                execd_reply_provider(req, x, r, "download", err);
                break;
        }
}

/* Read the whole file through the provider (at most FILE_MAX_BYTES held),
 * then answer it or its range: the size, known only at the end, decides
 * the range and Content-Length. Returns 0 once answered, or -EOPNOTSUPP /
 * -EOVERFLOW (the sandbox cannot, the file is larger) for the script path. */
static int dl_fast(struct request *req, const struct execd *x, const char *path, const char *range,
                   const char *base)
{
        struct fast_read f = { .max = (size_t)req->w->cfg->file_max_bytes, .req = req,
                               .range = range, .base = base };
        struct file_read_cb cb = { .on_data = fast_on_data, .on_fd = fast_on_fd, .ud = &f };
        char err[PROVIDER_ERR_MAX] = "", hdr[512];
        int64_t start = 0, len = 0;
        int r;

        r = provider_read_file(req->w->provider, x->ref, path, 0, -1, &cb,
                               req->w->cfg->exec_timeout_ms, err);
        if (f.streaming) {
                /* answered: a failure now can only cut the body short */
                if (r < 0 && !f.broken)
                        log_err(execd_kv(req, x), "download of %s failed: %s (%s)", path, err,
                                strerror(-r));
                r = 0;
                goto out;
        }
        if (r == -EOPNOTSUPP || r == -EOVERFLOW)
                goto out;
        if (r < 0) {
                fast_reply_error(req, x, path, r, err);
                r = 0;
                goto out;
        }
        r = dl_range(req, range, (int64_t)f.len, &start, &len);
        if (r >= 0) {
                dl_headers(hdr, sizeof(hdr), start, len, (int64_t)f.len, r == 0, base);
                execd_reply_headers(req, r == 0 ? 206 : 200, "application/octet-stream", hdr);
                if (len > 0)
                        (void)body_put(req, f.buf + start, (size_t)len);
        }
        r = 0;
out:
        free(f.buf);
        return r;
}

/* ---- the script path ---- */

/* Lines offset.. (1-based), limit of them (0: all): EXECD_SH_LINES. */
static void dl_lines(struct request *req, const struct execd *x, const char *path, int64_t offset,
                     int64_t limit)
{
        char start_s[32], len_s[32];
        const char *argv[] = { "sh", "-c", EXECD_SH_LINES, "sh", path, start_s, len_s, NULL };
        struct exec_result res = { 0 };

        snprintf(start_s, sizeof(start_s), "%lld", (long long)offset);
        snprintf(len_s, sizeof(len_s), "%lld", (long long)limit);
        if (execd_run(req, x, argv, NULL, 0, (size_t)req->w->cfg->file_max_bytes, &res) < 0)
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
        (void)body_put(req, res.out, res.out_len);
out:
        exec_result_free(&res);
}

/* Bytes len from start (whole: the file to its end) by EXECD_SH_READ,
 * streamed where the provider streams, else buffered. hdr: the answer's
 * extra headers. */
static void dl_script(struct request *req, const struct execd *x, const char *path, int64_t start,
                      int64_t len, bool whole, int status, const char *hdr)
{
        char start_s[32], len_s[32], err[PROVIDER_ERR_MAX] = "";
        const char *argv[] = { "sh", "-c", EXECD_SH_READ, "sh", path, start_s, len_s, NULL };
        struct exec_spec spec = { .argv = argv, .user = x->user, .cwd = "/",
                                  .timeout_ms = req->w->cfg->exec_max_timeout_ms,
                                  .max_output = (size_t)req->w->cfg->file_max_bytes };
        struct exec_result res = { 0 };
        struct dl d = { .req = req, .left = len };
        struct exec_stream_cb cb = { .on_output = dl_output, .ud = &d };
        int r;

        snprintf(start_s, sizeof(start_s), "%lld", (long long)start);
        snprintf(len_s, sizeof(len_s), "%lld", whole ? -1LL : (long long)len);
        if (!provider_can_stream(req->w->provider)) {
                /* buffered: the exit code is known before the headers go */
                r = provider_exec(req->w->provider, x->ref, &spec, &res, err);
                if (r == 0 && res.exit_code == 0 && !res.out_truncated) {
                        execd_reply_headers(req, status, "application/octet-stream", hdr);
                        dl_output(&d, 1, res.out, res.out_len);
                } else if (r == 0) {
                        execd_reply_fs_error(req, path, &res);
                } else {
                        execd_reply_provider(req, x, r, "download", err);
                }
                goto out;
        }
        /* the headers go first: the bytes are streamed as they come */
        execd_reply_headers(req, status, "application/octet-stream", hdr);
        r = provider_exec_stream(req->w->provider, x->ref, &spec, &cb, &res, err);
        if (r < 0 && !d.broken)
                log_err(execd_kv(req, x), "download of %s failed: %s (%s)", path, err, strerror(-r));
        else if (r == 0 && (res.exit_code != 0 || d.left > 0))
                log_warn(execd_kv(req, x), "download of %s ended short (%lld bytes missing): %s", path,
                         (long long)d.left, d.err);
out:
        exec_result_free(&res);
}

void h_execd_download(struct request *req)
{
        const char *range = FCGX_GetParam("HTTP_RANGE", req->fcgx->envp), *vals[1], *base;
        char *qbuf = NULL, path[EXECD_PATH_MAX], hdr[EXECD_PATH_MAX + 256];
        int64_t size = 0, start = 0, len = -1, offset = 0, limit = 0;
        bool lines = false;
        struct execd x;
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
        base = strrchr(path, '/');
        base = base && base[1] ? base + 1 : "file";
        /* bytes, not lines: the provider reads the file itself if it can */
        if (!lines && !x.identity && provider_has_files(req->w->provider) && dl_fast(req, &x, path, range, base) == 0)
                goto out;
        if (dl_stat(req, &x, path, &size) < 0)
                goto out;
        if (lines) {
                dl_lines(req, &x, path, ro == 0 ? offset : 1, rl == 0 ? limit : 0);
                goto out;
        }
        if ((r = dl_range(req, range, size, &start, &len)) < 0)
                goto out;
        dl_headers(hdr, sizeof(hdr), start, len, size, r == 0, base);
        dl_script(req, &x, path, start, len, r == 1, r == 0 ? 206 : 200, hdr);
out:
        free(qbuf);
}
