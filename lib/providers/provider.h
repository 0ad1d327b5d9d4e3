/* provider: the one interface between the broker and a sandbox backend
 * (Docker and Daytona today, Kubernetes later: each is one implementation
 * of struct provider_ops, in its own folder, named in the factory,
 * provider_factory.h; docs/PROVIDERS.md).
 *
 * Callers outside lib/providers/ never call p->ops->... themselves: they
 * use the facade below (provider_exec, provider_exec_stream, provider_start,
 * ...), which owns the call, carries the buffered fallback for backends
 * without streaming, and maps a failure to an API error in one place
 * (provider_api_error).
 *
 * Every call is bounded by a timeout and returns 0 or a negative errno:
 *   -ENOENT     the sandbox (or a file in it) does not exist
 *   -ETIMEDOUT  the backend did not answer in time
 *   -EIO        the backend answered with an error (message in ret_err)
 *   -ECONNREFUSED the backend is unreachable
 *   -EFBIG      a size cap was hit
 *   -EBUSY      conflict with the sandbox's state (name in use, not running,
 *               paused): Docker's 409
 *   -EINVAL     a malformed request (no image, empty argv, timeout_ms <= 0)
 * Provider code does not log (except debug); callers log with context. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/api_error.h"

#define PROVIDER_ERR_MAX 256
#define PROVIDER_REF_MAX 80 /* backend's id of a sandbox (container id) */

/* Labels that tie a backend object to its broker record; every managed
 * sandbox carries them so a reconciler can find orphans. */
#define PROVIDER_LABEL_MANAGED "io.sandbox-broker.managed"
#define PROVIDER_LABEL_SANDBOX "io.sandbox-broker.sandbox-id"
#define PROVIDER_LABEL_PREFIX "io.sandbox-broker.prefix"
#define PROVIDER_LABEL_AGENT "io.sandbox-broker.agent" /* "1": sandbox-agent is PID 1;
                                                    * "dial": it dials the host relay */
/* MiB of the sandbox's disk (sandbox_limits.disk_mb); absent: none */
#define PROVIDER_LABEL_DISK "io.sandbox-broker.disk-mb"
/* Labels of a snapshot's image (docs/OPENSANDBOX.md, "Snapshots"): which
 * snapshot, of which sandbox, of which tenant; with PROVIDER_LABEL_PREFIX. */
#define PROVIDER_LABEL_SNAPSHOT "io.sandbox-broker.snapshot-id"
#define PROVIDER_LABEL_SNAPSHOT_OF "io.sandbox-broker.snapshot-of"
#define PROVIDER_LABEL_TENANT "io.sandbox-broker.tenant"
/* Labels of a tenant's named volume (volume.h): its tenant and its name as
 * the tenant knows it; PROVIDER_LABEL_SANDBOX is the sandbox that made it. */
#define PROVIDER_LABEL_VOLUME "io.sandbox-broker.volume"

struct sandbox_limits {
        int64_t nano_cpus;    /* 1e9 = one CPU */
        int64_t memory_bytes;
        int64_t pids;
        /* MiB of the sandbox's own disk: everything it writes to its root
         * filesystem (Docker: its writable layer on a loop-mounted image of
         * this size, docs/OPERATIONS.md "Host bounds"); 0 = no disk of its
         * own (unbounded: SANDBOX_DISK_MB=0). create only: update_limits
         * cannot change it */
        int64_t disk_mb;
};

/* Registry credentials for one pull (OpenSandbox's image.auth). Held in
 * memory for the call only: never logged, stored or put in a message. */
struct image_auth {
        const char *username;
        const char *password;
};

/* Progress of an image pull: msg is one line ("pulling image: 3/5 layers"). */
struct image_pull_cb {
        void (*on_progress)(void *ud, const char *msg);
        void *ud;
};

/* A mount of a sandbox (OpenSandbox volumes, volume.h): a host directory
 * (bind; source an absolute path the broker resolved and checked) or a
 * named volume of the backend (source its backend name). */
