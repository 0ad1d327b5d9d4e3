/* sandbox-agent: POST /exec (exec.h). One non-blocking poll loop moves the
 * request body to the command's stdin and its stdout/stderr to the client as
 * frames (docs/AGENT.md), enforces the timeout, and notices the command's
 * exit through a signalfd. Output waits while the client is slow (the
 * command then blocks on a full pipe); once the client is gone, output is
 * read and dropped until the command ends, or, with hangup_kill, the
 * command and everything it started are killed at once. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "exec.h"
#include "exec_spawn.h"

#define FRAMES_TYPE "application/x-sandbox-agent-frames"
#define OUT_HEAD 48             /* room before the data for "<hex>\r\n<tag> <len>\n" */
#define DRAIN_MAX (1024 * 1024) /* read from a pipe after the grace, per pipe */

struct exec_run {
        struct http_request *req;
        int sock;
        int pipes[2]; /* stdout, stderr (read ends); -1 once closed */
        int in_fd;    /* stdin (write end); -1 once closed */
        int sig_fd;   /* SIGCHLD */
        pid_t pid;
        char *in_buf; /* body bytes on their way to stdin */
        size_t in_off, in_len;
        char *out_buf; /* one encoded frame on its way to the client */
        size_t out_off, out_end;
        size_t drained[2];
        bool client_gone, exited, timed_out, draining;
        bool hung_up; /* hangup_kill: killed because the client went first */
        bool stray_in; /* bytes after the body: its end of file is no longer watched */
        int status;
        long long deadline; /* 0: no timeout */
        long long exit_at, stall_at;
        const struct exec_spec *spec;
        const char *record;  /* record=PATH, or NULL */
        long long start_ms;  /* epoch ms, for the record */
        long long record_at; /* when record_begin is due (monotonic ms) */
        bool recorded;       /* record_begin done */
};

static void fd_close(int *fd)
{
        if (*fd >= 0)
                (void)close(*fd);
        *fd = -1;
}

static void set_nonblock(int fd)
{
        (void)fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

/* SIGHUP to the group of pid, then, once pid has exited or
 * AGENT_HANGUP_GRACE_MS have passed, SIGKILL. The grace is for a command
 * that started a session of its own (the execd group's runner,
 * EXECD_SH_RUN): it kills that session on SIGHUP, which is the only way
 * to reach it where this handler cannot adopt orphans (gVisor's release
 * 20221219 ignores PR_SET_CHILD_SUBREAPER: they go to PID 1). pid is not
 * reaped here (WNOWAIT): child_reap does it. */
static void hangup_group(pid_t pid)
{
        siginfo_t si;

        (void)kill(-pid, SIGHUP);
        (void)kill(pid, SIGHUP);
        for (int i = 0; i < AGENT_HANGUP_GRACE_MS / 10; i++) {
                si.si_pid = 0;
                if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0 || si.si_pid == pid)
                        break;
                (void)poll(NULL, 0, 10);
        }
        (void)kill(-pid, SIGKILL);
        (void)kill(pid, SIGKILL);
}

static void client_gone(struct exec_run *run)
{
        run->client_gone = true;
        run->out_off = run->out_end = 0;
        fd_close(&run->in_fd);
        /* hangup_kill: nobody will hear how it ends, so it ends now: its
         * group is hung up, then killed; what left the group, after the loop */
        if (run->spec->hangup_kill && !run->exited && !run->hung_up && run->pid > 0) {
                run->hung_up = true;
                hangup_group(run->pid);
        }
}

/* hangup_kill, the body read whole: the socket is readable, which only its
 * end of file should make it. Under gVisor the relay's half-close comes as
 * that, not as POLLRDHUP, so read it (MSG_PEEK: nothing is taken). A broker
 * never sends past the body; should bytes come anyway, the end of file is
 * no longer watched rather than polled for in a loop. */
static void eof_check(struct exec_run *run)
{
        char c;
        ssize_t n = recv(run->sock, &c, 1, MSG_PEEK | MSG_DONTWAIT);

        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
                client_gone(run);
        else if (n > 0)
                run->stray_in = true;
}

