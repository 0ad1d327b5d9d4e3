/* sandbox-agent: the unix socket the broker connects to (docs/AGENT.md).
 * Code in the sandbox can remove or replace the socket file; the agent
 * notices (listener_check, once a second) and binds a new one at the path. */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

struct listener {
        const char *path;
        int fd; /* non-blocking, close-on-exec; -1 when closed */
        dev_t dev;
        ino_t ino;
        bool failing; /* the last rebind failed (logged once) */
};

/* Bind and listen at path (a stale file there is removed first), mode 0600.
 * Returns 0 or -errno. */
int listener_open(struct listener *l, const char *path);

/* If the file at l->path is no longer the socket bound, bind a new one there
 * and close the old. Returns 1 when replaced, 0 when unchanged, -errno when
 * the rebind failed (the old listener stays). */
int listener_check(struct listener *l);

/* Close, and remove the socket file if it is still ours. */
void listener_close(struct listener *l);