enum sandbox_mount_kind { SANDBOX_MOUNT_BIND, SANDBOX_MOUNT_VOLUME };

struct sandbox_mount {
        enum sandbox_mount_kind kind;
        const char *source;
        const char *target;   /* absolute path in the sandbox */
        bool read_only;
};

/* A named volume of the backend, as volume_create makes it and
 * volume_list/volume_inspect read it back (the labels above). */
struct volume_info {
        char name[128];       /* the backend's name */
        char prefix[64];      /* PROVIDER_LABEL_PREFIX */
        char tenant[130];     /* PROVIDER_LABEL_TENANT */
        char volume[64];      /* PROVIDER_LABEL_VOLUME */
        char sandbox_id[64];  /* PROVIDER_LABEL_SANDBOX: the sandbox it was made for */
        char created_at[40];  /* the backend's timestamp, as it gives it */
        bool managed;         /* PROVIDER_LABEL_MANAGED */
};

struct sandbox_spec {
        const char *sandbox_id;          /* our id: labels and the container name */
        const char *key_prefix;          /* REDIS_KEY_PREFIX: which broker owns it */
        const char *image;
        const char *const *env;          /* "K=V", NULL-terminated, may be NULL */
        const char *const *entrypoint;   /* argv, NULL-terminated; NULL = keep-alive default */
        const char *workdir;
        const char *network;             /* "none" unless policy allows more */
        const char *runtime;             /* Docker: OCI runtime (HostConfig.Runtime, SANDBOX_RUNTIME);
                                          * NULL or "" = dockerd's default; others ignore it */
        /* Docker: more arguments of the sandbox-agent, before its "--"
         * (the periodic lifecycle hooks' "--hook SPEC" pairs, lifecycle.h);
         * NULL-terminated, may be NULL */
        const char *const *agent_args;
        bool agent_dials;                /* Docker: the sandbox-agent dials the host relay
                                          * instead of listening (a runtime whose sandbox the
                                          * host cannot connect into, config_runtime_dials;
                                          * docs/AGENT.md, "Transports") */
        struct sandbox_limits limits;
        /* A missing image is pulled when the backend's allowlist lets it
         * (image_ensure); these may be NULL. */
        const struct image_auth *image_auth;
        const struct image_pull_cb *pull_cb;
        /* Volumes (n_mounts of them; a backend without volume ops refuses
         * any with -EINVAL). */
        const struct sandbox_mount *mounts;
        size_t n_mounts;
};

/* A snapshot to make of a sandbox: image is the name the broker chose
 * (never a client's), the rest go into its labels. */
struct snapshot_spec {
        const char *image;       /* "repository:tag" */
        const char *snapshot_id;
        const char *sandbox_id;  /* the source */
        const char *tenant;
        const char *key_prefix;
        int timeout_ms;          /* the whole commit */
        long long max_bytes;     /* > 0: a backend that can tell the size before
                                  * saving refuses a larger one (-EFBIG, the size
                                  * in *ret_size) without saving it */
};

/* A snapshot's image as the backend lists it (ops->snapshot_list): its
 * own id and the labels that tie it to a snapshot record. */
#define PROVIDER_IMAGE_ID_MAX 80
struct snapshot_image {
        char id[PROVIDER_IMAGE_ID_MAX]; /* the backend's ("sha256:...") */
        char snapshot_id[64];           /* PROVIDER_LABEL_SNAPSHOT */
        char prefix[64];                /* PROVIDER_LABEL_PREFIX */
        char name[160];                 /* its one name ("repo:tag"); "" untagged, or with */
        int names;                      /* several names (their number) */
};

