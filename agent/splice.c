/* splice: see splice.h. */
#include <errno.h>
#include <sys/socket.h>

#include "splice.h"

void splice_events(const struct splice *s, struct pollfd p[2])
{
        for (int i = 0; i < 2; i++) {
                const struct splice_half *h = &s->side[i], *peer = &s->side[1 - i];
                short ev = 0;

                if (!h->eof && h->len == 0)
                        ev |= POLLIN;
                if (peer->len > peer->off)
                        ev |= POLLOUT;
                /* Waiting for nothing on a live side (its buffer full, the
                 * peer slow): left out, or a POLLHUP it already has would
                 * wake poll() at once, again and again. An ended side stays
                 * in: its POLLHUP ends the pair (splice_pump). */
                p[i] = (struct pollfd){ .fd = ev || h->eof ? h->fd : -1, .events = ev };
        }
}

bool splice_pump(struct splice *s, const struct pollfd p[2])
{
        for (int i = 0; i < 2; i++) {
                struct splice_half *h = &s->side[i], *peer = &s->side[1 - i];

                if (p[i].revents & POLLERR)
                        return false;
                /* Read to its end and hung up: nothing can pass to or from
                 * this side any more (else poll() would report it forever) */
                if ((p[i].revents & POLLHUP) && h->eof)
                        return false;
                if (!h->eof && h->len == 0 && (p[i].revents & (POLLIN | POLLHUP))) {
                        ssize_t n = recv(h->fd, h->buf, sizeof(h->buf), 0);
                        if (n == 0) {
                                h->eof = true;
                                (void)shutdown(peer->fd, SHUT_WR);
                        } else if (n < 0) {
                                if (errno != EAGAIN && errno != EINTR)
                                        return false;
                        } else {
                                h->len = (size_t)n;
                                h->off = 0;
                        }
                }
                while (h->len > h->off) {
                        ssize_t n = send(peer->fd, h->buf + h->off, h->len - h->off, MSG_NOSIGNAL);
                        if (n < 0) {
                                if (errno == EAGAIN || errno == EINTR)
                                        break;
                                return false;
                        }
                        h->off += (size_t)n;
                }
                if (h->off == h->len)
                        h->off = h->len = 0;
        }
        return !(s->side[0].eof && s->side[1].eof && !s->side[0].len && !s->side[1].len);
}
