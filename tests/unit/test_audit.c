/* Unit tests for lib/queue/audit.c: the JSON of an event, the Kafka key, the
 * journald fields (read back from the stderr log line), and the split of a
 * scoped user id; KAFKA_EVENTS_TOPIC's default. Kafka is replaced at the link seam by
 * __wrap_kafka_produce_event below, which keeps the last message. */
/* WRAP: -Wl,--wrap=kafka_produce_event */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <json-c/json.h>

#include "queue/audit.h"
#include "core/config.h"
#include "queue/kafka.h"
#include "core/log.h"

#define FAKE_PRODUCER ((struct kafka_producer *)0x1)

static struct {
        int calls;
        struct kafka_producer *p;
        char key[256];
        int key_null;
        char payload[4096];
        size_t len;
        int result;
} k;

int __wrap_kafka_produce_event(struct kafka_producer *p, const char *key, const char *payload,
                               size_t len);
int __wrap_kafka_produce_event(struct kafka_producer *p, const char *key, const char *payload,
                               size_t len)
{
        k.calls++;
        k.p = p;
        k.key_null = key == NULL;
        snprintf(k.key, sizeof(k.key), "%s", key ? key : "");
        assert_true(len < sizeof(k.payload));
        memcpy(k.payload, payload, len);
        k.payload[len] = '\0';
        k.len = len;
        assert_int_equal(strlen(payload), len);
        return k.result;
}

static int reset(void **state)
{
        (void)state;
        memset(&k, 0, sizeof(k));
        return 0;
}

/* The string member key of o, or NULL when absent. */
static const char *str_member(struct json_object *o, const char *key)
{
        struct json_object *v;

        if (!json_object_object_get_ex(o, key, &v))
                return NULL;
        assert_true(json_object_is_type(v, json_type_string));
        return json_object_get_string(v);
}

static void test_json_has_every_field(void **state)
{
        const struct audit_event ev = {
                .type = AUDIT_LEASE_GRANTED, .tenant = "acme", .user_id = "alice",
                .session_id = "s-1", .lease_id = "0123456789abcdef0123456789abcdef",
                .sandbox_id = "fedcba9876543210fedcba9876543210",
                .ticket_id = "11111111111111111111111111111111", .request_id = "req-42",
                .reason = "because \"quoted\"\n",
        };
        struct json_object *o;
        char *s = NULL;

        (void)state;
        assert_int_equal(audit_event_json(&ev, 1796212800123LL, &s), 0);
        o = json_tokener_parse(s);
        assert_non_null(o);
        assert_int_equal(json_object_object_length(o), 10);
        assert_string_equal(str_member(o, "type"), "lease.granted");
        assert_string_equal(str_member(o, "time"), "2026-12-02T12:00:00.123Z");
        assert_string_equal(str_member(o, "tenant"), "acme");
        assert_string_equal(str_member(o, "userId"), "alice");
        assert_string_equal(str_member(o, "sessionId"), "s-1");
        assert_string_equal(str_member(o, "leaseId"), ev.lease_id);
        assert_string_equal(str_member(o, "sandboxId"), ev.sandbox_id);
        assert_string_equal(str_member(o, "ticketId"), ev.ticket_id);
        assert_string_equal(str_member(o, "requestId"), "req-42");
        assert_string_equal(str_member(o, "reason"), "because \"quoted\"\n");
        /* One line: a console consumer prints one event per line. */
        assert_null(strchr(s, '\n'));
        json_object_put(o);
        free(s);
}

static void test_json_leaves_out_absent_fields(void **state)
{
        const struct audit_event ev = { .type = AUDIT_TICKET_EXPIRED, .tenant = "",
                                        .ticket_id = "t1", .user_id = NULL };
        struct json_object *o;
        char *s = NULL;

        (void)state;
        assert_int_equal(audit_event_json(&ev, 0, &s), 0);
        o = json_tokener_parse(s);
        assert_non_null(o);
        assert_int_equal(json_object_object_length(o), 3);
        assert_string_equal(str_member(o, "type"), "ticket.expired");
        assert_string_equal(str_member(o, "time"), "1970-01-01T00:00:00.000Z");
        assert_string_equal(str_member(o, "ticketId"), "t1");
        assert_null(str_member(o, "tenant"));
        assert_null(str_member(o, "userId"));
        json_object_put(o);
        free(s);
}

