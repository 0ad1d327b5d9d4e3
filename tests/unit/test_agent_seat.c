/* Unit tests for agent/seat.c (a seat's private temporary directory), on
 * real directories under a temporary parent: what is made and with which
 * owner and mode; what a seat could have planted before the agent made
 * .seats (a link to its own directory, a file, a directory of its own with
 * a link inside) is replaced without anything being made or changed where
 * it points; modes put back; a parent that anyone could rename things in
 * refused with nothing made. Owners other than our own need root (chown):
 * those cases are skipped otherwise. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "seat.h"

#define SEAT_UID 12345
#define SEAT_GID 12346
#define OTHER_UID 23456

struct dirs {
        char parent[64];  /* where .seats goes (sticky, ours) */
        char outside[64]; /* a directory "another seat" owns */
        char seats[96], seat[128], path[PATH_MAX];
};

static int setup(void **state)
{
        struct dirs *d = calloc(1, sizeof(*d));

        assert_non_null(d);
        snprintf(d->parent, sizeof(d->parent), "/tmp/seat-test-XXXXXX");
        snprintf(d->outside, sizeof(d->outside), "/tmp/seat-out-XXXXXX");
        assert_non_null(mkdtemp(d->parent));
        assert_non_null(mkdtemp(d->outside));
        assert_int_equal(chmod(d->parent, 01777), 0);
        snprintf(d->seats, sizeof(d->seats), "%s/.seats", d->parent);
        snprintf(d->seat, sizeof(d->seat), "%s/%d", d->seats, SEAT_UID);
        *state = d;
        return 0;
}

static int teardown(void **state)
{
        struct dirs *d = *state;
        char cmd[256];

        snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s'", d->parent, d->outside);
        assert_int_equal(system(cmd), 0);
        free(d);
        return 0;
}

static bool root(void)
{
        return geteuid() == 0;
}

static int prepare(struct dirs *d, uid_t uid, gid_t gid)
{
        const char *what = NULL;
        int r = seat_tmp_prepare(d->parent, uid, gid, d->path, sizeof(d->path), &what);

        if (r < 0)
                assert_non_null(what);
        return r;
}

/* path is a directory (not a link) of uid:gid with mode. */
static void assert_dir(const char *path, uid_t uid, gid_t gid, mode_t mode)
{
        struct stat st;

        assert_int_equal(lstat(path, &st), 0);
        assert_true(S_ISDIR(st.st_mode));
        assert_int_equal(st.st_uid, uid);
        assert_int_equal(st.st_gid, gid);
        assert_int_equal(st.st_mode & 07777, mode);
}

/* Nothing was made in dir (an attacker's): it is still empty. */
static void assert_empty(const char *dir)
{
        char cmd[160];

        snprintf(cmd, sizeof(cmd), "[ -z \"$(ls -A '%s')\" ]", dir);
        assert_int_equal(system(cmd), 0);
}

static void test_fresh_and_again(void **state)
{
        struct dirs *d = *state;
        uid_t uid = root() ? SEAT_UID : geteuid();
        gid_t gid = root() ? SEAT_GID : getegid();
        char want[PATH_MAX + 16];

        assert_int_equal(prepare(d, uid, gid), 0);
        snprintf(want, sizeof(want), "%s/.seats/%u", d->parent, (unsigned)uid);
        assert_string_equal(d->path, want);
        assert_dir(d->seats, geteuid(), getegid(), 0711);
        assert_dir(d->path, uid, gid, 0700);
        /* the seat opened its own up: closed again; a file in it stays */
        assert_int_equal(chmod(d->path, 0777), 0);
        snprintf(want, sizeof(want), "%s/kept", d->path);
        assert_int_equal(close(open(want, O_CREAT | O_WRONLY, 0600)), 0);
        assert_int_equal(prepare(d, uid, gid), 0);
        assert_dir(d->path, uid, gid, 0700);
        assert_int_equal(access(want, F_OK), 0);
        /* .seats with a mode of someone's choosing (only we can have made it) */
        assert_int_equal(chmod(d->seats, 0777), 0);
        assert_int_equal(prepare(d, uid, gid), 0);
        assert_dir(d->seats, geteuid(), getegid(), 0711);
}

/* A link planted as .seats, to a directory its planter reads: the link
 * goes, nothing is made where it pointed. */
static void test_planted_link(void **state)
{
        struct dirs *d = *state;

        assert_int_equal(symlink(d->outside, d->seats), 0);
        assert_int_equal(prepare(d, geteuid(), getegid()), 0);
        assert_dir(d->seats, geteuid(), getegid(), 0711);
        assert_empty(d->outside);
        /* a dangling link, and a plain file, the same */
        assert_int_equal(rmdir(d->path), 0);
        assert_int_equal(rmdir(d->seats), 0);
        assert_int_equal(symlink("/nonexistent/x", d->seats), 0);
        assert_int_equal(prepare(d, geteuid(), getegid()), 0);
        assert_dir(d->seats, geteuid(), getegid(), 0711);
        assert_int_equal(rmdir(d->path), 0);
        assert_int_equal(rmdir(d->seats), 0);
        assert_int_equal(close(open(d->seats, O_CREAT | O_WRONLY, 0644)), 0);
        assert_int_equal(prepare(d, geteuid(), getegid()), 0);
        assert_dir(d->seats, geteuid(), getegid(), 0711);
}

