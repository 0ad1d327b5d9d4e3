/* Unit tests for the shell programs of fcgi/scripts/, as embedded by
 * scripts/embed-sh (the generated execd_scripts.c is compiled in): each is
 * run for real, as the handlers run it in a sandbox (`sh -c PROGRAM sh
 * ARGS...`), on files in a fresh temporary directory, and its output and
 * exit code (execd_scripts.h) checked. The programs that keep state in the
 * sandbox's fixed /tmp/.sb-cmd and /tmp/.sb-session are only asked about
 * ids that do not exist here (they would write in the host's /tmp); the
 * integration tests (test_execd*.py) run every program in real sandboxes. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "execd_scripts.h"

static char dir[64];
static char out[8192];

/* Runs `sh -c prog sh args...` with `in` on stdin (NULL: /dev/null);
 * stdout into out (NUL-terminated), stderr dropped. The exit code. */
static int run_in(const char *prog, const char *in, const char *const *args)
{
        const char *argv[32] = { "sh", "-c", prog, "sh" };
        int n = 4, inp[2], outp[2], st;

        for (; args && *args; args++)
                argv[n++] = *args;
        argv[n] = NULL;
        assert_int_equal(pipe(inp), 0);
        assert_int_equal(pipe(outp), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                int devnull = open("/dev/null", O_WRONLY);

                dup2(inp[0], 0);
                dup2(outp[1], 1);
                dup2(devnull, 2);
                close(inp[1]);
                close(outp[0]);
                if (chdir(dir) < 0)
                        _exit(127);
                execv("/bin/sh", (char *const *)argv);
                _exit(127);
        }
        close(inp[0]);
        close(outp[1]);
        if (in)
                assert_int_equal(write(inp[1], in, strlen(in)), (ssize_t)strlen(in));
        close(inp[1]);
        size_t len = 0;
        ssize_t r;
        while ((r = read(outp[0], out + len, sizeof(out) - 1 - len)) > 0)
                len += (size_t)r;
        out[len] = '\0';
        close(outp[0]);
        assert_int_equal(waitpid(pid, &st, 0), pid);
        assert_true(WIFEXITED(st));
        return WEXITSTATUS(st);
}

#define RUN(prog, in, ...) run_in(prog, in, (const char *const[]){ __VA_ARGS__, NULL })

static void put(const char *name, const char *text)
{
        char p[128];
        FILE *f;

        snprintf(p, sizeof(p), "%s/%s", dir, name);
        f = fopen(p, "w");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
}

static char *path(const char *name)
{
        static char p[4][128];
        static int i;

        i = (i + 1) % 4;
        snprintf(p[i], sizeof(p[i]), "%s/%s", dir, name);
        return p[i];
}

static int setup(void **state)
{
        (void)state;
        strcpy(dir, "/tmp/test_execd_scripts.XXXXXX");
        assert_non_null(mkdtemp(dir));
        return 0;
}

static int teardown(void **state)
{
        (void)state;
        const char *rm[] = { dir, NULL };
        return run_in(EXECD_SH_RM_DIRS, NULL, rm);
}

/* The programs name the directories of execd_scripts.h; no comment line of
 * a .sh file is embedded (a "#" starting a line, after blanks). */
static void test_embedded(void **state)
{
        (void)state;
        assert_non_null(strstr(EXECD_SH_RUN, "D=" EXECD_CMD_DIR ";"));
        assert_non_null(strstr(EXECD_SH_BG_PRECHECK, "D=" EXECD_CMD_DIR ";"));
        assert_non_null(strstr(EXECD_SH_STATUS, "f=" EXECD_CMD_DIR "/$1\n"));
        assert_non_null(strstr(EXECD_SH_SESSION_CREATE, "D=" EXECD_SESSION_DIR ";"));
        assert_non_null(strstr(EXECD_SH_SESSION_DELETE, "d=" EXECD_SESSION_DIR "/$1;"));
        assert_non_null(strstr(EXECD_SH_CODE, "r=" EXECD_CODE_RUNNER "\n"));
        assert_int_equal(strncmp(EXECD_SH_RUN, "now() {", 7), 0);
        assert_null(strstr(EXECD_SH_RUN, "\n#"));
        assert_null(strstr(EXECD_SH_RUN, "shellcheck"));
        assert_null(strstr(EXECD_SH_METRICS, "\n#"));
        assert_int_equal(EXECD_SH_CAN_READ[strlen(EXECD_SH_CAN_READ) - 1], '\n');
}

