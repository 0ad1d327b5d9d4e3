/* docker_mountd: the broker's client of sandbox-mountd, the host's mount
 * helper (mountd/mountd.h; docs/OPERATIONS.md, "Host bounds"). The broker
 * holds no capability; what it needs mounted on the host (a sandbox's
 * run directory on a tmpfs of its own, its disk on its writable layer)
 * it asks the helper for, one request per connection.
 *
 * Every call is bounded by timeout_ms (connect, the request, the answer)
 * and returns 0 or -EIO with the reason in ret_err (PROVIDER_ERR_MAX
 * bytes; may be NULL): a helper that does not answer is named, with its
 * socket, so that the sandbox's failure says what to start. */
#pragma once
#include <stddef.h>

/* Send line (no '\n') to the helper at sock; on "ok", the rest of the
 * answer (the ids of disks, or "") into ret_rest (rest_size bytes; may be
 * NULL). An answer over rest_size bytes is -EIO. */
int docker_mountd_call(const char *sock, int timeout_ms, const char *line, char *ret_rest,
                       size_t rest_size, char *ret_err);
