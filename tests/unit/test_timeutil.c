/* Unit tests for lib/core/timeutil.c: ISO-8601 formatting and random ids. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/timeutil.h"

static void expect_iso(int64_t ms, const char *want)
{
        char buf[32];

        memset(buf, 'X', sizeof(buf));
        assert_int_equal(timeutil_format_iso(ms, buf, sizeof(buf)), 0);
        assert_string_equal(buf, want);
        /* Exactly the documented minimum buffer suffices. */
        memset(buf, 'X', sizeof(buf));
        assert_int_equal(timeutil_format_iso(ms, buf, 25), 0);
        assert_string_equal(buf, want);
        assert_int_equal(buf[25], 'X');
}

static void test_iso_values(void **state)
{
        (void)state;
        expect_iso(0, "1970-01-01T00:00:00.000Z");
        expect_iso(1, "1970-01-01T00:00:00.001Z");
        expect_iso(999, "1970-01-01T00:00:00.999Z");
        expect_iso(1000, "1970-01-01T00:00:01.000Z");
        expect_iso(1796212800123LL, "2026-12-02T12:00:00.123Z");
        expect_iso(946684799999LL, "1999-12-31T23:59:59.999Z");
        expect_iso(946684800000LL, "2000-01-01T00:00:00.000Z");
        expect_iso(951782400000LL, "2000-02-29T00:00:00.000Z");
        expect_iso(1709251199999LL, "2024-02-29T23:59:59.999Z");
        expect_iso(1709251200000LL, "2024-03-01T00:00:00.000Z");
        expect_iso(4107542400000LL - 1, "2100-02-28T23:59:59.999Z"); /* 2100: no leap day */
        expect_iso(2147483648000LL, "2038-01-19T03:14:08.000Z");     /* past 32-bit time_t */
        expect_iso(253402300799999LL, "9999-12-31T23:59:59.999Z");
}

static void test_iso_errors(void **state)
{
        char buf[32];

        (void)state;
        memset(buf, 'X', sizeof(buf));
        assert_int_equal(timeutil_format_iso(0, buf, 24), -EINVAL);
        assert_int_equal(timeutil_format_iso(0, buf, 0), -EINVAL);
        assert_int_equal(timeutil_format_iso(-1, buf, sizeof(buf)), -EINVAL);
        assert_int_equal(timeutil_format_iso(INT64_MIN, buf, sizeof(buf)), -EINVAL);
        assert_int_equal(buf[0], 'X');
}

/* Past year 9999 the fixed-width format cannot hold the time: refuse rather
 * than hand out a truncated or five-digit-year string. */
static void test_iso_beyond_9999(void **state)
{
        char buf[64];

        (void)state;
        memset(buf, 'X', sizeof(buf));
        assert_int_equal(timeutil_format_iso(253402300800000LL, buf, 25), -EINVAL);
        assert_int_equal(timeutil_format_iso(253402300800000LL, buf, sizeof(buf)), -EINVAL);
        assert_int_equal(timeutil_format_iso(INT64_MAX, buf, sizeof(buf)), -EINVAL);
        assert_int_equal(buf[0], 'X');
}

static void test_clocks(void **state)
{
        int64_t now = timeutil_now_ms(), m1, m2;

        (void)state;
        /* Between 2020 and 2100: a clock in ms, not s or us. */
        assert_in_range(now, 1577836800000LL, 4102444800000LL);
        m1 = timeutil_mono_ms();
        m2 = timeutil_mono_ms();
        assert_true(m1 >= 0);
        assert_true(m2 >= m1);
}

static void test_random_id_format(void **state)
{
        char buf[40];

        (void)state;
        memset(buf, 'X', sizeof(buf));
        assert_int_equal(timeutil_random_id(buf, 33), 0);
        assert_int_equal(strlen(buf), 32);
        assert_int_equal(strspn(buf, "0123456789abcdef"), 32);
        assert_int_equal(buf[33], 'X');

        memset(buf, 'X', sizeof(buf));
        assert_int_equal(timeutil_random_id(buf, 32), -EINVAL);
        assert_int_equal(timeutil_random_id(buf, 0), -EINVAL);
        assert_int_equal(buf[0], 'X');
}

static int cmp_id(const void *a, const void *b)
{
        return strcmp(a, b);
}

static void test_random_id_unique(void **state)
{
        enum { N = 2000 };
        char(*ids)[33] = calloc(N, sizeof(*ids));
        unsigned seen[16] = { 0 };

        (void)state;
        assert_non_null(ids);
        for (int i = 0; i < N; i++) {
                assert_int_equal(timeutil_random_id(ids[i], sizeof(ids[i])), 0);
                for (int j = 0; j < 32; j++) {
                        char c = ids[i][j];
                        seen[c <= '9' ? c - '0' : c - 'a' + 10]++;
                }
        }
        qsort(ids, N, sizeof(*ids), cmp_id);
        for (int i = 1; i < N; i++)
                if (strcmp(ids[i - 1], ids[i]) == 0)
                        fail_msg("duplicate id %s", ids[i]);
        /* 64000 digits: each of 16 values expected 4000 times. A stuck nibble
         * or a constant byte would be far outside this band. */
        for (int d = 0; d < 16; d++)
                assert_in_range(seen[d], 3000, 5000);
        free(ids);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_iso_values),
                cmocka_unit_test(test_iso_errors),
                cmocka_unit_test(test_iso_beyond_9999),
                cmocka_unit_test(test_clocks),
                cmocka_unit_test(test_random_id_format),
                cmocka_unit_test(test_random_id_unique),
        };
        return cmocka_run_group_tests_name("timeutil", tests, NULL, NULL);
}
