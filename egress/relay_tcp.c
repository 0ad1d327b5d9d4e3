/* sandbox-egress-relay: the connecting side of the TCP agents (relay.h,
 * docs/AGENT.md, "TCP (Kubernetes)").
 *
 * A broker connection accepted on AGENT_DIR/<ref>/agent.sock of a .tcp
 * marker becomes a pair whose agent side is a non-blocking TCP connect to
 * the marker's address. Before a byte of the broker's is passed on, the
 * handshake of tcp_auth.h runs here as the connecting side: HELLO with a
 * fresh nonce, the agent's REPLY checked (its proof of the key over both
 * nonces), then our PROOF, queued ahead of the broker's bytes in the pair's
 * buffer. Whatever fails (connect, a wrong proof, RELAY_HS_MS for all of
 * it, the broker hanging up) closes the pair: the broker sees its
 * connection closed with no answer ("sandbox agent unreachable"); an
 * impostor at the address never sees a broker byte. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent_marker.h"
#include "relay.h"
#include "tcp_auth.h"

enum hs_state { HS_CONNECT, HS_REPLY };

struct tcp_hs {
        enum hs_state state;
        long long deadline;
        const char *name; /* the container's ref, for the log */
        char addr[INET6_ADDRSTRLEN + 8];
        unsigned char key[TCP_KEY_LEN];
        unsigned char nr[TCP_NONCE_LEN];
        unsigned char in[TCP_REPLY_LEN];
        size_t got;
};

static void addr_text(const struct agent_marker *m, char *buf, size_t size)
{
        char ip[INET6_ADDRSTRLEN] = "?";

        if (m->addr.ss_family == AF_INET6) {
                const struct sockaddr_in6 *s6 = (const void *)&m->addr;

                (void)inet_ntop(AF_INET6, &s6->sin6_addr, ip, sizeof(ip));
                snprintf(buf, size, "[%s]:%u", ip, ntohs(s6->sin6_port));
        } else {
                const struct sockaddr_in *s4 = (const void *)&m->addr;

                (void)inet_ntop(AF_INET, &s4->sin_addr, ip, sizeof(ip));
                snprintf(buf, size, "%s:%u", ip, ntohs(s4->sin_port));
        }
}

void relay_tcp_forget(struct relay *r, struct conn *c)
{
        for (int i = 0; i < r->n_hs; i++) {
                if (r->hs[i] == c) {
                        r->hs[i] = r->hs[--r->n_hs];
                        break;
                }
        }
        memset(c->hs, 0, sizeof(*c->hs));
        free(c->hs);
        c->hs = NULL;
}

static void fail(struct relay *r, struct conn *c, const char *what)
{
        relay_log("agent of %s at %s: %s; connection closed", c->hs->name, c->hs->addr, what);
        relay_conn_close(r, c);
}

