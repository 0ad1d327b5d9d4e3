/* Unit tests for agent/splice.c, the byte pump of the agent's egress and
 * tunnels, the host's egress relay and sandbox-ingress: over real
 * socketpairs, a client a spliced to a server b (a <-> A | B <-> b, the pump
 * holding A and B). Bytes pass both ways; a half-close passes through and the
 * other way stays open; bytes sent before an EOF arrive before it; a slow
 * reader holds the pump at its buffer (no growth, the right interest) and
 * loses nothing; a peer gone ends the pair with an error; POLLERR and a
 * POLLHUP of an ended side end it; the epoll way of driving it (POLLIN on
 * both, nothing readable) moves nothing and keeps it; splice_run() ends 0
 * when both sides end, -ETIMEDOUT when idle, -EPIPE on an error. */
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
#include <unistd.h>
#include <cmocka.h>

#include "splice.h"

/* Bound of one poll() in these tests: a hang fails instead of blocking. */
#define WAIT_MS 5000

struct rig {
        int a, b;        /* the test's ends: client and server */
        struct splice s; /* side 0 holds A (a's peer), side 1 B (b's peer) */
        char buf[2][SPLICE_BUF];
};

static void rig_open(struct rig *r, size_t bufsize)
{
        int ca[2], cb[2];

        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ca), 0);
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, cb), 0);
        r->a = ca[0];
        r->b = cb[1];
        assert_true(bufsize <= SPLICE_BUF);
        splice_half_init(&r->s.side[0], ca[1], r->buf[0], bufsize);
        splice_half_init(&r->s.side[1], cb[0], r->buf[1], bufsize);
        for (int i = 0; i < 2; i++)
                assert_int_equal(fcntl(r->s.side[i].fd, F_SETFL, O_NONBLOCK), 0);
}

static void rig_close(struct rig *r)
{
        int fds[] = { r->a, r->b, r->s.side[0].fd, r->s.side[1].fd };

        for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
                if (fds[i] >= 0)
                        (void)close(fds[i]);
}

/* One poll() and pump; returns splice_pump's answer. */
static bool step(struct rig *r)
{
        struct pollfd p[2];

        splice_events(&r->s, p);
        assert_true(poll(p, 2, WAIT_MS) > 0);
        return splice_pump(&r->s, p);
}

static void send_all(int fd, const char *s, size_t n)
{
        assert_int_equal(send(fd, s, n, MSG_NOSIGNAL), (ssize_t)n);
}

/* Pump until fd has n bytes, read them into out. */
static void pump_read(struct rig *r, int fd, char *out, size_t n)
{
        size_t got = 0;

        while (got < n) {
                ssize_t k;

                assert_true(step(r));
                while ((k = recv(fd, out + got, n - got, MSG_DONTWAIT)) > 0)
                        got += (size_t)k;
        }
}

/* Pump until fd reads EOF (and nothing before it). Returns the last answer
 * of splice_pump (true if it was not called). */
static bool pump_until_eof(struct rig *r, int fd)
{
        bool live = true;
        char c;

        for (;;) {
                ssize_t k = recv(fd, &c, 1, MSG_DONTWAIT);

                assert_true(k <= 0); /* nothing but the EOF is expected */
                if (k == 0)
                        return live;
                assert_int_equal(errno, EAGAIN);
                live = step(r);
        }
}

static void test_both_directions(void **state)
{
        struct rig r;
        char got[16] = { 0 };

        (void)state;
        rig_open(&r, SPLICE_BUF);
        send_all(r.a, "hello", 5);
        pump_read(&r, r.b, got, 5);
        assert_memory_equal(got, "hello", 5);
        send_all(r.b, "world!", 6);
        pump_read(&r, r.a, got, 6);
        assert_memory_equal(got, "world!", 6);
        rig_close(&r);
}

