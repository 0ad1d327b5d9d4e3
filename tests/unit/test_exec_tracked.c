/* Unit tests for lib/sandbox/exec_tracked.c: a command run with its record.
 * The provider, the store and the clock are replaced at the link seam: a
 * scripted command writes output at given moments, and the test checks what
 * the record got and when: no tail write for a command that ends within
 * EXEC_TRACKED_WRITE_MS, then at most one per EXEC_TRACKED_WRITE_MS and only
 * with news, each the last EXEC_STORE_TAIL_MAX bytes in arrival order; the
 * answer's streams capped as provider_exec caps them; the end recorded
 * (done, or failed with the provider's error), even after failed tail
 * writes; nothing run when the record cannot be made; a backend without
 * streaming recorded at its end only; a command without a key (no execId)
 * run whole by provider_exec, with no record at all. */
/* WRAP: -Wl,--wrap=exec_store_create -Wl,--wrap=exec_store_progress -Wl,--wrap=exec_store_finish -Wl,--wrap=exec_store_fail -Wl,--wrap=provider_exec_stream -Wl,--wrap=provider_exec -Wl,--wrap=provider_can_stream -Wl,--wrap=timeutil_mono_ms */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/config.h"
#include "sandbox/exec_tracked.h"

/* ---- the scripted command ---- */

enum step_kind { STEP_OUT = 1, STEP_ERR = 2, STEP_TICK };

struct step {
        int64_t at_ms; /* since the start */
        enum step_kind kind;
        const char *data; /* NULL with len: len bytes of fill */
        size_t len;
};

#define MAX_STEPS 256
#define MAX_WRITES 64

static struct {
        int64_t now;
        bool can_stream;
        struct step steps[MAX_STEPS];
        int n_steps;
        int64_t end_ms;
        int exit_code;
        int provider_r;
        bool provider_called;
        /* the store */
        enum exec_store_kind create_kind;
        long long create_running;
        int create_r;
        int created_timeout;
        int progress_r;
        int n_writes;
        struct {
                int64_t at_ms;
                char *tail;
                size_t len;
                int64_t total;
        } writes[MAX_WRITES];
        int finish_calls, fail_calls, finish_ret;
        char *fin_out, *fin_err;
        size_t fin_out_len, fin_err_len;
        bool fin_out_cut, fin_err_cut, fin_timed_out;
        int fin_exit;
        int64_t fin_duration;
        char fail_msg[512];
        /* the fallback's buffered result */
        const char *fb_out, *fb_err;
        bool fb_out_cut;
} F;

static const struct exec_store_key KEY = { .tenant = "acme",
                                           .lease_id = "0123456789abcdef0123456789abcdef",
                                           .sandbox_id = "fedcba9876543210fedcba9876543210",
                                           .exec_id = "call-0001" };

static int setup(void **state)
{
        (void)state;
        memset(&F, 0, sizeof(F));
        F.now = 1000000;
        F.can_stream = true;
        F.create_kind = EXEC_STORE_CREATED;
        F.finish_ret = 1;
        return 0;
}

static int teardown(void **state)
{
        (void)state;
        for (int i = 0; i < F.n_writes; i++)
                free(F.writes[i].tail);
        free(F.fin_out);
        free(F.fin_err);
        return 0;
}

static void step(int64_t at, enum step_kind kind, const char *data)
{
        assert_true(F.n_steps < MAX_STEPS);
        F.steps[F.n_steps++] = (struct step){ at, kind, data, data ? strlen(data) : 0 };
}

static void step_fill(int64_t at, enum step_kind kind, size_t len)
{
        assert_true(F.n_steps < MAX_STEPS);
        F.steps[F.n_steps++] = (struct step){ at, kind, NULL, len };
}

int64_t __wrap_timeutil_mono_ms(void);
int64_t __wrap_timeutil_mono_ms(void)
{
        return F.now;
}