struct exec_spec {
        const char *const *argv;  /* NULL-terminated */
        const char *const *env;   /* "K=V", may be NULL */
        const char *cwd;          /* may be NULL */
        const char *user;         /* Linux user, may be NULL (image default) */
        int timeout_ms;           /* the command is killed after this */
        size_t max_output;        /* per stream; the rest is drained and dropped */
        const void *stdin_data;   /* may be NULL */
        size_t stdin_len;
        /* exec only: start the command and return at once, without waiting
         * or output (exit_code -1); the backend reaps it. timeout_ms then
         * bounds only the start, not the command. */
        bool detach;
        /* With detach: start the command as the sandbox's entrypoint, its
         * main process (a warm-pool member that gets its create's
         * entrypoint late): the sandbox-agent adopts it (docs/AGENT.md,
         * POST /entrypoint), so that its exit ends the sandbox; a backend
         * without the agent starts it as a detached command. -EALREADY
         * when the sandbox has its entrypoint already (an earlier start
         * whose answer was lost: its caller died). */
        bool entrypoint;
        /* May be NULL. The same command in the form a backend that runs
         * commands itself (sandbox-agent) takes instead of argv, cwd and
         * timeout_ms: it then keeps the command's state files too
         * (struct exec_record). Other backends ignore it and run argv. */
        const struct exec_record *record;
        /* A user's command (not a helper of the broker's): a backend that
         * runs commands itself (sandbox-agent) loads the sandbox's env file
         * (EXECD_ENVS, the SDK's set_env) into its environment, under env.
         * Other backends ignore it (docs/EXECD.md, "set_env"). */
        bool env_file;
        /* A seat's command (a multi_user_shared lease's user): a backend that
         * runs commands itself (sandbox-agent) runs it with umask 077 and
         * TMPDIR a directory only that user can enter, or not at all
         * (docs/AGENT.md, "Seats"). Other backends ignore it. */
        bool seat;
        /* The command lives only as long as this call's connection: a
         * backend that runs commands itself (sandbox-agent) kills it, and
         * what it started, when the caller goes away before the command's
         * end has reached it (a handler killed mid-stream). Other backends
         * ignore it: their command runs on. */
        bool kill_on_hangup;
};

/* A command whose state the backend keeps in files of the sandbox,
 * path.{cmd,start,pid,rc,end} (as the execd runner script does: the
 * command text, epoch ms of its start, its process group, its exit code,
 * epoch ms of its end). argv is the command, or with shell its one shell
 * text (run by bash, or sh without bash). A cwd that does not exist is
 * exit code 1 with the reason on stderr. */
struct exec_record {
        const char *path;
        const char *const *argv;
        bool shell;
        const char *cwd;
        int timeout_ms; /* 0: none */
};

/* Callbacks of exec_stream. on_output gets the command's output as it
 * arrives, in order (stream 1 = stdout, 2 = stderr; pieces of any size,
 * not split at lines); on_tick (may be NULL) is called about once a second
 * while waiting. A negative return of either aborts the transfer (the
 * command is not killed: that is the caller's) and is returned. */
struct exec_stream_cb {
        int (*on_output)(void *ud, int stream, const char *data, size_t len);
        int (*on_tick)(void *ud);
        void *ud;
};

/* Where the bytes of a file read go (ops->read_file). on_data gets them in
 * pieces. on_fd (may be NULL) may take them instead without their being
 * read into memory (a download splices them to its client): up to max
 * bytes of the file that are queued on fd, a nonblocking socket; it
 * returns the count taken, 0 at fd's end, -EAGAIN when none is there yet,
 * -EOPNOTSUPP when it cannot now (they then go to on_data), or another
 * negative errno, which aborts the read and is returned. */
struct file_read_cb {
        int (*on_data)(void *ud, const char *data, size_t n);
        ssize_t (*on_fd)(void *ud, int fd, size_t max);
        void *ud;
};

struct exec_result {
        int exit_code;            /* -1 if unknown */
        bool timed_out;
        char *out, *err;          /* NUL-terminated, owned (exec_result_free) */
        size_t out_len, err_len;
        bool out_truncated, err_truncated;
};

