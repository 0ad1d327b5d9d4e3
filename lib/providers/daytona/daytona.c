/* daytona: see daytona.h. Contract: api/openapi.yaml of github.com/daytonaio/daytona/libs/api-client-go v0.190.0 (scripts/daytona-specs)
 * (control plane) and toolbox-openapi.yaml (in-sandbox daemon, reached as
 * {toolboxProxyUrl}/{sandboxId}/{endpoint}). */
#include "providers/daytona/daytona.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "providers/daytona/daytona_api.h"
#include "providers/daytona/daytona_exec.h"
#include "providers/daytona/daytona_json.h"
#include "core/timeutil.h"

#define DAYTONA_RESP_MAX (1024 * 1024)      /* a Sandbox, an error */
#define DAYTONA_LIST_MAX (16 * 1024 * 1024) /* one page of GET /sandbox */
#define DAYTONA_LIST_PAGE "200"             /* the spec's maximum */
#define DAYTONA_LIST_PAGES 500              /* 100000 sandboxes */
#define DAYTONA_POLL_FIRST_MS 100           /* state polls: 100, 200, ... 2000 ms */
#define DAYTONA_POLL_STEP_MAX_MS 2000
#define DAYTONA_EXEC_GRACE_MS 5000          /* Daytona's own exec timeout and the transfer's, past ours */
#define DAYTONA_TIMEOUT_KILLED 137          /* 128 + SIGKILL, from `timeout -s KILL` */
#define STDIN_DIR "/tmp"

struct daytona {
        struct daytona_api *api;
        char *base;   /* API URL without a trailing '/' */
        char *target, *user;
        int timeout_ms, poll_max_ms, auto_stop_min, auto_delete_min;
        /* The toolbox URL of the last sandbox used: execs come in runs. */
        char cache_ref[PROVIDER_REF_MAX];
        char cache_url[DAYTONA_URL_MAX + PROVIDER_REF_MAX * 3 + 2];
};

static struct daytona *impl(struct provider *p)
{
        return p->impl;
}

static int status_errno(long status)
{
        if (status / 100 == 2)
                return 0;
        if (status == 401 || status == 403)
                return -EACCES;
        if (status == 404)
                return -ENOENT;
        if (status == 409)
                return -EBUSY;
        if (status == 429)
                return -EAGAIN;
        return -EREMOTEIO;
}

/* base + fmt with each %s argument percent-encoded (at most two).
 * Returns a malloc'ed URL or NULL (ENOMEM). */
static char *url_fmt(const char *base, const char *fmt, const char *a, const char *b)
{
        char *ea = a ? http_escape(a) : NULL, *eb = b ? http_escape(b) : NULL;
        char *path = NULL, *url = NULL;

        if ((a && !ea) || (b && !eb))
                goto out;
        if (asprintf(&path, fmt, ea ? ea : "", eb ? eb : "") < 0) {
                path = NULL;
                goto out;
        }
        if (asprintf(&url, "%s%s", base, path) < 0)
                url = NULL;
out:
        free(ea);
        free(eb);
        free(path);
        return url;
}

/* One call: transport errors as daytona_api_request (its -EIO becomes
 * -EREMOTEIO), then the status mapped by status_errno with Daytona's message
 * in ret_err. With resp != NULL and on success, *resp owns the body. */
static int call(struct daytona *d, const struct daytona_request *req, struct http_buf *resp,
                const char *what, char *ret_err)
{
        struct http_buf b = { 0 };
        long status = 0;
        int r;

        if (!req->url) {
                provider_errf(ret_err, "daytona: %s: out of memory", what);
                return -ENOMEM;
        }
        r = daytona_api_request(d->api, req, &status, &b, ret_err);
        if (r == -EIO)
                r = -EREMOTEIO;
        if (r < 0)
                goto out;
        r = status_errno(status);
        if (r < 0) {
                daytona_json_error_message(what, status, b.data, ret_err);
                if (r == -EACCES && ret_err) /* say what to check, never the key itself */
                        strncat(ret_err, " (check DAYTONA_API_KEY / DAYTONA_ORGANIZATION_ID)",
                                PROVIDER_ERR_MAX - strlen(ret_err) - 1);
                if (r == -EAGAIN && ret_err)
                        strncat(ret_err, " (rate limited; retries exhausted)",
                                PROVIDER_ERR_MAX - strlen(ret_err) - 1);
        }
out:
        if (r == 0 && resp) {
                *resp = b;
                b = (struct http_buf){ 0 };
        }
        http_buf_release(&b);
        return r;
}

