/* sandbox-agent: a seat's private temporary directory (seat.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "seat.h"

#define SEAT_TRIES 4 /* rounds of replacing what holds a name */
#define SEATS_MODE 0711
#define SEAT_MODE 0700

static int fail(const char **ret_what, const char *what, int r)
{
        *ret_what = what;
        return r;
}

/* PARENT: a directory of ours that nobody else can rename things in (the
 * sticky bit, or no write bit for group and others). */
static int parent_open(const char *parent, const char **ret_what)
{
        struct stat st;
        int fd = open(parent, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

        if (fd < 0)
                return fail(ret_what, "open the parent", -errno);
        if (fstat(fd, &st) < 0) {
                int r = -errno;

                (void)close(fd);
                return fail(ret_what, "stat the parent", r);
        }
        if (st.st_uid != geteuid() || ((st.st_mode & 022) && !(st.st_mode & S_ISVTX))) {
                (void)close(fd);
                return fail(ret_what, "the parent is another user's, or writable by all without the sticky bit",
                            -EPERM);
        }
        return fd;
}

/* PARENT/.seats, opened, ours and 0711; what else holds the name replaced. */
static int seats_open(int pfd, const char **ret_what)
{
        for (int i = 0; i < SEAT_TRIES; i++) {
                char aside[64];
                struct stat st;
                int fd = openat(pfd, SEAT_TMP_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

                if (fd < 0 && errno == ENOENT) {
                        if (mkdirat(pfd, SEAT_TMP_DIR, SEATS_MODE) < 0 && errno != EEXIST)
                                return fail(ret_what, "make " SEAT_TMP_DIR, -errno);
                        continue;
                }
                if (fd < 0 && (errno == ELOOP || errno == ENOTDIR)) {
                        /* a link or a file planted under the name: the name
                         * goes, what it points to is never touched */
                        if (unlinkat(pfd, SEAT_TMP_DIR, 0) < 0 && errno != ENOENT)
                                return fail(ret_what, "remove what was planted as " SEAT_TMP_DIR, -errno);
                        continue;
                }
                if (fd < 0)
                        return fail(ret_what, "open " SEAT_TMP_DIR, -errno);
                if (fstat(fd, &st) < 0) {
                        int r = -errno;

                        (void)close(fd);
                        return fail(ret_what, "stat " SEAT_TMP_DIR, r);
                }
                if (S_ISDIR(st.st_mode) && st.st_uid == geteuid()) {
                        /* only our own user can have made it; its mode is ours to set */
                        if ((st.st_mode & 07777) != SEATS_MODE && fchmod(fd, SEATS_MODE) < 0) {
                                int r = -errno;

                                (void)close(fd);
                                return fail(ret_what, "chmod " SEAT_TMP_DIR, r);
                        }
                        return fd;
                }
                /* another user's directory: it may hold links or seat
                 * directories of its maker's choosing; set aside, untouched */
                (void)close(fd);
                (void)snprintf(aside, sizeof(aside), SEAT_TMP_DIR ".planted.%llu",
                               (unsigned long long)st.st_ino);
                if (renameat(pfd, SEAT_TMP_DIR, pfd, aside) < 0 && errno != ENOENT)
                        return fail(ret_what, "set aside what was planted as " SEAT_TMP_DIR, -errno);
        }
        return fail(ret_what, "make " SEAT_TMP_DIR " (replaced again and again)", -EAGAIN);
}

/* .seats/<name>: a directory of uid:gid, mode 0700. Only our user can make
 * names in .seats, so what is there is ours (or the seat's own, after
 * the chown); anything but a directory is removed. */
static int seat_dir(int sfd, const char *name, uid_t uid, gid_t gid, const char **ret_what)
{
        for (int i = 0; i < SEAT_TRIES; i++) {
                struct stat st;
                int fd, r = 0;

                if (mkdirat(sfd, name, SEAT_MODE) < 0 && errno != EEXIST)
                        return fail(ret_what, "make the seat's directory", -errno);
                fd = openat(sfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0 && (errno == ELOOP || errno == ENOTDIR)) {
                        if (unlinkat(sfd, name, 0) < 0 && errno != ENOENT)
                                return fail(ret_what, "remove what holds the seat's name", -errno);
                        continue;
                }
                if (fd < 0 && errno == ENOENT)
                        continue;
                if (fd < 0)
                        return fail(ret_what, "open the seat's directory", -errno);
                if (fstat(fd, &st) < 0)
                        r = fail(ret_what, "stat the seat's directory", -errno);
                else if ((st.st_uid != uid || st.st_gid != gid) && fchown(fd, uid, gid) < 0)
                        r = fail(ret_what, "chown the seat's directory", -errno);
                else if ((st.st_mode & 07777) != SEAT_MODE && fchmod(fd, SEAT_MODE) < 0)
                        r = fail(ret_what, "chmod the seat's directory", -errno);
                (void)close(fd);
                return r;
        }
        return fail(ret_what, "make the seat's directory (replaced again and again)", -EAGAIN);
}

int seat_tmp_prepare(const char *parent, uid_t uid, gid_t gid, char *ret_path, size_t size,
                     const char **ret_what)
{
        char name[24];
        int pfd, sfd, r;

        (void)snprintf(name, sizeof(name), "%u", (unsigned)uid);
        if ((size_t)snprintf(ret_path, size, "%s/" SEAT_TMP_DIR "/%s", parent, name) >= size)
                return fail(ret_what, "the path", -ENAMETOOLONG);
        pfd = parent_open(parent, ret_what);
        if (pfd < 0)
                return pfd;
        sfd = seats_open(pfd, ret_what);
        (void)close(pfd);
        if (sfd < 0)
                return sfd;
        r = seat_dir(sfd, name, uid, gid, ret_what);
        (void)close(sfd);
        return r;
}
