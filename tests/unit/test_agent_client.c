/* Unit tests for lib/providers/agent/: the answer parser (agent_proto.c)
 * fed split at every byte boundary, malformed answers, caps; and the
 * client (agent_client.c) against a fake agent: a thread listening on
 * agent.sock in a mkdtemp directory that records the request and answers
 * canned bytes (whole, in pieces, cut short, or never). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "providers/agent/agent_client.h"
#include "providers/agent/agent_proto.h"
#include "core/timeutil.h"

/* ---- answers ---- */

/* A growable byte string for building answers. */
struct bytes {
        char *p;
        size_t n, cap;
};

static void bytes_add(struct bytes *b, const void *p, size_t n)
{
        if (b->n + n + 1 > b->cap) {
                b->cap = (b->n + n + 1) * 2;
                b->p = realloc(b->p, b->cap);
                assert_non_null(b->p);
        }
        memcpy(b->p + b->n, p, n);
        b->n += n;
        b->p[b->n] = '\0';
}

static void bytes_str(struct bytes *b, const char *s)
{
        bytes_add(b, s, strlen(s));
}

static void bytes_fmt(struct bytes *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void bytes_fmt(struct bytes *b, const char *fmt, ...)
{
        char tmp[512];
        va_list ap;
        int n;

        va_start(ap, fmt);
        n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
        va_end(ap);
        assert_true(n >= 0 && (size_t)n < sizeof(tmp));
        bytes_add(b, tmp, (size_t)n);
}

/* Append one /exec frame (a stream frame, not the x frame). */
static void frame(struct bytes *b, int stream, const void *p, size_t n)
{
        bytes_fmt(b, "%d %zu\n", stream, n);
        bytes_add(b, p, n);
}

/* A 200 answer whose body is `body`, chunked in pieces of `chunk` bytes
 * (with an extension on every other chunk and a trailer at the end). */
static void chunked_answer(struct bytes *out, const struct bytes *body, size_t chunk)
{
        bytes_str(out, "HTTP/1.1 200 OK\r\nContent-Type: application/x-sandbox-agent-frames\r\n"
                       "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n");
        for (size_t off = 0, k = 0; off < body->n; off += chunk, k++) {
                size_t n = body->n - off < chunk ? body->n - off : chunk;

                bytes_fmt(out, k % 2 ? "%zx;ext=1\r\n" : "%zX\r\n", n);
                bytes_add(out, body->p + off, n);
                bytes_str(out, "\r\n");
        }
        bytes_str(out, "0\r\nX-Trailer: t\r\n\r\n");
}

/* ---- the parser ---- */

struct got {
        struct bytes out, err, body, order; /* order: "1:..|2:..|" */
        int exit_code, exits;
        bool timed_out;
};

static int got_output(void *ud, int stream, const char *p, size_t n)
{
        struct got *g = ud;

        assert_true(stream == 1 || stream == 2);
        assert_true(n > 0);
        bytes_add(stream == 1 ? &g->out : &g->err, p, n);
        return 0;
}

static int got_exit(void *ud, int code, bool timed_out)
{
        struct got *g = ud;

        g->exit_code = code;
        g->timed_out = timed_out;
        g->exits++;
        return 0;
}

static int got_body(void *ud, const char *p, size_t n)
{
        struct got *g = ud;

        bytes_add(&g->body, p, n);
        return 0;
}

static void got_free(struct got *g)
{
        free(g->out.p);
        free(g->err.p);
        free(g->body.p);
        free(g->order.p);
        memset(g, 0, sizeof(*g));
}

static void proto_start(struct agent_proto *p, struct got *g, bool frames)
{
        struct agent_proto_cb cb = {
                .on_body = got_body, .on_output = got_output, .on_exit = got_exit, .ud = g
        };

        memset(g, 0, sizeof(*g));
        agent_proto_init(p, frames, &cb);
}

/* Feed an answer in pieces cut at c1 and c2, then finish. */
static int feed3(struct agent_proto *p, const char *a, size_t n, size_t c1, size_t c2)
{
        int r;

        if ((r = agent_proto_feed(p, a, c1)) < 0)
                return r;
        if ((r = agent_proto_feed(p, a + c1, c2 - c1)) < 0)
                return r;
        if ((r = agent_proto_feed(p, a + c2, n - c2)) < 0)
                return r;
        return agent_proto_finish(p);
}

static int feed_bytewise(struct agent_proto *p, const char *a, size_t n)
{
        int r;

        for (size_t i = 0; i < n; i++)
                if ((r = agent_proto_feed(p, a + i, 1)) < 0)
                        return r;
        return agent_proto_finish(p);
}

static void exec_sample(struct bytes *answer, size_t chunk)
{
        struct bytes body = { 0 };

        frame(&body, 1, "hello ", 6);
        frame(&body, 2, "oops\n", 5);
        frame(&body, 1, "wor\0ld", 6);
        bytes_str(&body, "x 3 1\n");
        chunked_answer(answer, &body, chunk);
        free(body.p);
}

static void check_sample(struct agent_proto *p, struct got *g)
{
        assert_int_equal(p->status, 200);
        assert_true(agent_proto_done(p));
        assert_int_equal(g->out.n, 12);
        assert_memory_equal(g->out.p, "hello wor\0ld", 12);
        assert_int_equal(g->err.n, 5);
        assert_memory_equal(g->err.p, "oops\n", 5);
        assert_int_equal(g->exits, 1);
        assert_int_equal(g->exit_code, 3);
        assert_true(g->timed_out);
        assert_int_equal(p->exit_code, 3);
}

/* The same answer wherever it is cut in three, and byte by byte. */
static void test_proto_exec_split_everywhere(void **state)
{
        struct bytes a = { 0 };
        struct agent_proto p;
        struct got g;

        (void)state;
        exec_sample(&a, 7);
        for (size_t c1 = 0; c1 <= a.n; c1++) {
                for (size_t c2 = c1; c2 <= a.n; c2 += 5) {
                        proto_start(&p, &g, true);
                        assert_int_equal(feed3(&p, a.p, a.n, c1, c2), 0);
                        check_sample(&p, &g);
                        got_free(&g);
                }
        }
        proto_start(&p, &g, true);
        assert_int_equal(feed_bytewise(&p, a.p, a.n), 0);
        check_sample(&p, &g);
        got_free(&g);
        free(a.p);
}

/* Bodies by Content-Length, to the close, and chunked; 204 has none. */
static void test_proto_bodies(void **state)
{
        static const char cl[] = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
        static const char eof[] = "HTTP/1.0 200 OK\nServer: x\n\nto the end";
        static const char ch[] = "HTTP/1.1 200 OK\r\ntransfer-encoding: Chunked\r\n\r\n"
                                 "3 ; a=b\r\nabc\r\n2\nde\r\n0\r\n\r\n";
        static const char nc[] = "HTTP/1.1 204 No Content\r\n\r\n";
        struct agent_proto p;
        struct got g;

        (void)state;
        proto_start(&p, &g, false);
        assert_int_equal(feed_bytewise(&p, cl, sizeof(cl) - 1), 0);
        assert_string_equal(g.body.p, "hello");
        got_free(&g);

        proto_start(&p, &g, false);
        assert_int_equal(agent_proto_feed(&p, eof, sizeof(eof) - 1), 0);
        assert_false(agent_proto_done(&p));
        assert_int_equal(agent_proto_finish(&p), 0);
        assert_true(agent_proto_done(&p));
        assert_string_equal(g.body.p, "to the end");
        got_free(&g);

        proto_start(&p, &g, false);
        assert_int_equal(feed_bytewise(&p, ch, sizeof(ch) - 1), 0);
        assert_string_equal(g.body.p, "abcde");
        got_free(&g);

        proto_start(&p, &g, false);
        assert_int_equal(agent_proto_feed(&p, nc, sizeof(nc) - 1), 0);
        assert_true(agent_proto_done(&p));
        assert_int_equal(p.status, 204);
        got_free(&g);

        /* what follows a complete answer is ignored, however reads cut it */
        proto_start(&p, &g, false);
        assert_int_equal(agent_proto_feed(&p, cl, sizeof(cl) - 1), 0);
        assert_int_equal(agent_proto_feed(&p, "junk", 4), 0);
        assert_int_equal(agent_proto_finish(&p), 0);
        assert_string_equal(g.body.p, "hello");
        got_free(&g);
}

/* What a caller may take past the parser: only a 2xx Content-Length body,
 * never more than what is left of it. */
static void test_proto_passable(void **state)
{
        static const char cl[] = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc";
        static const char ch[] = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
        static const char nf[] = "HTTP/1.1 404 Not Found\r\nContent-Length: 10\r\n\r\n";
        struct agent_proto p;
        struct got g;

        (void)state;
        proto_start(&p, &g, false);
        assert_int_equal(agent_proto_passable(&p), 0); /* no head yet */
        assert_int_equal(agent_proto_feed(&p, cl, sizeof(cl) - 1), 0);
        assert_int_equal(agent_proto_passable(&p), 7);
        agent_proto_skip(&p, 8); /* more than the body: ignored */
        assert_int_equal(agent_proto_passable(&p), 7);
        agent_proto_skip(&p, 5);
        assert_int_equal(agent_proto_passable(&p), 2);
        assert_false(agent_proto_done(&p));
        assert_int_equal(agent_proto_feed(&p, "ijJUNK", 6), 0);
        assert_true(agent_proto_done(&p));
        assert_string_equal(g.body.p, "abcij");
        got_free(&g);

        proto_start(&p, &g, false);
        assert_int_equal(agent_proto_feed(&p, cl, sizeof(cl) - 1), 0);
        agent_proto_skip(&p, 7);
        assert_true(agent_proto_done(&p));
        assert_int_equal(agent_proto_passable(&p), 0);
        assert_int_equal(agent_proto_finish(&p), 0);
        got_free(&g);

        proto_start(&p, &g, false);
        assert_int_equal(agent_proto_feed(&p, ch, sizeof(ch) - 1), 0);
        assert_int_equal(agent_proto_passable(&p), 0);
        got_free(&g);

        proto_start(&p, &g, false);
        assert_int_equal(agent_proto_feed(&p, nf, sizeof(nf) - 1), 0);
        assert_int_equal(agent_proto_passable(&p), 0);
        got_free(&g);

        proto_start(&p, &g, true); /* /exec frames are parsed, never passed */
        assert_int_equal(agent_proto_feed(&p, cl, sizeof(cl) - 4), 0); /* the head */
        assert_true(p.head_done);
        assert_int_equal(agent_proto_passable(&p), 0);
        got_free(&g);
}

/* Every one of these is -EPROTO with a reason, fed whole or byte by byte. */
static void test_proto_malformed(void **state)
{
#define OK200 "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n"
#define CH200 "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        static const struct {
                const char *a;
                size_t n; /* 0: strlen */
                bool frames;
        } bad[] = {
                /* frames */
                { OK200 "1 0\n", 0, true },
                { OK200 "1 01\nx", 0, true },
                { OK200 "1 1048577\n", 0, true },
                { OK200 "1 -1\n", 0, true },
                { OK200 "1 +1\nx", 0, true },
                { OK200 "1 1 \nx", 0, true },
                { OK200 "1  1\nx", 0, true },
                { OK200 "3 1\nx", 0, true },
                { OK200 "1\n", 0, true },
                { OK200 "x 1\n", 0, true },
                { OK200 "x 1 2\n", 0, true },
                { OK200 "x 256 0\n", 0, true },
                { OK200 "x -2 0\n", 0, true },
                { OK200 "x -0 0\n", 0, true },
                { OK200 "x 01 0\n", 0, true },
                { OK200 "x 1 0 \n", 0, true },
                { OK200 "x 0 0\nmore", 0, true },
                { OK200 "1 99999999999999999999999\n", 0, true },
                { OK200 "1 1\0\nx", sizeof(OK200) + 5, true },
                /* chunks */
                { CH200 "zz\r\n", 0, false },
                { CH200 "\r\n", 0, false },
                { CH200 ";x\r\n", 0, false },
                { CH200 "1000000000000000\r\n", 0, false },
                { CH200 "1\r\nab\r\n", 0, false },
                { CH200 "1\r\na\rb", 0, false },
                { CH200 "1\rx\n", 0, false },
                /* status line and headers */
                { "HTTP/2 200 OK\r\n\r\n", 0, false },
                { "HTTP/1.1 99 x\r\n\r\n", 0, false },
                { "HTTP/1.1 100 Continue\r\n\r\n", 0, false },
                { "HTTP/1.1 2000 OK\r\n\r\n", 0, false },
                { "HTTP/1.1 2x0 OK\r\n\r\n", 0, false },
                { "http/1.1 200 OK\r\n\r\n", 0, false },
                { "HTTP/1.1 200 OK\r\nNoColon\r\n\r\n", 0, false },
                { "HTTP/1.1 200 OK\r\nA: b\r\n folded\r\n\r\n", 0, false },
                { "HTTP/1.1 200 OK\r\n: empty\r\n\r\n", 0, false },
                { "HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n", 0, false },
                { "HTTP/1.1 200 OK\r\nContent-Length: abc\r\n\r\n", 0, false },
                { "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", 0, false },
                { "HTTP/1.1 200 OK\r\nContent-Length: 1, 1\r\n\r\n", 0, false },
                { "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 0, false },
                { "HTTP/1.1 200 OK\r\nContent-Length: 9999999999999999999\r\n\r\n", 0, false },
                { "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", 0, false },
                { "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 1\r\n\r\n", 0,
                  false },
                { "HTTP/1.1 200 OK\rX: y\r\n\r\n", 0, false },
                { "HTTP/1.1 200 OK\r\nX: a\001b\r\n\r\n", 0, false },
                { "HTTP/1.1 200 OK\r\nX: a\0b\r\n\r\n", 26, false },
        };

        (void)state;
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                size_t n = bad[i].n ? bad[i].n : strlen(bad[i].a);
                struct agent_proto p;
                struct got g;
                int r;

                proto_start(&p, &g, bad[i].frames);
                r = agent_proto_feed(&p, bad[i].a, n);
                if (r == 0)
                        r = agent_proto_finish(&p);
                if (r != -EPROTO)
                        fail_msg("case %zu (%s): %d", i, bad[i].a, r);
                assert_non_null(p.why);
                /* failed stays failed */
                assert_int_equal(agent_proto_feed(&p, "x", 1), -EPROTO);
                got_free(&g);

                proto_start(&p, &g, bad[i].frames);
                if (feed_bytewise(&p, bad[i].a, n) != -EPROTO)
                        fail_msg("case %zu bytewise", i);
                got_free(&g);
        }
#undef OK200
#undef CH200
}

