/* sandbox-egress-relay: the host end of the sandboxes' egress (docs/EGRESS.md),
 * and of the gVisor sandboxes' agents (relay_agent.c; docs/AGENT.md,
 * "Transports").
 *
 *   sandbox-egress-relay [--dir EGRESS_DIR --squid-port PORT] [--agent-dir AGENT_DIR]
 *
 * Either role or both, in one epoll loop. Egress:
 * For every sandbox directory EGRESS_DIR/<sandbox id>/ (32 lowercase hex
 * digits; anything else, and links, are ignored) it binds <sid>/egress.sock.
 * Each connection accepted there is relayed to Squid on 127.0.0.1:PORT after
 * a PROXY protocol v1 line whose source address is the sandbox id read as
 * an IPv6 address (128 bits = 32 hex digits). The sandbox cannot choose that
 * line: the directory is mounted read-only in it, and what it sends comes
 * after ours (Squid takes only the first PROXY line and refuses a second as
 * a bad request). No byte is interpreted here.
 *
 * One epoll loop: inotify on EGRESS_DIR and AGENT_DIR (and a rescan every
 * RESCAN_MS, in case an event was lost), the listening sockets, and the
 * spliced pairs.
 * Connections are bounded per sandbox and in total; buffers are fixed. */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "relay.h"

#define SOCK_NAME "egress.sock"

static struct ref ino_ref = { T_INOTIFY, NULL };

void relay_log(const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        fputs("sandbox-egress-relay: ", stderr);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        va_end(ap);
}

long long relay_now_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static bool sid_ok(const char *s)
{
        return strlen(s) == SID_LEN && strspn(s, "0123456789abcdef") == SID_LEN;
}

/* The sandbox id as an IPv6 address text (8 groups of 4 hex digits). */
static void sid_to_ipv6(const char *sid, char *buf, size_t size)
{
        struct in6_addr a;

        for (int i = 0; i < 16; i++) {
                unsigned v;
                sscanf(sid + 2 * i, "%2x", &v);
                a.s6_addr[i] = (unsigned char)v;
        }
        if (!inet_ntop(AF_INET6, &a, buf, (socklen_t)size))
                snprintf(buf, size, "::");
}

int relay_ep_ctl(struct relay *r, int op, int fd, uint32_t events, void *ref)
{
        struct epoll_event ev = { .events = events, .data.ptr = ref };

        return epoll_ctl(r->ep, op, fd, &ev);
}

int relay_bind_in(int top_fd, const char *sub, const char *name, mode_t mode)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int dfd, fd, e;
        struct stat st;

        dfd = openat(top_fd, sub, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dfd < 0)
                return -errno;
        if (fstat(dfd, &st) < 0 || !S_ISDIR(st.st_mode)) {
                close(dfd);
                return -ENOTDIR;
        }
        snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d/%s", dfd, name);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) {
                e = -errno;
                close(dfd);
                return e;
        }
        /* a stale socket of an earlier relay goes first; a non-socket is left */
        if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISSOCK(st.st_mode))
                (void)unlinkat(dfd, name, 0);
        if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 128) < 0) {
                e = -errno;
                close(fd);
                close(dfd);
                return e;
        }
        (void)fchmodat(dfd, name, mode, 0);
        close(dfd);
        return fd;
}

/* egress.sock in the sandbox's directory; the sandbox's processes run as
 * any uid: everyone may connect */
static int sandbox_bind(struct relay *r, struct sandbox *sb)
{
        int fd = relay_bind_in(r->dir_fd, sb->sid, SOCK_NAME, 0666);

        if (fd < 0)
                return fd;
        sb->lfd = fd;
        return 0;
}

