/* cat-fcgi: "a local cat through the same hop", the baseline of the 5 MiB
 * download row of scripts/bench-agent. Every request is answered with one
 * host file (named at start, never by the client) read by a real `cat`
 * process, its output moved to nginx by the broker's own body_splice
 * (fcgi/body_out.c, as an execd download from the agent's socket is), with
 * Content-Length. Behind an nginx location made from the execd one, the
 * only difference from a download through the broker is where the bytes
 * come from: a local pipe instead of the sandbox's agent. A request for
 * /file instead splices the file itself (no cat process): the hop's floor.
 *
 *   cat-fcgi --socket PATH --file FILE
 *
 * One request at a time; SIGTERM/SIGINT end it. */
#include <errno.h>
#include <fcgiapp.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "body_out.h"

extern char **environ;

/* the body: `cat FILE` into a pipe, spliced to the connection. 0 or -1. */
static int answer_cat(struct request *req, const char *file, off_t size)
{
        char *argv[] = { "cat", (char *)file, NULL };
        posix_spawn_file_actions_t fa;
        int p[2], rc = 0, status;
        off_t sent = 0;
        pid_t pid;

        /* nonblocking on our end only (body_splice polls it); cat writes as usual */
        if (pipe2(p, O_CLOEXEC) < 0 || fcntl(p[0], F_SETFL, O_NONBLOCK) < 0)
                return -1;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, p[1], STDOUT_FILENO);
        if (posix_spawnp(&pid, "cat", &fa, NULL, argv, environ) != 0) {
                posix_spawn_file_actions_destroy(&fa);
                close(p[0]);
                close(p[1]);
                return -1;
        }
        posix_spawn_file_actions_destroy(&fa);
        close(p[1]);
        while (sent < size) {
                struct pollfd pfd = { .fd = p[0], .events = POLLIN };
                ssize_t n = body_splice(req, p[0], (size_t)(size - sent));

                if (n == -EAGAIN) {
                        (void)poll(&pfd, 1, 10000);
                        continue;
                }
                if (n <= 0) {
                        rc = -1;
                        break;
                }
                sent += n;
        }
        close(p[0]);
        (void)waitpid(pid, &status, 0);
        return rc;
}

/* the body: FILE itself, spliced to the connection. 0 or -1. */
static int answer_file(struct request *req, const char *file, off_t size)
{
        int fd = open(file, O_RDONLY | O_CLOEXEC);
        off_t sent = 0;

        if (fd < 0)
                return -1;
        while (sent < size) {
                ssize_t n = body_splice(req, fd, (size_t)(size - sent));

                if (n <= 0)
                        break;
                sent += n;
        }
        close(fd);
        return sent == size ? 0 : -1;
}

int main(int argc, char **argv)
{
        const char *path = NULL, *file = NULL;
        FCGX_Request f;
        struct stat st;
        int fd;

        for (int i = 1; i + 1 < argc; i += 2) {
                if (strcmp(argv[i], "--socket") == 0)
                        path = argv[i + 1];
                else if (strcmp(argv[i], "--file") == 0)
                        file = argv[i + 1];
        }
        if (!path || !file || argc != 5) {
                fprintf(stderr, "usage: cat-fcgi --socket PATH --file FILE\n");
                return 2;
        }
        if (stat(file, &st) < 0 || !S_ISREG(st.st_mode)) {
                fprintf(stderr, "cat-fcgi: %s: not a regular file\n", file);
                return 2;
        }
        signal(SIGPIPE, SIG_IGN);
        if (FCGX_Init() != 0)
                return 1;
        unlink(path);
        fd = FCGX_OpenSocket(path, 64);
        if (fd < 0 || FCGX_InitRequest(&f, fd, 0) != 0) {
                fprintf(stderr, "cat-fcgi: cannot listen on %s\n", path);
                return 1;
        }
        fprintf(stderr, "cat-fcgi: serving %s (%jd bytes) on %s\n", file, (intmax_t)st.st_size, path);
        while (FCGX_Accept_r(&f) >= 0) {
                const char *uri = FCGX_GetParam("DOCUMENT_URI", f.envp);
                int (*answer)(struct request *, const char *,
                              off_t) = uri && strcmp(uri, "/file") == 0 ? answer_file : answer_cat;
                struct request req = { .fcgx = &f };
                char head[160];

                /* (libfcgi's FCGX_FPrintF knows no %jd) */
                snprintf(head, sizeof(head),
                         "Status: 200 OK\r\nContent-Type: application/octet-stream\r\n"
                         "Content-Length: %jd\r\n\r\n",
                         (intmax_t)st.st_size);
                FCGX_PutS(head, f.out);
                if (answer(&req, file, st.st_size) < 0)
                        fprintf(stderr, "cat-fcgi: an answer broke off\n");
                FCGX_Finish_r(&f);
        }
        return 0;
}
