/* execd: see execd.h. */
#include "execd.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "execd_scripts.h"
#include "core/json_input.h"
#include "core/log.h"
#include "sandbox/sandbox.h"
#include "sandbox/sandbox_path.h"

/* Sandbox ids as the lifecycle API makes them: [A-Za-z0-9_-], 1..63. */
/* The record's env JSON (validated at create) as "K=V" strings in req's
 * scratch (request_scratch), none when it has no entry; NULL after
 * answering 500. */
static const char *const *sandbox_env(struct request *req, const char *json)
{
        static const char *const none[] = { NULL };
        struct json_object *o = json[0] ? json_tokener_parse(json) : NULL;
        struct {
                char buf[sizeof(((struct sandbox_execd *)0)->env) + EXECD_SANDBOX_ENV_MAX];
                const char *env[EXECD_SANDBOX_ENV_MAX];
        } *s;
        size_t n = 0, off = 0;

        if (!o || !json_object_is_type(o, json_type_object) || json_object_object_length(o) == 0) {
                json_put(o);
                return none;
        }
        s = request_scratch(req, sizeof(*s));
        if (!s) {
                json_put(o);
                return NULL;
        }
        json_object_object_foreach(o, k, v) {
                int len;
                if (n + 1 >= EXECD_SANDBOX_ENV_MAX || !json_object_is_type(v, json_type_string))
                        continue;
                len = snprintf(s->buf + off, sizeof(s->buf) - off, "%s=%s", k, json_object_get_string(v));
                if (len < 0 || (size_t)len >= sizeof(s->buf) - off)
                        break;
                s->env[n++] = s->buf + off;
                off += (size_t)len + 1;
        }
        json_put(o);
        s->env[n] = NULL;
        return s->env;
}

static bool id_valid(const char *s)
{
        size_t n = strlen(s);

        if (n == 0 || n > 63)
                return false;
        for (; *s; s++)
                if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'z') ||
                      (*s >= 'A' && *s <= 'Z') || *s == '-' || *s == '_'))
                        return false;
        return true;
}

/* A uid or gid of an identity route: decimal, no sign, no leading zero,
 * at most EXECD_ID_MAX. */
static int identity_id(const char *s, long long *ret)
{
        long long v = 0;
        size_t i;

        for (i = 0; s[i]; i++) {
                if (s[i] < '0' || s[i] > '9' || i >= 10 || (i == 1 && s[0] == '0'))
                        return -EINVAL;
                v = v * 10 + (s[i] - '0');
        }
        if (i == 0 || v > EXECD_ID_MAX)
                return -EINVAL;
        *ret = v;
        return 0;
}

int execd_open(struct request *req, struct execd *x, bool need_running)
{
        const char *tok = FCGX_GetParam("HTTP_X_EXECD_ACCESS_TOKEN", req->fcgx->envp);
        struct sandbox_execd rec;
        int r;

        memset(x, 0, sizeof(*x));
        if (!tok)
                tok = FCGX_GetParam("HTTP_OPENSANDBOX_EGRESS_AUTH", req->fcgx->envp);
        if (!req->w->provider) {
                reply_error(req, API_NOT_FOUND, "this broker runs without a sandbox provider");
                return -1;
        }
        /* No credential at all: 401 before anything is looked up, so the
         * answer says nothing about the id. */
        if ((!tok || !*tok) && !req->authed) {
                reply_error_hdr(req, API_UNAUTHORIZED, "WWW-Authenticate: Bearer realm=\"sandbox-broker\"",
                                "the X-EXECD-ACCESS-TOKEN header (from the endpoint answer) or an API key is required");
                return -1;
        }
        if (!id_valid(req->path_arg)) {
                reply_error(req, API_SANDBOX_NOT_FOUND, "no sandbox %.64s", req->path_arg);
                return -1;
        }
        snprintf(x->sandbox_id, sizeof(x->sandbox_id), "%s", req->path_arg);
        r = sandbox_execd_lookup(req->w->redis, req->w->cfg, x->sandbox_id, tok,
                                 req->authed && !req->auth.admin ? req->auth.tenant : NULL, &rec);
        if (r == -ENOENT) {
                reply_error(req, API_SANDBOX_NOT_FOUND, "no sandbox %s", x->sandbox_id);
                return -1;
        }
        if (r == -EKEYREVOKED) {
                /* only a holder of a token once good for this sandbox gets here */
                request_audit(req, (struct audit_event){ .type = AUDIT_AUTH_DENIED,
                                                         .sandbox_id = x->sandbox_id,
                                                         .reason = "access token of a revoked API key" });
                reply_error_hdr(req, API_UNAUTHORIZED, "WWW-Authenticate: Bearer realm=\"sandbox-broker\"",
                                "the access token was issued to an API key that has been revoked; "
                                "fetch the endpoint again with a live key");
                return -1;
        }
        if (r < 0) {
                reply_errno(req, r, "sandbox lookup");
                return -1;
        }
        snprintf(x->state, sizeof(x->state), "%s", rec.state);
        snprintf(x->ref, sizeof(x->ref), "%s", rec.ref);
        snprintf(x->mode, sizeof(x->mode), "%s", rec.mode);
        snprintf(x->runtime, sizeof(x->runtime), "%s", rec.runtime);
        snprintf(x->tenant, sizeof(x->tenant), "%s", rec.tenant);
        snprintf(x->user, sizeof(x->user), "root");
        if (req->route && strncmp(req->route, EXECD_IDENTITY_PREFIX, strlen(EXECD_IDENTITY_PREFIX)) == 0) {
                long long uid, gid;

                if (identity_id(req->path_arg2, &uid) < 0 || identity_id(req->path_arg3, &gid) < 0) {
                        reply_error(req, API_INVALID_REQUEST,
                                    "uid and gid must be integers between 0 and %lld", EXECD_ID_MAX);
                        return -1;
                }
                snprintf(x->user, sizeof(x->user), "%lld:%lld", uid, gid);
                x->identity = true;
        }
        x->env = sandbox_env(req, rec.env);
        if (!x->env)
                return -1;
        if (need_running && (strcmp(x->state, "Running") != 0 || !x->ref[0])) {
                reply_error(req, API_SANDBOX_NOT_RUNNING, "sandbox %s is %s", x->sandbox_id, x->state);
                return -1;
        }
        /* the sandbox owner's share of the threads (tenant_share.h), before
         * any body is read: a refused request costs a moment */
        return request_share_take(req, rec.tenant, execd_kv(req, x));
}

