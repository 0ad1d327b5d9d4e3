/* sandbox-egress-relay --agent-dir AGENT_DIR: the host end of the agents that
 * dial (docs/AGENT.md, "Transports"; relay.h).
 *
 * Under gVisor the host cannot connect to a socket bound inside the sandbox,
 * so the sandbox-agent dials out instead. For every container whose agent
 * dials, the broker makes AGENT_DIR/<container id>.dial (a regular file; 12
 * to 64 lowercase hex digits) beside its run directory AGENT_DIR/<container
 * id>/, which is mounted read-only in the sandbox. Here both sockets of that
 * directory are bound, mode 0600:
 *   dial.sock   the agent connects here and leaves the connection idle; up to
 *               IDLE_MAX per container wait in its pool (more are closed). The
 *               agent never speaks first: an idle connection that becomes
 *               readable or hangs up is closed.
 *   agent.sock  the broker and sandbox-ingress connect here, as to a
 *               listening agent. Each connection is paired with the oldest
 *               idle one and spliced both ways (relay.c's pairs); with none
 *               idle it waits, unread, for the next dial (up to PENDING_MAX
 *               per container, PENDING_MS each; then closed). One that hangs
 *               up meanwhile with nothing sent leaves the queue (on its
 *               hangup event, and before a dial or the cap could count it);
 *               one that sent a request and shut its side down waits on.
 * Pairs count toward CONNS_PER_SANDBOX and CONNS_MAX. When the marker or the
 * directory goes, both listeners and every waiting connection are closed;
 * pairs run to their end. No byte is interpreted here.
 *
 * Agents that listen on TCP (Kubernetes pods, on other nodes): the marker
 * is AGENT_DIR/<ref>.tcp instead (<ref> a DNS label), one line ADDR PORT
 * KEYHEX (agent_marker.h), a regular file (not a link) of mode 0600 owned
 * by the relay's uid or root, beside the directory AGENT_DIR/<ref>/. Only
 * agent.sock is bound there; each connection is paired with a TCP
 * connection to ADDR:PORT that first passes the handshake (relay_tcp.c).
 * A marker rewritten (renamed into place) takes effect for the next
 * connections; one that no longer parses is logged and the container
 * dropped as if removed; a removed one closes the listener and unlinks
 * agent.sock. A bad marker is logged once per version of the file. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent_marker.h"
#include "relay.h"

#define CID_MIN 12
#define CID_MAX 64
#define CTRS_MAX SANDBOXES_MAX
#define IDLE_MAX 16
#define PENDING_MAX 64
#define PENDING_MS 10000
#define MARKER ".dial"
#define MARKER_TCP ".tcp"
#define BAD_SEEN 64 /* bad markers remembered, so that each is logged once */

enum atag { A_BROKER, A_DIAL, A_IDLE, A_PEND };

/* The epoll data of an agent's listener or idle connection is the address
 * of its aref plus AREF_BIT: relay.c's pairs use their address plus 0 or 1,
 * and both are at least 8-aligned, so bit 1 tells them apart. */
#define AREF_BIT 2
struct aref {
        enum atag tag;
        struct actr *ac;
        int slot; /* A_IDLE, A_PEND: its slot */
};

struct actr {
        bool used; /* being served (listeners open) */
        bool seen; /* in the last scan */
        bool tcp;  /* a .tcp marker's: agent.sock only, pairs connect to m */
        char cid[CID_MAX + 1];
        struct agent_marker m; /* .tcp: the marker as last read */
        struct stat mst;       /* .tcp: the marker file it was read from */
        int lfd_broker, lfd_dial;
        int idle[IDLE_MAX];                /* -1: free */
        long long idle_seq[IDLE_MAX];      /* order of the dials */
        int pend[PENDING_MAX];             /* broker connections waiting; -1: free */
        long long pend_since[PENDING_MAX]; /* ms, for PENDING_MS */
        long long pend_seq[PENDING_MAX];   /* order of arrival (a ms has many) */
        int n_pend;                        /* pend[] in use */
        int n_conns;                       /* pairs open (they may outlive `used`) */
        struct aref ref_broker, ref_dial, ref_idle[IDLE_MAX], ref_pend[PENDING_MAX];
};

