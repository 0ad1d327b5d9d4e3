/* h_execd_files: the filesystem part of the execd contract served by the
 * broker (execd-api.yaml): POST /files/upload (multipart metadata + file
 * pairs), GET /files/info, DELETE /files, POST and DELETE /directories
 * (GET /files/download: h_execd_download.c).
 *
 * Every operation is a command in the sandbox as root (the caller owns the
 * whole sandbox; see execd.h), or on an identity route as its uid/gid
 * (then never the agent's root fast path); paths are passed as arguments ("$1"), never
 * parsed by a shell. Uploads are parsed as they are read (lib/codec/multipart.h):
 * each file is held only until it is written (at most FILE_MAX_BYTES), the
 * whole body is capped at EXECD_UPLOAD_MAX. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "execd.h"
#include "execd_scripts.h"
#include "core/json_input.h"
#include "core/log.h"
#include "codec/multipart.h"
#include "routes.h"
#include "core/timeutil.h"
#include "codec/utf8.h"

#define EXECD_UPLOAD_MAX (64 * 1024 * 1024) /* nginx's client_max_body_size too */
#define EXECD_META_MAX (64 * 1024)
#define EXECD_MAX_PATHS 64

/* ---- POST /files/upload ---- */

struct upload {
        struct request *req;
        const struct execd *x;
        enum { PART_OTHER, PART_META, PART_FILE } kind;
        char *buf;          /* the current part's bytes */
        size_t len, cap, max;
        bool have_meta;
        char path[EXECD_PATH_MAX], mode[8], owner[80];
        int files;
        bool replied;       /* an error answer went out */
};

static int up_fail(struct upload *u, enum api_error e, const char *fmt, const char *arg)
{
        if (!u->replied)
                reply_error(u->req, e, fmt, arg);
        u->replied = true;
        return -ECANCELED;
}

static int up_begin(void *ud, const struct multipart_part *p)
{
        struct upload *u = ud;

        u->len = 0;
        if (strcmp(p->name, "metadata") == 0) {
                u->kind = PART_META;
                u->max = EXECD_META_MAX;
        } else if (strcmp(p->name, "file") == 0) {
                if (!u->have_meta)
                        return up_fail(u, API_INVALID_REQUEST, "%s",
                                       "each file part must follow its metadata part");
                u->kind = PART_FILE;
                u->max = (size_t)u->req->w->cfg->file_max_bytes;
        } else {
                u->kind = PART_OTHER; /* ignored, as unknown form fields are */
                u->max = 0;
        }
        return 0;
}

static int up_data(void *ud, const char *data, size_t len)
{
        struct upload *u = ud;

        if (u->kind == PART_OTHER)
                return 0;
        if (len > u->max - u->len) {
                if (u->kind == PART_FILE) {
                        char lim[32];
                        snprintf(lim, sizeof(lim), "%d", u->req->w->cfg->file_max_bytes);
                        if (!u->replied)
                                reply_error(u->req, API_FILE_TOO_LARGE, "%s is larger than %s bytes",
                                            u->path, lim);
                        u->replied = true;
                        return -ECANCELED;
                }
                return up_fail(u, API_INVALID_REQUEST, "%s", "a metadata part is too large");
        }
        if (u->len + len > u->cap) {
                size_t cap = u->cap ? u->cap : 65536;
                char *b;
                while (cap < u->len + len)
                        cap *= 2;
                b = realloc(u->buf, cap + 1);
                if (!b)
                        return up_fail(u, API_INTERNAL, "%s", "out of memory");
                u->buf = b;
                u->cap = cap;
        }
        memcpy(u->buf + u->len, data, len);
        u->len += len;
        return 0;
}

