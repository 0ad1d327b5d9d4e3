/* url: the pieces of a request URL the handlers read: query strings
 * (application/x-www-form-urlencoded pairs) and paths matched against the
 * route table's patterns. Pure functions of untrusted bytes: every output
 * goes into a caller's buffer of a given size, never past it, always
 * NUL-terminated on success. */
#pragma once
#include <stddef.h>

#define URL_PATH_ARG_MAX 65 /* one "{}" segment with its NUL: 64 bytes, an execId */

/* Percent-decode len bytes of src into dst (dsz bytes), '+' read as a
 * space. Returns 0, -E2BIG when the result and its NUL do not fit, or
 * -EINVAL for a '%' not followed by two hex digits or an encoded NUL
 * ("%00"). */
int url_decode(const char *src, size_t len, char *dst, size_t dsz);

/* Iterate a query string: each call yields the next name=value pair at
 * *cursor, both percent-decoded, into the given buffers, and moves *cursor
 * past it (empty pairs, "&&", are skipped; a pair without '=' has an empty
 * value). Returns 1 with a pair, 0 at the end, or url_decode's -E2BIG or
 * -EINVAL (*cursor is past the bad pair). */
int url_query_next(const char **cursor, char *name, size_t nsz, char *value, size_t vsz);

/* Copy the raw value (no percent-decoding: the broker's ids are plain) of
 * the first parameter `name` of query (may be NULL) into buf. Returns 0,
 * -ENOENT, or -E2BIG when it does not fit. */
int url_query_param(const char *query, const char *name, char *buf, size_t size);

/* The value of hex digit c (either case), or -1. */
int url_hex_digit(int c);

/* Match path against pattern, where each "{}" stands for one non-empty
 * segment (no '/') of less than URL_PATH_ARG_MAX bytes; the first max_args
 * of them are copied into args, and a pattern with more holes than
 * max_args does not match. Returns 1 on a match (the whole path), else 0. */
int url_path_match(const char *pattern, const char *path, char args[][URL_PATH_ARG_MAX],
                   int max_args);
