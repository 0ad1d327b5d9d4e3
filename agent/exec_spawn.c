/* sandbox-agent: the parameters of POST /exec and the child that runs the
 * command (exec_spawn.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent.h"
#include "exec_spawn.h"
#include "plainsh.h"
#include "seat.h"
#include "seat_guard.h"

extern char **environ;

/* Length of an environment entry's key (up to '='), or of the whole string. */
static size_t env_key_len(const char *e)
{
        const char *eq = strchr(e, '=');

        return eq ? (size_t)(eq - e) : strlen(e);
}

/* Add "K=V" to envp (room for it is there), replacing an entry of key K. */
static void env_set(char **envp, size_t *n, char *kv)
{
        size_t k = env_key_len(kv);

        for (size_t i = 0; i < *n; i++) {
                if (env_key_len(envp[i]) == k && strncmp(envp[i], kv, k) == 0) {
                        envp[i] = kv;
                        return;
                }
        }
        envp[(*n)++] = kv;
        envp[*n] = NULL;
}

/* A 0/1 parameter into *ret; false (after a 400) when it is neither. */
static bool parse_flag(struct http_request *req, const struct http_param *p, bool *ret)
{
        if (strcmp(p->value, "0") != 0 && strcmp(p->value, "1") != 0) {
                (void)http_reply_error(req, 400, "%s must be 0 or 1", p->name);
                return false;
        }
        *ret = p->value[0] == '1';
        return true;
}

/* seat=1: the user's private temporary directory, made (or repaired) now,
 * as TMPDIR in spec->owned_tmpdir. Answers and returns -1 when it cannot
 * be made: a seat's command never runs with a /tmp the others can read. */
static int seat_prepare(struct http_request *req, struct exec_spec *spec)
{
        char path[PATH_MAX];
        const char *what = "";
        int r;

        if (!spec->has_user || spec->user.uid == 0)
                return http_reply_error(req, 400, "seat needs a user other than root"), -1;
        r = seat_tmp_prepare(SEAT_TMP_PARENT, spec->user.uid, spec->user.gid, path, sizeof(path),
                             &what);
        if (r < 0)
                return http_reply_error(req, 500, "the seat's private tmp: %s: %s", what,
                                        strerror(-r)),
                       -1;
        if (asprintf(&spec->owned_tmpdir, "TMPDIR=%s", path) < 0) {
                spec->owned_tmpdir = NULL;
                return http_reply_error(req, 500, "out of memory"), -1;
        }
        return 0;
}

/* timeout_ms: digits only, at most 12 of them (about 31 years). */
static int parse_ms(const char *s, long long *ret)
{
        long long n = 0;
        size_t i;

        for (i = 0; s[i]; i++) {
                if (s[i] < '0' || s[i] > '9' || i >= 12)
                        return -EINVAL;
                n = n * 10 + (s[i] - '0');
        }
        if (i == 0)
                return -EINVAL;
        *ret = n;
        return 0;
}

