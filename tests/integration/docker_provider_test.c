/* The Docker provider (lib/providers/docker/) against the real daemon on
 * /var/run/docker.sock (DOCKER_SOCK to change it): lifecycle, exec (exit
 * codes, stderr, capped output, timeouts, stdin, users), archives, pause,
 * stop, list by label, remove, and the errno mapping of Docker errors.
 *
 * Every case makes its own container (named sb-dptest-<pid>-<n>) and its
 * teardown removes it; a case whose assertion fails still cleans up. Without
 * a daemon every case is skipped with a message.
 *
 *   DOCKER_TEST_IMAGE  image with sh, coreutils (default sandbox-broker/base:latest)
 *   DOCKER_TEST_MULTIUSER_IMAGE  image with users sbu1, sbu2 (default
 *                      sandbox-broker/multiuser:latest; cases skip if missing) */
#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "providers/docker/docker.h"
#include "providers/docker/docker_api.h" /* DOCKER_SOCKET_DEFAULT */
#include "codec/tarball.h"
#include "core/timeutil.h"

#define TIMEOUT_MS 30000

static const char *sock_path;
static bool have_daemon;
static int serial;

struct box {
        struct provider *p;
        char id[64];
        char ref[PROVIDER_REF_MAX];
        char err[PROVIDER_ERR_MAX];
};

static const char *env_or(const char *name, const char *def)
{
        const char *v = getenv(name);

        return v && v[0] ? v : def;
}

/* Create (not start) a sandbox from image into b; returns the provider's result. */
static int box_create(struct box *b, const char *image)
{
        struct sandbox_spec spec = {
                .sandbox_id = b->id,
                .key_prefix = "dptest:",
                .image = image,
                .env = (const char *const[]){ "SB_TEST=1", NULL },
                .workdir = "/tmp",
                .network = "none",
                .limits = { .nano_cpus = 500000000, .memory_bytes = 256LL << 20, .pids = 256 },
        };

        return b->p->ops->create(b->p, &spec, b->ref, b->err);
}

static int setup_box(void **state)
{
        struct box *b = calloc(1, sizeof(*b));

        if (!b)
                return -1;
        snprintf(b->id, sizeof(b->id), "dptest-%d-%d", (int)getpid(), ++serial);
        if (docker_provider_new(sock_path, TIMEOUT_MS, &b->p) < 0) {
                free(b);
                return -1;
        }
        *state = b;
        return 0;
}

static int teardown_box(void **state)
{
        struct box *b = *state;
        char err[PROVIDER_ERR_MAX];

        if (!b)
                return 0;
        if (b->ref[0])
                b->p->ops->remove(b->p, b->ref, err);
        provider_free(b->p);
        free(b);
        return 0;
}

#define NEED_DAEMON()                                                                        \
        do {                                                                                 \
                if (!have_daemon) {                                                          \
                        print_message("no Docker daemon on %s: skipped\n", sock_path);       \
                        skip();                                                              \
                }                                                                            \
        } while (0)

/* Create and start the default image; fail the case with Docker's message. */
static void box_up(struct box *b)
{
        int r = box_create(b, env_or("DOCKER_TEST_IMAGE", "sandbox-broker/base:latest"));

        if (r < 0)
                fail_msg("create: %d %s", r, b->err);
        r = b->p->ops->start(b->p, b->ref, b->err);
        if (r < 0)
                fail_msg("start: %d %s", r, b->err);
}

static void box_exec(struct box *b, const struct exec_spec *spec, struct exec_result *res)
{
        int r = b->p->ops->exec(b->p, b->ref, spec, res, b->err);

        if (r < 0)
                fail_msg("exec %s: %d %s", spec->argv[0], r, b->err);
}

static enum sandbox_run_state box_state(struct box *b)
{
        struct sandbox_info info;
        int r = b->p->ops->inspect(b->p, b->ref, &info, b->err);

        if (r < 0)
                fail_msg("inspect: %d %s", r, b->err);
        return info.state;
}

static void test_ping(void **state)
{
        struct box *b = *state;

        NEED_DAEMON();
        assert_int_equal(b->p->ops->ping(b->p, b->err), 0);
}

