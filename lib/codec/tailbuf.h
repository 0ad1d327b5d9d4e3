/* tailbuf: the last `max` bytes of a byte stream (a running command's
 * output, its streams combined in arrival order), in a fixed ring; older
 * bytes are dropped as new ones come. Pure: no I/O. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tailbuf {
        char *buf;      /* max bytes, allocated by the first append (owned) */
        size_t max;     /* bytes kept; set before the first append (> 0) */
        size_t len;     /* bytes held, at most max */
        size_t head;    /* where the next byte goes */
        uint64_t total; /* every byte ever appended */
};

/* Append n bytes, dropping the oldest beyond max. Returns 0, -EINVAL (max
 * is 0) or -ENOMEM. */
int tailbuf_append(struct tailbuf *t, const void *data, size_t n);

/* Copy the bytes held, oldest first, into out (room for t->len bytes at
 * least). Returns t->len. */
size_t tailbuf_copy(const struct tailbuf *t, char *out);

/* Free the ring and reset the state (keeps max); accepts NULL. */
void tailbuf_release(struct tailbuf *t);

/* Lines of a tail (a container's log read with Docker's tail=N+1): out
 * holds the last len bytes of a stream of `lines` lines (a last one without
 * its newline counts), `dropped` when bytes before out were lost (the byte
 * cap). Returns where its whole lines, at most lines_max of them, begin:
 * past the first line when it is partial (dropped) or one too many
 * (lines > lines_max); 0 when out holds no newline to cut at. *ret_cut
 * tells whether anything of the stream is left out. Pure. */
size_t tailbuf_line_start(const char *out, size_t len, uint64_t lines, uint64_t lines_max, bool dropped,
                          bool *ret_cut);
