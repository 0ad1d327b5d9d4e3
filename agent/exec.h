/* sandbox-agent: POST /exec (docs/AGENT.md). */
#pragma once

#include "http.h"

/* Run the command the request describes and answer with the frames of its
 * output and its exit (or a 4xx before anything runs). Returns when the
 * command has ended (or, detached, once it has started). */
void exec_handle(struct http_request *req);