static void test_lifecycle_and_exec(void **state)
{
        struct box *b = *state;
        struct exec_result res;
        struct exec_spec spec = {
                .argv = (const char *const[]){ "sh", "-c",
                                               "echo out:$SB_TEST:$X:$(pwd); echo err >&2; exit 3",
                                               NULL },
                .env = (const char *const[]){ "X=y", NULL },
                .cwd = "/etc",
                .timeout_ms = 10000,
                .max_output = 4096,
        };

        NEED_DAEMON();
        assert_int_equal(box_create(b, env_or("DOCKER_TEST_IMAGE", "sandbox-broker/base:latest")), 0);
        assert_int_equal(box_state(b), SANDBOX_RUN_CREATED);
        assert_int_equal(b->p->ops->start(b->p, b->ref, b->err), 0);
        assert_int_equal(box_state(b), SANDBOX_RUN_RUNNING);
        /* Starting a running container is not an error (304). */
        assert_int_equal(b->p->ops->start(b->p, b->ref, b->err), 0);

        box_exec(b, &spec, &res);
        assert_int_equal(res.exit_code, 3);
        assert_false(res.timed_out);
        assert_string_equal(res.out, "out:1:y:/etc\n");
        assert_string_equal(res.err, "err\n");
        assert_false(res.out_truncated);
        exec_result_free(&res);

        spec.argv = (const char *const[]){ "true", NULL };
        spec.env = NULL;
        spec.cwd = NULL;
        box_exec(b, &spec, &res);
        assert_int_equal(res.exit_code, 0);
        assert_int_equal(res.out_len, 0);
        assert_string_equal(res.out, "");
        exec_result_free(&res);

        /* A missing binary: Docker's exec fails inside (126/127). */
        spec.argv = (const char *const[]){ "/no/such/binary", NULL };
        box_exec(b, &spec, &res);
        assert_true(res.exit_code == 126 || res.exit_code == 127);
        exec_result_free(&res);
}

static void test_exec_large_output_capped(void **state)
{
        struct box *b = *state;
        struct exec_result res;
        struct exec_spec spec = {
                .argv = (const char *const[]){ "sh", "-c",
                                               "head -c 5000000 /dev/zero | tr '\\0' a; "
                                               "head -c 300000 /dev/zero | tr '\\0' b >&2; echo done >&2",
                                               NULL },
                .timeout_ms = 20000,
                .max_output = 100000,
        };

        NEED_DAEMON();
        box_up(b);
        box_exec(b, &spec, &res);
        /* The whole stream was drained: the command ended normally. */
        assert_int_equal(res.exit_code, 0);
        assert_false(res.timed_out);
        assert_int_equal(res.out_len, 100000);
        assert_true(res.out_truncated);
        assert_int_equal(strspn(res.out, "a"), 100000);
        assert_int_equal(res.err_len, 100000);
        assert_true(res.err_truncated);
        assert_int_equal(strspn(res.err, "b"), 100000);
        exec_result_free(&res);
}

static void test_exec_timeout_kills(void **state)
{
        struct box *b = *state;
        struct exec_result res;
        struct exec_spec spec = {
                .argv = (const char *const[]){ "sh", "-c", "echo started; exec sleep 30", NULL },
                .timeout_ms = 1500,
                .max_output = 4096,
        };
        int64_t t0;

        NEED_DAEMON();
        box_up(b);
        t0 = timeutil_mono_ms();
        box_exec(b, &spec, &res);
        assert_true(res.timed_out);
        assert_int_equal(res.exit_code, 137);
        assert_string_equal(res.out, "started\n");
        assert_in_range(timeutil_mono_ms() - t0, 900, 4000); /* busybox: whole seconds */
        exec_result_free(&res);

        /* The command is gone from the sandbox, not just abandoned. (exec:
         * busybox's timeout kills only its child; coreutils' the group.) */
        spec.argv = (const char *const[]){ "sh", "-c", "ps -eo args | grep -c '^sleep 30' || true",
                                           NULL };
        spec.timeout_ms = 5000;
        box_exec(b, &spec, &res);
        assert_string_equal(res.out, "0\n");
        exec_result_free(&res);

        /* A quick command under the same wrapper is not flagged. */
        spec.argv = (const char *const[]){ "sleep", "0.1", NULL };
        box_exec(b, &spec, &res);
        assert_false(res.timed_out);
        assert_int_equal(res.exit_code, 0);
        exec_result_free(&res);
}

/* A background process that escapes the wrapper (own session) and keeps
 * stdout open: dockerd closes an exec's streams 2 s after its process exits
 * (daemon/monitor.go), so the call ends then, with the real exit code, and
 * the provider's connection still works afterwards. */
