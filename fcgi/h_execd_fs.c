/* h_execd_fs: the filesystem operations of the execd contract that change
 * or walk several files (execd-api.yaml): POST /files/mv, POST
 * /files/permissions, GET /files/search, POST /files/replace, GET
 * /directories/list. Upload, download, info and removal are in
 * h_execd_files.c and h_execd_download.c.
 *
 * Each is a program of execd_scripts.h run as root in the sandbox (the
 * caller owns it, execd.h), or as the uid/gid of an identity route, paths passed as arguments and normalised with
 * execd_path_normalize first. Multi-item bodies are checked whole before
 * anything runs, then applied in order in one exec; a failure stops there
 * (what came before it stays done, as with execd) and names its path.
 *
 * Replace is done here, not in the sandbox: the file is read (at most
 * FILE_MAX_BYTES), every occurrence of `old` replaced by `new` byte for
 * byte (memmem, so any byte and any line break works), and written back
 * into the same file (mode and owner kept) only if something changed and
 * the file's size and mtime are still those it was read with.
 *
 * Bounds: EXECD_FS_MAX_ITEMS items per body, EXECD_FS_MAX_ENTRIES entries
 * per search or listing (the answer then carries EXECD_FS_TRUNCATED_HDR),
 * EXECD_FS_MAX_DEPTH levels of listing. */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "execd.h"
#include "execd_scripts.h"
#include "core/json_input.h"
#include "core/log.h"
#include "routes.h"
#include "core/timeutil.h"

#define EXECD_FS_MAX_ITEMS 64
#define EXECD_FS_MAX_ENTRIES 10000
#define EXECD_FS_MAX_DEPTH 4096
#define EXECD_FS_LIST_OUTPUT (16 * 1024 * 1024) /* bytes of stat lines */
#define EXECD_FS_TRUNCATED_HDR "X-Execd-Truncated"
#define EXECD_FS_TRIM_ENTRIES 1000 /* a walk this large gives its memory back */

/* ---- shared ---- */

static bool json_str_clean(struct json_object *v)
{
        return v && json_object_is_type(v, json_type_string) &&
               strlen(json_object_get_string(v)) == (size_t)json_object_get_string_len(v);
}

/* A program of this file that exited non-zero, about path. */
static void fs_reply_error(struct request *req, const char *path, const struct exec_result *res)
{
        const char *e = res->err ? res->err : "";

        if (res->exit_code == EXECD_X_EXISTS)
                reply_error(req, API_CONFLICT, "%s: already exists", path);
        else if (res->exit_code == EXECD_X_SYMLINK)
                reply_error(req, API_INVALID_REQUEST,
                            "%s: is a symbolic link, which is not followed; pass the directory itself", path);
        else if (res->exit_code == EXECD_X_NOT_FILE)
                reply_error(req, API_INVALID_REQUEST, "%s: not a regular file", path);
        else if (strstr(e, "unknown user") || strstr(e, "unknown group"))
                reply_error(req, API_INVALID_REQUEST, "%s: %.200s", path, e); /* busybox's words */
        else
                execd_reply_fs_error(req, path, res);
}

/* The index a multi-item program printed before failing, or 0. */
static int failed_item(const struct exec_result *res, int n)
{
        const char *s = res->out ? res->out : "";
        int i = atoi(s);

        return i >= 0 && i < n ? i : 0;
}

/* The request body as JSON of type want (object or array), MAX_BODY
 * bounded. Returns 0 with *ret owned, or -1 after replying. */
