/* Unit tests for lib/providers/: the facade (provider.c), the metering
 * wrapper (provider_metered.c) and the factory (provider_factory.c), over
 * a fake backend that records what it was asked.
 *
 * - the metered wrapper has exactly its backend's ops: no exec_stream on a
 *   backend without one (the Daytona bug of issue 11), the backend's when it
 *   has one
 * - provider_exec_stream streams through a backend that can, and hands a
 *   buffered result to the same callbacks (stdout first) through one that
 *   cannot; a callback's error stops it
 * - provider_api_error: the one errno -> API error mapping (-EBUSY is "not
 *   running", 409)
 * - the factory: backends by name, each backend's deadline, "none" */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/config.h"
#include "providers/provider.h"
#include "providers/provider_factory.h"
#include "providers/provider_metered.h"

struct fake {
        int execs, streams, starts, stops, pauses, resumes;
        int exec_rc;
        const char *out, *err;
        int freed;
};

static struct fake *fake_of(struct provider *p)
{
        return p->impl;
}

static int f_exec(struct provider *p, const char *ref, const struct exec_spec *spec,
                  struct exec_result *ret, char *ret_err)
{
        struct fake *f = fake_of(p);

        (void)ref;
        (void)spec;
        f->execs++;
        if (f->exec_rc < 0) {
                provider_errf(ret_err, "backend says no");
                return f->exec_rc;
        }
        memset(ret, 0, sizeof(*ret));
        ret->exit_code = 7;
        ret->out = strdup(f->out ? f->out : "");
        ret->err = strdup(f->err ? f->err : "");
        ret->out_len = strlen(ret->out);
        ret->err_len = strlen(ret->err);
        return 0;
}

static int f_exec_stream(struct provider *p, const char *ref, const struct exec_spec *spec,
                         const struct exec_stream_cb *cb, struct exec_result *ret, char *ret_err)
{
        struct fake *f = fake_of(p);
        int r;

        (void)ref;
        (void)spec;
        (void)ret_err;
        f->streams++;
        r = cb->on_output(cb->ud, 2, "e", 1);
        if (r == 0)
                r = cb->on_output(cb->ud, 1, "o", 1);
        ret->exit_code = 0;
        return r;
}

static int f_start(struct provider *p, const char *ref, char *ret_err)
{
        (void)ref;
        (void)ret_err;
        fake_of(p)->starts++;
        return 0;
}

static int f_stop(struct provider *p, const char *ref, char *ret_err)
{
        (void)ref;
        (void)ret_err;
        fake_of(p)->stops++;
        return -EBUSY;
}

static int f_pause(struct provider *p, const char *ref, char *ret_err)
{
        (void)ref;
        (void)ret_err;
        fake_of(p)->pauses++;
        return 0;
}

static int f_resume(struct provider *p, const char *ref, char *ret_err)
{
        (void)ref;
        (void)ret_err;
        fake_of(p)->resumes++;
        return 0;
}

static void f_free(struct provider *p)
{
        fake_of(p)->freed++;
        free(p);
}

static const struct provider_ops buffered_ops = {
        .name = "fake-buffered", .exec = f_exec, .start = f_start, .stop = f_stop,
        .pause = f_pause, .resume = f_resume, .free = f_free,
};

static const struct provider_ops streaming_ops = {
        .name = "fake-streaming", .exec = f_exec, .exec_stream = f_exec_stream, .start = f_start,
        .stop = f_stop, .pause = f_pause, .resume = f_resume, .free = f_free,
};

static int f_snapshot_create(struct provider *p, const char *ref, const struct snapshot_spec *spec,
                             int64_t *ret_size, char *ret_err)
{
        (void)ref;
        (void)spec;
        (void)ret_err;
        fake_of(p)->starts++;
        *ret_size = 42;
        return 0;
}

static int f_snapshot_delete(struct provider *p, const char *image, char *ret_err)
{
        (void)image;
        (void)ret_err;
        fake_of(p)->stops++;
        return -ENOENT;
}