static void test_exec_stream_held_open(void **state)
{
        struct box *b = *state;
        struct exec_result res;
        struct exec_spec spec = {
                .argv = (const char *const[]){ "sh", "-c", "setsid sleep 30 & echo bg", NULL },
                .timeout_ms = 10000,
                .max_output = 4096,
        };
        int64_t t0, dt;

        NEED_DAEMON();
        box_up(b);
        t0 = timeutil_mono_ms();
        box_exec(b, &spec, &res);
        dt = timeutil_mono_ms() - t0;
        print_message("exec with an escaped background child took %lld ms\n", (long long)dt);
        assert_false(res.timed_out);
        assert_int_equal(res.exit_code, 0);
        assert_string_equal(res.out, "bg\n");
        assert_in_range(dt, 0, 5000);
        exec_result_free(&res);
        spec.argv = (const char *const[]){ "echo", "again", NULL };
        box_exec(b, &spec, &res);
        assert_string_equal(res.out, "again\n");
        exec_result_free(&res);
}

struct pauser {
        const char *ref;
        int r;
};

/* Another thread, so its own provider (one connection per thread). */
static void *pause_later(void *ud)
{
        struct pauser *pz = ud;
        struct provider *p = NULL;
        char err[PROVIDER_ERR_MAX];

        usleep(500 * 1000);
        pz->r = docker_provider_new(sock_path, TIMEOUT_MS, &p);
        if (pz->r == 0)
                pz->r = p->ops->pause(p, pz->ref, err);
        provider_free(p);
        return NULL;
}

/* A frozen sandbox freezes the `timeout` wrapper too: the transfer bound
 * (timeout_ms + min(provider timeout, 5 s)) still ends the call. */
static void test_exec_transfer_bound(void **state)
{
        struct box *b = *state;
        struct provider *fast = NULL;
        struct exec_result res;
        struct exec_spec spec = {
                .argv = (const char *const[]){ "sh", "-c", "echo before; sleep 5", NULL },
                .timeout_ms = 1000,
                .max_output = 4096,
        };
        struct pauser pz = { .ref = b->ref };
        pthread_t th;
        int64_t t0, dt;

        NEED_DAEMON();
        box_up(b);
        pz.ref = b->ref;
        assert_int_equal(docker_provider_new(sock_path, 1500, &fast), 0);
        assert_int_equal(pthread_create(&th, NULL, pause_later, &pz), 0);
        t0 = timeutil_mono_ms();
        assert_int_equal(fast->ops->exec(fast, b->ref, &spec, &res, b->err), 0);
        dt = timeutil_mono_ms() - t0;
        pthread_join(th, NULL);
        assert_int_equal(pz.r, 0);
        assert_true(res.timed_out);
        assert_int_equal(res.exit_code, -1);
        assert_string_equal(res.out, "before\n");
        assert_in_range(dt, 2400, 4000);
        exec_result_free(&res);
        assert_int_equal(b->p->ops->resume(b->p, b->ref, b->err), 0);
        provider_free(fast);
}

static void test_exec_stdin(void **state)
{
        static const char data[] = "line1\n\0binary\xff\nend";
        struct box *b = *state;
        struct exec_result res;
        struct exec_spec spec = {
                .argv = (const char *const[]){ "cat", NULL },
                .timeout_ms = 10000,
                .max_output = 4096,
                .stdin_data = data,
                .stdin_len = sizeof(data) - 1,
        };

        NEED_DAEMON();
        box_up(b);
        box_exec(b, &spec, &res);
        assert_int_equal(res.exit_code, 0);
        assert_int_equal(res.out_len, sizeof(data) - 1);
        assert_memory_equal(res.out, data, sizeof(data) - 1);
        exec_result_free(&res);

        /* Empty stdin is EOF at once; the staged file is gone afterwards. */
        spec.argv = (const char *const[]){ "sh", "-c", "wc -c; ls -a /tmp | grep -c sb-stdin", NULL };
        spec.stdin_data = "";
        spec.stdin_len = 0;
        box_exec(b, &spec, &res);
        assert_string_equal(res.out, "0\n0\n");
        exec_result_free(&res);

        /* A numeric user gets the file through the tar header, no chown. */
        spec.argv = (const char *const[]){ "sh", "-c", "id -u; cat", NULL };
        spec.user = "4242:4242";
        spec.stdin_data = "x";
        spec.stdin_len = 1;
        box_exec(b, &spec, &res);
        assert_int_equal(res.exit_code, 0);
        assert_string_equal(res.out, "4242\nx");
        exec_result_free(&res);
}

