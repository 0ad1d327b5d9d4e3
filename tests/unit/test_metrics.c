/* Unit tests for lib/core/metrics.c: counting, histogram buckets, the flush to
 * the Redis hash (HINCRBY deltas, kept on failure) and the Prometheus text.
 * Redis is replaced at the link seam by __wrap_redis_conn_command below,
 * which applies HINCRBY to a small in-memory hash. */
/* WRAP: -Wl,--wrap=redis_conn_command */
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
#include "core/metrics.h"
#include "store/metrics_store.h"
#include "store/metrics_reply.h"

#define HASH_MAX 64

static struct {
        char field[HASH_MAX][METRICS_SERIES_LEN];
        long long value[HASH_MAX];
        int n;
        int fail; /* the next calls fail with -EIO */
        char key[96];
} h;

static long long *hash_slot(const char *field)
{
        for (int i = 0; i < h.n; i++)
                if (strcmp(h.field[i], field) == 0)
                        return &h.value[i];
        assert_true(h.n < HASH_MAX);
        snprintf(h.field[h.n], sizeof(h.field[0]), "%s", field);
        h.value[h.n] = 0;
        return &h.value[h.n++];
}

static long long hash_get(const char *field)
{
        for (int i = 0; i < h.n; i++)
                if (strcmp(h.field[i], field) == 0)
                        return h.value[i];
        return 0;
}

int __wrap_redis_conn_command(struct redis_conn *c, int argc, const char **argv, redisReply **ret);
int __wrap_redis_conn_command(struct redis_conn *c, int argc, const char **argv, redisReply **ret)
{
        (void)c;
        *ret = NULL;
        if (h.fail)
                return -EIO;
        assert_int_equal(argc, 4);
        assert_string_equal(argv[0], "HINCRBY");
        snprintf(h.key, sizeof(h.key), "%s", argv[1]);
        *hash_slot(argv[2]) += strtoll(argv[3], NULL, 10);
        *ret = calloc(1, sizeof(redisReply));
        (*ret)->type = REDIS_REPLY_INTEGER;
        return 0;
}

static struct broker_config cfg = { .key_prefix = "t:" };

static void test_flush_aggregates_and_resets(void **state)
{
        (void)state;
        metrics_add("broker_leases_reaped_total", 2);
        metrics_add("broker_leases_reaped_total", 3);
        assert_int_equal(metrics_flush(NULL, &cfg), 0);
        assert_string_equal(h.key, "t:metrics");
        assert_int_equal(hash_get("broker_leases_reaped_total"), 5);
        /* a second flush sends only what came since */
        metrics_add("broker_leases_reaped_total", 1);
        assert_int_equal(metrics_flush(NULL, &cfg), 0);
        assert_int_equal(hash_get("broker_leases_reaped_total"), 6);
}

static void test_failed_flush_keeps_the_delta(void **state)
{
        (void)state;
        metrics_add("broker_tickets_granted_total", 4);
        h.fail = 1;
        assert_int_equal(metrics_flush(NULL, &cfg), -EIO);
        h.fail = 0;
        assert_int_equal(metrics_flush(NULL, &cfg), 0);
        assert_int_equal(hash_get("broker_tickets_granted_total"), 4);
}

static void test_request_labels_are_bounded(void **state)
{
        (void)state;
        metrics_request("leases", "/v1/leases/acquire", "POST", 200);
        metrics_request("leases", NULL, "BREW", 404);
        metrics_request("leases", NULL, "BREW", 9999);
        assert_int_equal(metrics_flush(NULL, &cfg), 0);
        assert_int_equal(hash_get("broker_http_requests_total{group=\"leases\",route=\"/v1/leases/"
                                  "acquire\",method=\"POST\",status=\"200\"}"),
                         1);
        assert_int_equal(hash_get("broker_http_requests_total{group=\"leases\",route=\"none\","
                                  "method=\"other\",status=\"404\"}"),
                         1);
        assert_int_equal(hash_get("broker_http_requests_total{group=\"leases\",route=\"none\","
                                  "method=\"other\",status=\"0\"}"),
                         1);
}

static void test_histogram_buckets(void **state)
{
        (void)state;
        metrics_observe_ms(METRICS_SANDBOX_EXEC, 3);      /* le 0.005 */
        metrics_observe_ms(METRICS_SANDBOX_EXEC, 60);     /* le 0.1 */
        metrics_observe_ms(METRICS_SANDBOX_EXEC, 100);    /* le 0.1: bounds are inclusive */
        metrics_observe_ms(METRICS_SANDBOX_EXEC, 500000); /* above every bound */
        assert_int_equal(metrics_flush(NULL, &cfg), 0);
        assert_int_equal(hash_get("broker_sandbox_exec_seconds_bucket{le=\"5\"}"), 1);
        assert_int_equal(hash_get("broker_sandbox_exec_seconds_bucket{le=\"100\"}"), 2);
        assert_int_equal(hash_get("broker_sandbox_exec_seconds_count"), 4);
        assert_int_equal(hash_get("broker_sandbox_exec_seconds_sum_ms"), 500163);
}

