/* Unit tests for fcgi/sse.c's events mode (the code interpreter's runs,
 * h_execd_code.c): what the command in the sandbox prints is hostile. Each
 * stdout line that is a JSON object of an allowed type becomes one event,
 * re-serialised with a timestamp; forged SSE frames, "init", other types,
 * non-objects, bad UTF-8 and lines over SSE_EVENT_LINE_MAX never become
 * events and never break the framing (every frame is `data: <one JSON
 * line>\n\n`); lines split across chunks are joined; the plain mode is
 * unchanged (a line is a stdout event's text). Link seams: the answer's
 * headers and the FastCGI stream are wrapped into a buffer. */
/* WRAP: -Wl,--wrap=execd_reply_headers -Wl,--wrap=FCGX_PutS -Wl,--wrap=FCGX_FFlush */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sse.h"

void __wrap_execd_reply_headers(struct request *req, int status, const char *content_type,
                                const char *extra);
int __wrap_FCGX_PutS(const char *s, FCGX_Stream *stream);
int __wrap_FCGX_FFlush(FCGX_Stream *stream);

static char out[8 * 1024 * 1024];
static size_t out_len;

void __wrap_execd_reply_headers(struct request *req, int status, const char *content_type,
                                const char *extra)
{
        (void)status;
        (void)content_type;
        (void)extra;
        req->status = 200;
}

int __wrap_FCGX_PutS(const char *s, FCGX_Stream *stream)
{
        size_t n = strlen(s);

        (void)stream;
        assert_true(out_len + n < sizeof(out));
        memcpy(out + out_len, s, n);
        out_len += n;
        out[out_len] = '\0';
        return (int)n;
}

int __wrap_FCGX_FFlush(FCGX_Stream *stream)
{
        (void)stream;
        return 0;
}

/* The frames written, each checked to be `data: <JSON object>\n\n`, as
 * parsed objects into evs (at most max); returns the count. */
static int frames(struct json_object **evs, int max)
{
        char *p = out;
        int n = 0;

        while (*p) {
                char *end = strstr(p, "\n\n");

                assert_non_null(end);
                assert_memory_equal(p, "data: ", 6);
                *end = '\0';
                assert_null(strchr(p, '\n')); /* one line per frame */
                assert_true(n < max);
                evs[n] = json_tokener_parse(p + 6);
                assert_non_null(evs[n]);
                assert_true(json_object_is_type(evs[n], json_type_object));
                n++;
                p = end + 2;
        }
        return n;
}

static const char *type_of(struct json_object *o)
{
        struct json_object *v;

        assert_true(json_object_object_get_ex(o, "type", &v));
        return json_object_get_string(v);
}

static void feed(struct sse *s, int stream, const char *text)
{
        assert_int_equal(sse_on_output(s, stream, text, strlen(text)), 0);
}

static void setup_req(struct request *req, FCGX_Request *f)
{
        memset(req, 0, sizeof(*req));
        memset(f, 0, sizeof(*f));
        req->fcgx = f;
        out_len = 0;
        out[0] = '\0';
}

static void test_events_pass_and_forgeries_do_not(void **state)
{
        struct json_object *evs[32], *v;
        struct request req;
        FCGX_Request f;
        struct sse s;
        int n;

        (void)state;
        setup_req(&req, &f);
        sse_begin_events(&s, &req);
        feed(&s, 1, "{\"type\":\"execution_count\",\"execution_count\":3}\n");
        /* a text that holds a frame of its own stays text */
        feed(&s, 1, "{\"type\":\"stdout\",\"text\":\"a\\n\\ndata: {\\\"type\\\":\\\"init\\\"}\\n\\n\"}\n");
        feed(&s, 1, "data: {\"type\":\"init\",\"text\":\"forged\"}\n\n");
        feed(&s, 1, "{\"type\":\"init\",\"text\":\"forged\"}\n{\"type\":\"ping\"}\n{\"type\":7}\n");
        feed(&s, 1, "[1,2]\nnot json\n{\"type\":\"stdout\"} trailing\n");
        feed(&s, 1, "\xff\xfe{\"type\":\"stdout\",\"text\":\"bad utf8\"}\n");
        /* split over chunks */
        feed(&s, 1, "{\"type\":\"result\",\"results\":{\"text/pl");
        feed(&s, 1, "ain\":\"42\",\"text\":\"42\"}}\n");
        feed(&s, 2, "runner's own stderr\n");
        feed(&s, 1, "{\"type\":\"error\",\"error\":{\"ename\":\"E\",\"evalue\":\"v\",\"traceback\":[]}}\n");
        feed(&s, 1, "{\"type\":\"execution_complete\"}"); /* unterminated: dropped at flush */
        assert_int_equal(sse_flush_lines(&s), 0);
        n = frames(evs, 32);
        assert_int_equal(n, 5);
        assert_string_equal(type_of(evs[0]), "execution_count");
        assert_string_equal(type_of(evs[1]), "stdout");
        assert_true(json_object_object_get_ex(evs[1], "text", &v));
        assert_string_equal(json_object_get_string(v), "a\n\ndata: {\"type\":\"init\"}\n\n");
        assert_string_equal(type_of(evs[2]), "result");
        assert_string_equal(type_of(evs[3]), "stderr");
        assert_string_equal(type_of(evs[4]), "error");
        for (int i = 0; i < n; i++) {
                assert_true(json_object_object_get_ex(evs[i], "timestamp", &v));
                assert_true(json_object_get_int64(v) > 1600000000000LL);
                json_object_put(evs[i]);
        }
        assert_true(s.dropped > 0);
        sse_end(&s);
}

static void test_over_long_line_is_dropped_whole(void **state)
{
        size_t big = SSE_EVENT_LINE_MAX + 100;
        char *line = malloc(big + 64);
        struct json_object *evs[4];
        struct request req;
        FCGX_Request f;
        struct sse s;

        (void)state;
        assert_non_null(line);
        /* a valid event, just too long: none of its pieces may become one */
        int k = snprintf(line, 64, "{\"type\":\"stdout\",\"text\":\"");
        memset(line + k, 'a', big - (size_t)k - 3);
        memcpy(line + big - 3, "\"}\n", 3);
        setup_req(&req, &f);
        sse_begin_events(&s, &req);
        assert_int_equal(sse_on_output(&s, 1, line, big), 0);
        feed(&s, 1, "{\"type\":\"stdout\",\"text\":\"after\"}\n");
        assert_int_equal(sse_flush_lines(&s), 0);
        assert_int_equal(frames(evs, 4), 1);
        assert_string_equal(json_object_get_string(json_object_object_get(evs[0], "text")), "after");
        json_object_put(evs[0]);
        assert_true(s.dropped >= big - 1);
        sse_end(&s);
        free(line);
}

static void test_plain_mode_unchanged(void **state)
{
        struct json_object *evs[4];
        struct request req;
        FCGX_Request f;
        struct sse s;

        (void)state;
        setup_req(&req, &f);
        sse_begin(&s, &req);
        feed(&s, 1, "{\"type\":\"init\",\"text\":\"x\"}\n");
        assert_int_equal(frames(evs, 4), 1);
        assert_string_equal(type_of(evs[0]), "stdout");
        assert_string_equal(json_object_get_string(json_object_object_get(evs[0], "text")),
                            "{\"type\":\"init\",\"text\":\"x\"}\n");
        json_object_put(evs[0]);
        sse_end(&s);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_events_pass_and_forgeries_do_not),
                cmocka_unit_test(test_over_long_line_is_dropped_whole),
                cmocka_unit_test(test_plain_mode_unchanged),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
