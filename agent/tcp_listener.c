/* sandbox-agent: the TCP transport (tcp_listener.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "tcp_listener.h"

#define LISTEN_BACKLOG 1024

extern char **environ;

int tcp_key_from_env(const char *name, unsigned char key[TCP_KEY_LEN])
{
        char *found[16];
        size_t n = strlen(name), k = 0;
        int r = -ENOENT;

        for (char **e = environ; e && *e; e++) {
                if (strncmp(*e, name, n) != 0 || (*e)[n] != '=')
                        continue;
                if (r == -ENOENT)
                        r = tcp_key_parse(*e + n + 1, key);
                if (k < sizeof(found) / sizeof(found[0]))
                        found[k++] = *e;
                else
                        memset(*e + n + 1, 0, strlen(*e + n + 1)); /* at least the value */
        }
        (void)unsetenv(name);
        /* then in place, name and value: this is the memory that
         * /proc/<pid>/environ reads */
        for (size_t i = 0; i < k; i++)
                memset(found[i], 0, strlen(found[i]));
        return r;
}

/* A listening socket at ss, or -errno. */
static int listen_at(const struct sockaddr_storage *ss, socklen_t len)
{
        int one = 1, zero = 0, fd, r;

        fd = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (ss->ss_family == AF_INET6)
                (void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
        if (bind(fd, (const struct sockaddr *)ss, len) < 0 || listen(fd, LISTEN_BACKLOG) < 0) {
                r = -errno;
                (void)close(fd);
                return r;
        }
        return fd;
}

int tcp_listener_open(struct tcp_listener *t, const char *spec, const unsigned char key[TCP_KEY_LEN])
{
        struct sockaddr_storage ss;
        socklen_t len;

        memset(t, 0, sizeof(*t));
        t->fd = -1;
        for (int i = 0; i < TCP_HS_MAX; i++)
                t->hs[i].fd = -1;
        if (tcp_listen_parse(spec, &ss, &len) < 0)
                return -EINVAL;
        memcpy(t->key, key, TCP_KEY_LEN);
        t->fd = listen_at(&ss, len);
        /* just a port, on a host without IPv6 (a pod whose kernel has it
         * disabled): every IPv4 address instead */
        if ((t->fd == -EAFNOSUPPORT || t->fd == -EADDRNOTAVAIL) && !strchr(spec, ':')) {
                struct sockaddr_in s4 = { .sin_family = AF_INET,
                                          .sin_port = ((struct sockaddr_in6 *)&ss)->sin6_port,
                                          .sin_addr.s_addr = htonl(INADDR_ANY) };

                memset(&ss, 0, sizeof(ss));
                memcpy(&ss, &s4, sizeof(s4));
                t->fd = listen_at(&ss, sizeof(s4));
        }
        if (t->fd < 0) {
                int r = t->fd;

                t->fd = -1;
                return r;
        }
        return 0;
}

void tcp_listener_pollfds(const struct tcp_listener *t, struct pollfd p[TCP_POLLFDS])
{
        p[0] = (struct pollfd){ .fd = t->fd, .events = POLLIN };
        for (int i = 0; i < TCP_HS_MAX; i++)
                p[1 + i] = (struct pollfd){ .fd = t->hs[i].fd, .events = POLLIN };
}

int tcp_listener_timeout(const struct tcp_listener *t, long long now)
{
        long long next = -1;

        for (int i = 0; i < TCP_HS_MAX; i++)
                if (t->hs[i].fd >= 0 && (next < 0 || t->hs[i].deadline < next))
                        next = t->hs[i].deadline;
        if (next < 0)
                return -1;
        return next > now ? (int)(next - now) : 0;
}

static void hs_close(struct tcp_hs *h)
{
        if (h->fd >= 0)
                (void)close(h->fd);
        memset(h, 0, sizeof(*h));
        h->fd = -1;
}

static bool same_host(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
        if (a->ss_family != b->ss_family)
                return false;
        if (a->ss_family == AF_INET)
                return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
                       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
        if (a->ss_family == AF_INET6)
                return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
                               &((const struct sockaddr_in6 *)b)->sin6_addr, sizeof(struct in6_addr));
        return true;
}

/* A free slot; when none, the one to evict: the oldest of the peer that
 * holds the most slots. */
static struct tcp_hs *slot_for(struct tcp_listener *t)
{
        int best = -1, best_n = 0;

