/* docker_json: the JSON bodies the Docker provider sends and the parts of
 * Docker's answers it reads. Pure (no I/O), so unit tests and fuzzers can
 * drive it. Docker API reference: https://docs.docker.com/engine/api/v1.41/ */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include "providers/provider.h"

/* Capabilities root in a sandbox keeps (all others are dropped); see the
 * comment at its definition in docker_json.c. NULL-terminated. */
extern const char *const docker_cap_add[];

/* sandbox-agent in a container (docker_agent.h): host paths of the binary
 * and of the run directory's bind source. */
struct docker_agent_mount {
        char bin[256];
        char source[256];
        char egress[256]; /* host egress directory of the sandbox; "" = no egress (docs/EGRESS.md) */
        bool env_file; /* commands go through the agent: EXECD_ENVS=DOCKER_AGENT_ENV_FILE */
        bool dials;    /* the agent dials the host relay (--dial), its run directory read-only */
        /* a directory of the host holding hosts, hostname and resolv.conf, mounted
         * read-only over the sandbox's (Docker's own are writable files on the
         * host's disk: docker_agent.h); "" = Docker's */
        char etc[256];
};

/* Container logs (HostConfig.LogConfig): json-file, rotated at this size,
 * this many files: what the sandbox writes to its PID 1's stdout and stderr
 * (any of its root can, through /proc/1/fd/1) lands in
 * /var/lib/docker/containers, bounded. */
#define DOCKER_LOG_MAX_SIZE "1m"
#define DOCKER_LOG_MAX_FILE "2"

/* A gVisor sandbox's host pids limit is its pids limit times this: the
 * sentry's own processes and threads count there (docker_json.c,
 * host_pids). SANDBOX_PIDS 256 is 2048 host pids. */
#define DOCKER_GVISOR_PIDS_FACTOR 8

/* A container's disk as inspect shows it (docker_disk.h): its sandbox id
 * and PROVIDER_LABEL_DISK (0: none), the storage driver and, for overlay2,
 * the id of its writable layer (the directory of GraphDriver.Data.UpperDir,
 * 64 lowercase hex; "" when it is not one). */
struct docker_disk_info {
        char sandbox_id[64];
        long long disk_mb;
        char driver[32];
        char layer[65];
};

/* Parse GET /containers/{id}/json into *ret. Errors: -EPROTO. */
int docker_json_parse_disk(const char *body, struct docker_disk_info *ret);

/* Body of POST /containers/create for spec; with agent (may be NULL) the
 * agent is PID 1 and runs spec's entrypoint. Always bounded logs
 * (DOCKER_LOG_*); spec->limits.disk_mb > 0: labelled PROVIDER_LABEL_DISK.
 * *ret is malloc'ed (free()).
 * Errors: -EINVAL (no image or id), -ENOMEM. */
int docker_json_create_body(const struct sandbox_spec *spec, const struct docker_agent_mount *agent,
                            char **ret);

/* Body of POST /containers/{id}/exec: attached stdout+stderr, no tty, no
 * stdin. env, cwd and user may be NULL. *ret is malloc'ed (free()).
 * Errors: -EINVAL (empty argv), -ENOMEM. */
int docker_json_exec_body(const char *const *argv, const char *const *env, const char *cwd,
                          const char *user, char **ret);

/* Read "Id" of a create answer into ret_id (size bytes).
 * Errors: -EPROTO (not JSON, no Id, too long). */
int docker_json_parse_id(const char *body, char *ret_id, size_t size);

/* Map Docker's State.Status ("created", "running", ...) to our states. */
enum sandbox_run_state docker_json_state(const char *status);

/* Parse GET /containers/{id}/json into *ret (state, labels, ref = Id).
 * Errors: -EPROTO. */
int docker_json_parse_inspect(const char *body, struct sandbox_info *ret);

/* Parse GET /containers/json (an array) and call fn for every element.
 * Errors: -EPROTO. */
int docker_json_parse_list(const char *body, void (*fn)(void *ud, const struct sandbox_info *info),
                           void *ud);

/* One event of GET /events (a JSON object per line, len bytes, not
 * NUL-terminated): for a container's "die", "pause", "unpause" or "oom",
 * the kind (SANDBOX_EVENT_EXITED, _PAUSED, _UNPAUSED, _OOM), its sandbox id
 * (label), key prefix (label), container id and, for "die", the exit code
 * (-1 when absent or not a number) into *ret, and 1; 0 for any other event
 * (kill, start, ...); -EPROTO when it is not an event object. */
int docker_json_parse_event(const char *line, size_t len, struct sandbox_event *ret);

/* Parse GET /exec/{id}/json: *ret_running and *ret_exit_code (-1 if null).
 * Errors: -EPROTO. */
int docker_json_parse_exec_inspect(const char *body, bool *ret_running, int *ret_exit_code);

/* Copy Docker's error "message" (or a prefix of a non-JSON body) into
 * ret_err (PROVIDER_ERR_MAX bytes), prefixed with what; ret_err may be NULL. */
void docker_json_error_message(const char *what, long status, const char *body, char *ret_err);

/* Body of POST /volumes/create: v->name on the local driver, labelled
 * with v's prefix, tenant, volume and sandbox id (provider.h) and
 * PROVIDER_LABEL_MANAGED. *ret is malloc'ed (free()). -ENOMEM. */
int docker_json_volume_create_body(const struct volume_info *v, char **ret);

/* Parse GET /volumes/{name} (a Volume object) into *ret. -EPROTO. */
int docker_json_parse_volume(const char *body, struct volume_info *ret);

/* Parse GET /volumes ({"Volumes": [...] or null, "Warnings": ...}) and
 * call fn for every volume (ones without a usable name are skipped).
 * Errors: -EPROTO. */
int docker_json_parse_volumes(const char *body, void (*fn)(void *ud, const struct volume_info *v),
                              void *ud);

/* Parse GET /images/json (an array of image summaries) and call fn for
 * every image with an Id that fits (the others are skipped): its Id, its
 * names (RepoTags but "<none>:<none>"; name "" unless exactly one fits)
 * and its snapshot labels (PROVIDER_LABEL_SNAPSHOT, PROVIDER_LABEL_PREFIX;
 * "" when absent or too long). Errors: -EPROTO. */
int docker_json_parse_images(const char *body, void (*fn)(void *ud, const struct snapshot_image *im),
                             void *ud);