static const struct provider_ops snapshot_ops = {
        .name = "fake-snapshots", .exec = f_exec, .snapshot_create = f_snapshot_create,
        .snapshot_delete = f_snapshot_delete, .free = f_free,
};

/* A backend that keeps its sandboxes' output: "line\n" for ref "ref",
 * -ENOENT for any other, and -EIO with a message for "broken". */
static int f_logs(struct provider *p, const char *ref, const struct logs_spec *spec,
                  struct sandbox_logs *ret, char *ret_err)
{
        (void)p;
        assert_true(spec->tail > 0 && spec->max_bytes > 0 && spec->timeout_ms > 0);
        if (strcmp(ref, "broken") == 0) {
                provider_errf(ret_err, "backend says no");
                return -EIO;
        }
        if (strcmp(ref, "ref") != 0)
                return -ENOENT;
        ret->data = strdup("line\n");
        assert_non_null(ret->data);
        ret->len = 5;
        ret->truncated = spec->tail < 2;
        return 0;
}

static const struct provider_ops logs_ops = {
        .name = "fake-logs",
        .exec = f_exec,
        .logs = f_logs,
        .free = f_free,
};

static struct provider *fake_new(const struct provider_ops *ops, struct fake *f)
{
        struct provider *p = calloc(1, sizeof(*p));

        assert_non_null(p);
        p->ops = ops;
        p->impl = f;
        return p;
}

/* What the callbacks saw: "<stream><bytes>" pieces, in order. */
struct seen {
        char log[64];
        int fail_at; /* return -EPIPE on this call (1-based); 0: never */
        int calls;
};

static int on_output(void *ud, int stream, const char *data, size_t len)
{
        struct seen *s = ud;
        size_t n = strlen(s->log);

        if (++s->calls == s->fail_at)
                return -EPIPE;
        snprintf(s->log + n, sizeof(s->log) - n, "%d%.*s;", stream, (int)len, data);
        return 0;
}

static void test_metered_mirrors_a_backend_without_streaming(void **state)
{
        struct fake f = { .out = "out\n", .err = "err\n" };
        struct provider *p = fake_new(&buffered_ops, &f);
        char err[PROVIDER_ERR_MAX] = "";
        struct seen s = { 0 };
        struct exec_stream_cb cb = { .on_output = on_output, .ud = &s };
        const char *argv[] = { "true", NULL };
        struct exec_spec spec = { .argv = argv, .timeout_ms = 1000, .max_output = 100 };
        struct exec_result res = { 0 };

        (void)state;
        assert_int_equal(provider_metered(&p), 0);
        /* the wrapper offers no streaming the backend does not have */
        assert_null(p->ops->exec_stream);
        assert_non_null(p->ops->exec);
        assert_null(p->ops->create); /* the fake has none either */
        assert_string_equal(p->ops->name, "fake-buffered");
        assert_false(provider_can_stream(p));
        /* the facade's fallback: one buffered exec, output to the callbacks */
        assert_int_equal(provider_exec_stream(p, "ref", &spec, &cb, &res, err), 0);
        assert_int_equal(f.execs, 1);
        assert_int_equal(f.streams, 0);
        assert_int_equal(res.exit_code, 7);
        assert_string_equal(s.log, "1out\n;2err\n;");
        exec_result_free(&res);
        /* a callback's error is returned */
        memset(&s, 0, sizeof(s));
        s.fail_at = 1;
        assert_int_equal(provider_exec_stream(p, "ref", &spec, &cb, &res, err), -EPIPE);
        exec_result_free(&res);
        /* a backend error is returned with its message, and no callback runs */
        memset(&s, 0, sizeof(s));
        f.exec_rc = -ETIMEDOUT;
        assert_int_equal(provider_exec_stream(p, "ref", &spec, &cb, &res, err), -ETIMEDOUT);
        assert_string_equal(err, "backend says no");
        assert_int_equal(s.calls, 0);
        exec_result_free(&res);
        provider_free(p);
        assert_int_equal(f.freed, 1);
}