        for (int i = 0; i < TCP_HS_MAX; i++)
                if (t->hs[i].fd < 0)
                        return &t->hs[i];
        for (int i = 0; i < TCP_HS_MAX; i++) {
                int n = 0;

                for (int j = 0; j < TCP_HS_MAX; j++)
                        n += same_host(&t->hs[i].peer, &t->hs[j].peer);
                if (n > best_n || (n == best_n && t->hs[i].seq < t->hs[best].seq)) {
                        best = i;
                        best_n = n;
                }
        }
        hs_close(&t->hs[best]);
        return &t->hs[best];
}

static void accept_some(struct tcp_listener *t, long long now)
{
        for (int k = 0; k < TCP_ACCEPT_BATCH; k++) {
                struct sockaddr_storage peer;
                socklen_t len = sizeof(peer);
                int fd = accept4(t->fd, (struct sockaddr *)&peer, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
                struct tcp_hs *h;
                int one = 1;

                if (fd < 0) {
                        if (errno == EINTR || errno == ECONNABORTED)
                                continue;
                        return; /* EAGAIN; or EMFILE and the like: next round */
                }
                (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
                h = slot_for(t);
                h->fd = fd;
                h->state = TCP_HS_HELLO;
                h->deadline = now + TCP_HS_MS;
                h->seq = ++t->seq;
                h->peer = peer;
                h->got = 0;
        }
}

/* Read what the current frame still needs (never more: after the proof
 * come the HTTP bytes, the handler's). 1 complete, 0 not yet, -1 failed. */
static int frame_read(struct tcp_hs *h, size_t want)
{
        ssize_t n = recv(h->fd, h->in + h->got, want - h->got, MSG_DONTWAIT);

        if (n == 0)
                return -1;
        if (n < 0)
                return errno == EAGAIN || errno == EINTR ? 0 : -1;
        h->got += (size_t)n;
        return h->got == want;
}

/* Move handshake h on; true when it has passed. */
static bool hs_step(struct tcp_listener *t, struct tcp_hs *h)
{
        unsigned char reply[TCP_REPLY_LEN];
        int r;

        if (h->state == TCP_HS_HELLO) {
                r = frame_read(h, TCP_HELLO_LEN);
                if (r <= 0)
                        return r < 0 ? (hs_close(h), false) : false;
                if (tcp_hello_parse(h->in, h->nr) < 0 ||
                    getrandom(h->na, sizeof(h->na), 0) != (ssize_t)sizeof(h->na)) {
                        hs_close(h);
                        return false;
                }
                tcp_reply_build(t->key, h->nr, h->na, reply);
                /* 72 bytes into a new connection's empty send buffer: all
                 * or the peer is misbehaving */
                if (send(h->fd, reply, sizeof(reply), MSG_DONTWAIT | MSG_NOSIGNAL) !=
                    (ssize_t)sizeof(reply)) {
                        hs_close(h);
                        return false;
                }
                h->state = TCP_HS_PROOF;
                h->got = 0;
        }
        r = frame_read(h, TCP_PROOF_LEN);
        if (r <= 0)
                return r < 0 ? (hs_close(h), false) : false;
        if (tcp_proof_check(t->key, h->nr, h->na, h->in) < 0) {
                hs_close(h);
                return false;
        }
        return true;
}

void tcp_listener_run(struct tcp_listener *t, const struct pollfd p[TCP_POLLFDS], long long now,
                      void (*serve)(void *ctx, int fd), void *ctx)
{
        for (int i = 0; i < TCP_HS_MAX; i++) {
                struct tcp_hs *h = &t->hs[i];

                if (h->fd < 0 || p[1 + i].fd != h->fd)
                        continue;
                if (p[1 + i].revents && hs_step(t, h)) {
                        int fd = h->fd, flags = fcntl(fd, F_GETFL);

                        h->fd = -1; /* handed over */
                        hs_close(h);
                        if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0) {
                                (void)close(fd);
                                continue;
                        }
                        serve(ctx, fd);
                }
        }
        for (int i = 0; i < TCP_HS_MAX; i++)
                if (t->hs[i].fd >= 0 && t->hs[i].deadline <= now)
                        hs_close(&t->hs[i]);
        if (t->fd >= 0 && p[0].revents)
                accept_some(t, now);
}
