/* agent_client: see agent_client.h. Three parts: the connect (no link
 * followed, S_ISSOCK checked), the request head (percent-encoded query,
 * capped), and one poll loop per call that sends the request and feeds
 * the answer to agent_proto as it comes, under deadlines. */
#include "agent_client.h"

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

#include "http_buf.h"
#include "timeutil.h"

#define RECV_BUF 65536 /* one recv of an answer */
/* A file read's recv: as much as the agent's socket holds (its send buffer,
 * net.core.wmem_default, 208 KiB by default), so that a large file crosses
 * in fewer wakeups of the broker (and fewer writev of 64 KiB records). */
#define RECV_BUF_FILE (256 * 1024)
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

struct req {
        struct http_buf b;
        bool has_query;
};

static int req_add(struct req *q, const char *s, size_t n)
{
        if (http_buf_append(&q->b, s, n) < 0)
                return -ENOMEM;
        return q->b.truncated ? -E2BIG : 0;
}

static int req_start(struct req *q, const char *method, const char *path)
{
        memset(q, 0, sizeof(*q));
        q->b.max = AGENT_REQUEST_HEAD_MAX;
        if (req_add(q, method, strlen(method)) < 0 || req_add(q, " ", 1) < 0)
                return -ENOMEM;
        return req_add(q, path, strlen(path));
}

/* name=value, the value percent-encoded: every byte but RFC 3986's
 * unreserved ones (a name repeats for arg and env). */
static int req_param(struct req *q, const char *name, const char *value)
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

static int req_param_i64(struct req *q, const char *name, int64_t v)
{
        char s[24];

        snprintf(s, sizeof(s), "%" PRId64, v);
        return req_param(q, name, s);
}

static int req_end(struct req *q, size_t body_len)
{
        char h[128];

        snprintf(h, sizeof(h),
                 " HTTP/1.1\r\nHost: sandbox-agent\r\nContent-Length: %zu\r\n"
                 "Connection: close\r\n\r\n",
                 body_len);
        return req_add(q, h, strlen(h));
}

/* A failed build as an error of the call. */
static int req_error(int r, const char *what, char *ret_err)
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

struct call {
        const char *what; /* for messages: "exec", "read", ... */
        struct req req;
        const void *body;
        size_t body_len;
        int64_t deadline; /* the whole call, timeutil_mono_ms */
        /* exec: the deadline passing after the head is not an error
         * (deadline_hit set, 0 returned, the answer incomplete) */
        bool soft_deadline;
        bool deadline_hit;
        int (*on_tick)(void *ud);
        void *tick_ud;
        size_t recv_size; /* 0: RECV_BUF on the stack */
        /* optional: takes a passable body from the socket itself
         * (struct file_read_cb's on_fd) */
        ssize_t (*on_fd)(void *ud, int fd, size_t max);
        void *fd_ud;
        struct agent_proto proto;
};

static int64_t min64(int64_t a, int64_t b)
{
        return a < b ? a : b;
}

/* A parse failure of the call: malformed (-EIO) or a callback's return. */
static int proto_error(struct call *c, int r, char *ret_err)
{
        if (!c->proto.why)
                return r;
        provider_errf(ret_err, "sandbox agent: malformed answer to %s: %s", c->what, c->proto.why);
        return -EIO;
}

/* Send what is left of head then body. Returns 0 (maybe partly sent, or
 * the peer gone: *sending cleared, *send_errno set), or a negative errno. */
static int call_send(struct call *c, int fd, size_t *sent, bool *sending, int *send_errno)
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

/* Send the request and parse the answer into c->proto. Returns 0 once the
 * answer is complete (any status; or c->deadline_hit with soft_deadline),
 * or a negative errno with ret_err set (or a callback's return). */
static int call_run(const char *dir, struct call *c, char *ret_err)
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

/* A non-2xx answer as an errno; file calls know 400/403/404. */
static int status_error(const struct call *c, bool file, char *ret_err)
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

static void call_release(struct call *c)
{
        http_buf_release(&c->req.b);
}

static bool call_ok(const struct call *c)
{
        return c->proto.status >= 200 && c->proto.status < 300;
}

static int64_t deadline_after(int timeout_ms)
{
        return timeutil_mono_ms() + (timeout_ms > 0 ? timeout_ms : AGENT_HEAD_TIMEOUT_MS);
}

/* ---- exec ---- */

struct exec_sink {
        struct http_buf out, err;
        const struct exec_stream_cb *cb;
};

static int exec_on_output(void *ud, int stream, const char *p, size_t n)
{
        struct exec_sink *s = ud;

        if (s->cb)
                return s->cb->on_output(s->cb->ud, stream, p, n);
        return http_buf_append(stream == 2 ? &s->err : &s->out, p, n);
}