static void test_metered_mirrors_a_streaming_backend(void **state)
{
        struct fake f = { 0 };
        struct provider *p = fake_new(&streaming_ops, &f);
        char err[PROVIDER_ERR_MAX] = "";
        struct seen s = { 0 };
        struct exec_stream_cb cb = { .on_output = on_output, .ud = &s };
        const char *argv[] = { "true", NULL };
        struct exec_spec spec = { .argv = argv, .timeout_ms = 1000 };
        struct exec_result res = { 0 };

        (void)state;
        assert_int_equal(provider_metered(&p), 0);
        assert_non_null(p->ops->exec_stream);
        assert_true(provider_can_stream(p));
        assert_int_equal(provider_exec_stream(p, "ref", &spec, &cb, &res, err), 0);
        assert_int_equal(f.streams, 1);
        assert_int_equal(f.execs, 0);
        assert_string_equal(s.log, "2e;1o;"); /* as the backend sent it */
        exec_result_free(&res);
        provider_free(p);
        assert_int_equal(f.freed, 1);
}

static void test_lifecycle_facade(void **state)
{
        struct fake f = { 0 };
        struct provider *p = fake_new(&streaming_ops, &f);
        char err[PROVIDER_ERR_MAX] = "";

        (void)state;
        assert_int_equal(provider_metered(&p), 0);
        assert_int_equal(provider_start(p, "ref", err), 0);
        assert_int_equal(provider_stop(p, "ref", err), -EBUSY);
        assert_int_equal(provider_pause(p, "ref", err), 0);
        assert_int_equal(provider_resume(p, "ref", err), 0);
        assert_int_equal(f.starts + f.stops + f.pauses + f.resumes, 4);
        provider_free(p);
}

static void test_api_error_mapping(void **state)
{
        char msg[128];

        (void)state;
        assert_int_equal(provider_api_error(-EBUSY, "exec", "Conflict", msg, sizeof(msg)),
                         API_SANDBOX_NOT_RUNNING);
        assert_string_equal(msg, "exec: the sandbox is not running");
        assert_int_equal(api_error_status(API_SANDBOX_NOT_RUNNING), 409);
        assert_int_equal(provider_api_error(-ENOENT, "start", "", msg, sizeof(msg)),
                         API_SANDBOX_NOT_RUNNING);
        assert_string_equal(msg, "start: the sandbox's container is gone");
        assert_int_equal(provider_api_error(-ECONNREFUSED, "stop", NULL, msg, sizeof(msg)),
                         API_UNAVAILABLE);
        assert_string_equal(msg, "stop: the sandbox provider is unreachable");
        assert_int_equal(provider_api_error(-ETIMEDOUT, "exec", "slow", msg, sizeof(msg)),
                         API_SANDBOX_FAILED);
        assert_string_equal(msg, "exec: the sandbox provider timed out");
        /* a backend that cannot (Kubernetes: stop, exec without its agent): 501 with its reason */
        assert_int_equal(provider_api_error(-EOPNOTSUPP, "stop", "kubernetes: a pod cannot be stopped",
                                            msg, sizeof(msg)),
                         API_NOT_IMPLEMENTED);
        assert_string_equal(msg, "stop: kubernetes: a pod cannot be stopped");
        assert_int_equal(api_error_status(API_NOT_IMPLEMENTED), 501);
        assert_int_equal(provider_api_error(-EOPNOTSUPP, "exec", NULL, msg, sizeof(msg)), API_NOT_IMPLEMENTED);
        assert_string_equal(msg, "exec: not supported by this sandbox provider");
        assert_int_equal(provider_api_error(-EREMOTEIO, "exec", "daytona: HTTP 500", msg, sizeof(msg)),
                         API_SANDBOX_FAILED);
        assert_string_equal(msg, "exec: daytona: HTTP 500");
        /* no message from the backend: the errno's text */
        assert_int_equal(provider_api_error(-EPROTO, "exec", "", msg, sizeof(msg)), API_SANDBOX_FAILED);
        assert_string_equal(msg, "exec: Protocol error");
        /* always terminated, even when cut */
        assert_int_equal(provider_api_error(-EBUSY, "download", NULL, msg, 8), API_SANDBOX_NOT_RUNNING);
        assert_string_equal(msg, "downloa");
}

