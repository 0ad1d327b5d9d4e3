/* cron: the schedule of a periodic lifecycle hook (docs/AGENT.md, "Lifecycle
 * hooks"), parsed, and its next run computed. Pure: libc only, no clock of
 * its own (the caller passes the time), so that the broker checks a
 * schedule at create with the same code the agent runs it with.
 *
 * Forms: five fields "minute hour day-of-month month day-of-week", each
 * "*", "N", "N-M", any of those with "/STEP", or a comma list of them
 * (minute 0-59, hour 0-23, day 1-31, month 1-12 or JAN-DEC, weekday 0-7
 * or SUN-SAT, 0 and 7 both Sunday); the descriptors @yearly (@annually),
 * @monthly, @weekly, @daily (@midnight), @hourly; "@every N" with a unit
 * s, m or h (N >= 1, at most CRON_EVERY_MAX_S in all). Times are UTC. As
 * in Vixie cron, when both day fields are restricted a day matching
 * either runs. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#define CRON_TEXT_MAX 128                /* a schedule's text, bytes */
#define CRON_EVERY_MAX_S (366LL * 86400) /* @every at most a year */

struct cron {
        long long every_s;       /* > 0: "@every"; the fields below unused */
        uint64_t minute;         /* bit n: minute n */
        uint32_t hour, dom;      /* bit n: hour n; day n (1-31) */
        uint16_t month;          /* bit n: month n (1-12) */
        uint8_t dow;             /* bit n: weekday n (0-6, Sunday 0) */
        bool dom_star, dow_star; /* the field was "*" (or "*" with a step) */
};

/* text into *c. Returns 0, or -1 for anything else (c then undefined). */
int cron_parse(const char *text, struct cron *c);

/* The first time strictly after now (UTC epoch seconds) the schedule
 * fires, or -1 when none within five years (Feb 30). "@every" fires at
 * now + N: the caller passes the previous run's time. */
long long cron_next(const struct cron *c, long long now);