/* Cut short anywhere: an error at finish, never a complete answer. */
static void test_proto_cut_short(void **state)
{
        struct bytes a = { 0 };

        (void)state;
        exec_sample(&a, 4);
        for (size_t cut = 0; cut < a.n; cut++) {
                struct agent_proto p;
                struct got g;

                proto_start(&p, &g, true);
                assert_int_equal(agent_proto_feed(&p, a.p, cut), 0);
                assert_false(agent_proto_done(&p));
                assert_int_equal(agent_proto_finish(&p), -EPROTO);
                assert_non_null(p.why);
                got_free(&g);
        }
        free(a.p);
}

/* A frames body that ends (cleanly chunked) before the x frame. */
static void test_proto_no_exit_frame(void **state)
{
        static const char a[] = "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\n1 1\n";
        static const char b[] = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n1 1\nz";
        struct agent_proto p;
        struct got g;

        (void)state;
        proto_start(&p, &g, true);
        assert_int_equal(agent_proto_feed(&p, a, sizeof(a) - 1), -EPROTO);
        got_free(&g);
        proto_start(&p, &g, true);
        assert_int_equal(agent_proto_feed(&p, b, sizeof(b) - 1), -EPROTO);
        assert_string_equal(g.out.p, "z");
        got_free(&g);
}

