/* disk: a sandbox's bounded disk (mountd.h; docs/OPERATIONS.md, "Host
 * bounds").
 *
 * Docker's overlay2 keeps a container's writable layer in
 * DOCKER_ROOT/overlay2/<layer id>/: "diff" (the upper directory: every
 * file the sandbox writes to its root filesystem), "work" (overlayfs'
 * work directory, which must be on the same filesystem as diff), "merged"
 * (made at each start, the overlay's mount point), "link" and "lower"
 * (which layers are below). On ext4 it has no size limit: dockerd refuses
 * StorageOpt size but on XFS with pquota, and this kernel has no quota
 * support at all (../shared/DESIGN.md §8). So the whole layer directory
 * gets a filesystem of its own: an image file DISK_DIR/<sandbox id>.img
 * with ext4 in it, loop-mounted on the layer directory, holding copies of
 * "link" and "lower" and empty "diff" and "work". Docker mounts the
 * container's overlay from it as from any layer; writes stop with ENOSPC
 * when the image is full; `docker commit` (snapshots) reads its diff; a
 * stop keeps it (Docker only unmounts "merged"); the container's removal
 * unmounts it (Docker removes the layer directory with EnsureRemoveAll,
 * which unmounts what is mounted in the way), and the loop device goes
 * with the mount (autoclear). The layer's own "diff" and "work" are
 * removed once the image is there: unmounted (a reboot, a restart of
 * dockerd, whose shutdown unmounts everything under overlay2), the
 * container cannot start at all ("no such file") until disk-attach mounts
 * it again; it never runs on the shared disk unbounded.
 *
 * The image is made as <sid>.img.new (fallocated to its size unless
 * --allocate sparse, mkfs, filled through a mount of its own) and renamed
 * to <sid>.img when complete: a <sid>.img is always a whole disk. An image
 * is never mounted twice (two ext4 mounts of one image through two loop
 * devices would corrupt it): attach looks for a loop device backed by it
 * first. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <linux/magic.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mountd.h"

#define LOWER_MAX 8192 /* "l/<26 chars>:..." for up to 128 layers, and room */
#define LINK_MAX_ 64

static long long now_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
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

/* The layer directory DOCKER_ROOT/overlay2/<layer>, O_PATH. */
static int open_layer(const struct mountd_conf *c, const char *layer, char *err, size_t errsz)
{
        char path[512];
        int top, fd;

        snprintf(path, sizeof(path), "%s/overlay2", c->docker_root);
        top = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (top < 0) {
                int e = errno;
                snprintf(err, errsz,
                         "%s: %s (is --docker-root dockerd's data root, and its storage "
                         "driver overlay2?)",
                         path, strerror(e));
                return -e;
        }
        fd = openat(top, layer, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
                int e = errno;
                snprintf(err, errsz, "layer %s/%.12s: %s", path, layer, strerror(e));
                fd = -e;
        }
        close(top);
        return fd;
}

/* The whole of the small file name in dir (O_NOFOLLOW, a regular file of
 * less than size bytes) into buf, NUL-terminated; its length or -errno. */
static ssize_t read_small(int dir, const char *name, char *buf, size_t size)
{
        int fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        ssize_t n;

        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (size_t)st.st_size >= size) {
                close(fd);
                return -EINVAL;
        }
        n = read(fd, buf, size - 1);
        if (n < 0)
                n = -errno;
        else
                buf[n] = '\0';
        close(fd);
        return n;
}

