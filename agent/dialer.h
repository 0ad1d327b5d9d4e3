/* sandbox-agent: the dialing transport (docs/AGENT.md, "Transports").
 *
 * Where the host cannot connect to a socket bound inside the sandbox
 * (gVisor), the agent dials instead: it keeps DIALER_IDLE connections open
 * to the host relay's socket (sandbox-egress-relay --agent-dir), and the
 * relay hands each broker connection to one of them. The broker speaks
 * first, so an idle connection that becomes readable carries a request;
 * PID 1 hands it to a handler child exactly as an accepted one, and dials a
 * replacement. A failed dial is retried after 50 ms, doubling to 1 s. */
#pragma once

#include <poll.h>
#include <stdbool.h>

#define DIALER_IDLE 4

struct dialer {
        const char *path;
        int fd[DIALER_IDLE]; /* idle connections, non-blocking; -1: a free slot */
        long long next_try;  /* no dial before this (agent_now_ms) */
        int backoff_ms;
        bool failing; /* the last dial failed (logged once) */
};

void dialer_init(struct dialer *d, const char *path);

/* Dial until DIALER_IDLE connections are open, stopping at the first
 * failure (then not before next_try). Returns 0, or the failure's -errno
 * when it is the first since a success (for the caller to log once). */
int dialer_fill(struct dialer *d, long long now);

/* One pollfd per slot (POLLIN; fd -1 for a free slot, which poll skips). */
void dialer_pollfds(const struct dialer *d, struct pollfd *p);

/* Slot i was readable: its connection leaves the pool. Returns it, made
 * blocking, when it carries a request; -1 (closed) when the relay hung up. */
int dialer_take(struct dialer *d, int i);

/* Milliseconds until the next dial is due; -1 when the pool is full. */
int dialer_timeout(const struct dialer *d, long long now);