static void test_proto_head_cap(void **state)
{
        struct bytes a = { 0 };
        struct agent_proto p;
        struct got g;
        int r = 0;

        (void)state;
        bytes_str(&a, "HTTP/1.1 200 OK\r\n");
        while (a.n < AGENT_HEAD_MAX + 100)
                bytes_str(&a, "X-Filler: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n");
        bytes_str(&a, "Content-Length: 0\r\n\r\n");
        proto_start(&p, &g, false);
        for (size_t i = 0; i < a.n && r == 0; i += 1000)
                r = agent_proto_feed(&p, a.p + i, a.n - i < 1000 ? a.n - i : 1000);
        assert_int_equal(r, -EPROTO);
        assert_false(p.head_done);
        got_free(&g);

        /* one long header line is fine while the block fits */
        free(a.p);
        memset(&a, 0, sizeof(a));
        bytes_str(&a, "HTTP/1.1 200 OK\r\nX-Long: ");
        while (a.n < 10000)
                bytes_str(&a, "bbbbbbbbbb");
        bytes_str(&a, "\r\nContent-Length: 2\r\n\r\nok");
        proto_start(&p, &g, false);
        assert_int_equal(agent_proto_feed(&p, a.p, a.n), 0);
        assert_true(agent_proto_done(&p));
        assert_string_equal(g.body.p, "ok");
        got_free(&g);
        free(a.p);
}

/* A non-2xx body is kept up to 4 KiB and the answer counts as done then. */
static void test_proto_error_body(void **state)
{
        static const char e[] =
                "HTTP/1.1 404 Not Found\r\nContent-Length: 14\r\n\r\nno such file\r\n";
        struct bytes a = { 0 };
        struct agent_proto p;
        struct got g;

        (void)state;
        proto_start(&p, &g, true);
        assert_int_equal(agent_proto_feed(&p, e, sizeof(e) - 1), 0);
        assert_true(agent_proto_done(&p));
        assert_int_equal(p.status, 404);
        assert_string_equal(p.err_body, "no such file\r\n");
        assert_int_equal(g.exits, 0);
        got_free(&g);

        bytes_str(&a, "HTTP/1.1 500 Oops\r\n\r\n");
        for (int i = 0; i < 1000; i++)
                bytes_str(&a, "0123456789");
        proto_start(&p, &g, false);
        assert_int_equal(agent_proto_feed(&p, a.p, 3000), 0);
        assert_false(agent_proto_done(&p));
        assert_int_equal(agent_proto_feed(&p, a.p + 3000, a.n - 3000), 0);
        assert_true(agent_proto_done(&p));
        assert_int_equal(p.err_len, AGENT_ERR_BODY_MAX);
        assert_true(p.err_truncated);
        assert_int_equal(g.body.n, 0);
        got_free(&g);
        free(a.p);
}

static int stop_at_err(void *ud, int stream, const char *p, size_t n)
{
        (void)ud;
        (void)p;
        (void)n;
        return stream == 2 ? -ECANCELED : 0;
}

static void test_proto_callback_stops(void **state)
{
        struct agent_proto_cb cb = { .on_output = stop_at_err };
        struct bytes a = { 0 };
        struct agent_proto p;

        (void)state;
        exec_sample(&a, 100);
        agent_proto_init(&p, true, &cb);
        assert_int_equal(agent_proto_feed(&p, a.p, a.n), -ECANCELED);
        assert_null(p.why);
        assert_int_equal(agent_proto_feed(&p, "x", 1), -EPROTO);
        free(a.p);
}

static void test_health_parse(void **state)
{
        struct agent_health h;
        static const char *const bad[] = {
                "pid=1\nentrypoint=running\n", /* no agent=1 */
                "agent=2\nentrypoint=running\n",
                "agent=1\n",                    /* no entrypoint */
                "agent=1\nentrypoint=exited\n", /* no exit_code */
                "agent=1\nentrypoint=exited\nexit_code=256\n",
                "agent=1\nentrypoint=exited\nexit_code=-1\n",
                "agent=1\nentrypoint=gone\n",
                "agent=1\nnoequals\nentrypoint=none\n",
        };

        (void)state;
        assert_int_equal(agent_health_parse("agent=1\npid=1\nentrypoint=running\n", 33, &h), 0);
        assert_true(h.running);
        assert_false(h.exited);
        assert_int_equal(h.exit_code, -1);
        assert_int_equal(agent_health_parse("agent=1\r\nentrypoint=exited\r\nexit_code=137", 41, &h),
                         0);
        assert_false(h.running);
        assert_true(h.exited);
        assert_int_equal(h.exit_code, 137);
        assert_int_equal(agent_health_parse("agent=1\nentrypoint=none\nnew=1\n", 30, &h), 0);
        assert_false(h.running || h.exited);
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                if (agent_health_parse(bad[i], strlen(bad[i]), &h) != -EPROTO)
                        fail_msg("health case %zu", i);
}

/* ---- the fake agent ---- */

enum fake_mode {
        FAKE_ANSWER,      /* read the request, answer, close */
        FAKE_ANSWER_HANG, /* answer, then keep the connection open until the client goes */
        FAKE_SILENT,      /* read the request, never answer */
        FAKE_CLOSE,       /* read the request, close without a byte */
};

struct fake {
        char dir[64], sock[128];
        int lfd;
        pthread_t th;
        enum fake_mode mode;
        const char *answer;
        size_t answer_len;
        size_t piece; /* write in pieces of this size (0: whole) */
        /* recorded */
        struct bytes req; /* head and body as received */
        size_t head_len;
        int conns;
};

static int64_t now_ms(void)
{
        return timeutil_mono_ms();
}

static void sleep_ms(int ms)
{
        struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

        nanosleep(&ts, NULL);
}

static int listen_at(const char *path)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

        assert_true(fd >= 0);
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
        assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
        assert_int_equal(listen(fd, 8), 0);
        return fd;
}

/* Read the request: head to the blank line, then Content-Length bytes. */
static void fake_read_request(struct fake *f, int c)
{
        size_t want = SIZE_MAX;
        char buf[65536];

        for (;;) {
                struct pollfd pfd = { .fd = c, .events = POLLIN };
                ssize_t n;

                if (f->req.n >= want)
                        return;
                if (poll(&pfd, 1, 10000) <= 0)
                        return;
                n = recv(c, buf, sizeof(buf), 0);
                if (n <= 0)
                        return;
                bytes_add(&f->req, buf, (size_t)n);
                if (want == SIZE_MAX) {
                        char *end = strstr(f->req.p, "\r\n\r\n"), *cl;

                        if (!end)
                                continue;
                        f->head_len = (size_t)(end + 4 - f->req.p);
                        cl = strcasestr(f->req.p, "\r\nContent-Length: ");
                        want = f->head_len + (cl && cl < end ? strtoul(cl + 18, NULL, 10) : 0);
                }
        }
}

static void *fake_main(void *ud)
{
        struct fake *f = ud;
        struct pollfd pfd = { .fd = f->lfd, .events = POLLIN };
        int c;

        if (poll(&pfd, 1, 10000) <= 0)
                return NULL;
        c = accept4(f->lfd, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0)
                return NULL;
        f->conns++;
        fake_read_request(f, c);
        if (f->mode == FAKE_ANSWER || f->mode == FAKE_ANSWER_HANG) {
                size_t piece = f->piece ? f->piece : f->answer_len;

                for (size_t off = 0; off < f->answer_len; off += piece) {
                        size_t n = f->answer_len - off < piece ? f->answer_len - off : piece;

                        if (send(c, f->answer + off, n, MSG_NOSIGNAL) < 0)
                                break;
                        if (f->piece)
                                sleep_ms(1);
                }
        }
        if (f->mode == FAKE_SILENT || f->mode == FAKE_ANSWER_HANG) {
                /* until the client closes (or 30 s) */
                char b[4096];

                for (int64_t end = now_ms() + 30000; now_ms() < end;) {
                        struct pollfd p2 = { .fd = c, .events = POLLIN };

                        if (poll(&p2, 1, 100) > 0 && recv(c, b, sizeof(b), 0) <= 0)
                                break;
                }
        }
        close(c);
        return NULL;
}

static void fake_free(struct fake *f);

/* f must be zeroed or fake_free'd: a recorded request is freed first. */
static void fake_init(struct fake *f)
{
        fake_free(f);
        memset(f, 0, sizeof(*f));
        snprintf(f->dir, sizeof(f->dir), "/tmp/agentc-XXXXXX");
        assert_non_null(mkdtemp(f->dir));
        snprintf(f->sock, sizeof(f->sock), "%s/agent.sock", f->dir);
        f->lfd = -1;
}

static void fake_start(struct fake *f, enum fake_mode mode, const char *answer, size_t len)
{
        f->mode = mode;
        f->answer = answer;
        f->answer_len = answer ? (len ? len : strlen(answer)) : 0;
        f->lfd = listen_at(f->sock);
        assert_int_equal(pthread_create(&f->th, NULL, fake_main, f), 0);
}