bool __wrap_provider_can_stream(const struct provider *p);
bool __wrap_provider_can_stream(const struct provider *p)
{
        (void)p;
        return F.can_stream;
}

/* provider_exec: a command without a record, run whole (its output the
 * fallback's, fb_out; 250 ms long). */
int __wrap_provider_exec(struct provider *p, const char *ref, const struct exec_spec *spec,
                         struct exec_result *res, char *err);
int __wrap_provider_exec(struct provider *p, const char *ref, const struct exec_spec *spec,
                         struct exec_result *res, char *err)
{
        (void)p;
        (void)spec;
        assert_string_equal(ref, "ref");
        F.provider_called = true;
        F.now += 250;
        memset(res, 0, sizeof(*res));
        if (F.provider_r < 0) {
                snprintf(err, PROVIDER_ERR_MAX, "no such container");
                return F.provider_r;
        }
        res->exit_code = F.exit_code;
        res->out = strdup(F.fb_out ? F.fb_out : "");
        assert_non_null(res->out);
        res->out_len = strlen(res->out);
        return 0;
}

/* Stream byte i of a fill: a pattern that shows order. */
static char fill_byte(int s, size_t i)
{
        return (char)('a' + (s * 7 + i) % 26);
}

int __wrap_provider_exec_stream(struct provider *p, const char *ref, const struct exec_spec *spec,
                                const struct exec_stream_cb *cb, struct exec_result *ret,
                                char *ret_err);
int __wrap_provider_exec_stream(struct provider *p, const char *ref, const struct exec_spec *spec,
                                const struct exec_stream_cb *cb, struct exec_result *ret,
                                char *ret_err)
{
        int64_t t0 = F.now;

        (void)p;
        (void)ref;
        (void)spec;
        F.provider_called = true;
        memset(ret, 0, sizeof(*ret));
        if (!F.can_stream) {
                /* provider.c's fallback: buffered, then handed over stdout first */
                F.now = t0 + F.end_ms;
                ret->exit_code = F.exit_code;
                ret->out = strdup(F.fb_out ? F.fb_out : "");
                ret->err = strdup(F.fb_err ? F.fb_err : "");
                ret->out_len = strlen(ret->out);
                ret->err_len = strlen(ret->err);
                ret->out_truncated = F.fb_out_cut;
                if (ret->out_len)
                        assert_int_equal(cb->on_output(cb->ud, 1, ret->out, ret->out_len), 0);
                if (ret->err_len)
                        assert_int_equal(cb->on_output(cb->ud, 2, ret->err, ret->err_len), 0);
                return 0;
        }
        for (int i = 0; i < F.n_steps; i++) {
                const struct step *s = &F.steps[i];
                F.now = t0 + s->at_ms;
                if (s->kind == STEP_TICK) {
                        assert_int_equal(cb->on_tick(cb->ud), 0);
                } else if (s->data) {
                        assert_int_equal(cb->on_output(cb->ud, s->kind, s->data, s->len), 0);
                } else {
                        char *buf = malloc(s->len);
                        assert_non_null(buf);
                        for (size_t k = 0; k < s->len; k++)
                                buf[k] = fill_byte(i, k);
                        assert_int_equal(cb->on_output(cb->ud, s->kind, buf, s->len), 0);
                        free(buf);
                }
        }
        F.now = t0 + F.end_ms;
        if (F.provider_r < 0) {
                snprintf(ret_err, PROVIDER_ERR_MAX, "docker: exec: boom");
                return F.provider_r;
        }
        ret->exit_code = F.exit_code;
        return 0;
}

int __wrap_exec_store_create(struct redis_conn *c, const struct broker_config *cfg,
                             const struct exec_store_key *k, int timeout_ms,
                             struct exec_store_outcome *ret);