/* Users of the multi-user image: exec as a seat user, stdin by name, and a
 * seat's 0700 home is closed to the other seats. */
static void test_multiuser(void **state)
{
        struct box *b = *state;
        struct exec_result res;
        struct exec_spec spec = {
                .argv = (const char *const[]){ "sh", "-c",
                                               "id -un; cat > $HOME/secret; chmod 600 $HOME/secret; echo $HOME",
                                               NULL },
                .user = "sbu1",
                .timeout_ms = 10000,
                .max_output = 4096,
                .stdin_data = "s3cret",
                .stdin_len = 6,
        };
        int r;

        NEED_DAEMON();
        r = box_create(b, env_or("DOCKER_TEST_MULTIUSER_IMAGE", "sandbox-broker/multiuser:latest"));
        if (r == -ENOENT) {
                print_message("multi-user image missing (%s): skipped\n", b->err);
                skip();
        }
        assert_int_equal(r, 0);
        assert_int_equal(b->p->ops->start(b->p, b->ref, b->err), 0);
        box_exec(b, &spec, &res);
        assert_int_equal(res.exit_code, 0);
        assert_string_equal(res.out, "sbu1\n/home/sbu1\n");
        exec_result_free(&res);

        spec.argv = (const char *const[]){ "cat", "/home/sbu1/secret", NULL };
        spec.user = "sbu2";
        spec.stdin_data = NULL;
        box_exec(b, &spec, &res);
        assert_int_not_equal(res.exit_code, 0);
        assert_non_null(strstr(res.err, "Permission denied"));
        exec_result_free(&res);

        /* Root in the sandbox keeps DAC_OVERRIDE and CHOWN (see docker_cap_add). */
        spec.argv = (const char *const[]){ "sh", "-c",
                                           "cat /home/sbu1/secret && chown sbu2 /home/sbu1/secret", NULL };
        spec.user = NULL;
        box_exec(b, &spec, &res);
        assert_int_equal(res.exit_code, 0);
        assert_string_equal(res.out, "s3cret");
        exec_result_free(&res);

        /* A user that does not exist: Docker refuses the exec. */
        spec.argv = (const char *const[]){ "true", NULL };
        spec.user = "nosuchuser";
        r = b->p->ops->exec(b->p, b->ref, &spec, &res, b->err);
        assert_true(r < 0 || res.exit_code != 0);
        exec_result_free(&res);
}

static void test_archive_roundtrip(void **state)
{
        struct box *b = *state;
        size_t n = 200000, got_len = 0, tar_len = 0;
        unsigned char *data = malloc(n);
        void *tar = NULL, *got = NULL;
        struct exec_result res;
        struct exec_spec spec = {
                .argv = (const char *const[]){ "stat", "-c", "%s %a %u", "/tmp/blob.bin", NULL },
                .timeout_ms = 5000,
                .max_output = 4096,
        };

        NEED_DAEMON();
        assert_non_null(data);
        for (size_t i = 0; i < n; i++)
                data[i] = (unsigned char)(i * 13 + (i >> 8));
        data[0] = 0;
        box_up(b);
        assert_int_equal(tarball_pack_file("blob.bin", data, n, 0640, 0, 0, &tar, &tar_len), 0);
        assert_int_equal(b->p->ops->put_archive(b->p, b->ref, "/tmp", tar, tar_len, b->err), 0);
        free(tar);
        tar = NULL;

        box_exec(b, &spec, &res);
        assert_string_equal(res.out, "200000 640 0\n");
        exec_result_free(&res);

        assert_int_equal(b->p->ops->get_archive(b->p, b->ref, "/tmp/blob.bin", 1 << 20, &tar,
                                                &tar_len, b->err),
                         0);
        assert_int_equal(tarball_unpack_file(tar, tar_len, n, &got, &got_len), 0);
        assert_int_equal(got_len, n);
        assert_memory_equal(got, data, n);
        free(got);
        free(tar);

        /* Over the caller's cap. */
        assert_int_equal(b->p->ops->get_archive(b->p, b->ref, "/tmp/blob.bin", 1000, &tar,
                                                &tar_len, b->err),
                         -EFBIG);
        assert_null(tar);
        /* Missing file, missing directory. */
        assert_int_equal(b->p->ops->get_archive(b->p, b->ref, "/tmp/nope", 1 << 20, &tar,
                                                &tar_len, b->err),
                         -ENOENT);
        assert_int_equal(tarball_pack_file("x", "x", 1, 0644, 0, 0, &tar, &tar_len), 0);
        assert_int_equal(b->p->ops->put_archive(b->p, b->ref, "/no/such/dir", tar, tar_len, b->err),
                         -ENOENT);
        free(tar);
        /* A directory. */
        assert_int_equal(b->p->ops->get_archive(b->p, b->ref, "/etc", 8 << 20, &tar, &tar_len,
                                                b->err),
                         0);
        assert_int_equal(tarball_unpack_file(tar, tar_len, 1 << 20, &got, &got_len), -EISDIR);
        free(tar);
        /* A path with spaces and specials survives the URL encoding. */
        assert_int_equal(tarball_pack_file("a b&c=d?.txt", "hi", 2, 0644, 0, 0, &tar, &tar_len), 0);
        assert_int_equal(b->p->ops->put_archive(b->p, b->ref, "/tmp", tar, tar_len, b->err), 0);
        free(tar);
        assert_int_equal(b->p->ops->get_archive(b->p, b->ref, "/tmp/a b&c=d?.txt", 1 << 20, &tar,
                                                &tar_len, b->err),
                         0);
        assert_int_equal(tarball_unpack_file(tar, tar_len, 100, &got, &got_len), 0);
        assert_string_equal(got, "hi");
        free(got);
        free(tar);
        free(data);
}

