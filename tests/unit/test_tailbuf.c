/* Unit tests for lib/codec/tailbuf.c: the last `max` bytes of a stream fed
 * in pieces of every size (smaller than the ring, across its end, larger
 * than it), compared with the tail of the whole stream; the byte count;
 * NUL bytes kept; release; where a log tail's whole lines begin
 * (tailbuf_line_start). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "codec/tailbuf.h"

/* The tail of data[0..n) after feeding it in pieces of `piece` bytes. */
static void check_feed(const char *data, size_t n, size_t max, size_t piece)
{
        struct tailbuf t = { .max = max };
        char *out = malloc(max);
        size_t want = n < max ? n : max;

        assert_non_null(out);
        for (size_t off = 0; off < n; off += piece)
                assert_int_equal(tailbuf_append(&t, data + off, n - off < piece ? n - off : piece),
                                 0);
        assert_int_equal(t.total, n);
        assert_int_equal(t.len, want);
        assert_int_equal(tailbuf_copy(&t, out), want);
        if (memcmp(out, data + n - want, want) != 0)
                fail_msg("n=%zu max=%zu piece=%zu: tail differs", n, max, piece);
        tailbuf_release(&t);
        free(out);
}

static void test_every_piece_size(void **state)
{
        char data[300];

        (void)state;
        for (size_t i = 0; i < sizeof(data); i++)
                data[i] = (char)(i * 7 + 1);
        data[10] = '\0'; /* bytes, not strings */
        for (size_t max = 1; max <= 40; max += 3)
                for (size_t piece = 1; piece <= 50; piece++)
                        for (size_t n = 0; n <= sizeof(data); n += 37)
                                check_feed(data, n, max, piece);
        check_feed(data, sizeof(data), 300, 300);
        check_feed(data, sizeof(data), 299, 300);
        check_feed(data, sizeof(data), 301, 7);
}

static void test_arrival_order(void **state)
{
        struct tailbuf t = { .max = 8 };
        char out[8];

        (void)state;
        assert_int_equal(tailbuf_append(&t, "out1\n", 5), 0);
        assert_int_equal(tailbuf_append(&t, "err1\n", 5), 0);
        assert_int_equal(tailbuf_copy(&t, out), 8);
        assert_memory_equal(out, "t1\nerr1\n", 8); /* the last 8 of 10, in arrival order */
        assert_int_equal(t.total, 10);
        assert_int_equal(tailbuf_append(&t, "", 0), 0);
        assert_int_equal(t.total, 10);
        assert_int_equal(tailbuf_copy(&t, out), 8);
        tailbuf_release(&t);
}

static void test_empty_and_release(void **state)
{
        struct tailbuf t = { .max = 4 };
        struct tailbuf zero = { 0 };
        char out[4];

        (void)state;
        assert_int_equal(tailbuf_copy(&t, out), 0);
        assert_int_equal(tailbuf_append(&zero, "x", 1), -EINVAL);
        assert_int_equal(tailbuf_append(&t, "abcdef", 6), 0);
        tailbuf_release(&t);
        assert_null(t.buf);
        assert_int_equal(t.max, 4);
        assert_int_equal(t.len, 0);
        assert_int_equal(t.total, 0);
        assert_int_equal(tailbuf_append(&t, "xy", 2), 0);
        assert_int_equal(tailbuf_copy(&t, out), 2);
        assert_memory_equal(out, "xy", 2);
        tailbuf_release(&t);
        tailbuf_release(NULL);
}

/* A log read with Docker's tail=N+1 through a ring: the lines it keeps. */
static void test_line_start(void **state)
{
        bool cut = true;

        (void)state;
        /* all there, within both caps: nothing cut, even a last partial line */
        assert_int_equal(tailbuf_line_start("a\nb\n", 4, 2, 2, false, &cut), 0);
        assert_false(cut);
        assert_int_equal(tailbuf_line_start("a\nb", 3, 2, 2, false, &cut), 0);
        assert_false(cut);
        assert_int_equal(tailbuf_line_start("", 0, 0, 5, false, &cut), 0);
        assert_false(cut);
        /* one line more than the cap (the N+1st asked for): it goes */
        assert_int_equal(tailbuf_line_start("a\nb\nc\n", 6, 3, 2, false, &cut), 2);
        assert_true(cut);
        /* bytes dropped before out: its first, partial line goes */
        assert_int_equal(tailbuf_line_start("st\nb\n", 5, 9, 100, true, &cut), 3);
        assert_true(cut);
        /* one line longer than the byte cap: what is left of it stays */
        assert_int_equal(tailbuf_line_start("xxxx", 4, 1, 100, true, &cut), 0);
        assert_true(cut);
        assert_int_equal(tailbuf_line_start("xxx\n", 4, 1, 100, true, &cut), 0);
        assert_true(cut);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_every_piece_size),
                cmocka_unit_test(test_arrival_order),
                cmocka_unit_test(test_empty_and_release),
                cmocka_unit_test(test_line_start),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