static void fake_done(struct fake *f)
{
        if (f->lfd >= 0) {
                pthread_join(f->th, NULL);
                close(f->lfd);
        }
        (void)unlink(f->sock);
        (void)rmdir(f->dir);
}

/* Free what fake_done leaves for the assertions (the recorded request). */
static void fake_free(struct fake *f)
{
        free(f->req.p);
        memset(&f->req, 0, sizeof(f->req));
}

/* The request line's target ("/exec?..."), into buf. */
static void fake_target(const struct fake *f, char *buf, size_t size)
{
        const char *sp = strchr(f->req.p, ' '), *sp2 = sp ? strchr(sp + 1, ' ') : NULL;

        assert_non_null(sp2);
        assert_true((size_t)(sp2 - sp - 1) < size);
        memcpy(buf, sp + 1, (size_t)(sp2 - sp - 1));
        buf[sp2 - sp - 1] = '\0';
}

static int unhex(char c)
{
        return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* The idx-th value of name in the query, decoded into buf (NUL-terminated);
 * returns its length or -1. Also checks the raw encoding: only unreserved
 * bytes and %XX (upper case). */
static int query_get(const struct fake *f, const char *name, int idx, char *buf, size_t size)
{
        static char target[300 * 1024];
        char *q, *save = NULL;
        size_t nl = strlen(name);

        fake_target(f, target, sizeof(target));
        q = strchr(target, '?');
        if (!q)
                return -1;
        for (char *kv = strtok_r(q + 1, "&", &save); kv; kv = strtok_r(NULL, "&", &save)) {
                size_t k = 0;

                if (strncmp(kv, name, nl) != 0 || kv[nl] != '=' || idx-- > 0)
                        continue;
                for (char *v = kv + nl + 1; *v; v++) {
                        if (*v == '%') {
                                assert_true(unhex(v[1]) >= 0 && unhex(v[2]) >= 0);
                                buf[k++] = (char)(unhex(v[1]) << 4 | unhex(v[2]));
                                v += 2;
                        } else {
                                assert_non_null(strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                       "abcdefghijklmnopqrstuvwxyz0123456789-._~",
                                                       *v));
                                buf[k++] = *v;
                        }
                        assert_true(k < size);
                }
                buf[k] = '\0';
                return (int)k;
        }
        return -1;
}

/* ---- the client: exec ---- */

static const char *const argv_true[] = { "true", NULL };

static void test_exec_ok(void **state)
{
        static const char *const argv[] = { "sh", "-c", "echo hi", NULL };
        static const char *const env[] = { "A=1", "B=x y", NULL };
        struct exec_spec spec = { .argv = argv,
                                  .env = env,
                                  .cwd = "/w",
                                  .user = "1000:1000",
                                  .timeout_ms = 5000,
                                  .max_output = 1024,
                                  .stdin_data = "in\0put",
                                  .stdin_len = 6 };
        struct exec_result res;
        char err[PROVIDER_ERR_MAX] = "", v[256];
        struct bytes a = { 0 };
        struct fake f = { 0 };

        (void)state;
        exec_sample(&a, 3);
        fake_init(&f);
        fake_start(&f, FAKE_ANSWER, a.p, a.n);
        assert_int_equal(agent_exec(f.dir, &spec, &res, err), 0);
        fake_done(&f);
        assert_int_equal(res.exit_code, 3);
        assert_true(res.timed_out);
        assert_int_equal(res.out_len, 12);
        assert_memory_equal(res.out, "hello wor\0ld", 13);
        assert_string_equal(res.err, "oops\n");
        assert_false(res.out_truncated || res.err_truncated);
        exec_result_free(&res);

        /* the request */
        assert_memory_equal(f.req.p, "POST /exec?", 11);
        assert_int_equal(query_get(&f, "arg", 0, v, sizeof(v)), 2);
        assert_string_equal(v, "sh");
        assert_int_equal(query_get(&f, "arg", 1, v, sizeof(v)), 2);
        assert_int_equal(query_get(&f, "arg", 2, v, sizeof(v)), 7);
        assert_string_equal(v, "echo hi");
        assert_int_equal(query_get(&f, "arg", 3, v, sizeof(v)), -1);
        assert_int_equal(query_get(&f, "env", 1, v, sizeof(v)), 5);
        assert_string_equal(v, "B=x y");
        assert_int_equal(query_get(&f, "cwd", 0, v, sizeof(v)), 2);
        assert_string_equal(v, "/w");
        assert_int_equal(query_get(&f, "user", 0, v, sizeof(v)), 9);
        assert_string_equal(v, "1000:1000");
        assert_int_equal(query_get(&f, "timeout_ms", 0, v, sizeof(v)), 4);
        assert_string_equal(v, "5000");
        assert_int_equal(query_get(&f, "detach", 0, v, sizeof(v)), -1);
        assert_int_equal(query_get(&f, "seat", 0, v, sizeof(v)), -1);
        assert_int_equal(query_get(&f, "hangup_kill", 0, v, sizeof(v)), -1);
        assert_non_null(strstr(f.req.p, "\r\nContent-Length: 6\r\n"));
        assert_non_null(strstr(f.req.p, "\r\nConnection: close\r\n"));
        assert_int_equal(f.req.n - f.head_len, 6);
        assert_memory_equal(f.req.p + f.head_len, "in\0put", 6);
        free(a.p);
        fake_free(&f);
}

/* Odd bytes in every value arrive intact, encoded as %XX. */
static void test_exec_percent_encoding(void **state)
{
        static const char odd[] = "a b%c&d=e\nf+g/h?i#j\xc3\xa9k\x01~._-";
        static const char *const argv[] = { odd, "", NULL };
        static const char *const env[] = { "K="
                                           "a b%c&d=e\nf+g/h?i#j\xc3\xa9k\x01~._-",
                                           NULL };
        struct exec_spec spec = {
                .argv = argv, .env = env, .cwd = odd, .user = odd, .timeout_ms = 1000, .max_output = 16
        };
        static const char answer[] = "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nx 0 0\n";
        struct exec_result res;
        char err[PROVIDER_ERR_MAX] = "", v[256], target[1024];
        struct fake f = { 0 };

        (void)state;
        fake_init(&f);
        fake_start(&f, FAKE_ANSWER, answer, 0);
        assert_int_equal(agent_exec(f.dir, &spec, &res, err), 0);
        fake_done(&f);
        assert_int_equal(res.exit_code, 0);
        assert_false(res.timed_out);
        assert_string_equal(res.out, "");
        exec_result_free(&res);

        fake_target(&f, target, sizeof(target));
        assert_null(strchr(target, ' '));
        assert_non_null(strstr(target, "arg=a%20b%25c%26d%3De%0Af%2Bg%2Fh%3Fi%23j%C3%A9k%01~._-&"));
        assert_int_equal(query_get(&f, "arg", 0, v, sizeof(v)), (int)strlen(odd));
        assert_string_equal(v, odd);
        assert_int_equal(query_get(&f, "arg", 1, v, sizeof(v)), 0);
        assert_int_equal(query_get(&f, "env", 0, v, sizeof(v)), (int)strlen(odd) + 2);
        assert_string_equal(v + 2, odd);
        assert_int_equal(query_get(&f, "cwd", 0, v, sizeof(v)), (int)strlen(odd));
        assert_string_equal(v, odd);
        assert_int_equal(query_get(&f, "user", 0, v, sizeof(v)), (int)strlen(odd));
        assert_string_equal(v, odd);
        assert_non_null(strstr(f.req.p, "\r\nContent-Length: 0\r\n"));
        fake_free(&f);
}

/* Past max_output a stream is dropped (flagged) while frames go on. */
static void test_exec_output_cap(void **state)
{
        struct exec_spec spec = { .argv = argv_true, .timeout_ms = 1000, .max_output = 10 };
        static char big[100000];
        struct bytes body = { 0 }, a = { 0 };
        struct exec_result res;
        char err[PROVIDER_ERR_MAX] = "";
        struct fake f = { 0 };

        (void)state;
        memset(big, 'o', sizeof(big));
        frame(&body, 1, big, sizeof(big));
        frame(&body, 2, "err", 3);
        frame(&body, 1, big, sizeof(big));
        bytes_str(&body, "x 0 0\n");
        chunked_answer(&a, &body, 4096);
        fake_init(&f);
        fake_start(&f, FAKE_ANSWER, a.p, a.n);
        assert_int_equal(agent_exec(f.dir, &spec, &res, err), 0);
        fake_done(&f);
        assert_int_equal(res.exit_code, 0);
        assert_int_equal(res.out_len, 10);
        assert_string_equal(res.out, "oooooooooo");
        assert_true(res.out_truncated);
        assert_string_equal(res.err, "err");
        assert_false(res.err_truncated);
        exec_result_free(&res);
        free(body.p);
        free(a.p);
        fake_free(&f);
}