static void sandbox_add(struct relay *r, const char *sid)
{
        struct sandbox *free_sb = NULL;

        for (int i = 0; i < SANDBOXES_MAX; i++) {
                if (r->sbs[i].used && !strcmp(r->sbs[i].sid, sid)) {
                        r->sbs[i].seen = true;
                        return;
                }
                if (!r->sbs[i].used && !free_sb)
                        free_sb = &r->sbs[i];
        }
        if (!free_sb) {
                relay_log("too many sandboxes; %s not served", sid);
                return;
        }
        memset(free_sb, 0, sizeof(*free_sb));
        snprintf(free_sb->sid, sizeof(free_sb->sid), "%s", sid);
        if (sandbox_bind(r, free_sb) < 0)
                return; /* retried at the next scan */
        struct ref *ref = &r->sb_refs[free_sb - r->sbs];
        *ref = (struct ref){ T_LISTEN, free_sb };
        if (relay_ep_ctl(r, EPOLL_CTL_ADD, free_sb->lfd, EPOLLIN, ref) < 0) {
                close(free_sb->lfd);
                return;
        }
        free_sb->used = true;
        free_sb->seen = true;
        relay_log("serving sandbox %s", sid);
}

/* Stop listening for a sandbox whose directory is gone; its open
 * connections end on their own. */
static void sandbox_drop(struct sandbox *sb)
{
        close(sb->lfd);
        sb->lfd = -1;
        sb->used = false;
        relay_log("sandbox %s gone", sb->sid);
}