enum sandbox_run_state { SANDBOX_RUN_MISSING, SANDBOX_RUN_CREATED, SANDBOX_RUN_RUNNING,
                         SANDBOX_RUN_PAUSED, SANDBOX_RUN_EXITED };

struct sandbox_info {
        enum sandbox_run_state state;
        char sandbox_id[64]; /* from the labels; "" if none */
        char prefix[64];
        char ref[PROVIDER_REF_MAX];
        bool agent;    /* runs sandbox-agent (Docker: PROVIDER_LABEL_AGENT) */
        bool agent_dials; /* and it dials the host relay (label "dial") */
        int exit_code; /* SANDBOX_RUN_EXITED: the entrypoint's code (inspect, events) */
        bool oom_killed; /* the kernel's OOM killer ended it (inspect only) */
};

/* What a backend's event stream reports of a sandbox (ops->watch_events). */
enum sandbox_event_kind {
        SANDBOX_EVENT_EXITED,   /* stopped running: its entrypoint ended, it was killed or stopped */
        SANDBOX_EVENT_PAUSED,   /* frozen (Docker: pause) */
        SANDBOX_EVENT_UNPAUSED, /* running again after a pause */
        SANDBOX_EVENT_OOM,      /* hit its memory limit: the kernel killed a process in it */
};

struct sandbox_event {
        enum sandbox_event_kind kind;
        struct sandbox_info info; /* sandbox_id, prefix, ref; exit_code of EXITED (-1: unknown) */
};

/* A read of a sandbox's output (ops->logs). */
struct logs_spec {
        int tail;          /* lines, > 0 */
        size_t max_bytes;  /* > 0 */
        int timeout_ms;
};

/* What ops->logs read: bytes as the sandbox wrote them (not NUL-free, not
 * UTF-8 checked), whole lines but for a last one still being written and
 * a single line longer than max_bytes (its end kept). */
struct sandbox_logs {
        char *data;      /* malloc'd, NUL-terminated; never NULL after a success */
        size_t len;
        bool truncated;  /* lines or bytes of the output were left out (the caps) */
};

struct provider;

