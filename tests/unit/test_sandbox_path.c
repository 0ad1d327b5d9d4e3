/* Unit tests for lib/sandbox/sandbox_path.c: a client's path inside a
 * sandbox, normalised and (for shared sandboxes) confined to the lease's
 * workdir before any call reaches the sandbox. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sandbox/sandbox_path.h"

static char out[SANDBOX_PATH_MAX];
static char why[128];

static int resolve(const char *workdir, const char *path, bool confine)
{
        why[0] = '\0';
        memset(out, 0x5a, sizeof(out));
        return sandbox_path_resolve(workdir, path, confine, out, sizeof(out), why);
}

static void expect(const char *workdir, const char *path, bool confine, const char *want)
{
        int r = resolve(workdir, path, confine);

        if (r != 0)
                fail_msg("'%s' in '%s': %d (%s)", path, workdir, r, why);
        assert_string_equal(out, want);
}

static void expect_refused(const char *workdir, const char *path, bool confine, const char *reason)
{
        assert_int_equal(resolve(workdir, path, confine), -EINVAL);
        assert_non_null(strstr(why, reason));
}

static void test_normalise(void **state)
{
        (void)state;
        expect("/workspace", "a.txt", false, "/workspace/a.txt");
        expect("/workspace", "/etc/hostname", false, "/etc/hostname");
        expect("/workspace", "a//b///c", false, "/workspace/a/b/c");
        expect("/workspace", "./a/./b/.", false, "/workspace/a/b");
        expect("/workspace", "dir/", false, "/workspace/dir");
        expect("/workspace", "/", false, "/");
        expect("/workspace", "//", false, "/");
        expect("/workspace", ".", false, "/workspace");
        expect("/workspace", "/.", false, "/");
        expect("/", "tmp", false, "/tmp");
        /* "..." and ".x" are names, not dot segments */
        expect("/w", ".../.x/..y", false, "/w/.../.x/..y");
        /* bytes pass as they are: the sandbox's file system judges them */
        expect("/w", "sp ace/\xc3\xa9/\x01", false, "/w/sp ace/\xc3\xa9/\x01");
}

static void test_dot_dot_refused(void **state)
{
        (void)state;
        expect_refused("/workspace", "..", false, "'..'");
        expect_refused("/workspace", "../etc/passwd", false, "'..'");
        expect_refused("/workspace", "a/../../b", false, "'..'");
        expect_refused("/workspace", "/etc/..", false, "'..'");
        expect_refused("/workspace", "a/..", true, "'..'");
        /* a ".." inside the workdir counts too: nothing walks up */
        expect_refused("/workspace/../etc", "x", false, "'..'");
}

static void test_confine(void **state)
{
        (void)state;
        expect("/workspace/s1", "notes", true, "/workspace/s1/notes");
        expect("/workspace/s1", "/workspace/s1", true, "/workspace/s1");
        expect("/workspace/s1", "/workspace/s1/", true, "/workspace/s1");
        expect("/workspace/s1", "/workspace//s1/./x", true, "/workspace/s1/x");
        expect_refused("/workspace/s1", "/workspace/s2/x", true, "inside /workspace/s1");
        /* a sibling sharing the prefix is not inside */
        expect_refused("/workspace/s1", "/workspace/s10/x", true, "inside");
        expect_refused("/workspace/s1", "/workspace", true, "inside");
        expect_refused("/home/sbu1", "/home/sbu2/.ssh", true, "inside");
        expect_refused("/home/sbu1", "/", true, "inside");
        /* unconfined, the same paths are fine */
        expect("/workspace/s1", "/workspace/s2/x", false, "/workspace/s2/x");
        /* a workdir written with a trailing '/', or the root itself */
        expect("/workspace/s1/", "x", true, "/workspace/s1/x");
        expect_refused("/workspace/s1/", "/workspace/s10", true, "inside");
        expect("/", "/etc", true, "/etc");
}

static void test_lengths(void **state)
{
        char *p = malloc(SANDBOX_PATH_MAX + 2);
        char name[SANDBOX_NAME_MAX + 2];

        (void)state;
        assert_non_null(p);
        expect_refused("/w", "", false, "1 to 4095");
        /* 4095 bytes are allowed (absolute, in components of 200) */
        for (size_t i = 0; i < SANDBOX_PATH_MAX - 1; i++)
                p[i] = i % 201 == 0 ? '/' : 'a';
        p[SANDBOX_PATH_MAX - 1] = '\0';
        assert_int_equal(sandbox_path_check_lengths(p, NULL), 0);
        assert_int_equal(resolve("/w", p, false), 0);
        assert_int_equal(strlen(out), SANDBOX_PATH_MAX - 1);
        /* 4096 are not */
        p[SANDBOX_PATH_MAX - 1] = 'a';
        p[SANDBOX_PATH_MAX] = '\0';
        assert_int_equal(sandbox_path_check_lengths(p, why), -ENAMETOOLONG);
        assert_non_null(strstr(why, "PATH_MAX"));
        expect_refused("/w", p, false, "1 to 4095");
        /* a relative path that grows past the buffer once joined */
        p[SANDBOX_PATH_MAX - 10] = '\0';
        memset(p, 'b', 1);
        assert_int_equal(resolve("/a-long-workdir", p, false), -EINVAL);
        assert_non_null(strstr(why, "too long"));
        free(p);

        /* one component: 255 bytes (NAME_MAX) pass, 256 do not */
        memset(name, 'n', SANDBOX_NAME_MAX);
        name[SANDBOX_NAME_MAX] = '\0';
        assert_int_equal(sandbox_path_check_lengths(name, NULL), 0);
        expect("/w", name, false, out); /* resolves */
        name[SANDBOX_NAME_MAX] = 'n';
        name[SANDBOX_NAME_MAX + 1] = '\0';
        assert_int_equal(sandbox_path_check_lengths(name, why), -ENAMETOOLONG);
        assert_non_null(strstr(why, "NAME_MAX"));
        assert_int_equal(sandbox_path_check_lengths(name, NULL), -ENAMETOOLONG); /* why optional */
        expect_refused("/w", name, false, "NAME_MAX");
}

static void test_small_output(void **state)
{
        char small[8];

        (void)state;
        assert_int_equal(sandbox_path_resolve("/w", "abc", false, small, sizeof(small), why), 0);
        assert_string_equal(small, "/w/abc");
        assert_int_equal(sandbox_path_resolve("/w", "abcd", false, small, sizeof(small), why), 0); /* 7 + NUL */
        assert_int_equal(sandbox_path_resolve("/w", "abcde", false, small, sizeof(small), why), -EINVAL);
        assert_int_equal(sandbox_path_resolve("/w", "/", false, small, 2, why), 0);
        assert_string_equal(small, "/");
        assert_int_equal(sandbox_path_resolve("/w", "/", false, small, 1, why), -EINVAL);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_normalise),       cmocka_unit_test(test_dot_dot_refused),
                cmocka_unit_test(test_confine),         cmocka_unit_test(test_lengths),
                cmocka_unit_test(test_small_output),
        };
        return cmocka_run_group_tests_name("sandbox_path", tests, NULL, NULL);
}
