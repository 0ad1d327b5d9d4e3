/* Unit tests for lib/sandbox/admission.c: a lease acquire and the enqueue
 * of its new ticket. The lease scripts and Kafka are replaced at the link
 * seam (lease_acquire answers as configured, kafka_produce_sync records
 * what it was given, lease_ticket_cancel answers as its script would); the
 * ticket's message is the real lease_ticket_message. Checked: nothing is
 * produced for a grant, a conflict or a ticket that is not new; a new
 * ticket is produced keyed by its id, with the request's names; a produce
 * that fails takes the ticket back (UNAVAILABLE), unless a supervisor had
 * served it already (SERVED), and a cancel that cannot say is UNAVAILABLE. */
/* WRAP: -Wl,--wrap=lease_acquire -Wl,--wrap=kafka_produce_sync -Wl,--wrap=lease_ticket_cancel */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sandbox/admission.h"

#define TICKET "00112233445566778899aabbccddeeff"

static struct {
        int acquire_r;
        enum lease_outcome_kind kind;
        bool new_ticket;
        int produce_r, produce_calls;
        char produce_key[64], produce_payload[512];
        int cancel_r, cancel_calls;
        char cancel_ticket[64];
} F;

static struct broker_config cfg;
/* never dereferenced: kafka_produce_sync is wrapped */
static struct kafka_producer *const KAFKA = (struct kafka_producer *)&cfg;
static const struct lease_request LR = {
        .tenant = "acme", .user_id = "alice", .session_id = "s1", .mode = "exclusive", .pool_id = ""
};

static int setup(void **state)
{
        (void)state;
        memset(&F, 0, sizeof(F));
        return 0;
}

int __wrap_lease_acquire(struct redis_conn *c, const struct broker_config *bc,
                         const struct lease_request *req, struct lease_outcome *ret);
int __wrap_lease_acquire(struct redis_conn *c, const struct broker_config *bc,
                         const struct lease_request *req, struct lease_outcome *ret)
{
        (void)c;
        (void)bc;
        assert_ptr_equal(req, &LR);
        memset(ret, 0, sizeof(*ret));
        if (F.acquire_r)
                return F.acquire_r;
        ret->kind = F.kind;
        if (F.kind == LEASE_QUEUED) {
                snprintf(ret->ticket_id, sizeof(ret->ticket_id), "%s", TICKET);
                ret->position = 4;
                ret->new_ticket = F.new_ticket;
        }
        if (F.kind == LEASE_GRANTED)
                ret->lease = json_object_new_object(); /* owned by the outcome: cleared */
        return 0;
}

int __wrap_kafka_produce_sync(struct kafka_producer *p, const char *key, const char *payload,
                              size_t len);
int __wrap_kafka_produce_sync(struct kafka_producer *p, const char *key, const char *payload,
                              size_t len)
{
        assert_ptr_equal(p, KAFKA);
        assert_int_equal(strlen(payload), len);
        F.produce_calls++;
        snprintf(F.produce_key, sizeof(F.produce_key), "%s", key);
        snprintf(F.produce_payload, sizeof(F.produce_payload), "%s", payload);
        return F.produce_r;
}

int __wrap_lease_ticket_cancel(struct redis_conn *c, const char *ticket_id);
int __wrap_lease_ticket_cancel(struct redis_conn *c, const char *ticket_id)
{
        (void)c;
        F.cancel_calls++;
        snprintf(F.cancel_ticket, sizeof(F.cancel_ticket), "%s", ticket_id);
        return F.cancel_r;
}

static void grant_produces_nothing(void **state)
{
        struct admission_outcome out;

        (void)state;
        F.kind = LEASE_GRANTED;
        assert_int_equal(admission_acquire(NULL, KAFKA, &cfg, &LR, &out), 0);
        assert_int_equal(out.lease.kind, LEASE_GRANTED);
        assert_non_null(out.lease.lease);
        assert_int_equal(out.queue, ADMISSION_QUEUE_NONE);
        assert_int_equal(F.produce_calls + F.cancel_calls, 0);
        admission_outcome_clear(&out);
        assert_null(out.lease.lease);
}

static void a_ticket_that_is_not_new_is_not_produced_again(void **state)
{
        struct admission_outcome out;

        (void)state;
        F.kind = LEASE_QUEUED;
        F.new_ticket = false;
        assert_int_equal(admission_acquire(NULL, KAFKA, &cfg, &LR, &out), 0);
        assert_int_equal(out.lease.kind, LEASE_QUEUED);
        assert_int_equal(out.queue, ADMISSION_QUEUE_NONE);
        assert_int_equal(F.produce_calls, 0);
        F.kind = LEASE_CONFLICT;
        assert_int_equal(admission_acquire(NULL, KAFKA, &cfg, &LR, &out), 0);
        assert_int_equal(out.queue, ADMISSION_QUEUE_NONE);
        assert_int_equal(F.produce_calls, 0);
        admission_outcome_clear(&out);
}