/* The output as "stream:bytes|stream:bytes", a stream's consecutive
 * pieces joined. */
struct order {
        struct bytes log;
        int last, ticks, stop_at_tick;
};

static int order_output(void *ud, int stream, const char *p, size_t n)
{
        struct order *o = ud;

        if (stream != o->last) {
                bytes_fmt(&o->log, "%s%d:", o->log.n ? "|" : "", stream);
                o->last = stream;
        }
        bytes_add(&o->log, p, n);
        return 0;
}

static int order_tick(void *ud)
{
        struct order *o = ud;

        o->ticks++;
        return o->stop_at_tick && o->ticks >= o->stop_at_tick ? -ECANCELED : 0;
}

/* Streamed: callbacks in the order of the frames, the answer written by
 * the agent one byte at a time. */
static void test_exec_stream_order(void **state)
{
        struct exec_spec spec = { .argv = argv_true, .timeout_ms = 1000 };
        struct order o = { 0 };
        struct exec_stream_cb cb = { .on_output = order_output, .on_tick = order_tick, .ud = &o };
        struct bytes body = { 0 }, a = { 0 };
        struct exec_result res;
        char err[PROVIDER_ERR_MAX] = "";
        struct fake f = { 0 };

        (void)state;
        frame(&body, 1, "a", 1);
        frame(&body, 2, "bb", 2);
        frame(&body, 1, "ccc", 3);
        bytes_str(&body, "x 7 0\n");
        chunked_answer(&a, &body, 5);
        fake_init(&f);
        f.piece = 1;
        fake_start(&f, FAKE_ANSWER, a.p, a.n);
        assert_int_equal(agent_exec_stream(f.dir, &spec, &cb, &res, err), 0);
        fake_done(&f);
        assert_int_equal(res.exit_code, 7);
        assert_null(res.out);
        /* pieces may come split; consecutive ones of a stream are joined */
        assert_string_equal(o.log.p, "1:a|2:bb|1:ccc");
        free(o.log.p);
        free(body.p);
        free(a.p);
        fake_free(&f);
}

static void test_exec_detach(void **state)
{
        static const char answer[] = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                                     "7\r\nx -1 0\n\r\n0\r\n\r\n";
        struct exec_spec spec = { .argv = argv_true, .timeout_ms = 1000, .detach = true };
        struct exec_result res;
        char err[PROVIDER_ERR_MAX] = "", v[8];
        struct fake f = { 0 };

        (void)state;
        fake_init(&f);
        fake_start(&f, FAKE_ANSWER, answer, 0);
        assert_int_equal(agent_exec(f.dir, &spec, &res, err), 0);
        fake_done(&f);
        assert_int_equal(res.exit_code, -1);
        assert_false(res.timed_out);
        assert_int_equal(query_get(&f, "detach", 0, v, sizeof(v)), 1);
        assert_string_equal(v, "1");
        exec_result_free(&res);
        fake_free(&f);
}

/* A seat's command and one tied to its connection say so (seat=1,
 * hangup_kill=1); a detached command is never tied to a connection. */
static void test_exec_seat_and_hangup(void **state)
{
        static const char answer[] = "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nx 0 0\n";
        static const char detached[] = "HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\nx -1 0\n";
        struct exec_spec spec = { .argv = argv_true, .user = "sbu1", .timeout_ms = 1000,
                                  .seat = true, .kill_on_hangup = true };
        struct exec_result res;
        char err[PROVIDER_ERR_MAX] = "", v[8];
        struct fake f = { 0 };

        (void)state;
        fake_init(&f);
        fake_start(&f, FAKE_ANSWER, answer, 0);
        assert_int_equal(agent_exec(f.dir, &spec, &res, err), 0);
        fake_done(&f);
        assert_int_equal(query_get(&f, "seat", 0, v, sizeof(v)), 1);
        assert_string_equal(v, "1");
        assert_int_equal(query_get(&f, "hangup_kill", 0, v, sizeof(v)), 1);
        assert_string_equal(v, "1");
        exec_result_free(&res);
        fake_free(&f);

        spec.detach = true;
        fake_init(&f);
        fake_start(&f, FAKE_ANSWER, detached, 0);
        assert_int_equal(agent_exec(f.dir, &spec, &res, err), 0);
        fake_done(&f);
        assert_int_equal(query_get(&f, "detach", 0, v, sizeof(v)), 1);
        assert_int_equal(query_get(&f, "seat", 0, v, sizeof(v)), 1);
        assert_int_equal(query_get(&f, "hangup_kill", 0, v, sizeof(v)), -1);
        exec_result_free(&res);
        fake_free(&f);
}

/* An error status (a user that does not exist) is -EIO with its reason. */
static void test_exec_error_status(void **state)
{
        static const char answer[] = "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\n"
                                     "Content-Length: 21\r\n\r\nno such user: nobody\n";
        struct exec_spec spec = { .argv = argv_true, .user = "nobody", .timeout_ms = 1000 };
        struct exec_result res;
        char err[PROVIDER_ERR_MAX] = "";
        struct fake f = { 0 };

        (void)state;
        fake_init(&f);
        fake_start(&f, FAKE_ANSWER, answer, 0);
        assert_int_equal(agent_exec(f.dir, &spec, &res, err), -EIO);
        fake_done(&f);
        assert_non_null(strstr(err, "400 no such user: nobody"));
        assert_int_equal(res.exit_code, -1);
        assert_null(res.out);
        exec_result_free(&res);
        fake_free(&f);
}

/* A late entrypoint the sandbox has already (an earlier start whose
 * caller died before the answer): the agent's 409 is -EALREADY, and only
 * for an entrypoint; any other 409 stays -EIO. */
static void test_exec_entrypoint_already(void **state)
{
        static const char answer[] = "HTTP/1.1 409 Conflict\r\nContent-Type: text/plain\r\n"
                                     "Content-Length: 38\r\n\r\nthis sandbox already has an entrypoint";
        struct exec_spec spec = { .argv = argv_true, .detach = true, .entrypoint = true };
        struct exec_result res;
        char err[PROVIDER_ERR_MAX] = "";
        struct fake f = { 0 };

        (void)state;
        fake_init(&f);
        fake_start(&f, FAKE_ANSWER, answer, 0);
        assert_int_equal(agent_exec(f.dir, &spec, &res, err), -EALREADY);
        fake_done(&f);
        assert_int_equal(res.exit_code, -1);
        exec_result_free(&res);
        fake_free(&f);

        spec.entrypoint = false;
        fake_init(&f);
        fake_start(&f, FAKE_ANSWER, answer, 0);
        assert_int_equal(agent_exec(f.dir, &spec, &res, err), -EIO);
        fake_done(&f);
        exec_result_free(&res);
        fake_free(&f);
}

/* Garbage of every kind: -EIO "malformed answer", promptly. */
static void test_exec_malformed(void **state)
{
        static const char *const answers[] = {
                "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n1 0\nx 0 0\n",
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nfoo\r\n",
                "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n9 1\n",
                "SSH-2.0-OpenSSH_9.2\r\n",
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: br\r\n\r\n",
                "HTTP/1.1 200 OK\r\n\r\n1 2\nab", /* to the close, no x */
        };

        (void)state;
        for (size_t i = 0; i < sizeof(answers) / sizeof(answers[0]); i++) {
                struct exec_spec spec = { .argv = argv_true, .timeout_ms = 1000, .max_output = 8 };
                struct exec_result res;
                char err[PROVIDER_ERR_MAX] = "";
                struct fake f = { 0 };
                int64_t t0 = now_ms();

                fake_init(&f);
                fake_start(&f, FAKE_ANSWER, answers[i], 0);
                assert_int_equal(agent_exec(f.dir, &spec, &res, err), -EIO);
                fake_done(&f);
                assert_non_null(strstr(err, "malformed answer"));
                assert_true(now_ms() - t0 < 1000);
                exec_result_free(&res);
                fake_free(&f);
        }
}