static int fs_json_body(struct request *req, enum json_type want, struct json_object **ret)
{
        const char *cl = FCGX_GetParam("CONTENT_LENGTH", req->fcgx->envp);
        const char *ct = FCGX_GetParam("CONTENT_TYPE", req->fcgx->envp);
        struct json_object *wrap = NULL, *v = NULL;
        char err[256], *buf = NULL, *end;
        unsigned long long len;
        size_t got = 0;
        int r = -1;

        *ret = NULL;
        if (want == json_type_object)
                return request_json_body(req, ret);
        /* an array: read here, parsed by the same strict parser as
         * objects, wrapped as {"items": ...} */
        while (ct && *ct == ' ')
                ct++;
        if (!ct || strncasecmp(ct, "application/json", 16) != 0 || (ct[16] && ct[16] != ';' && ct[16] != ' ')) {
                reply_error(req, API_UNSUPPORTED_MEDIA_TYPE, "Content-Type must be application/json");
                return -1;
        }
        errno = 0;
        len = strtoull(cl ? cl : "", &end, 10);
        if (!cl || !*cl || *end || errno) {
                reply_error(req, API_INVALID_JSON, "a JSON body with a Content-Length is required");
                return -1;
        }
        if (len > req->w->max_body) {
                reply_error(req, API_PAYLOAD_TOO_LARGE, "request body exceeds %zu bytes", req->w->max_body);
                return -1;
        }
        buf = malloc(len + 16);
        if (!buf) {
                reply_error(req, API_INTERNAL, "out of memory");
                return -1;
        }
        memcpy(buf, "{\"items\":", 9);
        while (got < len) {
                ssize_t n = request_body_read(req, buf + 9 + got, len - got);
                if (n < 0)
                        goto out;
                if (n == 0)
                        break;
                got += (size_t)n;
        }
        if (got != len) {
                reply_error(req, API_INVALID_JSON, "request body is shorter than its Content-Length");
                goto out;
        }
        memcpy(buf + 9 + got, "\n}", 3);
        if (json_input_parse_object(buf, 9 + got + 2, JSON_INPUT_MAX_DEPTH + 1, &wrap, err, sizeof(err)) < 0) {
                reply_error(req, API_INVALID_JSON, "request body: %s", err);
                goto out;
        }
        if (!json_object_object_get_ex(wrap, "items", &v) || !json_object_is_type(v, json_type_array)) {
                reply_error(req, API_INVALID_REQUEST, "the body must be a JSON array");
                goto out;
        }
        *ret = json_object_get(v);
        r = 0;
out:
        json_put(wrap);
        free(buf);
        return r;
}

/* A client path normalised into out, or -1 after replying. */
static int fs_path(struct request *req, const char *what, struct json_object *v, const char *s,
                   char *out, size_t size)
{
        int r;

        if (v) {
                if (!json_str_clean(v)) {
                        reply_error(req, API_INVALID_REQUEST, "%s must be a path (a string)", what);
                        return -1;
                }
                s = json_object_get_string(v);
        }
        r = execd_path_normalize(s, out, size);
        if (r < 0) {
                reply_error(req, API_INVALID_REQUEST, "%s: %s", what, execd_path_strerror(r));
                return -1;
        }
        return 0;
}

/* ---- POST /files/mv: [RenameFileItem] ---- */