static int exec_tick(void *ud)
{
        struct exec_sink *s = ud;

        return s->cb->on_tick(s->cb->ud);
}

static int exec_request(struct req *q, const struct exec_spec *spec, bool detach)
{
        const struct exec_record *rec = spec->record;
        const char *const *argv = rec ? rec->argv : spec->argv;
        const char *cwd = rec ? rec->cwd : spec->cwd;
        int timeout_ms = rec ? rec->timeout_ms : spec->timeout_ms;
        bool entry = detach && spec->entrypoint;
        int r = req_start(q, "POST", entry ? "/entrypoint" : "/exec");

        /* the agent keeps the state files itself: no runner script */
        for (size_t i = 0; r == 0 && argv[i]; i++)
                r = req_param(q, "arg", argv[i]);
        if (r == 0 && rec)
                r = req_param(q, "record", rec->path);
        if (r == 0 && rec && rec->shell)
                r = req_param(q, "shell", "1");
        for (size_t i = 0; r == 0 && spec->env && spec->env[i]; i++)
                r = req_param(q, "env", spec->env[i]);
        if (r == 0 && cwd)
                r = req_param(q, "cwd", cwd);
        if (r == 0 && spec->user)
                r = req_param(q, "user", spec->user);
        if (r == 0 && timeout_ms > 0 && !entry) /* an entrypoint runs for the sandbox's life */
                r = req_param_i64(q, "timeout_ms", timeout_ms);
        if (r == 0 && spec->env_file)
                r = req_param(q, "envfile", "1");
        if (r == 0 && spec->seat)
                r = req_param(q, "seat", "1");
        if (r == 0 && spec->kill_on_hangup && !detach)
                r = req_param(q, "hangup_kill", "1");
        if (r == 0 && detach && !entry)
                r = req_param(q, "detach", "1");
        if (r == 0)
                r = req_end(q, spec->stdin_data ? spec->stdin_len : 0);
        return r;
}

static int exec_common(const char *dir, const struct exec_spec *spec,
                       const struct exec_stream_cb *cb, struct exec_result *ret, char *ret_err)
{
        struct exec_sink s = { .out.max = spec->max_output, .err.max = spec->max_output, .cb = cb };
        struct agent_proto_cb pcb = { .on_output = exec_on_output, .ud = &s };
        struct call c = { .what = "exec" };
        bool detach = spec->detach && !cb;
        int64_t wait_ms;
        int r;

        memset(ret, 0, sizeof(*ret));
        ret->exit_code = -1;
        if (!spec->argv || !spec->argv[0] || (cb && !cb->on_output) ||
            (spec->record && (!spec->record->argv || !spec->record->argv[0] || !spec->record->path))) {
                provider_errf(ret_err, "sandbox agent: exec: an argv is required");
                return -EINVAL;
        }
        if ((r = exec_request(&c.req, spec, detach)) < 0) {
                r = req_error(r, "exec", ret_err);
                goto out;
        }
        c.body = spec->stdin_data;
        c.body_len = spec->stdin_data ? spec->stdin_len : 0;
        if (detach)
                wait_ms = AGENT_HEAD_TIMEOUT_MS;
        else if (spec->record && spec->record->timeout_ms > 0)
                wait_ms = min64((int64_t)spec->record->timeout_ms + AGENT_EXEC_GRACE_MS,
                                AGENT_EXEC_MAX_MS);
        else if (spec->timeout_ms > 0)
                wait_ms = min64((int64_t)spec->timeout_ms + AGENT_EXEC_GRACE_MS, AGENT_EXEC_MAX_MS);
        else
                wait_ms = AGENT_EXEC_MAX_MS;
        c.deadline = timeutil_mono_ms() + wait_ms;
        c.soft_deadline = !detach;
        if (cb && cb->on_tick) {
                c.on_tick = exec_tick;
                c.tick_ud = &s;
        }
        agent_proto_init(&c.proto, true, &pcb);

        if ((r = call_run(dir, &c, ret_err)) < 0)
                goto out;
        if (!call_ok(&c)) {
                r = status_error(&c, false, ret_err);
                /* 409: it has one (exec.c), started by an earlier call */
                if (detach && spec->entrypoint && c.proto.status == 409)
                        r = -EALREADY;
                goto out;
        }
        if (c.deadline_hit) {
                /* The agent kills at timeout_ms: past the grace it is
                 * stuck (or the sandbox frozen). Report what we have. */
                ret->timed_out = true;
        } else {
                ret->exit_code = c.proto.exit_code;
                ret->timed_out = c.proto.timed_out;
        }
        if (!cb) {
                ret->out_truncated = s.out.truncated;
                ret->err_truncated = s.err.truncated;
                if ((r = http_buf_steal(&s.out, &ret->out, &ret->out_len)) < 0 ||
                    (r = http_buf_steal(&s.err, &ret->err, &ret->err_len)) < 0) {
                        provider_errf(ret_err, "sandbox agent: exec: out of memory");
                        goto out;
                }
        }
        r = 0;
out:
        if (r < 0) {
                exec_result_free(ret);
                ret->exit_code = -1;
        }
        http_buf_release(&s.out);
        http_buf_release(&s.err);
        call_release(&c);
        return r;
}