static void test_half_close(void **state)
{
        struct rig r;
        char got[8];

        (void)state;
        rig_open(&r, SPLICE_BUF);
        /* the client sends, then ends its writing: the server reads both */
        send_all(r.a, "req", 3);
        assert_int_equal(shutdown(r.a, SHUT_WR), 0);
        pump_read(&r, r.b, got, 3);
        assert_memory_equal(got, "req", 3);
        assert_true(pump_until_eof(&r, r.b));
        assert_true(r.s.side[0].eof);
        assert_false(r.s.side[1].eof);
        /* the other way still carries the answer */
        send_all(r.b, "answer", 6);
        pump_read(&r, r.a, got, 6);
        assert_memory_equal(got, "answer", 6);
        /* the server ends too: the pair is over, the client sees EOF */
        assert_int_equal(shutdown(r.b, SHUT_WR), 0);
        while (step(&r))
                ;
        assert_true(r.s.side[1].eof);
        assert_int_equal(recv(r.a, got, 1, MSG_DONTWAIT), 0);
        rig_close(&r);
}

/* A writer that fills its end, then ends it (for the slow reader). */
struct feeder {
        int fd;
        size_t n;
};

static void *feed(void *arg)
{
        struct feeder *f = arg;
        char chunk[4096];

        for (size_t off = 0; off < f->n;) {
                size_t k = f->n - off < sizeof(chunk) ? f->n - off : sizeof(chunk);

                for (size_t i = 0; i < k; i++)
                        chunk[i] = (char)((off + i) * 7 + 3);
                ssize_t w = send(f->fd, chunk, k, MSG_NOSIGNAL);
                if (w <= 0)
                        return NULL;
                off += (size_t)w;
        }
        (void)shutdown(f->fd, SHUT_WR);
        return NULL;
}

static void test_slow_reader(void **state)
{
        struct rig r;
        struct feeder f;
        pthread_t t;
        struct pollfd p[2];
        size_t got = 0;

        (void)state;
        rig_open(&r, 64);
        f = (struct feeder){ .fd = r.a, .n = 1 << 20 };
        assert_int_equal(pthread_create(&t, NULL, feed, &f), 0);
        /* Nobody reads b: the pump fills b's socket, then holds 64 bytes at
         * most and waits for b to be writable, not for more from a. */
        for (;;) {
                int n;

                splice_events(&r.s, p);
                n = poll(p, 2, p[0].fd < 0 && (p[1].events & POLLOUT) ? 0 : WAIT_MS);
                if (n == 0)
                        break; /* b's socket is full: held */
                assert_true(n > 0);
                assert_true(splice_pump(&r.s, p));
                assert_true(r.s.side[0].len <= 64);
        }
        assert_true(p[0].fd < 0);
        assert_int_equal(p[1].events, POLLIN | POLLOUT); /* b may still speak */
        assert_true(r.s.side[0].len > r.s.side[0].off);
        /* Now read slowly (small reads), pumping between them: every byte
         * comes through in order, then the EOF. */
        for (;;) {
                char buf[100];
                ssize_t k = recv(r.b, buf, sizeof(buf), MSG_DONTWAIT);

                if (k == 0)
                        break;
                if (k < 0) {
                        assert_int_equal(errno, EAGAIN);
                        assert_true(step(&r));
                        continue;
                }
                for (ssize_t i = 0; i < k; i++)
                        assert_int_equal((unsigned char)buf[i],
                                         (unsigned char)((got + (size_t)i) * 7 + 3));
                got += (size_t)k;
        }
        assert_int_equal(got, f.n);
        assert_int_equal(pthread_join(t, NULL), 0);
        rig_close(&r);
}

static void test_peer_gone(void **state)
{
        struct rig r;
        bool live = true;

        (void)state;
        rig_open(&r, SPLICE_BUF);
        /* the server vanishes (both ways): a's bytes have nowhere to go */
        assert_int_equal(close(r.b), 0);
        r.b = -1;
        send_all(r.a, "lost", 4);
        for (int i = 0; i < 4 && live; i++)
                live = step(&r);
        assert_false(live);
        rig_close(&r);
}

