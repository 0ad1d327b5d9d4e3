/* sandbox-agent: the HTTP/1.1 subset the agent speaks (docs/AGENT.md,
 * "Protocol"): one request per connection, a strict request head of at most
 * AGENT_HEADER_MAX bytes, parameters in the query string (percent-encoded,
 * names may repeat), a body only with Content-Length, every answer with
 * Connection: close. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct http_param {
        const char *name; /* decoded, NUL-terminated, inside the request */
        const char *value;
};

struct http_request {
        int fd;
        char *buf;       /* head, then the first body bytes read with it */
        size_t len;      /* bytes in buf */
        size_t body_off; /* first body byte in buf */
        char *method;    /* inside buf */
        char *path;      /* inside buf, without the query */
        bool http10;     /* HTTP/1.0: no chunked answers */
        struct http_param *params;
        size_t n_params;
        long long content_length; /* -1: no Content-Length */
        long long body_left;      /* body bytes not yet handed out by http_body_read */
        bool expect_continue;
        bool continue_sent;
        bool head_sent;    /* an answer has started: no error status any more */
        const char *error; /* why parsing failed (static string) */
};

/* Read and parse the request head from fd (blocking; the caller bounds the
 * time). Returns 0, a 4xx/5xx status to answer with req->error as the
 * reason, or -1 when the client sent nothing or went away (no answer).
 * req owns its buffers afterwards, whatever the result: http_request_free. */
int http_request_read(struct http_request *req, int fd);

/* Release what the request owns (not fd). NULL-safe, half-built state too. */
void http_request_free(struct http_request *req);

/* The first value of parameter name, or NULL. */
const char *http_param(const struct http_request *req, const char *name);

/* The single exit of every error: `status`, text/plain, one line (the
 * formatted reason, cut at AGENT_ERROR_MAX). Does nothing once a head has
 * been sent. Returns 0 or a negative errno of the write. */
__attribute__((format(printf, 3, 4))) int http_reply_error(struct http_request *req, int status,
                                                           const char *fmt, ...);

/* Send the head of a successful answer. content_length >= 0: that length;
 * HTTP_CHUNKED: Transfer-Encoding: chunked (a body delimited by the close on
 * HTTP/1.0); HTTP_NO_BODY: none (204). content_type may be NULL. */
#define HTTP_CHUNKED (-1LL)
#define HTTP_NO_BODY (-2LL)
int http_reply_head(struct http_request *req, int status, const char *content_type,
                    long long content_length);

/* Before the body is read: "100 Continue" when the client asked for it
 * (curl does for large bodies). Idempotent. */
int http_send_continue(struct http_request *req);

/* Next bytes of the body into buf: first those read with the head, then
 * from the socket. Returns the count, 0 at the end of the body, -EPIPE when
 * the client closed before Content-Length bytes, or another negative errno
 * (-EAGAIN on a non-blocking socket). */
long http_body_read(struct http_request *req, void *buf, size_t size);

/* Write all of buf to a blocking socket (MSG_NOSIGNAL). 0 or -errno. */
int http_write_all(int fd, const void *buf, size_t len);

/* A decimal of 1 to 18 digits, nothing else (no sign, no spaces, no list):
 * Content-Length and the numbers of query parameters. -EINVAL otherwise. */
int http_parse_decimal(const char *v, long long *ret);