static int up_meta(struct upload *u)
{
        struct json_object *o = NULL, *v;
        char err[256];
        int r = -ECANCELED, pr;

        if (json_input_parse_object(u->buf ? u->buf : "", u->len, JSON_INPUT_MAX_DEPTH, &o, err,
                                    sizeof(err)) < 0)
                return up_fail(u, API_INVALID_REQUEST, "metadata: %s", err);
        if (!json_object_object_get_ex(o, "path", &v) || !json_object_is_type(v, json_type_string) ||
            strlen(json_object_get_string(v)) != (size_t)json_object_get_string_len(v)) {
                up_fail(u, API_INVALID_REQUEST, "%s", "metadata: path is required and must be a path");
                goto out;
        }
        pr = execd_path_normalize(json_object_get_string(v), u->path, sizeof(u->path));
        if (pr < 0) {
                up_fail(u, API_INVALID_REQUEST, "metadata: path: %s", execd_path_strerror(pr));
                goto out;
        }
        json_object_object_get_ex(o, "mode", &v);
        if (!json_object_object_get_ex(o, "mode", &v))
                v = NULL;
        if (execd_mode_str(v, "", u->mode, sizeof(u->mode)) < 0) {
                up_fail(u, API_INVALID_REQUEST, "%s", "metadata: mode must be octal digits, e.g. 644");
                goto out;
        }
        if (execd_owner_str(o, u->owner, sizeof(u->owner)) < 0) {
                up_fail(u, API_INVALID_REQUEST, "%s", "metadata: owner and group must be user/group names");
                goto out;
        }
        u->have_meta = true;
        r = 0;
out:
        json_put(o);
        return r;
}

/* "uid:gid", both decimal: the owner the agent's write takes (-1, -1 for
 * ""). Names, and an owner or group alone, are for chown in the sandbox
 * (the script): false. */
static bool owner_ids(const char *owner, int64_t *ret_uid, int64_t *ret_gid)
{
        int64_t v[2] = { 0, 0 };
        const char *s = owner;

        *ret_uid = *ret_gid = -1;
        if (!owner[0])
                return true;
        for (int i = 0; i < 2; i++, s++) {
                const char *start = s;

                for (; *s >= '0' && *s <= '9'; s++) {
                        v[i] = v[i] * 10 + (*s - '0');
                        if (v[i] >= 0xffffffffLL)
                                return false;
                }
                if (s == start || *s != (i == 0 ? ':' : '\0'))
                        return false;
        }
        *ret_uid = v[0];
        *ret_gid = v[1];
        return true;
}

/* The file written by the provider itself (the sandbox's agent, as root:
 * no command). Returns 0 (written, or answered: u->replied), or
 * -EOPNOTSUPP when the sandbox cannot and the script must. */
static int up_file_fast(struct upload *u, int64_t uid, int64_t gid)
{
        char err[PROVIDER_ERR_MAX] = "";
        int mode = u->mode[0] ? (int)strtol(u->mode, NULL, 8) : -1;
        int r = provider_write_file(u->req->w->provider, u->x->ref, u->path, u->buf ? u->buf : "",
                                    u->len, mode, uid, gid, false, u->req->w->cfg->exec_timeout_ms,
                                    err);

        switch (r) {
        case 0:
                u->files++;
                return 0;
        case -EOPNOTSUPP:
                return r;
        case -EISDIR:
                reply_error(u->req, API_INVALID_REQUEST, "%s: %s", u->path,
                            strstr(err, "directory") ? "is a directory" : "not a regular file");
                break;
        case -ENOENT:
                /* a parent that cannot be made: a file in the way */
                reply_error(u->req, API_INVALID_REQUEST, "%s: %s", u->path,
                            "a parent is not a directory");
                break;
        case -EACCES:
                reply_error(u->req, API_PERMISSION_DENIED, "%s: permission denied", u->path);
                break;
        default:
                execd_reply_provider(u->req, u->x, r, "upload", err);
                break;
        }
        u->replied = true;
        return 0;
}

