/* cron: schedules of periodic lifecycle hooks. See cron.h. */
#include "cron.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

static const char *const months[] = { "JAN", "FEB", "MAR", "APR", "MAY", "JUN",
                                      "JUL", "AUG", "SEP", "OCT", "NOV", "DEC" };
static const char *const days[] = { "SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT" };

/* A number (at most 4 digits) or, with names, a three-letter name, at *p. */
static int field_value(const char **p, const char *const *names, int n_names, int base, int *ret)
{
        const char *s = *p;
        int v = 0, digits = 0;

        while (*s >= '0' && *s <= '9' && digits < 5) {
                v = v * 10 + (*s++ - '0');
                digits++;
        }
        if (digits > 0 && digits < 5) {
                *p = s;
                *ret = v;
                return 0;
        }
        for (int i = 0; digits == 0 && names && i < n_names; i++)
                if (strncasecmp(s, names[i], 3) == 0) {
                        *p = s + 3;
                        *ret = i + base;
                        return 0;
                }
        return -1;
}

/* One field: a comma list of "*", "N", "N-M", each with an optional "/STEP",
 * into the bits lo..hi of *bits. */
static int field_parse(const char *s, int lo, int hi, const char *const *names, int n_names,
                       int base, uint64_t *bits, bool *star)
{
        *bits = 0;
        *star = false;
        for (;;) {
                int a, b, step = 1;
                bool item_star = *s == '*';

                if (item_star) {
                        a = lo;
                        b = hi;
                        s++;
                        *star = true;
                } else {
                        if (field_value(&s, names, n_names, base, &a) < 0)
                                return -1;
                        b = a;
                        if (*s == '-') {
                                s++;
                                if (field_value(&s, names, n_names, base, &b) < 0)
                                        return -1;
                        }
                }
                if (*s == '/') {
                        s++;
                        if (field_value(&s, NULL, 0, 0, &step) < 0 || step < 1 || step > hi - lo + 1)
                                return -1;
                        if (a == b && !item_star)
                                b = hi; /* "N/STEP": from N to the end */
                }
                if (a < lo || b > hi || a > b)
                        return -1;
                for (int v = a; v <= b; v += step)
                        *bits |= 1ULL << v;
                if (*s == '\0')
                        return 0;
                if (*s++ != ',' || *s == '\0')
                        return -1;
        }
}

static int every_parse(const char *s, struct cron *c)
{
        long long n = 0;
        int digits = 0, unit;

        while (*s == ' ')
                s++;
        while (*s >= '0' && *s <= '9') {
                n = n * 10 + (*s++ - '0');
                if (++digits > 9)
                        return -1;
        }
        unit = *s == 's' ? 1 : *s == 'm' ? 60 : *s == 'h' ? 3600 : 0;
        if (digits == 0 || unit == 0 || s[1] != '\0' || n < 1 || n * unit > CRON_EVERY_MAX_S)
                return -1;
        c->every_s = n * unit;
        return 0;
}

int cron_parse(const char *text, struct cron *c)
{
        static const struct {
                const char *name, *fields;
        } descriptors[] = {
                { "@yearly", "0 0 1 1 *" },  { "@annually", "0 0 1 1 *" },
                { "@monthly", "0 0 1 * *" }, { "@weekly", "0 0 * * 0" },
                { "@daily", "0 0 * * *" },   { "@midnight", "0 0 * * *" },
                { "@hourly", "0 * * * *" },
        };
        char buf[CRON_TEXT_MAX], *f[6], *save = NULL;
        uint64_t bits;
        size_t len;
        int n = 0;

        memset(c, 0, sizeof(*c));
        if (!text || (len = strlen(text)) == 0 || len >= sizeof(buf))
                return -1;
        if (strncmp(text, "@every ", 7) == 0)
                return every_parse(text + 7, c);
        for (size_t i = 0; i < sizeof(descriptors) / sizeof(descriptors[0]); i++)
                if (strcmp(text, descriptors[i].name) == 0)
                        text = descriptors[i].fields;
        if (text[0] == '@')
                return -1;
        memcpy(buf, text, strlen(text) + 1);
        for (char *t = strtok_r(buf, " \t", &save); t; t = strtok_r(NULL, " \t", &save)) {
                if (n == 5)
                        return -1;
                f[n++] = t;
        }
        if (n != 5)
                return -1;
        if (field_parse(f[0], 0, 59, NULL, 0, 0, &c->minute, &(bool){ 0 }) < 0)
                return -1;
        if (field_parse(f[1], 0, 23, NULL, 0, 0, &bits, &(bool){ 0 }) < 0)
                return -1;
        c->hour = (uint32_t)bits;
        if (field_parse(f[2], 1, 31, NULL, 0, 0, &bits, &c->dom_star) < 0)
                return -1;
        c->dom = (uint32_t)bits;
        if (field_parse(f[3], 1, 12, months, 12, 1, &bits, &(bool){ 0 }) < 0)
                return -1;
        c->month = (uint16_t)bits;
        if (field_parse(f[4], 0, 7, days, 7, 0, &bits, &c->dow_star) < 0)
                return -1;
        if (bits & (1u << 7))
                bits = (bits | 1u) & 0x7f; /* 7 is Sunday too */
        c->dow = (uint8_t)bits;
        return 0;
}

static bool day_matches(const struct cron *c, const struct tm *tm)
{
        bool dom = c->dom & (1u << tm->tm_mday), dow = c->dow & (1u << tm->tm_wday);

        if (c->dom_star || c->dow_star)
                return (c->dom_star || dom) && (c->dow_star || dow);
        return dom || dow;
}

long long cron_next(const struct cron *c, long long now)
{
        long long t, limit;
        struct tm tm;
        time_t tt;

        if (c->every_s > 0)
                return now + c->every_s;
        t = (now / 60 + 1) * 60;
        limit = t + 5LL * 366 * 86400;
        while (t < limit) {
                tt = (time_t)t;
                if (!gmtime_r(&tt, &tm))
                        return -1;
                if (!(c->month & (1u << (tm.tm_mon + 1)))) {
                        tm.tm_mon++;
                        tm.tm_mday = 1;
                        tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
                } else if (!day_matches(c, &tm)) {
                        tm.tm_mday++;
                        tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
                } else if (!(c->hour & (1u << tm.tm_hour))) {
                        tm.tm_hour++;
                        tm.tm_min = tm.tm_sec = 0;
                } else if (!(c->minute & (1ULL << tm.tm_min))) {
                        tm.tm_min++;
                        tm.tm_sec = 0;
                } else {
                        return t;
                }
                t = (long long)timegm(&tm);
        }
        return -1;
}
