/* kubernetes_agent: the broker's side of the sandbox-agent in a pod
 * (docs/KUBERNETES.md, "The agent"). The pod's agent listens on
 * POD_IP:KUBERNETES_AGENT_PORT and answers only a caller that proves the
 * pod's key; the broker's agent client finds the address and key in the
 * marker AGENT_DIR/<ref>.tcp ("ADDR PORT KEYHEX\n") beside the run
 * directory AGENT_DIR/<ref>/, both written here once the pod has an IP
 * and removed with the pod. Commands and files go through the agent
 * client with that directory, as docker_agent_route.c does; an agent that
 * cannot be reached is this sandbox's failure (-EIO). */
#include "providers/kubernetes/kubernetes_internal.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "providers/agent/agent_client.h"

int k8s_agent_key(char *buf, size_t size)
{
        unsigned char raw[K8S_AGENT_KEY_HEX / 2];
        size_t got = 0;

        if (size <= K8S_AGENT_KEY_HEX)
                return -ENAMETOOLONG;
        while (got < sizeof(raw)) {
                ssize_t n = getrandom(raw + got, sizeof(raw) - got, 0);

                if (n < 0 && errno != EINTR)
                        return -errno;
                if (n > 0)
                        got += (size_t)n;
        }
        for (size_t i = 0; i < sizeof(raw); i++)
                snprintf(buf + 2 * i, 3, "%02x", raw[i]);
        explicit_bzero(raw, sizeof(raw));
        return 0;
}

/* AGENT_DIR itself (0755: the run directories below are 0700). */
static int agent_dir_make(const char *dir)
{
        char tmp[256];
        size_t n = strlen(dir);

        if (n == 0 || n >= sizeof(tmp))
                return -ENAMETOOLONG;
        memcpy(tmp, dir, n + 1);
        for (char *s = tmp + 1; *s; s++) {
                if (*s != '/')
                        continue;
                *s = '\0';
                if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
                        return -errno;
                *s = '/';
        }
        if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
                return -errno;
        return 0;
}

int k8s_agent_marker_write(struct k8s *k, const struct k8s_pod *pod, bool only_missing, char *ret_err)
{
        char path[320], tmp[340], line[K8S_IP_MAX + K8S_AGENT_KEY_HEX + 16];
        struct stat st;
        int fd, r, len;

        unsigned char addr[sizeof(struct in6_addr)];

        /* the IP is the kubelet's word: an address, nothing else goes into the line */
        if (!k8s_ref_valid(pod->name) ||
            (inet_pton(AF_INET, pod->ip, addr) != 1 && inet_pton(AF_INET6, pod->ip, addr) != 1) ||
            strlen(pod->agent_key) != K8S_AGENT_KEY_HEX) {
                provider_errf(ret_err, "kubernetes: pod %.64s: no IP or no agent key for its marker",
                              pod->name);
                return -EPROTO;
        }
        if ((size_t)snprintf(path, sizeof(path), "%s/%s.tcp", k->agent_dir, pod->name) >= sizeof(path))
                return -ENAMETOOLONG;
        if (only_missing && lstat(path, &st) == 0)
                return 0;
        if ((r = agent_dir_make(k->agent_dir)) < 0)
                goto fail;
        /* the run directory: a real directory of ours, never a link */
        snprintf(tmp, sizeof(tmp), "%s/%s", k->agent_dir, pod->name);
        if (mkdir(tmp, 0700) < 0 && errno != EEXIST) {
                r = -errno;
                goto fail;
        }
        if (lstat(tmp, &st) < 0 || !S_ISDIR(st.st_mode)) {
                r = -ENOTDIR;
                goto fail;
        }
        snprintf(tmp, sizeof(tmp), "%s/.%s.tcp.%d", k->agent_dir, pod->name, (int)getpid());
        (void)unlink(tmp);
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0) {
                r = -errno;
                goto fail;
        }
        len = snprintf(line, sizeof(line), "%s %d %s\n", pod->ip, k->agent_port, pod->agent_key);
        r = write(fd, line, (size_t)len) == len ? 0 : -EIO;
        explicit_bzero(line, sizeof(line));
        if (close(fd) < 0 && r == 0)
                r = -errno;
        if (r == 0 && rename(tmp, path) < 0)
                r = -errno;
        if (r < 0)
                (void)unlink(tmp);
        if (r == 0)
                return 0;
