/* Unit tests for the exec stream demultiplexer in lib/providers/docker/docker_api.c: Docker's
 * 8-byte-header frames, fed split at every byte boundary, interleaved
 * stdout/stderr, the per-stream cap with the truncation flag, bad headers. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "providers/docker/docker_api.h"

/* Append one frame (stream, payload) to buf at *len. */
static void frame(uint8_t *buf, size_t *len, uint8_t stream, const void *p, uint32_t n)
{
        uint8_t h[8] = { stream, 0, 0, 0, (uint8_t)(n >> 24), (uint8_t)(n >> 16),
                         (uint8_t)(n >> 8), (uint8_t)n };

        memcpy(buf + *len, h, 8);
        memcpy(buf + *len + 8, p, n);
        *len += 8 + n;
}

struct sink {
        struct docker_demux dm;
        struct http_buf out, err;
};

static void sink_init(struct sink *s, size_t max)
{
        memset(s, 0, sizeof(*s));
        s->out.max = s->err.max = max;
}

static void sink_release(struct sink *s)
{
        http_buf_release(&s->out);
        http_buf_release(&s->err);
}

static const char *str(const struct http_buf *b)
{
        return b->data ? b->data : "";
}

/* A stream of interleaved frames (incl. an empty one and a NUL byte) gives
 * the same result wherever it is cut in two, three or single bytes. */
static void test_split_every_boundary(void **state)
{
        uint8_t buf[256];
        size_t len = 0;

        (void)state;
        frame(buf, &len, 1, "hello ", 6);
        frame(buf, &len, 2, "oops\n", 5);
        frame(buf, &len, 1, "", 0);
        frame(buf, &len, 0, "wor", 3); /* stream 0 (stdin) is written on stdout */
        frame(buf, &len, 1, "ld\0!", 4);
        frame(buf, &len, 2, "E2", 2);

        for (size_t cut = 0; cut <= len; cut++) {
                for (size_t cut2 = cut; cut2 <= len; cut2 += 3) {
                        struct sink s;

                        sink_init(&s, 1024);
                        assert_int_equal(docker_demux_feed(&s.dm, buf, cut, &s.out, &s.err), 0);
                        assert_int_equal(
                                docker_demux_feed(&s.dm, buf + cut, cut2 - cut, &s.out, &s.err), 0);
                        assert_int_equal(
                                docker_demux_feed(&s.dm, buf + cut2, len - cut2, &s.out, &s.err), 0);
                        assert_true(docker_demux_complete(&s.dm));
                        assert_int_equal(s.out.len, 13);
                        assert_memory_equal(s.out.data, "hello world\0!", 13);
                        assert_string_equal(str(&s.err), "oops\nE2");
                        assert_false(s.out.truncated);
                        assert_false(s.err.truncated);
                        sink_release(&s);
                }
        }
}

static void test_byte_at_a_time(void **state)
{
        uint8_t buf[256];
        size_t len = 0;
        struct sink s;

        (void)state;
        frame(buf, &len, 2, "err-a", 5);
        frame(buf, &len, 1, "out-a", 5);
        frame(buf, &len, 2, "err-b", 5);
        sink_init(&s, 1024);
        for (size_t i = 0; i < len; i++) {
                assert_int_equal(docker_demux_feed(&s.dm, buf + i, 1, &s.out, &s.err), 0);
                /* Mid-stream, complete only on frame boundaries. */
                if (i + 1 != len && i + 1 != 13 && i + 1 != 26)
                        assert_false(docker_demux_complete(&s.dm));
        }
        assert_true(docker_demux_complete(&s.dm));
        assert_string_equal(str(&s.out), "out-a");
        assert_string_equal(str(&s.err), "err-aerr-b");
        sink_release(&s);
}

/* Past the cap the stream is drained: later frames still parse, the rest of
 * the capped stream is dropped and flagged, the other stream is untouched. */
static void test_cap_truncates_and_drains(void **state)
{
        static uint8_t buf[200000];
        static char big[70000];
        size_t len = 0;
        struct sink s;

        (void)state;
        memset(big, 'x', sizeof(big));
        frame(buf, &len, 1, big, sizeof(big));
        frame(buf, &len, 2, "after", 5);
        frame(buf, &len, 1, big, sizeof(big));
        sink_init(&s, 100);
        for (size_t off = 0; off < len; off += 4093) {
                size_t n = len - off < 4093 ? len - off : 4093;

                assert_int_equal(docker_demux_feed(&s.dm, buf + off, n, &s.out, &s.err), 0);
        }
        assert_true(docker_demux_complete(&s.dm));
        assert_int_equal(s.out.len, 100);
        assert_true(s.out.truncated);
        assert_int_equal(s.out.data[100], '\0');
        assert_string_equal(str(&s.err), "after");
        assert_false(s.err.truncated);
        sink_release(&s);
}