/* Encode data (already at out_buf + OUT_HEAD, n bytes) as one frame of tag,
 * inside one chunk unless the client spoke HTTP/1.0. n == 0 with tag 0: the
 * final frame was written there by the caller. */
static void frame_wrap(struct exec_run *run, const char *frame_head, size_t n)
{
        size_t fh = strlen(frame_head);
        char head[OUT_HEAD];
        int h;

        if (run->req->http10)
                h = snprintf(head, sizeof(head), "%s", frame_head);
        else
                h = snprintf(head, sizeof(head), "%zx\r\n%s", fh + n, frame_head);
        run->out_off = OUT_HEAD - (size_t)h;
        memcpy(run->out_buf + run->out_off, head, (size_t)h);
        run->out_end = OUT_HEAD + n;
        /* The client has the stall limit from now to take it. */
        run->stall_at = agent_now_ms() + AGENT_STALL_TIMEOUT_MS;
        if (!run->req->http10) {
                memcpy(run->out_buf + run->out_end, "\r\n", 2);
                run->out_end += 2;
        }
}

/* Read once from pipe i; a frame when there is data. */
static void pipe_read(struct exec_run *run, int i)
{
        char frame_head[48];
        ssize_t n = read(run->pipes[i], run->out_buf + OUT_HEAD, AGENT_IO_CHUNK);

        if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
                if (run->draining)
                        fd_close(&run->pipes[i]);
                return;
        }
        if (n <= 0) {
                fd_close(&run->pipes[i]);
                return;
        }
        if (run->draining) {
                run->drained[i] += (size_t)n;
                if (run->drained[i] >= DRAIN_MAX)
                        fd_close(&run->pipes[i]);
        }
        if (run->client_gone)
                return;
        (void)snprintf(frame_head, sizeof(frame_head), "%d %zd\n", i + 1, n);
        frame_wrap(run, frame_head, (size_t)n);
}

static void client_write(struct exec_run *run, long long now)
{
        ssize_t n = send(run->sock, run->out_buf + run->out_off, run->out_end - run->out_off,
                         MSG_NOSIGNAL | MSG_DONTWAIT);

        if (n < 0) {
                if (errno != EAGAIN && errno != EINTR)
                        client_gone(run);
                return;
        }
        run->out_off += (size_t)n;
        run->stall_at = now + AGENT_STALL_TIMEOUT_MS;
        if (run->out_off == run->out_end)
                run->out_off = run->out_end = 0;
}

/* Body bytes from the socket to in_buf (dropped when stdin is closed). */
static void body_read(struct exec_run *run)
{
        long n = http_body_read(run->req, run->in_buf, AGENT_IO_CHUNK);

        if (n == -EAGAIN || n == -EINTR)
                return;
        if (n < 0) {
                client_gone(run);
                return;
        }
        if (run->in_fd >= 0) {
                run->in_off = 0;
                run->in_len = (size_t)n;
        }
        if (run->req->body_left == 0 && run->in_len == 0)
                fd_close(&run->in_fd);
}

static void stdin_write(struct exec_run *run)
{
        ssize_t n = write(run->in_fd, run->in_buf + run->in_off, run->in_len);

        if (n < 0) {
                if (errno == EAGAIN || errno == EINTR)
                        return;
                /* EPIPE: the command closed its stdin; the rest is dropped. */
                run->in_len = 0;
                fd_close(&run->in_fd);
                return;
        }
        run->in_off += (size_t)n;
        run->in_len -= (size_t)n;
        if (run->in_len == 0 && run->req->body_left == 0)
                fd_close(&run->in_fd);
}

/* ---- record=PATH: the command's state files, as the execd runner script
 * kept them (its status, logs and interrupt read them). A file made in a
 * container's overlay /tmp costs about half a millisecond, so a command
 * that ends within AGENT_RECORD_DELAY_MS leaves one file, P.done, written
 * before its last frame; a longer one also P.cmd, P.start and P.pid once
 * that delay has passed (status and interrupt of a running command read
 * them; before that the broker knows its own streams). Best effort: a
 * sandbox that cannot write /tmp still runs the command. ---- */