static int up_file(struct upload *u)
{
        const char *argv[] = { "sh", "-c", EXECD_SH_WRITE, "sh", u->path, u->mode, u->owner, NULL };
        struct exec_result res = { 0 };
        int64_t uid, gid;
        int r = 0;

        if (!u->x->identity && provider_has_files(u->req->w->provider) && owner_ids(u->owner, &uid, &gid) &&
            up_file_fast(u, uid, gid) == 0) {
                u->have_meta = false;
                return u->replied ? -ECANCELED : 0;
        }
        /* execd_run replies itself on a provider failure */
        if (execd_run(u->req, u->x, argv, u->buf ? u->buf : "", u->len, 4096, &res) < 0) {
                u->replied = true;
                r = -ECANCELED;
        } else if (res.exit_code != 0) {
                execd_reply_fs_error(u->req, u->path, &res);
                u->replied = true;
                r = -ECANCELED;
        } else {
                u->files++;
        }
        exec_result_free(&res);
        u->have_meta = false;
        return r;
}

static int up_end(void *ud)
{
        struct upload *u = ud;

        if (u->kind == PART_META)
                return up_meta(u);
        if (u->kind == PART_FILE)
                return up_file(u);
        return 0;
}

void h_execd_upload(struct request *req)
{
        static const struct multipart_cb cb = { up_begin, up_data, up_end };
        const char *ct = FCGX_GetParam("CONTENT_TYPE", req->fcgx->envp);
        const char *cl = FCGX_GetParam("CONTENT_LENGTH", req->fcgx->envp);
        char boundary[MULTIPART_BOUNDARY_MAX + 1], chunk[65536];
        struct multipart *mp = NULL;
        struct upload u = { .req = req };
        struct execd x;
        size_t total = 0;
        int r;

        if (execd_open(req, &x, true) < 0)
                return;
        u.x = &x;
        if (multipart_boundary(ct, boundary, sizeof(boundary)) < 0) {
                reply_error(req, API_UNSUPPORTED_MEDIA_TYPE,
                            "Content-Type must be multipart/form-data with a boundary");
                return;
        }
        if (cl && *cl && strtoull(cl, NULL, 10) > EXECD_UPLOAD_MAX) {
                reply_error(req, API_PAYLOAD_TOO_LARGE, "request body exceeds %d bytes", EXECD_UPLOAD_MAX);
                return;
        }
        if (multipart_new(boundary, &cb, &u, &mp) < 0) {
                reply_error(req, API_INTERNAL, "out of memory");
                return;
        }
        for (;;) {
                /* as it comes, within the body's deadline (request.h) */
                ssize_t n = request_body_read(req, chunk, sizeof(chunk));
                if (n < 0) {
                        u.replied = true;
                        goto out;
                }
                if (n == 0)
                        break;
                total += (size_t)n;
                if (total > EXECD_UPLOAD_MAX) {
                        up_fail(&u, API_PAYLOAD_TOO_LARGE, "%s", "the request body is too large");
                        goto out;
                }
                r = multipart_feed(mp, chunk, (size_t)n);
                if (r < 0)
                        break;
        }
        r = multipart_finish(mp);
        if (u.replied)
                goto out;
        if (r == -E2BIG) {
                reply_error(req, API_INVALID_REQUEST, "too many parts or part headers too large");
                goto out;
        }
        if (r < 0) {
                reply_error(req, API_INVALID_REQUEST, "malformed multipart body");
                goto out;
        }
        if (u.have_meta) {
                reply_error(req, API_INVALID_REQUEST, "the last metadata part has no file part");
                goto out;
        }
        if (u.files == 0) {
                reply_error(req, API_INVALID_REQUEST, "no file in the upload");
                goto out;
        }
        log_info(execd_kv(req, &x), "uploaded %d file(s), %zu bytes of body", u.files, total);
        reply_empty(req, 200);
out:
        multipart_free(mp);
        free(u.buf);
}

/* ---- GET /files/info, DELETE /files, DELETE /directories ---- */