/* A flat HGETALL reply of the in-memory hash. */
static redisReply *hgetall(void)
{
        redisReply *r = calloc(1, sizeof(*r));
        char num[24];

        r->type = REDIS_REPLY_ARRAY;
        r->elements = (size_t)h.n * 2;
        r->element = calloc(r->elements, sizeof(*r->element));
        for (int i = 0; i < h.n; i++) {
                redisReply *k = calloc(1, sizeof(*k)), *v = calloc(1, sizeof(*v));
                snprintf(num, sizeof(num), "%lld", h.value[i]);
                k->type = v->type = REDIS_REPLY_STRING;
                k->str = strdup(h.field[i]);
                k->len = strlen(k->str);
                v->str = strdup(num);
                v->len = strlen(num);
                r->element[2 * i] = k;
                r->element[2 * i + 1] = v;
        }
        return r;
}

static void test_format_prometheus_text(void **state)
{
        struct json_object *status = json_tokener_parse(
                "{\"capacity\":10,\"activeSlots\":3,\"activeLeases\":4,\"queueDepth\":2}");
        redisReply *rep;
        char *text = NULL;
        size_t len = 0;

        (void)state;
        h.n = 0;
        metrics_observe_ms(METRICS_SANDBOX_EXEC, 60);
        metrics_observe_ms(METRICS_SANDBOX_EXEC, 1500);
        metrics_request("status", "/metrics", "GET", 200);
        metrics_add("broker_egress_denied_total{reason=\"port\"}", 2);
        assert_int_equal(metrics_flush(NULL, &cfg), 0);
        rep = hgetall();
        assert_int_equal(metrics_format(rep, status, &text, &len), 0);
        assert_int_equal(strlen(text), len);
        assert_non_null(strstr(text, "# TYPE broker_http_requests_total counter\n"
                                     "broker_http_requests_total{group=\"status\",route=\"/"
                                     "metrics\",method=\"GET\",status=\"200\"} 1\n"));
        assert_non_null(strstr(text, "broker_leases_reaped_total 0\n"));
        /* a labelled family's known label sets show as 0 until counted, once */
        assert_non_null(strstr(text, "broker_egress_denied_total{reason=\"port\"} 2\n"));
        assert_null(strstr(text, "broker_egress_denied_total{reason=\"port\"} 0\n"));
        assert_non_null(strstr(text, "broker_egress_denied_total{reason=\"policy\"} 0\n"));
        assert_non_null(strstr(text, "broker_egress_denied_total{reason=\"address\"} 0\n"));
        assert_null(strstr(text, "broker_egress_denied_total 0\n"));
        /* cumulative buckets in seconds, +Inf = count, sum in seconds */
        assert_non_null(strstr(text, "broker_sandbox_exec_seconds_bucket{le=\"0.050\"} 0\n"));
        assert_non_null(strstr(text, "broker_sandbox_exec_seconds_bucket{le=\"0.100\"} 1\n"));
        assert_non_null(strstr(text, "broker_sandbox_exec_seconds_bucket{le=\"2.500\"} 2\n"));
        assert_non_null(strstr(text, "broker_sandbox_exec_seconds_bucket{le=\"+Inf\"} 2\n"));
        assert_non_null(strstr(text, "broker_sandbox_exec_seconds_sum 1.560\n"));
        assert_non_null(strstr(text, "# TYPE broker_grant_wait_seconds histogram\n"));
        /* the SDKs' create events: both outcomes shown from the start */
        assert_non_null(strstr(text, "broker_sdk_create_events_total{success=\"true\"} 0\n"));
        assert_non_null(strstr(text, "broker_sdk_create_events_total{success=\"false\"} 0\n"));
        assert_non_null(strstr(text, "# TYPE broker_sdk_sandbox_create_seconds histogram\n"));
        assert_non_null(strstr(text, "broker_queue_depth 2\n"));
        assert_non_null(strstr(text, "broker_slots_active 3\n"));
        assert_non_null(strstr(text, "broker_capacity 10\n"));
        free(text);
        freeReplyObject(rep);
        json_object_put(status);
}

static void test_too_long_series_is_dropped(void **state)
{
        char name[METRICS_SERIES_LEN + 10];

        (void)state;
        memset(name, 'x', sizeof(name) - 1);
        name[sizeof(name) - 1] = '\0';
        metrics_add(name, 1);
        assert_int_equal(metrics_flush(NULL, &cfg), 0);
        assert_int_equal(hash_get("broker_metrics_dropped_total"), 1);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_flush_aggregates_and_resets),
                cmocka_unit_test(test_failed_flush_keeps_the_delta),
                cmocka_unit_test(test_request_labels_are_bounded),
                cmocka_unit_test(test_histogram_buckets),
                cmocka_unit_test(test_format_prometheus_text),
                cmocka_unit_test(test_too_long_series_is_dropped),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
