/* accept_loop: where a handler thread finds its next FastCGI request, on a
 * new connection or on one nginx keeps (fastcgi_keep_conn on).
 *
 * libfcgi serves one connection per thread: after a request whose BEGIN
 * record asked to keep the connection, FCGX_Accept_r blocks in read() on
 * it, so a thread sits on each connection nginx keeps idle in its upstream
 * pool while requests on other connections wait (DESIGN.md §8). Here no
 * thread waits on a connection: the listening socket and every idle kept
 * connection are in one epoll set (EPOLLONESHOT), all the threads wait in
 * epoll_wait, and the kernel wakes one of them per ready socket; that thread
 * reads the request with libfcgi, serves it, and puts the connection back
 * into the set. libfcgi's own accept() is never reached: FCGX_Request's
 * listening socket is one that cannot accept (EINVAL), so a kept connection
 * that turns out closed ends FCGX_Accept_r with an error instead of blocking
 * the thread in accept().
 *
 * Connections nginx does not keep (no fastcgi_keep_conn: the data plane's
 * streams) are served exactly as before: libfcgi closes them at
 * FCGX_Finish_r. Every function is thread-safe. */
#ifndef BROKER_ACCEPT_LOOP_H
#define BROKER_ACCEPT_LOOP_H

#include <fcgiapp.h>

struct accept_loop;

/* A loop over the listening socket listen_fd (made non-blocking here)
 * keeping at most max_kept idle connections (beyond it a kept connection
 * is closed after its request; nginx opens a new one). *ret is the
 * caller's (accept_loop_free). -errno on failure. */
int accept_loop_new(int listen_fd, int max_kept, struct accept_loop **ret);

/* Set up fcgx for this loop (instead of FCGX_InitRequest with the
 * listening socket). */
void accept_loop_init_request(struct accept_loop *l, FCGX_Request *fcgx);

/* Wait for the next request and read its parameters into fcgx (as
 * FCGX_Accept_r does); 0 then, and the connection is the caller's until
 * accept_loop_finish. -errno if waiting itself failed (the thread should
 * stop). Connections that close or send nothing usable are dropped here. */
int accept_loop_next(struct accept_loop *l, FCGX_Request *fcgx);

/* End the request accept_loop_next gave (instead of FCGX_Finish_r): the
 * answer is complete; a connection nginx asked to keep goes back into the
 * set for its next request (its unread body, if any, read and dropped; past
 * max_kept, or with more than 64 KiB of it, closed instead), any other is
 * closed. fcgx no longer refers to it; another thread may serve the next
 * request on it at once. A second call does nothing. */
void accept_loop_finish(struct accept_loop *l, FCGX_Request *fcgx);

/* Open connections accepted here, idle or being served (tests, logs). */
int accept_loop_conns(const struct accept_loop *l);

/* Accepts NULL. Closes the epoll set, not the connections it held. */
void accept_loop_free(struct accept_loop *l);

#endif