/* The path query values, normalised: count, or -1 after replying. */
static int query_paths(struct request *req, char *qbuf, char (*paths)[EXECD_PATH_MAX], const char **argv,
                       int first)
{
        const char *vals[EXECD_MAX_PATHS];
        int n = execd_query_values(req, "path", vals, EXECD_MAX_PATHS, qbuf, EXECD_QUERY_BUF);

        if (n <= 0) {
                reply_error(req, API_INVALID_REQUEST, n == 0 ? "a path query parameter is required"
                                                             : "bad or too many path parameters (at most %d)",
                            EXECD_MAX_PATHS);
                return -1;
        }
        for (int i = 0; i < n; i++) {
                int r = execd_path_normalize(vals[i], paths[i], EXECD_PATH_MAX);

                if (r < 0) {
                        reply_error(req, API_INVALID_REQUEST, "path %d: %s", i + 1, execd_path_strerror(r));
                        return -1;
                }
                argv[first + i] = paths[i];
        }
        argv[first + n] = NULL;
        return n;
}

static const char *file_type(unsigned int mode)
{
        switch (mode & 0170000) {
        case 0100000: return "file";
        case 0040000: return "directory";
        case 0120000: return "symlink";
        default: return "other";
        }
}

static void add_iso(struct json_object *o, const char *name, long long secs)
{
        char iso[40];

        if (timeutil_format_iso(secs * 1000, iso, sizeof(iso)) == 0) {
                /* RFC 3339 without the milliseconds, as execd writes it */
                char *dot = strchr(iso, '.');
                if (dot)
                        memcpy(dot, "Z", 2);
                json_object_object_add(o, name, json_object_new_string(iso));
        }
}

/* argv layout shared by the path-list handlers: sh -c SCRIPT sh PATH... */
#define PATH_ARGV_FIRST 4

void h_execd_files_info(struct request *req)
{
        char (*paths)[EXECD_PATH_MAX] = request_scratch(req, EXECD_MAX_PATHS * sizeof(*paths));
        const char *argv[EXECD_MAX_PATHS + PATH_ARGV_FIRST + 1] = { "sh", "-c", EXECD_SH_INFO, "sh" };
        struct exec_result res = { 0 };
        struct json_object *o = NULL;
        char *qbuf;
        const char *line;
        struct execd x;
        int n;

        if (!paths)
                return;
        qbuf = malloc(EXECD_QUERY_BUF);
        if (!qbuf) {
                reply_error(req, API_INTERNAL, "out of memory");
                return;
        }
        if (execd_open(req, &x, true) < 0 || (n = query_paths(req, qbuf, paths, argv, PATH_ARGV_FIRST)) < 0 ||
            execd_run(req, &x, argv, NULL, 0, 256 * 1024, &res) < 0)
                goto out;
        o = json_object_new_object();
        line = res.out ? res.out : "";
        for (int i = 0; i < n; i++) {
                struct json_object *fi;
                unsigned int mode = 0;
                long long size = 0, mtime = 0, btime = 0;
                char user[64] = "", group[64] = "", perm[8] = "";
                const char *nl = strchr(line, '\n');

                if (!nl || line[0] == '-' ||
                    sscanf(line, "%x|%lld|%lld|%lld|%63[^|]|%63[^|]|%7[0-7]", &mode, &size, &mtime,
                           &btime, user, group, perm) != 7) {
                        reply_error(req, API_FILE_NOT_FOUND, "%s: no such file or directory", paths[i]);
                        goto out;
                }
                fi = json_object_new_object();
                json_object_object_add(fi, "path", json_object_new_string(paths[i]));
                json_object_object_add(fi, "type", json_object_new_string(file_type(mode)));
                json_object_object_add(fi, "size", json_object_new_int64(size));
                add_iso(fi, "modified_at", mtime);
                add_iso(fi, "created_at", btime > 0 ? btime : mtime);
                json_object_object_add(fi, "owner", json_object_new_string(user));
                json_object_object_add(fi, "group", json_object_new_string(group));
                json_object_object_add(fi, "mode", json_object_new_int(atoi(perm)));
                json_object_object_add(o, paths[i], fi);
                line = nl + 1;
        }
        reply_json(req, 200, o);
out:
        json_put(o);
        exec_result_free(&res);
        free(qbuf);
}