struct provider_ops {
        const char *name;
        /* Create (not start) a sandbox; *ret_ref gets the backend id. */
        int (*create)(struct provider *p, const struct sandbox_spec *spec, char *ret_ref,
                      char *ret_err);
        int (*start)(struct provider *p, const char *ref, char *ret_err);
        int (*stop)(struct provider *p, const char *ref, char *ret_err);
        int (*pause)(struct provider *p, const char *ref, char *ret_err);
        int (*resume)(struct provider *p, const char *ref, char *ret_err);
        /* Remove, forcibly; -ENOENT if it was already gone. */
        int (*remove)(struct provider *p, const char *ref, char *ret_err);
        int (*exec)(struct provider *p, const char *ref, const struct exec_spec *spec,
                    struct exec_result *ret, char *ret_err);
        /* Optional (NULL if the backend cannot): exec with the output streamed
         * to cb instead of buffered. spec as for exec (max_output and detach
         * unused); ret gets exit_code and timed_out, no output. */
        int (*exec_stream)(struct provider *p, const char *ref, const struct exec_spec *spec,
                           const struct exec_stream_cb *cb, struct exec_result *ret,
                           char *ret_err);
        int (*inspect)(struct provider *p, const char *ref, struct sandbox_info *ret,
                       char *ret_err);
        /* Call fn for every sandbox this backend holds with the managed label. */
        int (*list_managed)(struct provider *p,
                            void (*fn)(void *ud, const struct sandbox_info *info), void *ud,
                            char *ret_err);
        /* Copy a tar stream (libarchive-made) into dir / out of path. */
        int (*put_archive)(struct provider *p, const char *ref, const char *dir,
                           const void *tar, size_t len, char *ret_err);
        int (*get_archive)(struct provider *p, const char *ref, const char *path,
                           size_t max_len, void **ret_tar, size_t *ret_len, char *ret_err);
        int (*ping)(struct provider *p, char *ret_err);
        /* Optional (NULL if the backend cannot): follow the backend's events
         * and call on_event for every sandbox of key prefix `prefix` that
         * stops running (its entrypoint ended, it was killed or stopped;
         * with its exit code), is paused or unpaused, or runs out of memory,
         * as it happens; until stop(ud) (asked about once a second) says
         * true (returns 0) or the stream breaks (a negative errno: the
         * caller follows again, and reconciles what it missed). */
        int (*watch_events)(struct provider *p, const char *prefix,
                            void (*on_event)(void *ud, const struct sandbox_event *ev),
                            bool (*stop)(void *ud), void *ud, char *ret_err);
        /* Optional (NULL if the backend cannot): read path inside the
         * sandbox from offset (>= 0), len bytes (-1: to the end), handed to
         * cb->on_data in pieces as they come, or taken by cb->on_fd where
         * both can (first, when the backend knows it, on_data(ud, NULL,
         * number of bytes that follow) once; a
         * negative return aborts and is
         * returned; bytes handed over before a later failure are the
         * caller's to discard). Errors: -ENOENT no such file (not "no
         * sandbox"), -EISDIR a directory or not a regular file, -EACCES
         * permission, -EOPNOTSUPP this sandbox cannot (the caller falls
         * back to a command), -EIO, -ETIMEDOUT. */
        int (*read_file)(struct provider *p, const char *ref, const char *path, int64_t offset,
                         int64_t len, const struct file_read_cb *cb, int timeout_ms,
                         char *ret_err);
        /* Optional (NULL if the backend cannot): write len bytes of data to
         * path inside the sandbox (missing parents made, mode 0755),
         * created or truncated, or appended to with append. mode < 0: a
         * new file gets 0644, an existing one keeps its mode; else the
         * permission bits (<= 07777). uid and gid both >= 0: the owner (of
         * the parents it makes too), else unchanged. Errors: -EISDIR path
         * is a directory or not a regular file, -ENOENT a parent cannot be
         * made, -EACCES permission, -EFBIG a size cap, -EINVAL a bad mode,
         * -EOPNOTSUPP this sandbox cannot, -EIO, -ETIMEDOUT. */
        int (*write_file)(struct provider *p, const char *ref, const char *path, const void *data,
                          size_t len, int mode, int64_t uid, int64_t gid, bool append,
                          int timeout_ms, char *ret_err);
        /* Optional: make image present, pulling it when missing and the
         * backend's allowlist (IMAGE_ALLOW) lets it, within timeout_ms.
         * auth and cb may be NULL. Errors: -EPERM not allowed to pull,
         * -EACCES the registry refused the credentials, -ENOENT no such
         * image, -ETIMEDOUT, -EIO; ret_err never holds the password. */
        int (*image_ensure)(struct provider *p, const char *image, const struct image_auth *auth,
                            int timeout_ms, const struct image_pull_cb *cb, char *ret_err);
        /* Optional: change a created sandbox's resource limits in place
         * (Docker: POST /containers/{id}/update); a field <= 0 is left. */
        int (*update_limits)(struct provider *p, const char *ref, const struct sandbox_limits *l,
                             char *ret_err);
        /* Optional (NULL if the backend cannot): save the filesystem of
         * sandbox ref as image spec->image (paused meanwhile), labelled
         * from spec; *ret_size gets the image's size in bytes (-EFBIG
         * and the size: over spec->max_bytes, nothing saved). Mounts
         * (the agent's binary and run directory, egress) are not part of
         * it. A sandbox made from the image gets its own agent. */
        int (*snapshot_create)(struct provider *p, const char *ref, const struct snapshot_spec *spec,
                               int64_t *ret_size, char *ret_err);
        /* Optional, with snapshot_create: remove image (its name); -ENOENT
         * when it is gone. An image a sandbox still runs from loses its
         * name only; its layers go with the last such sandbox. */
        int (*snapshot_delete)(struct provider *p, const char *image, char *ret_err);
        /* Optional, with snapshot_create: call fn for every image of key
         * prefix `prefix` labelled as a snapshot's (an untagged one too), and
         * remove one by its id unless a sandbox (or another image) still
         * uses it (-EBUSY: it stays; -ENOENT: gone). For the reconciler,
         * which removes the images of snapshots that failed or are gone. */
        int (*snapshot_list)(struct provider *p, const char *prefix,
                             void (*fn)(void *ud, const struct snapshot_image *im), void *ud,
                             char *ret_err);
        int (*snapshot_prune)(struct provider *p, const char *id, char *ret_err);
        /* Optional (all four NULL if the backend has no named volumes):
         * make the volume v->name with v's labels (-EBUSY if the name is
         * taken); read one back (-ENOENT none); call fn for every managed
         * volume of key prefix `prefix` and tenant; remove one (-EBUSY in
         * use by a sandbox, -ENOENT none). */
        int (*volume_create)(struct provider *p, const struct volume_info *v, char *ret_err);
        int (*volume_inspect)(struct provider *p, const char *name, struct volume_info *ret,
                              char *ret_err);
        int (*volume_list)(struct provider *p, const char *prefix, const char *tenant,
                           void (*fn)(void *ud, const struct volume_info *v), void *ud,
                           char *ret_err);
        int (*volume_remove)(struct provider *p, const char *name, char *ret_err);
        /* Optional: the name of the directory under AGENT_DIR that holds
         * ref's agent socket, for sandbox-ingress (docs/INGRESS.md), into
         * buf. -EOPNOTSUPP when this sandbox has no agent. */
        int (*agent_dir_name)(struct provider *p, const char *ref, char *buf, size_t size,
                              char *ret_err);
        /* Optional: the id of the image that image (a name or tag) names
         * now, into ret_id (PROVIDER_IMAGE_ID_MAX), so that a re-tag can be
         * noticed. -ENOENT when it is not on the host. */
        int (*image_id)(struct provider *p, const char *image, char *ret_id, char *ret_err);
        /* Optional: remove what the backend keeps on the host for sandboxes
         * that have no container any more (Docker: run directories, etc
         * directories, disk images: docker_reap.h); how many into
         * *ret_count. For the reconciler. */
        int (*reap_orphans)(struct provider *p, int *ret_count, char *ret_err);
        /* Optional (NULL where the broker reads no output from the backend):
         * what the sandbox's main process wrote to stdout and stderr, as
         * the backend keeps it (Docker: the container's log), each stream
         * in order (their interleaving is the backend's): its last
         * spec->tail lines, at most spec->max_bytes of them (the newest
         * kept), into *ret (provider_logs_release). -ENOENT: no such
         * sandbox. */
        int (*logs)(struct provider *p, const char *ref, const struct logs_spec *spec,
                    struct sandbox_logs *ret, char *ret_err);
        void (*free)(struct provider *p);
};