static void test_json_needs_a_type(void **state)
{
        const struct audit_event ev = { .tenant = "acme" };
        const struct audit_event empty = { .type = "" };
        char *s = (char *)"untouched";

        (void)state;
        assert_int_equal(audit_event_json(&ev, 0, &s), -EINVAL);
        assert_null(s);
        assert_int_equal(audit_event_json(&empty, 0, &s), -EINVAL);
        assert_null(s);
}

static void test_slashes_are_not_escaped(void **state)
{
        const struct audit_event ev = { .type = AUDIT_AUTH_DENIED, .reason = "GET /v1/leases" };
        char *s = NULL;

        (void)state;
        assert_int_equal(audit_event_json(&ev, 0, &s), 0);
        assert_non_null(strstr(s, "\"reason\":\"GET /v1/leases\""));
        free(s);
}

static void test_emit_produces_keyed_by_tenant(void **state)
{
        const struct audit_event ev = { .type = AUDIT_LEASE_EXPIRED, .tenant = "acme",
                                        .user_id = "bob", .lease_id = "l1" };
        struct json_object *o;

        (void)state;
        audit_emit(FAKE_PRODUCER, &ev);
        assert_int_equal(k.calls, 1);
        assert_ptr_equal(k.p, FAKE_PRODUCER);
        assert_false(k.key_null);
        assert_string_equal(k.key, "acme");
        o = json_tokener_parse(k.payload);
        assert_non_null(o);
        assert_string_equal(str_member(o, "type"), "lease.expired");
        assert_string_equal(str_member(o, "tenant"), "acme");
        assert_string_equal(str_member(o, "userId"), "bob");
        assert_string_equal(str_member(o, "leaseId"), "l1");
        assert_non_null(str_member(o, "time"));
        json_object_put(o);
}

static void test_emit_without_tenant_has_no_key(void **state)
{
        (void)state;
        audit_emit(FAKE_PRODUCER, &(struct audit_event){ .type = AUDIT_TICKET_EXPIRED, .ticket_id = "t" });
        assert_int_equal(k.calls, 1);
        assert_true(k.key_null);
        audit_emit(FAKE_PRODUCER, &(struct audit_event){ .type = AUDIT_TICKET_EXPIRED, .tenant = "" });
        assert_int_equal(k.calls, 2);
        assert_true(k.key_null);
}

static void test_emit_ignores_failures_and_null_producer(void **state)
{
        (void)state;
        k.result = -ENOBUFS; /* a full queue: nothing to report, nothing to retry */
        audit_emit(FAKE_PRODUCER, &(struct audit_event){ .type = AUDIT_LEASE_RELEASED });
        assert_int_equal(k.calls, 1);
        audit_emit(NULL, &(struct audit_event){ .type = AUDIT_LEASE_RELEASED });
        audit_emit(FAKE_PRODUCER, &(struct audit_event){ .tenant = "no type" });
        audit_emit(FAKE_PRODUCER, NULL);
        assert_int_equal(k.calls, 1);
}

/* The stderr line of one audit_emit() (LOG_TARGET=stderr), read back from a
 * temporary file standing in for fd 2. */
static void emit_and_capture(const struct audit_event *ev, char *line, size_t size)
{
        FILE *tmp = tmpfile();
        int saved = dup(STDERR_FILENO);
        size_t n;

        assert_non_null(tmp);
        assert_true(saved >= 0);
        fflush(stderr);
        assert_true(dup2(fileno(tmp), STDERR_FILENO) >= 0);
        audit_emit(NULL, ev);
        fflush(stderr);
        assert_true(dup2(saved, STDERR_FILENO) >= 0);
        close(saved);
        rewind(tmp);
        n = fread(line, 1, size - 1, tmp);
        line[n] = '\0';
        fclose(tmp);
}

