/* sandbox-mountd: see mountd.h.
 *
 *   sandbox-mountd --socket PATH --agent-dir DIR [--disk-dir DIR]
 *                  [--docker-root DIR] [--allocate full|sparse] [--group GROUP]
 *                  [--mkfs PATH]
 *
 * --socket: where it listens; the file is made 0660 and given group GROUP
 * (--group, a name or a gid: the broker's account's group) or 0600 without
 * one (a broker running as root). Who may write to it may mount tmpfs under AGENT_DIR and
 * disks on Docker's layers, nothing else: every name in a request is a hex
 * id, every path is made here from the directories given at start.
 * --agent-dir: the broker's AGENT_DIR. --disk-dir: where the disk images
 * live (made 0700 if missing); without it disk requests are refused.
 * --docker-root: dockerd's data root (docker info: DockerRootDir), default
 * /var/lib/docker. --allocate: full (default) reserves each image's whole
 * size on the host at once (fallocate), so that a host short of space
 * refuses a new sandbox instead of failing a running one's writes; sparse
 * reserves nothing (the sum of the disks may then exceed the free space:
 * for test machines). --mkfs: mkfs.ext4 (e2fsprogs), default
 * /sbin/mkfs.ext4.
 *
 * SIGTERM or SIGINT: it stops serving and exits 0; what it mounted stays
 * (the sandboxes outlive it). */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "mountd.h"

#define LIST_MAX (1024 * 1024) /* the answer to disks */

static volatile sig_atomic_t stopping;

static void on_signal(int sig)
{
        (void)sig;
        stopping = 1;
}

void mountd_log(const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        fputs("sandbox-mountd: ", stderr);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        va_end(ap);
}

static long long now_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void usage(void)
{
        fprintf(stderr,
                "usage: sandbox-mountd --socket PATH --agent-dir DIR [--disk-dir DIR] "
                "[--docker-root DIR] [--allocate full|sparse] [--group GROUP] [--mkfs PATH]\n");
        exit(2);
}

/* mkdir -p, 0700 for what it makes. */
static int mkdir_p(const char *path)
{
        char tmp[512];

        if (snprintf(tmp, sizeof(tmp), "%s", path) >= (int)sizeof(tmp))
                return -ENAMETOOLONG;
        for (char *s = tmp + 1;; s++) {
                if (*s != '/' && *s != '\0')
                        continue;
                char ch = *s;
                *s = '\0';
                if (mkdir(tmp, 0700) < 0 && errno != EEXIST)
                        return -errno;
                *s = ch;
                if (!ch)
                        return 0;
        }
}

static int listen_on(const char *path, long gid)
{
        struct sockaddr_un a = { .sun_family = AF_UNIX };
        struct stat st;
        int fd;

        if (strlen(path) >= sizeof(a.sun_path)) {
                mountd_log("--socket %s: too long", path);
                return -1;
        }
        strcpy(a.sun_path, path);
        /* a socket a helper before us left; anything else stays */
        if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode))
                (void)unlink(path);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
            chmod(path, gid >= 0 ? 0660 : 0600) < 0 ||
            (gid >= 0 && chown(path, 0, (gid_t)gid) < 0) || listen(fd, 64) < 0) {
                mountd_log("--socket %s: %s", path, strerror(errno));
                if (fd >= 0)
                        close(fd);
                return -1;
        }
        return fd;
}

/* Read one line (without its '\n') from c before deadline; its length,
 * or -1. */
static ssize_t read_line(int c, char *buf, size_t size, long long deadline)
{
        size_t got = 0;

        while (got < size) {
                struct pollfd p = { .fd = c, .events = POLLIN };
                long long left = deadline - now_ms();
                ssize_t n;
                char *nl;

                if (left <= 0 || poll(&p, 1, (int)left) <= 0)
                        return -1;
                n = read(c, buf + got, size - got);
                if (n <= 0)
                        return -1;
                nl = memchr(buf + got, '\n', (size_t)n);
                got += (size_t)n;
                if (nl)
                        return nl - buf;
        }
        return -1; /* longer than a request */
}

static void write_all(int c, const char *s, size_t len, long long deadline)
{
        while (len > 0) {
                struct pollfd p = { .fd = c, .events = POLLOUT };
                long long left = deadline - now_ms();
                ssize_t n;

                if (left <= 0 || poll(&p, 1, (int)left) <= 0)
                        return;
                n = send(c, s, len, MSG_NOSIGNAL);
                if (n <= 0)
                        return;
                s += n;
                len -= (size_t)n;
        }
}