void h_execd_files_mv(struct request *req)
{
        char (*paths)[EXECD_PATH_MAX] = request_scratch(req, 2 * EXECD_FS_MAX_ITEMS * sizeof(*paths));
        const char *argv[2 * EXECD_FS_MAX_ITEMS + 5] = { "sh", "-c", EXECD_SH_MV, "sh" };
        struct json_object *body = NULL;
        struct exec_result res = { 0 };
        struct execd x;
        size_t n = 0;

        if (!paths)
                return;
        if (execd_open(req, &x, true) < 0 || fs_json_body(req, json_type_array, &body) < 0)
                goto out;
        n = json_object_array_length(body);
        if (n == 0 || n > EXECD_FS_MAX_ITEMS) {
                reply_error(req, API_INVALID_REQUEST, "the body is an array of 1 to %d {src, dest}",
                            EXECD_FS_MAX_ITEMS);
                goto out;
        }
        for (size_t i = 0; i < n; i++) {
                struct json_object *it = json_object_array_get_idx(body, i), *s = NULL, *d = NULL;
                char *src = paths[2 * i], *dst = paths[2 * i + 1];
                size_t sl;

                if (!json_object_is_type(it, json_type_object) || !json_object_object_get_ex(it, "src", &s) ||
                    !json_object_object_get_ex(it, "dest", &d)) {
                        reply_error(req, API_INVALID_REQUEST, "item %zu: src and dest are required", i + 1);
                        goto out;
                }
                if (fs_path(req, "src", s, NULL, src, EXECD_PATH_MAX) < 0 ||
                    fs_path(req, "dest", d, NULL, dst, EXECD_PATH_MAX) < 0)
                        goto out;
                sl = strlen(src);
                if (strcmp(src, "/") == 0 || (strncmp(dst, src, sl) == 0 && (dst[sl] == '/' || !dst[sl]))) {
                        reply_error(req, API_INVALID_REQUEST, "%s cannot be moved to %s (itself or inside it)",
                                    src, dst);
                        goto out;
                }
                argv[4 + 2 * i] = src;
                argv[5 + 2 * i] = dst;
        }
        argv[4 + 2 * n] = NULL;
        if (execd_run(req, &x, argv, NULL, 0, 4096, &res) < 0)
                goto out;
        if (res.exit_code != 0) {
                int i = failed_item(&res, (int)n);
                fs_reply_error(req, paths[2 * i + (res.exit_code == EXECD_X_EXISTS)], &res);
                goto out;
        }
        log_info(execd_kv(req, &x), "moved %zu path(s)", n);
        reply_empty(req, 200);
out:
        exec_result_free(&res);
        json_put(body);
}

/* ---- POST /files/permissions: {path: Permission} ---- */

void h_execd_files_chmod(struct request *req)
{
        struct {
                char paths[EXECD_FS_MAX_ITEMS][EXECD_PATH_MAX];
                char modes[EXECD_FS_MAX_ITEMS][8], owners[EXECD_FS_MAX_ITEMS][80];
        } *s = request_scratch(req, sizeof(*s));
        const char *argv[3 * EXECD_FS_MAX_ITEMS + 5] = { "sh", "-c", EXECD_SH_CHMOD, "sh" };
        struct json_object *body = NULL;
        struct exec_result res = { 0 };
        struct execd x;
        int n = 0;

        if (!s)
                return;
        char (*paths)[EXECD_PATH_MAX] = s->paths, (*modes)[8] = s->modes, (*owners)[80] = s->owners;
        if (execd_open(req, &x, true) < 0 || fs_json_body(req, json_type_object, &body) < 0)
                goto out;
        if (json_object_object_length(body) == 0 || json_object_object_length(body) > EXECD_FS_MAX_ITEMS) {
                reply_error(req, API_INVALID_REQUEST, "the body maps 1 to %d paths to permissions",
                            EXECD_FS_MAX_ITEMS);
                goto out;
        }
        json_object_object_foreach(body, key, perm) {
                struct json_object *mv = NULL;

                if (fs_path(req, "each key", NULL, key, paths[n], EXECD_PATH_MAX) < 0)
                        goto out;
                if (!json_object_is_type(perm, json_type_object)) {
                        reply_error(req, API_INVALID_REQUEST, "%s: the value must be a Permission object",
                                    paths[n]);
                        goto out;
                }
                json_object_object_get_ex(perm, "mode", &mv);
                /* the spec's default is 755; 0 leaves the mode alone, as execd does */
                if (execd_mode_str(mv, "755", modes[n], sizeof(modes[n])) < 0 ||
                    execd_owner_str(perm, owners[n], sizeof(owners[n])) < 0) {
                        reply_error(req, API_INVALID_REQUEST,
                                    "%s: mode must be octal digits (e.g. 755), owner and group names",
                                    paths[n]);
                        goto out;
                }
                if (strcmp(modes[n], "0") == 0)
                        modes[n][0] = '\0';
                argv[4 + 3 * n] = paths[n];
                argv[5 + 3 * n] = modes[n];
                argv[6 + 3 * n] = owners[n];
                n++;
        }
        argv[4 + 3 * n] = NULL;
        if (execd_run(req, &x, argv, NULL, 0, 4096, &res) < 0)
                goto out;
        if (res.exit_code != 0) {
                fs_reply_error(req, paths[failed_item(&res, n)], &res);
                goto out;
        }
        log_info(execd_kv(req, &x), "permissions set on %d path(s)", n);
        reply_empty(req, 200);
out:
        exec_result_free(&res);
        json_put(body);
}

