/* agent_call: one call to sandbox-agent (agent_call.h): the connect (no
 * link followed, S_ISSOCK checked), the request head (percent-encoded
 * query, capped), and one poll loop per call that sends the request and
 * feeds the answer to agent_proto as it comes, under deadlines. */
#include "providers/agent/agent_call.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include "core/timeutil.h"

/* A call whose body may be taken from the socket (on_fd) reads its head in
 * recvs this small, so that little of the body is copied on the way. */
#define RECV_HEAD 4096
#define TICK_MS 1000

/* strerror, thread-safe (GNU strerror_r). */
static const char *errstr(int e, char *buf, size_t size)
{
        return strerror_r(e, buf, size);
}

/* ---- connect ---- */

int agent_connect(const char *dir, char *ret_err)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        struct timeval tv = { .tv_sec = AGENT_CONNECT_TIMEOUT_MS / 1000,
                              .tv_usec = AGENT_CONNECT_TIMEOUT_MS % 1000 * 1000 };
        struct stat st;
        char eb[64];
        int dfd = -1, sfd = -1, fd = -1, r;

        dfd = open(dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dfd < 0) {
                r = errno == ENOENT ? -ENOENT : -ECONNREFUSED;
                provider_errf(ret_err, "sandbox agent unreachable: its directory: %s",
                              errstr(errno, eb, sizeof(eb)));
                goto out;
        }
        /* With O_PATH, O_NOFOLLOW opens a link itself (no ELOOP): the
         * S_ISSOCK check below refuses it. */
        sfd = openat(dfd, AGENT_SOCKET_NAME, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (sfd < 0) {
                r = errno == ENOENT ? -ENOENT : -ECONNREFUSED;
                provider_errf(ret_err, "sandbox agent unreachable: " AGENT_SOCKET_NAME ": %s",
                              errstr(errno, eb, sizeof(eb)));
                goto out;
        }
        if (fstat(sfd, &st) < 0) {
                r = -ECONNREFUSED;
                provider_errf(ret_err, "sandbox agent unreachable: " AGENT_SOCKET_NAME ": %s",
                              errstr(errno, eb, sizeof(eb)));
                goto out;
        }
        if (!S_ISSOCK(st.st_mode)) {
                r = -ECONNREFUSED;
                provider_errf(ret_err,
                              "sandbox agent unreachable: " AGENT_SOCKET_NAME
                              " is not a socket (%s)",
                              S_ISLNK(st.st_mode) ? "a link" : "refused");
                goto out;
        }

        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) {
                r = -errno;
                provider_errf(ret_err, "sandbox agent: socket: %s", errstr(errno, eb, sizeof(eb)));
                goto out;
        }
        /* A blocking connect to a unix socket waits for room in the
         * listener's backlog for SO_SNDTIMEO at most, then says EAGAIN. */
        if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0) {
                r = -errno;
                provider_errf(ret_err, "sandbox agent: setsockopt: %s",
                              errstr(errno, eb, sizeof(eb)));
                goto out;
        }
        /* The fd's magic link resolves to the inode fstat'ed above, not to
         * whatever the name points at by now. */
        snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d", sfd);
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
                r = errno == EAGAIN || errno == EINPROGRESS ? -ETIMEDOUT : -ECONNREFUSED;
                provider_errf(ret_err, "sandbox agent unreachable: connect: %s",
                              r == -ETIMEDOUT ? "backlog full" : errstr(errno, eb, sizeof(eb)));
                goto out;
        }
        if (fcntl(fd, F_SETFL, O_NONBLOCK) < 0) {
                r = -errno;
                provider_errf(ret_err, "sandbox agent: fcntl: %s", errstr(errno, eb, sizeof(eb)));
                goto out;
        }
        r = fd;
        fd = -1;
out:
        if (fd >= 0)
                (void)close(fd);
        if (sfd >= 0)
                (void)close(sfd);
        if (dfd >= 0)
                (void)close(dfd);
        return r;
}

/* ---- the request head ---- */

static int req_add(struct agent_req *q, const char *s, size_t n)
{
        if (http_buf_append(&q->b, s, n) < 0)
                return -ENOMEM;
        return q->b.truncated ? -E2BIG : 0;
}

int agent_req_start(struct agent_req *q, const char *method, const char *path)
{
        memset(q, 0, sizeof(*q));
        q->b.max = AGENT_REQUEST_HEAD_MAX;
        if (req_add(q, method, strlen(method)) < 0 || req_add(q, " ", 1) < 0)
                return -ENOMEM;
        return req_add(q, path, strlen(path));
}

