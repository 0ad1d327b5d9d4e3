/* splice: see splice.h. */
#include <errno.h>
#include <sys/socket.h>

#include "splice.h"

void splice_half_init(struct splice_half *h, int fd, char *buf, size_t size)
{
        *h = (struct splice_half){ .fd = fd, .buf = buf, .size = size };
}

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
                        ssize_t n = recv(h->fd, h->buf, h->size, MSG_DONTWAIT);
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
                        ssize_t n = send(peer->fd, h->buf + h->off, h->len - h->off,
                                         MSG_NOSIGNAL | MSG_DONTWAIT);
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

int splice_run(struct splice *s, int idle_ms)
{
        for (;;) {
                struct pollfd p[2];
                int n;

                splice_events(s, p);
                n = poll(p, 2, idle_ms);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                if (n == 0)
                        return -ETIMEDOUT;
                if (!splice_pump(s, p))
                        return s->side[0].eof && s->side[1].eof && !s->side[0].len && !s->side[1].len
                                       ? 0
                                       : -EPIPE;
        }
}