static void remove_paths(struct request *req, const char *script, const char *what)
{
        char (*paths)[EXECD_PATH_MAX] = request_scratch(req, EXECD_MAX_PATHS * sizeof(*paths));
        const char *argv[EXECD_MAX_PATHS + PATH_ARGV_FIRST + 1] = { "sh", "-c", script, "sh" };
        struct exec_result res = { 0 };
        char *qbuf;
        struct execd x;
        int n;

        if (!paths)
                return;
        qbuf = malloc(EXECD_QUERY_BUF);
        if (!qbuf) {
                reply_error(req, API_INTERNAL, "out of memory");
                return;
        }
        if (execd_open(req, &x, true) < 0 || (n = query_paths(req, qbuf, paths, argv, PATH_ARGV_FIRST)) < 0 ||
            execd_run(req, &x, argv, NULL, 0, 4096, &res) < 0)
                goto out;
        if (res.exit_code != 0) {
                /* name the path the message is about, else the first */
                const char *p = paths[0];
                for (int i = 0; i < n; i++)
                        if (res.err && strstr(res.err, paths[i]))
                                p = paths[i];
                execd_reply_fs_error(req, p, &res);
                goto out;
        }
        log_info(execd_kv(req, &x), "%s: %d path(s)", what, n);
        reply_empty(req, 200);
out:
        exec_result_free(&res);
        free(qbuf);
}

void h_execd_files_delete(struct request *req)
{
        remove_paths(req, EXECD_SH_RM_FILES, "files removed");
}

void h_execd_dirs_delete(struct request *req)
{
        remove_paths(req, EXECD_SH_RM_DIRS, "directories removed");
}

/* POST /directories: {path: Permission} */
void h_execd_dirs_create(struct request *req)
{
        struct json_object *body = NULL;
        struct exec_result res = { 0 };
        char path[EXECD_PATH_MAX], mode[8], owner[80];
        struct execd x;
        int n = 0;

        if (execd_open(req, &x, true) < 0 || request_json_body(req, &body) < 0)
                goto out;
        if (json_object_object_length(body) == 0 || json_object_object_length(body) > EXECD_MAX_PATHS) {
                reply_error(req, API_INVALID_REQUEST, "the body maps 1 to %d paths to permissions",
                            EXECD_MAX_PATHS);
                goto out;
        }
        json_object_object_foreach(body, key, perm) {
                struct json_object *mv = NULL;

                int pr = execd_path_normalize(key, path, sizeof(path));

                if (pr < 0) {
                        reply_error(req, API_INVALID_REQUEST, "each key must be a path: %s",
                                    execd_path_strerror(pr));
                        goto out;
                }
                if (!json_object_is_type(perm, json_type_object)) {
                        reply_error(req, API_INVALID_REQUEST, "each key must be a path, each value a Permission");
                        goto out;
                }
                json_object_object_get_ex(perm, "mode", &mv);
                if (execd_mode_str(mv, "", mode, sizeof(mode)) < 0 || execd_owner_str(perm, owner, sizeof(owner)) < 0) {
                        reply_error(req, API_INVALID_REQUEST,
                                    "%s: mode must be octal digits (e.g. 755), owner/group names", path);
                        goto out;
                }
                if (!mode[0])
                        snprintf(mode, sizeof(mode), "755"); /* the spec's default */
                const char *argv[] = { "sh", "-c", EXECD_SH_MKDIR, "sh", path, mode, owner, NULL };
                if (execd_run(req, &x, argv, NULL, 0, 4096, &res) < 0)
                        goto out;
                if (res.exit_code != 0) {
                        execd_reply_fs_error(req, path, &res);
                        goto out;
                }
                exec_result_free(&res);
                n++;
        }
        log_info(execd_kv(req, &x), "directories created: %d", n);
        reply_empty(req, 200);
out:
        exec_result_free(&res);
        json_put(body);
}
