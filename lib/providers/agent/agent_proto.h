/* agent_proto: the one parser of everything sandbox-agent sends the broker
 * (docs/AGENT.md, "Protocol"): an HTTP/1.1 answer (status line, headers,
 * a body by Content-Length, chunked, or up to the close) and, inside the
 * body of POST /exec, the agent's frames:
 *
 *   1 <len>\n<len bytes of stdout>
 *   2 <len>\n<len bytes of stderr>
 *   x <exit_code> <timed_out 0|1>\n          (last)
 *
 * The sandbox is hostile, so the parser trusts no length: it is fed byte
 * pieces of any size (split anywhere), keeps nothing but a few fixed
 * buffers (no allocation at all), never recurses, and turns every
 * malformed input into -EPROTO with a reason in p->why. Bounds: the header
 * block AGENT_HEAD_MAX, a chunk-size line AGENT_CHUNK_LINE_MAX, trailers
 * AGENT_HEAD_MAX, a frame AGENT_FRAME_MAX, an error body AGENT_ERR_BODY_MAX
 * (kept; the rest is dropped). Pure: no I/O. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define AGENT_HEAD_MAX (16 * 1024)    /* status line + headers, blank line included */
#define AGENT_LINE_KEEP 256           /* bytes of a header line looked at */
#define AGENT_CHUNK_LINE_MAX 1024     /* chunk size + extensions */
#define AGENT_FRAME_MAX (1024 * 1024) /* a frame's payload */
#define AGENT_FRAME_LINE_MAX 32       /* a frame header; "1 1048576\n" is 10 */
#define AGENT_ERR_BODY_MAX 4096       /* the body of a non-2xx answer */

/* What the parser hands on. Every callback may be NULL (the bytes are then
 * dropped); a negative return stops the feed and is returned by
 * agent_proto_feed (p->why stays NULL, so a caller can tell it from a
 * malformed answer). */
struct agent_proto_cb {
        /* The 2xx body, decoded, when frames is off. */
        int (*on_body)(void *ud, const char *p, size_t n);
        /* Frame payload (stream 1 stdout, 2 stderr), in order, in pieces. */
        int (*on_output)(void *ud, int stream, const char *p, size_t n);
        /* The x frame (once). */
        int (*on_exit)(void *ud, int exit_code, bool timed_out);
        void *ud;
};

enum agent_head_state { AP_STATUS_LINE, AP_HEADER_LINE, AP_BODY, AP_DONE, AP_FAILED };
enum agent_body_kind { AP_BODY_NONE, AP_BODY_LENGTH, AP_BODY_CHUNKED, AP_BODY_EOF };
enum agent_chunk_state {
        AP_CHUNK_SIZE,
        AP_CHUNK_DATA,
        AP_CHUNK_DATA_CR,
        AP_CHUNK_DATA_LF,
        AP_CHUNK_TRAILER
};
enum agent_frame_state { AP_FRAME_LINE, AP_FRAME_DATA, AP_FRAME_END };

/* One answer's parse state. Read-only for callers but for agent_proto_init;
 * the public facts: status, head_done, exited/exit_code/timed_out,
 * err_body/err_len/err_truncated, why. */
struct agent_proto {
        struct agent_proto_cb cb;
        bool frames; /* decode the 2xx body as /exec frames */
        /* Set by the caller after agent_proto_init for GET /tunnel: a 101
         * answer is accepted and complete at its blank line (head_len is
         * then the exact size of the head; what follows is the tunnel's). */
        bool upgrade;
        enum agent_head_state state;
        const char *why; /* static reason of -EPROTO, else NULL */

        /* head */
        int status; /* 0 until the status line is read */
        bool head_done;
        size_t head_len;            /* head bytes so far (and trailer bytes) */
        char line[AGENT_LINE_KEEP]; /* the current line's first bytes */
        size_t line_len;            /* its full length so far */
        bool line_cr;               /* the last byte of the line was CR */
        bool have_length, have_chunked;

        /* body framing */
        enum agent_body_kind kind;
        uint64_t remaining; /* of the Content-Length or of the chunk */
        enum agent_chunk_state chunk;
        bool chunk_ext;        /* in a chunk extension (ignored) */
        unsigned chunk_digits; /* hex digits of the size so far */

        /* frames */
        enum agent_frame_state frame;
        char fline[AGENT_FRAME_LINE_MAX];
        size_t fline_len;
        int fstream;
        uint32_t fremaining;
        bool exited, timed_out;
        int exit_code;

        /* the body of a non-2xx answer */
        char err_body[AGENT_ERR_BODY_MAX + 1]; /* NUL-terminated */
        size_t err_len;
        bool err_truncated;
};

/* Start a parse: frames for the answer of POST /exec; cb is copied (may be
 * NULL: nothing handed on). */
void agent_proto_init(struct agent_proto *p, bool frames, const struct agent_proto_cb *cb);

/* Feed the next n bytes of the answer (n may be 0). Returns 0, -EPROTO on a
 * malformed answer (p->why says why; the parser then stays failed and
 * refuses more), or a callback's negative return (the parser is then
 * failed too). Bytes after the end of the answer (agent_proto_done) are
 * ignored, so that the outcome does not depend on how reads were cut;
 * after a non-2xx answer's full kept body they set err_truncated. */
int agent_proto_feed(struct agent_proto *p, const void *data, size_t n);

/* The peer closed the connection: 0 if the answer is complete (a body read
 * up to the close ends here), -EPROTO if it was cut short (head, a length, a
 * chunk, a frame, or /exec frames without the x frame). Idempotent. */
int agent_proto_finish(struct agent_proto *p);

/* True once the answer is complete, or once a non-2xx answer's kept body
 * is full (AGENT_ERR_BODY_MAX bytes; the rest would only be dropped): a
 * caller stops reading then. */
bool agent_proto_done(const struct agent_proto *p);

/* How many bytes of the body that follow a caller may take itself (past
 * the parser, agent_proto_skip): the rest of a 2xx answer's Content-Length
 * body without frames; else 0 (they must be fed). */
uint64_t agent_proto_passable(const struct agent_proto *p);

/* n bytes (1 .. agent_proto_passable) of the body taken by the caller. */
void agent_proto_skip(struct agent_proto *p, uint64_t n);

/* The body of GET /health (docs/AGENT.md), parsed. */
struct agent_health {
        bool running;  /* entrypoint=running */
        bool exited;   /* entrypoint=exited; exit_code is then valid */
        int exit_code; /* 128+signal when killed by one; -1 unless exited */
};

/* Parse a /health body (n bytes, need not be NUL-terminated): lines
 * "key=value", unknown keys ignored; it must say agent=1 and an entrypoint
 * of running, exited (with exit_code=N, 0..255) or none. Returns 0 or
 * -EPROTO. */
int agent_health_parse(const char *body, size_t n, struct agent_health *ret);
