/* exec_tracked: see exec_tracked.h. */
#include "sandbox/exec_tracked.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "providers/http_buf.h"
#include "codec/tailbuf.h"
#include "core/timeutil.h"

/* One run: the output as it streams, for the answer and the record. */
struct run {
        struct redis_conn *c;
        const struct exec_store_key *k;
        struct exec_tracked *t;
        bool streamed; /* the backend streams: else the output comes with the end */
        struct http_buf out, err;
        struct tailbuf tail;
        char *flat;         /* the tail made contiguous for a write */
        int64_t last_write; /* mono ms: the start, then each write */
        bool dirty;         /* output since the last write */
};

void exec_tracked_clear(struct exec_tracked *t)
{
        exec_result_free(&t->res);
        memset(t, 0, sizeof(*t));
}

static void store_failed(struct exec_tracked *t, int r, const char *what)
{
        if (r < 0 && !t->store_r) {
                t->store_r = r;
                t->store_what = what;
        }
}

/* Write the tail when there is news and the last write is old enough. A
 * failure is noted, not fatal: the command goes on, the answer too. */
static void progress(struct run *x)
{
        int64_t now = timeutil_mono_ms();
        size_t n;

        if (!x->dirty || now - x->last_write < EXEC_TRACKED_WRITE_MS)
                return;
        n = tailbuf_copy(&x->tail, x->flat);
        store_failed(x->t, exec_store_progress(x->c, x->k, x->flat, n, (int64_t)x->tail.total),
                     "progress");
        x->last_write = now;
        x->dirty = false;
}

static int on_output(void *ud, int stream, const char *data, size_t len)
{
        struct run *x = ud;
        int r;

        if (!x->streamed || len == 0)
                return 0; /* the fallback: the whole output is in the result already */
        r = http_buf_append(stream == 2 ? &x->err : &x->out, data, len);
        if (r == 0)
                r = tailbuf_append(&x->tail, data, len);
        if (r < 0)
                return r;
        x->dirty = true;
        progress(x);
        return 0;
}

static int on_tick(void *ud)
{
        progress(ud);
        return 0;
}

int exec_tracked_run(struct redis_conn *c, struct provider *p, const struct broker_config *cfg,
                     const struct exec_store_key *k, const char *ref, const struct exec_spec *spec,
                     struct exec_tracked *ret)
{
        struct exec_store_outcome created;
        struct run x = { .c = c,
                         .k = k,
                         .t = ret,
                         .streamed = provider_can_stream(p),
                         .out.max = spec->max_output,
                         .err.max = spec->max_output,
                         .tail.max = EXEC_STORE_TAIL_MAX };
        struct exec_stream_cb cb = { .on_output = on_output, .on_tick = on_tick, .ud = &x };
        char msg[PROVIDER_ERR_MAX + 128];
        int64_t t0;
        int r;

        memset(ret, 0, sizeof(*ret));
        if (!k) {
                /* no execId: no record, the command run whole */
                ret->kind = EXEC_STORE_CREATED;
                t0 = timeutil_mono_ms();
                ret->r = provider_exec(p, ref, spec, &ret->res, ret->err);
                ret->duration_ms = timeutil_mono_ms() - t0;
                return 0;
        }
        r = exec_store_create(c, cfg, k, spec->timeout_ms, &created);
        if (r < 0)
                return r;
        ret->kind = created.kind;
        ret->running = created.running;
        exec_store_outcome_clear(&created);
        if (ret->kind != EXEC_STORE_CREATED)
                return 0;
        x.flat = malloc(EXEC_STORE_TAIL_MAX);
        if (!x.flat) {
                ret->r = -ENOMEM;
                provider_errf(ret->err, "out of memory");
        } else {
                t0 = x.last_write = timeutil_mono_ms();
                ret->r = provider_exec_stream(p, ref, spec, &cb, &ret->res, ret->err);
                ret->duration_ms = timeutil_mono_ms() - t0;
        }
        if (ret->r == 0 && x.streamed) {
                /* streamed output is the caller's to keep: capped as provider_exec caps it */
                ret->res.out_truncated = x.out.truncated;
                ret->res.err_truncated = x.err.truncated;
                if (http_buf_steal(&x.out, &ret->res.out, &ret->res.out_len) < 0 ||
                    http_buf_steal(&x.err, &ret->res.err, &ret->res.err_len) < 0) {
                        ret->r = -ENOMEM;
                        provider_errf(ret->err, "out of memory");
                }
        }
        if (ret->r < 0) {
                exec_result_free(&ret->res);
                (void)provider_api_error(ret->r, "exec", ret->err, msg, sizeof(msg));
                r = exec_store_fail(c, cfg, k, msg);
        } else {
                r = exec_store_finish(c, cfg, k, &ret->res, ret->duration_ms);
        }
        store_failed(ret, r, "finish");
        ret->record_gone = r == 0;
        http_buf_release(&x.out);
        http_buf_release(&x.err);
        tailbuf_release(&x.tail);
        free(x.flat);
        return 0;
}
