/* Unit tests for agent/plainsh.c (sandbox-agent runs an execd command
 * without bash when its text is plain words): what is split and how, and
 * that every piece of shell syntax, reserved word, assignment and builtin
 * (but true/false alone and echo without options) is left to the shell,
 * with the text unchanged. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "plainsh.h"

static size_t split(const char *in, char *buf, size_t size, char **argv)
{
        snprintf(buf, size, "%s", in);
        return plainsh_split(buf, argv, PLAINSH_MAX_WORDS + 1);
}

static void test_plain(void **state)
{
        char buf[256], *argv[PLAINSH_MAX_WORDS + 1];

        (void)state;
        assert_int_equal(split("true", buf, sizeof(buf), argv), 1);
        assert_string_equal(argv[0], "true");
        assert_null(argv[1]);
        assert_int_equal(split("  ls\t-l  /tmp/a.b_c ", buf, sizeof(buf), argv), 3);
        assert_string_equal(argv[0], "ls");
        assert_string_equal(argv[1], "-l");
        assert_string_equal(argv[2], "/tmp/a.b_c");
        assert_null(argv[3]);
        assert_int_equal(split("dd if=/dev/zero count=1 bs=1k", buf, sizeof(buf), argv), 4);
        assert_string_equal(argv[1], "if=/dev/zero");
        assert_int_equal(split("echo hello world 1+1 a,b x@y 50% ^", buf, sizeof(buf), argv), 8);
        assert_int_equal(split("false", buf, sizeof(buf), argv), 1);
        assert_int_equal(split("./run.sh --flag", buf, sizeof(buf), argv), 2);
}

static void test_needs_shell(void **state)
{
        static const char *const texts[] = {
                "", "   ", "echo $HOME", "echo `id`", "echo 'a'", "echo \"a\"", "echo a\\ b",
                "ls *", "ls ?", "ls [a]", "ls ~", "echo {a,b}", "echo a # c", "echo a; id",
                "echo a && id", "echo a | cat", "echo a > f", "cat < f", "(id)", "echo a\nid",
                "! true", "A=1 env", "a=b", "if", "time ls", "for", "cd /tmp", "export A",
                "exit 3", "pwd", "kill 1", "printf a", "test a", "true --help", "false x",
                "echo -n a", "echo a -e", "source f", ". f", ": x", "exec ls", "type ls",
                "echo \xc3\xa9", "echo a\rb", "command ls",
        };
        char buf[256], *argv[PLAINSH_MAX_WORDS + 1];

        (void)state;
        for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
                if (split(texts[i], buf, sizeof(buf), argv) != 0)
                        fail_msg("plain: \"%s\"", texts[i]);
                assert_string_equal(buf, texts[i]);
        }
}

static void test_word_cap(void **state)
{
        char buf[1024], in[1024] = "ls", *argv[PLAINSH_MAX_WORDS + 1];

        (void)state;
        for (int i = 1; i < PLAINSH_MAX_WORDS; i++)
                strcat(in, " a");
        assert_int_equal(split(in, buf, sizeof(buf), argv), PLAINSH_MAX_WORDS);
        strcat(in, " a");
        assert_int_equal(split(in, buf, sizeof(buf), argv), 0);
        assert_string_equal(buf, in);
        assert_int_equal(plainsh_split(buf, argv, 1), 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_plain),
                cmocka_unit_test(test_needs_shell),
                cmocka_unit_test(test_word_cap),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