/* A control-plane call with an optional JSON body. */
static int api_call(struct daytona *d, const char *method, char *url, const char *json,
                    size_t max, struct http_buf *resp, const char *what, char *ret_err)
{
        struct daytona_request req = { .method = method, .url = url, .json = json,
                                       .timeout_ms = d->timeout_ms, .max_resp = max };
        int r = call(d, &req, resp, what, ret_err);

        free(url);
        return r;
}

static int sandbox_get(struct daytona *d, const char *ref, struct daytona_sandbox *s,
                       const char *what, char *ret_err)
{
        struct http_buf resp = { 0 };
        int r;

        r = api_call(d, "GET", url_fmt(d->base, "/sandbox/%s", ref, NULL), NULL, DAYTONA_RESP_MAX,
                     &resp, what, ret_err);
        if (r < 0)
                goto out;
        r = daytona_json_parse_sandbox(resp.data, s);
        if (r < 0)
                provider_errf(ret_err, "daytona: %s: malformed Sandbox answer", what);
out:
        http_buf_release(&resp);
        return r;
}

/* Poll ref until it reaches `want`, with backoff, at most poll_max_ms. */
static int wait_state(struct daytona *d, const char *ref, const char *want, const char *what,
                      char *ret_err)
{
        int64_t deadline = timeutil_mono_ms() + d->poll_max_ms;
        int step = DAYTONA_POLL_FIRST_MS;
        struct daytona_sandbox s;
        int r;

        for (;;) {
                r = sandbox_get(d, ref, &s, what, ret_err);
                if (r < 0)
                        return r;
                if (strcmp(s.state, want) == 0)
                        return 0;
                if (daytona_json_state_failed(s.state)) {
                        provider_errf(ret_err, "daytona: %s: sandbox %s is in state %s: %s", what, ref,
                                   s.state, s.error_reason[0] ? s.error_reason : "no reason given");
                        return -EREMOTEIO;
                }
                if (daytona_json_state(s.state) == SANDBOX_RUN_MISSING) {
                        provider_errf(ret_err, "daytona: %s: sandbox %s is %s", what, ref, s.state);
                        return -ENOENT;
                }
                if (timeutil_mono_ms() + step > deadline) {
                        provider_errf(ret_err, "daytona: %s: sandbox %s still %s after %d ms (want %s)",
                                   what, ref, s.state[0] ? s.state : "without a state",
                                   d->poll_max_ms, want);
                        return -ETIMEDOUT;
                }
                nanosleep(&(struct timespec){ step / 1000, (step % 1000) * 1000000L }, NULL);
                step = step * 2 > DAYTONA_POLL_STEP_MAX_MS ? DAYTONA_POLL_STEP_MAX_MS : step * 2;
        }
}

/* POST /sandbox/{ref}/<verb>, then wait for `want`. */
static int sandbox_action(struct daytona *d, const char *ref, const char *verb, const char *want,
                          char *ret_err)
{
        char fmt[64];
        int r;

        snprintf(fmt, sizeof(fmt), "/sandbox/%%s/%s", verb);
        r = api_call(d, "POST", url_fmt(d->base, fmt, ref, NULL), NULL, DAYTONA_RESP_MAX, NULL, verb,
                     ret_err);
        return r < 0 ? r : wait_state(d, ref, want, verb, ret_err);
}