static void scan(struct relay *r)
{
        int fd = openat(r->dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
        struct dirent *e;

        if (!d) {
                if (fd >= 0)
                        close(fd);
                return;
        }
        for (int i = 0; i < SANDBOXES_MAX; i++)
                r->sbs[i].seen = false;
        while ((e = readdir(d)))
                if (e->d_type == DT_DIR && sid_ok(e->d_name))
                        sandbox_add(r, e->d_name);
        closedir(d);
        for (int i = 0; i < SANDBOXES_MAX; i++)
                if (r->sbs[i].used && !r->sbs[i].seen)
                        sandbox_drop(&r->sbs[i]);
}

struct conn *relay_conn_alloc(struct relay *r)
{
        struct conn *c = calloc(1, sizeof(*c));

        if (!c)
                return NULL;
        for (int i = 0; i < 2; i++)
                splice_half_init(&c->pair.side[i], -1, c->buf[i], sizeof(c->buf[i]));
        r->n_conns++;
        return c;
}

void relay_conn_close(struct relay *r, struct conn *c)
{
        for (int i = 0; i < 2; i++)
                if (c->pair.side[i].fd >= 0)
                        close(c->pair.side[i].fd); /* also leaves epoll */
        if (c->sb && c->sb->n_conns > 0)
                c->sb->n_conns--;
        if (c->ac)
                agents_conn_closed(c->ac);
        if (c->hs)
                relay_tcp_forget(r, c);
        r->n_conns--;
        c->pair.side[0].fd = c->pair.side[1].fd = -1;
        c->dead = true;
        c->next_dead = r->dead;
        r->dead = c;
}

/* The events a side waits for: readable while its buffer has room and it
 * has not ended, writable while the peer's buffer waits for it. */
void relay_conn_arm(struct relay *r, struct conn *c)
{
        struct pollfd p[2];

        splice_events(&c->pair, p);
        for (int i = 0; i < 2; i++) {
                /* epoll's EPOLLIN and EPOLLOUT are poll's; a side left out
                 * of poll() (fd -1) waits for nothing here */
                uint32_t ev = i == 1 && c->connecting ? EPOLLOUT : (uint32_t)p[i].events;

                (void)relay_ep_ctl(r, EPOLL_CTL_MOD, c->pair.side[i].fd, ev,
                                   (struct ref *)((char *)c + i));
        }
}

int relay_conn_start(struct relay *r, struct conn *c)
{
        if (relay_ep_ctl(r, EPOLL_CTL_ADD, c->pair.side[0].fd, 0, (char *)c + 0) < 0 ||
            relay_ep_ctl(r, EPOLL_CTL_ADD, c->pair.side[1].fd, 0, (char *)c + 1) < 0) {
                relay_conn_close(r, c);
                return -1;
        }
        relay_conn_arm(r, c);
        return 0;
}

static struct conn *conn_of(void *p, int *ret_side)
{
        /* the epoll data of side i is the conn's address plus i (conns are
         * malloc'd, so their addresses are even) */
        uintptr_t v = (uintptr_t)p;

        *ret_side = (int)(v & 1);
        return (struct conn *)(v & ~(uintptr_t)1);
}

static void accept_one(struct relay *r, struct sandbox *sb)
{
        for (;;) {
                int fd = accept4(sb->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
                struct sockaddr_in sq = { .sin_family = AF_INET,
                                          .sin_port = htons((uint16_t)r->squid_port),
                                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
                struct conn *c;
                char ip[INET6_ADDRSTRLEN];
                int n;

                if (fd < 0)
                        return;
                if (sb->n_conns >= CONNS_PER_SANDBOX || r->n_conns >= CONNS_MAX) {
                        close(fd);
                        continue;
                }
                c = relay_conn_alloc(r);
                if (!c) {
                        close(fd);
                        continue;
                }
                c->sb = sb;
                c->pair.side[0].fd = fd;
                c->pair.side[1].fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
                sb->n_conns++;
                if (c->pair.side[1].fd < 0) {
                        relay_conn_close(r, c);
                        continue;
                }
                /* Ours is the first line Squid reads on this connection. */
                sid_to_ipv6(sb->sid, ip, sizeof(ip));
                n = snprintf(c->pair.side[0].buf, c->pair.side[0].size,
                             "PROXY TCP6 %s ::1 %u 3128\r\n", ip,
                             (unsigned)(40000 + (r->n_conns % 20000)));
                c->pair.side[0].len = (size_t)n;
                if (connect(c->pair.side[1].fd, (struct sockaddr *)&sq, sizeof(sq)) < 0 &&
                    errno != EINPROGRESS) {
                        relay_conn_close(r, c);
                        continue;
                }
                c->connecting = true;
                (void)relay_conn_start(r, c);
        }
}

/* Move what can move both ways; false when the connection is over. The
 * epoll loop is level-triggered, so each side is tried as if readable (a
 * read that finds nothing answers EAGAIN) and what is left waits for the
 * next event. */
static bool conn_pump(struct conn *c)
{
        static const struct pollfd ready[2] = { { .revents = POLLIN }, { .revents = POLLIN } };

        return splice_pump(&c->pair, ready);
}

static void conn_event(struct relay *r, struct conn *c, int side, uint32_t ev)
{
        if (c->dead)
                return;
        if (c->hs) {
                relay_tcp_event(r, c, side, ev);
                return;
        }
        if (side == 1 && c->connecting) {
                int err = 0;
                socklen_t l = sizeof(err);

                if (getsockopt(c->pair.side[1].fd, SOL_SOCKET, SO_ERROR, &err, &l) < 0 || err) {
                        relay_conn_close(r, c);
                        return;
                }
                c->connecting = false;
        }
        /* the client's side waits for the connect to Squid (its buffer
         * holds the PROXY line, the first bytes Squid must read) */
        if (ev & EPOLLERR || (!c->connecting && !conn_pump(c))) {
                relay_conn_close(r, c);
                return;
        }
        relay_conn_arm(r, c);
}

static void inotify_read(struct relay *r)
{
        char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));

        while (read(r->ino_fd, buf, sizeof(buf)) > 0)
                ;
        if (r->dir)
                scan(r);
        if (r->agents)
                agents_scan(r);
}

static void usage(void)
{
        fprintf(stderr, "usage: sandbox-egress-relay [--dir EGRESS_DIR --squid-port PORT] "
                        "[--agent-dir AGENT_DIR]\n");
        exit(2);
}

/* Watch dir (made with mode if missing) for entries coming and going. */
static int watch(struct relay *r, const char *dir, mode_t mode)
{
        (void)mkdir(dir, mode);
        if (inotify_add_watch(r->ino_fd, dir,
                              IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM | IN_CLOSE_WRITE |
                                      IN_ONLYDIR) < 0) {
                relay_log("inotify %s: %s", dir, strerror(errno));
                return -1;
        }
        return 0;
}

int main(int argc, char **argv)
{
        static struct relay relay;
        struct relay *r = &relay;
        const char *agent_dir = NULL;
        bool port_given = false;
        long long next_scan;

        for (int i = 1; i < argc; i++) {
                if (!strcmp(argv[i], "--dir") && i + 1 < argc)
                        r->dir = argv[++i];
                else if (!strcmp(argv[i], "--squid-port") && i + 1 < argc) {
                        r->squid_port = atoi(argv[++i]);
                        port_given = true;
                } else if (!strcmp(argv[i], "--agent-dir") && i + 1 < argc)
                        agent_dir = argv[++i];
                else
                        usage();
        }
        if ((!r->dir && !agent_dir) || (r->dir && r->dir[0] != '/') ||
            (agent_dir && agent_dir[0] != '/') || (!r->dir != !port_given) ||
            (r->dir && (r->squid_port <= 0 || r->squid_port > 65535)))
                usage();
        (void)signal(SIGPIPE, SIG_IGN);
        r->dir_fd = -1;
        r->ep = epoll_create1(EPOLL_CLOEXEC);
        r->ino_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (r->ep < 0 || r->ino_fd < 0 ||
            relay_ep_ctl(r, EPOLL_CTL_ADD, r->ino_fd, EPOLLIN, &ino_ref) < 0) {
                relay_log("epoll/inotify: %s", strerror(errno));
                return 1;
        }
        if (r->dir) {
                if (watch(r, r->dir, 0755) < 0)
                        return 1;
                r->dir_fd = open(r->dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
                if (r->dir_fd < 0) {
                        relay_log("%s: %s", r->dir, strerror(errno));
                        return 1;
                }
                scan(r);
                relay_log("relaying %s to 127.0.0.1:%d", r->dir, r->squid_port);
        }
        if (agent_dir) {
                if (watch(r, agent_dir, 0700) < 0)
                        return 1;
                r->agents = agents_new(r, agent_dir);
                if (!r->agents)
                        return 1;
                agents_scan(r);
                relay_log("relaying agents of %s", agent_dir);
        }
        next_scan = relay_now_ms() + RESCAN_MS;
        for (;;) {
                struct epoll_event evs[64];
                long long now = relay_now_ms();
                int timeout = next_scan > now ? (int)(next_scan - now) : 0;
                int t = r->agents ? agents_tick(r, now) : -1;
                int n;

                if (t >= 0 && t < timeout)
                        timeout = t;
                n = epoll_wait(r->ep, evs, 64, timeout);
                if (n < 0 && errno != EINTR) {
                        relay_log("epoll: %s", strerror(errno));
                        return 1;
                }
                for (int i = 0; i < n; i++) {
                        void *p = evs[i].data.ptr;

                        if (p == &ino_ref) {
                                inotify_read(r);
                        } else if ((char *)p >= (char *)r->sb_refs &&
                                   (char *)p < (char *)(r->sb_refs + SANDBOXES_MAX)) {
                                struct sandbox *sb = ((struct ref *)p)->p;
                                if (sb->used)
                                        accept_one(r, sb);
                        } else if (r->agents && agents_event(r, p, evs[i].events)) {
                                continue;
                        } else {
                                int side;
                                struct conn *c = conn_of(p, &side);
                                conn_event(r, c, side, evs[i].events);
                        }
                }
                while (r->dead) {
                        struct conn *c = r->dead;
                        r->dead = c->next_dead;
                        free(c);
                }
                if (relay_now_ms() >= next_scan) {
                        if (r->dir)
                                scan(r);
                        if (r->agents)
                                agents_scan(r);
                        next_scan = relay_now_ms() + RESCAN_MS;
                }
        }
}
