/* sandbox-agent: request head parser and answer writer (http.h). The parser
 * is strict on purpose: its only legitimate clients are the broker and curl,
 * so anything unusual is refused with 400 rather than interpreted. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent.h"
#include "http.h"

static const char *status_reason(int status)
{
        switch (status) {
        case 100: return "Continue";
        case 200: return "OK";
        case 204: return "No Content";
        case 400: return "Bad Request";
        case 403: return "Forbidden";
        case 404: return "Not Found";
        case 405: return "Method Not Allowed";
        case 411: return "Length Required";
        case 413: return "Content Too Large";
        case 417: return "Expectation Failed";
        case 431: return "Request Header Fields Too Large";
        case 500: return "Internal Server Error";
        case 501: return "Not Implemented";
        case 502: return "Bad Gateway";
        case 503: return "Service Unavailable";
        case 505: return "HTTP Version Not Supported";
        case 507: return "Insufficient Storage";
        default: return "Error";
        }
}

int http_write_all(int fd, const void *buf, size_t len)
{
        const char *p = buf;

        while (len > 0) {
                ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                p += n;
                len -= (size_t)n;
        }
        return 0;
}

/* RFC 9110 token characters (header names, methods). */
static bool is_tchar(unsigned char c)
{
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
               (c && strchr("!#$%&'*+-.^_`|~", c));
}

static int hexval(unsigned char c)
{
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

/* Percent-decode s in place ('+' is a space, as in form encoding). A bad
 * escape or an encoded NUL fails: -EINVAL. */
static int query_decode(char *s)
{
        char *w = s;

        for (const char *r = s; *r; r++) {
                if (*r == '+') {
                        *w++ = ' ';
                } else if (*r == '%') {
                        int hi = hexval((unsigned char)r[1]),
                            lo = hi < 0 ? -1 : hexval((unsigned char)r[2]);

                        if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
                                return -EINVAL;
                        *w++ = (char)(hi << 4 | lo);
                        r += 2;
                } else {
                        *w++ = *r;
                }
        }
        *w = '\0';
        return 0;
}

/* Split and decode the query (modified in place) into req->params. */
static int parse_query(struct http_request *req, char *q)
{
        size_t max = 1;

        for (const char *p = q; *p; p++)
                max += *p == '&';
        req->params = calloc(max, sizeof(*req->params));
        if (!req->params) {
                req->error = "out of memory";
                return 500;
        }
        for (char *item = q, *next; item; item = next) {
                char *eq;

                next = strchr(item, '&');
                if (next)
                        *next++ = '\0';
                if (!*item)
                        continue;
                eq = strchr(item, '=');
                if (eq)
                        *eq++ = '\0';
                if (query_decode(item) < 0 || (eq && query_decode(eq) < 0)) {
                        req->error = "bad percent-encoding in the query string";
                        return 400;
                }
                req->params[req->n_params].name = item;
                req->params[req->n_params].value = eq ? eq : "";
                req->n_params++;
        }
        return 0;
}

/* "METHOD SP /target SP HTTP/1.x", NUL-terminated. */
static int parse_request_line(struct http_request *req, char *line)
{
        char *target, *version, *q;

        target = strchr(line, ' ');
        if (!target || target == line)
                goto bad;
        *target++ = '\0';
        version = strchr(target, ' ');
        if (!version)
                goto bad;
        *version++ = '\0';
        for (const char *p = line; *p; p++)
                if (!is_tchar((unsigned char)*p))
                        goto bad;
        for (const char *p = target; *p; p++)
                if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f || *p == '#')
                        goto bad;
        if (target[0] != '/')
                goto bad;
        if (strcmp(version, "HTTP/1.1") == 0) {
                req->http10 = false;
        } else if (strcmp(version, "HTTP/1.0") == 0) {
                req->http10 = true;
        } else {
                req->error = strncmp(version, "HTTP/", 5) == 0 ? "only HTTP/1.1 is spoken"
                                                               : "malformed request line";
                return strncmp(version, "HTTP/", 5) == 0 ? 505 : 400;
        }
        req->method = line;
        req->path = target;
        q = strchr(target, '?');
        if (!q)
                return 0;
        *q++ = '\0';
        return parse_query(req, q);
bad:
        req->error = "malformed request line";
        return 400;
}

