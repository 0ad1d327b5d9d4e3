/* docker_mountd: see docker_mountd.h. */
#include "providers/docker/docker_mountd.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "providers/provider.h"
#include "core/timeutil.h"

#define ANSWER_HEAD_MAX 1024 /* "ok" or "err N reason" (the helper's reasons are < 512) */

/* Wait for ev on fd until deadline (monotonic ms): 1, 0 timed out, -errno. */
static int wait_fd(int fd, short ev, int64_t deadline)
{
        for (;;) {
                struct pollfd p = { .fd = fd, .events = ev };
                int64_t left = deadline - timeutil_mono_ms();
                int n;

                if (left <= 0)
                        return 0;
                n = poll(&p, 1, (int)left);
                if (n > 0)
                        return 1;
                if (n < 0 && errno != EINTR)
                        return -errno;
        }
}

int docker_mountd_call(const char *sock, int timeout_ms, const char *line, char *ret_rest,
                       size_t rest_size, char *ret_err)
{
        struct sockaddr_un a = { .sun_family = AF_UNIX };
        int64_t deadline = timeutil_mono_ms() + timeout_ms;
        size_t cap = rest_size + ANSWER_HEAD_MAX, got = 0, len = strlen(line);
        char *buf = NULL, *nl = NULL;
        const char *why = NULL;
        int fd = -1, r = -EIO;

        if (ret_rest && rest_size)
                ret_rest[0] = '\0';
        if (strlen(sock) >= sizeof(a.sun_path)) {
                provider_errf(ret_err, "MOUNTD_SOCKET %.80s: too long", sock);
                return -EIO;
        }
        strcpy(a.sun_path, sock);
        buf = malloc(cap);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (!buf || fd < 0) {
                why = strerror(buf ? errno : ENOMEM);
                goto out;
        }
        if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0 && errno != EAGAIN &&
            errno != EINPROGRESS) {
                why = strerror(errno);
                goto out;
        }
        /* a full backlog: writable once the helper accepts */
        for (size_t sent = 0; sent <= len;) {
                const char *p = sent < len ? line + sent : "\n";
                size_t n = sent < len ? len - sent : 1;
                ssize_t w;

                if (wait_fd(fd, POLLOUT, deadline) <= 0) {
                        why = "no answer in time";
                        goto out;
                }
                w = send(fd, p, n, MSG_NOSIGNAL);
                if (w < 0 && errno != EAGAIN) {
                        why = strerror(errno);
                        goto out;
                }
                if (w > 0)
                        sent += (size_t)w;
        }
        while (!nl) {
                ssize_t n;

                if (got + 1 >= cap) {
                        why = "answer too long";
                        goto out;
                }
                if (wait_fd(fd, POLLIN, deadline) <= 0) {
                        why = "no answer in time";
                        goto out;
                }
                n = recv(fd, buf + got, cap - 1 - got, 0);
                if (n < 0 && errno == EAGAIN)
                        continue;
                if (n <= 0) {
                        why = n < 0 ? strerror(errno) : "it closed the connection without an answer";
                        goto out;
                }
                nl = memchr(buf + got, '\n', (size_t)n);
                got += (size_t)n;
        }
        *nl = '\0';
        if (!strncmp(buf, "ok", 2) && (buf[2] == '\0' || buf[2] == ' ')) {
                if (ret_rest && rest_size && buf[2]) {
                        if (strlen(buf + 3) >= rest_size) {
                                why = "answer too long";
                                goto out;
                        }
                        strcpy(ret_rest, buf + 3);
                }
                r = 0;
        } else if (!strncmp(buf, "err ", 4)) {
                const char *reason = strchr(buf + 4, ' ');

                provider_errf(ret_err, "sandbox-mountd: %.200s", reason ? reason + 1 : buf + 4);
                r = -EIO;
        } else {
                why = "an answer it does not give";
        }
out:
        if (why)
                provider_errf(ret_err,
                              "the host's mount helper (sandbox-mountd) at %s: %s (is it "
                              "running? docs/OPERATIONS.md, \"Host bounds\")",
                              sock, why);
        if (fd >= 0)
                close(fd);
        free(buf);
        return r;
}
