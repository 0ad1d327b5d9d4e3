/* agent_tunnel: see agent_tunnel.h. */
#include "providers/agent/agent_tunnel.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "providers/agent/agent_client.h"
#include "core/timeutil.h"

/* Send all of buf on a non-blocking socket before deadline. */
static int send_all(int fd, const char *buf, size_t len, int64_t deadline)
{
        while (len > 0) {
                struct pollfd p = { .fd = fd, .events = POLLOUT };
                int64_t left = deadline - timeutil_mono_ms();
                ssize_t n;

                if (left <= 0)
                        return -ETIMEDOUT;
                if (poll(&p, 1, (int)(left < INT_MAX ? left : INT_MAX)) < 0 && errno != EINTR)
                        return -errno;
                n = send(fd, buf, len, MSG_NOSIGNAL);
                if (n < 0) {
                        if (errno == EAGAIN || errno == EINTR)
                                continue;
                        return -errno;
                }
                buf += n;
                len -= (size_t)n;
        }
        return 0;
}

/* Read the answer's head into p; stream bytes after it go to ret->early. */
static int read_head(int fd, struct agent_proto *p, struct agent_tunnel *ret, int64_t deadline)
{
        char buf[AGENT_TUNNEL_EARLY_MAX];
        size_t total = 0;

        while (!agent_proto_done(p)) {
                struct pollfd pfd = { .fd = fd, .events = POLLIN };
                int64_t left = deadline - timeutil_mono_ms();
                ssize_t n;
                int r;

                if (left <= 0)
                        return -ETIMEDOUT;
                if (poll(&pfd, 1, (int)(left < INT_MAX ? left : INT_MAX)) < 0 && errno != EINTR)
                        return -errno;
                n = recv(fd, buf, sizeof(buf), 0);
                if (n < 0 && (errno == EAGAIN || errno == EINTR))
                        continue;
                if (n <= 0)
                        return agent_proto_finish(p) < 0 ? -ECONNRESET : 0;
                total += (size_t)n;
                if ((r = agent_proto_feed(p, buf, (size_t)n)) < 0)
                        return r;
                /* A 101 ends at its blank line: what this read held past
                 * it is the tunnel's first bytes. */
                if (agent_proto_done(p) && p->status == 101 && total > p->head_len) {
                        ret->early_len = total - p->head_len;
                        memcpy(ret->early, buf + (size_t)n - ret->early_len, ret->early_len);
                }
        }
        return 0;
}

int agent_tunnel_open(const char *dir, int port, int timeout_ms, struct agent_tunnel *ret,
                      char *ret_err)
{
        int64_t deadline = timeutil_mono_ms() + timeout_ms;
        struct agent_proto p;
        char req[160], why[160];
        int fd, r, n;

        ret->fd = -1;
        ret->early_len = 0;
        if (port < 1 || port > 65535) {
                provider_errf(ret_err, "sandbox agent: tunnel: port %d out of range", port);
                return -EINVAL;
        }
        fd = agent_connect(dir, ret_err);
        if (fd < 0)
                return fd;
        n = snprintf(req, sizeof(req),
                     "GET /tunnel?port=%d HTTP/1.1\r\nHost: sandbox-agent\r\n"
                     "Connection: Upgrade\r\nUpgrade: tcp\r\n\r\n",
                     port);
        agent_proto_init(&p, false, NULL);
        p.upgrade = true;
        r = send_all(fd, req, (size_t)n, deadline);
        if (r == 0)
                r = read_head(fd, &p, ret, deadline);
        if (r == -ETIMEDOUT) {
                provider_errf(ret_err, "sandbox agent: no answer to tunnel in time");
                goto out;
        }
        if (r == -EPROTO) {
                provider_errf(ret_err, "sandbox agent: malformed answer to tunnel: %s",
                              p.why ? p.why : "?");
                r = -EIO;
                goto out;
        }
        if (r < 0 || !agent_proto_done(&p)) {
                provider_errf(ret_err,
                              "sandbox agent unreachable: connection closed before an answer");
                r = -ECONNREFUSED;
                goto out;
        }
        if (p.status != 101) {
                size_t k = 0;

                for (size_t i = 0; i < p.err_len && k + 1 < sizeof(why); i++) {
                        unsigned char ch = (unsigned char)p.err_body[i];
                        if (ch == '\n' || ch == '\r')
                                break;
                        why[k++] = ch >= 0x20 && ch < 0x7f ? (char)ch : '?';
                }
                why[k] = '\0';
                provider_errf(ret_err, "sandbox agent: tunnel: %d %s", p.status, why);
                r = p.status == 502 ? -ENXIO : p.status == 503 ? -EBUSY : -EIO;
                goto out;
        }
        ret->fd = fd;
        fd = -1;
        r = 0;
out:
        if (fd >= 0)
                (void)close(fd);
        return r;
}