struct agents {
        const char *dir;
        int dir_fd;
        struct actr *ctrs[CTRS_MAX]; /* malloc'd; freed when neither used nor paired */
        long long seq;
        /* what agents_tick has to look at: broker connections waiting, and
         * containers gone but not yet freed; with neither it returns at
         * once instead of walking the table on every wakeup */
        int n_pend, n_gone;
        struct {
                char name[CID_MAX + 1];
                struct stat st;
        } bad[BAD_SEEN]; /* the bad .tcp markers logged */
        int bad_next;
};

struct agents *agents_new(struct relay *r, const char *dir)
{
        struct agents *a = calloc(1, sizeof(*a));

        (void)r;
        if (!a)
                return NULL;
        a->dir = dir;
        a->dir_fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (a->dir_fd < 0) {
                relay_log("%s: %s", dir, strerror(errno));
                free(a);
                return NULL;
        }
        return a;
}

/* "<cid>.dial" with cid CID_MIN..CID_MAX lowercase hex digits: the cid into buf. */
static bool marker_cid(const char *name, char *buf)
{
        size_t n = strspn(name, "0123456789abcdef");

        if (n < CID_MIN || n > CID_MAX || strcmp(name + n, MARKER))
                return false;
        memcpy(buf, name, n);
        buf[n] = '\0';
        return true;
}

/* "<ref>.tcp" with ref a DNS label: the ref into buf. */
static bool marker_ref(const char *name, char *buf)
{
        size_t n = strlen(name);

        if (n <= strlen(MARKER_TCP) || strcmp(name + n - strlen(MARKER_TCP), MARKER_TCP))
                return false;
        n -= strlen(MARKER_TCP);
        if (!agent_ref_ok(name, n))
                return false;
        memcpy(buf, name, n);
        buf[n] = '\0';
        return true;
}