int __wrap_exec_store_create(struct redis_conn *c, const struct broker_config *cfg,
                             const struct exec_store_key *k, int timeout_ms,
                             struct exec_store_outcome *ret)
{
        (void)c;
        (void)cfg;
        assert_ptr_equal(k, &KEY);
        memset(ret, 0, sizeof(*ret));
        F.created_timeout = timeout_ms;
        if (F.create_r < 0)
                return F.create_r;
        ret->kind = F.create_kind;
        ret->running = F.create_running;
        return 0;
}

int __wrap_exec_store_progress(struct redis_conn *c, const struct exec_store_key *k,
                               const char *tail, size_t len, int64_t total);
int __wrap_exec_store_progress(struct redis_conn *c, const struct exec_store_key *k,
                               const char *tail, size_t len, int64_t total)
{
        (void)c;
        assert_ptr_equal(k, &KEY);
        assert_true(F.n_writes < MAX_WRITES);
        assert_true(len <= EXEC_STORE_TAIL_MAX);
        F.writes[F.n_writes].at_ms = F.now - 1000000;
        F.writes[F.n_writes].tail = malloc(len + 1);
        assert_non_null(F.writes[F.n_writes].tail);
        memcpy(F.writes[F.n_writes].tail, tail, len);
        F.writes[F.n_writes].len = len;
        F.writes[F.n_writes].total = total;
        F.n_writes++;
        return F.progress_r;
}

int __wrap_exec_store_finish(struct redis_conn *c, const struct broker_config *cfg,
                             const struct exec_store_key *k, const struct exec_result *res,
                             int64_t duration_ms);
int __wrap_exec_store_finish(struct redis_conn *c, const struct broker_config *cfg,
                             const struct exec_store_key *k, const struct exec_result *res,
                             int64_t duration_ms)
{
        (void)c;
        (void)cfg;
        assert_ptr_equal(k, &KEY);
        F.finish_calls++;
        F.fin_out = malloc(res->out_len + 1);
        F.fin_err = malloc(res->err_len + 1);
        assert_non_null(F.fin_out);
        assert_non_null(F.fin_err);
        memcpy(F.fin_out, res->out ? res->out : "", res->out_len);
        memcpy(F.fin_err, res->err ? res->err : "", res->err_len);
        F.fin_out_len = res->out_len;
        F.fin_err_len = res->err_len;
        F.fin_out_cut = res->out_truncated;
        F.fin_err_cut = res->err_truncated;
        F.fin_timed_out = res->timed_out;
        F.fin_exit = res->exit_code;
        F.fin_duration = duration_ms;
        return F.finish_ret;
}

int __wrap_exec_store_fail(struct redis_conn *c, const struct broker_config *cfg,
                           const struct exec_store_key *k, const char *message);
int __wrap_exec_store_fail(struct redis_conn *c, const struct broker_config *cfg,
                           const struct exec_store_key *k, const char *message)
{
        (void)c;
        (void)cfg;
        assert_ptr_equal(k, &KEY);
        F.fail_calls++;
        snprintf(F.fail_msg, sizeof(F.fail_msg), "%s", message);
        return F.finish_ret;
}

static int run(size_t max_output, struct exec_tracked *t)
{
        static struct provider pv; /* never called: provider_exec_stream is the fake */
        struct broker_config cfg;
        const char *argv[] = { "sh", "-c", "true", NULL };
        struct exec_spec spec = { .argv = argv, .timeout_ms = 5000, .max_output = max_output };

        memset(&cfg, 0, sizeof(cfg));
        return exec_tracked_run(NULL, &pv, &cfg, &KEY, "ref", &spec, t);
}

/* ---- tests ---- */

