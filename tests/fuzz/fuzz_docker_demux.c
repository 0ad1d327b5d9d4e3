/* fuzz_docker_demux: the attached exec stream (POST /exec/{id}/start) is
 * framed by the container side: a command inside a sandbox can't forge the
 * framing, but a broken daemon or a proxy can cut it anywhere, and curl
 * hands it over in pieces of any size. Input layout:
 *
 *   byte 0      output cap selector (http_buf.max = byte * 3)
 *   byte 1      k = byte % 16: number of chunk-size bytes that follow
 *   k bytes     chunk sizes, cycled (0 is a zero-length feed)
 *   rest        the stream
 *
 * The stream is fed whole and in those chunks, to docker_demux_feed (capped
 * http_bufs) and to docker_demux_feed_fn (a callback that sometimes stops
 * the feed), and compared with a straightforward reference decoder: split
 * points must not change the bytes, their streams, the result or
 * completeness; caps must hold; buffers stay NUL-terminated. Any crash,
 * sanitizer report or abort() is a bug. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "providers/docker/docker_api.h"
#include "fuzz.h"

/* What the stream decodes to, uncapped. */
struct expect {
        uint8_t *out, *err;
        size_t out_len, err_len;
        int r;
        bool complete;
};

/* The Docker API's framing, read the simple way over the whole input. */
static void reference(const uint8_t *p, size_t n, struct expect *e)
{
        size_t i = 0;

        memset(e, 0, sizeof(*e));
        e->out = malloc(n + 1);
        e->err = malloc(n + 1);
        CHECK(e->out && e->err);
        e->complete = true;
        while (i < n) {
                size_t len, take;

                if (n - i < 8) {
                        e->complete = false;
                        return;
                }
                if (p[i] > 2 || p[i + 1] || p[i + 2] || p[i + 3]) {
                        e->r = -EPROTO;
                        e->complete = false;
                        return;
                }
                len = (size_t)p[i + 4] << 24 | (size_t)p[i + 5] << 16 | (size_t)p[i + 6] << 8 |
                      p[i + 7];
                take = len < n - i - 8 ? len : n - i - 8;
                if (p[i] == 2) {
                        memcpy(e->err + e->err_len, p + i + 8, take);
                        e->err_len += take;
                } else {
                        memcpy(e->out + e->out_len, p + i + 8, take);
                        e->out_len += take;
                }
                if (take < len)
                        e->complete = false;
                i += 8 + take;
        }
}

static void check_buf(const struct http_buf *b, const uint8_t *want, size_t want_len)
{
        size_t keep = want_len < b->max ? want_len : b->max;

        CHECK(b->len <= b->max);
        CHECK(b->len == keep);
        CHECK(b->truncated == (want_len > b->max));
        CHECK(b->len == 0 || b->data);
        if (b->data) {
                CHECK(b->len < b->cap);
                CHECK(b->data[b->len] == '\0');
                CHECK(memcmp(b->data, want, b->len) == 0);
        }
}

struct chunks {
        const uint8_t *sizes;
        size_t n;
};

/* Feed p in the given chunks (whole if none) until an error. */
static int feed_bufs(struct docker_demux *d, const uint8_t *p, size_t n, const struct chunks *c,
                     struct http_buf *out, struct http_buf *err)
{
        size_t off = 0, k = 0;
        int r = 0;

        if (c->n == 0)
                return docker_demux_feed(d, p, n, out, err);
        while (off < n && r == 0) {
                size_t take = c->sizes[k++ % c->n];

                if (take > n - off)
                        take = n - off;
                r = docker_demux_feed(d, p + off, take, out, err);
                off += take;
        }
        return r;
}

struct sink {
        size_t seen, stop_after; /* bytes delivered; stop once past stop_after */
        const struct expect *e;
        size_t out_at, err_at;
};

static int on_piece(void *ud, int stream, const void *p, size_t n)
{
        struct sink *s = ud;

        CHECK(stream == 1 || stream == 2);
        CHECK(n > 0);
        if (stream == 2) {
                CHECK(s->err_at + n <= s->e->err_len);
                CHECK(memcmp(p, s->e->err + s->err_at, n) == 0);
                s->err_at += n;
        } else {
                CHECK(s->out_at + n <= s->e->out_len);
                CHECK(memcmp(p, s->e->out + s->out_at, n) == 0);
                s->out_at += n;
        }
        s->seen += n;
        return s->seen > s->stop_after ? -ECANCELED : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct docker_demux whole = { 0 }, chunked = { 0 }, fn_d = { 0 };
        struct http_buf wo = { 0 }, we = { 0 }, co = { 0 }, ce = { 0 };
        struct chunks c;
        struct expect e;
        struct sink s;
        const uint8_t *p;
        size_t n, max;
        int rw, rc, rf;

        if (size < 2)
                return 0;
        max = (size_t)data[0] * 3;
        c.n = data[1] % 16;
        if (size - 2 < c.n)
                return 0;
        c.sizes = data + 2;
        p = data + 2 + c.n;
        n = size - 2 - c.n;
        /* all-zero chunk sizes would never advance */
        for (size_t i = 0, nz = 0; i <= c.n; i++) {
                if (i == c.n) {
                        if (!nz)
                                c.n = 0;
                } else if (c.sizes[i]) {
                        nz++;
                }
        }

        reference(p, n, &e);

        wo.max = we.max = co.max = ce.max = max;
        rw = docker_demux_feed(&whole, p, n, &wo, &we);
        rc = feed_bufs(&chunked, p, n, &c, &co, &ce);
        CHECK(rw == e.r);
        CHECK(rc == e.r);
        check_buf(&wo, e.out, e.out_len);
        check_buf(&we, e.err, e.err_len);
        check_buf(&co, e.out, e.out_len);
        check_buf(&ce, e.err, e.err_len);
        CHECK(docker_demux_complete(&whole) == e.complete);
        CHECK(docker_demux_complete(&chunked) == e.complete);
        /* a failed demuxer stays failed */
        if (e.r < 0) {
                CHECK(docker_demux_feed(&whole, "\1\0\0\0\0\0\0\1x", 9, &wo, &we) == -EPROTO);
                CHECK(!docker_demux_complete(&whole));
        }

        /* hand-over: a NUL-terminated string owning the bytes */
        {
                char *str = NULL;
                size_t len = 99;

                CHECK(http_buf_steal(&co, &str, &len) == 0);
                CHECK(str && len == (e.out_len < max ? e.out_len : max) && str[len] == '\0');
                CHECK(co.data == NULL && co.len == 0);
                free(str);
        }

        /* the callback form, stopped by the callback after some bytes */
        memset(&s, 0, sizeof(s));
        s.e = &e;
        s.stop_after = max;
        rf = docker_demux_feed_fn(&fn_d, p, n, on_piece, &s);
        if (s.seen > s.stop_after) {
                CHECK(rf == -ECANCELED);
        } else {
                CHECK(rf == e.r);
                CHECK(s.out_at == e.out_len && s.err_at == e.err_len);
        }

        http_buf_release(&wo);
        http_buf_release(&we);
        http_buf_release(&co);
        http_buf_release(&ce);
        http_buf_release(NULL);
        free(e.out);
        free(e.err);
        return 0;
}
