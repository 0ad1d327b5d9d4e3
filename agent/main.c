/* sandbox-agent: the first process of a Docker sandbox (docs/AGENT.md).
 *
 *   sandbox-agent (--socket PATH | --dial PATH | --listen-tcp [ADDR:]PORT --key-env NAME)
 *                 [--keep] [--hook SPEC]... [-- ENTRYPOINT ARGS...]
 *
 * PID 1's duties: reap every zombie, start the entrypoint (its own process
 * group, the terminal's foreground one if there is a terminal), forward the
 * stop signals to that group, and exit with the entrypoint's code once it
 * has gone (unless --keep). Besides, it serves the broker on a unix socket,
 * one it listens on (--socket) or, where the host cannot reach a socket
 * bound in the sandbox (gVisor), connections it dials to the host relay's
 * (--dial, dialer.h), or, where the host is another node (a Kubernetes pod),
 * TCP connections that first pass a mutual handshake keyed with the
 * sandbox's key (--listen-tcp, tcp_listener.h): each connection is handed to a forked handler child
 * (handler.c), so that nothing a request does can hurt this process, which
 * keeps no buffer of its own (idle RSS well under 1 MiB).
 *
 * One loop: poll() on the listening socket and a signalfd (every signal the
 * agent cares about is blocked and read there), waking at least once a
 * second to check that the socket file is still ours (listener.c). Also
 * works as a plain process (the tests run it so): it then makes itself the
 * child subreaper, so that orphaned commands are still reaped here. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "dialer.h"
#include "egress.h"
#include "egress_ca.h"
#include "hooks.h"
#include "listener.h"
#include "tcp_listener.h"

#define CHECK_INTERVAL_MS 1000

/* The signals forwarded to the entrypoint (docs/AGENT.md). */
static const int forwarded[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 };

struct agent {
        bool keep;
        char **entry_argv; /* NULL: no entrypoint */
        struct listener lis; /* --socket; fd -1 with --dial */
        struct dialer dialer; /* --dial; path NULL with --socket */
        struct tcp_listener tcp; /* --listen-tcp; fd -1 otherwise */
        int sig_fd;
        bool stopping; /* a SIGTERM/SIGINT was forwarded: exit with the entrypoint */
        struct agent_state state;
        pid_t handlers[AGENT_HANDLERS_MAX];
        size_t n_handlers;
        long long next_check;
        int entry_rd;     /* read end of the late-entrypoint pipe (agent_state.entry_fd) */
        bool egress;      /* the egress directory is mounted: run its relay child */
        pid_t egress_pid; /* 0: not running (restarted at the next check) */
        struct hook hooks[HOOKS_MAX]; /* --hook: periodic lifecycle hooks (hooks.h) */
        size_t n_hooks;
        bool hooks_started; /* scheduled: once the entrypoint has started */
};

void agent_log(const char *fmt, ...)
{
        char line[512];
        va_list ap;
        int n;

        va_start(ap, fmt);
        n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
        va_end(ap);
        if (n < 0)
                return;
        if ((size_t)n > sizeof(line) - 2)
                n = sizeof(line) - 2;
        line[n++] = '\n';
        (void)!write(2, line, (size_t)n);
}

static void usage(void)
{
        agent_log("usage: sandbox-agent (--socket PATH | --dial PATH | --listen-tcp [ADDR:]PORT "
                "--key-env NAME) [--keep] [--hook SPEC]... [-- ENTRYPOINT ARGS...]");
        exit(2);
}

struct args {
        const char *sock, *dial, *tcp, *key_env;
};

