/* stream_guard: see stream_guard.h. */
#include "stream_guard.h"

#include <errno.h>
#include <fcgiapp.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "core/log.h"
#include "core/timeutil.h"

/* FastCGI record types (the FastCGI specification, 8) */
#define FCGI_REC_END_REQUEST 3
#define FCGI_REC_STDOUT 6

enum { GUARD_HOLD = 1, GUARD_RELEASE = 2 };

struct guard_msg {
        uint32_t op;
        uint32_t token;
        uint32_t request_id;
};

struct guard_held {
        uint32_t token; /* 0: free */
        uint16_t request_id;
        int fd;
};

static struct {
        int sock; /* the handler's end; -1: no guard */
        atomic_uint next_token;
        atomic_bool warned;
} guard = { .sock = -1 };

/* ---- the guard process ---- */

static size_t put_header(unsigned char *p, int type, uint16_t id, uint16_t len, uint8_t pad)
{
        p[0] = 1; /* FCGI_VERSION_1 */
        p[1] = (unsigned char)type;
        p[2] = (unsigned char)(id >> 8);
        p[3] = (unsigned char)id;
        p[4] = (unsigned char)(len >> 8);
        p[5] = (unsigned char)len;
        p[6] = pad;
        p[7] = 0;
        return 8;
}

/* The end of request id: the error event, the closed stdout, END_REQUEST
 * (app status 0, FCGI_REQUEST_COMPLETE). Into buf (size >= 1024). */
static size_t guard_end_records(unsigned char *buf, uint16_t id)
{
        char ev[700];
        int n = snprintf(ev, sizeof(ev),
                         "\n\ndata: {\"error\":{\"ename\":\"CommandExecError\",\"evalue\":\"-1\","
                         "\"traceback\":[\"the broker's stream handler died: the command's end is "
                         "unknown (the sandbox agent hangs up a foreground command; ask "
                         "GET /command/status/{id})\"]},\"type\":\"error\",\"timestamp\":%lld}\n\n",
                         (long long)timeutil_now_ms());
        size_t len = (size_t)n, pad = (8 - len % 8) % 8, off = 0;

        off += put_header(buf + off, FCGI_REC_STDOUT, id, (uint16_t)len, (uint8_t)pad);
        memcpy(buf + off, ev, len);
        off += len;
        memset(buf + off, 0, pad);
        off += pad;
        off += put_header(buf + off, FCGI_REC_STDOUT, id, 0, 0);
        off += put_header(buf + off, FCGI_REC_END_REQUEST, id, 8, 0);
        memset(buf + off, 0, 8); /* appStatus 0, protocolStatus 0, reserved */
        return off + 8;
}

static void guard_write_end(const struct guard_held *h)
{
        unsigned char buf[1024];
        size_t len = guard_end_records(buf, h->request_id), off = 0;
        int64_t deadline = timeutil_mono_ms() + STREAM_GUARD_WRITE_MS;

        while (off < len) {
                struct pollfd p = { .fd = h->fd, .events = POLLOUT };
                int64_t left = deadline - timeutil_mono_ms();
                ssize_t w;

                if (left <= 0 || poll(&p, 1, (int)left) <= 0)
                        return;
                w = send(h->fd, buf + off, len - off, MSG_DONTWAIT | MSG_NOSIGNAL);
                if (w < 0 && errno != EAGAIN && errno != EINTR)
                        return;
                if (w > 0)
                        off += (size_t)w;
        }
}

static void guard_take(struct guard_held *held, const struct guard_msg *m, int fd)
{
        if (m->op == GUARD_HOLD && fd >= 0) {
                for (int i = 0; i < STREAM_GUARD_MAX; i++)
                        if (held[i].token == 0) {
                                held[i] = (struct guard_held){ m->token, (uint16_t)m->request_id, fd };
                                return;
                        }
                (void)close(fd); /* full: that stream is unguarded */
                return;
        }
        if (fd >= 0)
                (void)close(fd);
        if (m->op == GUARD_RELEASE)
                for (int i = 0; i < STREAM_GUARD_MAX; i++)
                        if (held[i].token == m->token) {
                                (void)close(held[i].fd);
                                held[i].token = 0;
                                return;
                        }
}

