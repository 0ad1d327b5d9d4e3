/* tunnel: see tunnel.h. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent.h"
#include "splice.h"
#include "tunnel.h"

static int connect_port(int port)
{
        struct sockaddr_in sa = { .sin_family = AF_INET,
                                  .sin_port = htons((unsigned short)port),
                                  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

        if (fd < 0)
                return -errno;
        /* Loopback: the kernel answers a connect at once (a listener with a
         * full backlog makes it wait; the header alarm still runs). */
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
                int r = -errno;
                (void)close(fd);
                return r;
        }
        return fd;
}

void tunnel_handle(struct http_request *req)
{
        static const char upgraded[] = "HTTP/1.1 101 Switching Protocols\r\n"
                                       "Upgrade: tcp\r\nConnection: Upgrade\r\n\r\n";
        static struct splice s; /* one per handler child */
        static char buf[2][SPLICE_BUF];
        const char *v = http_param(req, "port");
        long long port;
        size_t early;
        int fd;

        for (size_t i = 0; i < req->n_params; i++)
                if (strcmp(req->params[i].name, "port") != 0) {
                        (void)http_reply_error(req, 400, "unknown parameter %s", req->params[i].name);
                        return;
                }
        if (!v || http_parse_decimal(v, &port) < 0 || port < 1 || port > 65535) {
                (void)http_reply_error(req, 400, "port must be a number from 1 to 65535");
                return;
        }
        if (req->content_length > 0) {
                (void)http_reply_error(req, 400, "/tunnel takes no body");
                return;
        }
        fd = connect_port((int)port);
        if (fd < 0) {
                (void)http_reply_error(
                        req, 502, "nothing accepts connections on port %lld in the sandbox: %s",
                        port, strerror(-fd));
                return;
        }
        req->head_sent = true;
        if (http_write_all(req->fd, upgraded, sizeof(upgraded) - 1) < 0)
                goto out;
        /* Bytes the broker sent right after its head belong to the stream. */
        early = req->len - req->body_off;
        if (early > 0 && http_write_all(fd, req->buf + req->body_off, early) < 0)
                goto out;
        (void)fcntl(fd, F_SETFL, O_NONBLOCK);
        (void)fcntl(req->fd, F_SETFL, O_NONBLOCK);
        splice_half_init(&s.side[0], req->fd, buf[0], sizeof(buf[0]));
        splice_half_init(&s.side[1], fd, buf[1], sizeof(buf[1]));
        /* until both sides end, an error, or AGENT_TUNNEL_IDLE_MS without
         * a byte either way */
        (void)splice_run(&s, AGENT_TUNNEL_IDLE_MS);
out:
        (void)close(fd);
}
