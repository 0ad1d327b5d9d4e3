/* sandbox-agent: user and group lookup (users.h). */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "users.h"

#define USERS_GROUPS_MAX 65536 /* NGROUPS_MAX of Linux */

/* A decimal id: digits only, below (id_t)-1 (which means "no change"). */
static int parse_id(const char *s, unsigned *ret)
{
        unsigned long long n = 0;

        if (!*s)
                return -EINVAL;
        for (; *s; s++) {
                if (*s < '0' || *s > '9')
                        return -EINVAL;
                n = n * 10 + (unsigned)(*s - '0');
                if (n >= 0xffffffffULL)
                        return -EINVAL;
        }
        *ret = (unsigned)n;
        return 0;
}

/* The supplementary groups of user `name` with primary group gid. */
static int user_groups(const char *name, gid_t gid, struct user_spec *u)
{
        int n = 32;

        for (;;) {
                gid_t *g = realloc(u->groups, (size_t)n * sizeof(*g));
                int want = n;

                if (!g)
                        return -ENOMEM;
                u->groups = g;
                if (getgrouplist(name, gid, g, &want) >= 0) {
                        u->n_groups = (size_t)want;
                        return 0;
                }
                /* musl sets want to the real count when the array is short. */
                if (want <= n || want > USERS_GROUPS_MAX)
                        return -E2BIG;
                n = want;
        }
}

static int resolve_group(const char *s, gid_t *ret)
{
        unsigned id;
        struct group *gr;

        if (parse_id(s, &id) == 0) {
                *ret = id;
                return 0;
        }
        errno = 0;
        gr = getgrnam(s);
        if (!gr)
                return -ENOENT;
        *ret = gr->gr_gid;
        return 0;
}

int users_resolve(const char *spec, struct user_spec *ret)
{
        struct user_spec u = { 0 };
        char *user = strdup(spec), *group;
        struct passwd *pw;
        unsigned id;
        int r;

        if (!user)
                return -ENOMEM;
        group = strchr(user, ':');
        if (group)
                *group++ = '\0';
        if (!*user || (group && !*group)) {
                r = -EINVAL;
                goto out;
        }
        if (parse_id(user, &id) == 0) {
                pw = getpwuid(id);
                u.uid = id;
                u.gid = pw ? pw->pw_gid : id;
        } else {
                pw = getpwnam(user);
                if (!pw) {
                        r = -ENOENT;
                        goto out;
                }
                u.uid = pw->pw_uid;
                u.gid = pw->pw_gid;
        }
        if (pw && pw->pw_dir && *pw->pw_dir) {
                u.home = strdup(pw->pw_dir);
                if (!u.home) {
                        r = -ENOMEM;
                        goto out;
                }
        }
        /* getgrouplist below reuses musl's passwd buffer: copy what is needed. */
        if (pw) {
                char *name = strdup(pw->pw_name);
                gid_t primary = pw->pw_gid;

                r = name ? user_groups(name, primary, &u) : -ENOMEM;
                free(name);
                if (r < 0)
                        goto out;
        }
        if (group) {
                r = resolve_group(group, &u.gid);
                if (r < 0)
                        goto out;
        }
        r = 0;
out:
        free(user);
        if (r < 0)
                users_spec_free(&u);
        else
                *ret = u;
        return r;
}

void users_spec_free(struct user_spec *u)
{
        if (!u)
                return;
        free(u->groups);
        free(u->home);
        u->groups = NULL;
        u->home = NULL;
        u->n_groups = 0;
}

int users_apply(const struct user_spec *u, const char **ret_what)
{
        /* Not root (the agent as a plain process): only "stay who you are" works. */
        if (geteuid() != 0 && u->uid == geteuid() && u->gid == getegid())
                return 0;
        /* The system calls themselves: libc's setuid and the like take a
         * lock to change every thread, and this runs in a child sharing the
         * handler's memory (exec_spawn.c), which has one thread. */
        if (syscall(SYS_setgroups, u->n_groups, u->groups) < 0) {
                *ret_what = "setgroups";
                return -errno;
        }
        if (syscall(SYS_setgid, u->gid) < 0) {
                *ret_what = "setgid";
                return -errno;
        }
        if (syscall(SYS_setuid, u->uid) < 0) {
                *ret_what = "setuid";
                return -errno;
        }
        return 0;
}
