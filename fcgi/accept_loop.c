/* accept_loop: see accept_loop.h. */
#include "accept_loop.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* What a kept connection may still hold of its request's body when the
 * handler did not read it all: nginx has sent the whole body by then
 * (fastcgi_request_buffering, client_max_body_size); more than this and the
 * connection is closed rather than read further. */
#define DRAIN_MAX_BYTES (64 * 1024)

struct accept_loop {
        int epfd;
        int listen_fd;
        int dead_fd; /* FCGX_Request's listening socket: accept() fails on it */
        int max_kept;
        atomic_int conns; /* open connections accepted here, idle or served */
};

static int arm(struct accept_loop *l, int fd, int op)
{
        struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP | EPOLLONESHOT, .data.fd = fd };

        return epoll_ctl(l->epfd, op, fd, &ev);
}

static void conn_close(struct accept_loop *l, int fd)
{
        (void)close(fd); /* also leaves the epoll set */
        atomic_fetch_sub(&l->conns, 1);
}

/* Back into the set: MOD for one that came from it, ADD for a new one. */
static void conn_rearm(struct accept_loop *l, int fd)
{
        if (arm(l, fd, EPOLL_CTL_MOD) == 0)
                return;
        if (errno == ENOENT && arm(l, fd, EPOLL_CTL_ADD) == 0)
                return;
        conn_close(l, fd);
}

int accept_loop_new(int listen_fd, int max_kept, struct accept_loop **ret)
{
        struct accept_loop *l;
        int flags, r;

        l = calloc(1, sizeof(*l));
        if (!l)
                return -ENOMEM;
        l->epfd = l->dead_fd = -1;
        l->listen_fd = listen_fd;
        l->max_kept = max_kept > 0 ? max_kept : 1;
        l->epfd = epoll_create1(EPOLL_CLOEXEC);
        /* a socket that never listens: libfcgi's accept() on it is EINVAL */
        l->dead_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (l->epfd < 0 || l->dead_fd < 0)
                goto fail;
        /* non-blocking: a thread woken for a connection another took gets
         * EAGAIN, not a blocked accept() */
        flags = fcntl(listen_fd, F_GETFL);
        if (flags < 0 || fcntl(listen_fd, F_SETFL, flags | O_NONBLOCK) < 0)
                goto fail;
        if (arm(l, listen_fd, EPOLL_CTL_ADD) < 0)
                goto fail;
        *ret = l;
        return 0;
fail:
        r = -errno;
        accept_loop_free(l);
        return r;
}

void accept_loop_init_request(struct accept_loop *l, FCGX_Request *fcgx)
{
        (void)FCGX_InitRequest(fcgx, l->dead_fd, 0);
}

static int accept_one(struct accept_loop *l)
{
        int fd = accept4(l->listen_fd, NULL, NULL, SOCK_CLOEXEC);
        int e = errno;

        if (arm(l, l->listen_fd, EPOLL_CTL_MOD) < 0 && fd < 0)
                return -errno;
        if (fd >= 0) {
                atomic_fetch_add(&l->conns, 1);
                return fd;
        }
        if (e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM) {
                /* out of descriptors: the backlog waits, the loop does not spin */
                struct timespec ts = { .tv_nsec = 10 * 1000 * 1000 };

                (void)nanosleep(&ts, NULL);
        }
        return -EAGAIN;
}

int accept_loop_next(struct accept_loop *l, FCGX_Request *fcgx)
{
        for (;;) {
                struct epoll_event ev;
                ssize_t peeked;
                char b;
                int fd, n;

                n = epoll_wait(l->epfd, &ev, 1, -1);
                if (n < 0 && errno != EINTR)
                        return -errno;
                if (n <= 0)
                        continue;
                if (ev.data.fd != l->listen_fd) {
                        /* a kept connection is readable: a request, or nginx
                         * closed it (libfcgi then reads EOF and drops it) */
                        fd = ev.data.fd;
                } else {
                        fd = accept_one(l);
                        if (fd == -EAGAIN)
                                continue;
                        if (fd < 0)
                                return fd;
                        /* nothing to read yet: libfcgi would block in read(),
                         * so it waits in the set like a kept one */
                        peeked = recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
                        if (peeked < 0 && (errno == EAGAIN || errno == EINTR)) {
                                conn_rearm(l, fd);
                                continue;
                        }
                        if (peeked <= 0) {
                                conn_close(l, fd);
                                continue;
                        }
                }
                /* FCGX_Accept_r finishes the previous request first and would
                 * close a connection that request did not keep */
                fcgx->ipcFd = fd;
                fcgx->keepConnection = 1;
                if (FCGX_Accept_r(fcgx) == 0)
                        return 0;
                /* a protocol error: libfcgi closed it, then failed to accept */
                fcgx->ipcFd = -1;
                atomic_fetch_sub(&l->conns, 1);
        }
}

/* Unread request body on a connection that stays: read and dropped, so
 * the next request's records start at the next byte. false: close it. */
static bool drain_input(FCGX_Request *fcgx)
{
        char buf[4096];
        size_t total = 0;
        int n;

        if (!fcgx->in)
                return true;
        while ((n = FCGX_GetStr(buf, sizeof(buf), fcgx->in)) > 0) {
                total += (size_t)n;
                if (total > DRAIN_MAX_BYTES)
                        return false;
        }
        return FCGX_GetError(fcgx->in) == 0;
}

void accept_loop_finish(struct accept_loop *l, FCGX_Request *fcgx)
{
        int fd = fcgx->ipcFd;

        if (fd < 0)
                return; /* finished already */
        if (fcgx->keepConnection && fcgx->in && !drain_input(fcgx))
                fcgx->keepConnection = 0;
        FCGX_Finish_r(fcgx);
        if (fcgx->ipcFd < 0) {
                /* not kept (or broken): FCGX_Finish_r closed it */
                atomic_fetch_sub(&l->conns, 1);
                return;
        }
        fcgx->ipcFd = -1;
        if (atomic_load(&l->conns) > l->max_kept)
                conn_close(l, fd);
        else
                conn_rearm(l, fd);
}

int accept_loop_conns(const struct accept_loop *l)
{
        return atomic_load(&l->conns);
}

void accept_loop_free(struct accept_loop *l)
{
        if (!l)
                return;
        if (l->epfd >= 0)
                (void)close(l->epfd);
        if (l->dead_fd >= 0)
                (void)close(l->dead_fd);
        free(l);
}