int exec_spec_parse(struct http_request *req, struct exec_spec *spec)
{
        size_t n_env = 0, n_env_params = 0, n;
        const char *user = NULL;
        bool envfile = false;

        *spec = (struct exec_spec){ .cwd = "/" };
        for (size_t i = 0; i < req->n_params; i++) {
                const struct http_param *p = &req->params[i];

                if (strcmp(p->name, "arg") == 0) {
                        spec->argc++;
                } else if (strcmp(p->name, "env") == 0) {
                        if (!strchr(p->value, '=') || p->value[0] == '=')
                                return http_reply_error(req, 400, "env must be KEY=VALUE: %s",
                                                        p->value),
                                       -1;
                        n_env_params++;
                } else if (strcmp(p->name, "cwd") == 0) {
                        spec->cwd = p->value;
                } else if (strcmp(p->name, "user") == 0) {
                        user = p->value;
                } else if (strcmp(p->name, "timeout_ms") == 0) {
                        if (parse_ms(p->value, &spec->timeout_ms) < 0)
                                return http_reply_error(req, 400, "bad timeout_ms"), -1;
                } else if (strcmp(p->name, "record") == 0) {
                        if (p->value[0] != '/' || strlen(p->value) > PATH_MAX - 16)
                                return http_reply_error(req, 400, "record must be an absolute path"),
                                       -1;
                        spec->record = p->value;
                } else if (strcmp(p->name, "shell") == 0) {
                        if (!parse_flag(req, p, &spec->shell))
                                return -1;
                } else if (strcmp(p->name, "envfile") == 0) {
                        if (!parse_flag(req, p, &envfile))
                                return -1;
                } else if (strcmp(p->name, "detach") == 0) {
                        if (!parse_flag(req, p, &spec->detach))
                                return -1;
                } else if (strcmp(p->name, "seat") == 0) {
                        if (!parse_flag(req, p, &spec->seat))
                                return -1;
                } else if (strcmp(p->name, "hangup_kill") == 0) {
                        if (!parse_flag(req, p, &spec->hangup_kill))
                                return -1;
                } else {
                        return http_reply_error(req, 400, "unknown parameter %s", p->name), -1;
                }
        }
        if (spec->argc == 0)
                return http_reply_error(req, 400, "at least one arg is required"), -1;
        if (spec->shell && spec->argc != 1)
                return http_reply_error(req, 400, "shell takes exactly one arg"), -1;
        if (spec->detach && spec->record)
                return http_reply_error(req, 400, "a detached command keeps no record"), -1;
        if (spec->detach && req->content_length > 0)
                return http_reply_error(req, 400, "a detached command takes no stdin"), -1;
        if (spec->detach && spec->hangup_kill)
                return http_reply_error(req, 400, "a detached command outlives the request"), -1;
        if (user) {
                int r = users_resolve(user, &spec->user);

                if (r == -ENOMEM)
                        return http_reply_error(req, 500, "out of memory"), -1;
                if (r < 0)
                        return http_reply_error(req, 400, "%s user %s",
                                                r == -ENOENT ? "no such" : "malformed", user),
                               -1;
                spec->has_user = true;
        }
        if (spec->seat && seat_prepare(req, spec) < 0)
                return -1;

        if (envfile) {
                /* the agent's own EXECD_ENVS: a request cannot point it elsewhere */
                const char *path = getenv("EXECD_ENVS");

                if (path && path[0] == '/' && envfile_load(path, &spec->envfile) < 0)
                        return http_reply_error(req, 500, "out of memory"), -1;
        }
        spec->argv = calloc(spec->argc + 1, sizeof(char *));
        while (environ && environ[n_env])
                n_env++;
        /* +1 for HOME, +1 for TMPDIR, +1 for the NULL. */
        spec->envp = calloc(n_env + spec->envfile.n + n_env_params + 3, sizeof(char *));
        if (!spec->argv || !spec->envp)
                return http_reply_error(req, 500, "out of memory"), -1;
        memcpy(spec->envp, environ, n_env * sizeof(char *));
        n = 0;
        for (size_t i = 0; i < req->n_params; i++)
                if (strcmp(req->params[i].name, "arg") == 0)
                        spec->argv[n++] = (char *)req->params[i].value;
        /* Like `docker exec -u`: the user's home, unless env= names one. */
        if (spec->has_user && spec->user.home) {
                if (asprintf(&spec->owned_env, "HOME=%s", spec->user.home) < 0) {
                        spec->owned_env = NULL;
                        return http_reply_error(req, 500, "out of memory"), -1;
                }
                env_set(spec->envp, &n_env, spec->owned_env);
        }
        /* a seat's TMPDIR, as HOME: env= may name another */
        if (spec->owned_tmpdir)
                env_set(spec->envp, &n_env, spec->owned_tmpdir);
        for (size_t i = 0; i < spec->envfile.n; i++)
                env_set(spec->envp, &n_env, spec->envfile.vars[i]);
        for (size_t i = 0; i < req->n_params; i++)
                if (strcmp(req->params[i].name, "env") == 0)
                        env_set(spec->envp, &n_env, (char *)req->params[i].value);
        return 0;
}