static int daytona_create(struct provider *p, const struct sandbox_spec *spec, char *ret_ref,
                          char *ret_err)
{
        struct daytona *d = impl(p);
        struct daytona_create_opts o = { .user = d->user, .target = d->target,
                                         .auto_stop_min = d->auto_stop_min,
                                         .auto_delete_min = d->auto_delete_min };
        struct http_buf resp = { 0 };
        struct daytona_sandbox s;
        char *body = NULL;
        int r;

        if (spec->n_mounts) {
                /* no volume ops: the broker refuses volumes before it gets here */
                provider_errf(ret_err, "daytona: create: volumes are not supported by this provider");
                return -EINVAL;
        }
        r = daytona_json_create_body(spec, &o, &body);
        if (r < 0) {
                provider_errf(ret_err, "daytona: create: %s",
                           r == -EINVAL ? "sandbox id, snapshot and K=V env are required" : "out of memory");
                goto out;
        }
        r = api_call(d, "POST", url_fmt(d->base, "/sandbox", NULL, NULL), body, DAYTONA_RESP_MAX,
                     &resp, "create", ret_err);
        if (r < 0)
                goto out;
        r = daytona_json_parse_sandbox(resp.data, &s);
        if (r < 0) {
                provider_errf(ret_err, "daytona: create: answer without a sandbox id");
                goto out;
        }
        snprintf(ret_ref, PROVIDER_REF_MAX, "%s", s.id);
        if (strcmp(s.state, "started") != 0) {
                r = wait_state(d, s.id, "started", "create", ret_err);
                if (r < 0) {
                        /* Nothing half-made stays behind: the caller has no ref yet. */
                        char ignored[PROVIDER_ERR_MAX];

                        api_call(d, "DELETE", url_fmt(d->base, "/sandbox/%s", s.id, NULL), NULL,
                                 DAYTONA_RESP_MAX, NULL, "delete", ignored);
                        ret_ref[0] = '\0';
                }
        }
out:
        http_buf_release(&resp);
        free(body);
        return r;
}

/* Start from any state: started is done, a transition in progress is
 * waited for, stopped/paused/archived are started. */
static int daytona_start(struct provider *p, const char *ref, char *ret_err)
{
        struct daytona *d = impl(p);
        struct daytona_sandbox s;
        int r = sandbox_get(d, ref, &s, "start", ret_err);

        if (r < 0)
                return r;
        if (strcmp(s.state, "started") == 0)
                return 0;
        if (daytona_json_state(s.state) == SANDBOX_RUN_CREATED)
                return wait_state(d, ref, "started", "start", ret_err);
        return sandbox_action(d, ref, "start", "started", ret_err);
}

static int daytona_stop(struct provider *p, const char *ref, char *ret_err)
{
        struct daytona *d = impl(p);
        struct daytona_sandbox s;
        int r = sandbox_get(d, ref, &s, "stop", ret_err);

        if (r < 0)
                return r;
        if (strcmp(s.state, "stopped") == 0 || strcmp(s.state, "archived") == 0)
                return 0;
        if (strcmp(s.state, "stopping") == 0)
                return wait_state(d, ref, "stopped", "stop", ret_err);
        return sandbox_action(d, ref, "stop", "stopped", ret_err);
}

static int daytona_pause(struct provider *p, const char *ref, char *ret_err)
{
        return sandbox_action(impl(p), ref, "pause", "paused", ret_err);
}

/* Daytona's start resumes a paused sandbox (spec: startSandbox). */
static int daytona_resume(struct provider *p, const char *ref, char *ret_err)
{
        return sandbox_action(impl(p), ref, "start", "started", ret_err);
}

static int daytona_remove(struct provider *p, const char *ref, char *ret_err)
{
        struct daytona *d = impl(p);

        if (strcmp(d->cache_ref, ref) == 0)
                d->cache_ref[0] = '\0';
        return api_call(d, "DELETE", url_fmt(d->base, "/sandbox/%s", ref, NULL), NULL,
                        DAYTONA_RESP_MAX, NULL, "remove", ret_err);
}

static int daytona_inspect(struct provider *p, const char *ref, struct sandbox_info *ret,
                           char *ret_err)
{
        struct daytona_sandbox s;
        int r;

        memset(ret, 0, sizeof(*ret));
        ret->state = SANDBOX_RUN_MISSING;
        r = sandbox_get(impl(p), ref, &s, "inspect", ret_err);
        if (r < 0)
                return r;
        ret->state = daytona_json_state(s.state);
        if (ret->state == SANDBOX_RUN_MISSING) {
                provider_errf(ret_err, "daytona: inspect: sandbox %s is %s", ref, s.state);
                return -ENOENT;
        }
        snprintf(ret->sandbox_id, sizeof(ret->sandbox_id), "%s", s.sandbox_id);
        snprintf(ret->prefix, sizeof(ret->prefix), "%s", s.prefix);
        snprintf(ret->ref, sizeof(ret->ref), "%s", s.id);
        return 0;
}

