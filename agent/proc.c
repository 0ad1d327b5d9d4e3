/* sandbox-agent: process helpers shared by the PID 1 loop and the handlers
 * (agent.h). */
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"

/* An entry of getdents64(2). */
struct ldirent {
        uint64_t ino;
        int64_t off;
        unsigned short reclen;
        unsigned char type;
        char name[];
};

/* The open fds in first..last closed as /proc/self/fd lists them; -1 when
 * it cannot be read. Async-signal-safe (no allocation). */
static int close_listed(unsigned first, unsigned last)
{
        char buf[4096] __attribute__((aligned(8)));
        int dfd = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        long n;

        if (dfd < 0)
                return -1;
        /* procfs lists fds in order and resumes by number: closing the ones
         * already read does not disturb the next read */
        while ((n = syscall(SYS_getdents64, dfd, buf, sizeof(buf))) > 0) {
                for (long off = 0; off < n;) {
                        const struct ldirent *d = (const void *)(buf + off);
                        unsigned fd = 0;
                        const char *c = d->name;

                        off += d->reclen;
                        if (*c < '0' || *c > '9')
                                continue;
                        for (; *c >= '0' && *c <= '9' && fd < 100000000; c++)
                                fd = fd * 10 + (unsigned)(*c - '0');
                        if (fd >= first && fd <= last && (int)fd != dfd)
                                (void)close((int)fd);
                }
        }
        (void)close(dfd);
        return n < 0 ? -1 : 0;
}

/* fds first..last closed; close_range(2) (Linux 5.9), else those
 * /proc/self/fd lists (gVisor's release 20221219 has no close_range, and a
 * loop up to the limit is 65536 system calls a fork there), else one by one
 * up to the descriptor limit. */
static void close_fds(unsigned first, unsigned last)
{
        struct rlimit rl;

        if (first > last)
                return;
        if (syscall(SYS_close_range, first, last, 0) == 0)
                return;
        if (close_listed(first, last) == 0)
                return;
        if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur > 65536)
                rl.rlim_cur = 65536;
        for (unsigned fd = first; fd <= last && fd < rl.rlim_cur; fd++)
                (void)close((int)fd);
}

void agent_child_reset(int keep_fd)
{
        agent_child_reset2(keep_fd, -1);
}

/* The signals the agent ignores (agent_signals_init); every other
 * disposition is the default or a handler, which exec resets. */
static const int ignored[] = { SIGPIPE, SIGTTIN, SIGTTOU };

void agent_signals_init(void)
{
        /* whatever the agent's own parent left ignored, once, so that a
         * child has only the ignored[] ones to put back */
        for (int sig = 1; sig < _NSIG; sig++)
                if (sig != SIGKILL && sig != SIGSTOP)
                        (void)signal(sig, SIG_DFL);
        for (size_t i = 0; i < sizeof(ignored) / sizeof(ignored[0]); i++)
                (void)signal(ignored[i], SIG_IGN);
}

void agent_child_reset2(int keep_a, int keep_b)
{
        sigset_t none;
        unsigned next = 3;
        int keep[2] = { keep_a < keep_b ? keep_a : keep_b, keep_a < keep_b ? keep_b : keep_a };

        /* Dispositions first, then the mask: a signal pending now is then
         * delivered with its default action, as it would be after exec.
         * Three calls, not one per signal: only ignored[] differs from the
         * default (agent_signals_init). All async-signal-safe: this also
         * runs in a child that shares the handler's memory (exec_spawn.c). */
        for (size_t i = 0; i < sizeof(ignored) / sizeof(ignored[0]); i++)
                (void)signal(ignored[i], SIG_DFL);
        (void)sigemptyset(&none);
        (void)sigprocmask(SIG_SETMASK, &none, NULL);
        for (int i = 0; i < 2; i++) {
                if (keep[i] < (int)next)
                        continue;
                close_fds(next, (unsigned)keep[i] - 1);
                next = (unsigned)keep[i] + 1;
        }
        close_fds(next, ~0U);
}