static int write_small(int dir, const char *name, const char *data, size_t len)
{
        int fd = openat(dir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        int r = 0;

        if (fd < 0)
                return -errno;
        if (write(fd, data, len) != (ssize_t)len)
                r = -EIO;
        if (close(fd) < 0 && r == 0)
                r = -errno;
        return r;
}

/* Run mkfs.ext4 on path within MOUNTD_MKFS_MS; its last words of stderr
 * into err on failure. */
static int mkfs(const struct mountd_conf *c, const char *path, char *err, size_t errsz)
{
        int pipefd[2], status = 0, r = 0;
        char out[512];
        size_t got = 0;
        pid_t pid;

        if (pipe2(pipefd, O_CLOEXEC) < 0)
                return -errno;
        pid = fork();
        if (pid < 0) {
                r = -errno;
                close(pipefd[0]);
                close(pipefd[1]);
                return r;
        }
        if (pid == 0) {
                /* -m 0: no blocks reserved for root (the sandbox's root would
                 * get them anyway); nodiscard and lazy init: nothing to
                 * zero or punch in a fresh image */
                const char *argv[] = { "mkfs.ext4",
                                       "-q",
                                       "-F",
                                       "-m",
                                       "0",
                                       "-E",
                                       "nodiscard,lazy_itable_init=1,lazy_journal_init=1",
                                       path,
                                       NULL };
                int null = open("/dev/null", O_RDWR);

                if (null < 0 || dup2(null, 0) < 0 || dup2(pipefd[1], 1) < 0 || dup2(pipefd[1], 2) < 0)
                        _exit(126);
                execv(c->mkfs, (char *const *)argv);
                _exit(127);
        }
        close(pipefd[1]);
        long long deadline = now_ms() + MOUNTD_MKFS_MS;
        for (;;) {
                struct pollfd p = { .fd = pipefd[0], .events = POLLIN };
                long long left = deadline - now_ms();
                ssize_t n;

                if (left <= 0) {
                        (void)kill(pid, SIGKILL);
                        r = -ETIMEDOUT;
                        break;
                }
                if (poll(&p, 1, (int)left) <= 0)
                        continue;
                n = read(pipefd[0], out + got, sizeof(out) - 1 - got);
                if (n <= 0)
                        break;
                got += (size_t)n;
                if (got == sizeof(out) - 1)
                        got = 0; /* keep the tail, roughly */
        }
        close(pipefd[0]);
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
        out[got] = '\0';
        if (r == 0 && (!WIFEXITED(status) || WEXITSTATUS(status) != 0))
                r = -EIO;
        if (r < 0)
                snprintf(err, errsz, "%s %s: %s%s", c->mkfs, path,
                         r == -ETIMEDOUT                                   ? "timed out"
                         : WIFEXITED(status) && WEXITSTATUS(status) == 127 ? "cannot run it"
                                                                           : "failed: ",
                         r == -ETIMEDOUT ? "" : out);
        return r;
}

/* A loop device for the image fd (autoclear: it goes with its last
 * mount, or with the fd returned when nothing mounts it). The device's
 * path into dev. */
static int loop_attach(int img, char *dev, size_t size, char *err, size_t errsz)
{
        int ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC), r = -EBUSY;

        if (ctl < 0) {
                r = -errno;
                snprintf(err, errsz, "/dev/loop-control: %s", strerror(-r));
                return r;
        }
        /* another process may take the free device first: try again */
        for (int tries = 0; tries < 16 && r == -EBUSY; tries++) {
                struct loop_config cfg = { .fd = (unsigned)img };
                int n = ioctl(ctl, LOOP_CTL_GET_FREE), lfd;

                if (n < 0) {
                        r = -errno;
                        break;
                }
                snprintf(dev, size, "/dev/loop%d", n);
                lfd = open(dev, O_RDWR | O_CLOEXEC);
                if (lfd < 0) {
                        r = -errno;
                        break;
                }
                cfg.info.lo_flags = LO_FLAGS_AUTOCLEAR;
                if (ioctl(lfd, LOOP_CONFIGURE, &cfg) == 0) {
                        close(ctl);
                        return lfd;
                }
                r = -errno;
                close(lfd);
        }
        close(ctl);
        snprintf(err, errsz, "loop device: %s", strerror(-r));
        return r;
}

/* Whether a loop device is backed by the file of st (so that it is
 * mounted, or being mounted, somewhere): LOOP_GET_STATUS64 of each. */