static void test_pause_resume(void **state)
{
        struct box *b = *state;
        struct exec_result res;
        struct exec_spec spec = { .argv = (const char *const[]){ "true", NULL },
                                  .timeout_ms = 5000, .max_output = 64 };

        NEED_DAEMON();
        box_up(b);
        assert_int_equal(b->p->ops->pause(b->p, b->ref, b->err), 0);
        assert_int_equal(box_state(b), SANDBOX_RUN_PAUSED);
        /* Docker refuses exec in a paused container: 409. */
        assert_int_equal(b->p->ops->exec(b->p, b->ref, &spec, &res, b->err), -EBUSY);
        assert_non_null(strstr(b->err, "paused"));
        assert_int_equal(b->p->ops->resume(b->p, b->ref, b->err), 0);
        assert_int_equal(box_state(b), SANDBOX_RUN_RUNNING);
        box_exec(b, &spec, &res);
        assert_int_equal(res.exit_code, 0);
        exec_result_free(&res);
}

static void test_stop(void **state)
{
        struct box *b = *state;
        struct exec_result res;
        struct exec_spec spec = { .argv = (const char *const[]){ "true", NULL },
                                  .timeout_ms = 5000, .max_output = 64 };
        int64_t t0;

        NEED_DAEMON();
        box_up(b);
        t0 = timeutil_mono_ms();
        assert_int_equal(b->p->ops->stop(b->p, b->ref, b->err), 0);
        /* docker-init forwards SIGTERM: no waiting out the grace period. */
        assert_in_range(timeutil_mono_ms() - t0, 0, DOCKER_STOP_GRACE_S * 1000 - 500);
        assert_int_equal(box_state(b), SANDBOX_RUN_EXITED);
        assert_int_equal(b->p->ops->stop(b->p, b->ref, b->err), 0); /* 304 */
        assert_int_equal(b->p->ops->exec(b->p, b->ref, &spec, &res, b->err), -EBUSY);
        /* A stopped sandbox starts again (the stop_keep idle policy). */
        assert_int_equal(b->p->ops->start(b->p, b->ref, b->err), 0);
        box_exec(b, &spec, &res);
        assert_int_equal(res.exit_code, 0);
        exec_result_free(&res);
}

struct find {
        const char *ref;
        int found, total;
        struct sandbox_info info;
};

static void on_managed(void *ud, const struct sandbox_info *info)
{
        struct find *f = ud;

        f->total++;
        if (strcmp(info->ref, f->ref) == 0) {
                f->found++;
                f->info = *info;
        }
}

