/* egress: the in-sandbox end of egress (docs/EGRESS.md): a child of the
 * agent listening on 127.0.0.1:3128 and relaying each connection to the
 * host's relay through EGRESS_SOCK_IN (mounted read-only by the broker). */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#define EGRESS_DIR_IN "/.sandbox-broker/egress"
#define EGRESS_SOCK_IN EGRESS_DIR_IN "/egress.sock"
#define EGRESS_PORT_IN 3128

/* Whether the broker mounted the egress directory into this sandbox. */
bool egress_enabled(void);

/* Put HTTP(S)_PROXY/NO_PROXY (both cases) into the agent's environment
 * unless set already, so that the entrypoint and every command inherit them
 * (a command's own env entries still replace them). */
void egress_env_set(void);

/* Fork the relay child; returns its pid (or -1, errno set). The child
 * never returns; it dies with the agent (PR_SET_PDEATHSIG). */
pid_t egress_start(void);