fail:
        provider_errf(ret_err, "kubernetes: the agent marker of pod %.64s in %.120s: %s", pod->name,
                      k->agent_dir, strerror(-r));
        return r;
}

/* The marker first (the relay stops serving the pod), then the run
 * directory with what is in it: the relay's agent.sock, which the relay
 * unlinks too but maybe not before this rmdir. Entries are unlinked, never
 * followed; a directory inside (none of ours) keeps the run directory. */
void k8s_agent_marker_remove(struct k8s *k, const char *ref)
{
        char path[320];
        struct dirent *e;
        DIR *d;
        int fd;

        if (!k8s_ref_valid(ref))
                return;
        snprintf(path, sizeof(path), "%s/%s.tcp", k->agent_dir, ref);
        (void)unlink(path);
        snprintf(path, sizeof(path), "%s/%s", k->agent_dir, ref);
        fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd >= 0 && (d = fdopendir(fd))) {
                while ((e = readdir(d)))
                        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
                                (void)unlinkat(dirfd(d), e->d_name, 0);
                closedir(d);
        } else if (fd >= 0) {
                close(fd);
        }
        (void)rmdir(path);
}

static bool relay_serves(const char *dir)
{
        char sock[300];
        struct stat st;

        snprintf(sock, sizeof(sock), "%s/" AGENT_SOCKET_NAME, dir);
        return lstat(sock, &st) == 0 && S_ISSOCK(st.st_mode);
}

/* The relay's agent.sock of ref, when this node has not got it yet: a pod
 * made by another broker node (several supervisors and handler sets against
 * one cluster), whose marker this node's supervisor writes from the watch,
 * but maybe not yet, and never while that supervisor is down. The marker is
 * then written from the pod as the API server holds it (its IP, the key of
 * its spec: what the watch would write), and the relay, which follows
 * AGENT_DIR by inotify, given RELAY_WAIT_MS to serve it. Nothing is written
 * for a pod not found, not Running with an IP, or not of this broker's key
 * prefix: the call that follows fails as it would have ("sandbox agent
 * unreachable"). */
#define RELAY_WAIT_MS 2000
#define RELAY_STEP_MS 5

static void agent_reach(struct k8s *k, const char *ref, const char *dir)
{
        char path[320], ignored[PROVIDER_ERR_MAX];
        struct k8s_pod pod;
        struct stat st;
        int r;

        if (relay_serves(dir))
                return;
        snprintf(path, sizeof(path), "%s/%s.tcp", k->agent_dir, ref);
        if (lstat(path, &st) < 0) {
                r = k8s_pod_get(k, ref, &pod, "agent", ignored);
                if (r == 0 && (!pod.managed || !pod.agent || strcmp(pod.prefix, k->prefix) != 0 ||
                               k8s_pod_state(&pod) != SANDBOX_RUN_RUNNING || !pod.ip[0]))
                        r = -ENOENT;
                if (r == 0)
                        r = k8s_agent_marker_write(k, &pod, true, ignored);
                explicit_bzero(&pod, sizeof(pod)); /* it held the key */
                if (r < 0)
                        return;
        }
        for (int waited = 0; waited < RELAY_WAIT_MS && !relay_serves(dir); waited += RELAY_STEP_MS)
                (void)usleep(RELAY_STEP_MS * 1000);
}

/* AGENT_DIR/<ref> of a sandbox whose commands go through its agent, its
 * marker written first when this node has none (agent_reach). */