static void test_pollerr_and_hup(void **state)
{
        struct rig r;
        struct pollfd p[2] = { { .revents = 0 }, { .revents = POLLERR } };

        (void)state;
        rig_open(&r, SPLICE_BUF);
        assert_false(splice_pump(&r.s, p));
        /* a side read to its end that then hangs up ends the pair */
        r.s.side[0].eof = true;
        p[1].revents = 0;
        p[0].revents = POLLHUP;
        assert_false(splice_pump(&r.s, p));
        /* an ended side stays in the poll set (its POLLHUP must reach the
         * pump), a live side waiting for nothing does not */
        splice_events(&r.s, p);
        assert_int_equal(p[0].fd, r.s.side[0].fd);
        assert_int_equal(p[0].events, 0);
        assert_int_equal(p[1].events, POLLIN);
        rig_close(&r);
}

/* The relay's way: POLLIN on both sides whatever is ready. */
static void test_epoll_style(void **state)
{
        static const struct pollfd ready[2] = { { .revents = POLLIN }, { .revents = POLLIN } };
        struct rig r;
        char got[3], four[4];

        (void)state;
        rig_open(&r, SPLICE_BUF);
        assert_true(splice_pump(&r.s, ready)); /* nothing to read: EAGAIN, kept */
        assert_int_equal(r.s.side[0].len, 0);
        assert_false(r.s.side[0].eof || r.s.side[1].eof);
        send_all(r.b, "abc", 3);
        assert_true(splice_pump(&r.s, ready));
        assert_int_equal(recv(r.a, got, sizeof(got), MSG_DONTWAIT), 3);
        assert_memory_equal(got, "abc", 3);
        /* bytes put in a buffer before the pair starts (the relay's PROXY
         * line, the TCP agent's proof) go first */
        memcpy(r.s.side[0].buf, "PRE", 3);
        r.s.side[0].len = 3;
        send_all(r.a, "x", 1);
        assert_true(splice_pump(&r.s, ready));
        assert_true(splice_pump(&r.s, ready));
        assert_int_equal(recv(r.b, four, sizeof(four), MSG_DONTWAIT), 4);
        assert_memory_equal(four, "PREx", 4);
        rig_close(&r);
}

struct runner {
        struct splice *s;
        int idle_ms;
        int r;
};

static void *run(void *arg)
{
        struct runner *x = arg;

        x->r = splice_run(x->s, x->idle_ms);
        return NULL;
}

static void test_run(void **state)
{
        struct rig r;
        struct runner x;
        pthread_t t;
        char got[4];

        (void)state;
        /* both end: 0 */
        rig_open(&r, SPLICE_BUF);
        x = (struct runner){ .s = &r.s, .idle_ms = -1 };
        assert_int_equal(pthread_create(&t, NULL, run, &x), 0);
        send_all(r.a, "ping", 4);
        assert_int_equal(recv(r.b, got, 4, MSG_WAITALL), 4);
        assert_memory_equal(got, "ping", 4);
        assert_int_equal(shutdown(r.a, SHUT_WR), 0);
        assert_int_equal(recv(r.b, got, 1, 0), 0);
        assert_int_equal(shutdown(r.b, SHUT_WR), 0);
        assert_int_equal(pthread_join(t, NULL), 0);
        assert_int_equal(x.r, 0);
        rig_close(&r);

        /* nothing happens: idle */
        rig_open(&r, SPLICE_BUF);
        assert_int_equal(splice_run(&r.s, 20), -ETIMEDOUT);
        rig_close(&r);

        /* a peer gone while bytes wait for it: an error */
        rig_open(&r, SPLICE_BUF);
        assert_int_equal(close(r.b), 0);
        r.b = -1;
        send_all(r.a, "lost", 4);
        assert_int_equal(splice_run(&r.s, WAIT_MS), -EPIPE);
        rig_close(&r);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_both_directions),
                cmocka_unit_test(test_half_close),
                cmocka_unit_test(test_slow_reader),
                cmocka_unit_test(test_peer_gone),
                cmocka_unit_test(test_pollerr_and_hup),
                cmocka_unit_test(test_epoll_style),
                cmocka_unit_test(test_run),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
