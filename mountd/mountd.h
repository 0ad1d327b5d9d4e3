/* sandbox-mountd: the host's mount helper, the one broker process that
 * mounts (docs/OPERATIONS.md, "Host bounds"). It runs as root in the host's
 * mount namespace, where dockerd sees what it mounts, and serves the
 * broker's processes (which hold no capability) on a unix socket:
 *
 *   run <container id>     a tmpfs of its own, small in bytes and inodes,
 *                          on AGENT_DIR/<container id> (the sandbox's agent
 *                          run directory, mounted read-write into it), so
 *                          that what a sandbox's root writes there fills
 *                          that tmpfs only (issue 24, H3)
 *   unrun <container id>   its unmount (lazy), before the broker removes it
 *   disk-make <sandbox id> <MiB> <layer id>
 *                          a file DISK_DIR/<sandbox id>.img of MiB, an ext4
 *                          filesystem in it, loop-mounted on the container's
 *                          writable overlay2 layer (DOCKER_ROOT/overlay2/
 *                          <layer id>): every write of the sandbox to its
 *                          root filesystem lands in it, and stops at ENOSPC
 *                          when it is full (H4). The image that is there is
 *                          mounted again (a start after a reboot or a
 *                          restart of dockerd); a new one is made only for a
 *                          layer that never had one
 *   disk-attach <sandbox id> <layer id>
 *                          the same with the image that is there; never
 *                          makes a new one
 *   undisk <sandbox id>    the image's removal (its mount is Docker's to
 *                          drop: the container's removal unmounts it)
 *   disks                  the sandbox ids that have an image
 *   ping                   "ok" (the broker's readiness check)
 *
 * One request per connection, one line (at most MOUNTD_LINE_MAX bytes);
 * the answer is one line: "ok" (for disks: "ok" and the ids, space
 * separated), or "err <errno> <reason>". Requests are served one at a
 * time; each is bounded (a client has MOUNTD_IO_MS to send its line and
 * take the answer, mkfs MOUNTD_MKFS_MS). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define MOUNTD_LINE_MAX 512
#define MOUNTD_IO_MS 5000
#define MOUNTD_MKFS_MS 60000
/* the run directory's tmpfs: the agent needs one socket (and its
 * ".new" while it binds it again) */
#define MOUNTD_RUN_SIZE "64k"
#define MOUNTD_RUN_INODES 32
/* disk sizes the helper accepts, whatever the broker asks */
#define MOUNTD_DISK_MIN_MIB 64
#define MOUNTD_DISK_MAX_MIB (16LL * 1024 * 1024)

enum mountd_verb {
        MOUNTD_RUN,
        MOUNTD_UNRUN,
        MOUNTD_DISK_MAKE,
        MOUNTD_DISK_ATTACH,
        MOUNTD_UNDISK,
        MOUNTD_DISKS,
        MOUNTD_PING,
};

struct mountd_req {
        enum mountd_verb verb;
        char id[65];    /* a container id (run, unrun) or a sandbox id */
        long long mib;  /* disk-make */
        char layer[65]; /* disk-make, disk-attach: 64 lowercase hex */
};

/* Parse one request line (len bytes, without its '\n'). 0, or -EINVAL with
 * the reason in err (errsz bytes). Pure. */
int mountd_parse(const char *line, size_t len, struct mountd_req *ret, char *err, size_t errsz);

/* Whether s is n lowercase hex digits, lo <= n <= hi, and nothing else. */
bool mountd_hex(const char *s, size_t lo, size_t hi);

/* What the helper was started with (main.c). */
struct mountd_conf {
        const char *agent_dir;   /* --agent-dir */
        const char *disk_dir;    /* --disk-dir; NULL: no disks */
        const char *docker_root; /* --docker-root, default /var/lib/docker */
        const char *mkfs;        /* --mkfs, default /sbin/mkfs.ext4 */
        bool sparse;             /* --allocate sparse: images are not fallocated */
};

/* rundir.c: run and unrun for AGENT_DIR/<ref>, the tmpfs owned by uid:gid
 * (the broker's account, the peer of the request). 0 or a negative errno,
 * the reason in err. */
int rundir_mount(const struct mountd_conf *c, const char *ref, uid_t uid, gid_t gid, char *err,
                 size_t errsz);
int rundir_unmount(const struct mountd_conf *c, const char *ref, char *err, size_t errsz);

/* disk.c: disk-make (make true) and disk-attach; undisk; disks (the ids
 * into out, space separated, at most outsz bytes; -ENOBUFS beyond). */
int disk_attach(const struct mountd_conf *c, const char *sid, const char *layer, long long mib,
                bool make, char *err, size_t errsz);
int disk_remove(const struct mountd_conf *c, const char *sid, char *err, size_t errsz);
int disk_list(const struct mountd_conf *c, char *out, size_t outsz, char *err, size_t errsz);

/* One line on stderr, "sandbox-mountd: ..." (journald takes it). */
void mountd_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