static void test_quick_command_no_tail_write(void **state)
{
        struct exec_tracked t;

        (void)state;
        step(100, STEP_OUT, "hello\n");
        step(200, STEP_ERR, "warn\n");
        step(499, STEP_OUT, "bye\n");
        F.end_ms = 499;
        F.exit_code = 3;
        assert_int_equal(run(1024, &t), 0);
        assert_int_equal(F.created_timeout, 5000);
        assert_int_equal(t.kind, EXEC_STORE_CREATED);
        assert_int_equal(t.r, 0);
        assert_int_equal(F.n_writes, 0);
        assert_int_equal(F.finish_calls, 1);
        assert_int_equal(F.fail_calls, 0);
        /* the answer and the record alike */
        assert_string_equal(t.res.out, "hello\nbye\n");
        assert_string_equal(t.res.err, "warn\n");
        assert_int_equal(t.res.exit_code, 3);
        assert_int_equal(t.duration_ms, 499);
        assert_memory_equal(F.fin_out, "hello\nbye\n", F.fin_out_len);
        assert_memory_equal(F.fin_err, "warn\n", F.fin_err_len);
        assert_int_equal(F.fin_exit, 3);
        assert_int_equal(F.fin_duration, 499);
        assert_int_equal(t.store_r, 0);
        assert_false(t.record_gone);
        exec_tracked_clear(&t);
}

/* Output every 200 ms for 3 s: writes at most every 500 ms, none before
 * 500 ms, each the combined output so far (a prefix of the whole). */
static void test_tail_writes_are_paced(void **state)
{
        static char lines[15][32];
        char all[512] = "";
        struct exec_tracked t;

        (void)state;
        for (int i = 0; i < 15; i++) {
                snprintf(lines[i], sizeof(lines[i]), "line %d\n", i);
                step(200 * (i + 1), i % 3 == 2 ? STEP_ERR : STEP_OUT, lines[i]);
                strcat(all, lines[i]);
        }
        F.end_ms = 3100;
        assert_int_equal(run(4096, &t), 0);
        assert_true(F.n_writes >= 4);
        for (int i = 0; i < F.n_writes; i++) {
                assert_true(F.writes[i].at_ms >= EXEC_TRACKED_WRITE_MS);
                if (i)
                        assert_true(F.writes[i].at_ms - F.writes[i - 1].at_ms >=
                                    EXEC_TRACKED_WRITE_MS);
                assert_int_equal((size_t)F.writes[i].total, F.writes[i].len);
                assert_memory_equal(F.writes[i].tail, all, F.writes[i].len);
                if (i)
                        assert_true(F.writes[i].total > F.writes[i - 1].total);
        }
        assert_int_equal(F.finish_calls, 1);
        exec_tracked_clear(&t);
}

/* News that comes and then silence: the tick writes it once, not again. */
static void test_tick_writes_news_once(void **state)
{
        struct exec_tracked t;

        (void)state;
        step(100, STEP_OUT, "started\n");
        step(1000, STEP_TICK, NULL);
        step(2000, STEP_TICK, NULL);
        step(3000, STEP_TICK, NULL);
        F.end_ms = 3500;
        assert_int_equal(run(4096, &t), 0);
        assert_int_equal(F.n_writes, 1);
        assert_int_equal(F.writes[0].at_ms, 1000);
        assert_int_equal(F.writes[0].len, 8);
        assert_memory_equal(F.writes[0].tail, "started\n", 8);
        exec_tracked_clear(&t);
}

/* Hostile amounts: the tail is the last EXEC_STORE_TAIL_MAX bytes of both
 * streams in arrival order; the answer keeps max_output per stream. */