int agent_exec(const char *dir, const struct exec_spec *spec, struct exec_result *ret, char *ret_err)
{
        return exec_common(dir, spec, NULL, ret, ret_err);
}

int agent_exec_stream(const char *dir, const struct exec_spec *spec,
                      const struct exec_stream_cb *cb, struct exec_result *ret, char *ret_err)
{
        if (!cb) {
                provider_errf(ret_err, "sandbox agent: exec: no callbacks");
                return -EINVAL;
        }
        return exec_common(dir, spec, cb, ret, ret_err);
}

/* ---- files ---- */

/* Run a built file request c (its body, if any, set) within timeout_ms,
 * the answer's body to pcb (may be NULL); a non-2xx answer is the call's
 * error (file mapping of status_error). */
static int file_call(const char *dir, struct call *c, const struct agent_proto_cb *pcb,
                     int timeout_ms, char *ret_err)
{
        int r;

        c->deadline = deadline_after(timeout_ms);
        agent_proto_init(&c->proto, false, pcb);
        r = call_run(dir, c, ret_err);
        if (r == 0 && !call_ok(c))
                r = status_error(c, true, ret_err);
        return r;
}

static int file_read(const char *dir, const char *path, int64_t offset, int64_t want,
                     const struct agent_proto_cb *pcb, const struct agent_proto **ret_proto,
                     ssize_t (*on_fd)(void *ud, int fd, size_t max), void *fd_ud, int timeout_ms,
                     char *ret_err)
{
        struct call c = { .what = "read", .recv_size = want >= 0 && want <= RECV_BUF ? 0 : RECV_BUF_FILE,
                          .on_fd = on_fd, .fd_ud = fd_ud };
        int r;

        if (!path || offset < 0) {
                provider_errf(ret_err,
                              "sandbox agent: read: a path and an offset >= 0 are required");
                return -EINVAL;
        }
        r = req_start(&c.req, "GET", "/file");
        if (r == 0)
                r = req_param(&c.req, "path", path);
        if (r == 0 && offset > 0)
                r = req_param_i64(&c.req, "offset", offset);
        if (r == 0 && want >= 0)
                r = req_param_i64(&c.req, "length", want);
        if (r == 0)
                r = req_end(&c.req, 0);
        if (r < 0) {
                r = req_error(r, "read", ret_err);
                goto out;
        }
        if (ret_proto)
                *ret_proto = &c.proto;
        r = file_call(dir, &c, pcb, timeout_ms, ret_err);
out:
        call_release(&c);
        return r;
}

struct read_sink {
        struct http_buf b;
        size_t max;
};

static int read_on_body(void *ud, const char *p, size_t n)
{
        struct read_sink *s = ud;

        if (n > s->max - s->b.len)
                return -EFBIG;
        return http_buf_append(&s->b, p, n);
}

int agent_read_file(const char *dir, const char *path, int64_t offset, int64_t len, size_t max_len,
                    void **ret_data, size_t *ret_len, int timeout_ms, char *ret_err)
{
        struct read_sink s = { .b.max = max_len, .max = max_len };
        struct agent_proto_cb pcb = { .on_body = read_on_body, .ud = &s };
        int64_t want, cap = max_len < (size_t)INT64_MAX ? (int64_t)max_len + 1 : INT64_MAX;
        char *data = NULL;
        int r;

        *ret_data = NULL;
        *ret_len = 0;
        /* Ask for one byte past the cap: a longer file is then -EFBIG
         * without the agent sending it all. */
        want = len < 0 ? cap : min64(len, cap);
        r = file_read(dir, path, offset, want, &pcb, NULL, NULL, NULL, timeout_ms, ret_err);
        if (r == -EFBIG)
                provider_errf(ret_err, "sandbox agent: read: over %zu bytes", max_len);
        if (r < 0)
                goto out;
        if ((r = http_buf_steal(&s.b, &data, ret_len)) < 0) {
                provider_errf(ret_err, "sandbox agent: read: out of memory");
                goto out;
        }
        *ret_data = data;
out:
        http_buf_release(&s.b);
        return r;
}

/* agent_read_file_fd's sink: the answer's Content-Length, once, before the
 * first bytes (on_data(ud, NULL, n)), so that a download can send its
 * headers and stream; a chunked or unframed answer announces nothing. */
struct size_sink {
        const struct file_read_cb *cb;
        const struct agent_proto *proto;
        bool announced;
};

