/* sandbox-ingress: the host end of port endpoints (docs/INGRESS.md).
 *
 *   sandbox-ingress --socket PATH --agent-dir AGENT_DIR
 *                   [--conns-max N] [--sandbox-conns-max N] [--tenant-conns-max N]
 *                   [--idle-timeout-ms N]
 *
 * nginx sends it, over the unix socket PATH (or the socket systemd passes,
 * LISTEN_FDS), each request to /v1/sandboxes/{id}/proxy/{port}/... once
 * its auth_request has checked the caller's credential and named the
 * sandbox's agent directory in X-Sandbox-Ingress-Agent and its owner in
 * X-Sandbox-Ingress-Tenant. For each
 * connection it reads the request head (INGRESS_HEAD_MAX, under a
 * deadline), rewrites it (ingress_head.c: the path without the broker's
 * prefix, the broker's credentials and its own header gone), asks the
 * sandbox's agent for a tunnel to the port (agent_tunnel.c: the socket
 * opened without following links), sends the head, and then moves bytes
 * both ways uninterpreted: HTTP answers, bodies of any size, a WebSocket
 * after its 101, until either side closes or nothing moves for the idle
 * timeout. Every failure before the tunnel is a JSON answer
 * {code,message}; nothing here waits without a deadline.
 *
 * A thread per connection, at most --conns-max at once,
 * --sandbox-conns-max per sandbox (the agent serves at most 256
 * connections of any kind: tunnels must leave it room for commands) and
 * --tenant-conns-max per tenant (one tenant's sandboxes together cannot
 * take every connection from the others'). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "providers/agent/agent_tunnel.h"
#include "core/api_error.h"
#include "codec/ingress_head.h"
#include "core/log.h"
#include "providers/provider.h"
#include "splice.h"
#include "core/timeutil.h"

#define HEAD_TIMEOUT_MS 10000   /* nginx sends the head at once */
#define TUNNEL_TIMEOUT_MS 10000 /* connect to the agent and its 101 */
#define BUF_SIZE (32 * 1024)
#define THREAD_STACK (256 * 1024)

#define SLOT_NAME_MAX                                                              \
        (INGRESS_AGENT_NAME_MAX > INGRESS_TENANT_NAME_MAX ? INGRESS_AGENT_NAME_MAX \
                                                          : INGRESS_TENANT_NAME_MAX)

/* The live connections of one sandbox (by agent name) or one tenant. */
struct slot {
        char name[SLOT_NAME_MAX + 1];
        int n;
};

struct ingress {
        const char *agent_dir;
        int conns_max, sandbox_conns_max, tenant_conns_max, idle_ms;
        pthread_mutex_t lock; /* n_conns and the slots */
        int n_conns;
        /* conns_max entries each: each live connection holds one of each at most */
        struct slot *sandbox_slots, *tenant_slots;
};

struct conn {
        struct ingress *g;
        int fd;
        struct slot *sandbox_slot, *tenant_slot; /* NULL until held */
};

static int write_all(int fd, const char *p, size_t n, int64_t deadline)
{
        while (n > 0) {
                struct pollfd pfd = { .fd = fd, .events = POLLOUT };
                int64_t left = deadline - timeutil_mono_ms();
                ssize_t w;

                if (left <= 0)
                        return -ETIMEDOUT;
                if (poll(&pfd, 1, (int)(left < INT_MAX ? left : INT_MAX)) < 0 && errno != EINTR)
                        return -errno;
                w = send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
                if (w < 0) {
                        if (errno == EAGAIN || errno == EINTR)
                                continue;
                        return -errno;
                }
                p += w;
                n -= (size_t)w;
        }
        return 0;
}

/* The one error exit: {code,message} with its status, Connection: close. */
__attribute__((format(printf, 3, 4))) static void reply_error(int fd, enum api_error e,
                                                              const char *fmt, ...)
{
        char msg[512], esc[1024], out[2048];
        size_t k = 0;
        va_list ap;
        int n;

        va_start(ap, fmt);
        (void)vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        /* JSON string: the message holds only what we wrote and the
         * agent's printable reason; quote and backslash escaped */
        for (const char *p = msg; *p && k + 2 < sizeof(esc); p++) {
                if (*p == '"' || *p == '\\')
                        esc[k++] = '\\';
                esc[k++] = (unsigned char)*p < 0x20 ? ' ' : *p;
        }
        esc[k] = '\0';
        n = snprintf(out, sizeof(out), "{\"code\":\"%s\",\"message\":\"%s\"}\n", api_error_code(e),
                     esc);
        char head[256];
        int h = snprintf(head, sizeof(head),
                         "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\n"
                         "Content-Length: %d\r\nConnection: close\r\n\r\n",
                         api_error_status(e), api_status_reason(api_error_status(e)), n);
        int64_t deadline = timeutil_mono_ms() + HEAD_TIMEOUT_MS;

        if (write_all(fd, head, (size_t)h, deadline) == 0)
                (void)write_all(fd, out, (size_t)n, deadline);
}

