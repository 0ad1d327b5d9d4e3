/* splice: the one byte pump of the tree, moving bytes both ways between two
 * stream sockets with one buffer per direction and no interpretation. Its
 * users: the agent's egress child (egress.c) and its tunnels to a port in
 * the sandbox (tunnel.c), the host's egress relay (egress/relay.c, its
 * Squid, unix-agent and TCP-agent pairs) and sandbox-ingress
 * (ingress/ingress.c). libc only, so that the static agent and the libc-only
 * relay compile it in; ingress links its object.
 *
 * The end of a side's reading (EOF) shuts the peer's write side at once (a
 * half-close passes through); the pair is over when both sides have ended
 * and nothing is left to write, or at the first error of either side. The
 * caller owns the fds (it closes them) and the buffers (each holds what was
 * read from its side and not yet written to the other).
 *
 * Two ways to drive it: splice_run(), a whole poll() loop with an idle
 * bound; or the caller's own loop, poll() (splice_events(), then
 * splice_pump() with the answers) or epoll (the relay: splice_events() for
 * the interest, splice_pump() with POLLIN on both sides, reads that find
 * nothing answering EAGAIN). Sockets may be blocking or not: every recv()
 * and send() is MSG_DONTWAIT, every send() MSG_NOSIGNAL. */
#pragma once

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>

/* The agent's buffer per direction (docs/AGENT.md, docs/EGRESS.md). */
#define SPLICE_BUF (16 * 1024)

struct splice_half {
        int fd;
        char *buf;       /* read from fd, not yet written to the peer; the caller's */
        size_t size;     /* of buf */
        size_t off, len; /* buf[off..len) is still to write */
        bool eof;        /* this fd's read side ended; the peer's write side is shut */
};

struct splice {
        struct splice_half side[2];
};

/* Set h to the fd (may be -1, set later) with the empty buffer buf of size
 * bytes (> 0), not ended. */
void splice_half_init(struct splice_half *h, int fd, char *buf, size_t size);

/* The events to poll for on side[0].fd and side[1].fd, into p[0] and p[1]
 * (POLLIN and POLLOUT have the values of EPOLLIN and EPOLLOUT). A live side
 * that waits for nothing gets fd -1 (a POLLHUP it already has would wake
 * poll() again and again); an ended side stays in, its POLLHUP ends the
 * pair. */
void splice_events(const struct splice *s, struct pollfd p[2]);

/* Move what can move once p[0..1].revents are known: read a side whose
 * buffer is empty and that reported POLLIN or POLLHUP, write every buffer
 * that holds bytes. Returns false when the pair is over: both sides ended
 * and drained, POLLERR on either, a POLLHUP on a side already ended, or a
 * recv()/send() error other than EAGAIN and EINTR (EPIPE, ECONNRESET...). */
bool splice_pump(struct splice *s, const struct pollfd p[2]);

/* splice_events(), poll() and splice_pump() until the pair is over or
 * idle_ms (-1: no bound) pass without an event. Returns 0 when both sides
 * ended and drained, -ETIMEDOUT when idle, -EPIPE when it ended otherwise
 * (an error, a side that hung up while bytes were left for it), or -errno
 * of poll(). */
int splice_run(struct splice *s, int idle_ms);
