/* sandbox-egress-relay: what its two roles share (relay.c). One epoll loop
 * serves both: egress (relay.c: EGRESS_DIR/<sandbox id>/egress.sock to Squid)
 * and the agents' (relay_agent.c: AGENT_DIR/<container id>/agent.sock paired
 * with the connections the agent dials to dial.sock). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "splice.h"

#define SID_LEN 32
#define SANDBOXES_MAX 4096
#define CONNS_PER_SANDBOX 256
#define CONNS_MAX 4096
#define BUF_SIZE (32 * 1024)
#define RESCAN_MS 2000

struct sandbox {
        bool used;
        bool seen; /* in the last scan */
        char sid[SID_LEN + 1];
        int lfd; /* listening socket */
        int n_conns;
};

struct actr;         /* relay_agent.c */
struct tcp_hs;       /* relay_tcp.c */
struct agent_marker; /* agent_marker.h */

#define RELAY_HS_MAX 256 /* TCP agents: connects and handshakes in progress, in all */
#define RELAY_HS_MS 5000 /* TCP agents: for the connect and the handshake */

struct conn {
        struct sandbox *sb; /* egress: its sandbox; NULL for an agent pair */
        struct actr *ac;    /* agent pair: its container; NULL for egress */
        struct splice pair; /* side 0: the client (sandbox, broker), 1: the server (squid, agent) */
        char buf[2][BUF_SIZE]; /* pair's buffers */
        bool connecting;       /* squid side not yet connected */
        struct tcp_hs *hs;     /* TCP agent pair: connect and handshake not yet done */
        bool dead;             /* closed; freed after the current batch of events */
        struct conn *next_dead;
};

/* epoll data: a tagged pointer. */
enum tag { T_INOTIFY, T_LISTEN, T_CONN0, T_CONN1 };
struct ref {
        enum tag tag;
        void *p;
};

struct relay {
        int dir_fd, ino_fd, ep;
        const char *dir; /* EGRESS_DIR; NULL: no egress role */
        int squid_port;
        struct sandbox sbs[SANDBOXES_MAX];
        struct ref sb_refs[SANDBOXES_MAX];
        int n_conns;
        struct conn *dead;             /* closed in this batch: another event may still name them */
        struct agents *agents;         /* the agents' role; NULL: none */
        struct conn *hs[RELAY_HS_MAX]; /* TCP agent pairs still in their handshake */
        int n_hs;
};

__attribute__((format(printf, 1, 2))) void relay_log(const char *fmt, ...);
long long relay_now_ms(void);
int relay_ep_ctl(struct relay *r, int op, int fd, uint32_t events, void *ref);

/* A listening socket `name` in the directory `sub` of top_fd, never
 * following a link: the directory is opened O_NOFOLLOW and the socket bound
 * through /proc/self/fd/N/name; a stale socket there goes first, anything
 * else is left (and the bind fails). Non-blocking; chmod'ed to mode.
 * Returns the fd or -errno. */
int relay_bind_in(int top_fd, const char *sub, const char *name, mode_t mode);

/* A new relayed connection, its fds -1, counted in r->n_conns until
 * closed; NULL when out of memory. */
struct conn *relay_conn_alloc(struct relay *r);
/* Both sides' fds set: register them in epoll and splice both ways (side 1
 * first waits for its connect when c->connecting). On failure c is closed,
 * -1. */
int relay_conn_start(struct relay *r, struct conn *c);
/* Close both sides; c is freed after the current batch of events. */
void relay_conn_close(struct relay *r, struct conn *c);
/* Set the epoll events of both sides from their buffers' state. */
void relay_conn_arm(struct relay *r, struct conn *c);

/* relay_agent.c: the agents' role. */
struct agents *agents_new(struct relay *r, const char *dir);
/* Bind, serve and drop containers as AGENT_DIR says (inotify and rescans). */
void agents_scan(struct relay *r);
/* An epoll event whose data is one of the role's refs: true when it was. */
bool agents_event(struct relay *r, void *ref, uint32_t ev);
/* Close pending broker connections past their wait; ms until the next one
 * is due (-1: none). */
int agents_tick(struct relay *r, long long now);
/* A pair of container ac closed (relay_conn_close). */
void agents_conn_closed(struct actr *ac);

/* relay_tcp.c: the connecting side of the TCP agents (docs/AGENT.md,
 * "TCP (Kubernetes)"). c has its broker side (side 0) set and counts
 * toward its container: connect to m's address, run the handshake of
 * tcp_auth.h with m's key, then splice as any pair. name: for the log
 * (lives as long as c). On failure c is closed. */
void relay_tcp_start(struct relay *r, struct conn *c, const struct agent_marker *m, const char *name);
/* An event of a pair in its handshake (c->hs set). */
void relay_tcp_event(struct relay *r, struct conn *c, int side, uint32_t ev);
/* Close handshakes past RELAY_HS_MS; ms until the next is due (-1: none). */
int relay_tcp_tick(struct relay *r, long long now);
/* c, in its handshake, is being closed: forget it. */
void relay_tcp_forget(struct relay *r, struct conn *c);