void exec_spec_free(struct exec_spec *spec)
{
        if (!spec)
                return;
        free(spec->argv);
        free(spec->envp);
        free(spec->owned_env);
        free(spec->owned_tmpdir);
        users_spec_free(&spec->user);
        envfile_free(&spec->envfile);
        spec->argv = spec->envp = NULL;
        spec->owned_env = spec->owned_tmpdir = NULL;
}

/* What the child needs, all made by the parent before the clone: the child
 * shares the handler's memory until it execs (CLONE_VM|CLONE_VFORK, no copy
 * of the handler's page tables, the handler waiting meanwhile), so it
 * allocates nothing, takes no lock and calls only async-signal-safe
 * functions (system calls, string helpers). */
struct spawn {
        const struct exec_spec *spec;
        int in, out, err, report_fd;
        int guard_sock; /* a seat's: where its PID guard's listener goes (seat_guard.h); else -1 */
        char **sh_argv; /* room for "sh", the file, the args: a file without #! */
        /* shell=1 with plain words (plainsh.h), when plain is set */
        bool plain;
        char *text; /* the words' storage */
        char *words[PLAINSH_MAX_WORDS + 1];
        char **plain_envp; /* the entries, then PWD, SHLVL and _ */
        size_t plain_n;    /* entries before PWD */
        char shlvl[32];
        char cwd[PATH_MAX], pwd[PATH_MAX + 8], under[PATH_MAX + 8], buf[PATH_MAX];
        char msg[PATH_MAX + 256];
};

#define SPAWN_STACK (64 * 1024)

/* dst = a + b + c (any may be NULL); false when it does not fit. In the child. */
static bool cat3(char *dst, size_t size, const char *a, const char *b, size_t b_len, const char *c)
{
        size_t la = a ? strlen(a) : 0, lc = c ? strlen(c) : 0;

        if (la + b_len + lc >= size)
                return false;
        if (la)
                memcpy(dst, a, la);
        if (b_len)
                memcpy(dst + la, b, b_len);
        if (lc)
                memcpy(dst + la + b_len, c, lc);
        dst[la + b_len + lc] = '\0';
        return true;
}

/* dir (len bytes; empty: the current directory, POSIX) + "/" + file. In the child. */
static bool path_join(char *dst, size_t size, const char *prefix, const char *dir, size_t len,
                      const char *file)
{
        size_t lp = strlen(prefix);

        if (lp + len + 1 >= size)
                return false;
        memcpy(dst, prefix, lp);
        memcpy(dst + lp, dir, len);
        if (len)
                dst[lp + len++] = '/';
        return cat3(dst + lp + len, size - lp - len, NULL, "", 0, file);
}

/* Write the pieces (NULL-terminated list) and a newline to report_fd as
 * one line, then _exit(code). In the child. */
__attribute__((noreturn, sentinel)) static void child_fail(struct spawn *sp, int code, ...)
{
        size_t n = 0, cap = sizeof(sp->msg) - 1;
        const char *piece;
        va_list ap;

        va_start(ap, code);
        while ((piece = va_arg(ap, const char *))) {
                size_t l = strlen(piece);

                if (l > cap - n)
                        l = cap - n;
                memcpy(sp->msg + n, piece, l);
                n += l;
        }
        va_end(ap);
        sp->msg[n++] = '\n';
        (void)!write(sp->report_fd, sp->msg, n);
        _exit(code);
}

/* A file the kernel will not exec (no #! line): run it with /bin/sh, as
 * execvp does. Returns only on failure, errno set to ENOEXEC. In the child. */
