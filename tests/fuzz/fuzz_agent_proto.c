/* fuzz_agent_proto: everything sandbox-agent sends the broker goes through
 * agent_proto (an HTTP/1.1 answer; inside /exec's body the agent's frames)
 * and a /health body through agent_health_parse. The sandbox is hostile
 * and the socket hands bytes over in pieces of any size. Input layout:
 *
 *   byte 0      bit 0: frames (/exec); bits 1-7: stop selector (a callback
 *               returns -ECANCELED once that many * 8 bytes were handed
 *               over; 0 = never)
 *   byte 1      k = byte % 16: number of piece-size bytes that follow
 *   k bytes     piece sizes, cycled (0 is an empty feed)
 *   rest        the answer
 *
 * The answer is fed whole, in those pieces, and byte by byte; the result,
 * the reason, the status, the decoded bytes (and their streams), the exit
 * frame and the kept error body must not depend on the split. Caps must
 * hold; a failed parser stays failed. Any crash, sanitizer report or
 * abort() is a bug. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "providers/agent/agent_proto.h"
#include "fuzz.h"

/* What one parse handed over: bytes of each stream (0 = the raw body),
 * never more than the input holds. */
struct sink {
        uint8_t *buf[3];
        size_t len[3], max;
        size_t seen, stop_after; /* 0: never stop */
        int exits, exit_code;
        bool timed_out;
};

static int take(struct sink *s, int stream, const char *p, size_t n)
{
        CHECK(n > 0);
        CHECK(s->len[stream] + n <= s->max);
        memcpy(s->buf[stream] + s->len[stream], p, n);
        s->len[stream] += n;
        s->seen += n;
        return s->stop_after && s->seen >= s->stop_after ? -ECANCELED : 0;
}

static int on_body(void *ud, const char *p, size_t n)
{
        return take(ud, 0, p, n);
}

static int on_output(void *ud, int stream, const char *p, size_t n)
{
        CHECK(stream == 1 || stream == 2);
        CHECK(n <= AGENT_FRAME_MAX);
        return take(ud, stream, p, n);
}

static int on_exit_frame(void *ud, int code, bool timed_out)
{
        struct sink *s = ud;

        CHECK(code >= -1 && code <= 255);
        s->exits++;
        s->exit_code = code;
        s->timed_out = timed_out;
        return 0;
}

struct run {
        struct agent_proto p;
        struct sink s;
        int r;     /* first error of the feeds, else of finish */
        bool done; /* agent_proto_done before finish */
};

static void run_init(struct run *x, bool frames, size_t max, size_t stop_after)
{
        struct agent_proto_cb cb = { .on_body = on_body,
                                     .on_output = on_output,
                                     .on_exit = on_exit_frame };

        memset(&x->s, 0, sizeof(x->s));
        x->s.max = max;
        x->s.stop_after = stop_after;
        for (int i = 0; i < 3; i++) {
                x->s.buf[i] = malloc(max ? max : 1);
                CHECK(x->s.buf[i]);
        }
        cb.ud = &x->s;
        agent_proto_init(&x->p, frames, &cb);
        x->r = 0;
        x->done = false;
}

static void run_release(struct run *x)
{
        for (int i = 0; i < 3; i++)
                free(x->s.buf[i]);
}

/* Feed p in pieces (sizes cycled; none: whole), as the client does: stop
 * at an error or once the parser says done; finish at the end. */
static void run_feed(struct run *x, const uint8_t *p, size_t n, const uint8_t *sizes, size_t k)
{
        size_t off = 0, i = 0;

        while (x->r == 0 && !agent_proto_done(&x->p)) {
                size_t piece = k ? sizes[i++ % k] : n - off;

                if (piece > n - off)
                        piece = n - off;
                x->r = agent_proto_feed(&x->p, p + off, piece);
                off += piece;
                if (off == n)
                        break;
        }
        x->done = agent_proto_done(&x->p);
        if (x->r == 0)
                x->r = agent_proto_finish(&x->p);
}

