/* sandbox-agent: the TCP transport (--listen-tcp, docs/AGENT.md,
 * "Transports", "TCP (Kubernetes)"). Where the broker's host is another
 * node (a Kubernetes pod), the host relay connects to the pod's address;
 * anyone else on the pod network can connect too. So no connection is
 * served before the mutual handshake of tcp_auth.h has passed, and that
 * handshake runs here, in PID 1's poll loop, non-blocking: no fork, no
 * buffer beyond a fixed table, TCP_HS_MAX handshakes in progress, each
 * with TCP_HS_MS for the whole of it. A connection over the cap evicts
 * one in progress: the oldest of the peer address holding the most slots,
 * so that a neighbour flooding the port evicts its own connections, not
 * the relay's (which finishes within a round trip anyway). */
#pragma once

#include <poll.h>
#include <stdbool.h>
#include <sys/socket.h>

#include "tcp_auth.h"

#define TCP_HS_MAX 64        /* handshakes in progress */
#define TCP_HS_MS 2000       /* for the whole handshake, from accept */
#define TCP_ACCEPT_BATCH 256 /* accepts per loop round (signals are not starved) */
#define TCP_POLLFDS (1 + TCP_HS_MAX)

enum tcp_hs_state { TCP_HS_FREE, TCP_HS_HELLO, TCP_HS_PROOF };

struct tcp_hs {
        int fd;
        enum tcp_hs_state state;
        long long deadline, seq;
        struct sockaddr_storage peer;
        size_t got; /* bytes of the current frame read */
        unsigned char in[TCP_HELLO_LEN];
        unsigned char nr[TCP_NONCE_LEN], na[TCP_NONCE_LEN];
};

struct tcp_listener {
        int fd; /* -1: not listening */
        unsigned char key[TCP_KEY_LEN];
        struct tcp_hs hs[TCP_HS_MAX];
        long long seq;
};

/* Read the key from the environment variable name (64 lowercase hex),
 * then overwrite every "name=..." entry's bytes in place (so that
 * /proc/<pid>/environ no longer shows it) and unset it (so that nothing
 * started later inherits it). 0, or -ENOENT (not set), -EINVAL (malformed;
 * also overwritten). */
int tcp_key_from_env(const char *name, unsigned char key[TCP_KEY_LEN]);

/* Listen on spec ("[ADDR:]PORT", tcp_listen_parse). 0 or -errno. */
int tcp_listener_open(struct tcp_listener *t, const char *spec, const unsigned char key[TCP_KEY_LEN]);

/* The listening socket and every handshake's fd (fd -1 where none). */
void tcp_listener_pollfds(const struct tcp_listener *t, struct pollfd p[TCP_POLLFDS]);

/* ms until the next handshake deadline, -1: none. */
int tcp_listener_timeout(const struct tcp_listener *t, long long now);

/* After poll: accept, move handshakes on, close those past their deadline
 * or failing. Each connection whose handshake has passed is handed, in
 * blocking mode, to serve(ctx, fd), which owns it. */
void tcp_listener_run(struct tcp_listener *t, const struct pollfd p[TCP_POLLFDS], long long now,
                      void (*serve)(void *ctx, int fd), void *ctx);