static void exec_script(struct spawn *sp, const char *path, char **argv, char **envp, size_t argc)
{
        sp->sh_argv[0] = "sh";
        sp->sh_argv[1] = (char *)path;
        memcpy(sp->sh_argv + 2, argv + 1, (argc - 1) * sizeof(char *));
        sp->sh_argv[argc + 1] = NULL;
        (void)execve("/bin/sh", sp->sh_argv, envp);
        errno = ENOEXEC;
}

/* The value of key (with its '=', "PATH=") in envp, or NULL. */
static const char *env_get(char *const *envp, const char *key)
{
        size_t k = strlen(key);

        for (; *envp; envp++)
                if (strncmp(*envp, key, k) == 0)
                        return *envp + k;
        return NULL;
}

/* execvp of argv (argc of them) with the PATH of the spec's envp (default
 * AGENT_DEFAULT_PATH). Returns only on failure, with errno: ENOENT when
 * nothing was found, EACCES when only a file that cannot be executed was.
 * In the child. */
static void exec_lookup(struct spawn *sp, char **argv, size_t argc)
{
        const char *file = argv[0], *path = NULL, *dir, *end;
        char **envp = sp->spec->envp;
        bool denied = false;

        if (!*file) {
                errno = ENOENT;
                return;
        }
        if (strchr(file, '/')) {
                (void)execve(file, argv, envp);
                if (errno == ENOEXEC)
                        exec_script(sp, file, argv, envp, argc);
                return;
        }
        for (char **e = envp; *e; e++)
                if (strncmp(*e, "PATH=", 5) == 0)
                        path = *e + 5;
        if (!path)
                path = AGENT_DEFAULT_PATH;
        for (dir = path;; dir = end + 1) {
                end = strchrnul(dir, ':');
                if (path_join(sp->buf, sizeof(sp->buf), "", dir, (size_t)(end - dir), file)) {
                        (void)execve(sp->buf, argv, envp);
                        if (errno == ENOEXEC) {
                                exec_script(sp, sp->buf, argv, envp, argc);
                                return;
                        }
                        if (errno == EACCES)
                                denied = true;
                        else if (errno != ENOENT && errno != ENOTDIR && errno != ELOOP &&
                                 errno != ENAMETOOLONG && errno != ESTALE && errno != ENODEV &&
                                 errno != ETIMEDOUT)
                                return;
                }
                if (!*end)
                        break;
        }
        errno = denied ? EACCES : ENOENT;
}

/* shell=1: can the text run as a program, as bash -c would run it, with the
 * variables bash adds to a program's environment (PWD of the cwd, SHLVL, _
 * the program's path)? Plain words (plainsh.h), no BASH_ENV, no exported
 * function of that name, a SHLVL bash would keep. Sets up sp->plain and
 * what exec_plain needs; -ENOMEM when out of memory. In the parent. */
static int plain_prepare(struct spawn *sp)
{
        const struct exec_spec *spec = sp->spec;
        const char *v;
        char fn[160];
        size_t n, k = 0;
        long lvl = 0;

        if (!env_get(spec->envp, "PATH=") || env_get(spec->envp, "BASH_ENV="))
                return 0;
        sp->text = strdup(spec->argv[0]);
        if (!sp->text)
                return -ENOMEM;
        n = plainsh_split(sp->text, sp->words, PLAINSH_MAX_WORDS + 1);
        if (n == 0)
                return 0;
        /* an exported function of that name runs instead of a program */
        if (snprintf(fn, sizeof(fn), "BASH_FUNC_%s%%%%=", sp->words[0]) >= (int)sizeof(fn) ||
            env_get(spec->envp, fn))
                return 0;
        if ((v = env_get(spec->envp, "SHLVL="))) {
                /* bash's own level, put back when it execs; odd ones: bash */
                if (!*v || strlen(v) > 3 || strspn(v, "0123456789") != strlen(v))
                        return 0;
                lvl = strtol(v, NULL, 10);
                if (lvl >= 999)
                        return 0;
        }
        snprintf(sp->shlvl, sizeof(sp->shlvl), "SHLVL=%ld", lvl);
        for (char **e = spec->envp; *e; e++)
                k++;
        sp->plain_envp = calloc(k + 4, sizeof(char *));
        if (!sp->plain_envp)
                return -ENOMEM;
        k = 0;
        for (char **e = spec->envp; *e; e++)
                if (strncmp(*e, "PWD=", 4) != 0 && strncmp(*e, "SHLVL=", 6) != 0 &&
                    strncmp(*e, "_=", 2) != 0)
                        sp->plain_envp[k++] = *e;
        sp->plain_n = k;
        sp->plain = true;
        return 0;
}

