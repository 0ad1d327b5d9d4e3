/* rundir: the agent's run directory on a tmpfs of its own (mountd.h).
 *
 * The directory AGENT_DIR/<container id> is the broker's (made 0700 by
 * it, docker_agent.c); the sandbox's root gets it read-write at
 * /.sandbox-broker/run to bind its agent's socket. On the shared /run it
 * could fill every inode and byte there, and so every other sandbox's
 * socket directory (issue 24, H3). A tmpfs of MOUNTD_RUN_SIZE bytes and
 * MOUNTD_RUN_INODES inodes on it bounds that to this sandbox.
 *
 * Paths: AGENT_DIR is opened without following a link at its end, the
 * entry relative to it with O_NOFOLLOW, and the mount goes through
 * /proc/self/fd/N: a link the broker did not make is never followed. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "mountd.h"

/* An O_PATH fd of AGENT_DIR/<ref>, a directory (not a link). */
static int open_run(const struct mountd_conf *c, const char *ref, char *err, size_t errsz)
{
        int top, fd;

        top = open(c->agent_dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (top < 0) {
                int e = errno;
                snprintf(err, errsz, "%s: %s", c->agent_dir, strerror(e));
                return -e;
        }
        fd = openat(top, ref, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
                int e = errno == ELOOP ? ENOTDIR : errno;
                snprintf(err, errsz, "%s/%s: %s", c->agent_dir, ref, strerror(e));
                fd = -e;
        }
        close(top);
        return fd;
}

/* 1 when fd is the root of a mount, 0 when not, or a negative errno. */
static int mount_root(int fd)
{
        struct statx sx;

        if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, &sx) < 0)
                return -errno;
        if (!(sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT))
                return -EOPNOTSUPP;
        return (sx.stx_attributes & STATX_ATTR_MOUNT_ROOT) ? 1 : 0;
}

/* 1 when the directory fd (O_PATH) has no entry but . and .., 0 when it
 * has one, or a negative errno. */
static int dir_empty(int fd)
{
        char self[40];
        struct dirent *e;
        DIR *d;
        int r = 1;

        snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
        d = opendir(self);
        if (!d)
                return -errno;
        while (r == 1 && (e = readdir(d)))
                if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
                        r = 0;
        closedir(d);
        return r;
}

int rundir_mount(const struct mountd_conf *c, const char *ref, uid_t uid, gid_t gid, char *err,
                 size_t errsz)
{
        char path[40], opts[128];
        struct statfs fs;
        int fd, r;

        fd = open_run(c, ref, err, errsz);
        if (fd < 0)
                return fd;
        r = mount_root(fd);
        if (r == 1) {
                /* asked again (a retried create or start): it is there */
                if (fstatfs(fd, &fs) == 0 && fs.f_type == TMPFS_MAGIC) {
                        r = 0;
                        goto out;
                }
                snprintf(err, errsz, "%s/%s: something else is mounted there", c->agent_dir, ref);
                r = -EBUSY;
                goto out;
        }
        if (r < 0) {
                snprintf(err, errsz, "%s/%s: statx: %s", c->agent_dir, ref, strerror(-r));
                goto out;
        }
        /* a directory in use (a sandbox made before the helper: its agent
         * bound its socket there) is never hidden under a mount */
        r = dir_empty(fd);
        if (r <= 0) {
                r = r < 0 ? r : -ENOTEMPTY;
                snprintf(err, errsz, "%s/%s: %s", c->agent_dir, ref,
                         r == -ENOTEMPTY ? "not empty" : strerror(-r));
                goto out;
        }
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        snprintf(opts, sizeof(opts), "size=%s,nr_inodes=%d,mode=0700,uid=%u,gid=%u",
                 MOUNTD_RUN_SIZE, MOUNTD_RUN_INODES, (unsigned)uid, (unsigned)gid);
        if (mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, opts) < 0) {
                r = -errno;
                snprintf(err, errsz, "mount tmpfs on %s/%s: %s", c->agent_dir, ref, strerror(-r));
                goto out;
        }
        r = 0;
out:
        close(fd);
        return r;
}

int rundir_unmount(const struct mountd_conf *c, const char *ref, char *err, size_t errsz)
{
        char path[40];
        struct statfs fs;
        int fd, r;

        fd = open_run(c, ref, err, errsz);
        if (fd == -ENOENT)
                return 0; /* gone already */
        if (fd < 0)
                return fd;
        r = mount_root(fd);
        if (r == 1 && (fstatfs(fd, &fs) < 0 || fs.f_type != TMPFS_MAGIC)) {
                snprintf(err, errsz, "%s/%s: not a tmpfs of this helper", c->agent_dir, ref);
                r = -EBUSY;
        } else if (r == 1) {
                /* lazy: a connection still open (the broker's, the
                 * agent's) keeps it until it ends, nothing waits */
                snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
                r = umount2(path, MNT_DETACH) < 0 ? -errno : 0;
                if (r < 0)
                        snprintf(err, errsz, "umount %s/%s: %s", c->agent_dir, ref, strerror(-r));
        } else if (r < 0) {
                snprintf(err, errsz, "%s/%s: statx: %s", c->agent_dir, ref, strerror(-r));
        }
        close(fd);
        return r;
}