static void test_tail_cap_and_output_cap(void **state)
{
        size_t max = 48 * 1024;
        struct exec_tracked t;
        char *all, *want;
        size_t n = 0;

        (void)state;
        /* stdout about 60 KB, stderr about 30 KB */
        for (int i = 0; i < 20; i++)
                step_fill(10 + i, i % 2 ? STEP_ERR : STEP_OUT, (i % 2 ? 3000 : 6000) + (size_t)i);
        step(600, STEP_TICK, NULL);
        F.end_ms = 700;
        assert_int_equal(run(max, &t), 0);
        all = malloc(200000);
        assert_non_null(all);
        for (int i = 0; i < 20; i++)
                for (size_t k = 0; k < (i % 2 ? 3000 : 6000) + (size_t)i; k++)
                        all[n++] = fill_byte(i, k);
        assert_int_equal(F.n_writes, 1);
        assert_int_equal(F.writes[0].total, n);
        assert_int_equal(F.writes[0].len, EXEC_STORE_TAIL_MAX);
        assert_memory_equal(F.writes[0].tail, all + n - EXEC_STORE_TAIL_MAX, EXEC_STORE_TAIL_MAX);
        /* stdout: steps 0, 2, ... cut at max */
        want = malloc(200000);
        assert_non_null(want);
        size_t w = 0;
        for (int i = 0; i < 20; i += 2)
                for (size_t k = 0; k < 6000 + (size_t)i; k++)
                        want[w++] = fill_byte(i, k);
        assert_true(w > max);
        assert_int_equal(t.res.out_len, max);
        assert_true(t.res.out_truncated);
        assert_memory_equal(t.res.out, want, max);
        assert_false(t.res.err_truncated);
        assert_int_equal(t.res.err_len, n - w);
        /* the record gets the answer's result (exec_store cuts it further) */
        assert_int_equal(F.fin_out_len, max);
        assert_true(F.fin_out_cut);
        free(all);
        free(want);
        exec_tracked_clear(&t);
}

static void test_provider_failure_recorded(void **state)
{
        struct exec_tracked t;

        (void)state;
        step(100, STEP_OUT, "partial\n");
        F.end_ms = 800;
        F.provider_r = -ETIMEDOUT;
        assert_int_equal(run(4096, &t), 0);
        assert_int_equal(t.kind, EXEC_STORE_CREATED);
        assert_int_equal(t.r, -ETIMEDOUT);
        assert_string_equal(t.err, "docker: exec: boom");
        assert_null(t.res.out);
        assert_int_equal(F.finish_calls, 0);
        assert_int_equal(F.fail_calls, 1);
        assert_string_equal(F.fail_msg, "exec: the sandbox provider timed out");
        exec_tracked_clear(&t);

        teardown(NULL);
        setup(NULL);
        F.provider_r = -EIO;
        assert_int_equal(run(4096, &t), 0);
        assert_string_equal(F.fail_msg, "exec: docker: exec: boom");
        exec_tracked_clear(&t);
}

static void test_nothing_runs_without_a_record(void **state)
{
        static const enum exec_store_kind kinds[] = { EXEC_STORE_IN_USE, EXEC_STORE_FULL,
                                                      EXEC_STORE_NOT_FOUND };
        struct exec_tracked t;

        (void)state;
        for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
                setup(NULL);
                F.create_kind = kinds[i];
                F.create_running = 16;
                assert_int_equal(run(4096, &t), 0);
                assert_int_equal(t.kind, kinds[i]);
                assert_int_equal(t.running, 16);
                assert_false(F.provider_called);
                assert_int_equal(F.finish_calls + F.fail_calls, 0);
                exec_tracked_clear(&t);
        }
        setup(NULL);
        F.create_r = -EIO;
        assert_int_equal(run(4096, &t), -EIO);
        assert_false(F.provider_called);
        exec_tracked_clear(&t);
}

/* Redis fails during the run: the command goes on, its end is still
 * written, and the first failure is reported. */