/* The slot of name in slots (conns_max entries), or a free one for it,
 * or NULL (none free: cannot happen while each connection holds one). */
static struct slot *slot_find(struct ingress *g, struct slot *slots, const char *name)
{
        struct slot *free_slot = NULL;

        for (int i = 0; i < g->conns_max; i++) {
                if (slots[i].n > 0 && strcmp(slots[i].name, name) == 0)
                        return &slots[i];
                if (slots[i].n == 0 && !free_slot)
                        free_slot = &slots[i];
        }
        if (free_slot)
                snprintf(free_slot->name, sizeof(free_slot->name), "%s", name);
        return free_slot;
}

enum take { TAKEN, SANDBOX_FULL, TENANT_FULL };

/* Take a connection slot of the sandbox (agent) and one of its tenant,
 * both or neither. */
static enum take slot_take(struct conn *c, const char *agent, const char *tenant)
{
        struct ingress *g = c->g;
        struct slot *s, *t;
        enum take r;

        pthread_mutex_lock(&g->lock);
        s = slot_find(g, g->sandbox_slots, agent);
        t = slot_find(g, g->tenant_slots, tenant);
        if (!t || t->n >= g->tenant_conns_max)
                r = TENANT_FULL;
        else if (!s || s->n >= g->sandbox_conns_max)
                r = SANDBOX_FULL;
        else {
                s->n++;
                t->n++;
                c->sandbox_slot = s;
                c->tenant_slot = t;
                r = TAKEN;
        }
        pthread_mutex_unlock(&g->lock);
        return r;
}

static void conn_end(struct conn *c)
{
        struct ingress *g = c->g;

        pthread_mutex_lock(&g->lock);
        if (c->sandbox_slot)
                c->sandbox_slot->n--;
        if (c->tenant_slot)
                c->tenant_slot->n--;
        g->n_conns--;
        pthread_mutex_unlock(&g->lock);
        (void)close(c->fd);
        free(c);
}

/* Read the request head (and whatever body bytes came with it) into buf;
 * *head_len is the head's length, *len all bytes read. */
static int read_head(int fd, char *buf, size_t *head_len, size_t *len)
{
        int64_t deadline = timeutil_mono_ms() + HEAD_TIMEOUT_MS;

        *len = 0;
        for (;;) {
                struct pollfd pfd = { .fd = fd, .events = POLLIN };
                int64_t left = deadline - timeutil_mono_ms();
                size_t from = *len > 3 ? *len - 3 : 0;
                ssize_t n;

                if (*len == INGRESS_HEAD_MAX)
                        return -E2BIG;
                if (left <= 0)
                        return -ETIMEDOUT;
                if (poll(&pfd, 1, (int)left) < 0 && errno != EINTR)
                        return -errno;
                n = recv(fd, buf + *len, INGRESS_HEAD_MAX - *len, MSG_DONTWAIT);
                if (n < 0 && (errno == EAGAIN || errno == EINTR))
                        continue;
                if (n <= 0)
                        return -ECONNRESET;
                *len += (size_t)n;
                *head_len = ingress_head_end(buf + from, *len - from);
                if (*head_len) {
                        *head_len += from;
                        return 0;
                }
        }
}

/* Splice a (nginx) and b (the tunnel) until both end, an error, or the
 * idle timeout. */
static void splice_pair(int a, int b, int idle_ms)
{
        struct pair {
                struct splice s;
                char buf[2][BUF_SIZE];
        } *p = malloc(sizeof(*p));

        if (!p)
                return;
        splice_half_init(&p->s.side[0], a, p->buf[0], sizeof(p->buf[0]));
        splice_half_init(&p->s.side[1], b, p->buf[1], sizeof(p->buf[1]));
        (void)splice_run(&p->s, idle_ms);
        free(p);
}

