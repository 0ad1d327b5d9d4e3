/* tunnel: GET /tunnel?port=N (docs/AGENT.md): the broker's ingress reaches
 * a TCP port inside the sandbox. The agent connects to 127.0.0.1:N in the
 * sandbox's own network namespace, answers 101 Switching Protocols
 * (Upgrade: tcp), and from then on moves bytes both ways, uninterpreted,
 * until both sides have closed or nothing moved for AGENT_TUNNEL_IDLE_MS. */
#pragma once

#include "http.h"

/* Serve req (a handler child; owns nothing of req). Errors before the 101:
 * 400 bad port or a body, 502 nothing listens on the port. */
void tunnel_handle(struct http_request *req);