/* GET /sandbox filtered by our managed label, page by page (nextCursor). */
static int list_pages(struct daytona *d, int max_pages,
                      void (*fn)(void *ud, const struct sandbox_info *info), void *ud,
                      const char *what, char *ret_err)
{
        static const char labels[] = "{\"" PROVIDER_LABEL_MANAGED "\":\"1\"}";
        char cursor[512] = "";
        int r = 0;

        for (int page = 0; page < max_pages; page++) {
                struct http_buf resp = { 0 };
                char *url = cursor[0]
                        ? url_fmt(d->base, "/sandbox?limit=" DAYTONA_LIST_PAGE "&labels=%s&cursor=%s",
                                  labels, cursor)
                        : url_fmt(d->base, "/sandbox?limit=" DAYTONA_LIST_PAGE "&labels=%s", labels,
                                  NULL);

                r = api_call(d, "GET", url, NULL, DAYTONA_LIST_MAX, &resp, what, ret_err);
                if (r == 0) {
                        r = daytona_json_parse_list(resp.data, fn, ud, cursor, sizeof(cursor));
                        if (r < 0)
                                provider_errf(ret_err, "daytona: %s: malformed ListSandboxesResponse", what);
                }
                http_buf_release(&resp);
                if (r < 0 || !cursor[0])
                        return r;
        }
        return r;
}

static int daytona_list_managed(struct provider *p,
                                void (*fn)(void *ud, const struct sandbox_info *info), void *ud,
                                char *ret_err)
{
        return list_pages(impl(p), DAYTONA_LIST_PAGES, fn, ud, "list", ret_err);
}

static void ignore_info(void *ud, const struct sandbox_info *info)
{
        (void)ud;
        (void)info;
}

/* One page of our sandboxes: the URL, the key and the organization work. */
static int daytona_ping(struct provider *p, char *ret_err)
{
        return list_pages(impl(p), 1, ignore_info, NULL, "ping", ret_err);
}

/* ---- toolbox ---- */

/* {toolboxProxyUrl}/{id} of ref into d->cache_url. */
static int toolbox_base(struct daytona *d, const char *ref, char *ret_err)
{
        struct daytona_sandbox s;
        char *id = NULL;
        size_t n;
        int r;

        if (d->cache_ref[0] && strcmp(d->cache_ref, ref) == 0)
                return 0;
        d->cache_ref[0] = '\0';
        r = sandbox_get(d, ref, &s, "toolbox", ret_err);
        if (r < 0)
                return r;
        if (!s.toolbox_url[0] || (strncmp(s.toolbox_url, "http://", 7) != 0 &&
                                  strncmp(s.toolbox_url, "https://", 8) != 0)) {
                provider_errf(ret_err, "daytona: sandbox %s has no usable toolboxProxyUrl", ref);
                return -EPROTO;
        }
        id = http_escape(s.id);
        if (!id) {
                provider_errf(ret_err, "daytona: toolbox: out of memory");
                return -ENOMEM;
        }
        n = strlen(s.toolbox_url);
        while (n > 0 && s.toolbox_url[n - 1] == '/')
                n--;
        snprintf(d->cache_url, sizeof(d->cache_url), "%.*s/%s", (int)n, s.toolbox_url, id);
        snprintf(d->cache_ref, sizeof(d->cache_ref), "%s", ref);
        free(id);
        return 0;
}

