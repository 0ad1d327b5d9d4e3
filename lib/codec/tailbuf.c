/* tailbuf: see tailbuf.h. */
#include "codec/tailbuf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int tailbuf_append(struct tailbuf *t, const void *data, size_t n)
{
        const char *p = data;
        size_t first;

        if (t->max == 0)
                return -EINVAL;
        if (!t->buf && !(t->buf = malloc(t->max)))
                return -ENOMEM;
        t->total += n;
        if (n >= t->max) {
                /* only the last max bytes of this piece stay */
                memcpy(t->buf, p + n - t->max, t->max);
                t->head = 0;
                t->len = t->max;
                return 0;
        }
        first = t->max - t->head < n ? t->max - t->head : n;
        memcpy(t->buf + t->head, p, first);
        memcpy(t->buf, p + first, n - first);
        t->head = (t->head + n) % t->max;
        t->len = t->len + n < t->max ? t->len + n : t->max;
        return 0;
}

size_t tailbuf_copy(const struct tailbuf *t, char *out)
{
        size_t start, first;

        if (t->len == 0)
                return 0;
        start = (t->head + t->max - t->len) % t->max;
        first = t->max - start < t->len ? t->max - start : t->len;
        memcpy(out, t->buf + start, first);
        memcpy(out + first, t->buf, t->len - first);
        return t->len;
}

void tailbuf_release(struct tailbuf *t)
{
        size_t max;

        if (!t)
                return;
        max = t->max;
        free(t->buf);
        memset(t, 0, sizeof(*t));
        t->max = max;
}

size_t tailbuf_line_start(const char *out, size_t len, uint64_t lines, uint64_t lines_max, bool dropped,
                          bool *ret_cut)
{
        const char *nl;

        *ret_cut = dropped || lines > lines_max;
        if (!*ret_cut)
                return 0;
        /* the first line is either partial or the one asked for beyond
         * the cap (Docker's tail counts lines, not bytes): without a
         * newline in out but its last byte, out is one line cut by the
         * byte cap: keep what is left of it */
        nl = memchr(out, '\n', len);
        if (!nl || (size_t)(nl - out) + 1 == len)
                return 0;
        return (size_t)(nl - out) + 1;
}