const struct log_kv *execd_kv(const struct request *req, const struct execd *x)
{
        /* thread-local on purpose: the fields of the log line being written
         * now, pointing into req and x; nothing in it outlives that line */
        static __thread struct log_kv kv[3];

        kv[0] = (struct log_kv){ "SANDBOX_ID", x->sandbox_id };
        kv[1] = (struct log_kv){ "REQUEST_ID", req->request_id };
        kv[2] = (struct log_kv){ NULL, NULL };
        return kv;
}

void execd_reply_provider(struct request *req, const struct execd *x, int r, const char *what,
                          const char *err)
{
        char msg[PROVIDER_ERR_MAX + 128];
        enum api_error e = provider_api_error(r, what, err, msg, sizeof(msg));

        log_err(execd_kv(req, x), "%s failed: %s (%s)", what, err ? err : "", strerror(-r));
        reply_error(req, e, "%s", msg);
}

int execd_run(struct request *req, const struct execd *x, const char *const *argv,
              const void *stdin_data, size_t stdin_len, size_t max_output,
              struct exec_result *res)
{
        char err[PROVIDER_ERR_MAX] = "";
        struct exec_spec spec = { .argv = argv, .user = x->user, .cwd = "/",
                                  .timeout_ms = req->w->cfg->exec_timeout_ms,
                                  .max_output = max_output, .stdin_data = stdin_data,
                                  .stdin_len = stdin_len };
        int r = provider_exec(req->w->provider, x->ref, &spec, res, err);

        if (r < 0) {
                execd_reply_provider(req, x, r, argv[0], err);
                return -1;
        }
        return 0;
}

int execd_command_kill(struct request *req, const struct execd *x, const char *id, bool known,
                       struct exec_result *res, char *err)
{
        const char *argv[] = { "sh", "-c", EXECD_SH_INTERRUPT, "sh", id, known ? "1" : "0", NULL };
        struct exec_spec spec = { .argv = argv, .user = "root", .cwd = "/",
                                  .timeout_ms = req->w->cfg->exec_timeout_ms, .max_output = 4096 };

        return provider_exec(req->w->provider, x->ref, &spec, res, err);
}

int execd_query_values(const struct request *req, const char *name, const char **vals, int max,
                       char *buf, size_t size)
{
        const char *cursor = req->query;
        char key[128];
        size_t o = 0;
        int n = 0, r;

        /* decode each value in place at buf + o; keep it only if the name matches */
        while (o < size && (r = url_query_next(&cursor, key, sizeof(key), buf + o, size - o)) == 1) {
                if (strcmp(key, name) != 0)
                        continue;
                if (n >= max)
                        return -E2BIG;
                vals[n++] = buf + o;
                o += strlen(buf + o) + 1;
        }
        if (o >= size)
                return -E2BIG;
        return r < 0 ? r : n;
}

