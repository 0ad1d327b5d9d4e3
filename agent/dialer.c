/* sandbox-agent: the dialing transport (dialer.h). */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "dialer.h"

#define BACKOFF_MIN_MS 50
#define BACKOFF_MAX_MS 1000

void dialer_init(struct dialer *d, const char *path)
{
        *d = (struct dialer){ .path = path, .backoff_ms = BACKOFF_MIN_MS };
        for (int i = 0; i < DIALER_IDLE; i++)
                d->fd[i] = -1;
}

/* A connection to the relay, or -errno. A unix connect completes at once or
 * fails (EAGAIN: the relay's backlog is full); it never blocks PID 1. */
static int dial(const char *path)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int fd, e;

        if (strlen(path) >= sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        strcpy(sa.sun_path, path);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
                e = -errno;
                (void)close(fd);
                return e;
        }
        return fd;
}

int dialer_fill(struct dialer *d, long long now)
{
        if (now < d->next_try)
                return 0;
        for (int i = 0; i < DIALER_IDLE; i++) {
                int fd;

                if (d->fd[i] >= 0)
                        continue;
                fd = dial(d->path);
                if (fd < 0) {
                        bool first = !d->failing;

                        d->failing = true;
                        d->next_try = now + d->backoff_ms;
                        if (d->backoff_ms < BACKOFF_MAX_MS)
                                d->backoff_ms *= 2;
                        return first ? fd : 0;
                }
                d->fd[i] = fd;
                d->failing = false;
                d->backoff_ms = BACKOFF_MIN_MS;
        }
        return 0;
}

void dialer_pollfds(const struct dialer *d, struct pollfd *p)
{
        for (int i = 0; i < DIALER_IDLE; i++)
                p[i] = (struct pollfd){ .fd = d->fd[i], .events = POLLIN };
}

int dialer_take(struct dialer *d, int i)
{
        int fd = d->fd[i], flags;
        char c;

        d->fd[i] = -1;
        if (fd < 0)
                return -1;
        /* the relay closes an idle connection when it stops serving: no
         * handler for an end of file */
        if (recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) <= 0 ||
            (flags = fcntl(fd, F_GETFL)) < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0) {
                (void)close(fd);
                return -1;
        }
        return fd;
}

int dialer_timeout(const struct dialer *d, long long now)
{
        for (int i = 0; i < DIALER_IDLE; i++)
                if (d->fd[i] < 0)
                        return d->next_try > now ? (int)(d->next_try - now) : 0;
        return -1;
}
