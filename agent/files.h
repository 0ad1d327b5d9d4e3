/* sandbox-agent: GET /file and PUT /file (docs/AGENT.md). */
#pragma once

#include "http.h"

/* GET /file?path=P[&offset=N][&length=N]: the bytes, with Content-Length. */
void files_get(struct http_request *req);

/* PUT /file?path=P[&mode=0644][&owner=uid:gid][&append=1]: the body,
 * streamed to P (parents made); 204. */
void files_put(struct http_request *req);