static void *conn_main(void *arg)
{
        struct conn *c = arg;
        struct ingress *g = c->g;
        struct agent_tunnel *t = NULL;
        struct ingress_head ih;
        char *in = NULL, *out = NULL, dir[PATH_MAX], err[PROVIDER_ERR_MAX] = "", port_s[8];
        size_t head_len = 0, len = 0;
        int64_t deadline;
        int r;

        in = malloc(INGRESS_HEAD_MAX);
        out = malloc(INGRESS_HEAD_MAX);
        t = malloc(sizeof(*t));
        if (!in || !out || !t) {
                reply_error(c->fd, API_UNAVAILABLE, "out of memory");
                goto out;
        }
        r = read_head(c->fd, in, &head_len, &len);
        if (r == -E2BIG) {
                reply_error(c->fd, API_INVALID_REQUEST, "request head larger than %d bytes",
                            INGRESS_HEAD_MAX);
                goto out;
        }
        if (r < 0)
                goto out; /* nginx went away, or sent nothing in time */
        if (ingress_head_rewrite(in, head_len, out, &ih) < 0) {
                reply_error(c->fd, API_INVALID_REQUEST, "%s", ih.why);
                goto out;
        }
        snprintf(port_s, sizeof(port_s), "%d", ih.port);
        if (!ih.tenant[0]) {
                /* the auth route names the tenant: without it there is no
                 * share to count against, and none is unbounded */
                log_err(LOG_KV({ "AGENT", ih.agent }, { "PORT", port_s }),
                        "no " INGRESS_TENANT_HEADER " from nginx (its configuration is older than "
                        "this program's?)");
                reply_error(c->fd, API_INTERNAL,
                            "the endpoint's tenant is unknown: the broker's nginx configuration "
                            "does not pass " INGRESS_TENANT_HEADER);
                goto out;
        }
        switch (slot_take(c, ih.agent, ih.tenant)) {
        case TAKEN: break;
        case SANDBOX_FULL:
                log_warn(LOG_KV({ "AGENT", ih.agent }, { "PORT", port_s }, { "TENANT", ih.tenant }),
                         "sandbox at its cap of %d ingress connections", g->sandbox_conns_max);
                reply_error(c->fd, API_TOO_MANY_REQUESTS,
                            "this sandbox has %d endpoint connections open already",
                            g->sandbox_conns_max);
                goto out;
        case TENANT_FULL:
                log_warn(LOG_KV({ "AGENT", ih.agent }, { "PORT", port_s }, { "TENANT", ih.tenant }),
                         "tenant at its cap of %d ingress connections", g->tenant_conns_max);
                reply_error(c->fd, API_TOO_MANY_REQUESTS,
                            "this tenant's sandboxes have %d endpoint connections open already",
                            g->tenant_conns_max);
                goto out;
        }
        snprintf(dir, sizeof(dir), "%s/%s", g->agent_dir, ih.agent);
        r = agent_tunnel_open(dir, ih.port, TUNNEL_TIMEOUT_MS, t, err);
        if (r == -ENXIO) {
                reply_error(c->fd, API_BAD_GATEWAY,
                            "nothing accepts connections on port %d in the sandbox", ih.port);
                goto out;
        }
        if (r == -EBUSY) {
                reply_error(c->fd, API_TOO_MANY_REQUESTS, "the sandbox's agent is busy: %s", err);
                goto out;
        }
        if (r < 0) {
                log_warn(LOG_KV({ "AGENT", ih.agent }, { "PORT", port_s }), "tunnel: %s", err);
                reply_error(c->fd, API_SANDBOX_FAILED, "%s", err);
                goto out;
        }
        deadline = timeutil_mono_ms() + HEAD_TIMEOUT_MS;
        /* The rewritten head, the body bytes read with it, then the
         * stream's first bytes back (rare: the server spoke first). */
        if (write_all(t->fd, out, ih.out_len, deadline) < 0 ||
            write_all(t->fd, in + head_len, len - head_len, deadline) < 0 ||
            write_all(c->fd, t->early, t->early_len, deadline) < 0)
                goto out;
        free(in);
        free(out);
        in = out = NULL;
        (void)fcntl(c->fd, F_SETFL, O_NONBLOCK);
        splice_pair(c->fd, t->fd, g->idle_ms);
out:
        if (t && t->fd >= 0)
                (void)close(t->fd);
        free(t);
        free(in);
        free(out);
        conn_end(c);
        return NULL;
}

static int listen_at(const char *path)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        mode_t old;
        int fd;

        if (strlen(path) >= sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        strcpy(sa.sun_path, path);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        (void)unlink(path);
        old = umask(0117); /* 0660: nginx's group */
        if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 512) < 0) {
                int r = -errno;
                (void)umask(old);
                (void)close(fd);
                return r;
        }
        (void)umask(old);
        return fd;
}