static void test_exec_header_block_too_big(void **state)
{
        struct exec_spec spec = { .argv = argv_true, .timeout_ms = 1000 };
        struct exec_result res;
        char err[PROVIDER_ERR_MAX] = "";
        struct bytes a = { 0 };
        struct fake f = { 0 };

        (void)state;
        bytes_str(&a, "HTTP/1.1 200 OK\r\n");
        while (a.n < 40000)
                bytes_str(&a, "X-A: bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\r\n");
        fake_init(&f);
        fake_start(&f, FAKE_ANSWER_HANG, a.p, a.n);
        assert_int_equal(agent_exec(f.dir, &spec, &res, err), -EIO);
        fake_done(&f);
        assert_non_null(strstr(err, "16 KiB"));
        exec_result_free(&res);
        free(a.p);
        fake_free(&f);
}

/* The agent dies mid-answer: an error at once, not a hang. */
static void test_exec_closed_mid_answer(void **state)
{
        static const char cut[] = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                                  "8\r\n1 5\nabc";
        struct exec_spec spec = { .argv = argv_true, .timeout_ms = 60000 };
        struct exec_result res;
        char err[PROVIDER_ERR_MAX] = "";
        struct fake f = { 0 };
        int64_t t0 = now_ms();

        (void)state;
        fake_init(&f);
        fake_start(&f, FAKE_ANSWER, cut, 0);
        assert_int_equal(agent_exec(f.dir, &spec, &res, err), -EIO);
        fake_done(&f);
        assert_true(now_ms() - t0 < 1000);
        assert_non_null(strstr(err, "closed"));
        exec_result_free(&res);

        /* closed before a byte: unreachable */
        fake_init(&f);
        fake_start(&f, FAKE_CLOSE, NULL, 0);
        assert_int_equal(agent_exec(f.dir, &spec, &res, err), -ECONNREFUSED);
        fake_done(&f);
        assert_non_null(strstr(err, "unreachable"));
        exec_result_free(&res);
        fake_free(&f);
}

/* An agent that never answers: -ETIMEDOUT at timeout_ms + grace. */
static void test_exec_never_answers(void **state)
{
        struct exec_spec spec = { .argv = argv_true, .timeout_ms = 100 };
        struct exec_result res;
        char err[PROVIDER_ERR_MAX] = "";
        struct fake f = { 0 };
        int64_t t0 = now_ms(), dt;

        (void)state;
        fake_init(&f);
        fake_start(&f, FAKE_SILENT, NULL, 0);
        assert_int_equal(agent_exec(f.dir, &spec, &res, err), -ETIMEDOUT);
        dt = now_ms() - t0;
        fake_done(&f);
        assert_true(dt >= 100 + AGENT_EXEC_GRACE_MS - 50);
        assert_true(dt < 100 + AGENT_EXEC_GRACE_MS + 1000);
        exec_result_free(&res);
        fake_free(&f);
}

/* The head came but the x frame never does: timed_out with the output so far. */
static void test_exec_answer_stalls(void **state)
{
        static const char part[] = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                                   "7\r\n1 2\nhi\r\n";
        struct exec_spec spec = { .argv = argv_true, .timeout_ms = 100, .max_output = 100 };
        struct exec_result res;
        char err[PROVIDER_ERR_MAX] = "";
        struct fake f = { 0 };
        int64_t t0 = now_ms(), dt;

        (void)state;
        fake_init(&f);
        fake_start(&f, FAKE_ANSWER_HANG, part, 0);
        assert_int_equal(agent_exec(f.dir, &spec, &res, err), 0);
        dt = now_ms() - t0;
        fake_done(&f);
        assert_true(res.timed_out);
        assert_int_equal(res.exit_code, -1);
        assert_string_equal(res.out, "hi");
        assert_true(dt < 100 + AGENT_EXEC_GRACE_MS + 1000);
        exec_result_free(&res);
        fake_free(&f);
}

/* on_tick runs about once a second while nothing comes, and can abort. */
static void test_exec_stream_tick_aborts(void **state)
{
        static const char head[] = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
        struct exec_spec spec = { .argv = argv_true, .timeout_ms = 0 };
        struct order o = { .stop_at_tick = 2 };
        struct exec_stream_cb cb = { .on_output = order_output, .on_tick = order_tick, .ud = &o };
        struct exec_result res;
        char err[PROVIDER_ERR_MAX] = "";
        struct fake f = { 0 };
        int64_t t0 = now_ms(), dt;

        (void)state;
        fake_init(&f);
        fake_start(&f, FAKE_ANSWER_HANG, head, 0);
        assert_int_equal(agent_exec_stream(f.dir, &spec, &cb, &res, err), -ECANCELED);
        dt = now_ms() - t0;
        fake_done(&f);
        assert_int_equal(o.ticks, 2);
        assert_true(dt >= 1900 && dt < 3000);
        free(o.log.p);
        fake_free(&f);
}

static void test_exec_request_too_big(void **state)
{
        static const char *argv[3] = { "sh", NULL, NULL };
        struct exec_spec spec = { .argv = argv, .timeout_ms = 1000 };
        struct exec_result res;
        char err[PROVIDER_ERR_MAX] = "";
        char *big = malloc(100 * 1024);
        struct fake f = { 0 };

        (void)state;
        assert_non_null(big);
        memset(big, ' ', 100 * 1024 - 1); /* 300 KiB encoded */
        big[100 * 1024 - 1] = '\0';
        argv[1] = big;
        fake_init(&f);
        assert_int_equal(agent_exec(f.dir, &spec, &res, err), -EINVAL);
        assert_non_null(strstr(err, "request over"));
        exec_result_free(&res);
        spec.argv = (const char *const[]){ NULL };
        assert_int_equal(agent_exec(f.dir, &spec, &res, err), -EINVAL);
        exec_result_free(&res);
        fake_done(&f);
        free(big);
        fake_free(&f);
}

/* ---- the client: connect ---- */

static void test_connect_missing(void **state)
{
        char err[PROVIDER_ERR_MAX] = "";
        struct fake f = { 0 };

        (void)state;
        fake_init(&f);
        assert_int_equal(agent_connect(f.dir, err), -ENOENT);
        assert_non_null(strstr(err, "unreachable"));
        assert_int_equal(agent_connect("/nonexistent/agentc", err), -ENOENT);
        fake_done(&f);
        fake_free(&f);
}

/* A planted link to a live socket is refused and the socket never sees a
 * connection; so are a file, a directory and a dead socket. */
