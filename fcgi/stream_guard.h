/* stream_guard: a command stream whose handler process dies ends with an
 * error event, not a clean end (issue 24).
 *
 * nginx 1.22 ends an unbuffered FastCGI answer whose upstream closed
 * without FCGI_END_REQUEST exactly as a complete one (u->length is -1 for
 * FastCGI: no "prematurely closed" check applies): the last chunk goes out
 * and nothing is logged. Nothing in nginx can add the missing event, so a
 * process that outlives the handler writes it:
 *
 * stream_guard_start forks a small guard process before any thread. Each
 * command stream hands it a duplicate of its FastCGI connection
 * (SCM_RIGHTS over a SOCK_SEQPACKET pair) with the request id once its
 * `init` event is out, and takes it back after its last event. The guard
 * only collects; when its end of the pair reads end-of-file (the handler
 * is gone: crash, SIGKILL, OOM kill, or a stop that outlasted the drain)
 * it writes, on every connection still held, one FCGI_STDOUT record with
 * "\n\n" (ends a half-written frame; blank lines are no event) and an
 * `error` event {ename CommandExecError, evalue "-1", traceback naming the
 * cause}, the empty FCGI_STDOUT and FCGI_END_REQUEST, closes them and
 * exits. nginx then ends the answer as usual, with that event last.
 *
 * Record boundaries: libfcgi writes a request's stdout as whole records,
 * one write(2) per flush of its 8 KiB buffer; an AF_UNIX stream write of
 * that size is one skb, queued whole or not at all when the writer is
 * killed, so a dead handler never leaves half a record on the socket. An
 * event larger than the buffer spans flushes: a death between them leaves
 * half an SSE frame, which the guard's "\n\n" ends (the client then sees a
 * malformed event before the error event).
 *
 * Cost on the stream path: two sendmsg(2) calls per stream (about 1 us
 * each); one waits only when the guard has fallen a socket buffer behind,
 * STREAM_GUARD_SEND_MS at most (then the stream is unguarded, logged once). The guard is in its own process group and ignores SIGTERM/SIGINT
 * (a kill of the handler's group, or a stop, must not take it first); it
 * exits on its own at the handler's end. At most STREAM_GUARD_MAX streams
 * are held (the handler has at most 256 threads, one stream each). */
#pragma once
#include <stdint.h>

#include "request.h"

#define STREAM_GUARD_MAX 512
#define STREAM_GUARD_WRITE_MS 2000 /* per connection, for the guard's last records */
#define STREAM_GUARD_SEND_MS 100   /* a stream's wait for a guard too busy to take a message */

/* Fork the guard (before any thread: the child runs only its own loop).
 * 0, or a negative errno (no guard then: streams end as before). */
int stream_guard_start(void);

/* Put req's connection under the guard. Returns a token for
 * stream_guard_release, 0 when unguarded (no guard, or it is busy). */
uint32_t stream_guard_hold(struct request *req);

/* Take the connection of token back (0: nothing), after the last event. */
void stream_guard_release(uint32_t token);