static void test_files(void **state)
{
        (void)state;
        /* write: parents made, mode set; a directory is refused */
        assert_int_equal(RUN(EXECD_SH_WRITE, "hello\n", path("a/b/f"), "600", ""), 0);
        struct stat st;
        assert_int_equal(stat(path("a/b/f"), &st), 0);
        assert_int_equal(st.st_mode & 0777, 0600);
        assert_int_equal(RUN(EXECD_SH_WRITE, "x", path("a"), "", ""), EXECD_X_IS_DIR);

        /* info: one line a path, "-" for a missing one */
        assert_int_equal(RUN(EXECD_SH_INFO, NULL, path("a/b/f"), path("nope")), 0);
        assert_non_null(strstr(out, "|6|"));
        assert_non_null(strstr(out, "|600\n-\n"));

        /* read and lines */
        put("l", "one\ntwo\r\nthree\n");
        assert_int_equal(RUN(EXECD_SH_READ, NULL, path("l"), "4", "3"), 0);
        assert_string_equal(out, "two");
        assert_int_equal(RUN(EXECD_SH_READ, NULL, path("l"), "0", "-1"), 0);
        assert_string_equal(out, "one\ntwo\r\nthree\n");
        assert_int_equal(RUN(EXECD_SH_LINES, NULL, path("l"), "2", "0"), 0);
        assert_string_equal(out, "two\r\nthree");
        assert_int_equal(RUN(EXECD_SH_LINES, NULL, path("l"), "1", "1"), 0);
        assert_string_equal(out, "one");
        assert_int_not_equal(RUN(EXECD_SH_LINES, NULL, path("nope"), "1", "0"), 0);
        assert_int_equal(RUN(EXECD_SH_CAN_READ, NULL, path("l")), 0);
        assert_int_not_equal(RUN(EXECD_SH_CAN_READ, NULL, path("nope")), 0);

        /* mkdir over a file; rm of the wrong kind */
        assert_int_equal(RUN(EXECD_SH_MKDIR, NULL, path("l"), "", ""), EXECD_X_NOT_DIR);
        assert_int_equal(RUN(EXECD_SH_MKDIR, NULL, path("d/e"), "700", ""), 0);
        assert_int_equal(RUN(EXECD_SH_RM_FILES, NULL, path("nope"), path("d")), EXECD_X_IS_DIR);
        assert_int_equal(RUN(EXECD_SH_RM_DIRS, NULL, path("l")), EXECD_X_NOT_DIR);
        assert_int_equal(RUN(EXECD_SH_RM_DIRS, NULL, path("d")), 0);
        assert_int_not_equal(access(path("d"), F_OK), 0);
}