static void test_connect_refuses_plants(void **state)
{
        char err[PROVIDER_ERR_MAX] = "", other_dir[64] = "/tmp/agentc-other-XXXXXX", other[128];
        struct exec_spec spec = { .argv = argv_true, .timeout_ms = 1000 };
        struct exec_result res;
        struct fake f = { 0 };
        int lfd, fd;

        (void)state;
        assert_non_null(mkdtemp(other_dir));
        snprintf(other, sizeof(other), "%s/live.sock", other_dir);
        lfd = listen_at(other);
        fake_init(&f);

        assert_int_equal(symlink(other, f.sock), 0);
        assert_int_equal(agent_connect(f.dir, err), -ECONNREFUSED);
        assert_non_null(strstr(err, "not a socket"));
        assert_int_equal(agent_exec(f.dir, &spec, &res, err), -ECONNREFUSED);
        exec_result_free(&res);
        assert_int_equal(fcntl(lfd, F_SETFL, O_NONBLOCK), 0);
        assert_int_equal(accept4(lfd, NULL, NULL, SOCK_CLOEXEC), -1);
        assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
        assert_int_equal(unlink(f.sock), 0);

        /* a link to the directory holding the socket, as the dir itself */
        {
                char linkdir[160];

                snprintf(linkdir, sizeof(linkdir), "%s/dirlink", f.dir);
                assert_int_equal(symlink(other_dir, linkdir), 0);
                assert_int_equal(agent_connect(linkdir, err), -ECONNREFUSED);
                assert_int_equal(unlink(linkdir), 0);
        }

        fd = open(f.sock, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        close(fd);
        assert_int_equal(agent_connect(f.dir, err), -ECONNREFUSED);
        assert_int_equal(unlink(f.sock), 0);

        assert_int_equal(mkdir(f.sock, 0700), 0);
        assert_int_equal(agent_connect(f.dir, err), -ECONNREFUSED);
        assert_int_equal(rmdir(f.sock), 0);

        /* a socket nobody listens on any more (a killed agent) */
        fd = listen_at(f.sock);
        close(fd);
        assert_int_equal(agent_connect(f.dir, err), -ECONNREFUSED);
        assert_non_null(strstr(err, "refused"));

        assert_int_equal(accept4(lfd, NULL, NULL, SOCK_CLOEXEC), -1);
        close(lfd);
        (void)unlink(other);
        (void)rmdir(other_dir);
        fake_done(&f);
        fake_free(&f);
}

/* ---- the client: files and health ---- */

static void test_read_file(void **state)
{
        static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhe\0lo";
        char err[PROVIDER_ERR_MAX] = "", v[64];
        void *data = NULL;
        size_t len = 0;
        struct fake f = { 0 };

        (void)state;
        fake_init(&f);
        fake_start(&f, FAKE_ANSWER, ok, sizeof(ok) - 1);
        assert_int_equal(agent_read_file(f.dir, "/etc/a b", 3, -1, 100, &data, &len, 2000, err), 0);
        fake_done(&f);
        assert_int_equal(len, 5);
        assert_memory_equal(data, "he\0lo", 6);
        free(data);
        assert_memory_equal(f.req.p, "GET /file?", 10);
        assert_int_equal(query_get(&f, "path", 0, v, sizeof(v)), 8);
        assert_string_equal(v, "/etc/a b");
        assert_int_equal(query_get(&f, "offset", 0, v, sizeof(v)), 1);
        assert_string_equal(v, "3");
        assert_int_equal(query_get(&f, "length", 0, v, sizeof(v)), 3);
        assert_string_equal(v, "101"); /* one past the cap */

        /* a length under the cap is asked as is; no offset when 0 */
        fake_init(&f);
        fake_start(&f, FAKE_ANSWER, ok, sizeof(ok) - 1);
        assert_int_equal(agent_read_file(f.dir, "/x", 0, 5, 100, &data, &len, 2000, err), 0);
        fake_done(&f);
        free(data);
        assert_int_equal(query_get(&f, "length", 0, v, sizeof(v)), 1);
        assert_string_equal(v, "5");
        assert_int_equal(query_get(&f, "offset", 0, v, sizeof(v)), -1);

        /* more than the cap */
        fake_init(&f);
        fake_start(&f, FAKE_ANSWER, ok, sizeof(ok) - 1);
        assert_int_equal(agent_read_file(f.dir, "/x", 0, -1, 4, &data, &len, 2000, err), -EFBIG);
        fake_done(&f);
        assert_null(data);
        fake_free(&f);
}

static void test_file_status_mapping(void **state)
{
        static const struct {
                const char *answer;
                int want;
        } cases[] = {
                { "HTTP/1.1 404 Not Found\r\nContent-Length: 16\r\n\r\nno such file\r\n\r\n",
                  -ENOENT },
                { "HTTP/1.1 400 Bad Request\r\nContent-Length: 15\r\n\r\nis a directory\n", -EISDIR },
                { "HTTP/1.1 403 Forbidden\r\nContent-Length: 18\r\n\r\npermission denied\n", -EACCES },
                { "HTTP/1.1 500 Oops\r\nContent-Length: 4\r\n\r\nbad\n", -EIO },
        };

        (void)state;
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char err[PROVIDER_ERR_MAX] = "";
                void *data = NULL;
                size_t len = 0;
                struct fake f = { 0 };

                fake_init(&f);
                fake_start(&f, FAKE_ANSWER, cases[i].answer, 0);
                assert_int_equal(agent_read_file(f.dir, "/p", 0, -1, 100, &data, &len, 2000, err),
                                 cases[i].want);
                fake_done(&f);
                assert_null(data);
                assert_non_null(strstr(err, "sandbox agent: read: "));

                fake_init(&f);
                fake_start(&f, FAKE_ANSWER, cases[i].answer, 0);
                assert_int_equal(agent_write_file(f.dir, "/p", "x", 1, -1, -1, -1, false, 2000, err),
                                 cases[i].want);
                fake_done(&f);
                fake_free(&f);
        }
}

static size_t collect_announced;

static int collect(void *ud, const char *p, size_t n)
{
        if (!p) { /* the size, before the bytes */
                collect_announced = n;
                return 0;
        }
        bytes_add(ud, p, n);
        return 0;
}

static void test_read_file_cb(void **state)
{
        struct bytes body = { 0 }, a = { 0 }, got = { 0 };
        char err[PROVIDER_ERR_MAX] = "", v[16];
        struct fake f = { 0 };

        (void)state;
        for (int i = 0; i < 5000; i++)
                bytes_fmt(&body, "%04d\n", i);
        chunked_answer(&a, &body, 3000);
        fake_init(&f);
        fake_start(&f, FAKE_ANSWER, a.p, a.n);
        collect_announced = (size_t)-1;
        assert_int_equal(agent_read_file_cb(f.dir, "/big", 0, -1, collect, &got, 2000, err), 0);
        fake_done(&f);
        assert_int_equal(got.n, body.n);
        assert_int_equal(collect_announced, (size_t)-1); /* chunked: no size said */
        assert_memory_equal(got.p, body.p, body.n);
        assert_int_equal(query_get(&f, "length", 0, v, sizeof(v)), -1);
        fake_free(&f);

        /* with a Content-Length: the size first, once, then the bytes */
        free(a.p);
        free(got.p);
        a = (struct bytes){ 0 };
        got = (struct bytes){ 0 };
        bytes_fmt(&a, "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n", body.n);
        bytes_add(&a, body.p, body.n);
        f = (struct fake){ 0 };
        fake_init(&f);
        fake_start(&f, FAKE_ANSWER, a.p, a.n);
        assert_int_equal(agent_read_file_cb(f.dir, "/big", 0, -1, collect, &got, 2000, err), 0);
        fake_done(&f);
        assert_int_equal(collect_announced, body.n);
        assert_int_equal(got.n, body.n);
        assert_memory_equal(got.p, body.p, body.n);
        free(body.p);
        free(a.p);
        free(got.p);
        fake_free(&f);
}

/* on_fd as a download uses it, with recv standing in for splice: it must
 * be offered only the body (never more than its Content-Length), after the
 * size, and may decline (-EOPNOTSUPP: the bytes then come to on_data). */
struct fd_sink {
        struct bytes got;
        size_t calls, max_seen;
        bool decline;
        bool before_size; /* called before the size was announced */
};

static int fd_sink_data(void *ud, const char *p, size_t n)
{
        struct fd_sink *s = ud;

        if (!p) {
                collect_announced = n;
                return 0;
        }
        bytes_add(&s->got, p, n);
        return 0;
}

static ssize_t fd_sink_fd(void *ud, int fd, size_t max)
{
        struct fd_sink *s = ud;
        char buf[65536];
        ssize_t n;

        if (s->decline)
                return -EOPNOTSUPP;
        if (collect_announced == (size_t)-1)
                s->before_size = true;
        s->calls++;
        if (max > s->max_seen)
                s->max_seen = max;
        n = recv(fd, buf, max < sizeof(buf) ? max : sizeof(buf), MSG_DONTWAIT);
        if (n < 0)
                return -errno;
        bytes_add(&s->got, buf, (size_t)n);
        return n;
}