static void test_factory(void **state)
{
        struct broker_config cfg;
        struct provider *p = (struct provider *)&cfg; /* must be reset */
        char err[PROVIDER_ERR_MAX] = "";

        (void)state;
        memset(&cfg, 0, sizeof(cfg));
        assert_non_null(provider_backend_find("docker"));
        assert_non_null(provider_backend_find("daytona"));
        assert_string_equal(provider_backend_find("daytona")->name, "daytona");
        assert_string_equal(provider_backend_find("kubernetes")->name, "kubernetes");
        assert_null(provider_backend_find("nomad"));
        assert_null(provider_backend_find("none"));

        cfg.docker_timeout_ms = 30000;
        cfg.daytona_timeout_ms = 3000;
        cfg.daytona_poll_max_ms = 20000;
        snprintf(cfg.provider, sizeof(cfg.provider), "docker");
        assert_int_equal(provider_deadline_ms(&cfg), 30000);
        /* a sandbox's start may take longer than any other Docker call */
        cfg.sandbox_start_timeout_ms = 300000;
        assert_int_equal(provider_deadline_ms(&cfg), 300000);
        cfg.sandbox_start_timeout_ms = 0;
        /* Daytona's own timeouts, not DOCKER_TIMEOUT_MS */
        snprintf(cfg.provider, sizeof(cfg.provider), "daytona");
        assert_int_equal(provider_deadline_ms(&cfg), 23000);
        /* Kubernetes: two calls and the wait for Running */
        cfg.kubernetes_timeout_ms = 10000;
        cfg.kubernetes_pod_wait_ms = 60000;
        snprintf(cfg.provider, sizeof(cfg.provider), "kubernetes");
        assert_int_equal(provider_deadline_ms(&cfg), 80000);

        snprintf(cfg.provider, sizeof(cfg.provider), "none");
        assert_int_equal(provider_new_from_config(&cfg, &p, err), 0);
        assert_null(p);
        p = (struct provider *)&cfg;
        snprintf(cfg.provider, sizeof(cfg.provider), "nomad");
        assert_int_equal(provider_new_from_config(&cfg, &p, err), -EINVAL);
        assert_null(p);
        assert_non_null(strstr(err, "nomad"));
        /* Kubernetes refuses a config without its URL, CA and credentials */
        p = (struct provider *)&cfg;
        snprintf(cfg.provider, sizeof(cfg.provider), "kubernetes");
        assert_int_equal(provider_new_from_config(&cfg, &p, err), -EINVAL);
        assert_null(p);
        assert_non_null(strstr(err, "kubernetes"));
        /* a backend's own refusal (no timeout) reaches the caller, named */
        snprintf(cfg.provider, sizeof(cfg.provider), "docker");
        cfg.docker_timeout_ms = 0;
        assert_int_equal(provider_new_from_config(&cfg, &p, err), -EINVAL);
        assert_null(p);
        assert_non_null(strstr(err, "docker provider"));
        /* and a working one comes metered: the backend's name and ops */
        cfg.docker_timeout_ms = 1000;
        snprintf(cfg.docker_socket, sizeof(cfg.docker_socket), "/nonexistent/docker.sock");
        assert_int_equal(provider_new_from_config(&cfg, &p, err), 0);
        assert_non_null(p);
        assert_string_equal(p->ops->name, "docker");
        assert_true(provider_can_stream(p));
        provider_free(p);
}

