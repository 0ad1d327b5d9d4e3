/* Unit tests for the Kubernetes provider's watch (lib/providers/kubernetes/kubernetes_events.c)
 * with the API server replaced at the link seam: __wrap_k8s_api_request below answers each
 * request from a script (a PodList, or watch lines fed to the request's sink) and records its
 * path. Checked: the first list's pods that ended are reported (exit code), another prefix's
 * are not; the watch starts from the list's resourceVersion; a bookmark and every event move
 * it; an OOMKilled pod is an oom event and then an exit (137); a DELETED pod an exit of unknown
 * code; a server-ended watch is followed again from the last version; a 410, as an ERROR event
 * or as the answer's status, makes a fresh list; garbage lines are skipped; stop() ends it with
 * 0; a failed list is returned. */
/* WRAP: -Wl,--wrap=k8s_api_request */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "providers/kubernetes/kubernetes.h"
#include "providers/kubernetes/kubernetes_api.h"
#include "providers/kubernetes/kubernetes_json.h"

#define MAX_CALLS 16

static char paths[MAX_CALLS][512];
static int ncalls;
static bool stopped;
static bool unreachable; /* every request: the API server does not answer */

/* A pod of prefix px: phase, and the main container's terminated state (code < 0: none). */
static char *pod(const char *name, const char *px, const char *phase, int code, const char *reason,
                 const char *rv)
{
        char *s, term[160] = "";

        if (code >= 0)
                snprintf(term, sizeof(term),
                         ",\"containerStatuses\":[{\"name\":\"sandbox\",\"state\":{\"terminated\":"
                         "{\"exitCode\":%d,\"reason\":\"%s\"}}}]",
                         code, reason);
        assert_true(asprintf(&s,
                             "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"resourceVersion\":"
                             "\"%s\","
                             "\"labels\":{\"sandbox-broker.io/managed\":\"1\"},\"annotations\":"
                             "{\"sandbox-broker.io/sandbox-id\":\"id-%s\",\"sandbox-broker.io/"
                             "prefix\":\"%s\"}},"
                             "\"status\":{\"phase\":\"%s\"%s}}",
                             name, rv, name, px, phase, term) > 0);
        return s;
}

static int feed(const struct k8s_request *req, const char *line)
{
        char buf[4096];
        int n = snprintf(buf, sizeof(buf), "%s\n", line);

        /* in two pieces: the stream is cut anywhere */
        int r = req->sink(req->sink_ud, buf, (size_t)n / 2);
        return r < 0 ? r : req->sink(req->sink_ud, buf + n / 2, (size_t)(n - n / 2));
}

static int answer(struct http_buf *resp, long *status, long code, const char *body)
{
        *status = code;
        if (resp) {
                memset(resp, 0, sizeof(*resp));
                resp->max = 1 << 20;
                assert_int_equal(http_buf_append(resp, body, strlen(body)), 0);
        }
        return 0;
}

int __wrap_k8s_api_request(struct k8s_api *api, const struct k8s_request *req, long *ret_status,
                           struct http_buf *ret_resp, char *ret_err);
int __wrap_k8s_api_request(struct k8s_api *api, const struct k8s_request *req, long *ret_status,
                           struct http_buf *ret_resp, char *ret_err)
{
        int call = ncalls++, r;
        char *a, *b, *c, *list;

        (void)api, (void)ret_err;
        if (unreachable)
                return -ECONNREFUSED;
        assert_true(call < MAX_CALLS);
        snprintf(paths[call], sizeof(paths[call]), "%s", req->path);
        switch (call) {
        case 0: /* the first list */
                a = pod("sb-a", "sb:", "Failed", 3, "Error", "5");
                b = pod("sb-b", "sb:", "Running", -1, "", "6");
                c = pod("sb-c", "other:", "Failed", 1, "Error", "7");
                assert_true(
                        asprintf(&list,
                                 "{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"10\"},"
                                 "\"items\":[%s,%s,%s]}",
                                 a, b, c) > 0);
                r = answer(ret_resp, ret_status, 200, list);
                free(a), free(b), free(c), free(list);
                return r;
        case 1: /* a watch the server ends after a while */
                *ret_status = 200;
                assert_int_equal(
                        feed(req,
                             "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Pod\",\"metadata\":"
                             "{\"resourceVersion\":\"11\"}}}"),
                        0);
                assert_int_equal(feed(req, "not json at all"), 0);
                a = pod("sb-b", "sb:", "Failed", 137, "OOMKilled", "12");
                assert_true(asprintf(&list, "{\"type\":\"MODIFIED\",\"object\":%s}", a) > 0);
                assert_int_equal(feed(req, list), 0);
                free(a), free(list);
                a = pod("sb-d", "sb:", "Running", -1, "", "13");
                assert_true(asprintf(&list, "{\"type\":\"DELETED\",\"object\":%s}", a) > 0);
                assert_int_equal(feed(req, list), 0);
                free(a), free(list);
                a = pod("sb-e", "sb:", "Running", -1, "", "14"); /* running: nothing to say */
                assert_true(asprintf(&list, "{\"type\":\"ADDED\",\"object\":%s}", a) > 0);
                assert_int_equal(feed(req, list), 0);
                free(a), free(list);
                return 0;
        case 2: /* too old, told by an ERROR event */
                *ret_status = 200;
                return feed(req,
                            "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410}}");
        case 3:
                return answer(
                        ret_resp, ret_status,
                        200, "{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"20\"},\"items\":[]}");
        case 4: /* too old, told by the status */
                return answer(ret_resp, ret_status, 410, "{\"kind\":\"Status\",\"code\":410}");
        case 5:
                return answer(
                        ret_resp, ret_status,
                        200, "{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"30\"},\"items\":[]}");
        default: /* the supervisor stops: the tick says so */
                stopped = true;
                assert_non_null(req->tick);
                return req->tick(req->tick_ud);
        }
}