struct provider {
        const struct provider_ops *ops;
        void *impl;
};

/* A backend as the factory (provider_factory.c) knows it: each backend
 * folder defines one of these, and the factory lists it on one line. */
struct broker_config;
struct provider_backend {
        const char *name; /* its SANDBOX_PROVIDER value */
        /* Make a provider from the broker's config (no request made yet);
         * *ret is freed with provider_free(). Errors: -EINVAL, -ENOMEM. */
        int (*new_from_config)(const struct broker_config *cfg, struct provider **ret);
        /* The longest one create or one start may take, waits for the
         * target state included (ms): what a provisioning lock must cover. */
        int (*deadline_ms)(const struct broker_config *cfg);
};

void exec_result_free(struct exec_result *r);

/* ---- the facade: what the rest of the broker calls ---- */

/* Does p stream exec output as it comes (ops->exec_stream)? When it does
 * not, provider_exec_stream still works, but hands the output over only at
 * the end; a caller that would answer differently (headers before the
 * bytes) asks here first. */
bool provider_can_stream(const struct provider *p);

/* Run a command, output buffered (spec->max_output per stream), as
 * ops->exec. *ret is filled on success (exec_result_free) and may hold a
 * partial result on failure: free it either way. */
int provider_exec(struct provider *p, const char *ref, const struct exec_spec *spec,
                  struct exec_result *ret, char *ret_err);