/* Snapshots are optional: a backend without them (Daytona) is refused by
 * the facade with the reason; the metered wrapper mirrors what it has. */
static void test_snapshot_facade(void **state)
{
        struct fake f = { 0 };
        struct provider *p = fake_new(&buffered_ops, &f);
        struct snapshot_spec spec = { .image = "sandbox-broker/snapshot:x" };
        char err[PROVIDER_ERR_MAX] = "";
        int64_t size = 0;

        (void)state;
        assert_false(provider_can_snapshot(p));
        assert_int_equal(provider_snapshot_create(p, "ref", &spec, &size, err), -EOPNOTSUPP);
        assert_non_null(strstr(err, "not supported by the fake-buffered provider"));
        assert_int_equal(provider_snapshot_delete(p, "img", err), -EOPNOTSUPP);
        assert_int_equal(provider_metered(&p), 0);
        assert_null(p->ops->snapshot_create);
        assert_false(provider_can_snapshot(p));
        provider_free(p);

        p = fake_new(&snapshot_ops, &f);
        assert_int_equal(provider_metered(&p), 0);
        assert_true(provider_can_snapshot(p));
        assert_int_equal(provider_snapshot_create(p, "ref", &spec, &size, err), 0);
        assert_true(size == 42);
        assert_int_equal(provider_snapshot_delete(p, "img", err), -ENOENT);
        assert_int_equal(f.starts, 1);
        assert_int_equal(f.stops, 1);
        provider_free(p);
}

/* provider_logs: 501's reason where the backend keeps none, the spec's
 * bounds checked before any backend call, the metered mirror. */
static void test_logs_facade(void **state)
{
        struct fake f = { 0 };
        struct provider *p = fake_new(&buffered_ops, &f);
        struct logs_spec spec = { .tail = 10, .max_bytes = 100, .timeout_ms = 1000 };
        struct sandbox_logs l = { .data = NULL };
        char err[PROVIDER_ERR_MAX] = "";

        (void)state;
        assert_int_equal(provider_logs(p, "ref", &spec, &l, err), -EOPNOTSUPP);
        assert_non_null(strstr(err, "fake-buffered"));
        assert_null(l.data);
        assert_int_equal(provider_metered(&p), 0);
        assert_null(p->ops->logs);
        assert_int_equal(provider_logs(p, "ref", &spec, &l, err), -EOPNOTSUPP);
        provider_free(p);

        p = fake_new(&logs_ops, &f);
        assert_int_equal(provider_metered(&p), 0);
        assert_int_equal(provider_logs(p, "ref", &spec, &l, err), 0);
        assert_string_equal(l.data, "line\n");
        assert_false(l.truncated);
        provider_logs_release(&l);
        assert_null(l.data);
        provider_logs_release(NULL);
        assert_int_equal(provider_logs(p, "gone", &spec, &l, err), -ENOENT);
        assert_int_equal(provider_logs(p, "broken", &spec, &l, err), -EIO);
        assert_string_equal(err, "backend says no");
        provider_logs_release(&l);
        /* no tail, no byte cap, no timeout: refused before the backend */
        for (int i = 0; i < 3; i++) {
                struct logs_spec bad = spec;
                if (i == 0)
                        bad.tail = 0;
                else if (i == 1)
                        bad.max_bytes = 0;
                else
                        bad.timeout_ms = -1;
                assert_int_equal(provider_logs(p, "ref", &bad, &l, err), -EINVAL);
                assert_null(l.data);
        }
        provider_free(p);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_metered_mirrors_a_backend_without_streaming),
                cmocka_unit_test(test_metered_mirrors_a_streaming_backend),
                cmocka_unit_test(test_lifecycle_facade),
                cmocka_unit_test(test_snapshot_facade),
                cmocka_unit_test(test_logs_facade),
                cmocka_unit_test(test_api_error_mapping),
                cmocka_unit_test(test_factory),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