/* ---- GET /files/search, GET /directories/list ---- */

static void add_iso(struct json_object *o, const char *name, long long secs)
{
        char iso[40];

        if (timeutil_format_iso(secs * 1000, iso, sizeof(iso)) == 0) {
                char *dot = strchr(iso, '.'); /* RFC 3339 without ms, as execd */
                if (dot)
                        memcpy(dot, "Z", 2);
                json_object_object_add(o, name, json_object_new_string(iso));
        }
}

static const char *file_type(unsigned long mode)
{
        switch (mode & 0170000) {
        case 0100000: return "file";
        case 0040000: return "directory";
        case 0120000: return "symlink";
        default: return "other";
        }
}

/* One line "hexmode|size|mtime|btime|user|group|perm|./REL" of root as a
 * FileInfo, or NULL if it is not one. btime may be a letter (busybox). */
static struct json_object *stat_line(const char *root, char *line)
{
        char *f[8], *p = line, *end;
        char path[EXECD_PATH_MAX + 8];
        struct json_object *o;
        unsigned long mode;
        long long mtime, btime;
        size_t rl = strlen(root);

        for (int i = 0; i < 7; i++) {
                f[i] = p;
                p = strchr(p, '|');
                if (!p)
                        return NULL;
                *p++ = '\0';
        }
        f[7] = p;
        if (strncmp(f[7], "./", 2) != 0 || !f[7][2])
                return NULL;
        mode = strtoul(f[0], &end, 16);
        if (*end)
                return NULL;
        mtime = strtoll(f[2], NULL, 10);
        btime = strtoll(f[3], &end, 10);
        if (*end || btime <= 0)
                btime = mtime;
        snprintf(path, sizeof(path), "%s/%s", rl == 1 ? "" : root, f[7] + 2);
        o = json_object_new_object();
        if (!o)
                return NULL;
        json_object_object_add(o, "path", json_object_new_string(path));
        json_object_object_add(o, "type", json_object_new_string(file_type(mode)));
        json_object_object_add(o, "size", json_object_new_int64(strtoll(f[1], NULL, 10)));
        add_iso(o, "modified_at", mtime);
        add_iso(o, "created_at", btime);
        json_object_object_add(o, "owner", json_object_new_string(f[4]));
        json_object_object_add(o, "group", json_object_new_string(f[5]));
        json_object_object_add(o, "mode", json_object_new_int(atoi(f[6])));
        return o;
}

/* Lexical by name within each directory, a directory's entries right
 * after it (execd's walk): paths compared with '/' below every byte. */
static int path_cmp(const void *a, const void *b)
{
        const unsigned char *x = (const unsigned char *)json_get_str(*(struct json_object *const *)a, "path");
        const unsigned char *y = (const unsigned char *)json_get_str(*(struct json_object *const *)b, "path");

        for (; *x && *x == *y; x++, y++)
                ;
        return (*x == '/' ? 0 : *x ? *x : -1) - (*y == '/' ? 0 : *y ? *y : -1);
}

