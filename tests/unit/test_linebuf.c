/* Unit tests for lib/codec/linebuf.c: lines split at "\n", "\r" and "\r\n" (one
 * end), fed whole and at every split point, long lines cut into pieces at
 * UTF-8 boundaries, the unterminated last line on flush, and `ended` (did
 * the line handed out end with a terminator). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "codec/linebuf.h"

struct lines {
        char text[4096]; /* lines joined with '|' */
        size_t len;
        int n;
};

static int collect(void *ud, const char *line, size_t len)
{
        struct lines *l = ud;

        assert_true(l->len + len + 1 < sizeof(l->text));
        memcpy(l->text + l->len, line, len);
        l->len += len;
        l->text[l->len++] = '|';
        l->text[l->len] = '\0';
        l->n++;
        return 0;
}

/* Feed s split at `split` (0: whole), flush, return the joined lines. */
static void run(const char *s, size_t max, size_t split, struct lines *out)
{
        struct linebuf lb = { .max = max };
        size_t n = strlen(s);

        memset(out, 0, sizeof(*out));
        if (split == 0 || split >= n) {
                assert_int_equal(linebuf_feed(&lb, s, n, collect, out), 0);
        } else {
                assert_int_equal(linebuf_feed(&lb, s, split, collect, out), 0);
                assert_int_equal(linebuf_feed(&lb, s + split, n - split, collect, out), 0);
        }
        assert_int_equal(linebuf_flush(&lb, collect, out), 0);
        linebuf_release(&lb);
}

static void check_all_splits(const char *s, size_t max, const char *want, int want_n)
{
        for (size_t split = 0; split <= strlen(s); split++) {
                struct lines l;
                run(s, max, split, &l);
                assert_string_equal(l.text, want);
                assert_int_equal(l.n, want_n);
        }
}

static void test_terminators(void **state)
{
        (void)state;
        check_all_splits("a\nb\r\nc\rd", 100, "a|b|c|d|", 4);
        check_all_splits("a\n\nb\n", 100, "a||b|", 3);
        check_all_splits("\r\n\r\n", 100, "||", 2);
        check_all_splits("", 100, "", 0);
        check_all_splits("no newline", 100, "no newline|", 1);
}

static void test_long_lines(void **state)
{
        (void)state;
        check_all_splits("abcdefghij\nxy", 4, "abcd|efgh|ij|xy|", 4);
        check_all_splits("abcdefgh\n", 4, "abcd|efgh|", 2);
}

static void test_utf8_boundary(void **state)
{
        struct lines l;

        (void)state;
        /* "aaa" + U+00E9 (2 bytes): a cut at 4 would split the character */
        run("aaa\xc3\xa9zz\n", 4, 0, &l);
        assert_string_equal(l.text, "aaa|\xc3\xa9zz|");
}

struct ended_ctx {
        struct linebuf *lb;
        struct lines l; /* each line followed by '$' (ended) or '~' (not) */
};

static int collect_ended(void *ud, const char *line, size_t len)
{
        struct ended_ctx *c = ud;

        assert_true(c->l.len + len + 1 < sizeof(c->l.text));
        memcpy(c->l.text + c->l.len, line, len);
        c->l.len += len;
        c->l.text[c->l.len++] = c->lb->ended ? '$' : '~';
        c->l.text[c->l.len] = '\0';
        return 0;
}

static void check_ended(const char *s, size_t max, const char *want)
{
        for (size_t split = 0; split <= strlen(s); split++) {
                struct linebuf lb = { .max = max };
                struct ended_ctx c = { .lb = &lb };
                size_t n = strlen(s);

                if (split == 0 || split >= n) {
                        assert_int_equal(linebuf_feed(&lb, s, n, collect_ended, &c), 0);
                } else {
                        assert_int_equal(linebuf_feed(&lb, s, split, collect_ended, &c), 0);
                        assert_int_equal(linebuf_feed(&lb, s + split, n - split, collect_ended, &c), 0);
                }
                assert_int_equal(linebuf_flush(&lb, collect_ended, &c), 0);
                linebuf_release(&lb);
                assert_string_equal(c.l.text, want);
        }
}

/* Terminated lines are "ended"; the pieces of a long line but its last,
 * and the unterminated rest handed out by flush, are not. */
static void test_ended(void **state)
{
        (void)state;
        check_ended("a\nb\r\nc\rd", 100, "a$b$c$d~");
        check_ended("\n\n", 100, "$$");
        check_ended("abcdefghij\nxy", 4, "abcd~efgh~ij$xy~");
        check_ended("abcdefgh\n", 4, "abcd~efgh$");
}

static int stop_at_two(void *ud, const char *line, size_t len)
{
        int *n = ud;

        (void)line, (void)len;
        return ++*n == 2 ? -EPIPE : 0;
}

static void test_callback_error_stops(void **state)
{
        struct linebuf lb = { .max = 100 };
        int n = 0;

        (void)state;
        assert_int_equal(linebuf_feed(&lb, "a\nb\nc\n", 6, stop_at_two, &n), -EPIPE);
        assert_int_equal(n, 2);
        linebuf_release(&lb);
        linebuf_release(NULL);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_terminators),
                cmocka_unit_test(test_long_lines),
                cmocka_unit_test(test_utf8_boundary),
                cmocka_unit_test(test_ended),
                cmocka_unit_test(test_callback_error_stops),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