static void parse_args(struct agent *a, int argc, char **argv, struct args *ret)
{
        const char *sock = NULL, *dial = NULL, *tcp = NULL, *key_env = NULL;
        int i;

        for (i = 1; i < argc; i++) {
                if (strcmp(argv[i], "--") == 0) {
                        i++;
                        break;
                } else if (strcmp(argv[i], "--socket") == 0 && i + 1 < argc) {
                        sock = argv[++i];
                } else if (strncmp(argv[i], "--socket=", 9) == 0) {
                        sock = argv[i] + 9;
                } else if (strcmp(argv[i], "--dial") == 0 && i + 1 < argc) {
                        dial = argv[++i];
                } else if (strncmp(argv[i], "--dial=", 7) == 0) {
                        dial = argv[i] + 7;
                } else if (strcmp(argv[i], "--listen-tcp") == 0 && i + 1 < argc) {
                        tcp = argv[++i];
                } else if (strncmp(argv[i], "--listen-tcp=", 13) == 0) {
                        tcp = argv[i] + 13;
                } else if (strcmp(argv[i], "--key-env") == 0 && i + 1 < argc) {
                        key_env = argv[++i];
                } else if (strncmp(argv[i], "--key-env=", 10) == 0) {
                        key_env = argv[i] + 10;
                } else if (strcmp(argv[i], "--keep") == 0) {
                        a->keep = true;
                } else if (strcmp(argv[i], "--hook") == 0 && i + 1 < argc) {
                        const char *why = "";

                        if (a->n_hooks == HOOKS_MAX) {
                                agent_log("sandbox-agent: --hook: at most %d", HOOKS_MAX);
                                exit(2);
                        }
                        if (hook_decode(argv[++i], &a->hooks[a->n_hooks], &why) < 0) {
                                agent_log("sandbox-agent: --hook: %s", why);
                                exit(2);
                        }
                        a->n_hooks++;
                } else {
                        usage();
                }
        }
        if ((!!sock + !!dial + !!tcp) != 1 || (sock && !*sock) || (dial && !*dial) ||
            (tcp && !*tcp) || !tcp != !key_env || (key_env && (!*key_env || strchr(key_env, '='))))
                usage();
        a->entry_argv = i < argc ? argv + i : NULL;
        *ret = (struct args){ sock, dial, tcp, key_env };
}

/* fds 0-2 open (on /dev/null if they were not), so that no socket or pipe
 * of ours ever lands there. */
static void stdio_ensure(void)
{
        for (int fd = 0; fd < 3; fd++)
                if (fcntl(fd, F_GETFD) < 0 && open("/dev/null", O_RDWR) < 0)
                        exit(1);
}

static int signals_setup(struct agent *a)
{
        sigset_t set;

        (void)sigemptyset(&set);
        (void)sigaddset(&set, SIGCHLD);
        for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
                (void)sigaddset(&set, forwarded[i]);
        /* Blocked signals are queued even for a namespace's init, whose
         * default-disposition signals the kernel would otherwise drop. */
        if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
                return -errno;
        agent_signals_init(); /* SIGPIPE, SIGTTIN, SIGTTOU ignored */
        a->sig_fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
        return a->sig_fd < 0 ? -errno : 0;
}

static void agent_exit(struct agent *a, int code)
{
        listener_close(&a->lis);
        memset(a->tcp.key, 0, sizeof(a->tcp.key));
        exit(code);
}

static void entry_start(struct agent *a)
{
        pid_t pid = fork();

        if (pid < 0) {
                agent_log("sandbox-agent: fork: %s", strerror(errno));
                agent_exit(a, 1);
        }
        if (pid == 0) {
                /* Its own process group, the terminal's foreground one (as a
                 * shell's job), so that ^C and forwarded signals reach all of it. */
                (void)setpgid(0, 0);
                if (isatty(0))
                        (void)tcsetpgrp(0, getpid());
                agent_child_reset(-1);
                execvp(a->entry_argv[0], a->entry_argv);
                agent_log("sandbox-agent: exec %s: %s", a->entry_argv[0], strerror(errno));
                _exit(errno == ENOENT || errno == ENOTDIR ? 127 : 126);
        }
        /* Also here: the group exists before any signal is forwarded to it. */
        (void)setpgid(pid, pid);
        a->state.entry = ENTRY_RUNNING;
        a->state.entry_pid = pid;
}

static void handler_forget(struct agent *a, pid_t pid)
{
        for (size_t i = 0; i < a->n_handlers; i++) {
                if (a->handlers[i] == pid) {
                        a->handlers[i] = a->handlers[--a->n_handlers];
                        return;
                }
        }
}

/* Pids of late entrypoints (POST /entrypoint, exec.c) that handlers
 * started: the first becomes the sandbox's entrypoint when it has none.
 * Read before every reap, so that an entrypoint that exits at once is
 * known by the time its zombie reaches us. */
static void entry_adopt(struct agent *a)
{
        pid_t pids[64];
        ssize_t n;

        while ((n = read(a->entry_rd, pids, sizeof(pids))) > 0) {
                for (size_t i = 0; i < (size_t)n / sizeof(pid_t); i++) {
                        if (a->state.entry != ENTRY_NONE || pids[i] <= 1)
                                continue;
                        a->state.entry = ENTRY_RUNNING;
                        a->state.entry_pid = pids[i];
                }
        }
}

/* Every child that has ended: handlers, the entrypoint, and the orphans
 * (commands, detached or left behind) that were reparented to us. */