#define AGENT_RECORD_DELAY_MS 20
#define RECORD_CMD_MAX (256 * 1024) /* command text kept in P.done */

static long long epoch_ms(void)
{
        struct timespec ts;

        (void)clock_gettime(CLOCK_REALTIME, &ts);
        return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Open PATH.suffix for writing (mode 0600, no link followed; with excl
 * only when it does not exist yet), making the directory (mode 1777, as
 * the script made it) when missing. -1 on failure. */
static int record_open(const char *path, const char *suffix, bool excl)
{
        char name[PATH_MAX], dir[PATH_MAX], *slash;
        int flags = O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | (excl ? O_EXCL : O_TRUNC), fd;

        if (snprintf(name, sizeof(name), "%s.%s", path, suffix) >= (int)sizeof(name))
                return -1;
        fd = open(name, flags, 0600);
        if (fd >= 0 || errno != ENOENT)
                return fd;
        snprintf(dir, sizeof(dir), "%s", path);
        slash = strrchr(dir, '/');
        if (!slash || slash == dir)
                return -1;
        *slash = '\0';
        if (mkdir(dir, 01777) == 0)
                (void)chmod(dir, 01777);
        return open(name, flags, 0600);
}

static void write_all(int fd, const char *text, size_t len)
{
        while (len > 0) {
                ssize_t n = write(fd, text, len);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break;
                text += n;
                len -= (size_t)n;
        }
}

static void record_write(const char *path, const char *suffix, const char *text, size_t len,
                         bool excl)
{
        int fd = record_open(path, suffix, excl);

        if (fd < 0)
                return;
        write_all(fd, text, len);
        (void)close(fd);
}

static void record_number(const char *path, const char *suffix, long long n, bool excl)
{
        char buf[32];
        int len = snprintf(buf, sizeof(buf), "%lld\n", n);

        record_write(path, suffix, buf, (size_t)len, excl);
}

/* The command's text: the args joined by spaces (malloc'ed, *len set). */
static char *record_text(const struct exec_spec *spec, size_t *len)
{
        char *text;
        size_t n = 0;

        for (size_t i = 0; i < spec->argc; i++)
                n += strlen(spec->argv[i]) + 1;
        text = malloc(n + 1);
        if (!text)
                return NULL;
        n = 0;
        for (size_t i = 0; i < spec->argc; i++) {
                size_t l = strlen(spec->argv[i]);

                if (i)
                        text[n++] = ' ';
                memcpy(text + n, spec->argv[i], l);
                n += l;
        }
        text[n] = '\0';
        *len = n;
        return text;
}

/* The command still runs after the delay: its text, start and process
 * group (its session's id: interrupt kills the group); text and start are
 * not replaced when there (a session names its command itself). */
static void record_begin(struct exec_run *run)
{
        size_t n;
        char *text = record_text(run->spec, &n);

        run->recorded = true;
        if (text) {
                record_write(run->record, "cmd", text, n, true);
                free(text);
        }
        record_number(run->record, "start", run->start_ms, true);
        record_number(run->record, "pid", run->pid, false);
}

/* Creating a file in a container's overlay /tmp costs 0.5 to 1 ms of
 * kernel time on a Docker host (ext4 looking for a free inode), renaming
 * one about 0.05 ms. So a handler that wrote a P.done leaves an empty one,
 * SPARE_NAME in the same directory, after its answer is out, and the next
 * P.done is that file renamed: the cost moves off the command's path. */
#define SPARE_NAME ".sb-spare"

/* The spare's path beside record path (buf of PATH_MAX); false when none fits. */
static bool spare_path(const char *path, char *buf)
{
        const char *slash = strrchr(path, '/');

        return slash && snprintf(buf, PATH_MAX, "%.*s/" SPARE_NAME, (int)(slash - path), path) <
                                PATH_MAX;
}

/* P.done from the spare, opened for writing, or -1 (then the caller makes
 * it as before). Only a file of ours can be taken: a regular file, owned
 * by the agent's user, with no other link, empty; whatever else was
 * planted under the spare's name is moved to P.done and removed again. */
static int spare_take(const char *path)
{
        char spare[PATH_MAX], name[PATH_MAX];
        struct stat st;
        int fd;

        if (!spare_path(path, spare) || snprintf(name, sizeof(name), "%s.done", path) >= PATH_MAX ||
            rename(spare, name) < 0)
                return -1;
        fd = open(name, O_WRONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
        if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
            st.st_nlink == 1 && st.st_size == 0)
                return fd;
        if (fd >= 0)
                (void)close(fd);
        (void)unlink(name);
        return -1;
}

/* After the answer: a spare for the next command, when there is none. */
static void spare_make(const char *path)
{
        char spare[PATH_MAX];
        int fd;

        if (!spare_path(path, spare))
                return;
        fd = open(spare, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd >= 0)
                (void)close(fd);
}

/* The command has exited: P.done, in one write, what the status script
 * prints ("start= pid= rc= end= alive=0 bg=0" lines, then the command's
 * text: that of P.cmd when there). */
static void record_done(struct exec_run *run)
{
        char *buf, name[PATH_MAX];
        size_t n, len = 0;
        int fd;

        buf = malloc(256 + RECORD_CMD_MAX);
        if (!buf)
                return;
        n = (size_t)snprintf(buf, 256, "start=%lld\npid=%d\nrc=%d\nend=%lld\nalive=0\nbg=0\n",
                             run->start_ms, (int)run->pid, agent_wait_code(run->status), epoch_ms());
        fd = snprintf(name, sizeof(name), "%s.cmd", run->record) < (int)sizeof(name)
                     ? open(name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
                     : -1;
        if (fd >= 0) {
                struct stat st;

                if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
                        ssize_t r;

                        while (len < RECORD_CMD_MAX &&
                               ((r = read(fd, buf + n + len, RECORD_CMD_MAX - len)) > 0 ||
                                (r < 0 && errno == EINTR)))
                                if (r > 0)
                                        len += (size_t)r;
                }
                (void)close(fd);
        } else {
                char *text = record_text(run->spec, &len);

                if (text) {
                        if (len > RECORD_CMD_MAX)
                                len = RECORD_CMD_MAX;
                        memcpy(buf + n, text, len);
                        free(text);
                }
        }
        fd = spare_take(run->record);
        if (fd < 0)
                fd = record_open(run->record, "done", false);
        if (fd >= 0) {
                write_all(fd, buf, n + len);
                (void)close(fd);
        }
        free(buf);
}

static void child_reap(struct exec_run *run, long long now)
{
        struct signalfd_siginfo si;

        while (read(run->sig_fd, &si, sizeof(si)) == sizeof(si))
                ;
        if (waitpid(run->pid, &run->status, WNOHANG) == run->pid) {
                run->exited = true;
                run->exit_at = now;
                if (run->record)
                        record_done(run);
                fd_close(&run->in_fd);
        }
}

static void timeout_fire(struct exec_run *run)
{
        /* The whole session's group: what the command started goes too. */
        (void)kill(-run->pid, SIGKILL);
        (void)kill(run->pid, SIGKILL);
        run->timed_out = true;
}

static int min_timeout(int cur, long long at, long long now)
{
        long long left = at - now;

        if (left < 0)
                left = 0;
        if (cur < 0 || left < cur)
                return (int)left;
        return cur;
}

/* The loop: until the command has exited, its pipes are closed and the last
 * frame of output is out (or the client is gone). */
static void run_loop(struct exec_run *run)
{
        for (;;) {
                struct pollfd p[5];
                int np = 0, i_sock = -1, i_pipe[2] = { -1, -1 }, i_in = -1, i_sig = -1;
                bool pending = run->out_end > 0, want_body, watch_eof;
                long long now = agent_now_ms();
                int timeout = -1;

                if (run->exited && run->pipes[0] < 0 && run->pipes[1] < 0 && !pending)
                        return;
                /* body bytes that came in with the head (up to AGENT_HEADER_MAX
                 * of them): no poll of the socket announces those */
                if (!run->client_gone && run->in_len == 0 && run->req->body_left > 0 &&
                    run->req->len > run->req->body_off)
                        body_read(run);
                want_body = !run->client_gone && run->req->body_left > 0 && run->in_len == 0 &&
                            run->req->len == run->req->body_off;
                /* hangup_kill: the broker's end of file is its hangup (it
                 * never half-closes; the gVisor relay passes a close on as
                 * one), noticed even while the command is silent */
                watch_eof = run->spec->hangup_kill && run->req->body_left == 0 && !run->stray_in;
                if (!run->client_gone) {
                        i_sock = np;
                        p[np++] = (struct pollfd){ .fd = run->sock,
                                                   .events = (short)((pending ? POLLOUT : 0) |
                                                                     (want_body || watch_eof ? POLLIN : 0) |
                                                                     (watch_eof ? POLLRDHUP : 0)) };
                }
                for (int i = 0; i < 2; i++)
                        if (run->pipes[i] >= 0 && !pending && !run->draining) {
                                i_pipe[i] = np;
                                p[np++] = (struct pollfd){ .fd = run->pipes[i], .events = POLLIN };
                        }
                if (run->in_fd >= 0 && run->in_len > 0) {
                        i_in = np;
                        p[np++] = (struct pollfd){ .fd = run->in_fd, .events = POLLOUT };
                }
                if (!run->exited) {
                        i_sig = np;
                        p[np++] = (struct pollfd){ .fd = run->sig_fd, .events = POLLIN };
                }
                if (run->deadline && !run->timed_out && !run->exited)
                        timeout = min_timeout(timeout, run->deadline, now);
                if (run->exited && !run->draining)
                        timeout = min_timeout(timeout, run->exit_at + AGENT_DRAIN_GRACE_MS, now);
                if (pending)
                        timeout = min_timeout(timeout, run->stall_at, now);
                if (run->draining && !pending)
                        timeout = 0;
                if (run->record && !run->recorded && !run->exited)
                        timeout = min_timeout(timeout, run->record_at, now);

                if (poll(p, (nfds_t)np, timeout) < 0 && errno != EINTR)
                        return;
                now = agent_now_ms();

                if (i_sig >= 0 && p[i_sig].revents)
                        child_reap(run, now);
                if (run->record && !run->recorded && !run->exited && now >= run->record_at)
                        record_begin(run);
                if (run->deadline && !run->timed_out && !run->exited && now >= run->deadline)
                        timeout_fire(run);
                if (run->exited && !run->draining && now >= run->exit_at + AGENT_DRAIN_GRACE_MS)
                        run->draining = true; /* what is left behind holds the pipes */
                if (i_sock >= 0 && p[i_sock].revents) {
                        short ev = p[i_sock].revents;

                        if (ev & POLLOUT)
                                client_write(run, now);
                        if (!run->client_gone && watch_eof && (ev & POLLIN))
                                eof_check(run);
                        else if (!run->client_gone && (ev & POLLIN))
                                body_read(run);
                        else if (!run->client_gone && (ev & (POLLHUP | POLLERR)) && !(ev & POLLOUT))
                                client_gone(run);
                        if (!run->client_gone && watch_eof && (ev & POLLRDHUP))
                                client_gone(run);
                }
                if (pending && !run->client_gone && run->out_end > 0 && now >= run->stall_at)
                        client_gone(run);
                if (i_in >= 0 && run->in_fd >= 0 && p[i_in].revents)
                        stdin_write(run);
                for (int i = 0; i < 2; i++) {
                        if (run->out_end > 0 || run->pipes[i] < 0)
                                continue;
                        if (run->draining || (i_pipe[i] >= 0 && p[i_pipe[i]].revents))
                                pipe_read(run, i);
                }
        }
}

/* Send the rest of the output and the final frames, blocking up to the
 * stall limit per write. */
static void run_finish(struct exec_run *run)
{
        char frame_head[48];
        size_t n;

        if (run->client_gone)
                return;
        (void)snprintf(frame_head, sizeof(frame_head), "x %d %d\n", agent_wait_code(run->status),
                       run->timed_out ? 1 : 0);
        frame_wrap(run, frame_head, 0);
        n = run->out_end;
        if (!run->req->http10) {
                memcpy(run->out_buf + n, "0\r\n\r\n", 5);
                n += 5;
        }
        run->out_end = n;
        while (!run->client_gone && run->out_end > 0) {
                struct pollfd p = { .fd = run->sock, .events = POLLOUT };

                if (poll(&p, 1, AGENT_STALL_TIMEOUT_MS) <= 0)
                        return;
                client_write(run, agent_now_ms());
        }
}

/* detach=1: the command's stdio is /dev/null and it outlives the request
 * (PID 1 reaps it). A close-on-exec pipe tells whether exec succeeded. */
static void exec_detached(struct http_request *req, const struct exec_spec *spec, int notify_fd)
{
        char msg[AGENT_ERROR_MAX], head[64], body[AGENT_ERROR_MAX + 128];
        int null_fd = -1, rep[2] = { -1, -1 }, status = 0, n = 0, len;
        pid_t pid;

        null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (null_fd < 0 || pipe2(rep, O_CLOEXEC) < 0) {
                (void)http_reply_error(req, 500, "cannot start: %s", strerror(errno));
                goto out;
        }
        pid = exec_spawn(spec, null_fd, null_fd, null_fd, rep[1]);
        if (pid < 0) {
                (void)http_reply_error(req, 500, "fork: %s", strerror((int)-pid));
                goto out;
        }
        fd_close(&rep[1]);
        for (;;) {
                ssize_t r = read(rep[0], msg + n, sizeof(msg) - (size_t)n);

                if (r < 0 && errno == EINTR)
                        continue;
                if (r <= 0)
                        break;
                n += (int)r;
                if ((size_t)n == sizeof(msg))
                        break;
        }
        len = 0;
        if (n > 0) {
                /* It failed before exec: its stderr line and its code. */
                (void)waitpid(pid, &status, 0);
                len = snprintf(body, sizeof(body), "2 %d\n%.*sx %d 0\n", n, n, msg,
                               agent_wait_code(status));
        } else {
                /* Before the answer, and while the command is still our
                 * child: PID 1 knows the pid before it can reap it. */
                if (notify_fd >= 0 && write(notify_fd, &pid, sizeof(pid)) != (ssize_t)sizeof(pid)) {
                        (void)kill(-pid, SIGKILL);
                        (void)http_reply_error(req, 500, "cannot hand the entrypoint over: %s",
                                               strerror(errno));
                        goto out;
                }
                len = snprintf(body, sizeof(body), "x -1 0\n");
        }
        if (http_reply_head(req, 200, FRAMES_TYPE, HTTP_CHUNKED) < 0)
                goto out;
        if (req->http10) {
                (void)http_write_all(req->fd, body, (size_t)len);
                goto out;
        }
        n = snprintf(head, sizeof(head), "%x\r\n", len);
        if (http_write_all(req->fd, head, (size_t)n) == 0 &&
            http_write_all(req->fd, body, (size_t)len) == 0)
                (void)http_write_all(req->fd, "\r\n0\r\n\r\n", 7);
out:
        fd_close(&null_fd);
        fd_close(&rep[0]);
        fd_close(&rep[1]);
}

static void exec_attached(struct http_request *req, const struct exec_spec *spec)
{
        struct exec_run run = {
                .req = req, .sock = req->fd, .pipes = { -1, -1 }, .in_fd = -1, .sig_fd = -1
        };
        int out[2] = { -1, -1 }, err[2] = { -1, -1 }, in[2] = { -1, -1 };
        sigset_t chld;
        pid_t pid;

        run.in_buf = malloc(AGENT_IO_CHUNK);
        run.out_buf = malloc(OUT_HEAD + AGENT_IO_CHUNK + 16);
        if (!run.in_buf || !run.out_buf) {
                (void)http_reply_error(req, 500, "out of memory");
                goto out;
        }
        /* SIGCHLD blocked before the fork, so that an early exit is queued
         * for the signalfd; the child unblocks it (agent_child_reset). */
        (void)sigemptyset(&chld);
        (void)sigaddset(&chld, SIGCHLD);
        (void)sigprocmask(SIG_BLOCK, &chld, NULL);
        run.sig_fd = signalfd(-1, &chld, SFD_NONBLOCK | SFD_CLOEXEC);
        if (run.sig_fd < 0 || pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0) {
                (void)http_reply_error(req, 500, "cannot start: %s", strerror(errno));
                goto out;
        }
        if (req->content_length > 0) {
                if (pipe2(in, O_CLOEXEC) < 0) {
                        (void)http_reply_error(req, 500, "cannot start: %s", strerror(errno));
                        goto out;
                }
        } else {
                in[0] = open("/dev/null", O_RDONLY | O_CLOEXEC);
                if (in[0] < 0) {
                        (void)http_reply_error(req, 500, "/dev/null: %s", strerror(errno));
                        goto out;
                }
        }
        if (http_send_continue(req) < 0)
                goto out;
        run.spec = spec;
        run.start_ms = epoch_ms();
        /* hangup_kill: what the command leaves behind when its parent dies
         * (a process in a session of its own: the execd runner's command)
         * becomes this handler's child, so that a hangup can find it */
        if (spec->hangup_kill)
                (void)prctl(PR_SET_CHILD_SUBREAPER, 1);
        pid = exec_spawn(spec, in[0], out[1], err[1], err[1]);
        if (pid < 0) {
                (void)http_reply_error(req, 500, "fork: %s", strerror((int)-pid));
                goto out;
        }
        run.pid = pid;
        if (spec->record) {
                run.record = spec->record;
                run.record_at = agent_now_ms() + AGENT_RECORD_DELAY_MS;
        }
        fd_close(&in[0]);
        fd_close(&out[1]);
        fd_close(&err[1]);
        run.pipes[0] = out[0];
        run.pipes[1] = err[0];
        run.in_fd = in[1];
        out[0] = err[0] = in[1] = -1;
        for (int i = 0; i < 2; i++)
                set_nonblock(run.pipes[i]);
        if (run.in_fd >= 0)
                set_nonblock(run.in_fd);
        if (spec->timeout_ms > 0)
                run.deadline = agent_now_ms() + spec->timeout_ms;
        if (http_reply_head(req, 200, FRAMES_TYPE, HTTP_CHUNKED) < 0)
                client_gone(&run);
        set_nonblock(run.sock);
        run_loop(&run);
        run_finish(&run);
        if (run.hung_up)
                agent_kill_children(AGENT_HANGUP_SWEEP_MS);
        if (run.record) {
                /* the client has it all: end its read, then the spare */
                (void)shutdown(run.sock, SHUT_WR);
                spare_make(run.record);
        }
out:
        fd_close(&run.pipes[0]);
        fd_close(&run.pipes[1]);
        fd_close(&run.in_fd);
        fd_close(&run.sig_fd);
        for (int i = 0; i < 2; i++) {
                fd_close(&out[i]);
                fd_close(&err[i]);
                fd_close(&in[i]);
        }
        free(run.in_buf);
        free(run.out_buf);
}

void exec_handle(struct http_request *req)
{
        struct exec_spec spec;

        if (exec_spec_parse(req, &spec) == 0) {
                if (spec.detach)
                        exec_detached(req, &spec, -1);
                else
                        exec_attached(req, &spec);
        }
        exec_spec_free(&spec);
}

void exec_entrypoint(struct http_request *req, bool has_entry, int entry_fd)
{
        struct exec_spec spec;

        if (has_entry || entry_fd < 0) {
                (void)http_reply_error(req, 409, "this sandbox already has an entrypoint");
                return;
        }
        if (exec_spec_parse(req, &spec) == 0) {
                if (spec.record || spec.timeout_ms || spec.shell || spec.hangup_kill || spec.seat ||
                    req->content_length > 0)
                        (void)http_reply_error(req, 400, "an entrypoint takes arg, env, cwd and user only");
                else
                        exec_detached(req, &spec, entry_fd);
        }
        exec_spec_free(&spec);
}