static void test_read_file_fd(void **state)
{
        struct bytes body = { 0 }, a = { 0 };
        char err[PROVIDER_ERR_MAX] = "";
        struct fake f = { 0 };

        (void)state;
        for (int i = 0; i < 40000; i++)
                bytes_fmt(&body, "%05d\n", i);
        bytes_fmt(&a, "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n", body.n);
        bytes_add(&a, body.p, body.n);
        bytes_add(&a, "GARBAGE AFTER THE BODY", 22); /* a hostile agent's extra bytes */

        for (int decline = 0; decline < 2; decline++) {
                struct fd_sink s = { .decline = decline };
                struct file_read_cb cb = { .on_data = fd_sink_data, .on_fd = fd_sink_fd, .ud = &s };

                fake_init(&f);
                f.piece = 50000;
                fake_start(&f, FAKE_ANSWER, a.p, a.n);
                collect_announced = (size_t)-1;
                assert_int_equal(agent_read_file_fd(f.dir, "/big", 0, -1, &cb, 5000, err), 0);
                fake_done(&f);
                assert_int_equal(collect_announced, body.n);
                assert_false(s.before_size);
                assert_int_equal(s.got.n, body.n);
                assert_memory_equal(s.got.p, body.p, body.n);
                if (decline) {
                        assert_int_equal(s.calls, 0);
                } else {
                        assert_true(s.calls > 0);
                        assert_true(s.max_seen <= body.n);
                }
                free(s.got.p);
                fake_free(&f);
        }

        /* closed before the Content-Length: cut short, an error */
        {
                struct fd_sink s = { 0 };
                struct file_read_cb cb = { .on_data = fd_sink_data, .on_fd = fd_sink_fd, .ud = &s };

                fake_init(&f);
                f.piece = 50000;
                fake_start(&f, FAKE_ANSWER, a.p, a.n / 2);
                collect_announced = (size_t)-1;
                assert_int_equal(agent_read_file_fd(f.dir, "/big", 0, -1, &cb, 5000, err), -EIO);
                fake_done(&f);
                assert_true(s.got.n < body.n);
                free(s.got.p);
                fake_free(&f);
        }

        /* stalls mid-body: the deadline still holds */
        {
                struct fd_sink s = { 0 };
                struct file_read_cb cb = { .on_data = fd_sink_data, .on_fd = fd_sink_fd, .ud = &s };
                int64_t t0 = now_ms(), dt;

                fake_init(&f);
                fake_start(&f, FAKE_ANSWER_HANG, a.p, a.n / 2);
                collect_announced = (size_t)-1;
                assert_int_equal(agent_read_file_fd(f.dir, "/big", 0, -1, &cb, 300, err), -ETIMEDOUT);
                dt = now_ms() - t0;
                fake_done(&f);
                assert_true(dt >= 290 && dt < 1500);
                free(s.got.p);
                fake_free(&f);
        }

        /* an error answer: its body is never offered to on_fd */
        {
                struct fd_sink s = { 0 };
                struct file_read_cb cb = { .on_data = fd_sink_data, .on_fd = fd_sink_fd, .ud = &s };

                fake_init(&f);
                fake_start(&f, FAKE_ANSWER, "HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\nno such f", 0);
                collect_announced = (size_t)-1;
                assert_int_equal(agent_read_file_fd(f.dir, "/nope", 0, -1, &cb, 2000, err), -ENOENT);
                fake_done(&f);
                assert_int_equal(s.calls, 0); /* an error body is never offered */
                fake_free(&f);
        }
        free(body.p);
        free(a.p);
}

static void test_read_file_timeout(void **state)
{
        char err[PROVIDER_ERR_MAX] = "";
        void *data = NULL;
        size_t len = 0;
        struct fake f = { 0 };
        int64_t t0 = now_ms(), dt;

        (void)state;
        fake_init(&f);
        fake_start(&f, FAKE_SILENT, NULL, 0);
        assert_int_equal(agent_read_file(f.dir, "/x", 0, -1, 10, &data, &len, 300, err), -ETIMEDOUT);
        dt = now_ms() - t0;
        fake_done(&f);
        assert_true(dt >= 290 && dt < 1500);
        assert_null(data);
        fake_free(&f);
}

static void test_write_file(void **state)
{
        static const char ok[] = "HTTP/1.1 204 No Content\r\n\r\n";
        static char big[300000];
        char err[PROVIDER_ERR_MAX] = "", v[64];
        struct fake f = { 0 };

        (void)state;
        for (size_t i = 0; i < sizeof(big); i++)
                big[i] = (char)(i * 7);
        fake_init(&f);
        fake_start(&f, FAKE_ANSWER, ok, 0);
        assert_int_equal(agent_write_file(f.dir, "/d/f&=x", big, sizeof(big), 0644, 1000, 1001,
                                          true, 2000, err),
                         0);
        fake_done(&f);
        assert_memory_equal(f.req.p, "PUT /file?", 10);
        assert_int_equal(query_get(&f, "path", 0, v, sizeof(v)), 7);
        assert_string_equal(v, "/d/f&=x");
        assert_int_equal(query_get(&f, "mode", 0, v, sizeof(v)), 4);
        assert_string_equal(v, "0644");
        assert_int_equal(query_get(&f, "owner", 0, v, sizeof(v)), 9);
        assert_string_equal(v, "1000:1001");
        assert_int_equal(query_get(&f, "append", 0, v, sizeof(v)), 1);
        assert_int_equal(f.req.n - f.head_len, sizeof(big));
        assert_memory_equal(f.req.p + f.head_len, big, sizeof(big));

        /* defaults: nothing but the path */
        fake_init(&f);
        fake_start(&f, FAKE_ANSWER, ok, 0);
        assert_int_equal(agent_write_file(f.dir, "/e", "", 0, -1, 5, -1, false, 2000, err), 0);
        fake_done(&f);
        assert_int_equal(query_get(&f, "mode", 0, v, sizeof(v)), -1);
        assert_int_equal(query_get(&f, "owner", 0, v, sizeof(v)), -1);
        assert_int_equal(query_get(&f, "append", 0, v, sizeof(v)), -1);
        assert_non_null(strstr(f.req.p, "\r\nContent-Length: 0\r\n"));

        assert_int_equal(agent_write_file(f.dir, "/e", "", 0, 010000, -1, -1, false, 2000, err),
                         -EINVAL);
        fake_free(&f);
}

static void test_health(void **state)
{
        static const char ok[] =
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 44\r\n"
                "\r\nagent=1\npid=1\nentrypoint=exited\nexit_code=2\n";
        static const char bad[] = "HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\nhello!\n";
        struct agent_health h;
        char err[PROVIDER_ERR_MAX] = "";
        struct fake f = { 0 };

        (void)state;
        fake_init(&f);
        fake_start(&f, FAKE_ANSWER, ok, 0);
        assert_int_equal(agent_health(f.dir, &h, 1000, err), 0);
        fake_done(&f);
        assert_true(h.exited);
        assert_int_equal(h.exit_code, 2);
        assert_memory_equal(f.req.p, "GET /health HTTP/1.1\r\n", 22);

        fake_init(&f);
        fake_start(&f, FAKE_ANSWER, bad, 0);
        assert_int_equal(agent_health(f.dir, &h, 1000, err), -EIO);
        fake_done(&f);
        assert_non_null(strstr(err, "malformed"));

        fake_init(&f);
        assert_int_equal(agent_health(f.dir, &h, 1000, err), -ENOENT);
        fake_done(&f);
        fake_free(&f);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_proto_exec_split_everywhere),
                cmocka_unit_test(test_proto_bodies),
                cmocka_unit_test(test_proto_passable),
                cmocka_unit_test(test_proto_malformed),
                cmocka_unit_test(test_proto_cut_short),
                cmocka_unit_test(test_proto_no_exit_frame),
                cmocka_unit_test(test_proto_head_cap),
                cmocka_unit_test(test_proto_error_body),
                cmocka_unit_test(test_proto_callback_stops),
                cmocka_unit_test(test_health_parse),
                cmocka_unit_test(test_exec_ok),
                cmocka_unit_test(test_exec_percent_encoding),
                cmocka_unit_test(test_exec_output_cap),
                cmocka_unit_test(test_exec_stream_order),
                cmocka_unit_test(test_exec_detach),
                cmocka_unit_test(test_exec_entrypoint_already),
                cmocka_unit_test(test_exec_seat_and_hangup),
                cmocka_unit_test(test_exec_error_status),
                cmocka_unit_test(test_exec_malformed),
                cmocka_unit_test(test_exec_header_block_too_big),
                cmocka_unit_test(test_exec_closed_mid_answer),
                cmocka_unit_test(test_exec_never_answers),
                cmocka_unit_test(test_exec_answer_stalls),
                cmocka_unit_test(test_exec_stream_tick_aborts),
                cmocka_unit_test(test_exec_request_too_big),
                cmocka_unit_test(test_connect_missing),
                cmocka_unit_test(test_connect_refuses_plants),
                cmocka_unit_test(test_read_file),
                cmocka_unit_test(test_file_status_mapping),
                cmocka_unit_test(test_read_file_cb),
                cmocka_unit_test(test_read_file_fd),
                cmocka_unit_test(test_read_file_timeout),
                cmocka_unit_test(test_write_file),
                cmocka_unit_test(test_health),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
