/* sandbox-agent: the parameters of POST /exec and the child that runs the
 * command (exec_spawn.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent.h"
#include "exec_spawn.h"
#include "plainsh.h"

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
                        if (strcmp(p->value, "0") != 0 && strcmp(p->value, "1") != 0)
                                return http_reply_error(req, 400, "shell must be 0 or 1"), -1;
                        spec->shell = p->value[0] == '1';
                } else if (strcmp(p->name, "envfile") == 0) {
                        if (strcmp(p->value, "0") != 0 && strcmp(p->value, "1") != 0)
                                return http_reply_error(req, 400, "envfile must be 0 or 1"), -1;
                        envfile = p->value[0] == '1';
                } else if (strcmp(p->name, "detach") == 0) {
                        if (strcmp(p->value, "0") != 0 && strcmp(p->value, "1") != 0)
                                return http_reply_error(req, 400, "detach must be 0 or 1"), -1;
                        spec->detach = p->value[0] == '1';
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

        if (envfile) {
                /* the agent's own EXECD_ENVS: a request cannot point it elsewhere */
                const char *path = getenv("EXECD_ENVS");

                if (path && path[0] == '/' && envfile_load(path, &spec->envfile) < 0)
                        return http_reply_error(req, 500, "out of memory"), -1;
        }
        spec->argv = calloc(spec->argc + 1, sizeof(char *));
        while (environ && environ[n_env])
                n_env++;
        /* +1 for HOME, +1 for the NULL. */
        spec->envp = calloc(n_env + spec->envfile.n + n_env_params + 2, sizeof(char *));
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
        users_spec_free(&spec->user);
        envfile_free(&spec->envfile);
        spec->argv = spec->envp = NULL;
        spec->owned_env = NULL;
}

__attribute__((format(printf, 3, 4), noreturn)) static void child_fail(int report_fd, int code,
                                                                       const char *fmt, ...)
{
        char msg[PATH_MAX + 256];
        va_list ap;
        int n;

        va_start(ap, fmt);
        n = vsnprintf(msg, sizeof(msg) - 1, fmt, ap);
        va_end(ap);
        if (n < 0)
                n = 0;
        if ((size_t)n > sizeof(msg) - 2)
                n = sizeof(msg) - 2;
        msg[n++] = '\n';
        (void)!write(report_fd, msg, (size_t)n);
        _exit(code);
}

/* A file the kernel will not exec (no #! line): run it with /bin/sh, as
 * execvp does. Returns only on failure, errno set to ENOEXEC. */
static void exec_script(const char *path, char **argv, char **envp, size_t argc)
{
        char **sh_argv = calloc(argc + 2, sizeof(char *));

        if (sh_argv) {
                sh_argv[0] = "sh";
                sh_argv[1] = (char *)path;
                memcpy(sh_argv + 2, argv + 1, (argc - 1) * sizeof(char *));
                (void)execve("/bin/sh", sh_argv, envp);
        }
        errno = ENOEXEC;
}

/* execvp with the PATH of envp (default AGENT_DEFAULT_PATH). Returns only
 * on failure, with errno: ENOENT when nothing was found, EACCES when only a
 * file that cannot be executed was. */
