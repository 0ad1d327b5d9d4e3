/* sandbox-agent: the listening socket (listener.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "listener.h"

#define LISTEN_BACKLOG 128

/* The owner of the directory that holds path. */
static int owner_of_parent(const char *path, uid_t *uid, gid_t *gid)
{
        char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
        const char *slash = strrchr(path, '/');
        struct stat st;
        size_t n = slash ? (size_t)(slash - path) : 0;

        if (n >= sizeof(dir))
                return -ENAMETOOLONG;
        if (n == 0)
                strcpy(dir, slash ? "/" : ".");
        else {
                memcpy(dir, path, n);
                dir[n] = '\0';
        }
        if (stat(dir, &st) < 0)
                return -errno;
        *uid = st.st_uid;
        *gid = st.st_gid;
        return 0;
}

/* A new listening socket at path; its fd and identity, or -errno. It is
 * bound and listening under a temporary name first, then renamed into
 * place: a client that sees the file never meets a socket that is bound
 * but not yet listening (ECONNREFUSED). */
static int bind_at(const char *path, int *ret_fd, struct stat *ret_st)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        mode_t old_mask;
        uid_t owner = 0;
        gid_t group = 0;
        int fd, r;

        if (strlen(path) + sizeof(".new") > sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        strcpy(sa.sun_path, path);
        strcat(sa.sun_path, ".new");
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return -errno;
        if (unlink(sa.sun_path) < 0 && errno != ENOENT) {
                r = -errno;
                goto fail;
        }
        /* Made 0600 from the start: no moment where others can connect. */
        old_mask = umask(0177);
        r = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
        (void)umask(old_mask);
        if (r < 0 || listen(fd, LISTEN_BACKLOG) < 0 || lstat(sa.sun_path, ret_st) < 0) {
                r = -errno;
                (void)unlink(sa.sun_path);
                goto fail;
        }
        /* The broker may run as a user of its own (the systemd units'
         * sandbox-broker): it owns the directory it made for this socket, so
         * the socket is handed to that owner (still 0600). Best effort: as
         * root in a sandbox that keeps CAP_CHOWN it works; elsewhere the
         * socket stays the agent's, which is what a root broker needs. */
        if (owner_of_parent(path, &owner, &group) == 0 &&
            (owner != ret_st->st_uid || group != ret_st->st_gid))
                (void)lchown(sa.sun_path, owner, group);
        if (rename(sa.sun_path, path) < 0 || lstat(path, ret_st) < 0) {
                r = -errno;
                (void)unlink(sa.sun_path);
                goto fail;
        }
        *ret_fd = fd;
        return 0;
fail:
        (void)close(fd);
        return r;
}

int listener_open(struct listener *l, const char *path)
{
        struct stat st;
        int r;

        *l = (struct listener){ .path = path, .fd = -1 };
        r = bind_at(path, &l->fd, &st);
        if (r < 0)
                return r;
        l->dev = st.st_dev;
        l->ino = st.st_ino;
        return 0;
}

int listener_check(struct listener *l)
{
        struct stat st;
        int fd, r;

        if (lstat(l->path, &st) == 0 && S_ISSOCK(st.st_mode) && st.st_dev == l->dev &&
            st.st_ino == l->ino)
                return 0;
        r = bind_at(l->path, &fd, &st);
        if (r < 0)
                return r;
        (void)close(l->fd);
        l->fd = fd;
        l->dev = st.st_dev;
        l->ino = st.st_ino;
        return 1;
}

void listener_close(struct listener *l)
{
        struct stat st;

        if (l->fd < 0)
                return;
        if (lstat(l->path, &st) == 0 && st.st_dev == l->dev && st.st_ino == l->ino)
                (void)unlink(l->path);
        (void)close(l->fd);
        l->fd = -1;
}