int execd_path_normalize(const char *in, char *out, size_t size)
{
        size_t o = 0, inlen = strlen(in);
        const char *p = in;

        if (inlen == 0 || size < 2)
                return -EINVAL;
        if (inlen >= EXECD_PATH_MAX)
                return -E2BIG;
        /* a name over NAME_MAX would fail in the sandbox (ENAMETOOLONG):
         * the client's error, said before anything runs */
        if (sandbox_path_check_lengths(in, NULL) < 0)
                return -ENAMETOOLONG;
        if (in[0] != '/') {
                size_t n = strlen(EXECD_DEFAULT_CWD);
                if (n + 1 >= size)
                        return -E2BIG;
                memcpy(out, EXECD_DEFAULT_CWD, n);
                o = n;
        }
        out[o] = '\0';
        while (*p) {
                size_t seg;

                while (*p == '/')
                        p++;
                seg = strcspn(p, "/");
                if (seg == 0)
                        break;
                if (seg == 1 && p[0] == '.') {
                        /* nothing */
                } else if (seg == 2 && p[0] == '.' && p[1] == '.') {
                        while (o > 0 && out[o - 1] != '/')
                                o--;
                        if (o > 0)
                                o--; /* the '/' before the dropped component */
                        out[o] = '\0';
                } else {
                        if (o + 1 + seg + 1 > size)
                                return -E2BIG;
                        out[o++] = '/';
                        memcpy(out + o, p, seg);
                        o += seg;
                        out[o] = '\0';
                }
                p += seg;
        }
        if (o == 0) {
                out[0] = '/';
                out[1] = '\0';
        }
        return 0;
}

const char *execd_path_strerror(int r)
{
        switch (r) {
        case -ENAMETOOLONG:
                return "a file name in it is longer than 255 bytes (NAME_MAX)";
        case -E2BIG:
                return "it is longer than 4095 bytes (PATH_MAX)";
        default:
                return "it is empty or not a path";
        }
}

void execd_reply_fs_error(struct request *req, const char *path, const struct exec_result *res)
{
        const char *e = res->err ? res->err : "";

        if (res->exit_code == EXECD_X_IS_DIR || strstr(e, "Is a directory"))
                reply_error(req, API_INVALID_REQUEST, "%s: is a directory", path);
        else if (res->exit_code == EXECD_X_NOT_DIR || strstr(e, "Not a directory"))
                reply_error(req, API_INVALID_REQUEST, "%s: not a directory", path);
        else if (res->exit_code == EXECD_X_NOT_FOUND || strstr(e, "No such file"))
                reply_error(req, API_FILE_NOT_FOUND, "%s: no such file or directory", path);
        else if (strstr(e, "Permission denied") || strstr(e, "Operation not permitted"))
                reply_error(req, API_PERMISSION_DENIED, "%s: permission denied", path);
        else if (strstr(e, "File name too long"))
                reply_error(req, API_INVALID_REQUEST, "%s: a file name in it is too long (NAME_MAX is 255 bytes)",
                            path);
        else if (strstr(e, "invalid user") || strstr(e, "invalid group"))
                reply_error(req, API_INVALID_REQUEST, "%s: %.200s", path, e);
        else
                reply_error(req, API_SANDBOX_FAILED, "%s: %.200s", path, e);
}

void execd_reply_headers(struct request *req, int status, const char *content_type,
                         const char *extra)
{
        req->status = status;
        FCGX_FPrintF(req->fcgx->out, "Status: %d %s\r\nContent-Type: %s\r\nCache-Control: no-store\r\n%s\r\n",
                     status, api_status_reason(status), content_type, extra ? extra : "");
}

int execd_mode_str(struct json_object *v, const char *def, char *out, size_t size)
{
        int64_t m;
        char tmp[8];

        snprintf(out, size, "%s", def);
        if (!v || json_object_is_type(v, json_type_null))
                return 0;
        if (!json_object_is_type(v, json_type_int))
                return -EINVAL;
        m = json_object_get_int64(v);
        if (m < 0 || m > 7777)
                return -EINVAL;
        snprintf(tmp, sizeof(tmp), "%lld", (long long)m);
        for (char *p = tmp; *p; p++)
                if (*p > '7')
                        return -EINVAL;
        snprintf(out, size, "%.7s", tmp);
        return 0;
}

/* A user or group name chown may be handed: no option, a plain charset. */
static bool name_ok(const char *s)
{
        size_t n = strlen(s);

        if (n == 0 || n > 32 || s[0] == '-')
                return false;
        for (; *s; s++)
                if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
                      *s == '_' || *s == '-' || *s == '.'))
                        return false;
        return true;
}

int execd_owner_str(struct json_object *o, char *out, size_t size)
{
        const char *names[2] = { "", "" }, *keys[2] = { "owner", "group" };

        out[0] = '\0';
        for (int i = 0; i < 2; i++) {
                struct json_object *v = NULL;

                json_object_object_get_ex(o, keys[i], &v);
                if (!v || json_object_is_type(v, json_type_null))
                        continue;
                if (!json_object_is_type(v, json_type_string))
                        return -EINVAL;
                names[i] = json_object_get_string(v);
                if (names[i][0] && !name_ok(names[i]))
                        return -EINVAL;
        }
        if (names[0][0] || names[1][0])
                snprintf(out, size, "%s%s%s", names[0], names[1][0] ? ":" : "", names[1]);
        return 0;
}