/* Run a SEARCH/LIST program on root and answer its lines as FileInfos. */
static void fs_walk(struct request *req, const struct execd *x, const char *const *argv, const char *root,
                    const char *what)
{
        struct exec_result res = { 0 };
        struct json_object *arr = NULL;
        char *line, *nl, hdr[64] = "";
        size_t n = 0;
        bool cut;

        if (execd_run(req, x, argv, NULL, 0, EXECD_FS_LIST_OUTPUT, &res) < 0)
                goto out;
        if (res.exit_code != 0) {
                fs_reply_error(req, root, &res);
                goto out;
        }
        arr = json_object_new_array();
        if (!arr) {
                reply_error(req, API_INTERNAL, "out of memory");
                goto out;
        }
        cut = res.out_truncated;
        for (line = res.out ? res.out : ""; (nl = strchr(line, '\n')); line = nl + 1) {
                struct json_object *o;

                *nl = '\0';
                if (n == EXECD_FS_MAX_ENTRIES) {
                        cut = true; /* the program printed one more than that */
                        break;
                }
                o = stat_line(root, line);
                if (o) {
                        json_object_array_add(arr, o);
                        n++;
                }
        }
        json_object_array_sort(arr, path_cmp);
        if (cut) {
                log_info(execd_kv(req, x), "%s %s: cut at %zu entries", what, root, n);
                snprintf(hdr, sizeof(hdr), EXECD_FS_TRUNCATED_HDR ": %zu", n);
        }
        reply_json_hdr(req, 200, cut ? hdr : NULL, arr);
out:
        json_put(arr);
        exec_result_free(&res);
        /* A walk of thousands of entries allocates tens of MB in this thread's arena (the
         * output, one JSON object per entry, their text); freed, glibc keeps most of it,
         * and 32 threads of it added up to hundreds of MB kept for good. Give it back. */
        if (n >= EXECD_FS_TRIM_ENTRIES)
                (void)malloc_trim(0);
}

/* The single value of query parameter name (percent-decoded) into out:
 * 1, 0 when absent, or -1 after replying. */
static int query_one(struct request *req, const char *name, char *out, size_t size)
{
        const char *vals[2];
        char *qbuf = malloc(EXECD_QUERY_BUF);
        int n;

        if (!qbuf) {
                reply_error(req, API_INTERNAL, "out of memory");
                return -1;
        }
        n = execd_query_values(req, name, vals, 2, qbuf, EXECD_QUERY_BUF);
        if (n < 0 || n > 1 || (n == 1 && strlen(vals[0]) >= size)) {
                reply_error(req, API_INVALID_REQUEST, "bad %s parameter (one value, at most %zu bytes)", name,
                            size - 1);
                n = -1;
        } else if (n == 1) {
                memcpy(out, vals[0], strlen(vals[0]) + 1);
        }
        free(qbuf);
        return n;
}

/* The path query parameter, normalised; -1 after replying. */
static int query_path(struct request *req, char *path)
{
        char raw[EXECD_PATH_MAX];
        int n = query_one(req, "path", raw, sizeof(raw));

        if (n == 0) {
                reply_error(req, API_INVALID_REQUEST, "a path query parameter is required");
                return -1;
        }
        if (n < 0)
                return -1;
        return fs_path(req, "path", NULL, raw, path, EXECD_PATH_MAX);
}

void h_execd_files_search(struct request *req)
{
        char path[EXECD_PATH_MAX], pattern[1024] = "", max[16];
        struct execd x;

        if (execd_open(req, &x, true) < 0 || query_path(req, path) < 0 ||
            query_one(req, "pattern", pattern, sizeof(pattern)) < 0)
                return;
        if (!pattern[0])
                snprintf(pattern, sizeof(pattern), "**"); /* the spec's default */
        snprintf(max, sizeof(max), "%d", EXECD_FS_MAX_ENTRIES + 1);
        const char *argv[] = { "sh", "-c", EXECD_SH_SEARCH, "sh", path, pattern, max, NULL };
        fs_walk(req, &x, argv, path, "search");
}

void h_execd_dirs_list(struct request *req)
{
        char path[EXECD_PATH_MAX], depth[16] = "1", max[16], *end;
        struct execd x;
        long d;

        if (execd_open(req, &x, true) < 0 || query_path(req, path) < 0 ||
            query_one(req, "depth", depth, sizeof(depth)) < 0)
                return;
        errno = 0;
        d = strtol(depth, &end, 10);
        if (!depth[0] || *end || errno || d < 0) {
                reply_error(req, API_INVALID_REQUEST, "depth must be an integer from 0 (1: the entries only)");
                return;
        }
        snprintf(depth, sizeof(depth), "%ld", d < EXECD_FS_MAX_DEPTH ? d : EXECD_FS_MAX_DEPTH);
        snprintf(max, sizeof(max), "%d", EXECD_FS_MAX_ENTRIES + 1);
        const char *argv[] = { "sh", "-c", EXECD_SH_LIST, "sh", path, depth, max, NULL };
        fs_walk(req, &x, argv, path, "list");
}