static void reap(struct agent *a)
{
        entry_adopt(a);
        for (;;) {
                int status;
                pid_t pid = waitpid(-1, &status, WNOHANG);

                if (pid <= 0)
                        return;
                if (hooks_reaped(a->hooks, a->n_hooks, pid, status))
                        continue;
                if (a->state.entry == ENTRY_RUNNING && pid == a->state.entry_pid) {
                        a->state.entry = ENTRY_EXITED;
                        a->state.entry_code = agent_wait_code(status);
                        if (!a->keep || a->stopping)
                                agent_exit(a, a->state.entry_code);
                } else if (a->egress && pid == a->egress_pid) {
                        a->egress_pid = 0;
                } else {
                        handler_forget(a, pid);
                }
        }
}

static void on_signal(struct agent *a, int sig)
{
        if (a->state.entry == ENTRY_RUNNING) {
                if (sig == SIGTERM || sig == SIGINT)
                        a->stopping = true;
                if (kill(-a->state.entry_pid, sig) < 0)
                        (void)kill(a->state.entry_pid, sig);
                return;
        }
        /* No entrypoint running: `docker stop` must not wait for its timeout. */
        if (sig == SIGTERM || sig == SIGINT)
                agent_exit(a, a->state.entry == ENTRY_EXITED ? a->state.entry_code : 0);
}

static void signals_read(struct agent *a)
{
        struct signalfd_siginfo si;

        while (read(a->sig_fd, &si, sizeof(si)) == sizeof(si)) {
                if (si.ssi_signo == SIGCHLD)
                        reap(a);
                else
                        on_signal(a, (int)si.ssi_signo);
        }
}

/* Over the cap, or no fork: a fixed answer, never blocking this loop. */
static void reply_busy(int fd)
{
        static const char busy[] = "HTTP/1.1 503 Service Unavailable\r\n"
                                   "Content-Type: text/plain\r\nContent-Length: 14\r\n"
                                   "Connection: close\r\n\r\nagent is busy\n";

        (void)send(fd, busy, sizeof(busy) - 1, MSG_DONTWAIT | MSG_NOSIGNAL);
}

/* A connection (blocking) to a handler child; closed here either way. */
static void serve(struct agent *a, int fd)
{
        pid_t pid;

        if (a->n_handlers >= AGENT_HANDLERS_MAX) {
                reply_busy(fd);
                (void)close(fd);
                return;
        }
        pid = fork();
        if (pid == 0) {
                memset(a->tcp.key, 0, sizeof(a->tcp.key)); /* a handler needs none */
                agent_child_reset2(fd, a->state.entry_fd);
                (void)signal(SIGPIPE, SIG_IGN);
                agent_handle(fd, &a->state);
                _exit(0);
        }
        if (pid < 0)
                reply_busy(fd);
        else
                a->handlers[a->n_handlers++] = pid;
        (void)close(fd);
}

/* tcp_listener_run's callback: a connection whose handshake has passed. */
static void serve_tcp(void *ctx, int fd)
{
        serve(ctx, fd);
}

static void accept_all(struct agent *a)
{
        for (;;) {
                int fd = accept4(a->lis.fd, NULL, NULL, SOCK_CLOEXEC);

                if (fd < 0) {
                        if (errno == EINTR || errno == ECONNABORTED)
                                continue;
                        return; /* EAGAIN; or EMFILE and the like: next round */
                }
                serve(a, fd);
        }
}

/* Dial what the pool misses; the first failure of a run is logged. */
static void dial_fill(struct agent *a)
{
        int r = dialer_fill(&a->dialer, agent_now_ms());

        if (r < 0)
                agent_log("sandbox-agent: cannot dial %s: %s (retrying)", a->dialer.path,
                        strerror(-r));
}

/* The periodic hooks: scheduled once the sandbox's entrypoint has started
 * (after the broker's preStart, when there is one), then run as due.
 * Returns the milliseconds until they need this again, -1: never. */
static int hooks_run(struct agent *a, long long now)
{
        long long wall = (long long)time(NULL);

        if (!a->hooks_started) {
                if (a->state.entry == ENTRY_NONE)
                        return -1;
                for (size_t i = 0; i < a->n_hooks; i++)
                        hook_schedule(&a->hooks[i], now, wall);
                a->hooks_started = true;
        }
        return hooks_tick(a->hooks, a->n_hooks, now, wall);
}

static void socket_check(struct agent *a)
{
        int r;

        if (a->lis.fd < 0)
                return; /* --dial: the socket is the relay's */
        r = listener_check(&a->lis);

        if (r < 0 && !a->lis.failing)
                agent_log("sandbox-agent: %s is gone and cannot be bound again: %s", a->lis.path,
                        strerror(-r));
        else if (r > 0)
                agent_log("sandbox-agent: %s was replaced; bound again", a->lis.path);
        a->lis.failing = r < 0;
}