static void check_run(const struct run *x)
{
        const struct agent_proto *p = &x->p;

        CHECK(x->r == 0 || x->r == -EPROTO || x->r == -ECANCELED);
        CHECK(x->r != -EPROTO || p->why != NULL);
        CHECK(x->r != -ECANCELED || p->why == NULL);
        CHECK(p->err_len <= AGENT_ERR_BODY_MAX);
        CHECK(p->err_body[p->err_len] == '\0');
        CHECK(p->status == 0 || (p->status >= 200 && p->status <= 599));
        CHECK(p->head_len <= AGENT_HEAD_MAX);
        CHECK(x->s.exits <= 1);
        if (x->r == 0) {
                CHECK(agent_proto_done(p));
                CHECK(p->head_done);
                /* a complete /exec answer has its exit frame */
                if (p->frames && p->status >= 200 && p->status < 300)
                        CHECK(p->exited && x->s.exits == 1);
        }
        if (p->exited)
                CHECK(p->exit_code == x->s.exit_code && p->timed_out == x->s.timed_out);
        if (x->r < 0) /* failed stays failed */
                CHECK(agent_proto_feed((struct agent_proto *)p, "1", 1) == -EPROTO);
}

static void check_same(const struct run *a, const struct run *b)
{
        CHECK(a->r == b->r);
        CHECK(a->p.why == b->p.why);
        CHECK(a->p.status == b->p.status);
        CHECK(a->p.exited == b->p.exited);
        CHECK(a->p.exit_code == b->p.exit_code);
        CHECK(a->p.timed_out == b->p.timed_out);
        CHECK(a->p.err_len == b->p.err_len);
        CHECK(memcmp(a->p.err_body, b->p.err_body, a->p.err_len) == 0);
        for (int i = 0; i < 3; i++) {
                CHECK(a->s.len[i] == b->s.len[i]);
                CHECK(memcmp(a->s.buf[i], b->s.buf[i], a->s.len[i]) == 0);
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        static const uint8_t one = 1;
        struct run whole, pieces, bytes;
        const uint8_t *sizes, *p;
        size_t k, n, stop;
        bool frames;

        if (size < 2)
                return 0;
        frames = data[0] & 1;
        stop = (size_t)(data[0] >> 1) * 8;
        k = data[1] % 16;
        if (size - 2 < k)
                return 0;
        sizes = data + 2;
        p = data + 2 + k;
        n = size - 2 - k;
        /* all-zero piece sizes would never advance */
        {
                bool nz = false;

                for (size_t i = 0; i < k; i++)
                        nz |= sizes[i] != 0;
                if (!nz)
                        k = 0;
        }

        run_init(&whole, frames, n, 0);
        run_init(&pieces, frames, n, 0);
        run_init(&bytes, frames, n, 0);
        run_feed(&whole, p, n, NULL, 0);
        run_feed(&pieces, p, n, sizes, k);
        run_feed(&bytes, p, n, &one, 1);
        check_run(&whole);
        check_run(&pieces);
        check_run(&bytes);
        check_same(&whole, &pieces);
        check_same(&whole, &bytes);

        /* a callback that stops the feed: its error comes back, unchanged */
        if (stop) {
                struct run st;

                run_init(&st, frames, n, stop);
                run_feed(&st, p, n, sizes, k);
                check_run(&st);
                if (st.s.seen >= stop)
                        CHECK(st.r == -ECANCELED);
                else
                        CHECK(st.r == whole.r);
                run_release(&st);
        }

        /* a 2xx raw body is what /health's parser reads (capped as the
         * client caps it); and the input itself as a body */
        {
                struct agent_health h = { 0 };
                size_t bl = whole.s.len[0] < 4096 ? whole.s.len[0] : 4096;

                if (agent_health_parse((const char *)whole.s.buf[0], bl, &h) == 0)
                        CHECK(h.exited ? h.exit_code >= 0 && h.exit_code <= 255 && !h.running
                                       : h.exit_code == -1);
                if (agent_health_parse((const char *)p, n, &h) == 0)
                        CHECK(!(h.exited && h.running));
        }

        run_release(&whole);
        run_release(&pieces);
        run_release(&bytes);
        return 0;
}