/* Upload data as the file `path` (toolbox POST /files/upload). */
static int file_upload(struct daytona *d, const char *ref, const char *path, const void *data,
                       size_t len, char *ret_err)
{
        struct daytona_part part = { .name = "file", .filename = "data", .data = data, .len = len };
        struct daytona_request req = { .method = "POST", .part = &part,
                                       .timeout_ms = d->timeout_ms, .max_resp = DAYTONA_RESP_MAX };
        char *url;
        int r;

        r = toolbox_base(d, ref, ret_err);
        if (r < 0)
                return r;
        url = url_fmt(d->cache_url, "/files/upload?path=%s", path, NULL);
        req.url = url;
        r = call(d, &req, NULL, "file upload", ret_err);
        free(url);
        return r;
}

static void file_delete(struct daytona *d, const char *path)
{
        char ignored[PROVIDER_ERR_MAX];

        api_call(d, "DELETE", url_fmt(d->cache_url, "/files?path=%s", path, NULL), NULL,
                 DAYTONA_RESP_MAX, NULL, "file delete", ignored);
}

/* Which user the wrapper switches to: none when the toolbox already runs as
 * the wanted one; any when it runs as root; else the exec cannot be done. */
static int exec_user(struct daytona *d, const char *user, const char **ret, char *ret_err)
{
        *ret = NULL;
        if (!user || !user[0] || strcmp(user, d->user) == 0)
                return 0;
        if (strcmp(d->user, "root") == 0) {
                *ret = user;
                return 0;
        }
        provider_errf(ret_err, "daytona: exec as %s: the toolbox runs as %s and Daytona cannot switch "
                   "users (DAYTONA_USER=root allows it)", user, d->user);
        return -EPERM;
}

static size_t exec_resp_max(size_t max_output)
{
        /* Two base64 streams, 76-column lines, JSON-escaped newlines. */
        size_t b64 = (max_output + 2) / 3 * 4;

        return 2 * (b64 + b64 / 76 * 2 + 4) + 64 * 1024;
}

static int daytona_exec(struct provider *p, const char *ref, const struct exec_spec *spec,
                        struct exec_result *ret, char *ret_err)
{
        struct daytona *d = impl(p);
        struct http_buf resp = { 0 };
        struct daytona_exec_wrap w = { 0 };
        struct daytona_request req = { .method = "POST" };
        char nonce[33], stdin_path[80] = "", *cmd = NULL, *body = NULL, *url = NULL, *result = NULL;
        size_t result_len = 0;
        int exit_code, grace, r = -EINVAL;
        int64_t t0;

        memset(ret, 0, sizeof(*ret));
        ret->exit_code = -1;
        if (!spec->argv || !spec->argv[0] || spec->timeout_ms <= 0) {
                provider_errf(ret_err, "daytona: exec: argv and a positive timeout are required");
                goto out;
        }
        r = exec_user(d, spec->user, &w.run_as, ret_err);
        if (r < 0)
                goto out;
        r = timeutil_random_id(nonce, sizeof(nonce));
        if (r < 0)
                goto out;
        r = toolbox_base(d, ref, ret_err);
        if (r < 0)
                goto out;
        if (spec->stdin_data) {
                /* The toolbox's execute has no stdin: stage it as a file the
                 * wrapper reads and removes. */
                snprintf(stdin_path, sizeof(stdin_path), STDIN_DIR "/.sb-stdin-%.16s", nonce + 16);
                r = file_upload(d, ref, stdin_path, spec->stdin_data, spec->stdin_len, ret_err);
                if (r < 0) {
                        stdin_path[0] = '\0';
                        goto out;
                }
        }
        w.nonce = nonce;
        w.timeout_ms = spec->timeout_ms;
        w.max_output = spec->max_output;
        w.stdin_path = stdin_path[0] ? stdin_path : NULL;
        r = daytona_exec_command(spec->argv, &w, &cmd);
        if (r == 0)
                r = daytona_json_exec_body(cmd, spec->env, spec->cwd,
                                           (spec->timeout_ms + 999) / 1000 + DAYTONA_EXEC_GRACE_MS / 1000,
                                           &body);
        if (r < 0) {
                provider_errf(ret_err, "daytona: exec: %s", r == -EINVAL ? "env entries must be K=V" : "out of memory");
                goto out;
        }
        url = url_fmt(d->cache_url, "/process/execute", NULL, NULL);
        grace = DAYTONA_EXEC_GRACE_MS + (d->timeout_ms < 10000 ? d->timeout_ms : 10000);
        req.url = url;
        req.json = body;
        req.timeout_ms = spec->timeout_ms + grace;
        req.max_resp = exec_resp_max(spec->max_output);
        t0 = timeutil_mono_ms();
        r = call(d, &req, &resp, "exec", ret_err);
        if (r == -ETIMEDOUT) {
                /* Our wrapper did not end it in time (the toolbox hangs):
                 * report a timeout, as Docker's provider does. */
                ret->timed_out = true;
                r = 0;
                goto out;
        }
        if (r < 0)
                goto out;
        r = daytona_json_parse_exec(resp.data, &exit_code, &result, &result_len);
        if (r < 0) {
                provider_errf(ret_err, "daytona: exec: malformed ExecuteResponse");
                r = r == -ENOMEM ? r : -EPROTO;
                goto out;
        }
        r = daytona_exec_decode(result, result_len, nonce, spec->max_output, ret);
        if (r < 0) {
                provider_errf(ret_err, "daytona: exec: the command wrapper did not run (exit %d; the "
                           "snapshot needs sh and coreutils): %.120s", exit_code, result);
                goto out;
        }
        stdin_path[0] = '\0'; /* the wrapper removed it */
        /* 137 is also an OOM kill: only count it near the deadline. */
        if (ret->exit_code == DAYTONA_TIMEOUT_KILLED &&
            timeutil_mono_ms() - t0 >= (int64_t)spec->timeout_ms - 1000)
                ret->timed_out = true;
out:
        if (r < 0) {
                if (stdin_path[0])
                        file_delete(d, stdin_path);
                if (r != -EPERM && r != -EINVAL)
                        d->cache_ref[0] = '\0'; /* the URL may be what failed */
                exec_result_free(ret);
                ret->exit_code = -1;
        }
        http_buf_release(&resp);
        free(result);
        free(url);
        free(body);
        free(cmd);
        return r;
}