/* ---- POST /files/replace: {path: {old, new}} ---- */

/* The next old in [p, end), or NULL: memmem over windows of
 * REPLACE_WINDOW bytes (overlapping by olen - 1), so that each call looks at
 * a bounded range. AddressSanitizer's memmem checks the whole haystack on
 * every call, which made a file of many matches quadratic under it. */
#define REPLACE_WINDOW 4096
static const char *find_next(const char *p, const char *end, const char *old, size_t olen)
{
        while ((size_t)(end - p) >= olen) {
                size_t win = (size_t)(end - p);
                const char *m;

                if (win > REPLACE_WINDOW + olen - 1)
                        win = REPLACE_WINDOW + olen - 1;
                m = memmem(p, win, old, olen);
                if (m)
                        return m;
                p += win - olen + 1;
        }
        return NULL;
}

/* in with every old replaced by new, into *ret (malloc'd, *ret_len);
 * the count, or -ENOMEM / -EFBIG (more than max bytes). */
static long replace_all(const char *in, size_t len, const char *old, size_t olen, const char *new,
                        size_t nlen, size_t max, char **ret, size_t *ret_len)
{
        const char *p = in, *end = in + len, *m;
        size_t cap = len + 1, o = 0;
        char *out = malloc(cap);
        long count = 0;

        if (!out)
                return -ENOMEM;
        while ((m = find_next(p, end, old, olen))) {
                size_t pre = (size_t)(m - p);

                if (o + pre + nlen > max) {
                        free(out);
                        return -EFBIG;
                }
                if (o + pre + nlen + (size_t)(end - m) >= cap) {
                        char *b;
                        cap = (o + pre + nlen + (size_t)(end - m)) * 2;
                        b = realloc(out, cap);
                        if (!b) {
                                free(out);
                                return -ENOMEM;
                        }
                        out = b;
                }
                memcpy(out + o, p, pre);
                memcpy(out + o + pre, new, nlen);
                o += pre + nlen;
                p = m + olen;
                count++;
        }
        if (o + (size_t)(end - p) > max) {
                free(out);
                return -EFBIG;
        }
        memcpy(out + o, p, (size_t)(end - p));
        *ret = out;
        *ret_len = o + (size_t)(end - p);
        return count;
}

/* Replace in one file; its count, or -1 after replying. */
static long replace_one(struct request *req, const struct execd *x, const char *path, struct json_object *old,
                        struct json_object *new)
{
        size_t max = (size_t)req->w->cfg->file_max_bytes, olen, nlen, size, hl, outlen = 0;
        struct exec_result res = { 0 };
        char maxs[24], sizes[24] = "", mtimes[24] = "", *nl, *out = NULL;
        long count = -1, c;

