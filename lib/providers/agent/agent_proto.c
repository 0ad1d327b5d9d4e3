/* agent_proto: see agent_proto.h. Three layers, each a state machine fed
 * byte ranges: the head (RFC 9112 section 2-6, as much of it as the agent
 * speaks), the body framing (Content-Length, chunked per RFC 9112 section
 * 7.1, or to the close), and the /exec frames inside the body. Every
 * length read from the peer is checked against a cap before it is used. */
#include "providers/agent/agent_proto.h"

#include "codec/url.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <string.h>
#include <strings.h>

#define CHUNK_HEX_MAX 15 /* hex digits of a chunk size: < 2^60 */
#define LENGTH_DIGITS_MAX 18

static int fail(struct agent_proto *p, const char *why)
{
        p->state = AP_FAILED;
        p->why = why;
        return -EPROTO;
}

/* A callback stopped the feed: failed, without a reason of ours. */
static int stopped(struct agent_proto *p, int r)
{
        p->state = AP_FAILED;
        p->why = NULL;
        return r;
}

void agent_proto_init(struct agent_proto *p, bool frames, const struct agent_proto_cb *cb)
{
        memset(p, 0, sizeof(*p));
        if (cb)
                p->cb = *cb;
        p->frames = frames;
        p->state = AP_STATUS_LINE;
        p->exit_code = -1;
}

static bool status_ok(const struct agent_proto *p)
{
        return p->status >= 200 && p->status < 300;
}

/* A non-2xx answer whose kept body is full: done, the rest ignored. */
static bool err_full(const struct agent_proto *p)
{
        return !status_ok(p) && p->err_len == AGENT_ERR_BODY_MAX;
}

/* ---- lines (status line, header lines, trailers) ---- */

/* Take one byte of a line into p->line (its first AGENT_LINE_KEEP - 1
 * bytes kept, NUL-terminated). CR only right before LF; other control
 * bytes, NUL included, are refused so that a kept line is a C string that
 * means what it says. Sets *ret_complete at LF; p->line_len is then the
 * line's length without CR LF. */
static int line_byte(struct agent_proto *p, unsigned char c, bool *ret_complete)
{
        *ret_complete = false;
        if (c == '\n') {
                p->line[p->line_len < AGENT_LINE_KEEP ? p->line_len : AGENT_LINE_KEEP - 1] = '\0';
                p->line_cr = false;
                *ret_complete = true;
                return 0;
        }
        if (p->line_cr)
                return fail(p, "bare CR in a header line");
        if (c == '\r') {
                p->line_cr = true;
                return 0;
        }
        if ((c < 0x20 && c != '\t') || c == 0x7f)
                return fail(p, "control byte in a header line");
        if (p->line_len < AGENT_LINE_KEEP - 1)
                p->line[p->line_len] = (char)c;
        p->line_len++;
        return 0;
}

/* Strict decimal: digits only, no sign, no leading zero (but "0"), at
 * most max_digits. */
static int parse_decimal(const char *s, size_t n, size_t max_digits, uint64_t *ret)
{
        uint64_t v = 0;

        if (n == 0 || n > max_digits || (n > 1 && s[0] == '0'))
                return -EPROTO;
        for (size_t i = 0; i < n; i++) {
                if (s[i] < '0' || s[i] > '9')
                        return -EPROTO;
                v = v * 10 + (uint64_t)(s[i] - '0');
        }
        *ret = v;
        return 0;
}

