/* docker_disk: a sandbox's disk of bounded size, for the Docker provider
 * (docs/OPERATIONS.md, "Host bounds"; issue 24, H4).
 *
 * dockerd on overlay2 over ext4 refuses StorageOpt size (it wants XFS with
 * pquota) and this kernel has no quota support at all, so a container's
 * writable layer has no bound of its own: a `dd` in a sandbox fills the
 * host's Docker disk. A container labelled PROVIDER_LABEL_DISK gets a disk
 * instead: an ext4 image of that many MiB, loop-mounted on its writable
 * overlay2 layer by the host's mount helper (sandbox-mountd,
 * mountd/disk.c). Every write to the sandbox's root filesystem (/workspace,
 * /tmp, /home, /root, /etc, /usr, ...) lands in it and ends with ENOSPC at
 * its size; named volumes and host directories mounted into the sandbox
 * are not on it. The disk is made after the create (disk-make), mounted
 * again by a start that finds it gone (a reboot, a restart of dockerd:
 * disk-attach; a layer without its disk cannot start at all), kept by a
 * stop and a pause, captured by a snapshot (`docker commit` reads the
 * layer), and removed after the container (undisk; the removal itself
 * unmounts it). */
#pragma once
#include <stdbool.h>

#include "providers/docker/docker_api.h"
#include "providers/docker/docker_json.h"

/* The disk facts of container ref (inspect). -ENOENT gone, -EIO. */
int docker_disk_inspect(struct docker_api *api, int timeout_ms, const char *ref,
                        struct docker_disk_info *ret, char *ret_err);

/* Make sure the disk of container ref is mounted, as its label says:
 * made for a container that never had it (the create, or one a crash
 * left between its create and its disk), mounted again when its image is
 * there (a start after a reboot), refused when the image of a layer that
 * was on it went; nothing for a container without one. Idempotent. A
 * container with a disk and no helper (mountd ""), or not on overlay2,
 * is -EIO with the reason. */
int docker_disk_attach(struct docker_api *api, int timeout_ms, const char *mountd, const char *ref,
                       char *ret_err);

/* After the container of sandbox sid is removed: its image. */
int docker_disk_remove(const char *mountd, int timeout_ms, const char *sid, char *ret_err);
