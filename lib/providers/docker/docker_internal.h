/* docker_internal: what the files of the Docker provider share with each
 * other (docker.c: the sandbox's lifecycle, the ops table and the
 * factory's entry; docker_exec_fallback.c: commands through `docker exec`;
 * docker_agent_route.c: commands, files and ingress through the sandbox's
 * agent; docker_events.c: the event stream). Nothing outside
 * lib/providers/docker/ includes it; the provider's contract is docker.h. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include "providers/docker/docker.h"
#include "providers/docker/docker_agent.h"
#include "providers/docker/docker_api.h"
#include "providers/http_buf.h"

#define DOCKER_RESP_MAX (1024 * 1024)      /* create, inspect, exec answers */

struct docker {
        struct docker_api *api;
        int timeout_ms;
        struct docker_agent agent; /* agent.bin "" = no agent */
        char *image_allow;         /* IMAGE_ALLOW (image_policy.h); NULL = no pulls */
        int pull_timeout_ms;       /* IMAGE_PULL_TIMEOUT_MS: a create's own pull */
        int start_timeout_ms;      /* SANDBOX_START_TIMEOUT_MS: the container create
                                    * call; the start call + the agent's answer */
        char mountd[108];          /* MOUNTD_SOCKET: the disks' helper (docker_disk.h); "" = none */
};

static inline struct docker *impl(struct provider *p)
{
        return p->impl;
}

/* Format a request path; every %s argument is percent-encoded first.
 * Returns a malloc'ed path or NULL (ENOMEM). Takes at most two strings. */
char *docker_path_fmt(const char *fmt, const char *a, const char *b);

/* One JSON call (docker_api_json). */
int docker_call(struct docker *d, const char *method, const char *path, const char *body,
                int timeout_ms, size_t max, struct http_buf *resp, const char *what,
                char *ret_err);

/* PUT a tar stream into dir of container ref (the archive API). */
int docker_archive_put(struct docker *d, const char *ref, const char *dir, const void *tar,
                       size_t len, char *ret_err);

/* A command through `docker exec` (docker_exec_fallback.c): the ops exec
 * (cb NULL, output buffered into ret) and exec_stream (output to cb) of a
 * sandbox without an agent, or with EXEC_TRANSPORT=docker. */
int docker_exec_fallback(struct docker *d, const char *ref, const struct exec_spec *spec,
                         const struct exec_stream_cb *cb, struct exec_result *ret, char *ret_err);

/* The ops of docker_agent_route.c: through the sandbox's agent when it has
 * one (exec and exec_stream fall back to docker_exec_fallback). */
int docker_exec(struct provider *p, const char *ref, const struct exec_spec *spec,
                struct exec_result *ret, char *ret_err);
int docker_exec_stream(struct provider *p, const char *ref, const struct exec_spec *spec,
                       const struct exec_stream_cb *cb, struct exec_result *ret, char *ret_err);
int docker_read_file(struct provider *p, const char *ref, const char *path, int64_t offset,
                     int64_t len, const struct file_read_cb *cb, int timeout_ms, char *ret_err);
int docker_write_file(struct provider *p, const char *ref, const char *path, const void *data,
                      size_t len, int mode, int64_t uid, int64_t gid, bool append, int timeout_ms,
                      char *ret_err);
int docker_agent_dir_name(struct provider *p, const char *ref, char *buf, size_t size,
                          char *ret_err);

/* The op of docker_events.c: GET /events, our containers' die, pause,
 * unpause and oom (provider.h, watch_events). */
int docker_watch_events(struct provider *p, const char *prefix,
                        void (*on_event)(void *ud, const struct sandbox_event *ev),
                        bool (*stop)(void *ud), void *ud, char *ret_err);

/* The op of docker_logs.c: the container's log, its tail (provider.h, logs). */
int docker_logs(struct provider *p, const char *ref, const struct logs_spec *spec, struct sandbox_logs *ret,
                char *ret_err);