int http_parse_decimal(const char *v, long long *ret)
{
        long long n = 0;
        size_t i;

        for (i = 0; v[i]; i++) {
                if (v[i] < '0' || v[i] > '9' || i >= 18)
                        return -EINVAL;
                n = n * 10 + (v[i] - '0');
        }
        if (i == 0)
                return -EINVAL;
        *ret = n;
        return 0;
}

/* One "name: value" line, NUL-terminated. */
static int parse_header(struct http_request *req, char *line)
{
        char *colon = strchr(line, ':'), *v, *end;

        if (!colon || colon == line)
                goto bad;
        *colon = '\0';
        for (const char *p = line; *p; p++)
                if (!is_tchar((unsigned char)*p))
                        goto bad;
        v = colon + 1;
        for (const char *p = v; *p; p++)
                if (((unsigned char)*p < 0x20 && *p != '\t') || *p == 0x7f)
                        goto bad;
        while (*v == ' ' || *v == '\t')
                v++;
        end = v + strlen(v);
        while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
                *--end = '\0';

        if (strcasecmp(line, "Content-Length") == 0) {
                long long n;

                if (http_parse_decimal(v, &n) < 0 ||
                    (req->content_length >= 0 && n != req->content_length)) {
                        req->error = "bad Content-Length";
                        return 400;
                }
                req->content_length = n;
        } else if (strcasecmp(line, "Transfer-Encoding") == 0) {
                req->error = "Transfer-Encoding is not supported: send Content-Length";
                return 501;
        } else if (strcasecmp(line, "Expect") == 0) {
                if (strcasecmp(v, "100-continue") != 0) {
                        req->error = "unsupported expectation";
                        return 417;
                }
                req->expect_continue = true;
        }
        return 0;
bad:
        req->error = "malformed header line";
        return 400;
}

/* Split the head (CRLF lines, NUL at its end) and parse each line. */
static int parse_head(struct http_request *req, char *head)
{
        char *line = head, *eol;
        int r;

        eol = strstr(line, "\r\n");
        *eol = '\0';
        if (strpbrk(line, "\r\n")) {
                req->error = "malformed request line";
                return 400;
        }
        r = parse_request_line(req, line);
        if (r)
                return r;
        for (line = eol + 2; *line; line = eol + 2) {
                eol = strstr(line, "\r\n");
                *eol = '\0';
                /* A bare CR or LF inside a line, or an obsolete folded line. */
                if (strpbrk(line, "\r\n") || *line == ' ' || *line == '\t') {
                        req->error = "malformed header line";
                        return 400;
                }
                r = parse_header(req, line);
                if (r)
                        return r;
        }
        return 0;
}

int http_request_read(struct http_request *req, int fd)
{
        char *end = NULL;
        int r;

        *req = (struct http_request){ .fd = fd, .content_length = -1 };
        req->buf = malloc(AGENT_HEADER_MAX);
        if (!req->buf) {
                req->error = "out of memory";
                return 500;
        }
        while (!end) {
                size_t from = req->len > 3 ? req->len - 3 : 0;
                ssize_t n;

                if (req->len == AGENT_HEADER_MAX) {
                        req->error = "request head larger than 16 KiB";
                        return 431;
                }
                n = recv(fd, req->buf + req->len, AGENT_HEADER_MAX - req->len, 0);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0) {
                        if (req->len == 0)
                                return -1;
                        req->error = "incomplete request head";
                        return 400;
                }
                req->len += (size_t)n;
                end = memmem(req->buf + from, req->len - from, "\r\n\r\n", 4);
        }
        if (memchr(req->buf, '\0', (size_t)(end - req->buf))) {
                req->error = "NUL byte in the request head";
                return 400;
        }
        req->body_off = (size_t)(end - req->buf) + 4;
        end[2] = '\0'; /* keep the last line's CRLF for the splitter */
        r = parse_head(req, req->buf);
        if (r == 0)
                req->body_left = req->content_length < 0 ? 0 : req->content_length;
        return r;
}

