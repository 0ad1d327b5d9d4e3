/* http_buf: what the backends' HTTP clients (docker_api.c, daytona_api.c,
 * kubernetes_api.c) share, owned by none: the capped byte buffer they read
 * answers into (the Docker stream demultiplexer fills it too), URL escaping,
 * and the libcurl steps they take alike. */
#pragma once
#include <curl/curl.h>
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

/* A failed curl_easy_perform as the provider conventions' errno (provider.h):
 * no connection or no such host -ECONNREFUSED, -ETIMEDOUT, -ENOMEM, else -EIO.
 * (A callback's own error is the caller's to prefer.) */
int http_curl_errno(CURLcode c);

/* The request's method and JSON body on c: GET as such; a POST without a body
 * sends an empty one; a body goes with any method; a method other than GET or
 * POST is named with CURLOPT_CUSTOMREQUEST. json may be NULL. */
void http_curl_method(CURL *c, const char *method, const char *json);
