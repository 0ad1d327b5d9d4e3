/* hooks: periodic lifecycle hooks run by PID 1. See hooks.h. */
#include "hooks.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent.h"

static int hex(char c)
{
        return c >= '0' && c <= '9'   ? c - '0'
               : c >= 'a' && c <= 'f' ? c - 'a' + 10
               : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                      : -1;
}

/* Percent-decode s in place; -1 on a bad escape or a NUL byte. */
static int unescape(char *s)
{
        char *w = s;

        for (; *s; s++) {
                if (*s == '%') {
                        int a = hex(s[1]), b = a < 0 ? -1 : hex(s[2]);

                        if (b < 0 || (a == 0 && b == 0))
                                return -1;
                        *w++ = (char)(a * 16 + b);
                        s += 2;
                } else {
                        *w++ = *s;
                }
        }
        *w = '\0';
        return 0;
}

int hook_decode(char *spec, struct hook *h, const char **why)
{
        char *tok[3 + HOOK_ARGS_MAX], *p = spec, *end;
        size_t n = 0;
        long t;

        memset(h, 0, sizeof(*h));
        while (n < sizeof(tok) / sizeof(tok[0])) {
                tok[n++] = p;
                p = strchr(p, ' ');
                if (!p)
                        break;
                *p++ = '\0';
        }
        if (p || n < 4) {
                *why = n < 4 ? "expected NAME TIMEOUT_S SCHEDULE ARG..." : "too many arguments";
                return -1;
        }
        for (size_t i = 0; i < n; i++)
                if (unescape(tok[i]) < 0) {
                        *why = "a bad %XX escape";
                        return -1;
                }
        if (!tok[0][0] || strlen(tok[0]) > HOOK_NAME_MAX ||
            strspn(tok[0], "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") !=
                    strlen(tok[0])) {
                *why = "the name must be [A-Za-z0-9._-]{1,63}";
                return -1;
        }
        errno = 0;
        t = strtol(tok[1], &end, 10);
        if (errno || end == tok[1] || *end || t < 1 || t > HOOK_TIMEOUT_MAX_S) {
                *why = "the timeout must be 1 to 300 seconds";
                return -1;
        }
        if (cron_parse(tok[2], &h->cron) < 0) {
                *why = "a bad schedule";
                return -1;
        }
        if (!tok[3][0]) {
                *why = "an empty command";
                return -1;
        }
        h->argv = calloc(n - 2, sizeof(char *));
        if (!h->argv) {
                *why = "out of memory";
                return -1;
        }
        memcpy(h->argv, tok + 3, (n - 3) * sizeof(char *));
        h->name = tok[0];
        h->timeout_s = (int)t;
        return 0;
}

/* The next due time of h after a run due at due_s (epoch), as monotonic ms. */
static void schedule_after(struct hook *h, long long due_s, long long now_ms, long long now_s)
{
        long long next = cron_next(&h->cron, due_s);

        if (next < 0) {
                h->next_ms = -1; /* never again */
                return;
        }
        /* behind (a paused container, a long run): no catching up; the
         * next due time from now */
        if (next <= now_s)
                next = cron_next(&h->cron, now_s);
        if (next < 0) {
                h->next_ms = -1;
                return;
        }
        h->last_s = next;
        h->next_ms = now_ms + (next - now_s) * 1000;
}

void hook_schedule(struct hook *h, long long now_ms, long long now_s)
{
        schedule_after(h, now_s, now_ms, now_s);
}

static void run(struct hook *h, long long now_ms)
{
        pid_t pid = fork();

        if (pid < 0) {
                h->failed++;
                agent_log("sandbox-agent: hook %s: fork: %s", h->name, strerror(errno));
                return;
        }
        if (pid == 0) {
                int fd = open("/dev/null", O_RDWR);

                (void)setsid();
                if (fd >= 0) {
                        (void)dup2(fd, 0);
                        (void)dup2(fd, 1);
                        (void)dup2(fd, 2);
                }
                agent_child_reset(-1);
                execvp(h->argv[0], h->argv);
                _exit(errno == ENOENT || errno == ENOTDIR ? 127 : 126);
        }
        h->pid = pid;
        h->killed = false;
        h->deadline_ms = now_ms + (long long)h->timeout_s * 1000;
        h->runs++;
}

int hooks_tick(struct hook *hooks, size_t n, long long now_ms, long long now_s)
{
        long long wait = -1;

        for (size_t i = 0; i < n; i++) {
                struct hook *h = &hooks[i];

                if (h->pid > 0 && !h->killed && now_ms >= h->deadline_ms) {
                        (void)kill(-h->pid, SIGKILL);
                        (void)kill(h->pid, SIGKILL);
                        h->killed = true;
                        h->timed_out++;
                        agent_log("sandbox-agent: hook %s: killed at its timeout (%d s)", h->name,
                                 h->timeout_s);
                }
                if (h->next_ms >= 0 && now_ms >= h->next_ms) {
                        long long due = h->last_s;

                        if (h->pid > 0) {
                                h->skipped++;
                                agent_log("sandbox-agent: hook %s: run skipped, the previous one is "
                                         "still running (%lu skipped)",
                                         h->name, h->skipped);
                        } else {
                                run(h, now_ms);
                        }
                        schedule_after(h, due, now_ms, now_s);
                }
                if (h->next_ms >= 0 && (wait < 0 || h->next_ms - now_ms < wait))
                        wait = h->next_ms - now_ms;
                if (h->pid > 0 && !h->killed && (wait < 0 || h->deadline_ms - now_ms < wait))
                        wait = h->deadline_ms - now_ms;
        }
        if (wait < 0)
                return -1;
        return wait > 60000 ? 60000 : (int)wait;
}

bool hooks_reaped(struct hook *hooks, size_t n, pid_t pid, int status)
{
        for (size_t i = 0; i < n; i++) {
                struct hook *h = &hooks[i];
                int code;

                if (h->pid != pid)
                        continue;
                h->pid = 0;
                code = agent_wait_code(status);
                if (code != 0 && !h->killed) {
                        h->failed++;
                        agent_log("sandbox-agent: hook %s: exited with code %d", h->name, code);
                }
                return true;
        }
        return false;
}
