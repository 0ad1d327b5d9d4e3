/* Unit tests for agent/envfile.c (the env file of the SDK's set_env, read
 * by sandbox-agent): the three forms the SDK and people write, what is
 * skipped (bad keys, NULs, unterminated quotes, comments) and where the next
 * entry starts then, the last entry of a key winning, the cap on keys
 * keeping the newest, and envfile_load's refusals (a link, a FIFO, a
 * directory) and its tail of an oversized file. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "envfile.h"

/* The value of key in e, or NULL. */
static const char *get(const struct envfile *e, const char *key)
{
        size_t k = strlen(key);

        for (size_t i = 0; i < e->n; i++)
                if (strncmp(e->vars[i], key, k) == 0 && e->vars[i][k] == '=')
                        return e->vars[i] + k + 1;
        return NULL;
}

static void parse(const char *s, size_t len, struct envfile *e)
{
        assert_int_equal(envfile_parse(s, len, e), 0);
}

static void test_forms(void **state)
{
        static const char f[] = "PLAIN=a b=c 'q' \"d\"\n"
                                "SQ='x\ny $Z'\n"
                                "DQ=\"it's \\\\ \\\"t\\\"\\t\\n\\r \\z $HOME\"\n"
                                "EMPTY=\n"
                                "ESQ=''\n"
                                "_k9='last line, no newline'";
        struct envfile e;

        (void)state;
        parse(f, sizeof(f) - 1, &e);
        assert_int_equal(e.n, 6);
        assert_string_equal(get(&e, "PLAIN"), "a b=c 'q' \"d\"");
        assert_string_equal(get(&e, "SQ"), "x\ny $Z");
        assert_string_equal(get(&e, "DQ"), "it's \\ \"t\"\t\n\r \\z $HOME");
        assert_string_equal(get(&e, "EMPTY"), "");
        assert_string_equal(get(&e, "ESQ"), "");
        assert_string_equal(get(&e, "_k9"), "last line, no newline");
        envfile_free(&e);
}

static void test_skipped_lines(void **state)
{
        static const char f[] = "# comment\n\n"
                                "1BAD=x\nBAD-KEY=x\n=x\nNOEQ\n export E=x\n"
                                "UNTERM='abc\nA=1\n"
                                "TRAIL='abc' junk\nB=2\n"
                                "DQNL=\"abc\nC=3\n"
                                "DQJ=\"abc\"x\nD=4\n"
                                "NUL=a\0b\nE=5\n"
                                "SQNUL='a\0b'\nF=6\n"
                                "BS=\"abc\\\n";
        struct envfile e;

        (void)state;
        parse(f, sizeof(f) - 1, &e);
        assert_int_equal(e.n, 6);
        assert_string_equal(get(&e, "A"), "1");
        assert_string_equal(get(&e, "B"), "2");
        assert_string_equal(get(&e, "C"), "3");
        assert_string_equal(get(&e, "D"), "4");
        assert_string_equal(get(&e, "E"), "5");
        assert_string_equal(get(&e, "F"), "6");
        envfile_free(&e);
}

static void test_quote_spanning_into_next_entries(void **state)
{
        /* the quote closes on a later line but not at its end: the entry is
         * skipped and parsing resumes on the line after its first one */
        static const char f[] = "A='x\nB=2\nC='y'\n";
        struct envfile e;

        (void)state;
        parse(f, sizeof(f) - 1, &e);
        assert_null(get(&e, "A"));
        assert_string_equal(get(&e, "B"), "2");
        assert_string_equal(get(&e, "C"), "y");
        envfile_free(&e);
}

static void test_last_wins_and_key_cap(void **state)
{
        size_t n = ENVFILE_MAX_VARS + 500, len = 0;
        char *f = malloc(n * 16 + 64);
        struct envfile e;

        (void)state;
        assert_non_null(f);
        len += (size_t)sprintf(f + len, "K=old\n");
        for (size_t i = 0; i < n; i++)
                len += (size_t)sprintf(f + len, "V%zu=%zu\n", i, i);
        len += (size_t)sprintf(f + len, "K=new\n");
        parse(f, len, &e);
        assert_int_equal(e.n, ENVFILE_MAX_VARS);
        assert_string_equal(get(&e, "K"), "new");
        /* the newest keys are kept, the oldest dropped */
        assert_string_equal(get(&e, "V1523"), "1523");
        assert_null(get(&e, "V0"));
        envfile_free(&e);
        free(f);
}