#define CHILDREN_MAX 256 /* per round of agent_kill_children */

/* Digits of s up to end (or a non-digit) as a pid; 0 when none. */
static pid_t parse_pid(const char *s, const char **ret_end)
{
        long long n = 0;

        for (; *s >= '0' && *s <= '9' && n < 0x7fffffff; s++)
                n = n * 10 + (*s - '0');
        *ret_end = s;
        return (pid_t)n;
}

/* This process's children from /proc/self/task/<tid>/children (a handler
 * has one thread); -1 when the kernel has no such file (gVisor). */
static int children_listed(pid_t *pids, int max)
{
        char path[64], buf[4096];
        const char *p, *end;
        int fd, n = 0;
        ssize_t len;

        (void)snprintf(path, sizeof(path), "/proc/self/task/%d/children", (int)getpid());
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -1;
        len = read(fd, buf, sizeof(buf) - 1);
        (void)close(fd);
        if (len < 0)
                return -1;
        buf[len] = '\0';
        /* a list cut by the buffer: its last number may be cut too, and the
         * rest comes in the next round */
        for (p = buf; *p && n < max; p = end) {
                pid_t pid = parse_pid(p, &end);

                if (end == p) {
                        end = p + 1;
                        continue;
                }
                if (*end == '\0' && (size_t)len == sizeof(buf) - 1)
                        break;
                if (pid > 0)
                        pids[n++] = pid;
        }
        return n;
}

/* The same from every /proc/<pid>/stat whose parent field is this process. */
static int children_scanned(pid_t *pids, int max)
{
        DIR *d = opendir("/proc");
        pid_t self = getpid();
        struct dirent *e;
        int n = 0;

        if (!d)
                return -1;
        while (n < max && (e = readdir(d))) {
                char path[64], buf[512];
                const char *p, *end;
                pid_t pid = parse_pid(e->d_name, &end), ppid;
                ssize_t len;
                int fd;

                if (pid <= 0 || *end)
                        continue;
                (void)snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
                fd = open(path, O_RDONLY | O_CLOEXEC);
                if (fd < 0)
                        continue;
                len = read(fd, buf, sizeof(buf) - 1);
                (void)close(fd);
                if (len <= 0)
                        continue;
                buf[len] = '\0';
                /* "pid (comm) state ppid ...": comm may hold anything, so
                 * from its last ')' */
                p = strrchr(buf, ')');
                if (!p || strlen(p) < 5)
                        continue;
                ppid = parse_pid(p + 4, &end);
                if (ppid == self)
                        pids[n++] = pid;
        }
        (void)closedir(d);
        return n;
}

void agent_kill_children(int budget_ms)
{
        long long end = agent_now_ms() + budget_ms;
        pid_t pids[CHILDREN_MAX];

        for (;;) {
                int n = children_listed(pids, CHILDREN_MAX), status;

                if (n < 0)
                        n = children_scanned(pids, CHILDREN_MAX);
                /* a child's group: what it started in the group goes with
                 * it; what started a session of its own becomes our child
                 * once its parent is gone, for the next round */
                for (int i = 0; i < n; i++) {
                        (void)kill(-pids[i], SIGKILL);
                        (void)kill(pids[i], SIGKILL);
                }
                while (waitpid(-1, &status, WNOHANG) > 0)
                        ;
                if (n <= 0 || agent_now_ms() >= end)
                        return;
                (void)poll(NULL, 0, 10);
        }
}

int agent_wait_code(int status)
{
        if (WIFEXITED(status))
                return WEXITSTATUS(status);
        if (WIFSIGNALED(status))
                return 128 + WTERMSIG(status);
        return 255;
}

long long agent_now_ms(void)
{
        struct timespec ts;

        (void)clock_gettime(CLOCK_MONOTONIC, &ts);
        return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
