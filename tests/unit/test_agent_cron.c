/* Unit tests for agent/cron.c (the schedules of periodic lifecycle hooks,
 * parsed by the broker at create and by sandbox-agent): every form (fields,
 * lists, ranges, steps, names, descriptors, @every), the bounds of each
 * field, garbage, and the next run: minute and hour steps, month and year
 * ends, leap days, weekdays, the day-of-month/day-of-week "either" rule, a
 * schedule that never fires. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "cron.h"

/* UTC epoch seconds of a date and time. */
static long long at(int y, int mon, int d, int h, int min)
{
        struct tm tm = {
                .tm_year = y - 1900, .tm_mon = mon - 1, .tm_mday = d, .tm_hour = h, .tm_min = min
        };

        return (long long)timegm(&tm);
}

static long long next(const char *text, long long now)
{
        struct cron c;

        assert_int_equal(cron_parse(text, &c), 0);
        return cron_next(&c, now);
}

static void test_forms(void **state)
{
        static const char *const good[] = {
                "* * * * *",       "0 0 1 1 *",
                "*/5 * * * *",     "0-59/15 0-23 1-31 1-12 0-7",
                "1,2,3 4 5 6 0",   "0 12 * * MON-FRI",
                "0 0 1 jan,Jul *", "30 2 * * 7",
                "5/10 * * * *",    "0\t0 * * *",
                "  0 0 * * *  ",   "@yearly",
                "@annually",       "@monthly",
                "@weekly",         "@daily",
                "@midnight",       "@hourly",
                "@every 1s",       "@every 90s",
                "@every 5m",       "@every 2h",
                "@every 8784h",
        };
        struct cron c;

        (void)state;
        for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
                assert_int_equal(cron_parse(good[i], &c), 0);
        assert_int_equal(cron_parse("@every 90s", &c), 0);
        assert_int_equal(c.every_s, 90);
        assert_int_equal(cron_parse("@every 2h", &c), 0);
        assert_int_equal(c.every_s, 7200);
        assert_int_equal(cron_parse("*/15 * * * *", &c), 0);
        assert_true(c.minute == (1ULL << 0 | 1ULL << 15 | 1ULL << 30 | 1ULL << 45));
        assert_int_equal(cron_parse("0 0 * * 7", &c), 0);
        assert_int_equal(c.dow, 1); /* 7 is Sunday, 0 */
        assert_int_equal(cron_parse("0 0 * * sat", &c), 0);
        assert_int_equal(c.dow, 1 << 6);
}

static void test_bounds_and_garbage(void **state)
{
        static const char *const bad[] = {
                NULL,
                "",
                " ",
                "* * * *",
                "* * * * * *",
                "60 * * * *",
                "* 24 * * *",
                "* * 0 * *",
                "* * 32 * *",
                "* * * 0 *",
                "* * * 13 *",
                "* * * * 8",
                "-1 * * * *",
                "5-1 * * * *",
                "*/0 * * * *",
                "*/61 * * * *",
                "1,,2 * * * *",
                "1, * * * * *",
                ",1 * * * *",
                "1- * * * *",
                "a * * * *",
                "* * * FOO *",
                "* * * * MONDAY",
                "00000 * * * *",
                "@every",
                "@every 0s",
                "@every 1",
                "@every s",
                "@every 1d",
                "@every -1s",
                "@every 1s ",
                "@every 8785h",
                "@every 9999999999s",
                "@reboot",
                "@Hourly",
                "@hourly ",
                "*/ * * * *",
                "1/2/3 * * * *",
                "* * * * * # comment",
        };
        char big[CRON_TEXT_MAX + 8];
        struct cron c;

        (void)state;
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                if (cron_parse(bad[i], &c) == 0)
                        fail_msg("accepted: \"%s\"", bad[i]);
        }
        memset(big, ' ', sizeof(big) - 1);
        big[sizeof(big) - 1] = '\0';
        memcpy(big, "* * * * *", 9);
        assert_int_equal(cron_parse(big, &c), -1); /* over CRON_TEXT_MAX */
}

static void test_next(void **state)
{
        long long now = at(2026, 12, 5, 13, 47) + 12;

        (void)state;
        assert_int_equal(next("* * * * *", now), at(2026, 12, 5, 13, 48));
        assert_int_equal(next("* * * * *", at(2026, 12, 5, 13, 48)),
                         at(2026, 12, 5, 13, 49)); /* strictly after */
        assert_int_equal(next("*/15 * * * *", now), at(2026, 12, 5, 14, 0));
        assert_int_equal(next("@hourly", now), at(2026, 12, 5, 14, 0));
        assert_int_equal(next("@daily", now), at(2026, 12, 6, 0, 0));
        assert_int_equal(next("@monthly", now), at(2027, 1, 1, 0, 0));
        assert_int_equal(next("@yearly", now), at(2027, 1, 1, 0, 0));
        assert_int_equal(next("@weekly", now), at(2026, 12, 6, 0, 0)); /* 2026-12-06 is a Sunday */
        assert_int_equal(next("0 9 * * MON-FRI", now), at(2026, 12, 7, 9, 0));
        assert_int_equal(next("30 23 31 * *", now), at(2026, 12, 31, 23, 30));
        assert_int_equal(next("0 0 29 2 *", now), at(2028, 2, 29, 0, 0)); /* the next leap day */
        assert_int_equal(next("0 0 31 4 *", now), -1);                    /* April has 30 days */
        assert_int_equal(next("0 0 30 2 *", now), -1);
        /* both day fields restricted: either (the 1st, or a Friday) */
        assert_int_equal(next("0 0 1 * 5", now), at(2026, 12, 11, 0, 0));
        assert_int_equal(next("0 0 1 * 5", at(2026, 12, 26, 0, 0)), at(2027, 1, 1, 0, 0));
        /* one restricted: that one only */
        assert_int_equal(next("0 0 * * 5", at(2026, 12, 11, 0, 0)), at(2026, 12, 18, 0, 0));
        assert_int_equal(next("0 0 1 * *", now), at(2027, 1, 1, 0, 0));
        assert_int_equal(next("@every 1s", now), now + 1);
        assert_int_equal(next("@every 5m", now), now + 300);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_forms),
                cmocka_unit_test(test_bounds_and_garbage),
                cmocka_unit_test(test_next),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