static bool same_file(const struct stat *a, const struct stat *b)
{
        return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
               a->st_mode == b->st_mode && a->st_uid == b->st_uid &&
               a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
               a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

/* A bad .tcp marker, logged once per version of the file. */
static void bad_marker(struct agents *a, const char *ref, const struct stat *st, const char *why)
{
        for (int i = 0; i < BAD_SEEN; i++)
                if (!strcmp(a->bad[i].name, ref) && same_file(&a->bad[i].st, st))
                        return;
        snprintf(a->bad[a->bad_next].name, sizeof(a->bad[0].name), "%s", ref);
        a->bad[a->bad_next].st = *st;
        a->bad_next = (a->bad_next + 1) % BAD_SEEN;
        relay_log("marker %s%s refused: %s; not served", ref, MARKER_TCP, why);
}

/* Read and parse AGENT_DIR/<ref>.tcp, whose lstat is st: 0, or -1 (logged). */
static int marker_read(struct agents *a, const char *ref, const struct stat *st,
                       struct agent_marker *m)
{
        char name[CID_MAX + sizeof(MARKER_TCP)], buf[AGENT_MARKER_MAX + 1];
        const char *why = NULL;
        struct stat fst;
        ssize_t n = -1;
        int fd;

        snprintf(name, sizeof(name), "%s%s", ref, MARKER_TCP);
        if (!S_ISREG(st->st_mode)) {
                bad_marker(a, ref, st, S_ISLNK(st->st_mode) ? "a link" : "not a regular file");
                return -1;
        }
        if ((st->st_mode & 07777) != 0600) {
                bad_marker(a, ref, st, "mode is not 0600");
                return -1;
        }
        if (st->st_uid != geteuid() && st->st_uid != 0) {
                bad_marker(a, ref, st, "owned by another user");
                return -1;
        }
        fd = openat(a->dir_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        if (fd < 0)
                return -1; /* gone or replaced since: the next scan */
        /* the file read must be the one checked */
        if (fstat(fd, &fst) < 0 || fst.st_dev != st->st_dev || fst.st_ino != st->st_ino) {
                (void)close(fd);
                return -1;
        }
        n = read(fd, buf, sizeof(buf));
        (void)close(fd);
        if (n < 0 || agent_marker_parse(buf, (size_t)n, m, &why) < 0) {
                bad_marker(a, ref, st, why ? why : "unreadable");
                memset(buf, 0, sizeof(buf));
                return -1;
        }
        memset(buf, 0, sizeof(buf));
        return 0;
}

/* Slot i of pend[] leaves the queue; its fd is returned (not closed). */
static int pend_take(struct agents *a, struct actr *ac, int i)
{
        int fd = ac->pend[i];

        ac->pend[i] = -1;
        ac->n_pend--;
        a->n_pend--;
        return fd;
}

static void pend_close(struct agents *a, struct actr *ac, int i)
{
        (void)close(pend_take(a, ac, i));
}

/* What fd has, read without taking it: 1 bytes, 0 nothing yet, -1 its peer
 * hung up with nothing left to read (or it failed). */
static int peek(int fd)
{
        char c;
        ssize_t n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);

        if (n > 0)
                return 1;
        return n < 0 && (errno == EAGAIN || errno == EINTR) ? 0 : -1;
}

/* The waiting broker connections of ac that hung up with nothing sent go
 * (their hangup events may not have been handled yet). */
static void pend_purge(struct agents *a, struct actr *ac)
{
        for (int i = 0; ac->n_pend && i < PENDING_MAX; i++)
                if (ac->pend[i] >= 0 && peek(ac->pend[i]) < 0)
                        pend_close(a, ac, i);
}

static void idle_close(struct actr *ac, int i)
{
        (void)close(ac->idle[i]); /* also leaves epoll */
        ac->idle[i] = -1;
}

static struct actr *ctr_new(const char *cid)
{
        struct actr *ac = calloc(1, sizeof(*ac));

        if (!ac)
                return NULL;
        strcpy(ac->cid, cid);
        ac->lfd_broker = ac->lfd_dial = -1;
        for (int i = 0; i < IDLE_MAX; i++) {
                ac->idle[i] = -1;
                ac->ref_idle[i] = (struct aref){ A_IDLE, ac, i };
        }
        for (int i = 0; i < PENDING_MAX; i++) {
                ac->pend[i] = -1;
                ac->ref_pend[i] = (struct aref){ A_PEND, ac, i };
        }
        ac->ref_broker = (struct aref){ A_BROKER, ac, 0 };
        ac->ref_dial = (struct aref){ A_DIAL, ac, 0 };
        return ac;
}

/* Bind both sockets and watch them; false (nothing left open) on failure,
 * retried at the next scan. */
static bool ctr_bind(struct relay *r, struct actr *ac)
{
        struct agents *a = r->agents;

        if (ac->tcp) {
                ac->lfd_broker = relay_bind_in(a->dir_fd, ac->cid, "agent.sock", 0600);
                if (ac->lfd_broker >= 0 && relay_ep_ctl(r, EPOLL_CTL_ADD, ac->lfd_broker, EPOLLIN,
                                                        (char *)&ac->ref_broker + AREF_BIT) == 0)
                        return true;
                if (ac->lfd_broker >= 0)
                        (void)close(ac->lfd_broker);
                ac->lfd_broker = -1;
                return false;
        }
        ac->lfd_dial = relay_bind_in(a->dir_fd, ac->cid, "dial.sock", 0600);
        ac->lfd_broker = ac->lfd_dial < 0 ? -1
                                          : relay_bind_in(a->dir_fd, ac->cid, "agent.sock", 0600);
        if (ac->lfd_broker >= 0 &&
            relay_ep_ctl(r, EPOLL_CTL_ADD, ac->lfd_dial, EPOLLIN,
                         (char *)&ac->ref_dial + AREF_BIT) == 0 &&
            relay_ep_ctl(r, EPOLL_CTL_ADD, ac->lfd_broker, EPOLLIN,
                         (char *)&ac->ref_broker + AREF_BIT) == 0)
                return true;
        if (ac->lfd_dial >= 0)
                (void)close(ac->lfd_dial);
        if (ac->lfd_broker >= 0)
                (void)close(ac->lfd_broker);
        ac->lfd_dial = ac->lfd_broker = -1;
        return false;
}

/* Serve cid (mst: its .tcp marker's lstat; NULL for a .dial one). */
static void ctr_add(struct relay *r, const char *cid, const struct stat *mst)
{
        struct agents *a = r->agents;
        struct agent_marker m;
        struct actr *ac;
        struct stat st;
        int free_i = -1;

        /* served while both are there (the run directory is made before the
         * marker, docker_agent.c) */
        if (fstatat(a->dir_fd, cid, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
                return;
        for (int i = 0; i < CTRS_MAX; i++) {
                ac = a->ctrs[i];
                if (ac && ac->used && !strcmp(ac->cid, cid)) {
                        if (ac->tcp != !!mst)
                                return; /* both markers: the first one found is served */
                        if (mst && !same_file(&ac->mst, mst)) {
                                /* rewritten: the next connections use it;
                                 * no longer valid: dropped (unseen) */
                                if (marker_read(a, cid, mst, &m) < 0)
                                        return;
                                ac->m = m;
                                ac->mst = *mst;
                                relay_log("agent of %s: marker changed", cid);
                        }
                        ac->seen = true;
                        return;
                }
                if (!a->ctrs[i] && free_i < 0)
                        free_i = i;
        }
        if (free_i < 0) {
                relay_log("too many containers; %.12s not served", cid);
                return;
        }
        if (mst && marker_read(a, cid, mst, &m) < 0)
                return;
        ac = ctr_new(cid);
        if (!ac)
                return;
        if (mst) {
                ac->tcp = true;
                ac->m = m;
                ac->mst = *mst;
        }
        memset(&m, 0, sizeof(m));
        if (!ctr_bind(r, ac)) {
                memset(ac, 0, sizeof(*ac));
                free(ac);
                return; /* retried at the next scan */
        }
        ac->used = ac->seen = true;
        a->ctrs[free_i] = ac;
        if (ac->tcp)
                relay_log("serving agent of %s over TCP", cid);
        else
                relay_log("serving agent of container %.12s", cid);
}

/* Free ctrs[i] when it is gone and no pair names it any more: only from
 * agents_tick, between batches of events (one of the batch may name it). */
static void ctr_release(struct agents *a, int i)
{
        if (a->ctrs[i]->n_conns > 0)
                return;
        free(a->ctrs[i]);
        a->ctrs[i] = NULL;
        a->n_gone--;
}

static void ctr_drop(struct agents *a, struct actr *ac)
{
        if (ac->lfd_dial >= 0)
                (void)close(ac->lfd_dial);
        (void)close(ac->lfd_broker);
        ac->lfd_dial = ac->lfd_broker = -1;
        if (ac->tcp) {
                /* the provider's directory stays: nothing left to connect to */
                int dfd = openat(a->dir_fd, ac->cid, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                struct stat st;

                if (dfd >= 0 && fstatat(dfd, "agent.sock", &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                    S_ISSOCK(st.st_mode))
                        (void)unlinkat(dfd, "agent.sock", 0);
                if (dfd >= 0)
                        (void)close(dfd);
                memset(&ac->m, 0, sizeof(ac->m));
                relay_log("agent of %s gone", ac->cid);
        }
        for (int i = 0; i < IDLE_MAX; i++)
                if (ac->idle[i] >= 0)
                        idle_close(ac, i);
        for (int i = 0; i < PENDING_MAX; i++)
                if (ac->pend[i] >= 0)
                        pend_close(a, ac, i);
        ac->used = false;
        a->n_gone++;
        if (!ac->tcp)
                relay_log("container %.12s gone", ac->cid);
}

void agents_scan(struct relay *r)
{
        struct agents *a = r->agents;
        int fd = openat(a->dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
        struct dirent *e;
        char cid[CID_MAX + 1];

        if (!d) {
                if (fd >= 0)
                        close(fd);
                return;
        }
        for (int i = 0; i < CTRS_MAX; i++)
                if (a->ctrs[i])
                        a->ctrs[i]->seen = false;
        while ((e = readdir(d))) {
                struct stat st;

                if (marker_cid(e->d_name, cid)) {
                        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                            S_ISREG(st.st_mode))
                                ctr_add(r, cid, NULL);
                } else if (marker_ref(e->d_name, cid)) {
                        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0)
                                ctr_add(r, cid, &st);
                }
        }
        closedir(d);
        for (int i = 0; i < CTRS_MAX; i++) {
                struct actr *ac = a->ctrs[i];

                if (ac && ac->used && !ac->seen)
                        ctr_drop(a, ac);
        }
}

/* Splice broker connection bfd with the agent's connection afd. */
static void pair(struct relay *r, struct actr *ac, int bfd, int afd)
{
        struct conn *c = relay_conn_alloc(r);

        if (!c) {
                (void)close(bfd);
                (void)close(afd);
                return;
        }
        c->ac = ac;
        ac->n_conns++;
        c->pair.side[0].fd = bfd;
        c->pair.side[1].fd = afd;
        (void)relay_conn_start(r, c);
}

void agents_conn_closed(struct actr *ac)
{
        if (ac->n_conns > 0)
                ac->n_conns--;
        /* a container gone while paired is freed with its last pair; not
         * here: the relay's main loop may still name it in this batch */
}

/* The used slot (fd >= 0) of n with the smallest key, or -1. */
static int oldest(const int *fd, const long long *key, int n)
{
        int best = -1;

        for (int i = 0; i < n; i++)
                if (fd[i] >= 0 && (best < 0 || key[i] < key[best]))
                        best = i;
        return best;
}

static void accept_broker(struct relay *r, struct actr *ac)
{
        for (;;) {
                int fd = accept4(ac->lfd_broker, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
                int i;

                if (fd < 0)
                        return;
                if (ac->n_conns + ac->n_pend >= CONNS_PER_SANDBOX || r->n_conns >= CONNS_MAX) {
                        (void)close(fd);
                        continue;
                }
                if (ac->tcp) {
                        struct conn *c = relay_conn_alloc(r);

                        if (!c) {
                                (void)close(fd);
                                continue;
                        }
                        c->ac = ac;
                        ac->n_conns++;
                        c->pair.side[0].fd = fd;
                        relay_tcp_start(r, c, &ac->m, ac->cid);
                        continue;
                }
                i = oldest(ac->idle, ac->idle_seq, IDLE_MAX);
                if (i >= 0) {
                        int afd = ac->idle[i];

                        (void)relay_ep_ctl(r, EPOLL_CTL_DEL, afd, 0, NULL);
                        ac->idle[i] = -1;
                        pair(r, ac, fd, afd);
                        continue;
                }
                if (ac->n_pend == PENDING_MAX)
                        pend_purge(r->agents, ac);
                for (i = 0; i < PENDING_MAX && ac->pend[i] >= 0; i++)
                        ;
                if (i == PENDING_MAX) {
                        relay_log("container %.12s: %d connections wait for a dial; one refused",
                                  ac->cid, PENDING_MAX);
                        (void)close(fd);
                        continue;
                }
                ac->pend[i] = fd;
                ac->pend_since[i] = relay_now_ms();
                ac->pend_seq[i] = ++r->agents->seq;
                ac->n_pend++;
                r->agents->n_pend++;
                /* its hangup only (EPOLLIN would fire for the request it
                 * sends); unwatched if this fails, as before: the timeout */
                (void)relay_ep_ctl(r, EPOLL_CTL_ADD, fd, EPOLLRDHUP,
                                   (char *)&ac->ref_pend[i] + AREF_BIT);
        }
}

static void accept_dial(struct relay *r, struct actr *ac)
{
        struct agents *a = r->agents;

        for (;;) {
                int fd = accept4(ac->lfd_dial, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
                int i;

                if (fd < 0)
                        return;
                /* never paired with a broker connection that has gone */
                while ((i = oldest(ac->pend, ac->pend_seq, PENDING_MAX)) >= 0 && peek(ac->pend[i]) < 0)
                        pend_close(a, ac, i);
                if (i >= 0) {
                        int bfd = pend_take(a, ac, i);

                        (void)relay_ep_ctl(r, EPOLL_CTL_DEL, bfd, 0, NULL); /* the pair watches it */
                        pair(r, ac, bfd, fd);
                        continue;
                }
                for (i = 0; i < IDLE_MAX && ac->idle[i] >= 0; i++)
                        ;
                if (i == IDLE_MAX) {
                        relay_log("container %.12s: %d idle dials; one refused", ac->cid, IDLE_MAX);
                        (void)close(fd);
                        continue;
                }
                if (relay_ep_ctl(r, EPOLL_CTL_ADD, fd, EPOLLIN | EPOLLRDHUP,
                                 (char *)&ac->ref_idle[i] + AREF_BIT) < 0) {
                        (void)close(fd);
                        continue;
                }
                ac->idle[i] = fd;
                ac->idle_seq[i] = ++a->seq;
        }
}

bool agents_event(struct relay *r, void *ref, uint32_t ev)
{
        struct aref *ar;
        struct actr *ac;

        (void)ev;
        if (!((uintptr_t)ref & AREF_BIT))
                return false;
        ar = (struct aref *)((char *)ref - AREF_BIT);
        ac = ar->ac;
        if (!ac->used)
                return true; /* dropped in this batch */
        switch (ar->tag) {
        case A_BROKER: accept_broker(r, ac); break;
        case A_DIAL: accept_dial(r, ac); break;
        case A_IDLE:
                /* the agent spoke first or hung up: not a connection to hand
                 * out. Unless the event is stale: earlier in this batch the
                 * slot's connection may have been paired and a new dial put
                 * in its place, which has nothing to read. */
                if (ac->idle[ar->slot] >= 0 && peek(ac->idle[ar->slot]) != 0)
                        idle_close(ac, ar->slot);
                break;
        case A_PEND: {
                /* a waiting broker connection hung up (or the event is stale
                 * and names the slot's next one). Nothing sent: nobody is
                 * left to answer, it goes. A request sent before the hangup
                 * (a half-close) still waits for its dial, unwatched. */
                int fd = ac->pend[ar->slot], has = fd < 0 ? 0 : peek(fd);

                if (has < 0)
                        pend_close(r->agents, ac, ar->slot);
                else if (has > 0)
                        (void)relay_ep_ctl(r, EPOLL_CTL_DEL, fd, 0, NULL);
                break;
        }
        }
        return true;
}

int agents_tick(struct relay *r, long long now)
{
        struct agents *a = r->agents;
        long long next = -1;
        int t = relay_tcp_tick(r, now);

        if (t >= 0)
                next = now + t;
        if (!a->n_pend && !a->n_gone)
                return t;
        for (int i = 0; i < CTRS_MAX; i++) {
                struct actr *ac = a->ctrs[i];

                if (!ac)
                        continue;
                if (!ac->used) {
                        ctr_release(a, i); /* once its last pair has closed */
                        continue;
                }
                for (int j = 0; ac->n_pend && j < PENDING_MAX; j++) {
                        long long due;

                        if (ac->pend[j] < 0)
                                continue;
                        due = ac->pend_since[j] + PENDING_MS;
                        if (due <= now) {
                                relay_log("container %.12s: no dial within %d ms; a waiting "
                                          "connection closed",
                                          ac->cid, PENDING_MS);
                                pend_close(a, ac, j);
                        } else if (next < 0 || due < next) {
                                next = due;
                        }
                }
        }
        return next < 0 ? -1 : (int)(next - now);
}