static int size_announce(struct size_sink *s)
{
        if (s->announced)
                return 0;
        s->announced = true;
        /* remaining still counts the bytes about to be handed on */
        if (s->proto && s->proto->kind == AP_BODY_LENGTH && s->proto->remaining <= SIZE_MAX)
                return s->cb->on_data(s->cb->ud, NULL, (size_t)s->proto->remaining);
        return 0;
}

static int size_on_body(void *ud, const char *p, size_t n)
{
        struct size_sink *s = ud;
        int r;

        if ((r = size_announce(s)) < 0)
                return r;
        return s->cb->on_data(s->cb->ud, p, n);
}

static ssize_t size_on_fd(void *ud, int fd, size_t max)
{
        struct size_sink *s = ud;
        int r;

        if ((r = size_announce(s)) < 0)
                return r;
        return s->cb->on_fd(s->cb->ud, fd, max);
}

int agent_read_file_fd(const char *dir, const char *path, int64_t offset, int64_t len,
                       const struct file_read_cb *cb, int timeout_ms, char *ret_err)
{
        struct size_sink s = { .cb = cb };
        struct agent_proto_cb pcb = { .on_body = size_on_body, .ud = &s };

        if (!cb || !cb->on_data) {
                provider_errf(ret_err, "sandbox agent: read: no callbacks");
                return -EINVAL;
        }
        return file_read(dir, path, offset, len < 0 ? -1 : len, &pcb, &s.proto,
                         cb->on_fd ? size_on_fd : NULL, &s, timeout_ms, ret_err);
}

int agent_read_file_cb(const char *dir, const char *path, int64_t offset, int64_t len,
                       int (*on_data)(void *ud, const char *p, size_t n), void *ud, int timeout_ms,
                       char *ret_err)
{
        struct file_read_cb cb = { .on_data = on_data, .ud = ud };

        return agent_read_file_fd(dir, path, offset, len, &cb, timeout_ms, ret_err);
}

int agent_write_file(const char *dir, const char *path, const void *data, size_t len, int mode,
                     int64_t uid, int64_t gid, bool append, int timeout_ms, char *ret_err)
{
        struct call c = { .what = "write" };
        char m[16], owner[48];
        int r;

        if (!path || mode > 07777 || (len && !data)) {
                provider_errf(ret_err,
                              "sandbox agent: write: a path and a mode <= 07777 are required");
                return -EINVAL;
        }
        r = req_start(&c.req, "PUT", "/file");
        if (r == 0)
                r = req_param(&c.req, "path", path);
        if (r == 0 && mode >= 0) {
                snprintf(m, sizeof(m), "%04o", (unsigned)mode);
                r = req_param(&c.req, "mode", m);
        }
        if (r == 0 && uid >= 0 && gid >= 0) {
                snprintf(owner, sizeof(owner), "%" PRId64 ":%" PRId64, uid, gid);
                r = req_param(&c.req, "owner", owner);
        }
        if (r == 0 && append)
                r = req_param(&c.req, "append", "1");
        if (r == 0)
                r = req_end(&c.req, len);
        if (r < 0) {
                r = req_error(r, "write", ret_err);
                goto out;
        }
        c.body = data;
        c.body_len = len;
        r = file_call(dir, &c, NULL, timeout_ms, ret_err);
out:
        call_release(&c);
        return r;
}

/* ---- health ---- */

static int health_on_body(void *ud, const char *p, size_t n)
{
        struct http_buf *b = ud;

        if (n > AGENT_HEALTH_MAX - b->len)
                return -EFBIG;
        return http_buf_append(b, p, n);
}

int agent_health(const char *dir, struct agent_health *ret, int timeout_ms, char *ret_err)
{
        struct http_buf b = { .max = AGENT_HEALTH_MAX };
        struct agent_proto_cb pcb = { .on_body = health_on_body, .ud = &b };
        struct call c = { .what = "health" };
        int r;

        r = req_start(&c.req, "GET", "/health");
        if (r == 0)
                r = req_end(&c.req, 0);
        if (r < 0) {
                r = req_error(r, "health", ret_err);
                goto out;
        }
        c.deadline = deadline_after(timeout_ms);
        agent_proto_init(&c.proto, false, &pcb);
        r = call_run(dir, &c, ret_err);
        if (r == -EFBIG) {
                provider_errf(ret_err, "sandbox agent: health: answer over %d bytes",
                              AGENT_HEALTH_MAX);
                r = -EIO;
        }
        if (r < 0)
                goto out;
        if (c.proto.status != 200) {
                r = status_error(&c, false, ret_err);
                goto out;
        }
        if (agent_health_parse(b.data ? b.data : "", b.len, ret) < 0) {
                provider_errf(ret_err, "sandbox agent: malformed answer to health");
                r = -EIO;
                goto out;
        }
        r = 0;
out:
        http_buf_release(&b);
        call_release(&c);
        return r;
}