/* "HTTP/1.x NNN[ reason]". */
static int status_line(struct agent_proto *p)
{
        const char *l = p->line;
        int st;

        if (p->line_len < 12 || strncmp(l, "HTTP/1.", 7) != 0 || (l[7] != '0' && l[7] != '1') ||
            l[8] != ' ')
                return fail(p, "no HTTP/1.x status line");
        for (int i = 9; i < 12; i++)
                if (l[i] < '0' || l[i] > '9')
                        return fail(p, "status code not 3 digits");
        if (p->line_len > 12 && l[12] != ' ')
                return fail(p, "status code not 3 digits");
        st = (l[9] - '0') * 100 + (l[10] - '0') * 10 + (l[11] - '0');
        /* 1xx: we never send Expect; only a tunnel (upgrade) switches. */
        if ((st < 200 && !(st == 101 && p->upgrade)) || st > 599)
                return fail(p, "status code out of range");
        p->status = st;
        p->state = AP_HEADER_LINE;
        return 0;
}

static bool is_tchar(char c)
{
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* The blank line: decide how the body is delimited. */
static int head_end(struct agent_proto *p)
{
        p->head_done = true;
        p->state = AP_BODY;
        if (p->have_chunked && p->have_length)
                return fail(p, "both Content-Length and Transfer-Encoding");
        if (p->status == 204 || p->status == 304 || p->status == 101)
                p->kind = AP_BODY_NONE;
        else if (p->have_chunked)
                p->kind = AP_BODY_CHUNKED;
        else if (p->have_length)
                p->kind = p->remaining ? AP_BODY_LENGTH : AP_BODY_NONE;
        else
                p->kind = AP_BODY_EOF;
        p->chunk = AP_CHUNK_SIZE;
        p->line_len = 0;
        return 0;
}

static int header_line(struct agent_proto *p)
{
        char *colon, *v, *end;
        size_t name_len;
        bool whole = p->line_len < AGENT_LINE_KEEP;

        if (p->line_len == 0)
                return head_end(p);
        if (p->line[0] == ' ' || p->line[0] == '\t')
                return fail(p, "folded header line");
        colon = strchr(p->line, ':');
        if (!colon)
                return fail(p, "header line without a colon");
        name_len = (size_t)(colon - p->line);
        if (name_len == 0)
                return fail(p, "empty header name");
        for (size_t i = 0; i < name_len; i++)
                if (!is_tchar(p->line[i]))
                        return fail(p, "bad byte in a header name");
        v = colon + 1;
        while (*v == ' ' || *v == '\t')
                v++;
        end = v + strlen(v);
        while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
                end--;

        if (name_len == 14 && strncasecmp(p->line, "Content-Length", 14) == 0) {
                uint64_t n;

                if (!whole || parse_decimal(v, (size_t)(end - v), LENGTH_DIGITS_MAX, &n) < 0)
                        return fail(p, "bad Content-Length");
                if (p->have_length && n != p->remaining)
                        return fail(p, "conflicting Content-Length");
                p->have_length = true;
                p->remaining = n;
        } else if (name_len == 17 && strncasecmp(p->line, "Transfer-Encoding", 17) == 0) {
                if (!whole || end - v != 7 || strncasecmp(v, "chunked", 7) != 0)
                        return fail(p, "unsupported Transfer-Encoding");
                if (p->have_chunked)
                        return fail(p, "repeated Transfer-Encoding");
                p->have_chunked = true;
        }
        return 0;
}

/* ---- the decoded body ---- */

static int frame_line(struct agent_proto *p)
{
        const char *l = p->fline;
        size_t n = p->fline_len;
        uint64_t v;

        if (n < 3 || l[1] != ' ')
                return fail(p, "malformed frame header");
        if (l[0] == '1' || l[0] == '2') {
                if (parse_decimal(l + 2, n - 2, 7, &v) < 0 || v < 1 || v > AGENT_FRAME_MAX)
                        return fail(p, "bad frame length");
                p->fstream = l[0] - '0';
                p->fremaining = (uint32_t)v;
                p->frame = AP_FRAME_DATA;
                return 0;
        }
        if (l[0] == 'x') {
                /* "x <code> <0|1>": code -1 (detached) or 0..255 */
                const char *c = l + 2, *sp = memchr(c, ' ', n - 2);
                bool neg;
                int r;

                if (!sp || (size_t)(l + n - sp) != 2 || (sp[1] != '0' && sp[1] != '1'))
                        return fail(p, "malformed exit frame");
                neg = *c == '-';
                if (parse_decimal(c + neg, (size_t)(sp - c - neg), 3, &v) < 0 || (neg && v != 1) ||
                    (!neg && v > 255))
                        return fail(p, "bad exit code");
                p->exit_code = neg ? -1 : (int)v;
                p->timed_out = sp[1] == '1';
                p->exited = true;
                p->frame = AP_FRAME_END;
                if (p->cb.on_exit && (r = p->cb.on_exit(p->cb.ud, p->exit_code, p->timed_out)) < 0)
                        return stopped(p, r);
                return 0;
        }
        return fail(p, "unknown frame type");
}

static int frames_feed(struct agent_proto *p, const char *d, size_t n)
{
        size_t i = 0;
        int r;

        while (i < n) {
                switch (p->frame) {
                case AP_FRAME_LINE:
                        if (d[i] == '\n') {
                                i++;
                                if ((r = frame_line(p)) < 0)
                                        return r;
                                p->fline_len = 0;
                                break;
                        }
                        if (p->fline_len >= AGENT_FRAME_LINE_MAX - 1)
                                return fail(p, "frame header too long");
                        p->fline[p->fline_len++] = d[i++];
                        p->fline[p->fline_len] = '\0';
                        break;
                case AP_FRAME_DATA: {
                        size_t take = n - i < p->fremaining ? n - i : p->fremaining;

                        if (p->cb.on_output &&
                            (r = p->cb.on_output(p->cb.ud, p->fstream, d + i, take)) < 0)
                                return stopped(p, r);
                        i += take;
                        p->fremaining -= (uint32_t)take;
                        if (p->fremaining == 0)
                                p->frame = AP_FRAME_LINE;
                        break;
                }
                case AP_FRAME_END: return fail(p, "bytes after the exit frame");
                }
        }
        return 0;
}

/* n decoded body bytes: to the frames, the caller, or the error body. */
static int body_bytes(struct agent_proto *p, const char *d, size_t n)
{
        int r;

        if (n == 0)
                return 0;
        if (!status_ok(p)) {
                size_t room = AGENT_ERR_BODY_MAX - p->err_len, take = n < room ? n : room;

                memcpy(p->err_body + p->err_len, d, take);
                p->err_len += take;
                p->err_body[p->err_len] = '\0';
                if (take < n)
                        p->err_truncated = true;
                /* Kept what we keep: the answer is over for us, whatever
                 * follows (agent_proto_feed ignores it). */
                if (p->err_len == AGENT_ERR_BODY_MAX)
                        p->state = AP_DONE;
                return 0;
        }
        if (p->frames)
                return frames_feed(p, d, n);
        if (p->cb.on_body && (r = p->cb.on_body(p->cb.ud, d, n)) < 0)
                return stopped(p, r);
        return 0;
}

/* The body ended where its framing says. */
static int body_end(struct agent_proto *p)
{
        if (status_ok(p) && p->frames && p->frame != AP_FRAME_END)
                return fail(p, "answer ended before the exit frame");
        p->state = AP_DONE;
        return 0;
}

/* One byte of a chunk-size line: hex digits, then optional whitespace and
 * ;extensions (ignored), CR LF. */
static int chunk_size_byte(struct agent_proto *p, unsigned char c)
{
        int h;

        if (++p->line_len > AGENT_CHUNK_LINE_MAX)
                return fail(p, "chunk-size line too long");
        if (c == '\n') {
                if (!p->chunk_digits)
                        return fail(p, "chunk-size line without a size");
                p->line_len = 0;
                p->chunk_digits = 0;
                p->chunk_ext = p->line_cr = false;
                if (p->remaining == 0) {
                        p->chunk = AP_CHUNK_TRAILER;
                        p->head_len = 0;
                } else {
                        p->chunk = AP_CHUNK_DATA;
                }
                return 0;
        }
        if (p->chunk_ext)
                return 0;
        if (p->line_cr)
                return fail(p, "bare CR in a chunk-size line");
        if (c == '\r') {
                p->line_cr = true;
                return 0;
        }
        if (c == ';' || c == ' ' || c == '\t') {
                if (!p->chunk_digits)
                        return fail(p, "chunk-size line without a size");
                p->chunk_ext = true;
                return 0;
        }
        if ((h = url_hex_digit(c)) < 0)
                return fail(p, "bad byte in a chunk size");
        if (++p->chunk_digits > CHUNK_HEX_MAX)
                return fail(p, "chunk size too large");
        p->remaining = p->remaining << 4 | (uint64_t)h;
        return 0;
}

static int chunked_feed(struct agent_proto *p, const char *d, size_t n, size_t *ret_used)
{
        size_t i = 0;
        bool complete;
        int r;

        while (i < n && p->state == AP_BODY) {
                unsigned char c = (unsigned char)d[i];

                switch (p->chunk) {
                case AP_CHUNK_SIZE:
                        i++;
                        if ((r = chunk_size_byte(p, c)) < 0)
                                return r;
                        break;
                case AP_CHUNK_DATA: {
                        size_t take = n - i < p->remaining ? n - i : (size_t)p->remaining;

                        if ((r = body_bytes(p, d + i, take)) < 0)
                                return r;
                        i += take;
                        p->remaining -= take;
                        if (p->remaining == 0)
                                p->chunk = AP_CHUNK_DATA_CR;
                        break;
                }
                case AP_CHUNK_DATA_CR:
                        i++;
                        if (c == '\r')
                                p->chunk = AP_CHUNK_DATA_LF;
                        else if (c == '\n')
                                p->chunk = AP_CHUNK_SIZE;
                        else
                                return fail(p, "chunk data not followed by CRLF");
                        break;
                case AP_CHUNK_DATA_LF:
                        i++;
                        if (c != '\n')
                                return fail(p, "chunk data not followed by CRLF");
                        p->chunk = AP_CHUNK_SIZE;
                        break;
                case AP_CHUNK_TRAILER:
                        /* trailer fields: checked as lines, then ignored */
                        i++;
                        if (p->head_len == AGENT_HEAD_MAX)
                                return fail(p, "trailers too long");
                        p->head_len++;
                        if ((r = line_byte(p, c, &complete)) < 0)
                                return r;
                        if (!complete)
                                break;
                        if (p->line_len == 0 && (r = body_end(p)) < 0)
                                return r;
                        p->line_len = 0;
                        break;
                }
        }
        *ret_used = i;
        return 0;
}

int agent_proto_feed(struct agent_proto *p, const void *data, size_t n)
{
        const char *d = data;
        size_t i = 0;
        int r;

        while (i < n) {
                switch (p->state) {
                case AP_STATUS_LINE:
                case AP_HEADER_LINE: {
                        bool complete;

                        if (p->head_len == AGENT_HEAD_MAX)
                                return fail(p, "header block over 16 KiB");
                        p->head_len++;
                        if ((r = line_byte(p, (unsigned char)d[i++], &complete)) < 0)
                                return r;
                        if (!complete)
                                break;
                        r = p->state == AP_STATUS_LINE ? status_line(p) : header_line(p);
                        if (r < 0)
                                return r;
                        p->line_len = 0;
                        if (p->state == AP_BODY && p->kind == AP_BODY_NONE && (r = body_end(p)) < 0)
                                return r;
                        break;
                }
                case AP_BODY:
                        if (p->kind == AP_BODY_CHUNKED) {
                                size_t used = 0;

                                if ((r = chunked_feed(p, d + i, n - i, &used)) < 0)
                                        return r;
                                i += used;
                        } else if (p->kind == AP_BODY_LENGTH) {
                                size_t take = n - i < p->remaining ? n - i : (size_t)p->remaining;

                                if ((r = body_bytes(p, d + i, take)) < 0)
                                        return r;
                                i += take;
                                p->remaining -= take;
                                if (p->remaining == 0 && (r = body_end(p)) < 0)
                                        return r;
                        } else { /* AP_BODY_EOF; NONE never stays in AP_BODY */
                                if ((r = body_bytes(p, d + i, n - i)) < 0)
                                        return r;
                                i = n;
                        }
                        break;
                case AP_DONE:
                        /* The answer is complete: a caller stops reading
                         * there, so what follows (in the same read or not)
                         * must not change the outcome. Ignored. */
                        if (err_full(p))
                                p->err_truncated = true;
                        return 0;
                case AP_FAILED: return -EPROTO;
                }
        }
        return p->state == AP_FAILED ? -EPROTO : 0;
}

int agent_proto_finish(struct agent_proto *p)
{
        if (agent_proto_done(p))
                return 0;
        switch (p->state) {
        case AP_FAILED: return -EPROTO;
        case AP_STATUS_LINE:
                return fail(p, p->head_len ? "connection closed in the status line"
                                           : "connection closed without an answer");
        case AP_HEADER_LINE: return fail(p, "connection closed in the headers");
        case AP_BODY:
                if (p->kind == AP_BODY_EOF)
                        return body_end(p);
                return fail(p, "connection closed in the body");
        case AP_DONE: break;
        }
        return 0;
}

uint64_t agent_proto_passable(const struct agent_proto *p)
{
        if (p->state != AP_BODY || p->kind != AP_BODY_LENGTH || p->frames || !status_ok(p))
                return 0;
        return p->remaining;
}

void agent_proto_skip(struct agent_proto *p, uint64_t n)
{
        if (n == 0 || n > agent_proto_passable(p))
                return;
        p->remaining -= n;
        if (p->remaining == 0)
                (void)body_end(p); /* no frames: cannot fail */
}

bool agent_proto_done(const struct agent_proto *p)
{
        return p->state == AP_DONE;
}

/* ---- GET /health ---- */

static bool is_value(const char *v, size_t n, const char *want)
{
        return n == strlen(want) && memcmp(v, want, n) == 0;
}

int agent_health_parse(const char *body, size_t n, struct agent_health *ret)
{
        bool agent = false, have_state = false, exited = false, running = false;
        bool have_code = false;
        uint64_t code = 0;
        size_t i = 0;

        while (i < n) {
                const char *line = body + i, *nl = memchr(line, '\n', n - i), *eq;
                size_t len = nl ? (size_t)(nl - line) : n - i, klen, vlen;

                i += len + (nl ? 1 : 0);
                if (len && line[len - 1] == '\r')
                        len--;
                if (len == 0)
                        continue;
                eq = memchr(line, '=', len);
                if (!eq)
                        return -EPROTO;
                klen = (size_t)(eq - line);
                vlen = len - klen - 1;
                if (is_value(line, klen, "agent")) {
                        if (!is_value(eq + 1, vlen, "1"))
                                return -EPROTO;
                        agent = true;
                } else if (is_value(line, klen, "entrypoint")) {
                        running = is_value(eq + 1, vlen, "running");
                        exited = is_value(eq + 1, vlen, "exited");
                        if (!running && !exited && !is_value(eq + 1, vlen, "none"))
                                return -EPROTO;
                        have_state = true;
                } else if (is_value(line, klen, "exit_code")) {
                        if (parse_decimal(eq + 1, vlen, 3, &code) < 0 || code > 255)
                                return -EPROTO;
                        have_code = true;
                }
        }
        if (!agent || !have_state || (exited && !have_code))
                return -EPROTO;
        ret->running = running;
        ret->exited = exited;
        ret->exit_code = exited ? (int)code : -1;
        return 0;
}