/* Exec the words plain_prepare found. Returns when it cannot (no program
 * was found, or an odd error): the caller then runs the shell, which
 * reports as bash does. In the child, after the chdir. */
static void exec_plain(struct spawn *sp)
{
        char **envp = sp->plain_envp, **words = sp->words;
        const char *path = env_get(sp->spec->envp, "PATH="), *v, *dir, *end;
        struct stat a, b;
        size_t k = sp->plain_n;

        if (!sp->plain || !getcwd(sp->cwd, sizeof(sp->cwd)))
                return;
        /* PWD is kept when it names the cwd (a path through a link) */
        v = env_get(sp->spec->envp, "PWD=");
        if (!(v && v[0] == '/' && stat(v, &a) == 0 && stat(".", &b) == 0 && a.st_dev == b.st_dev &&
              a.st_ino == b.st_ino))
                v = sp->cwd;
        if (!cat3(sp->pwd, sizeof(sp->pwd), "PWD=", v, strlen(v), NULL))
                return;
        envp[k++] = sp->pwd;
        envp[k++] = sp->shlvl;
        envp[k++] = sp->under;
        envp[k] = NULL;
        if (strchr(words[0], '/')) {
                if (path_join(sp->under, sizeof(sp->under), "_=", "", 0, words[0]))
                        (void)execve(words[0], words, envp);
                return;
        }
        for (dir = path;; dir = end + 1) {
                end = strchrnul(dir, ':');
                if (path_join(sp->under, sizeof(sp->under), "_=", dir, (size_t)(end - dir),
                              words[0])) {
                        (void)execve(sp->under + 2, words, envp);
                        /* bash runs a file without #! itself, and stops at
                         * odd errors: the shell then */
                        if (errno != ENOENT && errno != ENOTDIR && errno != EACCES)
                                return;
                }
                if (!*end)
                        return;
        }
}

/* dup2 that also works when from == to (then only close-on-exec is cleared). */
static int move_fd(int from, int to)
{
        if (from == to)
                return fcntl(to, F_SETFD, 0);
        return dup2(from, to) < 0 ? -1 : 0;
}

