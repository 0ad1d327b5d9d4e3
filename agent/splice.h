/* splice: moving bytes both ways between two sockets, with one fixed buffer
 * per direction and no interpretation (the egress relay child, egress.c,
 * and a tunnel to a port in the sandbox, tunnel.c). The caller owns the
 * poll loop: splice_events() says what to wait for, splice_pump() moves
 * what can move once poll() has answered. */
#pragma once

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>

#define SPLICE_BUF (16 * 1024)

struct splice_half {
        int fd;
        size_t off, len;
        bool eof;             /* this fd's read side ended; the peer's write side is shut */
        char buf[SPLICE_BUF]; /* read from fd, not yet written to the peer */
};

struct splice {
        struct splice_half side[2];
};

/* The events to poll for on side[0].fd and side[1].fd, into p[0] and p[1]. */
void splice_events(const struct splice *s, struct pollfd p[2]);

/* Move what can move after poll() filled p[0..1].revents (sockets
 * non-blocking). Returns false when the pair is over: both sides ended and
 * drained, or an error on either. The caller closes the fds. */
bool splice_pump(struct splice *s, const struct pollfd p[2]);