static void exec_lookup(const struct exec_spec *spec)
{
        const char *file = spec->argv[0], *path = NULL, *dir, *end;
        bool denied = false;
        char buf[PATH_MAX];

        if (!*file) {
                errno = ENOENT;
                return;
        }
        if (strchr(file, '/')) {
                (void)execve(file, spec->argv, spec->envp);
                if (errno == ENOEXEC)
                        exec_script(file, spec->argv, spec->envp, spec->argc);
                return;
        }
        for (char **e = spec->envp; *e; e++)
                if (strncmp(*e, "PATH=", 5) == 0)
                        path = *e + 5;
        if (!path)
                path = AGENT_DEFAULT_PATH;
        for (dir = path;; dir = end + 1) {
                size_t len;

                end = strchrnul(dir, ':');
                len = (size_t)(end - dir);
                /* An empty element is the current directory (POSIX). */
                if (snprintf(buf, sizeof(buf), "%.*s%s%s", (int)len, dir, len ? "/" : "", file) <
                    (int)sizeof(buf)) {
                        (void)execve(buf, spec->argv, spec->envp);
                        if (errno == ENOEXEC) {
                                exec_script(buf, spec->argv, spec->envp, spec->argc);
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

/* The value of key (with its '=', "PATH=") in envp, or NULL. */
static const char *env_get(char *const *envp, const char *key)
{
        size_t k = strlen(key);

        for (; *envp; envp++)
                if (strncmp(*envp, key, k) == 0)
                        return *envp + k;
        return NULL;
}

/* shell=1 with plain words (plainsh.h): exec the program as bash -c would,
 * with the variables bash adds to a program's environment (PWD of the cwd,
 * SHLVL, _ the program's path). Returns when it cannot (the text or the
 * environment needs the shell, or no program was found): the caller then
 * runs the shell, which reports as bash does. In the child. */
static void exec_plain(const struct exec_spec *spec)
{
        char *words[PLAINSH_MAX_WORDS + 1], *text, **envp, cwd[PATH_MAX], pwd[PATH_MAX + 8];
        char shlvl[32], under[PATH_MAX + 8], fn[160];
        const char *path = env_get(spec->envp, "PATH="), *v, *dir, *end;
        struct stat a, b;
        size_t n, k = 0;
        long lvl = 0;

        text = strdup(spec->argv[0]);
        if (!text || !path || env_get(spec->envp, "BASH_ENV="))
                return;
        n = plainsh_split(text, words, PLAINSH_MAX_WORDS + 1);
        if (n == 0)
                return;
        /* an exported function of that name runs instead of a program */
        if (snprintf(fn, sizeof(fn), "BASH_FUNC_%s%%%%=", words[0]) >= (int)sizeof(fn) ||
            env_get(spec->envp, fn))
                return;
        if ((v = env_get(spec->envp, "SHLVL="))) {
                /* bash's own level, put back when it execs; odd ones: bash */
                if (!*v || strlen(v) > 3 || strspn(v, "0123456789") != strlen(v))
                        return;
                lvl = strtol(v, NULL, 10);
                if (lvl >= 999)
                        return;
        }
        if (!getcwd(cwd, sizeof(cwd)))
                return;
        /* PWD is kept when it names the cwd (a path through a link) */
        v = env_get(spec->envp, "PWD=");
        if (!(v && v[0] == '/' && stat(v, &a) == 0 && stat(".", &b) == 0 && a.st_dev == b.st_dev &&
              a.st_ino == b.st_ino))
                v = cwd;
        snprintf(pwd, sizeof(pwd), "PWD=%s", v);
        snprintf(shlvl, sizeof(shlvl), "SHLVL=%ld", lvl);
        for (char **e = spec->envp; *e; e++)
                k++;
        envp = calloc(k + 4, sizeof(char *));
        if (!envp)
                return;
        k = 0;
        for (char **e = spec->envp; *e; e++)
                if (strncmp(*e, "PWD=", 4) != 0 && strncmp(*e, "SHLVL=", 6) != 0 &&
                    strncmp(*e, "_=", 2) != 0)
                        envp[k++] = *e;
        envp[k++] = pwd;
        envp[k++] = shlvl;
        envp[k++] = under;
        envp[k] = NULL;
        if (strchr(words[0], '/')) {
                snprintf(under, sizeof(under), "_=%s", words[0]);
                (void)execve(words[0], words, envp);
                return;
        }
        for (dir = path;; dir = end + 1) {
                size_t len;

                end = strchrnul(dir, ':');
                len = (size_t)(end - dir);
                if (snprintf(under, sizeof(under), "_=%.*s%s%s", (int)len, dir, len ? "/" : "",
                             words[0]) < (int)sizeof(under)) {
                        (void)execve(under + 2, words, envp);
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

pid_t exec_spawn(const struct exec_spec *spec, int in, int out, int err, int report_fd)
{
        const char *what = NULL;
        pid_t pid = fork();

        if (pid != 0)
                return pid < 0 ? -errno : pid;

        (void)setsid();
        if (move_fd(in, 0) < 0 || move_fd(out, 1) < 0 || move_fd(err, 2) < 0)
                child_fail(report_fd, 127, "sandbox-agent: stdio: %s", strerror(errno));
        if (report_fd == err)
                report_fd = 2;
        agent_child_reset(report_fd);
        if (spec->has_user) {
                int r = users_apply(&spec->user, &what);

                if (r < 0)
                        child_fail(report_fd, 127, "sandbox-agent: %s: %s", what, strerror(-r));
        }
        if (chdir(spec->cwd) < 0) {
                if (spec->record)
                        child_fail(report_fd, 1, "cwd %s: no such directory", spec->cwd);
                child_fail(report_fd, 127, "sandbox-agent: chdir %s: %s", spec->cwd, strerror(errno));
        }
        if (spec->shell) {
                exec_plain(spec);
                /* bash when there is one (as execd), else sh */
                char *sh_argv[] = { "bash", "-c", spec->argv[0], NULL };
                struct exec_spec sh = *spec;

                sh.argv = sh_argv;
                sh.argc = 3;
                exec_lookup(&sh);
                if (errno != ENOENT)
                        child_fail(report_fd, 126, "sandbox-agent: exec bash: %s", strerror(errno));
                sh_argv[0] = "sh";
                exec_lookup(&sh);
                child_fail(report_fd, errno == ENOENT || errno == ENOTDIR ? 127 : 126,
                           "sandbox-agent: exec sh: %s", strerror(errno));
        }
        exec_lookup(spec);
        child_fail(report_fd, errno == ENOENT || errno == ENOTDIR ? 127 : 126,
                   "sandbox-agent: exec %s: %s", spec->argv[0], strerror(errno));
}
