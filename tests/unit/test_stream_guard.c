/* Unit tests for fcgi/stream_guard.c: a forked "handler" starts the real
 * guard process, hands it three FastCGI connections (socketpairs whose
 * other ends this test reads as nginx would), takes one back, and dies.
 * The two it still held each get, and only they: one FCGI_STDOUT record
 * holding "\n\n" and an SSE `error` event (evalue "-1", ename
 * CommandExecError), the empty FCGI_STDOUT, FCGI_END_REQUEST (complete, app
 * status 0), all with that connection's request id, then end of file; the
 * one taken back gets no byte. A handler that dies holding nothing leaves
 * its guard to exit. */
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include <json-c/json.h>

#include "stream_guard.h"

/* Everything fd gives until end of file (5 s at most) into buf; its length. */
static size_t read_to_eof(int fd, unsigned char *buf, size_t size)
{
        size_t n = 0;

        for (;;) {
                struct pollfd p = { .fd = fd, .events = POLLIN };
                ssize_t r;

                assert_int_equal(poll(&p, 1, 5000), 1);
                r = read(fd, buf + n, size - n);
                assert_true(r >= 0);
                if (r == 0)
                        return n;
                n += (size_t)r;
                assert_true(n < size);
        }
}

/* One record header at p: type, request id, content length, padding. */
static void check_header(const unsigned char *p, int type, int id, int len, int pad)
{
        assert_int_equal(p[0], 1);
        assert_int_equal(p[1], type);
        assert_int_equal((p[2] << 8) | p[3], id);
        assert_int_equal((p[4] << 8) | p[5], len);
        assert_int_equal(p[6], pad);
}

/* The guard's end of request id, exactly. */
static void check_end(const unsigned char *b, size_t n, int id)
{
        size_t len, pad, off = 0;
        struct json_object *ev, *e, *v;
        char *frame;

        assert_true(n > 8);
        len = (size_t)((b[4] << 8) | b[5]);
        pad = b[6];
        check_header(b, 6, id, (int)len, (int)pad);
        assert_int_equal((len + pad) % 8, 0);
        off = 8;
        frame = strndup((const char *)b + off, len);
        assert_non_null(frame);
        assert_memory_equal(frame, "\n\ndata: ", 8);
        assert_string_equal(frame + len - 2, "\n\n");
        ev = json_tokener_parse(frame + 8);
        assert_non_null(ev);
        assert_true(json_object_object_get_ex(ev, "type", &v));
        assert_string_equal(json_object_get_string(v), "error");
        assert_true(json_object_object_get_ex(ev, "timestamp", &v));
        assert_true(json_object_is_type(v, json_type_int));
        assert_true(json_object_object_get_ex(ev, "error", &e));
        assert_true(json_object_object_get_ex(e, "ename", &v));
        assert_string_equal(json_object_get_string(v), "CommandExecError");
        assert_true(json_object_object_get_ex(e, "evalue", &v));
        assert_string_equal(json_object_get_string(v), "-1");
        assert_true(json_object_object_get_ex(e, "traceback", &v));
        assert_true(json_object_array_length(v) == 1);
        json_object_put(ev);
        free(frame);
        off += len + pad;
        assert_int_equal(n, off + 8 + 8 + 8);
        check_header(b + off, 6, id, 0, 0); /* stdout closed */
        check_header(b + off + 8, 3, id, 8, 0);
        for (int i = 0; i < 8; i++) /* app status 0, FCGI_REQUEST_COMPLETE */
                assert_int_equal(b[off + 16 + i], 0);
}

static void test_dead_handler_ends_held_streams_only(void **state)
{
        int conn[3][2], ids[3] = { 7, 300, 65535 }, st;
        unsigned char buf[4096];
        pid_t pid;

        (void)state;
        for (int i = 0; i < 3; i++)
                assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, conn[i]), 0);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) { /* the handler */
                uint32_t tok[3];

                if (stream_guard_start() < 0)
                        _exit(2);
                for (int i = 0; i < 3; i++) {
                        FCGX_Request f = { .requestId = ids[i], .ipcFd = conn[i][1] };
                        struct request req = { .fcgx = &f };

                        tok[i] = stream_guard_hold(&req);
                        if (!tok[i])
                                _exit(3);
                }
                stream_guard_release(tok[1]); /* its last event went out */
                _exit(0);                     /* "killed": nobody ends the others */
        }
        for (int i = 0; i < 3; i++)
                close(conn[i][1]);
        assert_int_equal(waitpid(pid, &st, 0), pid);
        assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        check_end(buf, read_to_eof(conn[0][0], buf, sizeof(buf)), ids[0]);
        assert_int_equal(read_to_eof(conn[1][0], buf, sizeof(buf)), 0);
        check_end(buf, read_to_eof(conn[2][0], buf, sizeof(buf)), ids[2]);
        for (int i = 0; i < 3; i++)
                close(conn[i][0]);
}

/* Is pid a live process (not gone, not a zombie)? */
static bool alive(pid_t pid)
{
        char path[64], buf[512], *p;
        FILE *f;
        size_t n;

        snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
        f = fopen(path, "r");
        if (!f)
                return false;
        n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[n] = '\0';
        p = strrchr(buf, ')');
        return p && p[1] == ' ' && p[2] != 'Z';
}

static void test_guard_exits_with_its_handler(void **state)
{
        int p[2], st;
        pid_t pid, guard = 0;

        (void)state;
        assert_int_equal(pipe(p), 0);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) { /* the handler: tells its guard's pid, then dies */
                char path[64];
                FILE *f;

                close(p[0]);
                if (stream_guard_start() < 0)
                        _exit(2);
                snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)getpid(),
                         (int)getpid());
                f = fopen(path, "r");
                if (!f || fscanf(f, "%d", &guard) != 1)
                        _exit(3);
                if (write(p[1], &guard, sizeof(guard)) != (ssize_t)sizeof(guard))
                        _exit(4);
                _exit(0);
        }
        close(p[1]);
        assert_int_equal(read(p[0], &guard, sizeof(guard)), (ssize_t)sizeof(guard));
        close(p[0]);
        assert_int_equal(waitpid(pid, &st, 0), pid);
        assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        assert_true(guard > 0);
        for (int i = 0; i < 500 && alive(guard); i++)
                usleep(10000);
        assert_false(alive(guard));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_dead_handler_ends_held_streams_only),
                cmocka_unit_test(test_guard_exits_with_its_handler),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
