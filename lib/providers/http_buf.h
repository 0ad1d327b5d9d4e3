/* http_buf: what the backends' HTTP clients (docker_api.c, daytona_api.c)
 * share, owned by neither: the capped byte buffer they read answers into
 * (the Docker stream demultiplexer fills it too) and URL escaping. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

/* A growable byte buffer that keeps at most `max` bytes (always followed by
 * a NUL); bytes past the cap are dropped and `truncated` is set. A zeroed
 * struct with max set is an empty buffer. */
struct http_buf {
        char *data;
        size_t len, cap, max;
        bool truncated;
};

/* Append n bytes, keeping at most b->max in total. Returns 0 or -ENOMEM. */
int http_buf_append(struct http_buf *b, const void *p, size_t n);

/* Free the bytes and zero the buffer (keeps nothing); accepts NULL. */
void http_buf_release(struct http_buf *b);

/* Hand the bytes over without copying: *ret owns a NUL-terminated string
 * ("" when empty; free()); the buffer is left empty. Returns 0 or -ENOMEM. */
int http_buf_steal(struct http_buf *b, char **ret, size_t *ret_len);

/* Percent-encode s (all but RFC 3986 unreserved characters) for a path
 * segment or query value. Returns a malloc'ed string (free()) or NULL. */
char *http_escape(const char *s);