/* The child: until it execs, on its own stack in the handler's memory. */
static int spawn_child(void *arg)
{
        struct spawn *sp = arg;
        const struct exec_spec *spec = sp->spec;
        const char *what = NULL;
        int e;

        (void)setsid();
        if (move_fd(sp->in, 0) < 0 || move_fd(sp->out, 1) < 0 || move_fd(sp->err, 2) < 0)
                child_fail(sp, 127, "sandbox-agent: stdio: ", strerror(errno), NULL);
        if (sp->report_fd == sp->err)
                sp->report_fd = 2;
        agent_child_reset2(sp->report_fd, sp->guard_sock);
        if (spec->has_user) {
                int r = users_apply(&spec->user, &what);

                if (r < 0)
                        child_fail(sp, 127, "sandbox-agent: ", what, ": ", strerror(-r), NULL);
        }
        /* a seat's files are its own: the others share /tmp (and whatever
         * else is world-writable) with it */
        if (spec->seat)
                (void)umask(077);
        /* and no PID of another seat can be probed (seat_guard.h) */
        if (sp->guard_sock >= 0) {
                int r = seat_guard_install(sp->guard_sock, &what);

                if (r < 0 && r != -EOPNOTSUPP)
                        child_fail(sp, 127, "sandbox-agent: ", what, ": ", strerror(-r), NULL);
                (void)close(sp->guard_sock);
        }
        if (chdir(spec->cwd) < 0) {
                if (spec->record)
                        child_fail(sp, 1, "cwd ", spec->cwd, ": no such directory", NULL);
                child_fail(sp, 127, "sandbox-agent: chdir ", spec->cwd, ": ", strerror(errno),
                           NULL);
        }
        if (spec->shell) {
                /* bash when there is one (as execd), else sh */
                char *sh_argv[] = { "bash", "-c", spec->argv[0], NULL };

                exec_plain(sp);
                exec_lookup(sp, sh_argv, 3);
                if (errno != ENOENT)
                        child_fail(sp, 126, "sandbox-agent: exec bash: ", strerror(errno), NULL);
                sh_argv[0] = "sh";
                exec_lookup(sp, sh_argv, 3);
                e = errno;
                child_fail(sp, e == ENOENT || e == ENOTDIR ? 127 : 126, "sandbox-agent: exec sh: ",
                           strerror(e), NULL);
        }
        exec_lookup(sp, spec->argv, spec->argc);
        e = errno;
        child_fail(sp, e == ENOENT || e == ENOTDIR ? 127 : 126, "sandbox-agent: exec ",
                   spec->argv[0], ": ", strerror(e), NULL);
}

pid_t exec_spawn(const struct exec_spec *spec, int in, int out, int err, int report_fd)
{
        struct spawn *sp = calloc(1, sizeof(*sp));
        size_t slots = (spec->argc > 3 ? spec->argc : 3) + 2;
        char *stack = malloc(SPAWN_STACK);
        sigset_t all, old;
        pid_t pid = -ENOMEM;
        int guard[2] = { -1, -1 };

        if (!sp || !stack)
                goto out;
        *sp = (struct spawn){
                .spec = spec, .in = in, .out = out, .err = err, .report_fd = report_fd, .guard_sock = -1
        };
        if (spec->seat) {
                if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, guard) < 0) {
                        pid = -errno;
                        goto out;
                }
                sp->guard_sock = guard[1];
        }
        sp->sh_argv = calloc(slots, sizeof(char *));
        if (!sp->sh_argv || (spec->shell && plain_prepare(sp) < 0))
                goto out;
        /* Every signal blocked across the clone, so that nothing runs in
         * the child before agent_child_reset; the child sets its own mask. */
        (void)sigfillset(&all);
        (void)sigprocmask(SIG_BLOCK, &all, &old);
        /* The stack grows down: the child starts at its top. Returns once
         * the child has exec'd or exited. */
        pid = clone(spawn_child, stack + SPAWN_STACK, CLONE_VM | CLONE_VFORK | SIGCHLD, sp);
        if (pid < 0)
                pid = -errno;
        (void)sigprocmask(SIG_SETMASK, &old, NULL);
        if (pid > 0 && guard[0] >= 0) {
                /* the child has exec'd (or failed): its listener, if it
                 * made one, is waiting in the socket. None: the kernel has
                 * no user notification (gVisor), or the child failed. */
                int r = seat_guard_start(guard[0], spec->user.uid, spec->user.gid);

                if (r < 0 && r != -ENOENT)
                        agent_log("sandbox-agent: seat %u: PID guard: %s", (unsigned)spec->user.uid,
                                  strerror(-r));
        }
out:
        if (guard[0] >= 0)
                (void)close(guard[0]);
        if (guard[1] >= 0)
                (void)close(guard[1]);
        if (sp) {
                free(sp->sh_argv);
                free(sp->text);
                free(sp->plain_envp);
        }
        free(sp);
        free(stack);
        return pid;
}
