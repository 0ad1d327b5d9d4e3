/* agent_tunnel: the broker's side of sandbox-agent's GET /tunnel?port=N
 * (docs/AGENT.md): a byte stream to 127.0.0.1:N inside a sandbox, for the
 * ingress daemon (ingress/, docs/INGRESS.md). The socket is reached as
 * every agent call reaches it (agent_connect: no link followed, S_ISSOCK
 * checked); the answer's head is parsed by agent_proto (capped, under a
 * deadline). Errors as agent_client.h, plus:
 *   -ENXIO   nothing accepts connections on that port in the sandbox (the
 *            agent's 502)
 *   -EBUSY   the agent is at its cap of connections (503) */
#pragma once
#include <stddef.h>

#define AGENT_TUNNEL_EARLY_MAX 16384 /* stream bytes that may follow the 101 in one read */

struct agent_tunnel {
        int fd;                             /* connected, non-blocking, O_CLOEXEC; the caller's */
        char early[AGENT_TUNNEL_EARLY_MAX]; /* stream bytes read with the head */
        size_t early_len;
};

/* Ask the agent in dir for a tunnel to port (1..65535), waiting at most
 * timeout_ms for the connect and the 101. On 0, ret->fd is the stream
 * (after ret->early_len bytes already read into ret->early) and the caller
 * closes it; on failure nothing is left open and ret_err says why. */
int agent_tunnel_open(const char *dir, int port, int timeout_ms, struct agent_tunnel *ret,
                      char *ret_err);