/* The socket systemd passes (sd_listen_fds semantics: fd 3), or -1. */
static int systemd_socket(void)
{
        const char *pid = getenv("LISTEN_PID"), *fds = getenv("LISTEN_FDS");

        if (!pid || !fds || atol(pid) != (long)getpid() || strcmp(fds, "1") != 0)
                return -1;
        (void)fcntl(3, F_SETFD, FD_CLOEXEC);
        return 3;
}

static int positive(const char *s, int *ret)
{
        char *end;
        long v = strtol(s, &end, 10);

        if (*end || end == s || v < 1 || v > INT_MAX)
                return -1;
        *ret = (int)v;
        return 0;
}

int main(int argc, char **argv)
{
        static struct ingress g = { .conns_max = 1024,
                                    .sandbox_conns_max = 64,
                                    .tenant_conns_max = 256,
                                    .idle_ms = 600000,
                                    .lock = PTHREAD_MUTEX_INITIALIZER };
        const char *sock = NULL, *lvl = getenv("LOG_LEVEL");
        pthread_attr_t attr;
        int lfd, bad = 0;

        log_init("sandbox-ingress",
                 lvl && log_level_parse(lvl) >= 0 ? log_level_parse(lvl) : LOG_INFO);
        for (int i = 1; i < argc; i++) {
                const char *v = i + 1 < argc ? argv[i + 1] : NULL;

                if (!strcmp(argv[i], "--socket") && v)
                        sock = v;
                else if (!strcmp(argv[i], "--agent-dir") && v)
                        g.agent_dir = v;
                else if (!strcmp(argv[i], "--conns-max") && v)
                        bad |= positive(v, &g.conns_max);
                else if (!strcmp(argv[i], "--sandbox-conns-max") && v)
                        bad |= positive(v, &g.sandbox_conns_max);
                else if (!strcmp(argv[i], "--tenant-conns-max") && v)
                        bad |= positive(v, &g.tenant_conns_max);
                else if (!strcmp(argv[i], "--idle-timeout-ms") && v)
                        bad |= positive(v, &g.idle_ms);
                else
                        bad = 1;
                i++;
        }
        lfd = systemd_socket();
        if (bad || !g.agent_dir || g.agent_dir[0] != '/' || (lfd < 0 && !sock)) {
                fprintf(stderr, "usage: sandbox-ingress --socket PATH --agent-dir /ABSOLUTE/DIR "
                                "[--conns-max N] [--sandbox-conns-max N] [--tenant-conns-max N] "
                                "[--idle-timeout-ms N]\n"
                                "(--socket may be left out under systemd socket activation)\n");
                return 2;
        }
        (void)signal(SIGPIPE, SIG_IGN);
        g.sandbox_slots = calloc((size_t)g.conns_max, sizeof(*g.sandbox_slots));
        g.tenant_slots = calloc((size_t)g.conns_max, sizeof(*g.tenant_slots));
        if (!g.sandbox_slots || !g.tenant_slots) {
                log_err(NULL, "out of memory");
                return 1;
        }
        if (lfd < 0) {
                lfd = listen_at(sock);
                if (lfd < 0) {
                        log_err(NULL, "listen on %s: %s", sock, strerror(-lfd));
                        return 1;
                }
        }
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&attr, THREAD_STACK);
        log_info(NULL, "serving %s for the agents under %s", sock ? sock : "the systemd socket",
                 g.agent_dir);
        for (;;) {
                int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
                struct conn *c;
                pthread_t th;
                bool over;

                if (fd < 0) {
                        if (errno != EINTR && errno != ECONNABORTED)
                                usleep(100 * 1000); /* EMFILE and the like: not a busy loop */
                        continue;
                }
                pthread_mutex_lock(&g.lock);
                over = g.n_conns >= g.conns_max;
                if (!over)
                        g.n_conns++;
                pthread_mutex_unlock(&g.lock);
                if (over) {
                        reply_error(fd, API_UNAVAILABLE, "too many endpoint connections (%d)",
                                    g.conns_max);
                        (void)close(fd);
                        continue;
                }
                c = calloc(1, sizeof(*c));
                if (c) {
                        c->g = &g;
                        c->fd = fd;
                }
                if (!c || pthread_create(&th, &attr, conn_main, c) != 0) {
                        reply_error(fd, API_UNAVAILABLE, "cannot serve more connections now");
                        free(c);
                        (void)close(fd);
                        pthread_mutex_lock(&g.lock);
                        g.n_conns--;
                        pthread_mutex_unlock(&g.lock);
                }
        }
}
