/* docker_api: a small HTTP client for the Docker Engine API over its unix
 * socket (libcurl, CURLOPT_UNIX_SOCKET_PATH), plus the demultiplexer for the
 * stdout/stderr frames of an attached exec stream.
 *
 * One persistent CURL easy handle per struct docker_api: the connection is
 * kept alive across calls (saves ~10-20 ms per call over a new connection).
 * NOT thread-safe: each thread owns its own docker_api.
 *
 * Paths are given without the version prefix ("/containers/json"); the
 * client prepends "/v" DOCKER_API_VERSION. 1.41 is Docker 20.10 (Debian
 * bookworm's docker.io); what we use needs >= 1.35 (exec WorkingDir). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "providers/http_buf.h"
#include "providers/provider.h" /* PROVIDER_ERR_MAX */

#define DOCKER_API_VERSION "1.41"
#define DOCKER_SOCKET_DEFAULT "/var/run/docker.sock"

/* ---- exec stream demultiplexer (Docker API "Attach" stream format) ----
 * With Tty=false every frame is an 8-byte header {stream, 0, 0, 0, size as
 * big-endian uint32} followed by `size` payload bytes; stream 0 (stdin,
 * written on stdout) and 1 go to out, 2 to err. The state survives
 * arbitrary split points between calls. Pure: no I/O. */
struct docker_demux {
        uint8_t hdr[8];
        size_t hdr_len;      /* header bytes collected so far */
        uint32_t remaining;  /* payload bytes left in the current frame */
        uint8_t stream;
        bool in_frame;
        bool failed;
};

/* Feed len bytes. Returns 0, -EPROTO on a malformed header (unknown stream
 * type or non-zero padding; the demuxer then stays failed), -ENOMEM. */
int docker_demux_feed(struct docker_demux *d, const void *data, size_t len,
                      struct http_buf *out, struct http_buf *err);

/* The same, handing each payload piece to fn as it arrives (stream 1 for
 * stdout, also for 0; 2 for stderr), in stream order. A negative return of
 * fn stops the feed and is returned. */
int docker_demux_feed_fn(struct docker_demux *d, const void *data, size_t len,
                         int (*fn)(void *ud, int stream, const void *p, size_t n), void *ud);

/* True if the stream ended cleanly on a frame boundary. */
bool docker_demux_complete(const struct docker_demux *d);

/* ---- HTTP ---- */
struct docker_api;

/* One request. Without `sink`, a 2xx body goes to ret_resp (capped at
 * max_resp: -EFBIG over it). With `sink`, a 2xx body is streamed to it
 * (a negative return aborts the transfer and is returned); a non-2xx body
 * always goes to ret_resp (for the error message). */
struct docker_request {
        const char *method;       /* GET, POST, PUT, DELETE, HEAD */
        const char *path;         /* without the version prefix, query included */
        const void *body;         /* NULL: no body */
        size_t body_len;
        const char *content_type; /* NULL: application/json when there is a body */
        /* Extra header lines ("Name: value"), NULL-terminated, may be NULL.
         * They may carry secrets (X-Registry-Auth): never put in messages. */
        const char *const *headers;
        int timeout_ms;           /* whole transfer; > 0 */
        size_t max_resp;
        int (*sink)(void *ud, const void *data, size_t len);
        void *sink_ud;
        /* Optional: called about once a second while the transfer waits
         * (libcurl's progress callback); a negative return aborts it and is
         * returned. For keep-alives of a streamed answer. */
        int (*tick)(void *ud);
        void *tick_ud;
};

/* Create a client for socket_path (copied). No connection is made yet.
 * Returns 0 or -ENOMEM. */
int docker_api_new(const char *socket_path, struct docker_api **ret);

/* Close the connection and free; accepts NULL. */
void docker_api_free(struct docker_api *api);

/* Run one request. On success (any HTTP status) returns 0, *ret_status is
 * the HTTP status and ret_resp (if not NULL) holds the (capped) body, owned
 * by the caller (http_buf_release). Transport errors: -ECONNREFUSED (no
 * daemon), -ETIMEDOUT, -EFBIG (body over max_resp), -EIO; a one-line reason
 * goes to ret_err (PROVIDER_ERR_MAX bytes, may be NULL). */
int docker_api_request(struct docker_api *api, const struct docker_request *req,
                       long *ret_status, struct http_buf *ret_resp, char *ret_err);

/* The common case: a JSON (or empty) body, a JSON answer capped at max_resp. */
int docker_api_call(struct docker_api *api, const char *method, const char *path,
                    const char *json_body, int timeout_ms, long *ret_status,
                    struct http_buf *ret_resp, size_t max_resp, char *ret_err);

/* Docker's HTTP status as an errno: 2xx and 304 are 0, 404 -ENOENT, 409
 * -EBUSY, anything else -EIO. */
int docker_api_status_errno(long status);

/* docker_api_call with the status mapped by docker_api_status_errno and
 * Docker's message in ret_err. path NULL (a failed allocation of the
 * caller) is -ENOMEM. On success and with resp != NULL, *resp owns the body. */
int docker_api_json(struct docker_api *api, const char *method, const char *path, const char *body,
                    int timeout_ms, size_t max_resp, struct http_buf *resp, const char *what,
                    char *ret_err);
