/* sandbox-agent: file reads and writes (files.h). Paths are the sandbox's
 * own: the agent runs in its mount namespace with its privileges, so there
 * is nothing to confine; only regular files are read or written (a FIFO or
 * a device could block a handler forever). Bodies stream: no file is held
 * in memory. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "agent.h"
#include "files.h"

/* Octal, 1 to 5 digits, at most 07777. */
static int parse_mode(const char *s, mode_t *ret)
{
        unsigned n = 0;
        size_t i;

        for (i = 0; s[i]; i++) {
                if (s[i] < '0' || s[i] > '7' || i >= 5)
                        return -EINVAL;
                n = n * 8 + (unsigned)(s[i] - '0');
        }
        if (i == 0 || n > 07777)
                return -EINVAL;
        *ret = n;
        return 0;
}

/* "uid:gid", both decimal. */
static int parse_owner(const char *s, uid_t *ret_uid, gid_t *ret_gid)
{
        const char *colon = strchr(s, ':');
        char uid[16];
        long long u, g;

        if (!colon || (size_t)(colon - s) >= sizeof(uid))
                return -EINVAL;
        memcpy(uid, s, (size_t)(colon - s));
        uid[colon - s] = '\0';
        if (http_parse_decimal(uid, &u) < 0 || http_parse_decimal(colon + 1, &g) < 0 || u >= 0xffffffffLL ||
            g >= 0xffffffffLL)
                return -EINVAL;
        *ret_uid = (uid_t)u;
        *ret_gid = (gid_t)g;
        return 0;
}

/* The status for an errno of open/mkdir on a path (docs/AGENT.md). */
static int errno_status(int e)
{
        switch (e) {
        case ENOENT:
        case ENOTDIR: return 404;
        case EACCES:
        case EPERM:
        case EROFS: return 403;
        case EISDIR:
        case ELOOP:
        case ENXIO:
        case ENAMETOOLONG:
        case ETXTBSY: return 400;
        case ENOSPC:
        case EDQUOT: return 507;
        case EFBIG: return 413;
        default: return 500;
        }
}

static void sock_timeouts(int fd)
{
        struct timeval tv = { .tv_sec = AGENT_STALL_TIMEOUT_MS / 1000 };

        (void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        (void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/* Only the parameters in `known` (NULL-terminated) may appear; the path one
 * must and be absolute. Answers 400 and returns -1 otherwise. */
static int check_params(struct http_request *req, const char *const *known, const char **ret_path)
{
        const char *path = http_param(req, "path");

        for (size_t i = 0; i < req->n_params; i++) {
                const char *const *k;

                for (k = known; *k && strcmp(*k, req->params[i].name) != 0; k++)
                        ;
                if (!*k)
                        return http_reply_error(req, 400, "unknown parameter %s",
                                                req->params[i].name),
                               -1;
        }
        if (!path || path[0] != '/')
                return http_reply_error(req, 400, "path must be an absolute path"), -1;
        *ret_path = path;
        return 0;
}

/* Copy len bytes of fd from offset to the socket: sendfile, or read/write
 * where the file system has no sendfile. Stops early if the file shrank
 * (the client then sees a short body). */
static void copy_out(int sock, int fd, off_t offset, long long len)
{
        char *buf = NULL;

        while (len > 0) {
                ssize_t n = sendfile(sock, fd, &offset, len > (1 << 30) ? (1 << 30) : (size_t)len);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && (errno == EINVAL || errno == ENOSYS))
                        break;
                if (n <= 0)
                        return;
                len -= n;
        }
        if (len > 0)
                buf = malloc(AGENT_IO_CHUNK);
        while (buf && len > 0) {
                ssize_t n = pread(fd, buf, len > AGENT_IO_CHUNK ? AGENT_IO_CHUNK : (size_t)len,
                                  offset);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0 || http_write_all(sock, buf, (size_t)n) < 0)
                        break;
                offset += n;
                len -= n;
        }
        free(buf);
}

void files_get(struct http_request *req)
{
        static const char *const known[] = { "path", "offset", "length", NULL };
        const char *path, *v;
        long long offset = 0, length = -1, len;
        struct stat st;
        int fd = -1;

        if (check_params(req, known, &path) < 0)
                return;
        if ((v = http_param(req, "offset")) && http_parse_decimal(v, &offset) < 0) {
                (void)http_reply_error(req, 400, "bad offset");
                return;
        }
        if ((v = http_param(req, "length")) && http_parse_decimal(v, &length) < 0) {
                (void)http_reply_error(req, 400, "bad length");
                return;
        }
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0) {
                (void)http_reply_error(req, errno_status(errno), "%s: %s", path, strerror(errno));
                return;
        }
        if (fstat(fd, &st) < 0) {
                (void)http_reply_error(req, 500, "%s: %s", path, strerror(errno));
                goto out;
        }
        if (!S_ISREG(st.st_mode)) {
                (void)http_reply_error(req, 400, "%s: %s", path,
                                       S_ISDIR(st.st_mode) ? "is a directory" : "not a regular file");
                goto out;
        }
        len = offset >= st.st_size ? 0 : st.st_size - offset;
        if (length >= 0 && length < len)
                len = length;
        sock_timeouts(req->fd);
        if (http_reply_head(req, 200, "application/octet-stream", len) == 0)
                copy_out(req->fd, fd, (off_t)offset, len);
out:
        (void)close(fd);
}