static _Noreturn void guard_main(int sock)
{
        struct guard_held *held = calloc(STREAM_GUARD_MAX, sizeof(*held));
        int n = 0, listen_fds;

        /* neither a kill of the handler's process group nor a stop's
         * SIGTERM may end the guard before it has written */
        (void)setpgid(0, 0);
        /* the listening sockets systemd passed (SD_LISTEN_FDS_START on)
         * stay the handler's alone; nothing else is open yet but stdio and,
         * perhaps, libsystemd's journal socket, which the guard logs through */
        listen_fds = getenv("LISTEN_FDS") ? atoi(getenv("LISTEN_FDS")) : 0;
        for (int fd = 3; fd < 3 + listen_fds && fd < 64; fd++)
                if (fd != sock)
                        (void)close(fd);
        signal(SIGTERM, SIG_IGN);
        signal(SIGINT, SIG_IGN);
        signal(SIGHUP, SIG_IGN);
        signal(SIGPIPE, SIG_IGN);
        (void)prctl(PR_SET_NAME, "fcgi-stream-guard", 0, 0, 0);
        if (!held)
                _exit(1);
        for (;;) {
                struct guard_msg m;
                union {
                        char buf[CMSG_SPACE(sizeof(int))];
                        struct cmsghdr align;
                } c;
                struct iovec iov = { .iov_base = &m, .iov_len = sizeof(m) };
                struct msghdr mh = { .msg_iov = &iov,
                                     .msg_iovlen = 1,
                                     .msg_control = c.buf,
                                     .msg_controllen = sizeof(c.buf) };
                struct cmsghdr *cm;
                ssize_t r = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
                int fd = -1;

                if (r < 0 && errno == EINTR)
                        continue;
                if (r <= 0)
                        break; /* the handler is gone */
                cm = CMSG_FIRSTHDR(&mh);
                if (cm && cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS &&
                    cm->cmsg_len == CMSG_LEN(sizeof(int)))
                        memcpy(&fd, CMSG_DATA(cm), sizeof(int));
                if (r == (ssize_t)sizeof(m))
                        guard_take(held, &m, fd);
                else if (fd >= 0)
                        (void)close(fd);
        }
        for (int i = 0; i < STREAM_GUARD_MAX; i++)
                if (held[i].token) {
                        guard_write_end(&held[i]);
                        (void)close(held[i].fd);
                        n++;
                }
        if (n)
                log_warn(NULL,
                         "the handler died with %d command stream(s) open: ended each with an "
                         "error event",
                         n);
        _exit(0);
}

/* ---- the handler's side ---- */

int stream_guard_start(void)
{
        int sv[2];
        pid_t pid;

        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
                return -errno;
        pid = fork();
        if (pid < 0) {
                int r = -errno;
                (void)close(sv[0]);
                (void)close(sv[1]);
                return r;
        }
        if (pid == 0) {
                (void)close(sv[0]);
                guard_main(sv[1]);
        }
        (void)close(sv[1]);
        /* a burst of streams queues its messages while the guard waits for
         * a CPU (the kernel caps the size at net.core.wmem_max); past
         * that, a stream waits STREAM_GUARD_SEND_MS at most */
        (void)setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &(int){ 1 << 20 }, sizeof(int));
        (void)setsockopt(sv[0], SOL_SOCKET, SO_SNDTIMEO,
                         &(struct timeval){ .tv_usec = STREAM_GUARD_SEND_MS * 1000 },
                         sizeof(struct timeval));
        guard.sock = sv[0];
        atomic_store(&guard.next_token, 1);
        return 0;
}

static int guard_send(const struct guard_msg *m, int fd)
{
        union {
                char buf[CMSG_SPACE(sizeof(int))];
                struct cmsghdr align;
        } c;
        struct iovec iov = { .iov_base = (void *)m, .iov_len = sizeof(*m) };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

        if (fd >= 0) {
                struct cmsghdr *cm;

                memset(&c, 0, sizeof(c));
                mh.msg_control = c.buf;
                mh.msg_controllen = sizeof(c.buf);
                cm = CMSG_FIRSTHDR(&mh);
                cm->cmsg_level = SOL_SOCKET;
                cm->cmsg_type = SCM_RIGHTS;
                cm->cmsg_len = CMSG_LEN(sizeof(int));
                memcpy(CMSG_DATA(cm), &fd, sizeof(int));
        }
        return sendmsg(guard.sock, &mh, MSG_NOSIGNAL) == (ssize_t)sizeof(*m) ? 0 : -errno;
}

uint32_t stream_guard_hold(struct request *req)
{
        struct guard_msg m = { .op = GUARD_HOLD };
        int r;

        if (guard.sock < 0 || !req->fcgx || req->fcgx->ipcFd < 0)
                return 0;
        m.token = atomic_fetch_add(&guard.next_token, 1);
        if (m.token == 0) /* wrapped: 0 means unguarded */
                m.token = atomic_fetch_add(&guard.next_token, 1);
        m.request_id = (uint32_t)req->fcgx->requestId;
        r = guard_send(&m, req->fcgx->ipcFd);
        if (r < 0) {
                if (!atomic_exchange(&guard.warned, true))
                        log_warn(NULL,
                                 "stream guard: cannot hand it a stream (%s); streams go "
                                 "unguarded while it is so",
                                 strerror(-r));
                return 0;
        }
        return m.token;
}

void stream_guard_release(uint32_t token)
{
        struct guard_msg m = { .op = GUARD_RELEASE, .token = token };
        int r = -EAGAIN;

        /* retried: a connection the guard kept would hold a slot of its
         * table (and its end records would go to a closed peer) */
        for (int i = 0; token && guard.sock >= 0 && r == -EAGAIN && i < 10; i++)
                r = guard_send(&m, -1);
        if (r == -EAGAIN && !atomic_exchange(&guard.warned, true))
                log_warn(NULL, "stream guard: too slow to take a stream back; it keeps a slot");
}