/* A command whose output is not needed; failure unless it exits 0. */
static int exec_simple(struct daytona *d, struct provider *p, const char *ref,
                       const char *const *argv, size_t max_output, struct exec_result *res,
                       const char *what, char *ret_err)
{
        struct exec_spec spec = { .argv = argv, .timeout_ms = d->timeout_ms, .max_output = max_output };
        int r = daytona_exec(p, ref, &spec, res, ret_err);

        if (r == 0 && res->exit_code != 0) {
                const char *e = res->err ? res->err : "";

                r = strstr(e, "No such file") || strstr(e, "Not a directory") ? -ENOENT : -EREMOTEIO;
                provider_errf(ret_err, "daytona: %s: exit %d: %.160s", what, res->exit_code, e);
        }
        return r;
}

/* put/get_archive: Daytona's toolbox moves single files, our interface
 * moves tar streams; so the tar itself is uploaded and unpacked in the
 * sandbox, and made there for a download (the wrapper's base64 keeps it
 * byte-exact). Needs tar in the snapshot. */
static int daytona_put_archive(struct provider *p, const char *ref, const char *dir,
                               const void *tar, size_t len, char *ret_err)
{
        struct daytona *d = impl(p);
        struct exec_result res = { 0 };
        char nonce[33], path[80];
        int r;

        r = timeutil_random_id(nonce, sizeof(nonce));
        if (r < 0)
                return r;
        snprintf(path, sizeof(path), STDIN_DIR "/.sb-tar-%.16s", nonce);
        r = file_upload(d, ref, path, tar, len, ret_err);
        if (r < 0)
                return r;
        const char *argv[] = { "sh", "-c", "tar -xf \"$1\" -C \"$2\"; r=$?; rm -f -- \"$1\"; exit $r",
                               "sh", path, dir, NULL };
        r = exec_simple(d, p, ref, argv, 4096, &res, "put archive", ret_err);
        exec_result_free(&res);
        return r;
}