void http_request_free(struct http_request *req)
{
        if (!req)
                return;
        free(req->params);
        free(req->buf);
        req->params = NULL;
        req->buf = NULL;
}

const char *http_param(const struct http_request *req, const char *name)
{
        for (size_t i = 0; i < req->n_params; i++)
                if (strcmp(req->params[i].name, name) == 0)
                        return req->params[i].value;
        return NULL;
}

int http_reply_error(struct http_request *req, int status, const char *fmt, ...)
{
        char body[AGENT_ERROR_MAX], head[256];
        va_list ap;
        int n, h, r;

        if (req->head_sent)
                return 0;
        va_start(ap, fmt);
        n = vsnprintf(body, sizeof(body) - 1, fmt, ap);
        va_end(ap);
        if (n < 0)
                n = 0;
        if ((size_t)n > sizeof(body) - 2)
                n = sizeof(body) - 2;
        /* One line: a reason with a newline inside (a path) is cut there. */
        for (int i = 0; i < n; i++)
                if (body[i] == '\n' || body[i] == '\r')
                        n = i;
        body[n++] = '\n';
        h = snprintf(head, sizeof(head),
                     "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n"
                     "%sConnection: close\r\n\r\n",
                     status, status_reason(status), n,
                     status == 405 ? "Allow: GET, POST, PUT\r\n" : "");
        req->head_sent = true;
        r = http_write_all(req->fd, head, (size_t)h);
        if (r == 0)
                r = http_write_all(req->fd, body, (size_t)n);
        return r;
}

int http_reply_head(struct http_request *req, int status, const char *content_type,
                    long long content_length)
{
        char head[512], len[64] = "";
        int h;

        if (content_length >= 0)
                (void)snprintf(len, sizeof(len), "Content-Length: %lld\r\n", content_length);
        else if (content_length == HTTP_CHUNKED && !req->http10)
                (void)snprintf(len, sizeof(len), "Transfer-Encoding: chunked\r\n");
        h = snprintf(head, sizeof(head), "HTTP/1.1 %d %s\r\n%s%s%s%sConnection: close\r\n\r\n",
                     status, status_reason(status), content_type ? "Content-Type: " : "",
                     content_type ? content_type : "", content_type ? "\r\n" : "", len);
        req->head_sent = true;
        return http_write_all(req->fd, head, (size_t)h);
}

int http_send_continue(struct http_request *req)
{
        static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";

        if (!req->expect_continue || req->continue_sent || req->head_sent)
                return 0;
        req->continue_sent = true;
        return http_write_all(req->fd, cont, sizeof(cont) - 1);
}

long http_body_read(struct http_request *req, void *buf, size_t size)
{
        size_t have;
        ssize_t n;

        if (req->body_left == 0 || size == 0)
                return 0;
        if (!req->head_sent) {
                int r = http_send_continue(req);

                if (r < 0)
                        return r;
        }
        if ((long long)size > req->body_left)
                size = (size_t)req->body_left;
        have = req->len - req->body_off;
        if (have > 0) {
                if (have > size)
                        have = size;
                memcpy(buf, req->buf + req->body_off, have);
                req->body_off += have;
                req->body_left -= (long long)have;
                return (long)have;
        }
        do
                n = recv(req->fd, buf, size, 0);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return -errno;
        if (n == 0)
                return -EPIPE;
        req->body_left -= n;
        return (long)n;
}