int main(int argc, char **argv)
{
        static struct agent agent = { .sig_fd = -1 };
        struct agent *a = &agent;
        struct args args;
        int entry_pipe[2], r;

        parse_args(a, argc, argv, &args);
        a->tcp.fd = -1;
        if (args.key_env) {
                /* first: nothing started from here on inherits the key */
                unsigned char key[TCP_KEY_LEN];

                r = tcp_key_from_env(args.key_env, key);
                if (r < 0) {
                        agent_log("sandbox-agent: --key-env %s: %s", args.key_env,
                                r == -ENOENT ? "not set"
                                             : "not a key (64 lowercase hex digits expected)");
                        return 2;
                }
                r = tcp_listener_open(&a->tcp, args.tcp, key);
                memset(key, 0, sizeof(key));
                if (r < 0) {
                        agent_log("sandbox-agent: --listen-tcp %s: %s", args.tcp,
                                r == -EINVAL ? "expected [ADDR:]PORT (IPv4, or [IPv6])" : strerror(-r));
                        return r == -EINVAL ? 2 : 1;
                }
        }
        stdio_ensure();
        a->state.agent_pid = getpid();
        if (a->state.agent_pid != 1)
                (void)prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
        r = signals_setup(a);
        if (r < 0) {
                agent_log("sandbox-agent: signals: %s", strerror(-r));
                return 1;
        }
        if (pipe2(entry_pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
                agent_log("sandbox-agent: pipe: %s", strerror(errno));
                return 1;
        }
        a->entry_rd = entry_pipe[0];
        a->state.entry_fd = entry_pipe[1];
        a->lis.fd = -1;
        if (args.sock) {
                r = listener_open(&a->lis, args.sock);
                if (r < 0) {
                        agent_log("sandbox-agent: %s: %s", args.sock, strerror(-r));
                        return 1;
                }
        } else if (args.dial) {
                dialer_init(&a->dialer, args.dial);
                dial_fill(a);
        }
        a->egress = egress_enabled();
        if (a->egress) {
                /* before the entrypoint: it and every command inherit them */
                egress_env_set();
                egress_ca_trust();
                a->egress_pid = egress_start();
        }
        if (a->entry_argv)
                entry_start(a);

        a->next_check = agent_now_ms() + CHECK_INTERVAL_MS;
        for (;;) {
                struct pollfd p[3 + DIALER_IDLE + TCP_POLLFDS] = {
                        { .fd = a->lis.fd, .events = POLLIN },
                        { .fd = a->sig_fd, .events = POLLIN },
                        { .fd = a->entry_rd, .events = POLLIN }
                };
                struct pollfd *tp = p + 3 + DIALER_IDLE;
                long long now = agent_now_ms();
                int timeout = a->next_check > now ? (int)(a->next_check - now) : 0;
                nfds_t n = 3;

                for (int i = 0; i < DIALER_IDLE; i++)
                        p[3 + i] = (struct pollfd){ .fd = -1 };
                if (a->tcp.fd >= 0) {
                        int t = tcp_listener_timeout(&a->tcp, now);

                        tcp_listener_pollfds(&a->tcp, tp);
                        n = 3 + DIALER_IDLE + TCP_POLLFDS;
                        if (t >= 0 && t < timeout)
                                timeout = t;
                }

                if (a->dialer.path) {
                        int t = dialer_timeout(&a->dialer, now);

                        dialer_pollfds(&a->dialer, p + 3);
                        if (n < 3 + DIALER_IDLE)
                                n = 3 + DIALER_IDLE;
                        if (t >= 0 && t < timeout)
                                timeout = t;
                }
                if (a->n_hooks) {
                        int t = hooks_run(a, now);

                        if (t >= 0 && t < timeout)
                                timeout = t;
                }
                if (poll(p, n, timeout) < 0 && errno != EINTR) {
                        agent_log("sandbox-agent: poll: %s", strerror(errno));
                        agent_exit(a, 1);
                }
                if (p[2].revents)
                        entry_adopt(a);
                if (p[1].revents)
                        signals_read(a);
                if (p[0].revents)
                        accept_all(a);
                if (a->tcp.fd >= 0)
                        tcp_listener_run(&a->tcp, tp, agent_now_ms(), serve_tcp, a);
                for (int i = 0; a->dialer.path && i < DIALER_IDLE; i++) {
                        int fd = p[3 + i].revents ? dialer_take(&a->dialer, i) : -1;

                        if (fd >= 0)
                                serve(a, fd);
                }
                if (a->dialer.path)
                        dial_fill(a);
                now = agent_now_ms();
                if (now >= a->next_check) {
                        socket_check(a);
                        if (a->egress && a->egress_pid <= 0)
                                a->egress_pid = egress_start(); /* died: at most once a second */
                        a->next_check = now + CHECK_INTERVAL_MS;
                }
        }
}