static void serve(const struct mountd_conf *conf, int c)
{
        long long deadline = now_ms() + MOUNTD_IO_MS;
        char line[MOUNTD_LINE_MAX], err[400] = "", *list = NULL, head[512];
        struct mountd_req q;
        struct ucred cred;
        socklen_t cl = sizeof(cred);
        ssize_t n;
        int r;

        n = read_line(c, line, sizeof(line), deadline);
        if (n < 0)
                return;
        if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cred, &cl) < 0) {
                r = -errno;
                snprintf(err, sizeof(err), "no peer credentials");
                goto answer;
        }
        r = mountd_parse(line, (size_t)n, &q, err, sizeof(err));
        if (r < 0) {
                mountd_log("a request refused: %s", err);
                goto answer;
        }
        switch (q.verb) {
        case MOUNTD_RUN: r = rundir_mount(conf, q.id, cred.uid, cred.gid, err, sizeof(err)); break;
        case MOUNTD_UNRUN: r = rundir_unmount(conf, q.id, err, sizeof(err)); break;
        case MOUNTD_DISK_MAKE:
        case MOUNTD_DISK_ATTACH:
                r = disk_attach(conf, q.id, q.layer, q.mib, q.verb == MOUNTD_DISK_MAKE, err,
                                sizeof(err));
                break;
        case MOUNTD_UNDISK: r = disk_remove(conf, q.id, err, sizeof(err)); break;
        case MOUNTD_DISKS:
                list = malloc(LIST_MAX);
                r = list ? disk_list(conf, list, LIST_MAX, err, sizeof(err)) : -ENOMEM;
                break;
        case MOUNTD_PING: r = 0; break;
        }
        /* one line per change or refusal; the sandbox's story is in the broker's log */
        if ((q.verb != MOUNTD_DISKS && q.verb != MOUNTD_PING) || r < 0)
                mountd_log("%.*s: %s%s", (int)n, line, r < 0 ? "refused: " : "done",
                           r < 0 ? err : "");
answer:
        if (r < 0) {
                /* the reason on one line */
                for (char *s = err; *s; s++)
                        if (*s == '\n' || *s == '\r')
                                *s = ' ';
                n = snprintf(head, sizeof(head), "err %d %s\n", -r, err);
                write_all(c, head, (size_t)n < sizeof(head) ? (size_t)n : sizeof(head) - 1, deadline);
        } else if (list) {
                write_all(c, "ok", 2, deadline);
                if (list[0]) {
                        write_all(c, " ", 1, deadline);
                        write_all(c, list, strlen(list), deadline);
                }
                write_all(c, "\n", 1, deadline);
        } else {
                write_all(c, "ok\n", 3, deadline);
        }
        free(list);
}

int main(int argc, char **argv)
{
        struct mountd_conf conf = { .docker_root = "/var/lib/docker", .mkfs = "/sbin/mkfs.ext4" };
        const char *sock = NULL;
        struct group *g;
        long gid = -1;
        int lfd;

        if (argc % 2 == 0)
                usage(); /* every option takes a value */
        for (int i = 1; i < argc; i += 2) {
                const char *a = argv[i], *v = argv[i + 1];
                bool path = v[0] == '/';

                if (!strcmp(a, "--socket") && path)
                        sock = v;
                else if (!strcmp(a, "--agent-dir") && path)
                        conf.agent_dir = v;
                else if (!strcmp(a, "--disk-dir") && path)
                        conf.disk_dir = v;
                else if (!strcmp(a, "--docker-root") && path)
                        conf.docker_root = v;
                else if (!strcmp(a, "--mkfs") && path)
                        conf.mkfs = v;
                else if (!strcmp(a, "--allocate") && (!strcmp(v, "full") || !strcmp(v, "sparse")))
                        conf.sparse = !strcmp(v, "sparse");
                else if (!strcmp(a, "--group") && v[0] && strspn(v, "0123456789") == strlen(v) &&
                         strlen(v) < 10)
                        gid = atol(v);
                else if (!strcmp(a, "--group") && (g = getgrnam(v)))
                        gid = (long)g->gr_gid;
                else
                        usage();
        }
        if (!sock || !conf.agent_dir)
                usage();
        int r = conf.disk_dir ? mkdir_p(conf.disk_dir) : 0;
        if (r < 0) {
                mountd_log("--disk-dir %s: %s", conf.disk_dir, strerror(-r));
                return 1;
        }
        if (conf.disk_dir)
                (void)chmod(conf.disk_dir, 0700);
        struct sigaction sa = { .sa_handler = on_signal };
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGINT, &sa, NULL);
        signal(SIGPIPE, SIG_IGN);
        lfd = listen_on(sock, gid);
        if (lfd < 0)
                return 1;
        if (conf.disk_dir)
                mountd_log(
                        "serving %s: run directories in %s, disks in %s (%s) on the layers of %s",
                        sock, conf.agent_dir, conf.disk_dir,
                        conf.sparse ? "sparse" : "allocated in full", conf.docker_root);
        else
                mountd_log("serving %s: run directories in %s, no disks (no --disk-dir)", sock,
                           conf.agent_dir);
        while (!stopping) {
                struct pollfd p = { .fd = lfd, .events = POLLIN };
                int c;

                if (poll(&p, 1, 1000) <= 0)
                        continue;
                c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
                if (c < 0)
                        continue;
                serve(&conf, c);
                close(c);
        }
        close(lfd);
        mountd_log("stopped");
        return 0;
}