int agent_req_param(struct agent_req *q, const char *name, const char *value)
{
        static const char hex[] = "0123456789ABCDEF";
        char enc[768];
        size_t k = 0;
        int r;

        if ((r = req_add(q, q->has_query ? "&" : "?", 1)) < 0 ||
            (r = req_add(q, name, strlen(name))) < 0 || (r = req_add(q, "=", 1)) < 0)
                return r;
        q->has_query = true;
        for (const unsigned char *s = (const unsigned char *)value; *s; s++) {
                if ((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') ||
                    (*s >= '0' && *s <= '9') || *s == '-' || *s == '.' || *s == '_' || *s == '~') {
                        enc[k++] = (char)*s;
                } else {
                        enc[k++] = '%';
                        enc[k++] = hex[*s >> 4];
                        enc[k++] = hex[*s & 15];
                }
                if (k > sizeof(enc) - 3) {
                        if ((r = req_add(q, enc, k)) < 0)
                                return r;
                        k = 0;
                }
        }
        return req_add(q, enc, k);
}

int agent_req_param_i64(struct agent_req *q, const char *name, int64_t v)
{
        char s[24];

        snprintf(s, sizeof(s), "%" PRId64, v);
        return agent_req_param(q, name, s);
}

int agent_req_end(struct agent_req *q, size_t body_len)
{
        char h[128];

        snprintf(h, sizeof(h),
                 " HTTP/1.1\r\nHost: sandbox-agent\r\nContent-Length: %zu\r\n"
                 "Connection: close\r\n\r\n",
                 body_len);
        return req_add(q, h, strlen(h));
}

int agent_req_error(int r, const char *what, char *ret_err)
{
        if (r == -E2BIG) {
                provider_errf(ret_err, "sandbox agent: %s: request over %d bytes", what,
                              AGENT_REQUEST_HEAD_MAX);
                return -EINVAL;
        }
        provider_errf(ret_err, "sandbox agent: %s: out of memory", what);
        return -ENOMEM;
}

/* ---- one call ---- */

/* A parse failure of the call: malformed (-EIO) or a callback's return. */
static int proto_error(struct agent_call *c, int r, char *ret_err)
{
        if (!c->proto.why)
                return r;
        provider_errf(ret_err, "sandbox agent: malformed answer to %s: %s", c->what, c->proto.why);
        return -EIO;
}

/* Send what is left of head then body. Returns 0 (maybe partly sent, or
 * the peer gone: *sending cleared, *send_errno set), or a negative errno. */
static int call_send(struct agent_call *c, int fd, size_t *sent, bool *sending, int *send_errno)
{
        size_t total = c->req.b.len + c->body_len;

        while (*sent < total) {
                /* head and body in one call: the agent reads a small
                 * upload with its head */
                struct iovec iov[2];
                struct msghdr mh = { .msg_iov = iov };
                ssize_t w;

                if (*sent < c->req.b.len) {
                        iov[0] = (struct iovec){ c->req.b.data + *sent, c->req.b.len - *sent };
                        iov[1] = (struct iovec){ (void *)c->body, c->body_len };
                        mh.msg_iovlen = c->body_len ? 2 : 1;
                } else {
                        iov[0] = (struct iovec){ (char *)c->body + (*sent - c->req.b.len),
                                                 total - *sent };
                        mh.msg_iovlen = 1;
                }
                w = sendmsg(fd, &mh, MSG_NOSIGNAL);
                if (w < 0 && errno == EINTR)
                        continue;
                if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                        return 0;
                if (w < 0) {
                        /* The agent may have answered (an error) without
                         * reading the body: read on for that answer. */
                        *send_errno = errno;
                        *sending = false;
                        return 0;
                }
                *sent += (size_t)w;
        }
        *sending = false;
        return 0;
}

int agent_call_run(const char *dir, struct agent_call *c, char *ret_err)
{
        char sbuf[RECV_BUF], *buf = sbuf, eb[64];
        size_t bufsize = sizeof(sbuf), sent = 0;
        int64_t sent_at = -1, next_tick = timeutil_mono_ms() + TICK_MS;
        bool sending = true, got = false, eof = false;
        int fd, r = 0, send_errno = 0;

        if (c->recv_size > bufsize) {
                buf = malloc(c->recv_size);
                if (!buf) {
                        provider_errf(ret_err, "sandbox agent: %s: out of memory", c->what);
                        return -ENOMEM;
                }
                bufsize = c->recv_size;
        }
        fd = agent_connect(dir, ret_err);
        if (fd < 0) {
                if (buf != sbuf)
                        free(buf);
                return fd;
        }
        while (!agent_proto_done(&c->proto)) {
                int64_t now = timeutil_mono_ms(), limit = c->deadline;
                struct pollfd pfd = { .fd = fd, .events = POLLIN };
                int n;

                if (!c->proto.head_done && sent_at >= 0)
                        limit = min64(limit, sent_at + AGENT_HEAD_TIMEOUT_MS);
                if (c->on_tick && now >= next_tick) {
                        if ((r = c->on_tick(c->tick_ud)) < 0)
                                goto out;
                        next_tick = now + TICK_MS;
                }
                if (now >= limit) {
                        if (c->soft_deadline && c->proto.head_done && limit == c->deadline) {
                                c->deadline_hit = true;
                                r = 0;
                                goto out;
                        }
                        r = -ETIMEDOUT;
                        provider_errf(ret_err, "sandbox agent: no answer to %s in time (%s)",
                                      c->what, c->proto.head_done ? "body" : "head");
                        goto out;
                }
                if (c->on_tick)
                        limit = min64(limit, next_tick);
                if (sending)
                        pfd.events |= POLLOUT;
                n = poll(&pfd, 1, (int)min64(limit - now, INT_MAX));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        r = -errno;
                        provider_errf(ret_err, "sandbox agent: poll: %s",
                                      errstr(errno, eb, sizeof(eb)));
                        goto out;
                }
                if (n == 0)
                        continue;
                if (sending && (pfd.revents & (POLLOUT | POLLERR | POLLHUP))) {
                        if ((r = call_send(c, fd, &sent, &sending, &send_errno)) < 0)
                                goto out;
                        if (!sending)
                                sent_at = timeutil_mono_ms();
                }
                if (pfd.revents & (POLLIN | POLLERR | POLLHUP)) {
                        uint64_t pass = c->on_fd ? agent_proto_passable(&c->proto) : 0;
                        ssize_t got_n;

                        if (pass > 0) {
                                /* the body's bytes, no more, taken from the
                                 * socket by the caller (never read here) */
                                got_n = c->on_fd(c->fd_ud, fd, pass < SIZE_MAX ? (size_t)pass : SIZE_MAX);
                                if (got_n == -EAGAIN || got_n == -EINTR)
                                        continue;
                                if (got_n == -EOPNOTSUPP) {
                                        c->on_fd = NULL;
                                        continue;
                                }
                                if (got_n == -ECONNRESET) {
                                        send_errno = ECONNRESET;
                                        eof = true;
                                        break;
                                }
                                if (got_n < 0) {
                                        r = (int)got_n;
                                        provider_errf(ret_err, "sandbox agent: %s: passing the body on: %s",
                                                      c->what, errstr((int)-got_n, eb, sizeof(eb)));
                                        goto out;
                                }
                                if (got_n == 0) {
                                        eof = true;
                                        break;
                                }
                                if ((uint64_t)got_n > pass) {
                                        r = -EIO;
                                        provider_errf(ret_err, "sandbox agent: %s: took more than the body",
                                                      c->what);
                                        goto out;
                                }
                                got = true;
                                agent_proto_skip(&c->proto, (uint64_t)got_n);
                                continue;
                        }
                        got_n = recv(fd, buf, c->on_fd && !c->proto.head_done && bufsize > RECV_HEAD ? RECV_HEAD : bufsize, 0);
                        if (got_n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
                                continue;
                        if (got_n < 0 && errno != ECONNRESET) {
                                r = -errno;
                                provider_errf(ret_err, "sandbox agent: recv: %s",
                                              errstr(errno, eb, sizeof(eb)));
                                goto out;
                        }
                        if (got_n <= 0) {
                                if (got_n < 0)
                                        send_errno = ECONNRESET;
                                eof = true;
                                break;
                        }
                        got = true;
                        if ((r = agent_proto_feed(&c->proto, buf, (size_t)got_n)) < 0) {
                                r = proto_error(c, r, ret_err);
                                goto out;
                        }
                }
        }
        if (eof && !agent_proto_done(&c->proto)) {
                if (!got) {
                        r = -ECONNREFUSED;
                        provider_errf(
                                ret_err,
                                "sandbox agent unreachable: connection closed before an answer%s%s",
                                send_errno ? ": " : "",
                                send_errno ? errstr(send_errno, eb, sizeof(eb)) : "");
                        goto out;
                }
                if ((r = agent_proto_finish(&c->proto)) < 0) {
                        r = proto_error(c, r, ret_err);
                        goto out;
                }
        }
        r = 0;
out:
        (void)close(fd);
        if (buf != sbuf)
                free(buf);
        return r;
}

/* The first line of an error body, printable, for a message. */
static void err_reason(const struct agent_proto *p, char *buf, size_t size)
{
        size_t k = 0;

        for (size_t i = 0; i < p->err_len && k + 1 < size; i++) {
                unsigned char ch = (unsigned char)p->err_body[i];

                if (ch == '\n' || ch == '\r')
                        break;
                buf[k++] = ch >= 0x20 && ch < 0x7f ? (char)ch : '?';
        }
        buf[k] = '\0';
}

int agent_call_status_error(const struct agent_call *c, bool file, char *ret_err)
{
        char why[160];
        int st = c->proto.status;

        err_reason(&c->proto, why, sizeof(why));
        provider_errf(ret_err, "sandbox agent: %s: %d %s", c->what, st, why);
        if (!file)
                return -EIO;
        switch (st) {
        case 400: return -EISDIR;
        case 403: return -EACCES;
        case 404: return -ENOENT;
        case 413: return -EFBIG;
        default: return -EIO;
        }
}

void agent_call_release(struct agent_call *c)
{
        http_buf_release(&c->req.b);
}

bool agent_call_ok(const struct agent_call *c)
{
        return c->proto.status >= 200 && c->proto.status < 300;
}

int64_t agent_deadline_after(int timeout_ms)
{
        return timeutil_mono_ms() + (timeout_ms > 0 ? timeout_ms : AGENT_HEAD_TIMEOUT_MS);
}
