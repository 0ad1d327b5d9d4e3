/* docker_agent: see docker_agent.h. */
#include "providers/docker/docker_agent.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "providers/agent/agent_client.h"
#include "providers/docker/docker_mountd.h"
#include "providers/provider.h"
#include "core/timeutil.h"

#define RUN_TREE_DEPTH_MAX 64 /* what cleanup descends into a planted tree */

/* A container id as Docker makes it: 64 hex digits (12 and more accepted,
 * for short ids); never a path component of anything else. */
static bool ref_ok(const char *ref)
{
        size_t n = strspn(ref, "0123456789abcdef");

        return n >= 12 && n <= 64 && ref[n] == '\0';
}

int docker_agent_source(const struct docker_agent *a, const char *sandbox_id, char *buf,
                        size_t size)
{
        int n = snprintf(buf, size, "%s/sb-%s", a->dir, sandbox_id);

        return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

int docker_agent_run_dir(const struct docker_agent *a, const char *ref, char *buf, size_t size)
{
        struct stat st;
        int n;

        if (!ref_ok(ref))
                return -EINVAL;
        n = snprintf(buf, size, "%s/%s", a->dir, ref);
        if (n < 0 || (size_t)n >= size)
                return -ENAMETOOLONG;
        if (lstat(buf, &st) < 0 || !S_ISDIR(st.st_mode))
                return -ENOENT;
        return 0;
}

/* mkdir -p of AGENT_DIR itself (0700 for what it makes). */
static int mkdir_parents(const char *path)
{
        char tmp[sizeof(((struct docker_agent *)0)->dir)];

        if (snprintf(tmp, sizeof(tmp), "%s", path) >= (int)sizeof(tmp))
                return -ENAMETOOLONG;
        for (char *s = tmp + 1;; s++) {
                if (*s != '/' && *s != '\0')
                        continue;
                char c = *s;
                *s = '\0';
                if (mkdir(tmp, 0700) < 0 && errno != EEXIST)
                        return -errno;
                *s = c;
                if (!c)
                        return 0;
        }
}

/* AGENT_DIR/<ref>.dial into buf. */
static int marker_path(const struct docker_agent *a, const char *ref, char *buf, size_t size)
{
        int n = snprintf(buf, size, "%s/%s.dial", a->dir, ref);

        return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

bool docker_agent_dials(const struct docker_agent *a, const char *ref)
{
        char path[256];
        struct stat st;

        return ref_ok(ref) && marker_path(a, ref, path, sizeof(path)) == 0 &&
               lstat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* The helper's tmpfs on the new run directory run of ref; a failure
 * removes the directory (docker_agent.h). */
static int run_bound(const struct docker_agent *a, const char *ref, const char *run, char *ret_err)
{
        char line[96];
        int r;

        snprintf(line, sizeof(line), "run %s", ref);
        r = docker_mountd_call(a->mountd, a->mountd_timeout_ms, line, NULL, 0, ret_err);
        if (r < 0)
                (void)rmdir(run);
        return r;
}

int docker_agent_prepare(const struct docker_agent *a, const char *sandbox_id, const char *ref,
                         bool dials, char *ret_err)
{
        char run[256], src[256], mark[256];
        int r;

        if (!ref_ok(ref)) {
                provider_errf(ret_err, "agent: not a container id: %.80s", ref);
                return -EINVAL;
        }
        r = mkdir_parents(a->dir);
        if (r == 0 && snprintf(run, sizeof(run), "%s/%s", a->dir, ref) >= (int)sizeof(run))
                r = -ENAMETOOLONG;
        if (r == 0)
                r = docker_agent_source(a, sandbox_id, src, sizeof(src));
        /* The link first, the run directory last: docker_start prepares
         * again whenever the run directory is missing, so a process killed
         * between the two steps leaves a state the next start repairs. (The
         * other order could leave a run directory without its link; Docker
         * would then make a plain directory for the missing source and the
         * agent's socket would never appear where the broker looks.) */
        if (r == 0) {
                /* a stale link (or a directory Docker made for a missing
                 * source) under the same name goes first */
                if (unlink(src) < 0 && errno == EISDIR)
                        (void)rmdir(src);
                if (symlink(ref, src) < 0)
                        r = -errno;
        }
        if (r == 0 && mkdir(run, 0700) < 0 && errno != EEXIST)
                r = -errno;
        if (r < 0) {
                provider_errf(ret_err, "agent: run directory in %s: %s", a->dir, strerror(-r));
                return r;
        }
        /* the etc files with the container's hostname (made before the
         * create with none; gone with /run after a reboot) */
        if (a->etc && (r = docker_agent_etc(a, sandbox_id, ref, mark, sizeof(mark), ret_err)) < 0) {
                (void)rmdir(run);
                return r;
        }
        /* the bound before anything can write there: the container has
         * not started (a process killed between the mkdir and this leaves
         * a plain directory; the helper mounts on it when it is empty, as
         * it is until the sandbox starts) */
        if (!dials && a->mountd[0] && (r = run_bound(a, ref, run, ret_err)) < 0)
                return r;
        /* the marker last: the relay serves a run directory that exists */
        if (dials && (r = marker_path(a, ref, mark, sizeof(mark))) == 0) {
                int fd = open(mark, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);

                if (fd < 0)
                        r = -errno;
                else
                        (void)close(fd);
        }
        if (r < 0)
                provider_errf(ret_err, "agent: run directory in %s: %s", a->dir, strerror(-r));
        return r;
}

static void remove_tree(int dfd, int depth);

static bool sid_ok(const char *sid)
{
        return strlen(sid) == 32 && strspn(sid, "0123456789abcdef") == 32;
}

#define RESOLV_MAX 4096

/* dir/name with data, replaced whole (a temp file renamed over it). */
static int put_file(int dir, const char *name, const char *data, size_t len)
{
        char tmp[64];
        int fd, r = 0;

        snprintf(tmp, sizeof(tmp), ".%s.new", name);
        (void)unlinkat(dir, tmp, 0);
        fd = openat(dir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0)
                return -errno;
        if (len && write(fd, data, len) != (ssize_t)len)
                r = -EIO;
        /* 0644 whatever the umask: dockerd reads it, the sandbox sees it read-only */
        if (r == 0 && fchmod(fd, 0644) < 0)
                r = -errno;
        if (close(fd) < 0 && r == 0)
                r = -errno;
        if (r == 0 && renameat(dir, tmp, dir, name) < 0)
                r = -errno;
        if (r < 0)
                (void)unlinkat(dir, tmp, 0);
        return r;
}

int docker_agent_etc(const struct docker_agent *a, const char *sandbox_id, const char *ref,
                     char *buf, size_t size, char *ret_err)
{
        /* what dockerd writes for a container of network none */
        static const char hosts[] = "127.0.0.1\tlocalhost\n"
                                    "::1\tlocalhost ip6-localhost ip6-loopback\n"
                                    "fe00::0\tip6-localnet\n"
                                    "ff00::0\tip6-mcastprefix\n"
                                    "ff02::1\tip6-allnodes\n"
                                    "ff02::2\tip6-allrouters\n";
        char resolv[RESOLV_MAX], host[16];
        ssize_t n = 0;
        int dir = -1, fd, r = 0;

        if (!sid_ok(sandbox_id) || (ref && !ref_ok(ref))) {
                provider_errf(ret_err, "etc: not a sandbox or container id");
                return -EINVAL;
        }
        if (snprintf(buf, size, "%s/etc-%s", a->dir, sandbox_id) >= (int)size)
                r = -ENAMETOOLONG;
        if (r == 0)
                r = mkdir_parents(a->dir);
        if (r == 0 && mkdir(buf, 0755) < 0 && errno != EEXIST)
                r = -errno;
        if (r == 0 && (dir = open(buf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
                r = -errno;
        /* the host's resolver configuration, as dockerd copies it */
        fd = open("/etc/resolv.conf", O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
                n = read(fd, resolv, sizeof(resolv));
                close(fd);
                if (n < 0)
                        n = 0;
        }
        snprintf(host, sizeof(host), "%.12s\n", ref ? ref : "");
        if (r == 0)
                r = put_file(dir, "hosts", hosts, sizeof(hosts) - 1);
        if (r == 0)
                r = put_file(dir, "resolv.conf", resolv, (size_t)n);
        if (r == 0)
                r = put_file(dir, "hostname", host, ref ? strlen(host) : 0);
        if (dir >= 0)
                close(dir);
        if (r < 0)
                provider_errf(ret_err, "etc: %s: %s", buf, strerror(-r));
        return r;
}

void docker_agent_etc_cleanup(const struct docker_agent *a, const char *sandbox_id)
{
        char name[48];
        int top, dir;

        if (!sid_ok(sandbox_id))
                return;
        top = open(a->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (top < 0)
                return;
        snprintf(name, sizeof(name), "etc-%s", sandbox_id);
        dir = openat(top, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dir >= 0) {
                remove_tree(dir, 0);
                (void)unlinkat(top, name, AT_REMOVEDIR);
        }
        close(top);
}

void docker_agent_entries(const struct docker_agent *a,
                          void (*fn)(void *ud, const char *ref, const char *sid), void *ud)
{
        DIR *d = opendir(a->dir);
        struct dirent *e;

        if (!d)
                return;
        while ((e = readdir(d))) {
                if (e->d_type != DT_DIR && e->d_type != DT_UNKNOWN)
                        continue;
                if (ref_ok(e->d_name))
                        fn(ud, e->d_name, NULL);
                else if (!strncmp(e->d_name, "etc-", 4) && sid_ok(e->d_name + 4))
                        fn(ud, NULL, e->d_name + 4);
        }
        closedir(d);
}

#define EGRESS_CA_MAX (64 * 1024)

/* A copy of the CA certificate file ca (a PEM certificate, never a key:
 * anything holding "PRIVATE KEY" is refused) as dir/ca.pem. */
static int egress_ca_copy(const char *ca, const char *dir)
{
        char *data = malloc(EGRESS_CA_MAX + 1);
        ssize_t n = 0, got = 0;
        int fd, dfd, r = 0;

        if (!data)
                return -ENOMEM;
        fd = open(ca, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0) {
                r = -errno;
                goto out;
        }
        while (n <= EGRESS_CA_MAX && (got = read(fd, data + n, EGRESS_CA_MAX + 1 - (size_t)n)) > 0)
                n += got;
        if (got < 0)
                r = -errno;
        close(fd);
        if (r < 0)
                goto out;
        data[n > EGRESS_CA_MAX ? EGRESS_CA_MAX : n] = '\0';
        r = -EINVAL;
        if (n > EGRESS_CA_MAX || !strstr(data, "-----BEGIN CERTIFICATE-----") ||
            strstr(data, "PRIVATE KEY") || strlen(data) != (size_t)n)
                goto out;
        dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dfd < 0) {
                r = -errno;
                goto out;
        }
        r = put_file(dfd, "ca.pem", data, (size_t)n);
        close(dfd);
out:
        free(data);
        return r;
}

int docker_agent_egress_prepare(const struct docker_agent *a, const char *sandbox_id, char *buf,
                                size_t size, char *ret_err)
{
        int r = 0;

        if (!sid_ok(sandbox_id)) {
                provider_errf(ret_err, "egress: not a sandbox id: %.80s", sandbox_id);
                return -EINVAL;
        }
        if (snprintf(buf, size, "%s/%s", a->egress_dir, sandbox_id) >= (int)size)
                r = -ENAMETOOLONG;
        if (r == 0)
                r = mkdir_parents(a->egress_dir);
        /* 0755: the relay (another user, or root) binds in it; the sandbox
         * only sees it read-only */
        if (r == 0 && mkdir(buf, 0755) < 0 && errno != EEXIST)
                r = -errno;
        if (r == 0)
                (void)chmod(a->egress_dir, 0755);
        if (r < 0) {
                provider_errf(ret_err, "egress: directory in %s: %s", a->egress_dir, strerror(-r));
                return r;
        }
        if (a->egress_ca[0] && (r = egress_ca_copy(a->egress_ca, buf)) < 0)
                provider_errf(ret_err, "egress: CA certificate %s: %s", a->egress_ca,
                              r == -EINVAL ? "not a PEM certificate of at most 64 KiB"
                                           : strerror(-r));
        return r;
}

/* The egress directory of a removed sandbox: its socket (or whatever is
 * there; the sandbox cannot write it, but be safe) and itself, never
 * following a link. */
static void egress_cleanup(const struct docker_agent *a, const char *sid)
{
        int top, dir;

        if (!a->egress_dir[0] || !sid_ok(sid))
                return;
        top = open(a->egress_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (top < 0)
                return;
        dir = openat(top, sid, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dir >= 0) {
                remove_tree(dir, 0);
                (void)unlinkat(top, sid, AT_REMOVEDIR);
        }
        close(top);
}

/* rm -rf of what dfd holds, at most depth levels down; links are removed,
 * never followed (unlinkat and openat with O_NOFOLLOW). */
static void remove_tree(int dfd, int depth)
{
        DIR *d = fdopendir(dfd);
        struct dirent *e;

        if (!d) {
                close(dfd);
                return;
        }
        while ((e = readdir(d))) {
                if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                        continue;
                if (unlinkat(dirfd(d), e->d_name, 0) == 0 || errno != EISDIR)
                        continue;
                if (depth > 0) {
                        int sub = openat(dirfd(d), e->d_name,
                                         O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (sub >= 0)
                                remove_tree(sub, depth - 1);
                }
                (void)unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR);
        }
        closedir(d);
}

void docker_agent_cleanup(const struct docker_agent *a, const char *ref)
{
        char target[80];
        DIR *d;
        struct dirent *e;
        int top, run;

        if (!ref_ok(ref))
                return;
        top = open(a->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (top < 0)
                return;
        if (snprintf(target, sizeof(target), "%s.dial", ref) < (int)sizeof(target))
                (void)unlinkat(top, target, 0); /* the relay stops serving it first */
        /* the helper's tmpfs first (lazily: a connection still open keeps
         * it until it ends); a helper that does not answer leaves it
         * mounted, emptied below, for the reconciler (docker_agent_orphans) */
        if (a->mountd[0] && snprintf(target, sizeof(target), "unrun %s", ref) < (int)sizeof(target))
                (void)docker_mountd_call(a->mountd, a->mountd_timeout_ms, target, NULL, 0, NULL);
        run = openat(top, ref, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (run >= 0) {
                remove_tree(run, RUN_TREE_DEPTH_MAX);
                (void)unlinkat(top, ref, AT_REMOVEDIR);
        }
        d = fdopendir(top);
        if (!d) {
                close(top);
                return;
        }
        while ((e = readdir(d))) {
                ssize_t n;

                if (strncmp(e->d_name, "sb-", 3))
                        continue;
                n = readlinkat(dirfd(d), e->d_name, target, sizeof(target) - 1);
                if (n <= 0)
                        continue;
                target[n] = '\0';
                if (!strcmp(target, ref)) {
                        (void)unlinkat(dirfd(d), e->d_name, 0);
                        egress_cleanup(a, e->d_name + 3);
                        docker_agent_etc_cleanup(a, e->d_name + 3);
                }
        }
        closedir(d);
}

int docker_agent_wait_ready(const char *dir, int timeout_ms, int (*alive)(void *ud), void *ud,
                            char *ret_err)
{
        int64_t start = timeutil_mono_ms(), next_check = start + 100;
        int check_every = 100; /* ms; grows to 1 s: a storm of starts polls Docker less */
        struct agent_health h;
        char err[PROVIDER_ERR_MAX];
        int r, delay_us = 500;

        for (;;) {
                r = agent_health(dir, &h, 1000, err);
                if (r == 0)
                        return 0;
                if (timeutil_mono_ms() - start >= timeout_ms) {
                        provider_errf(ret_err, "sandbox agent did not answer within %d ms: %s",
                                      timeout_ms, err);
                        return -ETIMEDOUT;
                }
                if (timeutil_mono_ms() >= next_check) {
                        if (check_every < 1000)
                                check_every *= 2;
                        next_check = timeutil_mono_ms() + check_every;
                        r = alive(ud);
                        if (r < 0) {
                                provider_errf(ret_err, "sandbox ended before its agent answered");
                                return r;
                        }
                }
                usleep(delay_us);
                if (delay_us < 20000)
                        delay_us *= 2;
        }
}