static int run_dir(struct k8s *k, const char *ref, char *dir, size_t size, char *ret_err)
{
        if (!k->agent) {
                provider_errf(ret_err, "kubernetes: no sandbox agent in pods (KUBERNETES_AGENT=0)");
                return -EOPNOTSUPP;
        }
        if (!k8s_ref_valid(ref)) {
                provider_errf(ret_err, "kubernetes: not a pod name of ours");
                return -EOPNOTSUPP;
        }
        if ((size_t)snprintf(dir, size, "%s/%s", k->agent_dir, ref) >= size)
                return -ENAMETOOLONG;
        agent_reach(k, ref, dir);
        return 0;
}

/* As docker_agent_route.c: an unreachable agent is the sandbox's failure. */
static int agent_errno(int r)
{
        return r == -ECONNREFUSED || r == -ENOENT ? -EIO : r;
}

static int agent_file_errno(int r, const char *err)
{
        static const char unreachable[] = "sandbox agent unreachable";

        if (r == -ECONNREFUSED)
                return -EIO;
        if (r == -ENOENT && strncmp(err, unreachable, sizeof(unreachable) - 1) == 0)
                return -EIO;
        return r;
}

int k8s_exec(struct provider *p, const char *ref, const struct exec_spec *spec,
             struct exec_result *ret, char *ret_err)
{
        char dir[256];
        int r = run_dir(k8s_impl(p), ref, dir, sizeof(dir), ret_err);

        if (r < 0) {
                memset(ret, 0, sizeof(*ret));
                ret->exit_code = -1;
                return r;
        }
        return agent_errno(agent_exec(dir, spec, ret, ret_err));
}

int k8s_exec_stream(struct provider *p, const char *ref, const struct exec_spec *spec,
                    const struct exec_stream_cb *cb, struct exec_result *ret, char *ret_err)
{
        char dir[256];
        int r = run_dir(k8s_impl(p), ref, dir, sizeof(dir), ret_err);

        if (r < 0) {
                memset(ret, 0, sizeof(*ret));
                ret->exit_code = -1;
                return r;
        }
        return agent_errno(agent_exec_stream(dir, spec, cb, ret, ret_err));
}

int k8s_read_file(struct provider *p, const char *ref, const char *path, int64_t offset,
                  int64_t len, const struct file_read_cb *cb, int timeout_ms, char *ret_err)
{
        char dir[256], err[PROVIDER_ERR_MAX] = "";
        int r = run_dir(k8s_impl(p), ref, dir, sizeof(dir), ret_err);

        if (r < 0)
                return r;
        r = agent_read_file_fd(dir, path, offset, len, cb, timeout_ms, err);
        if (r < 0)
                provider_errf(ret_err, "%s", err);
        return agent_file_errno(r, err);
}

int k8s_write_file(struct provider *p, const char *ref, const char *path, const void *data,
                   size_t len, int mode, int64_t uid, int64_t gid, bool append, int timeout_ms,
                   char *ret_err)
{
        char dir[256], err[PROVIDER_ERR_MAX] = "";
        int r = run_dir(k8s_impl(p), ref, dir, sizeof(dir), ret_err);

        if (r < 0)
                return r;
        r = agent_write_file(dir, path, data, len, mode, uid, gid, append, timeout_ms, err);
        if (r < 0)
                provider_errf(ret_err, "%s", err);
        return agent_file_errno(r, err);
}

/* The run directory is AGENT_DIR/<pod name>. */
int k8s_agent_dir_name(struct provider *p, const char *ref, char *buf, size_t size, char *ret_err)
{
        char dir[256];
        int r = run_dir(k8s_impl(p), ref, dir, sizeof(dir), ret_err);

        if (r < 0)
                return r;
        if ((size_t)snprintf(buf, size, "%s", ref) >= size)
                return -ENAMETOOLONG;
        return 0;
}
