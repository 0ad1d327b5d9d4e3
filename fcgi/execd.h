/* execd: what the data-plane handlers (h_execd_command.c, h_execd_files.c)
 * share: the OpenSandbox execd contract (execd-api.yaml of OpenSandbox;
 * docs/EXECD.md) served by the broker under
 * /v1/sandboxes/{id}/proxy/44772/..., and the egress policy under
 * /v1/sandboxes/{id}/proxy/18080/....
 *
 * A sandbox of the lifecycle API has a record with its state, ref, owner,
 * mode and data-plane token (read through sandbox_execd_lookup, sandbox.h).
 * Every call carries that token in X-EXECD-ACCESS-TOKEN (egress also
 * accepts OPENSANDBOX-EGRESS-AUTH) or an API key of the owner; no
 * credential is 401; an unknown sandbox, one without a token (not an
 * OpenSandbox sandbox), a wrong token or another tenant's key is 404. The sandbox
 * is the caller's alone (exclusive), so commands and file operations run as
 * root (or the uid/gid the request names) anywhere in the container: paths
 * are normalised, never confined, because the container is the boundary. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include "providers/provider.h"
#include "request.h"

/* The file routes again, done as a uid/gid (the SDK's files.with_identity;
 * in no spec: OpenSandbox's execd serves them): the helper programs run as
 * "uid:gid", so the kernel checks every access and what is made is theirs.
 * Both 0..4294967294 (decimal, no sign or leading zero), uid 0 included. */
#define EXECD_IDENTITY_PREFIX "/v1/sandboxes/{}/proxy/44772/v1/filesystem/{}/{}"
#define EXECD_ID_MAX 4294967294LL

#define EXECD_DEFAULT_CWD "/workspace"
#define EXECD_PATH_MAX 4096
#define EXECD_QUERY_BUF (64 * 1024) /* decoded query values of one request */

struct execd {
        char sandbox_id[64];
        char state[24];
        char ref[PROVIDER_REF_MAX];
        char mode[24];
        /* whom the helper programs run as: "root", or "uid:gid" on an
         * identity route (identity true; the providers' fast file paths,
         * which run as root, are then not used) */
        char user[24];
        bool identity;
        char runtime[CONFIG_RUNTIME_MAX]; /* the sandbox's container runtime (config_runtime_of) */
        char tenant[130];                 /* the sandbox's owner (sandbox_execd.tenant) */
        /* "K=V" of the sandbox's create when its container lacks them (a
         * claimed warm-pool member), NULL-terminated; to go before a
         * command's own env. The request's (request_scratch), valid until
         * request_done. */
        const char *const *env;
};

#define EXECD_SANDBOX_ENV_MAX 130 /* entries of execd.env, the NULL included */

/* Resolve the path's sandbox (req->path_arg) and check the token. With
 * need_running, a sandbox that is not Running is 409. On an identity route
 * (EXECD_IDENTITY_PREFIX) the uid and gid (path_arg2, path_arg3) set
 * x->user, a bad one is 400. Replies and returns -1 on any failure. */
int execd_open(struct request *req, struct execd *x, bool need_running);

/* Log fields of a request on x (thread-local storage, valid until the next call). */
const struct log_kv *execd_kv(const struct request *req, const struct execd *x);

/* A provider failure as an API error (logged once, here). */
void execd_reply_provider(struct request *req, const struct execd *x, int r, const char *what,
                          const char *err);

/* Run a helper command as x->user in the sandbox, buffered (max_output bytes
 * per stream), bounded by EXEC_TIMEOUT_MS; stdin may be NULL. Returns 0 with
 * *res filled (exec_result_free), or -1 after replying. */
int execd_run(struct request *req, const struct execd *x, const char *const *argv,
              const void *stdin_data, size_t stdin_len, size_t max_output,
              struct exec_result *res);

/* Kill command id of x and its process group (EXECD_SH_INTERRUPT), as
 * root; known: a foreground command of this process, whose runner may not
 * have written its pid yet (the script waits for it). Does not reply:
 * returns 0 with *res (exit EXECD_X_NOT_FOUND: no such command; free with
 * exec_result_free) or a provider errno with err set. */
/* execd's mode (a Permission's or FileMetadata's "mode": the octal digits
 * written as a decimal number, 755) as the digits, into out; absent or null
 * is def. -EINVAL for anything else. */
struct json_object;
int execd_mode_str(struct json_object *v, const char *def, char *out, size_t size);

/* The "owner"/"group" names of o as chown's "owner[:group]" or ":group"
 * ("" when neither), names checked (no leading '-', [A-Za-z0-9_.-], at
 * most 32). -EINVAL for a non-string or a bad name. */
int execd_owner_str(struct json_object *o, char *out, size_t size);

/* Run spec (the runner, EXECD_SH_RUN, for command id) in x and answer
 * with its output as SSE events (sse.h): init, stdout/stderr lines, then
 * execution_complete or error (evalue the exit code; "-1" when it never
 * ran); a client that goes away has the command killed, and so does this
 * process dying mid-stream (spec's kill_on_hangup is set). to_ms is the
 * runner's timeout (to tell a timeout from a kill); what names it in logs
 * ("command"). Replies in every case (429 when too many stream). With
 * events, the command prints its own events (sse.h, events mode: the code
 * interpreter's kernel-runner) and its last one: an exit 0 adds none, any
 * other end the same error as a command's. Returns -EPIPE when the client
 * went away mid-stream (the command was killed), -EAGAIN when it was
 * refused (429), else 0. In h_execd_command.c; sessions and the code
 * interpreter (h_execd_code.c) use it too. */
int execd_stream_command(struct request *req, const struct execd *x, const char *id,
                         const struct exec_spec *spec, int64_t to_ms, const char *what,
                         bool events);

int execd_command_kill(struct request *req, const struct execd *x, const char *id, bool known,
                       struct exec_result *res, char *err);

/* The percent-decoded values of every query parameter `name`, in order:
 * up to max of them into vals, pointing into buf (size bytes). Returns the
 * count, or -E2BIG (too many or too long), -EINVAL (bad escape or NUL). */
int execd_query_values(const struct request *req, const char *name, const char **vals, int max,
                       char *buf, size_t size);

/* Normalise a client path: relative to EXECD_DEFAULT_CWD, "." and ".."
 * resolved lexically ("/.." stays "/"), no "//", no trailing "/".
 * Returns 0, or -EINVAL (empty), -ENAMETOOLONG (a component over 255
 * bytes, NAME_MAX), -E2BIG (longer than EXECD_PATH_MAX - 1 bytes, or than
 * size once normalised). All are the client's error (400). */
int execd_path_normalize(const char *in, char *out, size_t size);

/* What is wrong with a path execd_path_normalize refused with r, as a
 * clause for an error message ("path: <clause>"); static storage. */
const char *execd_path_strerror(int r);

/* A file program (execd_scripts.h) that exited non-zero, as an API error
 * about path: its EXECD_X_* exit code, or what its stderr says (no such
 * file, permission denied, ...). */
void execd_reply_fs_error(struct request *req, const char *path, const struct exec_result *res);

/* Write the headers of a 200 answer with content_type and optional extra
 * header lines (each ending with CRLF, may be NULL); marks req answered. */
void execd_reply_headers(struct request *req, int status, const char *content_type,
                         const char *extra);
