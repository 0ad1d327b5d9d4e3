/* timeutil: see timeutil.h. */
#include "core/timeutil.h"

#include <errno.h>
#include <stdio.h>
#include <sys/random.h>
#include <time.h>

int64_t timeutil_now_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t timeutil_mono_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int timeutil_format_iso(int64_t ms, char *buf, size_t size)
{
        time_t secs = (time_t)(ms / 1000);
        struct tm tm;

        if (size < 25 || ms < 0)
                return -EINVAL;
        /* Past year 9999 the fixed-width format would be truncated in a
         * 25-byte buffer (or be five digits wide): refuse it. */
        if (!gmtime_r(&secs, &tm) || tm.tm_year + 1900 > 9999)
                return -EINVAL;
        snprintf(buf, size, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms % 1000));
        return 0;
}

int timeutil_random_id(char *buf, size_t size)
{
        static const char hex[] = "0123456789abcdef";
        unsigned char raw[16];
        size_t got = 0;

        if (size < 33)
                return -EINVAL;
        while (got < sizeof(raw)) {
                ssize_t r = getrandom(raw + got, sizeof(raw) - got, 0);
                if (r < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                got += (size_t)r;
        }
        for (size_t i = 0; i < sizeof(raw); i++) {
                buf[2 * i] = hex[raw[i] >> 4];
                buf[2 * i + 1] = hex[raw[i] & 15];
        }
        buf[32] = '\0';
        return 0;
}

int timeutil_id_valid(const char *s)
{
        size_t n = 0;

        for (; s[n]; n++)
                if (n >= 32 || !((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f')))
                        return 0;
        return n == 32;
}