static void test_failed_writes_do_not_stop_the_command(void **state)
{
        struct exec_tracked t;

        (void)state;
        step(600, STEP_OUT, "a\n");
        step(1200, STEP_OUT, "b\n");
        F.end_ms = 1300;
        F.progress_r = -EIO;
        assert_int_equal(run(4096, &t), 0);
        assert_int_equal(F.n_writes, 2);
        assert_int_equal(t.r, 0);
        assert_string_equal(t.res.out, "a\nb\n");
        assert_int_equal(F.finish_calls, 1);
        assert_int_equal(t.store_r, -EIO);
        assert_string_equal(t.store_what, "progress");
        assert_false(t.record_gone);
        exec_tracked_clear(&t);

        /* the record expired meanwhile: said so, the answer unchanged */
        teardown(NULL);
        setup(NULL);
        step(10, STEP_OUT, "x\n");
        F.finish_ret = 0;
        assert_int_equal(run(4096, &t), 0);
        assert_true(t.record_gone);
        assert_int_equal(t.store_r, 0);
        assert_string_equal(t.res.out, "x\n");
        exec_tracked_clear(&t);

        teardown(NULL);
        setup(NULL);
        F.finish_ret = -EIO;
        assert_int_equal(run(4096, &t), 0);
        assert_int_equal(t.store_r, -EIO);
        assert_string_equal(t.store_what, "finish");
        exec_tracked_clear(&t);
}

/* A backend without streaming: the output comes with the end; nothing is
 * written before it, and the result is the provider's own. */
static void test_fallback_without_streaming(void **state)
{
        struct exec_tracked t;

        (void)state;
        F.can_stream = false;
        F.fb_out = "all of it\n";
        F.fb_err = "err\n";
        F.fb_out_cut = true;
        F.end_ms = 3000;
        F.exit_code = 1;
        assert_int_equal(run(4096, &t), 0);
        assert_int_equal(F.n_writes, 0);
        assert_string_equal(t.res.out, "all of it\n");
        assert_string_equal(t.res.err, "err\n");
        assert_true(t.res.out_truncated);
        assert_int_equal(t.res.exit_code, 1);
        assert_int_equal(F.finish_calls, 1);
        assert_memory_equal(F.fin_out, "all of it\n", F.fin_out_len);
        assert_true(F.fin_out_cut);
        assert_int_equal(F.fin_duration, 3000);
        exec_tracked_clear(&t);
}

static void test_no_key_runs_without_a_record(void **state)
{
        static struct provider pv;
        struct broker_config cfg;
        const char *argv[] = { "true", NULL };
        struct exec_spec spec = { .argv = argv, .timeout_ms = 5000, .max_output = 64 };
        struct exec_tracked t;

        (void)state;
        memset(&cfg, 0, sizeof(cfg));
        F.create_r = -EIO; /* would fail a recorded run: never asked */
        F.exit_code = 7;
        F.fb_out = "plain\n";
        assert_int_equal(exec_tracked_run(NULL, &pv, &cfg, NULL, "ref", &spec, &t), 0);
        assert_int_equal(t.kind, EXEC_STORE_CREATED);
        assert_true(F.provider_called);
        assert_int_equal(t.r, 0);
        assert_int_equal(t.res.exit_code, 7);
        assert_string_equal(t.res.out, "plain\n");
        assert_int_equal(t.duration_ms, 250);
        assert_int_equal(F.created_timeout + F.n_writes + F.finish_calls + F.fail_calls, 0);
        assert_int_equal(t.store_r, 0);
        assert_false(t.record_gone);
        exec_tracked_clear(&t);
        /* a provider failure is the outcome's, still unrecorded */
        F.provider_r = -ENOENT;
        assert_int_equal(exec_tracked_run(NULL, &pv, &cfg, NULL, "ref", &spec, &t), 0);
        assert_int_equal(t.r, -ENOENT);
        assert_string_equal(t.err, "no such container");
        assert_int_equal(F.fail_calls, 0);
        exec_tracked_clear(&t);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
        const struct CMUnitTest tests[] = {
                T(test_quick_command_no_tail_write),
                T(test_tail_writes_are_paced),
                T(test_tick_writes_news_once),
                T(test_tail_cap_and_output_cap),
                T(test_provider_failure_recorded),
                T(test_nothing_runs_without_a_record),
                T(test_failed_writes_do_not_stop_the_command),
                T(test_fallback_without_streaming),
                T(test_no_key_runs_without_a_record),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
