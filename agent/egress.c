/* egress: the sandbox's end of the egress path (docs/EGRESS.md).
 *
 * A child of PID 1 listens on 127.0.0.1:3128 (the container's own loopback:
 * network `none` keeps lo) and relays every accepted connection, byte for
 * byte, to the host's relay through the unix socket the host made in the
 * read-only egress directory. It parses nothing: Squid on the host speaks
 * HTTP with the client. One poll() loop, at most EGRESS_CONNS_MAX
 * connections, a fixed buffer per direction (splice.c). */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "agent.h"
#include "egress.h"
#include "splice.h"

#define EGRESS_CONNS_MAX 256
struct econn {
        struct splice pair; /* side 0: the client in the sandbox, 1: the host relay */
        char buf[2][SPLICE_BUF];
};

static const char *const proxy_env[][2] = {
        { "HTTP_PROXY", "http://127.0.0.1:3128" }, { "HTTPS_PROXY", "http://127.0.0.1:3128" },
        { "http_proxy", "http://127.0.0.1:3128" }, { "https_proxy", "http://127.0.0.1:3128" },
        { "NO_PROXY", "localhost,127.0.0.1" },     { "no_proxy", "localhost,127.0.0.1" },
};

bool egress_enabled(void)
{
        return access(EGRESS_SOCK_IN, F_OK) == 0 || access(EGRESS_DIR_IN, F_OK) == 0;
}

void egress_env_set(void)
{
        /* not overwriting: what the container's config already says wins */
        for (size_t i = 0; i < sizeof(proxy_env) / sizeof(proxy_env[0]); i++)
                (void)setenv(proxy_env[i][0], proxy_env[i][1], 0);
}

static int listen_local(void)
{
        struct sockaddr_in sa = { .sin_family = AF_INET,
                                  .sin_port = htons(EGRESS_PORT_IN),
                                  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

        if (fd < 0)
                return -1;
        (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 128) < 0) {
                close(fd);
                return -1;
        }
        return fd;
}

static int connect_host(void)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX, .sun_path = EGRESS_SOCK_IN };
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

        if (fd < 0)
                return -1;
        /* blocking connect: a unix socket answers at once or refuses */
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
                close(fd);
                return -1;
        }
        (void)fcntl(fd, F_SETFL, O_NONBLOCK);
        return fd;
}

static void econn_free(struct econn *c)
{
        close(c->pair.side[0].fd);
        close(c->pair.side[1].fd);
        free(c);
}

/* The child's loop; never returns. */
static void egress_serve(void)
{
        static struct econn *conns[EGRESS_CONNS_MAX];
        static struct pollfd p[1 + 2 * EGRESS_CONNS_MAX];
        size_t n = 0;
        int lfd;

        (void)prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
        (void)signal(SIGPIPE, SIG_IGN);
        (void)prctl(PR_SET_NAME, "agent-egress", 0, 0, 0);
        lfd = listen_local();
        if (lfd < 0)
                _exit(1);
        for (;;) {
                p[0] = (struct pollfd){ .fd = lfd, .events = n < EGRESS_CONNS_MAX ? POLLIN : 0 };
                for (size_t i = 0; i < n; i++)
                        splice_events(&conns[i]->pair, &p[1 + 2 * i]);
                if (poll(p, 1 + 2 * n, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        _exit(1);
                }
                for (size_t i = n; i-- > 0;) {
                        if (!(p[1 + 2 * i].revents | p[2 + 2 * i].revents))
                                continue;
                        if (!splice_pump(&conns[i]->pair, &p[1 + 2 * i])) {
                                econn_free(conns[i]);
                                conns[i] = conns[--n];
                        }
                }
                while (p[0].revents & POLLIN && n < EGRESS_CONNS_MAX) {
                        int cfd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC), hfd;
                        struct econn *c;

                        if (cfd < 0)
                                break;
                        hfd = connect_host();
                        c = hfd >= 0 ? calloc(1, sizeof(*c)) : NULL;
                        if (!c) {
                                if (hfd >= 0)
                                        close(hfd);
                                close(cfd);
                                continue;
                        }
                        splice_half_init(&c->pair.side[0], cfd, c->buf[0], sizeof(c->buf[0]));
                        splice_half_init(&c->pair.side[1], hfd, c->buf[1], sizeof(c->buf[1]));
                        conns[n++] = c;
                }
        }
}

pid_t egress_start(void)
{
        pid_t pid = fork();

        if (pid == 0) {
                agent_child_reset(-1);
                egress_serve();
        }
        return pid;
}
