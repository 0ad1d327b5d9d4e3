/* linebuf: split a byte stream (command output arriving in chunks of any
 * size) into lines, the way execd's output tail does: a line ends at "\n",
 * "\r" or "\r\n" (one end, not two); the terminator is not part of the line.
 * A line longer than `max` bytes is handed out in pieces of at most `max`
 * bytes, cut at a UTF-8 character boundary when one is near. Pure: no I/O. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

struct linebuf {
        char *buf;       /* the unfinished line (owned) */
        size_t len, cap;
        size_t max;      /* longest piece handed out; set before the first feed (>= 4) */
        bool last_cr;    /* the previous byte ended a line with "\r" */
        bool ended;      /* for the callback: the line it gets ended with a
                          * terminator (false for a piece of a long line that
                          * goes on, and for the unterminated rest at flush) */
};

/* Called once per line (or piece of a long line); line is not NUL-terminated
 * and is only valid during the call. A negative return stops the feed and is
 * returned by it. */
typedef int (*linebuf_fn)(void *ud, const char *line, size_t len);

/* Feed len bytes; fn gets every line completed by them. Returns 0, fn's
 * negative value, or -ENOMEM. */
int linebuf_feed(struct linebuf *lb, const char *data, size_t len, linebuf_fn fn, void *ud);

/* End of stream: hand out an unfinished last line (one without a
 * terminator), if any. Returns 0 or fn's negative value. */
int linebuf_flush(struct linebuf *lb, linebuf_fn fn, void *ud);

/* Free the buffer and reset the state (keeps max); accepts NULL. */
void linebuf_release(struct linebuf *lb);