/* A directory another user made as .seats, with a link inside where the
 * seat's directory goes: set aside untouched, a new .seats made. */
static void test_planted_dir(void **state)
{
        struct dirs *d = *state;
        char link[160], aside[160], target[PATH_MAX];
        struct stat st;
        ssize_t n;

        if (!root())
                skip();
        assert_int_equal(mkdir(d->seats, 0777), 0);
        assert_int_equal(chmod(d->seats, 0777), 0);
        snprintf(link, sizeof(link), "%s/%d", d->seats, SEAT_UID);
        assert_int_equal(symlink(d->outside, link), 0);
        assert_int_equal(lchown(link, OTHER_UID, OTHER_UID), 0);
        assert_int_equal(chown(d->seats, OTHER_UID, OTHER_UID), 0);
        assert_int_equal(lstat(d->seats, &st), 0);
        assert_int_equal(prepare(d, SEAT_UID, SEAT_GID), 0);
        assert_dir(d->seats, 0, getegid(), 0711);
        assert_dir(d->path, SEAT_UID, SEAT_GID, 0700);
        assert_empty(d->outside);
        /* the planter's directory, aside, as it was */
        snprintf(aside, sizeof(aside), "%s/.seats.planted.%llu/%d", d->parent,
                 (unsigned long long)st.st_ino, SEAT_UID);
        n = readlink(aside, target, sizeof(target) - 1);
        assert_true(n > 0);
        target[n] = '\0';
        assert_string_equal(target, d->outside);
        /* a directory of ours writable by others is only chmod'ed: only we
         * can have made it */
        assert_int_equal(chmod(d->seats, 0777), 0);
        assert_int_equal(prepare(d, SEAT_UID, SEAT_GID), 0);
        assert_dir(d->seats, 0, getegid(), 0711);
        assert_dir(d->path, SEAT_UID, SEAT_GID, 0700);
}

/* Inside .seats only we make names; a link there (the sandbox's root made
 * it) is replaced by the directory, never followed. */
static void test_link_inside(void **state)
{
        struct dirs *d = *state;

        assert_int_equal(prepare(d, geteuid(), getegid()), 0);
        assert_int_equal(rmdir(d->path), 0);
        assert_int_equal(symlink(d->outside, d->path), 0);
        assert_int_equal(prepare(d, geteuid(), getegid()), 0);
        assert_dir(d->path, geteuid(), getegid(), 0700);
        assert_empty(d->outside);
}

/* A parent anyone can rename things in, or not a directory of ours:
 * refused, nothing made. */
static void test_parent_refused(void **state)
{
        struct dirs *d = *state;
        char link[96];

        assert_int_equal(chmod(d->parent, 0777), 0);
        assert_int_equal(prepare(d, geteuid(), getegid()), -EPERM);
        assert_int_equal(access(d->seats, F_OK), -1);
        assert_int_equal(chmod(d->parent, 0755), 0);
        assert_int_equal(prepare(d, geteuid(), getegid()), 0);
        assert_int_equal(rmdir(d->path), 0);
        assert_int_equal(rmdir(d->seats), 0);
        if (root()) {
                assert_int_equal(chmod(d->parent, 01777), 0);
                assert_int_equal(chown(d->parent, OTHER_UID, OTHER_UID), 0);
                assert_int_equal(prepare(d, SEAT_UID, SEAT_GID), -EPERM);
                assert_int_equal(access(d->seats, F_OK), -1);
                assert_int_equal(chown(d->parent, 0, 0), 0);
        }
        /* the parent itself a link: not followed */
        snprintf(link, sizeof(link), "%s/lnk", d->outside);
        assert_int_equal(symlink(d->parent, link), 0);
        {
                char path[PATH_MAX];
                const char *what = NULL;

                int r = seat_tmp_prepare(link, geteuid(), getegid(), path, sizeof(path), &what);

                /* O_DIRECTORY|O_NOFOLLOW on a link: ENOTDIR (ELOOP elsewhere) */
                assert_true(r == -ENOTDIR || r == -ELOOP);
                assert_non_null(what);
                assert_int_equal(seat_tmp_prepare(d->parent, geteuid(), getegid(), path, 10, &what),
                                 -ENAMETOOLONG);
        }
        assert_int_equal(access(d->seats, F_OK), -1);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_fresh_and_again, setup, teardown),
                cmocka_unit_test_setup_teardown(test_planted_link, setup, teardown),
                cmocka_unit_test_setup_teardown(test_planted_dir, setup, teardown),
                cmocka_unit_test_setup_teardown(test_link_inside, setup, teardown),
                cmocka_unit_test_setup_teardown(test_parent_refused, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
