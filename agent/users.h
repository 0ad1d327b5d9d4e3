/* sandbox-agent: the `user` of POST /exec (docs/AGENT.md): `name`, `uid`,
 * `name:group` or `uid:gid`, looked up in the sandbox's /etc/passwd and
 * /etc/group (musl reads those files itself; there is no NSS in a static
 * binary). */
#pragma once

#include <stddef.h>
#include <sys/types.h>

struct user_spec {
        uid_t uid;
        gid_t gid;
        gid_t *groups; /* supplementary groups, owned */
        size_t n_groups;
        char *home; /* the passwd home directory, owned; NULL when unknown */
};

/* Resolve spec into *ret. A uid without a group gets that user's primary
 * group from /etc/passwd, or gid = uid when the uid has no entry; a user
 * known by name gets its supplementary groups from /etc/group. Returns 0,
 * -ENOENT (no such user or group name) or -EINVAL (malformed); on failure
 * *ret holds nothing to free. */
int users_resolve(const char *spec, struct user_spec *ret);

/* Release what *u owns. NULL-safe. */
void users_spec_free(struct user_spec *u);

/* In a child about to exec: setgroups, setgid, setuid (async-signal-safe:
 * the raw system calls, for a single-threaded process). Returns 0 or the
 * negative errno of the step that failed, with that step's name in *ret_what. */
int users_apply(const struct user_spec *u, const char **ret_what);
