/* body_out: large answer bodies straight to the FastCGI connection.
 * libfcgi's output stream moves its 8 KiB buffer one write() at a time, and
 * nginx, unbuffered, passes each on in its own round: a 5 MiB download was
 * some 640 rounds. body_put sends a large block as STDOUT records of up to
 * 64 KiB instead, after what the stream holds. */
#pragma once
#include <stddef.h>
#include <sys/types.h>

#include "request.h"

#define BODY_OUT_DIRECT_MIN 8192 /* smaller blocks go through the stream */

/* Append n bytes to the answer's body (headers already written). Returns
 * 0, or -1 when the connection is broken. */
int body_put(struct request *req, const char *data, size_t n);

/* Move up to max bytes queued on fd (a nonblocking socket) to the answer's
 * body without reading them here: spliced through a pipe, one STDOUT record
 * of exactly what was taken per 64 KiB or less, as long as fd has some.
 * Returns the count,
 * 0 at fd's end, -EAGAIN when fd has nothing yet, -EPIPE when the
 * connection is broken, -EOPNOTSUPP when fd cannot be spliced (nothing was
 * taken), or another negative errno of reading fd. */
ssize_t body_splice(struct request *req, int fd, size_t max);