static bool loop_backs(const struct stat *st)
{
        DIR *d = opendir("/sys/block");
        struct dirent *e;
        bool yes = false;

        if (!d)
                return false;
        while (!yes && (e = readdir(d))) {
                struct loop_info64 info;
                char dev[300];
                int fd;

                if (strncmp(e->d_name, "loop", 4))
                        continue;
                snprintf(dev, sizeof(dev), "/dev/%s", e->d_name);
                fd = open(dev, O_RDONLY | O_CLOEXEC);
                if (fd < 0)
                        continue;
                /* ENXIO: no file behind it */
                if (ioctl(fd, LOOP_GET_STATUS64, &info) == 0)
                        yes = info.lo_inode == (unsigned long long)st->st_ino &&
                              info.lo_device == (unsigned long long)st->st_dev;
                close(fd);
        }
        closedir(d);
        return yes;
}

/* Mount the image img (an open fd) on the directory fd target. */
static int mount_image(int img, int target, char *err, size_t errsz)
{
        char dev[64], path[40], why[200];
        int lfd, r = 0;

        lfd = loop_attach(img, dev, sizeof(dev), why, sizeof(why));
        if (lfd < 0) {
                snprintf(err, errsz, "%s", why);
                return lfd;
        }
        snprintf(path, sizeof(path), "/proc/self/fd/%d", target);
        if (mount(dev, path, "ext4", MS_NOSUID | MS_NODEV | MS_NOATIME, "") < 0) {
                r = -errno;
                snprintf(err, errsz, "mount %s: %s", dev, strerror(-r));
        }
        close(lfd); /* autoclear: the device stays while mounted */
        return r;
}

/* Make DISK_DIR/<sid>.img of mib MiB for the layer ldir: ext4 holding the
 * layer's link and lower, empty diff and work. */
