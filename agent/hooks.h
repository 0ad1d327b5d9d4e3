/* hooks: the periodic lifecycle hooks of an OpenSandbox create, run by PID 1
 * (docs/AGENT.md, "Lifecycle hooks"). Each comes as one `--hook SPEC`
 * argument of the agent (the container's argv, written by the broker: code
 * in the sandbox can neither add one nor change one). SPEC is tokens
 * separated by single spaces, each percent-encoded (every byte but
 * A-Z a-z 0-9 and "-._~/@*,:=" as %XX):
 *
 *   NAME TIMEOUT_S SCHEDULE ARG0 [ARG1...]
 *
 * NAME [A-Za-z0-9._-]{1,63}, TIMEOUT_S 1..HOOK_TIMEOUT_MAX_S, SCHEDULE as
 * cron.h, 1..HOOK_ARGS_MAX args.
 *
 * A run starts when the schedule is due: in a new session (its own process
 * group), as the agent's own user (the sandbox's default one, as the
 * entrypoint), its environment and cwd, stdin/stdout/stderr /dev/null
 * (the output is not kept). A run still going when the next is due makes
 * that one skipped (counted; never two runs of a hook at once). A run at
 * its timeout has its process group killed (SIGKILL). Every run that does
 * not exit 0, and every skip, is a line on the agent's stderr (the
 * container's log). */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "cron.h"

#define HOOKS_MAX 16
#define HOOK_NAME_MAX 63
#define HOOK_ARGS_MAX 256
#define HOOK_TIMEOUT_MAX_S 300

struct hook {
        char *name;
        char **argv; /* inside the decoded spec */
        struct cron cron;
        int timeout_s;
        pid_t pid;             /* > 0: a run in progress */
        long long next_ms;     /* monotonic: when the next run is due */
        long long deadline_ms; /* of the run in progress */
        long long last_s;      /* epoch s the previous run was due (@every) */
        unsigned long runs, skipped, failed, timed_out;
        bool killed;
};

/* Decode spec (modified in place; the hook borrows from it) into *h.
 * Returns 0, or -1 with a reason in why. */
int hook_decode(char *spec, struct hook *h, const char **why);

/* Schedule h's first run, now_ms monotonic and now_s epoch seconds. */
void hook_schedule(struct hook *h, long long now_ms, long long now_s);

/* Start the runs that are due, kill those past their timeout. Returns the
 * milliseconds until one of the hooks needs this again (-1: never). */
int hooks_tick(struct hook *hooks, size_t n, long long now_ms, long long now_s);

/* A child reaped by PID 1: true when it was a hook's run (then counted). */
bool hooks_reaped(struct hook *hooks, size_t n, pid_t pid, int status);
