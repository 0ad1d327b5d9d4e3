/* linebuf: see linebuf.h. */
#include "codec/linebuf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Bytes of the first piece of an over-long line: max, less a UTF-8
 * sequence that would be cut (continuation bytes are 10xxxxxx). */
static size_t piece_len(const char *s, size_t max)
{
        size_t n = max;

        for (size_t back = 0; back < 3 && n > 1; back++) {
                unsigned char c = (unsigned char)s[n];
                if ((c & 0xC0) != 0x80)
                        return n;
                n--;
        }
        return max;
}

static int emit_long(struct linebuf *lb, linebuf_fn fn, void *ud)
{
        /* hand out full pieces while the pending line is longer than max */
        while (lb->len > lb->max) {
                size_t n = piece_len(lb->buf, lb->max);
                int r;

                lb->ended = false;
                r = fn(ud, lb->buf, n);

                if (r < 0)
                        return r;
                memmove(lb->buf, lb->buf + n, lb->len - n);
                lb->len -= n;
        }
        return 0;
}

static int append(struct linebuf *lb, const char *p, size_t n)
{
        if (lb->len + n > lb->cap) {
                size_t cap = lb->cap ? lb->cap : 256;
                char *b;

                while (cap < lb->len + n)
                        cap *= 2;
                b = realloc(lb->buf, cap);
                if (!b)
                        return -ENOMEM;
                lb->buf = b;
                lb->cap = cap;
        }
        memcpy(lb->buf + lb->len, p, n);
        lb->len += n;
        return 0;
}

int linebuf_feed(struct linebuf *lb, const char *data, size_t len, linebuf_fn fn, void *ud)
{
        size_t i = 0;
        int r;

        if (lb->max < 4)
                lb->max = 4;
        while (i < len) {
                size_t start = i;

                if (lb->last_cr && data[i] == '\n') { /* the "\n" of "\r\n" */
                        lb->last_cr = false;
                        i++;
                        continue;
                }
                lb->last_cr = false;
                while (i < len && data[i] != '\n' && data[i] != '\r')
                        i++;
                /* A whole line inside this chunk with nothing pending: no copy. */
                if (i < len && lb->len == 0 && i - start <= lb->max) {
                        lb->ended = true;
                        r = fn(ud, data + start, i - start);
                        if (r < 0)
                                return r;
                } else {
                        if ((r = append(lb, data + start, i - start)) < 0 ||
                            (r = emit_long(lb, fn, ud)) < 0)
                                return r;
                        if (i == len)
                                break;
                        lb->ended = true;
                        r = fn(ud, lb->buf ? lb->buf : "", lb->len);
                        if (r < 0)
                                return r;
                        lb->len = 0;
                }
                lb->last_cr = data[i] == '\r';
                i++;
        }
        return 0;
}

int linebuf_flush(struct linebuf *lb, linebuf_fn fn, void *ud)
{
        int r = 0;

        lb->ended = false;
        if (lb->len > 0)
                r = fn(ud, lb->buf, lb->len);
        lb->len = 0;
        lb->last_cr = false;
        return r;
}

void linebuf_release(struct linebuf *lb)
{
        if (!lb)
                return;
        free(lb->buf);
        lb->buf = NULL;
        lb->len = lb->cap = 0;
        lb->last_cr = false;
}