/* mkdir -p of path's parents, mode 0755, given to uid:gid when owner is set.
 * Returns 0 or -errno with the directory that failed left in path. */
static int make_parents(char *path, bool owner, uid_t uid, gid_t gid)
{
        for (char *s = strchr(path + 1, '/'); s; s = strchr(s + 1, '/')) {
                *s = '\0';
                if (mkdir(path, 0755) == 0) {
                        if (owner && chown(path, uid, gid) < 0)
                                return -errno;
                } else if (errno != EEXIST) {
                        return -errno;
                }
                *s = '/';
        }
        return 0;
}

static int write_all(int fd, const char *p, size_t len)
{
        while (len > 0) {
                ssize_t n = write(fd, p, len);

                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                p += n;
                len -= (size_t)n;
        }
        return 0;
}

void files_put(struct http_request *req)
{
        static const char *const known[] = { "path", "mode", "owner", "append", NULL };
        const char *path, *v;
        bool append = false, has_mode = false, has_owner = false;
        mode_t mode = 0644;
        uid_t uid = 0;
        gid_t gid = 0;
        char *dir = NULL, *buf = NULL;
        size_t bufsize;
        long long written = -1; /* body bytes written, once writing began */
        struct stat st;
        int fd = -1, flags, r;

        if (check_params(req, known, &path) < 0)
                return;
        if ((v = http_param(req, "mode"))) {
                if (parse_mode(v, &mode) < 0) {
                        (void)http_reply_error(req, 400, "bad mode (octal, at most 07777)");
                        return;
                }
                has_mode = true;
        }
        if ((v = http_param(req, "owner"))) {
                if (parse_owner(v, &uid, &gid) < 0) {
                        (void)http_reply_error(req, 400, "bad owner (uid:gid)");
                        return;
                }
                has_owner = true;
        }
        if ((v = http_param(req, "append"))) {
                if (strcmp(v, "0") != 0 && strcmp(v, "1") != 0) {
                        (void)http_reply_error(req, 400, "append must be 0 or 1");
                        return;
                }
                append = v[0] == '1';
        }
        if (req->content_length < 0) {
                (void)http_reply_error(req, 411, "Content-Length is required");
                return;
        }
        /* A small body needs no more buffer than itself (a chunk would be
         * an mmap and munmap per write). */
        bufsize = req->content_length < AGENT_IO_CHUNK ? (size_t)req->content_length + 1
                                                       : AGENT_IO_CHUNK;
        buf = malloc(bufsize);
        if (!buf) {
                (void)http_reply_error(req, 500, "out of memory");
                goto out;
        }
        /* The parents usually exist: make them only when the open says
         * one is missing. No O_TRUNC: the body overwrites the file from
         * its start and the tail is cut after (below), because a
         * truncation to 0 frees the file's blocks (a discard on a
         * discard-mounted disk) and makes ext4 start writeback at close
         * (auto_da_alloc): most of a small write's time. */
        flags = O_WRONLY | O_CREAT | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | (append ? O_APPEND : 0);
        fd = open(path, flags, mode);
        if (fd < 0 && errno == ENOENT) {
                dir = strdup(path);
                if (!dir) {
                        (void)http_reply_error(req, 500, "out of memory");
                        goto out;
                }
                r = make_parents(dir, has_owner, uid, gid);
                if (r < 0) {
                        /* A parent that cannot be made is 404, unless for want of rights or room. */
                        int status = errno_status(-r);

                        (void)http_reply_error(req, status == 403 || status == 507 ? status : 404,
                                               "%s: %s", dir, strerror(-r));
                        goto out;
                }
                fd = open(path, flags, mode);
        }
        if (fd < 0) {
                (void)http_reply_error(req, errno_status(errno), "%s: %s", path, strerror(errno));
                goto out;
        }
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
                (void)http_reply_error(req, 400, "%s: not a regular file", path);
                goto out;
        }
        /* Owner before mode: chown clears the set-id bits. */
        if ((has_owner && fchown(fd, uid, gid) < 0) ||
            (has_mode && fchmod(fd, mode) < 0)) {
                (void)http_reply_error(req, errno_status(errno), "%s: %s", path, strerror(errno));
                goto out;
        }
        sock_timeouts(req->fd);
        written = 0;
        for (;;) {
                long n = http_body_read(req, buf, bufsize);

                if (n == 0)
                        break;
                if (n < 0) {
                        (void)http_reply_error(req, 400, "body: %s",
                                               n == -EAGAIN ? "timed out"
                                                            : "shorter than Content-Length");
                        goto out;
                }
                r = write_all(fd, buf, (size_t)n);
                if (r < 0) {
                        (void)http_reply_error(req, errno_status(-r), "%s: %s", path, strerror(-r));
                        goto out;
                }
                written += n;
        }
        /* The old bytes past the new end go before the answer; the file
         * is then the body, as if it had been truncated first. */
        if (!append && written < st.st_size && ftruncate(fd, written) < 0) {
                (void)http_reply_error(req, errno_status(errno), "%s: %s", path, strerror(errno));
                goto out;
        }
        written = -1;
        (void)http_reply_head(req, 204, NULL, HTTP_NO_BODY);
out:
        /* A body cut short leaves what came of it, no old tail. */
        if (fd >= 0 && !append && written >= 0 && written < st.st_size)
                (void)ftruncate(fd, written);
        if (fd >= 0)
                (void)close(fd);
        free(dir);
        free(buf);
}
