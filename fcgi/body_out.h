/* body_out: large answer bodies straight to the FastCGI connection.
 * libfcgi's output stream moves its 8 KiB buffer one write() at a time, and
 * nginx, unbuffered, passes each on in its own round: a 5 MiB download was
 * some 640 rounds. body_put sends a large block as STDOUT records of up to
 * 64 KiB instead, after what the stream holds. */
#pragma once
#include <stddef.h>

#include "request.h"

#define BODY_OUT_DIRECT_MIN 8192 /* smaller blocks go through the stream */

/* Append n bytes to the answer's body (headers already written). Returns
 * 0, or -1 when the connection is broken. */
int body_put(struct request *req, const char *data, size_t n);