/* Run a command with its output handed to cb (see struct exec_stream_cb):
 * streamed by a backend that can (ops->exec_stream); otherwise run buffered
 * (spec->max_output per stream, ret->out_truncated/err_truncated say when
 * cut) and handed to cb at the end, stdout first, and on_tick is never
 * called. ret gets exit_code and timed_out; with the fallback it also
 * holds the buffered output (exec_result_free either way). Returns 0, a
 * provider errno, or the negative return of a callback. */
int provider_exec_stream(struct provider *p, const char *ref, const struct exec_spec *spec,
                         const struct exec_stream_cb *cb, struct exec_result *ret, char *ret_err);

/* ops->watch_events, or -EOPNOTSUPP when the backend has none. */
int provider_watch_events(struct provider *p, const char *prefix,
                          void (*on_event)(void *ud, const struct sandbox_event *ev),
                          bool (*stop)(void *ud), void *ud, char *ret_err);

/* Can p read and write a sandbox's files itself (ops->read_file and
 * ops->write_file)? Even when it says so, one sandbox may not
 * (-EOPNOTSUPP from the calls below: fall back to a command). */
bool provider_has_files(const struct provider *p);

/* ops->read_file (see there), or -EOPNOTSUPP when the backend has none. */
int provider_read_file(struct provider *p, const char *ref, const char *path, int64_t offset,
                       int64_t len, const struct file_read_cb *cb, int timeout_ms, char *ret_err);

/* ops->write_file (see there), or -EOPNOTSUPP when the backend has none. */
int provider_write_file(struct provider *p, const char *ref, const char *path, const void *data,
                        size_t len, int mode, int64_t uid, int64_t gid, bool append,
                        int timeout_ms, char *ret_err);

/* ops->image_ensure (see there), or -EOPNOTSUPP when the backend has none. */
/* ops->agent_dir_name (see there), or -EOPNOTSUPP when the backend has none. */
int provider_agent_dir_name(struct provider *p, const char *ref, char *buf, size_t size,
                            char *ret_err);

int provider_image_ensure(struct provider *p, const char *image, const struct image_auth *auth,
                          int timeout_ms, const struct image_pull_cb *cb, char *ret_err);

/* ops->reap_orphans (see there), or 0 with *ret_count 0 when the backend
 * keeps nothing on the host. */
int provider_reap_orphans(struct provider *p, int *ret_count, char *ret_err);

/* Can p make snapshots (ops->snapshot_create and ->snapshot_delete)? */
bool provider_can_snapshot(const struct provider *p);

/* ops->snapshot_create / ->snapshot_delete (see there), or -EOPNOTSUPP
 * when the backend has none. */
int provider_snapshot_create(struct provider *p, const char *ref, const struct snapshot_spec *spec,
                             int64_t *ret_size, char *ret_err);
int provider_snapshot_delete(struct provider *p, const char *image, char *ret_err);

/* ops->snapshot_list / ->snapshot_prune (see there), or -EOPNOTSUPP when
 * the backend has none. */
int provider_snapshot_list(struct provider *p, const char *prefix,
                           void (*fn)(void *ud, const struct snapshot_image *im), void *ud,
                           char *ret_err);
int provider_snapshot_prune(struct provider *p, const char *id, char *ret_err);

/* The backend's name ("docker", "daytona"), for messages. */
const char *provider_name(const struct provider *p);

/* Can p mount volumes into its sandboxes (host directories and named
 * volumes: the volume_* ops)? */
bool provider_has_volumes(const struct provider *p);