static int image_make(const struct mountd_conf *c, int ddir, const char *sid, int ldir,
                      long long mib, char *err, size_t errsz)
{
        char name[64], tmpname[64], mnt[64], path[512], link[LINK_MAX_], *lower = NULL;
        ssize_t nlink, nlower;
        int fd = -1, mfd = -1, r;
        bool mounted = false;

        snprintf(name, sizeof(name), "%s.img", sid);
        snprintf(tmpname, sizeof(tmpname), "%s.img.new", sid);
        snprintf(mnt, sizeof(mnt), ".%s.mnt", sid);
        lower = malloc(LOWER_MAX);
        if (!lower)
                return -ENOMEM;
        nlink = read_small(ldir, "link", link, sizeof(link));
        nlower = read_small(ldir, "lower", lower, LOWER_MAX);
        if (nlink <= 0 || nlower <= 0) {
                r = nlink < 0 ? (int)nlink : nlower < 0 ? (int)nlower : -EINVAL;
                snprintf(err, errsz, "the layer's link or lower file: %s", strerror(-r));
                goto out;
        }
        /* what a crash left of an earlier try */
        (void)unlinkat(ddir, tmpname, 0);
        fd = openat(ddir, tmpname, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0) {
                r = -errno;
                snprintf(err, errsz, "%s/%s: %s", c->disk_dir, tmpname, strerror(-r));
                goto out;
        }
        r = c->sparse ? (ftruncate(fd, mib << 20) < 0 ? -errno : 0)
                      : (fallocate(fd, 0, 0, mib << 20) < 0 ? -errno : 0);
        if (r < 0) {
                snprintf(err, errsz, "%s/%s: %s of %lld MiB: %s", c->disk_dir, tmpname,
                         c->sparse ? "truncate" : "fallocate", mib, strerror(-r));
                goto out;
        }
        snprintf(path, sizeof(path), "%s/%s", c->disk_dir, tmpname);
        r = mkfs(c, path, err, errsz);
        if (r < 0)
                goto out;
        if (mkdirat(ddir, mnt, 0700) < 0 && errno != EEXIST) {
                r = -errno;
                snprintf(err, errsz, "%s/%s: %s", c->disk_dir, mnt, strerror(-r));
                goto out;
        }
        mfd = openat(ddir, mnt, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (mfd < 0) {
                r = -errno;
                goto out;
        }
        r = mount_image(fd, mfd, err, errsz);
        if (r < 0)
                goto out;
        mounted = true;
        /* reopen: mfd is the directory under the mount */
        close(mfd);
        mfd = openat(ddir, mnt, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (mfd < 0) {
                r = -errno;
                goto out;
        }
        /* Docker's modes: the layer 0710, diff 0755, work 0700 (root) */
        if ((r = write_small(mfd, "link", link, (size_t)nlink)) < 0 ||
            (r = write_small(mfd, "lower", lower, (size_t)nlower)) < 0 ||
            (mkdirat(mfd, "diff", 0755) < 0 && (r = -errno)) ||
            (mkdirat(mfd, "work", 0700) < 0 && (r = -errno)) ||
            (unlinkat(mfd, "lost+found", AT_REMOVEDIR) < 0 && errno != ENOENT && (r = -errno)) ||
            (fchmod(mfd, 0710) < 0 && (r = -errno)) || (fsync(mfd) < 0 && (r = -errno))) {
                snprintf(err, errsz, "filling the new disk: %s", strerror(-r));
                goto out;
        }
        r = 0;
out:
        if (mfd >= 0)
                close(mfd);
        if (mounted) {
                snprintf(path, sizeof(path), "%s/%s", c->disk_dir, mnt);
                if (umount2(path, 0) < 0 && r == 0) {
                        r = -errno;
                        snprintf(err, errsz, "umount %s: %s", path, strerror(-r));
                }
        }
        (void)unlinkat(ddir, mnt, AT_REMOVEDIR);
        if (fd >= 0 && r == 0 && fsync(fd) < 0) {
                r = -errno;
                snprintf(err, errsz, "fsync %s: %s", tmpname, strerror(-r));
        }
        if (fd >= 0)
                close(fd);
        if (r == 0 && renameat(ddir, tmpname, ddir, name) < 0) {
                r = -errno;
                snprintf(err, errsz, "rename %s: %s", tmpname, strerror(-r));
        }
        if (r < 0)
                (void)unlinkat(ddir, tmpname, 0);
        free(lower);
        return r;
}

/* The layer's own diff and work go, so that it cannot be used without its
 * disk. diff must be empty (a container that never ran); work holds
 * overlayfs' empty "work" at most. Missing is fine (done before). */
static int layer_strip(int ldir, char *err, size_t errsz)
{
        char self[40];
        int l = -1, r = 0;

        /* unlinkat needs a real directory fd, not O_PATH */
        snprintf(self, sizeof(self), "/proc/self/fd/%d", ldir);
        l = open(self, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (l < 0)
                return -errno;
        if (unlinkat(l, "diff", AT_REMOVEDIR) < 0 && errno != ENOENT) {
                r = -errno;
                snprintf(err, errsz, "the layer's diff: %s%s", strerror(-r),
                         r == -ENOTEMPTY ? " (the container has run without its disk)" : "");
                goto out;
        }
        (void)unlinkat(l, "work/work", AT_REMOVEDIR);
        if (unlinkat(l, "work", AT_REMOVEDIR) < 0 && errno != ENOENT) {
                r = -errno;
                snprintf(err, errsz, "the layer's work: %s", strerror(-r));
        }
out:
        close(l);
        return r;
}

int disk_attach(const struct mountd_conf *c, const char *sid, const char *layer, long long mib,
                bool make, char *err, size_t errsz)
{
        char name[64];
        struct statfs fs;
        struct stat st;
        int ldir = -1, ddir = -1, img = -1, r;

        if (!c->disk_dir) {
                snprintf(err, errsz, "no disks: the helper runs without --disk-dir");
                return -EOPNOTSUPP;
        }
        ldir = open_layer(c, layer, err, errsz);
        if (ldir < 0)
                return ldir;
        r = mount_root(ldir);
        if (r == 1) {
                /* asked again (a retried create, a start): it is there */
                r = fstatfs(ldir, &fs) == 0 && fs.f_type == EXT4_SUPER_MAGIC ? 0 : -EBUSY;
                if (r < 0)
                        snprintf(err, errsz, "layer %.12s: something else is mounted there", layer);
                goto out;
        }
        if (r < 0) {
                snprintf(err, errsz, "layer %.12s: statx: %s", layer, strerror(-r));
                goto out;
        }
        ddir = open(c->disk_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (ddir < 0) {
                r = -errno;
                snprintf(err, errsz, "%s: %s", c->disk_dir, strerror(-r));
                goto out;
        }
        snprintf(name, sizeof(name), "%s.img", sid);
        if (fstatat(ddir, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                r = -errno;
                if (r != -ENOENT || !make) {
                        snprintf(err, errsz, "the sandbox's disk image %s/%s: %s", c->disk_dir,
                                 name, strerror(-r));
                        goto out;
                }
                /* a new disk only for a layer that never had one (its own
                 * diff is still there): a layer whose disk image went is
                 * never given an empty one, its files would be lost quietly */
                if (fstatat(ldir, "diff", &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode)) {
                        snprintf(err, errsz,
                                 "the sandbox's disk image %s/%s is gone (its layer %.12s "
                                 "was on it)",
                                 c->disk_dir, name, layer);
                        r = -ENOENT;
                        goto out;
                }
                r = image_make(c, ddir, sid, ldir, mib, err, errsz);
                if (r < 0)
                        goto out;
        }
        img = openat(ddir, name, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
        if (img < 0 || fstat(img, &st) < 0 || !S_ISREG(st.st_mode)) {
                r = img < 0 ? -errno : -EINVAL;
                snprintf(err, errsz, "%s/%s: %s", c->disk_dir, name, strerror(-r));
                goto out;
        }
        if (loop_backs(&st)) {
                snprintf(err, errsz, "%s/%s is mounted elsewhere", c->disk_dir, name);
                r = -EBUSY;
                goto out;
        }
        r = layer_strip(ldir, err, errsz);
        if (r < 0)
                goto out;
        r = mount_image(img, ldir, err, errsz);
out:
        if (img >= 0)
                close(img);
        if (ddir >= 0)
                close(ddir);
        close(ldir);
        return r;
}

int disk_remove(const struct mountd_conf *c, const char *sid, char *err, size_t errsz)
{
        char name[64];
        int ddir, r = 0;

        if (!c->disk_dir)
                return 0;
        ddir = open(c->disk_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (ddir < 0) {
                r = -errno;
                snprintf(err, errsz, "%s: %s", c->disk_dir, strerror(-r));
                return r;
        }
        /* a mount still using it keeps its blocks until it goes (the
         * container's removal unmounts it) */
        snprintf(name, sizeof(name), "%s.img", sid);
        if (unlinkat(ddir, name, 0) < 0 && errno != ENOENT) {
                r = -errno;
                snprintf(err, errsz, "%s/%s: %s", c->disk_dir, name, strerror(-r));
        }
        snprintf(name, sizeof(name), "%s.img.new", sid);
        (void)unlinkat(ddir, name, 0);
        close(ddir);
        return r;
}

int disk_list(const struct mountd_conf *c, char *out, size_t outsz, char *err, size_t errsz)
{
        size_t used = 0;
        struct dirent *e;
        DIR *d;
        int r = 0;

        out[0] = '\0';
        if (!c->disk_dir)
                return 0;
        d = opendir(c->disk_dir);
        if (!d) {
                r = -errno;
                snprintf(err, errsz, "%s: %s", c->disk_dir, strerror(-r));
                return r;
        }
        while ((e = readdir(d))) {
                size_t n = strlen(e->d_name);

                if (n != 36 || strcmp(e->d_name + 32, ".img") ||
                    strspn(e->d_name, "0123456789abcdef") != 32)
                        continue;
                if (used + 34 > outsz) {
                        r = -ENOBUFS;
                        snprintf(err, errsz, "too many disks for one answer");
                        break;
                }
                used += (size_t)snprintf(out + used, outsz - used, "%s%.32s", used ? " " : "",
                                         e->d_name);
        }
        closedir(d);
        return r;
}