static void test_log_line_has_the_journald_fields(void **state)
{
        const struct audit_event ev = {
                .type = AUDIT_SANDBOX_EXPIRED, .tenant = "acme", .user_id = "alice",
                .session_id = "s1", .lease_id = "L", .sandbox_id = "S", .ticket_id = "T",
                .request_id = "R", .reason = "LEASE_EXPIRED",
        };
        char line[2048];

        (void)state;
        emit_and_capture(&ev, line, sizeof(line));
        assert_non_null(strstr(line, " info "));
        assert_non_null(strstr(line, "audit: sandbox.expired"));
        assert_non_null(strstr(line, " EVENT=sandbox.expired"));
        assert_non_null(strstr(line, " TENANT=acme"));
        assert_non_null(strstr(line, " USER_ID=alice"));
        assert_non_null(strstr(line, " SESSION_ID=s1"));
        assert_non_null(strstr(line, " LEASE_ID=L"));
        assert_non_null(strstr(line, " SANDBOX_ID=S"));
        assert_non_null(strstr(line, " TICKET_ID=T"));
        assert_non_null(strstr(line, " REQUEST_ID=R"));
        assert_non_null(strstr(line, " REASON=LEASE_EXPIRED"));
        assert_int_equal(k.calls, 0); /* NULL producer: log only */

        emit_and_capture(&(struct audit_event){ .type = AUDIT_TICKET_EXPIRED, .ticket_id = "T" },
                         line, sizeof(line));
        assert_null(strstr(line, "TENANT="));
        assert_null(strstr(line, "USER_ID="));
        assert_non_null(strstr(line, " TICKET_ID=T"));
}

/* A caller's own line rides along: one log line, both messages, and the
 * note stays out of the Kafka copy. */
static void test_note_joins_the_log_line(void **state)
{
        const struct audit_event ev = { .type = AUDIT_LEASE_RELEASED, .lease_id = "L",
                                        .user_id = "alice", .note = "lease released (reason idle)" };
        char line[2048], *s = NULL;

        (void)state;
        emit_and_capture(&ev, line, sizeof(line));
        assert_non_null(strstr(line, " info "));
        assert_non_null(strstr(line, ": lease released (reason idle); audit: lease.released"));
        assert_non_null(strstr(line, " EVENT=lease.released"));
        assert_non_null(strstr(line, " LEASE_ID=L"));
        assert_ptr_equal(strchr(line, '\n'), line + strlen(line) - 1); /* one line */
        assert_int_equal(audit_event_json(&ev, 0, &s), 0);
        assert_null(strstr(s, "reason idle"));
        assert_null(strstr(s, "note"));
        free(s);

        /* an empty note is none */
        emit_and_capture(&(struct audit_event){ .type = AUDIT_LEASE_RELEASED, .note = "" }, line,
                         sizeof(line));
        assert_non_null(strstr(line, ": audit: lease.released"));
}

static void expect_split(const char *scoped, int want_r, const char *want_tenant,
                         const char *want_user)
{
        char tenant[AUDIT_TENANT_MAX];
        const char *user = (const char *)0x1;

        memset(tenant, 'X', sizeof(tenant));
        assert_int_equal(audit_split_user(scoped, tenant, sizeof(tenant), &user), want_r);
        assert_string_equal(tenant, want_tenant);
        if (want_user)
                assert_string_equal(user, want_user);
        else
                assert_null(user);
}