static int daytona_get_archive(struct provider *p, const char *ref, const char *path,
                               size_t max_len, void **ret_tar, size_t *ret_len, char *ret_err)
{
        struct daytona *d = impl(p);
        struct exec_result res = { 0 };
        int r;

        *ret_tar = NULL;
        *ret_len = 0;
        const char *argv[] = { "sh", "-c", "cd -- \"$(dirname -- \"$1\")\" && tar -cf - -- \"$(basename -- \"$1\")\"",
                               "sh", path, NULL };
        r = exec_simple(d, p, ref, argv, max_len, &res, "get archive", ret_err);
        if (r == 0 && res.out_truncated) {
                provider_errf(ret_err, "daytona: get archive: %s is over %zu bytes", path, max_len);
                r = -EFBIG;
        }
        if (r == 0) {
                *ret_tar = res.out;
                *ret_len = res.out_len;
                res.out = NULL;
        }
        exec_result_free(&res);
        return r;
}

static void daytona_free(struct provider *p)
{
        struct daytona *d = impl(p);

        if (d) {
                daytona_api_free(d->api);
                free(d->base);
                free(d->target);
                free(d->user);
        }
        free(d);
        free(p);
}

static const struct provider_ops daytona_ops = {
        .name = "daytona",
        .create = daytona_create,
        .start = daytona_start,
        .stop = daytona_stop,
        .pause = daytona_pause,
        .resume = daytona_resume,
        .remove = daytona_remove,
        .exec = daytona_exec,
        .inspect = daytona_inspect,
        .list_managed = daytona_list_managed,
        .put_archive = daytona_put_archive,
        .get_archive = daytona_get_archive,
        .ping = daytona_ping,
        .free = daytona_free,
};

int daytona_provider_new(const struct daytona_settings *s, struct provider **ret)
{
        struct provider *p = NULL;
        struct daytona *d = NULL;
        size_t n;
        int r = -EINVAL;

        if (!s->api_url || (strncmp(s->api_url, "http://", 7) && strncmp(s->api_url, "https://", 8)) ||
            s->timeout_ms <= 0 || s->poll_max_ms <= 0)
                goto out;
        r = -ENOMEM;
        p = calloc(1, sizeof(*p));
        d = calloc(1, sizeof(*d));
        if (!p || !d)
                goto out;
        n = strlen(s->api_url);
        while (n > 0 && s->api_url[n - 1] == '/')
                n--;
        d->base = strndup(s->api_url, n);
        d->target = strdup(s->target ? s->target : "");
        d->user = strdup(s->user && s->user[0] ? s->user : "root");
        if (!d->base || !d->target || !d->user)
                goto out;
        r = daytona_api_new(s->api_key, s->org_id, &d->api);
        if (r < 0)
                goto out;
        d->timeout_ms = s->timeout_ms;
        d->poll_max_ms = s->poll_max_ms;
        d->auto_stop_min = s->auto_stop_min;
        d->auto_delete_min = s->auto_delete_min;
        p->ops = &daytona_ops;
        p->impl = d;
        d = NULL;
        r = 0;
out:
        if (d) {
                free(d->base);
                free(d->target);
                free(d->user);
                free(d);
                free(p);
                p = NULL;
        } else if (r < 0) {
                free(p);
                p = NULL;
        }
        *ret = p;
        return r;
}

int daytona_provider_from_config(const struct broker_config *cfg, struct provider **ret)
{
        struct daytona_settings s = {
                .api_url = cfg->daytona_api_url,
                .api_key = cfg->daytona_api_key,
                .org_id = cfg->daytona_org_id,
                .target = cfg->daytona_target,
                .user = cfg->daytona_user,
                .timeout_ms = cfg->daytona_timeout_ms,
                .poll_max_ms = cfg->daytona_poll_max_ms,
                .auto_stop_min = cfg->daytona_auto_stop_min,
                .auto_delete_min = (int)(((long)cfg->idle_keep_ms + 59999) / 60000),
        };

        return daytona_provider_new(&s, ret);
}

/* create and start are one call and then a wait for the state, at most
 * poll_max_ms (daytona.h) */
static int daytona_deadline_ms(const struct broker_config *cfg)
{
        return cfg->daytona_timeout_ms + cfg->daytona_poll_max_ms;
}

const struct provider_backend daytona_backend = {
        .name = "daytona",
        .new_from_config = daytona_provider_from_config,
        .deadline_ms = daytona_deadline_ms,
};
