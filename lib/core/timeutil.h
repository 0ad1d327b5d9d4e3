/* timeutil: wall-clock milliseconds, ISO-8601 formatting, random ids. */
#pragma once
#include <stddef.h>
#include <stdint.h>

/* Milliseconds since the epoch (CLOCK_REALTIME). */
int64_t timeutil_now_ms(void);

/* Milliseconds of CLOCK_MONOTONIC, for intervals. */
int64_t timeutil_mono_ms(void);

/* Format ms since the epoch as "2026-12-02T12:00:00.123Z" into buf (>= 25 bytes).
 * Returns 0, or -EINVAL if buf is too small, ms < 0 or the year is past 9999. */
int timeutil_format_iso(int64_t ms, char *buf, size_t size);

/* Fill buf with 32 lowercase hex characters of getrandom() entropy and a NUL
 * (buf >= 33 bytes). Returns 0 or a negative errno. */
int timeutil_random_id(char *buf, size_t size);

/* True if s has the form timeutil_random_id() makes: 32 lowercase hex characters. */
int timeutil_id_valid(const char *s);
