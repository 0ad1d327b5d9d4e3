/* fuzz_multipart: upload bodies (POST .../proxy/44772/files/upload) are
 * untrusted bytes. The first input byte picks a chunk size; the rest is fed
 * to a multipart parser (boundary "XyZ") whole and again in chunks of that
 * size, and both runs must report the same parts, bytes and result: the
 * parser is incremental, so split points must not matter. Callbacks check
 * their own contracts (data only inside a part, begin/end paired). The
 * input is also read as a Content-Type for multipart_boundary(). Any crash,
 * sanitizer report or abort() is a bug. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "codec/multipart.h"

struct trace {
        uint64_t hash;   /* FNV-1a over every event */
        size_t bytes;
        int parts;
        bool in_part;
};

static void mix(struct trace *t, const void *p, size_t n)
{
        const uint8_t *b = p;

        for (size_t i = 0; i < n; i++)
                t->hash = (t->hash ^ b[i]) * 1099511628211ULL;
}

static int on_begin(void *ud, const struct multipart_part *p)
{
        struct trace *t = ud;

        CHECK(!t->in_part);
        CHECK(strnlen(p->name, sizeof(p->name)) < sizeof(p->name));
        CHECK(strnlen(p->filename, sizeof(p->filename)) < sizeof(p->filename));
        CHECK(strnlen(p->content_type, sizeof(p->content_type)) < sizeof(p->content_type));
        CHECK(p->has_filename || !p->filename[0]);
        t->in_part = true;
        t->parts++;
        mix(t, "B", 1);
        mix(t, p->name, strlen(p->name));
        mix(t, p->filename, strlen(p->filename));
        return 0;
}

static int on_data(void *ud, const char *d, size_t n)
{
        struct trace *t = ud;

        CHECK(t->in_part && n > 0);
        t->bytes += n;
        mix(t, d, n); /* chunking may split data differently: hash bytes only */
        return 0;
}

static int on_end(void *ud)
{
        struct trace *t = ud;

        CHECK(t->in_part);
        t->in_part = false;
        mix(t, "E", 1);
        return 0;
}

static const struct multipart_cb cb = { on_begin, on_data, on_end };

static int run(const char *data, size_t size, size_t chunk, struct trace *t)
{
        struct multipart *m = NULL;
        int r;

        memset(t, 0, sizeof(*t));
        t->hash = 14695981039346656037ULL;
        CHECK(multipart_new("XyZ", &cb, t, &m) == 0);
        r = 0;
        for (size_t off = 0; off < size && r == 0; off += chunk) {
                size_t n = size - off < chunk ? size - off : chunk;
                r = multipart_feed(m, data + off, n);
        }
        if (r == 0)
                r = multipart_finish(m);
        CHECK(r == 0 || r == -EPROTO || r == -E2BIG);
        CHECK(multipart_parts(m) == t->parts);
        CHECK(t->parts <= MULTIPART_MAX_PARTS);
        multipart_free(m);
        return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct trace whole, chunked;
        char ct[256], b[MULTIPART_BOUNDARY_MAX + 1];
        size_t chunk;
        int r1, r2;

        if (size == 0)
                return 0;
        chunk = (size_t)data[0] % 17 + 1;
        data++;
        size--;
        r1 = run((const char *)data, size, size ? size : 1, &whole);
        r2 = run((const char *)data, size, chunk, &chunked);
        CHECK(r1 == r2);
        /* an error may stop one run earlier inside a part's data */
        if (r1 == 0) {
                CHECK(whole.hash == chunked.hash);
                CHECK(whole.bytes == chunked.bytes && whole.parts == chunked.parts);
                CHECK(!whole.in_part);
        }

        memcpy(ct, data, size < sizeof(ct) - 1 ? size : sizeof(ct) - 1);
        ct[size < sizeof(ct) - 1 ? size : sizeof(ct) - 1] = '\0';
        if (multipart_boundary(ct, b, sizeof(b)) == 0) {
                struct multipart *m = NULL;
                CHECK(strlen(b) >= 1 && strlen(b) <= MULTIPART_BOUNDARY_MAX);
                CHECK(multipart_new(b, &cb, &whole, &m) == 0);
                multipart_free(m);
        }
        return 0;
}
