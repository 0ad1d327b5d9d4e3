/* sandbox-agent: POST /exec (docs/AGENT.md). */
#pragma once

#include "http.h"

/* Run the command the request describes and answer with the frames of its
 * output and its exit (or a 4xx before anything runs). Returns when the
 * command has ended (or, detached, once it has started). */
void exec_handle(struct http_request *req);

/* POST /entrypoint: start the command the request describes (arg, env,
 * cwd, user; no stdin, record or timeout) as the sandbox's entrypoint,
 * when the agent has none yet (409 otherwise): detached, in its own
 * session, and its pid written to entry_fd (PID 1 adopts it: signals are
 * forwarded to it, its exit ends the agent). Answers as a detached
 * /exec: `x -1 0` once it has been started. */
void exec_entrypoint(struct http_request *req, bool has_entry, int entry_fd);