void relay_tcp_start(struct relay *r, struct conn *c, const struct agent_marker *m, const char *name)
{
        struct tcp_hs *hs;
        int one = 1;

        if (r->n_hs >= RELAY_HS_MAX) {
                relay_log("agent of %s: %d handshakes in progress; a connection refused", name,
                          RELAY_HS_MAX);
                relay_conn_close(r, c);
                return;
        }
        hs = calloc(1, sizeof(*hs));
        if (!hs) {
                relay_conn_close(r, c);
                return;
        }
        c->hs = hs;
        r->hs[r->n_hs++] = c;
        hs->name = name;
        hs->deadline = relay_now_ms() + RELAY_HS_MS;
        memcpy(hs->key, m->key, TCP_KEY_LEN);
        addr_text(m, hs->addr, sizeof(hs->addr));
        if (getrandom(hs->nr, sizeof(hs->nr), 0) != (ssize_t)sizeof(hs->nr)) {
                fail(r, c, "getrandom failed");
                return;
        }
        c->pair.side[1].fd = socket(m->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (c->pair.side[1].fd < 0) {
                fail(r, c, strerror(errno));
                return;
        }
        (void)setsockopt(c->pair.side[1].fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        if (connect(c->pair.side[1].fd, (const struct sockaddr *)&m->addr, m->addr_len) < 0 &&
            errno != EINPROGRESS) {
                fail(r, c, strerror(errno));
                return;
        }
        hs->state = HS_CONNECT;
        /* the broker's side is not read until the handshake has passed:
         * only its hangup (always reported) is watched */
        if (relay_ep_ctl(r, EPOLL_CTL_ADD, c->pair.side[0].fd, 0, (char *)c + 0) < 0 ||
            relay_ep_ctl(r, EPOLL_CTL_ADD, c->pair.side[1].fd, EPOLLOUT, (char *)c + 1) < 0)
                fail(r, c, strerror(errno));
}

/* Connected: send HELLO. */
static void on_connected(struct relay *r, struct conn *c)
{
        struct tcp_hs *hs = c->hs;
        unsigned char hello[TCP_HELLO_LEN];
        int err = 0;
        socklen_t l = sizeof(err);

        if (getsockopt(c->pair.side[1].fd, SOL_SOCKET, SO_ERROR, &err, &l) < 0 || err) {
                fail(r, c, err ? strerror(err) : "connect failed");
                return;
        }
        tcp_hello_build(hs->nr, hello);
        /* 40 bytes into a new connection's empty send buffer: all of it */
        if (send(c->pair.side[1].fd, hello, sizeof(hello), MSG_NOSIGNAL) != (ssize_t)sizeof(hello)) {
                fail(r, c, "cannot send the handshake");
                return;
        }
        hs->state = HS_REPLY;
        if (relay_ep_ctl(r, EPOLL_CTL_MOD, c->pair.side[1].fd, EPOLLIN, (char *)c + 1) < 0)
                fail(r, c, strerror(errno));
}

/* The agent's REPLY, read exactly (nothing of what follows). */
static void on_reply(struct relay *r, struct conn *c)
{
        struct tcp_hs *hs = c->hs;
        unsigned char na[TCP_NONCE_LEN];
        ssize_t n = recv(c->pair.side[1].fd, hs->in + hs->got, sizeof(hs->in) - hs->got, 0);

        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
                fail(r, c, n == 0 ? "closed during the handshake" : strerror(errno));
                return;
        }
        if (n < 0)
                return;
        hs->got += (size_t)n;
        if (hs->got >= TCP_MAGIC_LEN && memcmp(hs->in, TCP_MAGIC, TCP_MAGIC_LEN) != 0) {
                fail(r, c, "handshake refused: not the sandbox's agent (no handshake)");
                return;
        }
        if (hs->got < sizeof(hs->in))
                return;
        if (tcp_reply_check(hs->key, hs->nr, hs->in, na) < 0) {
                fail(r, c, "handshake refused: not the sandbox's agent (wrong key)");
                return;
        }
        /* our proof goes first, then whatever the broker sends */
        tcp_proof_build(hs->key, hs->nr, na, (unsigned char *)c->pair.side[0].buf);
        c->pair.side[0].off = 0;
        c->pair.side[0].len = TCP_PROOF_LEN;
        relay_tcp_forget(r, c);
        relay_conn_arm(r, c);
}

void relay_tcp_event(struct relay *r, struct conn *c, int side, uint32_t ev)
{
        if (side == 0) {
                if (ev & (EPOLLHUP | EPOLLERR))
                        relay_conn_close(r, c); /* the broker is gone */
                return;
        }
        if (c->hs->state == HS_CONNECT) {
                if (ev & (EPOLLOUT | EPOLLERR | EPOLLHUP))
                        on_connected(r, c);
        } else {
                on_reply(r, c);
        }
}

int relay_tcp_tick(struct relay *r, long long now)
{
        long long next = -1;

        for (int i = 0; i < r->n_hs;) {
                struct conn *c = r->hs[i];

                if (c->hs->deadline <= now) {
                        fail(r, c, "no handshake within the deadline"); /* leaves r->hs */
                        continue;
                }
                if (next < 0 || c->hs->deadline < next)
                        next = c->hs->deadline;
                i++;
        }
        return next < 0 ? -1 : (int)(next - now);
}