struct seen {
        char what[16][96];
        int n;
};

static void on_event(void *ud, const struct sandbox_event *ev)
{
        struct seen *s = ud;
        static const char *const kinds[] = { "exit", "pause", "unpause", "oom" };

        assert_true(s->n < 16);
        assert_string_equal(ev->info.prefix, "sb:");
        snprintf(s->what[s->n++], sizeof(s->what[0]), "%s %s %d", kinds[ev->kind], ev->info.ref,
                 ev->info.exit_code);
}

static bool stop_fn(void *ud)
{
        (void)ud;
        return stopped;
}

static struct provider *provider(char *tok)
{
        struct k8s_settings s = { .api_url = "https://127.0.0.1:1",
                                  .ca_file = tok,
                                  .token_file = tok,
                                  .ns = "ns",
                                  .pull_policy = "Never",
                                  .agent = false,
                                  .agent_dir = "/nonexistent",
                                  .timeout_ms = 1000,
                                  .pod_wait_ms = 1000,
                                  .grace_s = 1 };
        struct provider *p = NULL;
        char err[PROVIDER_ERR_MAX] = "";
        int fd = mkstemp(tok);

        assert_true(fd >= 0);
        assert_int_equal(write(fd, "token\n", 6), 6);
        close(fd);
        assert_int_equal(k8s_provider_new(&s, &p, err), 0);
        return p;
}

static void test_watch(void **state)
{
        char tok[] = "/tmp/k8s-watch-XXXXXX", err[PROVIDER_ERR_MAX] = "", hash[40], sel[128];
        struct provider *p = provider(tok);
        struct seen s = { 0 };

        (void)state;
        assert_int_equal(p->ops->watch_events(p, "sb:", on_event, stop_fn, &s, err), 0);
        assert_int_equal(ncalls, 7);
        assert_int_equal(s.n, 4);
        assert_string_equal(s.what[0], "exit sb-a 3");  /* the list: ended meanwhile */
        assert_string_equal(s.what[1], "oom sb-b 137"); /* the watch: OOMKilled, then its exit */
        assert_string_equal(s.what[2], "exit sb-b 137");
        assert_string_equal(s.what[3], "exit sb-d -1"); /* deleted behind our back */

        assert_int_equal(k8s_prefix_hash("sb:", hash, sizeof(hash)), 0);
        snprintf(sel,
                 sizeof(sel), "labelSelector=sandbox-broker.io/managed%%3D1%%2Csandbox-broker.io/prefix-hash%%3D%s",
                 hash);
        for (int i = 0; i < ncalls; i++)
                assert_non_null(strstr(paths[i], sel));
        assert_null(strstr(paths[0], "watch=1"));
        assert_non_null(strstr(paths[1], "watch=1&allowWatchBookmarks=true&resourceVersion=10&"));
        assert_non_null(strstr(paths[2], "resourceVersion=14&")); /* the last event's */
        assert_null(strstr(paths[3], "watch=1"));                 /* 410 (event): a fresh list */
        assert_non_null(strstr(paths[4], "resourceVersion=20&"));
        assert_null(strstr(paths[5], "watch=1")); /* 410 (status): a fresh list */
        assert_non_null(strstr(paths[6], "resourceVersion=30&"));
        provider_free(p);
        unlink(tok);
}

static void test_list_failure_is_returned(void **state)
{
        char tok[] = "/tmp/k8s-watch-XXXXXX", err[PROVIDER_ERR_MAX] = "";
        struct provider *p = provider(tok);
        struct seen s = { 0 };

        (void)state;
        stopped = false;
        unreachable = true;
        assert_int_equal(p->ops->watch_events(p, "sb:", on_event, stop_fn, &s, err), -ECONNREFUSED);
        assert_int_equal(s.n, 0);
        unreachable = false;
        provider_free(p);
        unlink(tok);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_watch),
                cmocka_unit_test(test_list_failure_is_returned),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