static void test_cap_zero(void **state)
{
        uint8_t buf[64];
        size_t len = 0;
        struct sink s;

        (void)state;
        frame(buf, &len, 1, "abc", 3);
        sink_init(&s, 0);
        assert_int_equal(docker_demux_feed(&s.dm, buf, len, &s.out, &s.err), 0);
        assert_int_equal(s.out.len, 0);
        assert_true(s.out.truncated);
        sink_release(&s);
}

static void test_malformed_header(void **state)
{
        static const uint8_t bad_stream[] = { 3, 0, 0, 0, 0, 0, 0, 1, 'x' };
        static const uint8_t bad_pad[] = { 1, 0, 1, 0, 0, 0, 0, 1, 'x' };
        /* A raw (Tty) stream starts with text, not a header. */
        static const char raw[] = "total 0\ndrwx";
        uint8_t good[32];
        size_t len = 0;
        struct sink s;

        (void)state;
        sink_init(&s, 64);
        assert_int_equal(docker_demux_feed(&s.dm, bad_stream, sizeof(bad_stream), &s.out, &s.err),
                         -EPROTO);
        assert_false(docker_demux_complete(&s.dm));
        /* Once failed, it stays failed. */
        frame(good, &len, 1, "ok", 2);
        assert_int_equal(docker_demux_feed(&s.dm, good, len, &s.out, &s.err), -EPROTO);
        sink_release(&s);

        sink_init(&s, 64);
        assert_int_equal(docker_demux_feed(&s.dm, bad_pad, 4, &s.out, &s.err), 0);
        assert_int_equal(docker_demux_feed(&s.dm, bad_pad + 4, 5, &s.out, &s.err), -EPROTO);
        sink_release(&s);

        sink_init(&s, 64);
        assert_int_equal(docker_demux_feed(&s.dm, raw, strlen(raw), &s.out, &s.err), -EPROTO);
        sink_release(&s);
}

/* A stream cut inside a header or a payload is not complete. */
static void test_truncated_stream(void **state)
{
        uint8_t buf[64];
        size_t len = 0;
        struct sink s;

        (void)state;
        frame(buf, &len, 1, "abcdef", 6);
        sink_init(&s, 64);
        assert_int_equal(docker_demux_feed(&s.dm, buf, 5, &s.out, &s.err), 0);
        assert_false(docker_demux_complete(&s.dm));
        assert_int_equal(docker_demux_feed(&s.dm, buf + 5, 6, &s.out, &s.err), 0);
        assert_false(docker_demux_complete(&s.dm));
        assert_string_equal(str(&s.out), "abc");
        sink_release(&s);
}

static void test_buf_steal_empty(void **state)
{
        struct http_buf b = { .max = 10 };
        char *s = NULL;
        size_t n = 99;

        (void)state;
        assert_int_equal(http_buf_steal(&b, &s, &n), 0);
        assert_string_equal(s, "");
        assert_int_equal(n, 0);
        free(s);
        assert_int_equal(http_buf_append(&b, "0123456789abc", 13), 0);
        assert_true(b.truncated);
        assert_int_equal(http_buf_steal(&b, &s, &n), 0);
        assert_string_equal(s, "0123456789");
        assert_null(b.data);
        free(s);
}

static void test_escape(void **state)
{
        char *e;

        (void)state;
        e = http_escape("/tmp/a b/ü&x=1?");
        assert_string_equal(e, "%2Ftmp%2Fa%20b%2F%C3%BC%26x%3D1%3F");
        free(e);
        e = http_escape("sb-Az09._~");
        assert_string_equal(e, "sb-Az09._~");
        free(e);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_split_every_boundary),
                cmocka_unit_test(test_byte_at_a_time),
                cmocka_unit_test(test_cap_truncates_and_drains),
                cmocka_unit_test(test_cap_zero),
                cmocka_unit_test(test_malformed_header),
                cmocka_unit_test(test_truncated_stream),
                cmocka_unit_test(test_buf_steal_empty),
                cmocka_unit_test(test_escape),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
