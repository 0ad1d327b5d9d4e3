/* docker: the Docker provider (struct provider_ops over the Docker Engine
 * API, lib/providers/docker/docker_api.h). A sandbox is a container named sb-<sandbox_id>
 * carrying the PROVIDER_LABEL_* labels; its ref is the container id.
 *
 * NOT thread-safe: a provider holds one persistent connection; each thread
 * owns its own provider. libcurl's global state must be initialised once
 * (curl_global_init(CURL_GLOBAL_DEFAULT)) before threads start.
 *
 * exec needs `timeout` (coreutils or busybox) in the image, and /bin/sh when
 * stdin_data is given; see stdin_stage() in docker_exec_fallback.c for how stdin works.
 *
 * create puts spec->runtime into HostConfig.Runtime: the broker's default,
 * sandbox-runc (runtime/sandbox-runc.c), mounts the sandbox's /proc
 * hidepid=invisible, so that its Linux users (seats) see only their own
 * processes; the broker itself needs no privilege for that. A runtime
 * dockerd does not know fails the create (-EIO, dockerd's message). */
#pragma once
#include <stdbool.h>

#include "core/config.h"
#include "providers/provider.h"

/* The factory's entry (provider_factory.c): SANDBOX_PROVIDER=docker, built
 * from DOCKER_SOCKET, DOCKER_TIMEOUT_MS and SANDBOX_START_TIMEOUT_MS; deadline
 * the longer of the two (plus IMAGE_PULL_TIMEOUT_MS while IMAGE_ALLOW is set). */
extern const struct provider_backend docker_backend;

/* Seconds `stop` lets the sandbox's processes end after SIGTERM before
 * Docker sends SIGKILL. */
#define DOCKER_STOP_GRACE_S 2

/* Make a Docker provider for socket_path (NULL: /var/run/docker.sock);
 * every API call is bounded by timeout_ms (exec by its own timeout plus
 * this). No connection is made yet (ops->ping checks). *ret is freed with
 * provider_free(). Errors: -EINVAL (timeout_ms <= 0), -ENOMEM. */
int docker_provider_new(const char *socket_path, int timeout_ms, struct provider **ret);

/* Put sandbox-agent (docs/AGENT.md) into the sandboxes p creates: bin the
 * absolute host path of the static binary, dir AGENT_DIR; exec: commands go
 * through it (EXEC_TRANSPORT=agent), else through `docker exec` still.
 * bin NULL or "": no agent. -EINVAL for relative or too long paths. */
int docker_provider_set_agent(struct provider *p, const char *bin, const char *dir, bool exec);

/* Let p pull missing images matching allow (IMAGE_ALLOW, image_policy.h;
 * NULL or "": no pulls), each within timeout_ms (<= 0: keep the default,
 * the provider's call timeout). Returns 0 or -ENOMEM. */
int docker_provider_set_pull(struct provider *p, const char *allow, int timeout_ms);

/* Bound a sandbox's container create call, and its start call together with
 * the agent's first answer, by timeout_ms (SANDBOX_START_TIMEOUT_MS) instead
 * of the call timeout: a Docker starting many containers at once is slow, and
 * a slow start must make a slow sandbox, not a failed one. -EINVAL if <= 0. */
int docker_provider_set_start_timeout(struct provider *p, int timeout_ms);

/* Make image present on the Docker host: nothing to do when it is there
 * (whatever the allowlist says), else pull it with auth (may be NULL)
 * within timeout_ms, progress to cb (may be NULL). The provider's
 * image_ensure op; for callers that warm images ahead (pools). Errors:
 * -EPERM not allowed, -EACCES credentials refused, -ENOENT no such image,
 * -ETIMEDOUT, -EIO, -ECONNREFUSED; ret_err never holds the password. */
int docker_ensure_image(struct provider *p, const char *image, const struct image_auth *auth,
                        int timeout_ms, const struct image_pull_cb *cb, char *ret_err);