static void a_new_ticket_is_produced_keyed_by_its_id(void **state)
{
        struct admission_outcome out;
        char id[33];

        (void)state;
        F.kind = LEASE_QUEUED;
        F.new_ticket = true;
        assert_int_equal(admission_acquire(NULL, KAFKA, &cfg, &LR, &out), 0);
        assert_int_equal(out.queue, ADMISSION_QUEUE_PRODUCED);
        assert_int_equal(out.lease.position, 4);
        assert_int_equal(F.produce_calls, 1);
        assert_string_equal(F.produce_key, TICKET);
        assert_int_equal(lease_ticket_message_id(F.produce_payload, strlen(F.produce_payload), id),
                         0);
        assert_string_equal(id, TICKET);
        assert_non_null(strstr(F.produce_payload, "\"userId\":\"alice\""));
        assert_non_null(strstr(F.produce_payload, "\"sessionId\":\"s1\""));
        assert_non_null(strstr(F.produce_payload, "\"tenant\":\"acme\""));
        assert_int_equal(F.cancel_calls, 0);
        admission_outcome_clear(&out);
}

static void an_unconfirmed_ticket_is_taken_back(void **state)
{
        struct admission_outcome out;

        (void)state;
        F.kind = LEASE_QUEUED;
        F.new_ticket = true;
        F.produce_r = -ETIMEDOUT;
        F.cancel_r = 0; /* removed from Redis's queue */
        assert_int_equal(admission_acquire(NULL, KAFKA, &cfg, &LR, &out), 0);
        assert_int_equal(out.queue, ADMISSION_QUEUE_UNAVAILABLE);
        assert_int_equal(out.produce_r, -ETIMEDOUT);
        assert_int_equal(F.cancel_calls, 1);
        assert_string_equal(F.cancel_ticket, TICKET);
        admission_outcome_clear(&out);
}

static void an_unconfirmed_ticket_a_supervisor_served_stands(void **state)
{
        struct admission_outcome out;

        (void)state;
        F.kind = LEASE_QUEUED;
        F.new_ticket = true;
        F.produce_r = -EIO;
        F.cancel_r = 1; /* already granted or expired by a supervisor */
        assert_int_equal(admission_acquire(NULL, KAFKA, &cfg, &LR, &out), 0);
        assert_int_equal(out.queue, ADMISSION_QUEUE_SERVED);
        assert_int_equal(out.produce_r, -EIO);
        admission_outcome_clear(&out);
}

static void a_cancel_that_cannot_say_is_unavailable(void **state)
{
        int produce_r = 0;

        (void)state;
        F.produce_r = -ENOBUFS;
        F.cancel_r = -EIO;
        assert_int_equal(admission_enqueue(NULL, KAFKA, &LR, TICKET, &produce_r),
                         ADMISSION_QUEUE_UNAVAILABLE);
        assert_int_equal(produce_r, -ENOBUFS);
        /* no producer at all: nothing is sent, the ticket taken back */
        F.produce_calls = 0;
        F.cancel_r = 0;
        assert_int_equal(admission_enqueue(NULL, NULL, &LR, TICKET, &produce_r),
                         ADMISSION_QUEUE_UNAVAILABLE);
        assert_int_equal(F.produce_calls, 0);
        assert_true(produce_r < 0);
}

static void an_acquire_error_is_returned(void **state)
{
        struct admission_outcome out;

        (void)state;
        F.acquire_r = -EIO;
        assert_int_equal(admission_acquire(NULL, KAFKA, &cfg, &LR, &out), -EIO);
        assert_int_equal(F.produce_calls, 0);
        admission_outcome_clear(&out);
}

#define T(f) cmocka_unit_test_setup(f, setup)

int main(void)
{
        const struct CMUnitTest tests[] = {
                T(grant_produces_nothing),
                T(a_ticket_that_is_not_new_is_not_produced_again),
                T(a_new_ticket_is_produced_keyed_by_its_id),
                T(an_unconfirmed_ticket_is_taken_back),
                T(an_unconfirmed_ticket_a_supervisor_served_stands),
                T(a_cancel_that_cannot_say_is_unavailable),
                T(an_acquire_error_is_returned),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