/* The volume_* ops (see there), or -EOPNOTSUPP when the backend has none. */
int provider_volume_create(struct provider *p, const struct volume_info *v, char *ret_err);
int provider_volume_inspect(struct provider *p, const char *name, struct volume_info *ret,
                            char *ret_err);
int provider_volume_list(struct provider *p, const char *prefix, const char *tenant,
                         void (*fn)(void *ud, const struct volume_info *v), void *ud, char *ret_err);
int provider_volume_remove(struct provider *p, const char *name, char *ret_err);

/* Lifecycle of one sandbox, as the ops of the same names; errors above.
 * provider_create writes the backend's id of the new sandbox into ret_ref
 * (PROVIDER_REF_MAX); -EBUSY when its name is taken. */
int provider_create(struct provider *p, const struct sandbox_spec *spec, char *ret_ref,
                    char *ret_err);
int provider_remove(struct provider *p, const char *ref, char *ret_err);
int provider_inspect(struct provider *p, const char *ref, struct sandbox_info *ret, char *ret_err);
int provider_start(struct provider *p, const char *ref, char *ret_err);
int provider_stop(struct provider *p, const char *ref, char *ret_err);
int provider_pause(struct provider *p, const char *ref, char *ret_err);
int provider_resume(struct provider *p, const char *ref, char *ret_err);

/* ops->list_managed: fn for every sandbox the backend holds with the
 * managed label. */
int provider_list_managed(struct provider *p, void (*fn)(void *ud, const struct sandbox_info *info),
                          void *ud, char *ret_err);

/* ops->ping: is the backend there and does it take our credentials
 * (-EACCES when it refuses them)? */
int provider_ping(struct provider *p, char *ret_err);

/* Can p change a created sandbox's limits in place (ops->update_limits)? */
bool provider_can_update_limits(const struct provider *p);

/* ops->update_limits (see there), or -EOPNOTSUPP when the backend has none. */
int provider_update_limits(struct provider *p, const char *ref, const struct sandbox_limits *l,
                           char *ret_err);

/* ops->image_id (see there), or -EOPNOTSUPP when the backend has none. */
int provider_image_id(struct provider *p, const char *image, char *ret_id, char *ret_err);

/* ops->logs (see there), or -EOPNOTSUPP (a reason in ret_err) when the
 * backend has no logs op (Kubernetes, Daytona: not read yet); -EINVAL for
 * a spec without a tail, a byte cap or a timeout. *ret is zeroed first;
 * release it with provider_logs_release, on failure too. */
int provider_logs(struct provider *p, const char *ref, const struct logs_spec *spec,
                  struct sandbox_logs *ret, char *ret_err);
/* Free what provider_logs read and zero l; accepts NULL. */
void provider_logs_release(struct sandbox_logs *l);

/* Does p follow its events (ops->watch_events)? */
bool provider_can_watch_events(const struct provider *p);

/* A failed provider call as an API error, the one mapping every route uses:
 *   -ECONNREFUSED  API_UNAVAILABLE          the backend is unreachable
 *   -ENOENT        API_SANDBOX_NOT_RUNNING  the sandbox is gone
 *   -EBUSY         API_SANDBOX_NOT_RUNNING  not running (stopped, paused)
 *   -ETIMEDOUT     API_SANDBOX_FAILED       the backend timed out
 *   -EOPNOTSUPP    API_NOT_IMPLEMENTED      the backend cannot (err says why)
 *   anything else  API_SANDBOX_FAILED       err, the backend's message
 * Writes "<what>: <why>" into msg (size bytes, always terminated) and
 * returns the error class. err may be NULL or "". */
enum api_error provider_api_error(int r, const char *what, const char *err, char *msg, size_t size);

/* Write a message into ret_err (PROVIDER_ERR_MAX bytes); ret_err may be NULL. */
void provider_errf(char *ret_err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Free a provider; accepts NULL. */
void provider_free(struct provider *p);