static void test_list_managed(void **state)
{
        struct box *b = *state;
        struct find f = { 0 };

        NEED_DAEMON();
        box_up(b);
        f.ref = b->ref;
        assert_int_equal(b->p->ops->list_managed(b->p, on_managed, &f, b->err), 0);
        assert_int_equal(f.found, 1);
        assert_string_equal(f.info.sandbox_id, b->id);
        assert_string_equal(f.info.prefix, "dptest:");
        assert_int_equal(f.info.state, SANDBOX_RUN_RUNNING);
        /* Stopped ones are listed too (all=1). */
        assert_int_equal(b->p->ops->stop(b->p, b->ref, b->err), 0);
        memset(&f, 0, sizeof(f));
        f.ref = b->ref;
        assert_int_equal(b->p->ops->list_managed(b->p, on_managed, &f, b->err), 0);
        assert_int_equal(f.found, 1);
        assert_int_equal(f.info.state, SANDBOX_RUN_EXITED);
}

static void test_remove(void **state)
{
        struct box *b = *state;
        struct sandbox_info info;
        struct find f = { 0 };

        NEED_DAEMON();
        box_up(b);
        assert_int_equal(b->p->ops->remove(b->p, b->ref, b->err), 0);
        assert_int_equal(b->p->ops->inspect(b->p, b->ref, &info, b->err), -ENOENT);
        assert_int_equal(info.state, SANDBOX_RUN_MISSING);
        assert_int_equal(b->p->ops->remove(b->p, b->ref, b->err), -ENOENT);
        f.ref = b->ref;
        assert_int_equal(b->p->ops->list_managed(b->p, on_managed, &f, b->err), 0);
        assert_int_equal(f.found, 0);
        b->ref[0] = '\0';
}

static void test_errors(void **state)
{
        struct box *b = *state;
        struct box other = { .p = b->p };
        struct provider *dead = NULL;
        char err[PROVIDER_ERR_MAX] = "";

        NEED_DAEMON();
        box_up(b);
        /* Same sandbox id: the container name is taken. */
        snprintf(other.id, sizeof(other.id), "%s", b->id);
        assert_int_equal(box_create(&other, env_or("DOCKER_TEST_IMAGE", "sandbox-broker/base:latest")),
                         -EBUSY);
        assert_non_null(strstr(other.err, "already in use"));
        /* Unknown image, not pullable (no registry allowed): the sandbox fails
         * (-EREMOTEIO: never -ENOENT, which would read "no such sandbox"),
         * with the pull's reason. */
        snprintf(other.id, sizeof(other.id), "%.60s-x", b->id);
        assert_int_equal(box_create(&other, "sandbox-broker/no-such-image:latest"), -EREMOTEIO);
        printf("unknown image: %s\n", other.err);
        assert_non_null(strstr(other.err, "no-such-image"));
        assert_int_equal(b->p->ops->start(b->p, "no-such-container", err), -ENOENT);
        assert_int_equal(b->p->ops->pause(b->p, "no-such-container", err), -ENOENT);
        /* No daemon behind the socket. */
        assert_int_equal(docker_provider_new("/nonexistent/docker.sock", 2000, &dead), 0);
        assert_int_equal(dead->ops->ping(dead, err), -ECONNREFUSED);
        assert_int_equal(dead->ops->remove(dead, b->ref, err), -ECONNREFUSED);
        provider_free(dead);
        assert_int_equal(docker_provider_new(NULL, 0, &dead), -EINVAL);
        assert_null(dead);
}

int main(void)
{
        struct stat st;
        const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, setup_box, teardown_box)
                T(test_ping),
                T(test_lifecycle_and_exec),
                T(test_exec_large_output_capped),
                T(test_exec_timeout_kills),
                T(test_exec_stream_held_open),
                T(test_exec_transfer_bound),
                T(test_exec_stdin),
                T(test_multiuser),
                T(test_archive_roundtrip),
                T(test_pause_resume),
                T(test_stop),
                T(test_list_managed),
                T(test_remove),
                T(test_errors),
#undef T
        };
        int r;

        sock_path = env_or("DOCKER_SOCK", DOCKER_SOCKET_DEFAULT);
        have_daemon = stat(sock_path, &st) == 0 && S_ISSOCK(st.st_mode);
        if (!have_daemon)
                fprintf(stderr, "docker_provider_test: no socket at %s; every case is skipped\n",
                        sock_path);
        curl_global_init(CURL_GLOBAL_DEFAULT);
        r = cmocka_run_group_tests(tests, NULL, NULL);
        curl_global_cleanup();
        return r;
}