static void test_long_key(void **state)
{
        char f[ENVFILE_KEY_MAX + 32];
        struct envfile e;

        (void)state;
        memset(f, 'A', ENVFILE_KEY_MAX + 1);
        memcpy(f + ENVFILE_KEY_MAX + 1, "=1\nB=2\n", 7);
        parse(f, ENVFILE_KEY_MAX + 8, &e);
        assert_int_equal(e.n, 1);
        assert_string_equal(get(&e, "B"), "2");
        envfile_free(&e);
        memset(f, 'A', ENVFILE_KEY_MAX);
        memcpy(f + ENVFILE_KEY_MAX, "=1\n", 3);
        parse(f, ENVFILE_KEY_MAX + 3, &e);
        assert_int_equal(e.n, 1);
        envfile_free(&e);
}

static char dir[] = "/tmp/test-envfile-XXXXXX";

static void path_of(char *buf, size_t size, const char *name)
{
        snprintf(buf, size, "%s/%s", dir, name);
}

static void write_file(const char *path, const char *data, size_t len)
{
        FILE *f = fopen(path, "we");

        assert_non_null(f);
        assert_int_equal(fwrite(data, 1, len, f), len);
        assert_int_equal(fclose(f), 0);
}

static void test_load_refusals(void **state)
{
        char file[256], link[256], fifo[256], sub[256];
        struct envfile e;

        (void)state;
        assert_non_null(mkdtemp(dir));
        path_of(file, sizeof(file), "env");
        path_of(link, sizeof(link), "link");
        path_of(fifo, sizeof(fifo), "fifo");
        path_of(sub, sizeof(sub), "dir");
        write_file(file, "A=1\n", 4);
        assert_int_equal(symlink(file, link), 0);
        assert_int_equal(mkfifo(fifo, 0600), 0);
        assert_int_equal(mkdir(sub, 0700), 0);

        assert_int_equal(envfile_load(file, &e), 0);
        assert_string_equal(get(&e, "A"), "1");
        envfile_free(&e);
        /* none of these is read (a FIFO would block) */
        const char *none[] = { link, fifo, sub, "/nonexistent/env" };
        for (size_t i = 0; i < 4; i++) {
                assert_int_equal(envfile_load(none[i], &e), 0);
                assert_int_equal(e.n, 0);
                envfile_free(&e);
        }
        (void)unlink(link);
        (void)unlink(fifo);
        (void)rmdir(sub);
        (void)unlink(file);
        (void)rmdir(dir);
}

static void test_load_keeps_the_tail(void **state)
{
        char d[] = "/tmp/test-envfile-XXXXXX", path[64];
        size_t len = 0, max = ENVFILE_MAX_BYTES * 2 + 64;
        char *f = malloc(max);
        struct envfile e;

        (void)state;
        assert_non_null(f);
        assert_non_null(mkdtemp(d));
        snprintf(path, sizeof(path), "%s/env", d);
        len += (size_t)sprintf(f + len, "FIRST=1\n");
        while (len < (size_t)ENVFILE_MAX_BYTES * 2 - 32)
                len += (size_t)sprintf(f + len, "X=%08zu\n", len);
        len += (size_t)sprintf(f + len, "LAST=ok\n");
        write_file(path, f, len);
        assert_int_equal(envfile_load(path, &e), 0);
        assert_null(get(&e, "FIRST"));
        assert_string_equal(get(&e, "LAST"), "ok");
        assert_non_null(get(&e, "X"));
        envfile_free(&e);
        (void)unlink(path);
        (void)rmdir(d);
        free(f);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_forms),
                cmocka_unit_test(test_skipped_lines),
                cmocka_unit_test(test_quote_spanning_into_next_entries),
                cmocka_unit_test(test_last_wins_and_key_cap),
                cmocka_unit_test(test_long_key),
                cmocka_unit_test(test_load_refusals),
                cmocka_unit_test(test_load_keeps_the_tail),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