static void test_fs(void **state)
{
        (void)state;
        put("s", "1");
        put("t", "2");
        /* mv: the failing item's index on stdout, the destination never replaced */
        assert_int_equal(RUN(EXECD_SH_MV, NULL, path("s"), path("m/s2"), path("t"), path("m/s2")),
                         EXECD_X_EXISTS);
        assert_string_equal(out, "1\n");
        assert_int_equal(access(path("m/s2"), F_OK), 0);
        assert_int_equal(access(path("t"), F_OK), 0);
        assert_int_equal(RUN(EXECD_SH_MV, NULL, path("nope"), path("x")), EXECD_X_NOT_FOUND);
        assert_string_equal(out, "0\n");
        assert_int_equal(RUN(EXECD_SH_CHMOD, NULL, path("t"), "640", "", path("nope"), "", ""),
                         EXECD_X_NOT_FOUND);
        assert_string_equal(out, "1\n");

        /* search and list: names relative to the root; a file or a link refused */
        assert_int_equal(RUN(EXECD_SH_SEARCH, NULL, dir, "s*", "10"), 0);
        assert_non_null(strstr(out, "|./m/s2\n"));
        assert_null(strstr(out, "|./t\n"));
        assert_int_equal(RUN(EXECD_SH_SEARCH, NULL, path("t"), "*", "10"), EXECD_X_NOT_DIR);
        assert_int_equal(RUN(EXECD_SH_SEARCH, NULL, path("nope"), "*", "10"), EXECD_X_NOT_FOUND);
        assert_int_equal(symlink(dir, path("link")), 0);
        assert_int_equal(RUN(EXECD_SH_LIST, NULL, path("link"), "1", "10"), EXECD_X_SYMLINK);
        assert_int_equal(RUN(EXECD_SH_LIST, NULL, dir, "1", "10"), 0);
        assert_non_null(strstr(out, "|./t\n"));
        assert_null(strstr(out, "|./m/s2\n"));

        /* replace: read with its size and mtime, write back only if unchanged */
        assert_int_equal(RUN(EXECD_SH_REPLACE_READ, NULL, path("t"), "0"), EXECD_X_TOO_BIG);
        assert_int_equal(RUN(EXECD_SH_REPLACE_READ, NULL, path("m"), "10"), EXECD_X_IS_DIR);
        assert_int_equal(RUN(EXECD_SH_REPLACE_READ, NULL, path("t"), "10"), 0);
        unsigned long size, mtime;
        assert_int_equal(sscanf(out, "%lu %lu\n", &size, &mtime), 2);
        assert_int_equal(size, 1);
        assert_string_equal(strchr(out, '\n') + 1, "2");
        char sz[32], mt[32];
        snprintf(sz, sizeof(sz), "%lu", size);
        snprintf(mt, sizeof(mt), "%lu", mtime);
        assert_int_equal(RUN(EXECD_SH_REPLACE_WRITE, "22", path("t"), "9", mt), EXECD_X_EXISTS);
        assert_int_equal(RUN(EXECD_SH_REPLACE_WRITE, "22", path("t"), sz, mt), 0);
        assert_int_equal(RUN(EXECD_SH_READ, NULL, path("t"), "0", "-1"), 0);
        assert_string_equal(out, "22");
}

/* Asked about ids that do not exist: the "not found" answers, nothing made. */
static void test_unknown_ids(void **state)
{
        (void)state;
        char id[64];

        snprintf(id, sizeof(id), "test-execd-scripts-%ld", (long)getpid());
        assert_int_equal(RUN(EXECD_SH_STATUS, NULL, id), EXECD_X_NOT_FOUND);
        assert_int_equal(RUN(EXECD_SH_LOGS, NULL, id, "0"), EXECD_X_NOT_FOUND);
        assert_int_equal(RUN(EXECD_SH_INTERRUPT, NULL, id, "0"), EXECD_X_NOT_FOUND);
        assert_int_equal(RUN(EXECD_SH_SESSION_DELETE, NULL, id), EXECD_X_NOT_FOUND);
        if (access(EXECD_CODE_RUNNER, X_OK) != 0)
                assert_int_equal(RUN(EXECD_SH_CODE, NULL, "run"), EXECD_X_NO_INTERPRETER);
}

/* A session's shell and body, run directly: the command runs in the body's
 * shell (cd and export stay) and both are saved into the session dir. */
static void test_session_body(void **state)
{
        (void)state;
        assert_int_equal(mkdir(path("sess"), 0700), 0);
        put("sess/cwd", "/\n");
        put("sess/env", "");
        assert_int_equal(RUN(EXECD_SH_SESSION_SHELL, NULL, EXECD_SH_SESSION_BODY, path("sess"), "",
                             "cd /tmp; export SB_T=1; echo $PWD; exit 3"),
                         3);
        assert_string_equal(out, "/tmp\n");
        assert_int_equal(RUN(EXECD_SH_READ, NULL, path("sess/cwd"), "0", "-1"), 0);
        assert_string_equal(out, "/tmp\n");
        assert_int_equal(RUN(EXECD_SH_SESSION_SHELL, NULL, EXECD_SH_SESSION_BODY, path("sess"), "",
                             "echo \"$SB_T $PWD\""),
                         0);
        assert_string_equal(out, "1 /tmp\n");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_embedded),
                cmocka_unit_test_setup_teardown(test_files, setup, teardown),
                cmocka_unit_test_setup_teardown(test_fs, setup, teardown),
                cmocka_unit_test_setup_teardown(test_unknown_ids, setup, teardown),
                cmocka_unit_test_setup_teardown(test_session_body, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
