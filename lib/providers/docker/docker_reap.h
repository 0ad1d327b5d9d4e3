/* docker_reap: the reconciler's side of what the Docker provider keeps on
 * the host for each sandbox (docs/ARCHITECTURE.md §3.4; docs/OPERATIONS.md,
 * "Host bounds"): run directories (with their tmpfs), etc directories
 * (docker_agent.h) and disk images (docker_disk.h) whose container is gone
 * without them (a crash between the container's removal and theirs, a
 * helper that did not answer, a container removed behind the broker's
 * back). Without it each would hold a mount, inodes or a disk's worth of
 * the host for good. */
#pragma once

#include "providers/docker/docker_agent.h"
#include "providers/docker/docker_api.h"

/* List the host state first, then the containers (every container with
 * the managed label, whatever its broker): state made after its container
 * (run directories, disks) is then never taken for an orphan; an etc
 * directory, made just before its container, is left while younger than
 * DOCKER_REAP_YOUNG_S. a NULL: no agent; mountd "": no helper. How many
 * were removed into *ret_count. -EIO (the listing failed; nothing removed),
 * -ENOMEM. */
#define DOCKER_REAP_YOUNG_S 120
int docker_reap(struct docker_api *api, int timeout_ms, const struct docker_agent *a,
                const char *mountd, int *ret_count, char *ret_err);