static void test_split_user(void **state)
{
        char big[AUDIT_TENANT_MAX + 8];

        (void)state;
        expect_split("acme/alice", 0, "acme", "alice");
        expect_split("alice", 0, "", "alice");
        expect_split("acme/team/alice", 0, "acme", "team/alice"); /* the first '/' */
        expect_split("/alice", 0, "", "alice");
        expect_split("acme/", 0, "acme", "");
        expect_split("", 0, "", "");
        expect_split(NULL, 0, "", NULL);
        /* A tenant that does not fit: none, and the whole id as the user. */
        memset(big, 'a', sizeof(big));
        big[AUDIT_TENANT_MAX] = '/';
        big[AUDIT_TENANT_MAX + 1] = 'u';
        big[AUDIT_TENANT_MAX + 2] = '\0';
        expect_split(big, -ENAMETOOLONG, "", big);
        /* The longest that fits. */
        big[AUDIT_TENANT_MAX - 1] = '/';
        big[AUDIT_TENANT_MAX] = '\0';
        {
                char tenant[AUDIT_TENANT_MAX];
                const char *user;
                assert_int_equal(audit_split_user(big, tenant, sizeof(tenant), &user), 0);
                assert_int_equal(strlen(tenant), AUDIT_TENANT_MAX - 1);
                assert_string_equal(user, "");
        }
}

static void test_split_user_points_into_the_input(void **state)
{
        const char *scoped = "acme/alice";
        char tenant[8];
        const char *user;

        (void)state;
        assert_int_equal(audit_split_user(scoped, tenant, sizeof(tenant), &user), 0);
        assert_ptr_equal(user, scoped + 5);
        assert_int_equal(audit_split_user(scoped, tenant, 4, &user), -ENAMETOOLONG);
        assert_string_equal(tenant, "");
        assert_ptr_equal(user, scoped);
}

static const char *env_topic, *env_events;

static const char *lookup(const char *name)
{
        if (strcmp(name, "KAFKA_TOPIC") == 0)
                return env_topic;
        if (strcmp(name, "KAFKA_EVENTS_TOPIC") == 0)
                return env_events;
        return NULL;
}

static void test_events_topic_config(void **state)
{
        struct broker_config cfg;
        char err[256];

        (void)state;
        env_topic = env_events = NULL;
        assert_int_equal(config_load_from(&cfg, lookup, err, sizeof(err)), 0);
        assert_string_equal(cfg.kafka_events_topic, "broker.tickets.events");
        env_topic = "it.tickets.abc";
        assert_int_equal(config_load_from(&cfg, lookup, err, sizeof(err)), 0);
        assert_string_equal(cfg.kafka_events_topic, "it.tickets.abc.events");
        env_events = "audit";
        assert_int_equal(config_load_from(&cfg, lookup, err, sizeof(err)), 0);
        assert_string_equal(cfg.kafka_events_topic, "audit");
        env_events = "it.tickets.abc";
        assert_int_equal(config_load_from(&cfg, lookup, err, sizeof(err)), -EINVAL);
        assert_non_null(strstr(err, "KAFKA_EVENTS_TOPIC"));
        /* The longest ticket topic still has room for ".events". */
        {
                char topic[128];
                memset(topic, 't', sizeof(topic) - 1);
                topic[sizeof(topic) - 1] = '\0';
                env_topic = topic;
                env_events = NULL;
                assert_int_equal(config_load_from(&cfg, lookup, err, sizeof(err)), 0);
                assert_int_equal(strlen(cfg.kafka_events_topic), 127 + 7);
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup(test_json_has_every_field, reset),
                cmocka_unit_test_setup(test_json_leaves_out_absent_fields, reset),
                cmocka_unit_test_setup(test_json_needs_a_type, reset),
                cmocka_unit_test_setup(test_slashes_are_not_escaped, reset),
                cmocka_unit_test_setup(test_emit_produces_keyed_by_tenant, reset),
                cmocka_unit_test_setup(test_emit_without_tenant_has_no_key, reset),
                cmocka_unit_test_setup(test_emit_ignores_failures_and_null_producer, reset),
                cmocka_unit_test_setup(test_log_line_has_the_journald_fields, reset),
                cmocka_unit_test_setup(test_note_joins_the_log_line, reset),
                cmocka_unit_test_setup(test_split_user, reset),
                cmocka_unit_test_setup(test_split_user_points_into_the_input, reset),
                cmocka_unit_test(test_events_topic_config),
        };

        setenv("LOG_TARGET", "stderr", 1);
        log_init("test_audit", LOG_INFO);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