        snprintf(maxs, sizeof(maxs), "%zu", max);
        const char *rargv[] = { "sh", "-c", EXECD_SH_REPLACE_READ, "sh", path, maxs, NULL };
        if (execd_run(req, x, rargv, NULL, 0, max + 64, &res) < 0)
                goto out;
        if (res.exit_code == EXECD_X_TOO_BIG) {
                reply_error(req, API_FILE_TOO_LARGE, "%s is larger than %zu bytes (FILE_MAX_BYTES)", path, max);
                goto out;
        }
        if (res.exit_code != 0) {
                fs_reply_error(req, path, &res);
                goto out;
        }
        nl = res.out ? memchr(res.out, '\n', res.out_len < 64 ? res.out_len : 64) : NULL;
        if (!nl || sscanf(res.out, "%23s %23s", sizes, mtimes) != 2) {
                reply_error(req, API_SANDBOX_FAILED, "%s: could not be read", path);
                goto out;
        }
        hl = (size_t)(nl + 1 - res.out);
        size = strtoull(sizes, NULL, 10);
        if (res.out_truncated || res.out_len - hl != size) {
                reply_error(req, API_CONFLICT, "%s changed while it was read; try again", path);
                goto out;
        }
        olen = (size_t)json_object_get_string_len(old);
        nlen = (size_t)json_object_get_string_len(new);
        c = replace_all(res.out + hl, size, json_object_get_string(old), olen, json_object_get_string(new),
                        nlen, max, &out, &outlen);
        if (c == -EFBIG) {
                reply_error(req, API_FILE_TOO_LARGE, "%s would be larger than %zu bytes (FILE_MAX_BYTES)",
                            path, max);
                goto out;
        }
        if (c < 0) {
                reply_error(req, API_INTERNAL, "out of memory");
                goto out;
        }
        if (c > 0) {
                const char *wargv[] = { "sh", "-c", EXECD_SH_REPLACE_WRITE, "sh", path, sizes, mtimes, NULL };
                exec_result_free(&res);
                if (execd_run(req, x, wargv, out, outlen, 4096, &res) < 0)
                        goto out;
                if (res.exit_code == EXECD_X_EXISTS) {
                        reply_error(req, API_CONFLICT, "%s changed while it was being replaced; try again",
                                    path);
                        goto out;
                }
                if (res.exit_code != 0) {
                        fs_reply_error(req, path, &res);
                        goto out;
                }
        }
        count = c;
out:
        free(out);
        exec_result_free(&res);
        return count;
}

void h_execd_files_replace(struct request *req)
{
        char (*paths)[EXECD_PATH_MAX] = request_scratch(req, EXECD_FS_MAX_ITEMS * sizeof(*paths));
        struct json_object *body = NULL, *olds[EXECD_FS_MAX_ITEMS], *news[EXECD_FS_MAX_ITEMS];
        struct json_object *result = NULL;
        const char *keys[EXECD_FS_MAX_ITEMS];
        char verbose[8] = "";
        struct execd x;
        int n = 0;

        if (!paths)
                return;
        if (execd_open(req, &x, true) < 0 || query_one(req, "verbose", verbose, sizeof(verbose)) < 0 ||
            fs_json_body(req, json_type_object, &body) < 0)
                goto out;
        if (json_object_object_length(body) == 0 || json_object_object_length(body) > EXECD_FS_MAX_ITEMS) {
                reply_error(req, API_INVALID_REQUEST, "the body maps 1 to %d paths to {old, new}",
                            EXECD_FS_MAX_ITEMS);
                goto out;
        }
        /* every item checked before any file is touched */
        json_object_object_foreach(body, key, item) {
                if (fs_path(req, "each key", NULL, key, paths[n], EXECD_PATH_MAX) < 0)
                        goto out;
                if (!json_object_is_type(item, json_type_object) ||
                    !json_object_object_get_ex(item, "old", &olds[n]) ||
                    !json_object_object_get_ex(item, "new", &news[n]) ||
                    !json_object_is_type(olds[n], json_type_string) ||
                    !json_object_is_type(news[n], json_type_string)) {
                        reply_error(req, API_INVALID_REQUEST, "%s: old and new (strings) are required", paths[n]);
                        goto out;
                }
                if (json_object_get_string_len(olds[n]) == 0) {
                        reply_error(req, API_INVALID_REQUEST, "%s: old must not be empty", paths[n]);
                        goto out;
                }
                keys[n++] = key;
        }
        result = json_object_new_object();
        if (!result) {
                reply_error(req, API_INTERNAL, "out of memory");
                goto out;
        }
        for (int i = 0; i < n; i++) {
                long c = replace_one(req, &x, paths[i], olds[i], news[i]);
                struct json_object *r;

                if (c < 0)
                        goto out;
                r = json_object_new_object();
                json_object_object_add(r, "replacedCount", json_object_new_int64(c));
                json_object_object_add(result, keys[i], r); /* the client's key, as execd */
        }
        log_info(execd_kv(req, &x), "replaced in %d file(s)", n);
        if (strcasecmp(verbose, "true") == 0 || strcmp(verbose, "1") == 0)
                reply_json(req, 200, result);
        else
                reply_empty(req, 200);
out:
        json_put(result);
        json_put(body);
}
