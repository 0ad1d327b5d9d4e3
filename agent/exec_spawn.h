/* sandbox-agent: what a command is and how it is started (exec_spawn.c);
 * exec.c streams its output. */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "envfile.h"
#include "http.h"
#include "users.h"

struct exec_spec {
        char **argv; /* NULL-terminated; strings inside the request */
        size_t argc;
        char **envp;     /* NULL-terminated; strings inside the request, environ or owned_env */
        char *owned_env; /* HOME=... made here, or NULL */
        const char *cwd;
        bool has_user;
        struct user_spec user;
        long long timeout_ms; /* 0: none */
        bool detach;
        /* record=PATH: keep the command's state in PATH.{cmd,start,pid,rc,end}
         * (exec.c); then a missing cwd is exit code 1, as the execd runner
         * script had it. shell=1: argv is one shell text, run by bash -c
         * (sh -c without bash). */
        const char *record;
        bool shell;
        /* seat=1: a seat's command (docs/AGENT.md, "Seats"): umask 077 and
         * TMPDIR its private directory (seat.h), owned_tmpdir */
        bool seat;
        char *owned_tmpdir; /* "TMPDIR=...", or NULL */
        /* hangup_kill=1: the command lives only as long as the broker's
         * connection (exec.c) */
        bool hangup_kill;
        /* envfile=1: the entries of the file EXECD_ENVS (of the agent's own
         * environment) names, after the agent's environment and HOME,
         * before the env parameters (envfile.h); owned */
        struct envfile envfile;
};

/* Fill *spec from the query. On a bad request answers 4xx itself and
 * returns -1; 0 otherwise. exec_spec_free releases it either way. */
int exec_spec_parse(struct http_request *req, struct exec_spec *spec);

void exec_spec_free(struct exec_spec *spec);

/* fork() the command: a new session, stdin/stdout/stderr from in/out/err,
 * the user, umask 077 for a seat, the cwd, then exec with a PATH lookup. What fails in the child
 * is written as one line to report_fd (err, or a close-on-exec pipe when
 * detached) and the child exits 127 (126: found but not executable).
 * Returns the pid or -errno. */
pid_t exec_spawn(const struct exec_spec *spec, int in, int out, int err, int report_fd);
