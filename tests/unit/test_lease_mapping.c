/* Unit tests for lib/store/lease.c: the mapping of Redis script replies to lease
 * outcomes and lease objects, the Kafka ticket message, and the arguments
 * each operation hands to its script. Replies are built by hand; Redis is
 * replaced at the link seam by __wrap_redis_conn_script below. */
/* WRAP: -Wl,--wrap=redis_conn_script */
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
#include "core/json_input.h"
#include "store/lease.h"
#include "store/lease_reply.h"
#include "core/timeutil.h"
#include "reply_fake.h"

#define LEASE_ID "0123456789abcdef0123456789abcdef"
#define TICKET_ID "fedcba9876543210fedcba9876543210"
#define T_CREATED "1796212800123" /* 2026-12-02T12:00:00.123Z */
#define T_EXPIRES "1796212860123" /* one minute later */

/* The hash grant_lease() in lib/store/lua/common.lua writes, for an exclusive lease. */
static redisReply *lease_hash(void)
{
        return r_strs("leaseId", LEASE_ID, "userId", "u1", "sessionId", "s1", "mode", "exclusive",
                      "poolId", "", "slot", "ex:u1:s1", "seat", "", "provider", "none", "state",
                      "active", "createdAt", T_CREATED, "expiresAt", T_EXPIRES, NULL);
}

static const char exclusive_json[] =
        "{\"leaseId\":\"" LEASE_ID "\",\"userId\":\"u1\",\"sessionId\":\"s1\","
        "\"mode\":\"exclusive\",\"poolId\":null,\"seat\":null,\"sandboxId\":null,"
        "\"provider\":\"none\",\"workdir\":null,\"linuxUser\":null,"
        "\"createdAt\":\"2026-12-02T12:00:00.123Z\",\"expiresAt\":\"2026-12-02T12:01:00.123Z\","
        "\"expiresAtMs\":1796212860123}";

static const char *json_text(struct json_object *o)
{
        return json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
}

/* ---- lease_json_from_hash ---- */

static void test_hash_exclusive(void **state)
{
        redisReply *h = lease_hash();
        struct json_object *o = NULL;

        (void)state;
        assert_int_equal(lease_json_from_hash(h, &o), 0);
        assert_non_null(o);
        assert_string_equal(json_text(o), exclusive_json);
        json_put(o);
        reply_free(h);
}

static void test_hash_shared_with_extras(void **state)
{
        /* Status-typed strings count as strings; unknown fields are ignored;
         * the sandbox fields pass through. */
        redisReply *h = r_arr(20, r_str("leaseId"), r_str(LEASE_ID), r_status("userId"), r_str("u2"),
                              r_str("sessionId"), r_status("s2"), r_str("mode"),
                              r_str("multi_user_shared"), r_str("poolId"), r_str("p1"), r_str("seat"),
                              r_str("3"), r_str("sandboxId"), r_str("sbx-1"), r_str("workdir"),
                              r_str("/home/u2"), r_str("linuxUser"), r_str("u2"), r_str("expiresAt"),
                              r_str(T_EXPIRES));
        struct json_object *o = NULL;

        (void)state;
        assert_int_equal(lease_json_from_hash(h, &o), 0);
        assert_string_equal(json_text(o),
                            "{\"leaseId\":\"" LEASE_ID "\",\"userId\":\"u2\",\"sessionId\":\"s2\","
                            "\"mode\":\"multi_user_shared\",\"poolId\":\"p1\",\"seat\":3,"
                            "\"sandboxId\":\"sbx-1\",\"provider\":null,\"workdir\":\"\\/home\\/u2\","
                            "\"linuxUser\":\"u2\",\"createdAt\":null,"
                            "\"expiresAt\":\"2026-12-02T12:01:00.123Z\","
                            "\"expiresAtMs\":1796212860123}");
        json_put(o);
        reply_free(h);
}

static void test_hash_seat_and_times(void **state)
{
        static const struct {
                const char *seat, *created, *expires;
                const char *want_seat, *want_created, *want_expires;
        } cases[] = {
                { "1", "0", "0", "1", "\"1970-01-01T00:00:00.000Z\"", "\"1970-01-01T00:00:00.000Z\"" },
                { "0", "abc", "1000", "null", "null", "\"1970-01-01T00:00:01.000Z\"" },
                { "-2", "-1", "1000", "null", "null", "\"1970-01-01T00:00:01.000Z\"" },
                { "x", "12x", "1000", "null", "null", "\"1970-01-01T00:00:01.000Z\"" },
                /* Past year 9999: no ISO string, but the number survives. */
                { "64", "", "253402300800000", "64", "null", "null" },
        };
        (void)state;
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                redisReply *h = r_strs("leaseId", "l", "userId", "u", "sessionId", "s", "mode",
                                       "exclusive", "seat", cases[i].seat, "createdAt",
                                       cases[i].created, "expiresAt", cases[i].expires, NULL);
                struct json_object *o = NULL, *v;

                assert_int_equal(lease_json_from_hash(h, &o), 0);
                assert_true(json_object_object_get_ex(o, "seat", &v));
                assert_string_equal(json_object_to_json_string(v), cases[i].want_seat);
                assert_true(json_object_object_get_ex(o, "createdAt", &v));
                assert_string_equal(json_object_to_json_string(v), cases[i].want_created);
                assert_true(json_object_object_get_ex(o, "expiresAt", &v));
                assert_string_equal(json_object_to_json_string(v), cases[i].want_expires);
                assert_true(json_object_object_get_ex(o, "expiresAtMs", &v));
                assert_int_equal(json_object_get_int64(v), strtoll(cases[i].expires, NULL, 10));
                json_put(o);
                reply_free(h);
        }
}

static void expect_hash_eproto(redisReply *h)
{
        struct json_object *o = (struct json_object *)&o;

        assert_int_equal(lease_json_from_hash(h, &o), -EPROTO);
        assert_null(o);
        reply_free(h);
}

static void test_hash_missing_fields(void **state)
{
        static const char *const required[] = { "leaseId", "userId", "sessionId", "mode",
                                                "expiresAt" };
        (void)state;
        /* Drop each required field in turn (rename its key). */
        for (size_t i = 0; i < sizeof(required) / sizeof(required[0]); i++) {
                redisReply *h = lease_hash();
                for (size_t k = 0; k < h->elements; k += 2)
                        if (strcmp(h->element[k]->str, required[i]) == 0)
                                h->element[k]->str[0] = 'X';
                expect_hash_eproto(h);
        }
}

static void test_hash_bad_expires(void **state)
{
        static const char *const bad[] = { "", "abc", "-1", "-1000", "12x", "1.5", NULL };

        (void)state;
        for (const char *const *b = bad; *b; b++)
                expect_hash_eproto(r_strs("leaseId", "l", "userId", "u", "sessionId", "s", "mode",
                                          "exclusive", "expiresAt", *b, NULL));
}

static void test_hash_malformed(void **state)
{
        (void)state;
        expect_hash_eproto(NULL);
        expect_hash_eproto(r_arr(0));
        expect_hash_eproto(r_str("leaseId"));
        expect_hash_eproto(r_int(1));
        expect_hash_eproto(r_nil());
        expect_hash_eproto(r_strtype(REDIS_REPLY_ERROR, "ERR"));
        /* Odd element count: a key without a value. */
        expect_hash_eproto(r_strs("leaseId", "l", "userId", "u", "sessionId", "s", "mode",
                                  "exclusive", "expiresAt", "1", "seat", NULL));
        /* Wrong element types: integer value, nil value, integer key, nested array. */
        expect_hash_eproto(r_arr(10, r_str("leaseId"), r_str("l"), r_str("userId"), r_str("u"),
                                 r_str("sessionId"), r_str("s"), r_str("mode"), r_str("exclusive"),
                                 r_str("expiresAt"), r_int(1000)));
        expect_hash_eproto(r_arr(10, r_str("leaseId"), r_nil(), r_str("userId"), r_str("u"),
                                 r_str("sessionId"), r_str("s"), r_str("mode"), r_str("exclusive"),
                                 r_str("expiresAt"), r_str("1000")));
        expect_hash_eproto(r_arr(12, r_str("leaseId"), r_str("l"), r_str("userId"), r_str("u"),
                                 r_str("sessionId"), r_str("s"), r_str("mode"), r_str("exclusive"),
                                 r_str("expiresAt"), r_str("1000"), r_int(7), r_str("x")));
        expect_hash_eproto(r_arr(12, r_str("leaseId"), r_str("l"), r_str("userId"), r_str("u"),
                                 r_str("sessionId"), r_str("s"), r_str("mode"), r_str("exclusive"),
                                 r_str("expiresAt"), r_str("1000"), r_str("seat"),
                                 r_strs("1", NULL)));
}

/* ---- lease_outcome_from_reply ---- */

/* Map r (consumed) expecting success; *o must be cleared by the caller. */
static void map_ok(redisReply *r, struct lease_outcome *o)
{
        memset(o, 0xa5, sizeof(*o));
        assert_int_equal(lease_outcome_from_reply(r, o), 0);
        reply_free(r);
}

static void expect_outcome_eproto(redisReply *r)
{
        struct lease_outcome o;

        memset(&o, 0xa5, sizeof(o));
        assert_int_equal(lease_outcome_from_reply(r, &o), -EPROTO);
        /* Whatever was filled in, nothing is owned. */
        assert_null(o.lease);
        lease_outcome_clear(&o);
        reply_free(r);
}

/* A lease being provisioned: the caller learns it waits, and on which
 * ticket, though neither is in the API's lease object. */
static void test_outcome_granted_provisioning(void **state)
{
        struct lease_outcome o;

        (void)state;
        map_ok(r_arr(2, r_str("granted"),
                     r_strs("leaseId", LEASE_ID, "userId", "u1", "sessionId", "s1", "mode",
                            "exclusive", "poolId", "", "provider", "none", "state",
                            "provisioning", "ticketId", TICKET_ID, "createdAt", T_CREATED,
                            "expiresAt", T_EXPIRES, NULL)), &o);
        assert_int_equal(o.kind, LEASE_GRANTED);
        assert_true(o.provisioning);
        assert_string_equal(o.ticket_id, TICKET_ID);
        assert_string_equal(json_text(o.lease), exclusive_json);
        lease_outcome_clear(&o);

        map_ok(r_arr(2, r_str("granted"), lease_hash()), &o);
        assert_false(o.provisioning);
        assert_string_equal(o.ticket_id, "");
        lease_outcome_clear(&o);
}

static void test_outcome_granted(void **state)
{
        struct lease_outcome o;

        (void)state;
        /* acquire/poll say 'granted', heartbeat says 'ok'. */
        map_ok(r_arr(2, r_str("granted"), lease_hash()), &o);
        assert_int_equal(o.kind, LEASE_GRANTED);
        assert_non_null(o.lease);
        assert_string_equal(json_text(o.lease), exclusive_json);
        lease_outcome_clear(&o);
        assert_null(o.lease);

        map_ok(r_arr(2, r_status("ok"), lease_hash()), &o);
        assert_int_equal(o.kind, LEASE_GRANTED);
        assert_string_equal(json_text(o.lease), exclusive_json);
        lease_outcome_clear(&o);
}

static void test_outcome_granted_malformed(void **state)
{
        (void)state;
        expect_outcome_eproto(r_arr(1, r_str("granted")));
        expect_outcome_eproto(r_arr(3, r_str("granted"), lease_hash(), r_str("x")));
        expect_outcome_eproto(r_arr(2, r_str("granted"), r_arr(0)));
        expect_outcome_eproto(r_arr(2, r_str("granted"), r_nil()));
        expect_outcome_eproto(r_arr(2, r_str("granted"), r_str(LEASE_ID)));
        expect_outcome_eproto(r_arr(2, r_str("ok"), r_strs("leaseId", "l", NULL)));
        expect_outcome_eproto(r_arr(2, r_str("granted"), NULL));
}

static void test_outcome_queued_acquire(void **state)
{
        struct lease_outcome o;

        (void)state;
        map_ok(r_arr(4, r_str("queued"), r_str(TICKET_ID), r_int(3), r_str("new")), &o);
        assert_int_equal(o.kind, LEASE_QUEUED);
        assert_string_equal(o.ticket_id, TICKET_ID);
        assert_int_equal(o.position, 3);
        assert_true(o.new_ticket);
        assert_null(o.lease);
        lease_outcome_clear(&o);

        map_ok(r_arr(4, r_str("queued"), r_str(TICKET_ID), r_str("17"), r_str("existing")), &o);
        assert_int_equal(o.kind, LEASE_QUEUED);
        assert_int_equal(o.position, 17);
        assert_false(o.new_ticket);
        lease_outcome_clear(&o);
}

static void test_outcome_queued_acquire_malformed(void **state)
{
        char long_id[34];

        (void)state;
        memset(long_id, 'a', 33);
        long_id[33] = '\0';
        /* Position 0 is ticket_position()'s "not in the queue". */
        expect_outcome_eproto(r_arr(4, r_str("queued"), r_str(TICKET_ID), r_int(0), r_str("new")));
        expect_outcome_eproto(r_arr(4, r_str("queued"), r_str(TICKET_ID), r_int(-1), r_str("new")));
        expect_outcome_eproto(r_arr(4, r_str("queued"), r_str(TICKET_ID), r_str("x"), r_str("new")));
        expect_outcome_eproto(r_arr(4, r_str("queued"), r_str(TICKET_ID), r_nil(), r_str("new")));
        expect_outcome_eproto(r_arr(4, r_str("queued"), r_str(TICKET_ID), r_arr(0), r_str("new")));
        expect_outcome_eproto(r_arr(4, r_str("queued"), r_str(long_id), r_int(1), r_str("new")));
        expect_outcome_eproto(r_arr(4, r_str("queued"), r_int(5), r_int(1), r_str("new")));
        expect_outcome_eproto(r_arr(4, r_str("queued"), r_nil(), r_int(1), r_str("new")));
        expect_outcome_eproto(r_arr(3, r_str("queued"), r_str(TICKET_ID), r_int(1)));
        expect_outcome_eproto(
                r_arr(5, r_str("queued"), r_str(TICKET_ID), r_int(1), r_str("new"), r_str("x")));
}

static void test_outcome_queued_poll(void **state)
{
        struct lease_outcome o;

        (void)state;
        map_ok(r_arr(2, r_str("queued"), r_int(1)), &o);
        assert_int_equal(o.kind, LEASE_QUEUED);
        assert_int_equal(o.position, 1);
        assert_string_equal(o.ticket_id, "");
        assert_false(o.new_ticket);
        lease_outcome_clear(&o);

        expect_outcome_eproto(r_arr(2, r_str("queued"), r_int(0)));
        expect_outcome_eproto(r_arr(2, r_str("queued"), r_str("")));
        expect_outcome_eproto(r_arr(2, r_str("queued"), r_nil()));
        expect_outcome_eproto(r_arr(1, r_str("queued")));
}

static void test_outcome_conflict(void **state)
{
        struct lease_outcome o;
        char mode32[33];

        (void)state;
        map_ok(r_arr(3, r_str("conflict"), r_str("user_shared"), r_str("")), &o);
        assert_int_equal(o.kind, LEASE_CONFLICT);
        assert_string_equal(o.conflict_mode, "user_shared");
        lease_outcome_clear(&o);

        /* Lua false (a missing poolId) arrives as nil. */
        map_ok(r_arr(3, r_str("conflict"), r_str("multi_user_shared"), r_nil()), &o);
        assert_string_equal(o.conflict_mode, "multi_user_shared");
        lease_outcome_clear(&o);

        memset(mode32, 'm', 32);
        mode32[32] = '\0';
        expect_outcome_eproto(r_arr(3, r_str("conflict"), r_str(mode32), r_str("")));
        mode32[31] = '\0';
        map_ok(r_arr(3, r_str("conflict"), r_str(mode32), r_str("")), &o);
        assert_string_equal(o.conflict_mode, mode32);
        lease_outcome_clear(&o);

        expect_outcome_eproto(r_arr(3, r_str("conflict"), r_nil(), r_str("")));
        expect_outcome_eproto(r_arr(3, r_str("conflict"), r_int(1), r_str("")));
        expect_outcome_eproto(r_arr(2, r_str("conflict"), r_str("exclusive")));
        expect_outcome_eproto(r_arr(1, r_str("conflict")));
}

static void test_outcome_released(void **state)
{
        struct lease_outcome o;

        (void)state;
        map_ok(r_arr(3, r_str("released"), r_str(LEASE_ID), r_int(1)), &o);
        assert_int_equal(o.kind, LEASE_RELEASED);
        assert_string_equal(o.lease_id, LEASE_ID);
        assert_true(o.slot_freed);
        lease_outcome_clear(&o);

        map_ok(r_arr(3, r_str("released"), r_str(LEASE_ID), r_int(0)), &o);
        assert_false(o.slot_freed);
        lease_outcome_clear(&o);
        map_ok(r_arr(3, r_str("released"), r_str(LEASE_ID), r_nil()), &o);
        assert_false(o.slot_freed);
        lease_outcome_clear(&o);

        expect_outcome_eproto(r_arr(3, r_str("released"), r_nil(), r_int(1)));
        expect_outcome_eproto(r_arr(3, r_str("released"), r_str(LEASE_ID "0"), r_int(1)));
        expect_outcome_eproto(r_arr(2, r_str("released"), r_str(LEASE_ID)));
        expect_outcome_eproto(
                r_arr(4, r_str("released"), r_str(LEASE_ID), r_int(1), r_int(1)));
}

static void test_outcome_notfound_expired(void **state)
{
        struct lease_outcome o;

        (void)state;
        map_ok(r_arr(1, r_str("notfound")), &o);
        assert_int_equal(o.kind, LEASE_NOT_FOUND);
        assert_null(o.lease);
        lease_outcome_clear(&o);
        map_ok(r_arr(1, r_status("expired")), &o);
        assert_int_equal(o.kind, LEASE_EXPIRED);
        assert_null(o.lease);
        lease_outcome_clear(&o);

        expect_outcome_eproto(r_arr(2, r_str("notfound"), r_str("x")));
        expect_outcome_eproto(r_arr(2, r_str("expired"), r_nil()));
}

static void test_outcome_provisioning_failed(void **state)
{
        struct lease_outcome o;
        char long_msg[400];

        (void)state;
        map_ok(r_arr(1, r_str("provisioning")), &o);
        assert_int_equal(o.kind, LEASE_PROVISIONING);
        assert_null(o.lease);
        lease_outcome_clear(&o);

        map_ok(r_arr(2, r_str("failed"), r_str("image pull failed")), &o);
        assert_int_equal(o.kind, LEASE_FAILED);
        assert_string_equal(o.message, "image pull failed");
        lease_outcome_clear(&o);

        /* poll.lua sends '' when the ticket has no message. */
        map_ok(r_arr(2, r_str("failed"), r_str("")), &o);
        assert_int_equal(o.kind, LEASE_FAILED);
        assert_string_equal(o.message, "");
        lease_outcome_clear(&o);
        map_ok(r_arr(2, r_str("failed"), r_nil()), &o);
        assert_string_equal(o.message, "");
        lease_outcome_clear(&o);

        /* A long message is cut to the buffer, NUL-terminated. */
        memset(long_msg, 'm', sizeof(long_msg) - 1);
        long_msg[sizeof(long_msg) - 1] = '\0';
        map_ok(r_arr(2, r_str("failed"), r_str(long_msg)), &o);
        assert_int_equal(strlen(o.message), sizeof(o.message) - 1);
        lease_outcome_clear(&o);

        expect_outcome_eproto(r_arr(2, r_str("provisioning"), r_str("x")));
        expect_outcome_eproto(r_arr(1, r_str("failed")));
        expect_outcome_eproto(r_arr(3, r_str("failed"), r_str("a"), r_str("b")));
}

/* heartbeat.lua's answer for a lease whose sandbox was lost. */
static void test_outcome_lost(void **state)
{
        struct lease_outcome o;
        char long_id[80];

        (void)state;
        map_ok(r_arr(5, r_str("lost"), r_str(LEASE_ID), r_str("0123456789abcdef0123456789abcdef"),
                     r_str("OOM_KILLED"), r_str("the sandbox ran out of memory")), &o);
        assert_int_equal(o.kind, LEASE_LOST);
        assert_string_equal(o.lease_id, LEASE_ID);
        assert_string_equal(o.sandbox_id, "0123456789abcdef0123456789abcdef");
        assert_string_equal(o.reason, "OOM_KILLED");
        assert_string_equal(o.message, "the sandbox ran out of memory");
        assert_null(o.lease);
        lease_outcome_clear(&o);

        /* an empty message (a record without one) maps as "" */
        map_ok(r_arr(5, r_str("lost"), r_str(LEASE_ID), r_str("s"), r_str("SANDBOX_GONE"), r_str("")), &o);
        assert_string_equal(o.message, "");
        lease_outcome_clear(&o);

        /* ids that do not fit, missing parts, non-strings: refused */
        memset(long_id, 'a', sizeof(long_id) - 1);
        long_id[sizeof(long_id) - 1] = '\0';
        expect_outcome_eproto(r_arr(5, r_str("lost"), r_str(long_id), r_str("s"), r_str("R"), r_str("m")));
        expect_outcome_eproto(r_arr(5, r_str("lost"), r_str(LEASE_ID), r_str(long_id), r_str("R"), r_str("m")));
        expect_outcome_eproto(r_arr(4, r_str("lost"), r_str(LEASE_ID), r_str("s"), r_str("R")));
        expect_outcome_eproto(r_arr(5, r_str("lost"), r_str(LEASE_ID), r_str("s"), r_nil(), r_str("m")));
        expect_outcome_eproto(r_arr(5, r_str("lost"), r_nil(), r_str("s"), r_str("R"), r_str("m")));
}

static void test_outcome_malformed(void **state)
{
        (void)state;
        expect_outcome_eproto(NULL);
        expect_outcome_eproto(r_arr(0));
        expect_outcome_eproto(r_nil());
        expect_outcome_eproto(r_int(1));
        expect_outcome_eproto(r_str("granted"));
        expect_outcome_eproto(r_status("OK"));
        expect_outcome_eproto(r_strtype(REDIS_REPLY_ERROR, "ERR boom"));
        expect_outcome_eproto(r_arr(1, r_str("bogus")));
        expect_outcome_eproto(r_arr(1, r_str("")));
        expect_outcome_eproto(r_arr(1, r_str("NOTFOUND")));
        expect_outcome_eproto(r_arr(1, r_strtype(REDIS_REPLY_ERROR, "notfound")));
        expect_outcome_eproto(r_arr(1, r_int(1)));
        expect_outcome_eproto(r_arr(1, r_nil()));
        expect_outcome_eproto(r_arr(1, r_arr(1, r_str("notfound"))));
        expect_outcome_eproto(r_arr(2, r_nil(), lease_hash()));
        expect_outcome_eproto(r_arr(1, NULL));
}

static void test_outcome_clear(void **state)
{
        struct lease_outcome o;

        (void)state;
        map_ok(r_arr(2, r_str("granted"), lease_hash()), &o);
        lease_outcome_clear(&o);
        assert_null(o.lease);
        assert_int_equal(o.kind, 0);
        assert_string_equal(o.ticket_id, "");
        lease_outcome_clear(&o); /* twice is harmless */
}

/* ---- Kafka ticket message ---- */

static void test_ticket_message(void **state)
{
        const struct lease_request req = { "acme", "u1", "s1", "exclusive", "", NULL, false };
        struct json_object *o, *v;
        char *msg = NULL, id[33];
        int64_t before = timeutil_now_ms(), after;

        (void)state;
        assert_int_equal(lease_ticket_message(&req, TICKET_ID, &msg), 0);
        after = timeutil_now_ms();
        assert_non_null(msg);
        o = json_tokener_parse(msg);
        assert_non_null(o);
        assert_true(json_object_object_get_ex(o, "ticketId", &v));
        assert_string_equal(json_object_get_string(v), TICKET_ID);
        assert_true(json_object_object_get_ex(o, "userId", &v));
        assert_string_equal(json_object_get_string(v), "u1");
        assert_true(json_object_object_get_ex(o, "sessionId", &v));
        assert_string_equal(json_object_get_string(v), "s1");
        assert_true(json_object_object_get_ex(o, "mode", &v));
        assert_string_equal(json_object_get_string(v), "exclusive");
        assert_true(json_object_object_get_ex(o, "poolId", &v));
        assert_null(v);
        assert_true(json_object_object_get_ex(o, "enqueuedAtMs", &v));
        assert_in_range(json_object_get_int64(v), before, after);
        json_put(o);

        /* Round trip: the supervisor reads the id back. */
        memset(id, 'X', sizeof(id));
        assert_int_equal(lease_ticket_message_id(msg, strlen(msg), id), 0);
        assert_string_equal(id, TICKET_ID);
        free(msg);
}

static void test_ticket_message_pool(void **state)
{
        const struct lease_request req = { "acme", "u.2@x", "s-2", "multi_user_shared", "pool_1", NULL, false };
        struct json_object *o, *v;
        char *msg = NULL;

        (void)state;
        assert_int_equal(lease_ticket_message(&req, TICKET_ID, &msg), 0);
        o = json_tokener_parse(msg);
        assert_non_null(o);
        assert_true(json_object_object_get_ex(o, "poolId", &v));
        assert_string_equal(json_object_get_string(v), "pool_1");
        assert_true(json_object_object_get_ex(o, "mode", &v));
        assert_string_equal(json_object_get_string(v), "multi_user_shared");
        json_put(o);
        free(msg);

        /* A NULL pool is the same as "". */
        const struct lease_request nopool = { "acme", "u", "s", "user_shared", NULL, NULL, false };
        assert_int_equal(lease_ticket_message(&nopool, TICKET_ID, &msg), 0);
        assert_non_null(strstr(msg, "\"poolId\":null"));
        free(msg);
}

static void expect_message_id_bad(const char *payload, size_t len)
{
        char id[34];

        memset(id, 'X', sizeof(id));
        assert_int_equal(lease_ticket_message_id(payload, len, id), -EINVAL);
        assert_int_equal(id[0], 'X');
}

static void test_ticket_message_id_bad(void **state)
{
        static const char *const bad[] = {
                "",
                "not json",
                "[]",
                "{}",
                "{\"ticketId\":null}",
                "{\"ticketId\":1}",
                "{\"ticketId\":\"\"}",
                "{\"ticketId\":\"0123456789abcdef0123456789abcde\"}",   /* 31 */
                "{\"ticketId\":\"0123456789abcdef0123456789abcdef0\"}", /* 33 */
                "{\"ticketId\":\"0123456789abcdef/123456789abcdef\"}",
                "{\"ticketId\":\"0123456789abcdef\\u00003456789abcdef\"}",
                "{\"ticketId\":\"" TICKET_ID "\"} trailing",
                NULL,
        };
        static const char ok[] = "{\"ticketId\":\"" TICKET_ID "\"}";
        char id[33];

        (void)state;
        for (const char *const *b = bad; *b; b++)
                expect_message_id_bad(*b, strlen(*b));
        /* A length that cuts the payload short. */
        expect_message_id_bad(ok, sizeof(ok) - 3);
        assert_int_equal(lease_ticket_message_id(ok, sizeof(ok) - 1, id), 0);
        assert_string_equal(id, TICKET_ID);
}

/* ---- operations, with redis_conn_script replaced ---- */

#define FAKE_MAX_ARGS 32

/* What the last script call received, and what it answers. */
static struct {
        int calls;
        enum lua_script_id id;
        int argc;
        char argv[FAKE_MAX_ARGS][80];
        int rc;            /* returned by the fake */
        redisReply *reply; /* handed to the caller when rc == 0 */
} fake;

int __wrap_redis_conn_script(struct redis_conn *c, enum lua_script_id id, int argc,
                             const char **argv, redisReply **ret);

int __wrap_redis_conn_script(struct redis_conn *c, enum lua_script_id id, int argc,
                             const char **argv, redisReply **ret)
{
        (void)c;
        fake.calls++;
        fake.id = id;
        fake.argc = argc;
        assert_in_range(argc, 0, FAKE_MAX_ARGS);
        for (int i = 0; i < argc; i++) {
                assert_non_null(argv[i]);
                assert_true(strlen(argv[i]) < sizeof(fake.argv[i]));
                strcpy(fake.argv[i], argv[i]);
        }
        *ret = NULL;
        if (fake.rc < 0) {
                reply_free(fake.reply);
                fake.reply = NULL;
                return fake.rc;
        }
        *ret = fake.reply;
        fake.reply = NULL;
        return 0;
}

static void fake_answer(int rc, redisReply *reply)
{
        fake.rc = rc;
        fake.reply = reply;
}

static struct broker_config test_cfg;

static const char *no_env(const char *name)
{
        (void)name;
        return NULL;
}

static int fake_setup(void **state)
{
        char err[128];

        (void)state;
        memset(&fake, 0, sizeof(fake));
        assert_int_equal(config_load_from(&test_cfg, no_env, err, sizeof(err)), 0);
        return 0;
}

static int fake_teardown(void **state)
{
        (void)state;
        /* A reply the code under test never asked for. */
        reply_free(fake.reply);
        fake.reply = NULL;
        return 0;
}

static void assert_hex_id(const char *s)
{
        assert_int_equal(strlen(s), 32);
        assert_int_equal(strspn(s, "0123456789abcdef"), 32);
}

static void test_acquire_args(void **state)
{
        const struct lease_request req = { "acme", "u1", "s1", "multi_user_shared", "pool-9", NULL, false };
        struct lease_outcome o;

        (void)state;
        test_cfg.capacity = 7;
        test_cfg.lease_ttl_ms = 61000;
        test_cfg.ticket_ttl_ms = 31000;
        test_cfg.pool_seats = 5;
        strcpy(test_cfg.provider, "docker");
        fake_answer(0, r_arr(4, r_str("queued"), r_str(TICKET_ID), r_int(2), r_str("new")));
        assert_int_equal(lease_acquire(NULL, &test_cfg, &req, &o), 0);
        assert_int_equal(fake.calls, 1);
        assert_int_equal(fake.id, LUA_ACQUIRE);
        /* lib/store/lua/acquire.lua: ARGV[2..15] (the prefix is added by redis_conn). */
        assert_int_equal(fake.argc, 14);
        /* users and pools go to Redis scoped by their tenant */
        assert_string_equal(fake.argv[0], "acme/u1");
        assert_string_equal(fake.argv[1], "s1");
        assert_string_equal(fake.argv[2], "multi_user_shared");
        assert_string_equal(fake.argv[3], "acme/pool-9");
        assert_string_equal(fake.argv[4], "7");
        assert_string_equal(fake.argv[5], "61000");
        assert_string_equal(fake.argv[6], "31000");
        assert_string_equal(fake.argv[7], "5");
        assert_hex_id(fake.argv[8]);
        assert_hex_id(fake.argv[9]);
        assert_string_not_equal(fake.argv[8], fake.argv[9]);
        assert_string_equal(fake.argv[10], "docker");
        assert_string_equal(fake.argv[11], "");  /* no OpenSandbox record */
        assert_string_equal(fake.argv[13], "0"); /* the supervisors make the sandbox */

        assert_int_equal(o.kind, LEASE_QUEUED);
        assert_string_equal(o.ticket_id, TICKET_ID);
        assert_int_equal(o.position, 2);
        assert_true(o.new_ticket);
        lease_outcome_clear(&o);
}

static void test_acquire_fresh_ids(void **state)
{
        const struct lease_request req = { "acme", "u1", "s1", "exclusive", "", NULL, false };
        struct lease_outcome o;
        char first[2][80];

        (void)state;
        fake_answer(0, r_arr(2, r_str("granted"), lease_hash()));
        assert_int_equal(lease_acquire(NULL, &test_cfg, &req, &o), 0);
        assert_int_equal(o.kind, LEASE_GRANTED);
        assert_string_equal(json_text(o.lease), exclusive_json);
        lease_outcome_clear(&o);
        memcpy(first, &fake.argv[8], sizeof(first));
        assert_string_equal(fake.argv[3], "");
        assert_string_equal(fake.argv[4], "10");
        assert_string_equal(fake.argv[10], "none");

        fake_answer(0, r_arr(1, r_str("notfound")));
        lease_acquire(NULL, &test_cfg, &req, &o);
        lease_outcome_clear(&o);
        assert_string_not_equal(fake.argv[8], first[0]);
        assert_string_not_equal(fake.argv[9], first[1]);
}

static void test_acquire_errors(void **state)
{
        static const int errs[] = { -EIO, -EPROTO, -ENOMEM, -E2BIG };
        const struct lease_request req = { "acme", "u1", "s1", "exclusive", "", NULL, false };
        struct lease_outcome o;

        (void)state;
        /* Transport errors pass through unchanged, with nothing owned. */
        for (size_t i = 0; i < sizeof(errs) / sizeof(errs[0]); i++) {
                fake_answer(errs[i], NULL);
                memset(&o, 0xa5, sizeof(o));
                assert_int_equal(lease_acquire(NULL, &test_cfg, &req, &o), errs[i]);
                assert_null(o.lease);
                assert_int_equal(o.kind, 0);
        }
        /* A reply that does not map is -EPROTO; the outcome is cleared and
         * the reply freed (the sanitizer build checks the latter). */
        fake_answer(0, r_arr(2, r_str("granted"), r_strs("leaseId", "l", NULL)));
        memset(&o, 0xa5, sizeof(o));
        assert_int_equal(lease_acquire(NULL, &test_cfg, &req, &o), -EPROTO);
        assert_null(o.lease);
        assert_int_equal(o.kind, 0);

        fake_answer(0, r_arr(4, r_str("queued"), r_str(TICKET_ID), r_int(0), r_str("new")));
        assert_int_equal(lease_acquire(NULL, &test_cfg, &req, &o), -EPROTO);
        assert_string_equal(o.ticket_id, "");
        assert_int_equal(o.position, 0);

        fake_answer(0, r_strtype(REDIS_REPLY_STATUS, "OK"));
        assert_int_equal(lease_acquire(NULL, &test_cfg, &req, &o), -EPROTO);
        fake_answer(0, r_arr(3, r_str("conflict"), r_str("user_shared"), r_str("")));
        assert_int_equal(lease_acquire(NULL, &test_cfg, &req, &o), 0);
        assert_int_equal(o.kind, LEASE_CONFLICT);
        assert_string_equal(o.conflict_mode, "user_shared");
        lease_outcome_clear(&o);
}

static void test_poll(void **state)
{
        struct lease_outcome o;

        (void)state;
        test_cfg.ticket_ttl_ms = 45000;
        fake_answer(0, r_arr(2, r_str("queued"), r_int(4)));
        assert_int_equal(lease_poll(NULL, &test_cfg, "acme", TICKET_ID, &o), 0);
        assert_int_equal(fake.id, LUA_POLL);
        assert_int_equal(fake.argc, 3);
        assert_string_equal(fake.argv[0], TICKET_ID);
        assert_string_equal(fake.argv[1], "45000");
        assert_string_equal(fake.argv[2], "acme");
        assert_int_equal(o.kind, LEASE_QUEUED);
        assert_int_equal(o.position, 4);
        /* The poll reply has no id: the outcome carries the caller's. */
        assert_string_equal(o.ticket_id, TICKET_ID);
        lease_outcome_clear(&o);

        fake_answer(0, r_arr(1, r_str("expired")));
        assert_int_equal(lease_poll(NULL, &test_cfg, "acme", TICKET_ID, &o), 0);
        assert_int_equal(o.kind, LEASE_EXPIRED);
        assert_string_equal(o.ticket_id, TICKET_ID);
        lease_outcome_clear(&o);

        fake_answer(0, r_arr(2, r_str("granted"), lease_hash()));
        assert_int_equal(lease_poll(NULL, &test_cfg, "acme", TICKET_ID, &o), 0);
        assert_int_equal(o.kind, LEASE_GRANTED);
        assert_non_null(o.lease);
        lease_outcome_clear(&o);

        fake_answer(-EIO, NULL);
        assert_int_equal(lease_poll(NULL, &test_cfg, "acme", TICKET_ID, &o), -EIO);
        assert_string_equal(o.ticket_id, "");
        fake_answer(0, r_arr(2, r_str("queued"), r_int(0)));
        assert_int_equal(lease_poll(NULL, &test_cfg, "acme", TICKET_ID, &o), -EPROTO);
        assert_string_equal(o.ticket_id, "");
}

static void test_heartbeat(void **state)
{
        struct lease_outcome o;

        (void)state;
        fake_answer(0, r_arr(2, r_str("ok"), lease_hash()));
        assert_int_equal(lease_heartbeat(NULL, &test_cfg, "acme", LEASE_ID, NULL, NULL, &o), 0);
        assert_int_equal(fake.id, LUA_HEARTBEAT);
        assert_int_equal(fake.argc, 5);
        assert_string_equal(fake.argv[0], LEASE_ID);
        assert_string_equal(fake.argv[1], "");
        assert_string_equal(fake.argv[2], "");
        assert_string_equal(fake.argv[3], "60000");
        assert_string_equal(fake.argv[4], "acme");
        assert_int_equal(o.kind, LEASE_GRANTED);
        lease_outcome_clear(&o);

        fake_answer(0, r_arr(1, r_str("notfound")));
        assert_int_equal(lease_heartbeat(NULL, &test_cfg, "acme", NULL, "u1", "s1", &o), 0);
        assert_string_equal(fake.argv[0], "");
        assert_string_equal(fake.argv[1], "acme/u1");
        assert_string_equal(fake.argv[2], "s1");
        assert_int_equal(o.kind, LEASE_NOT_FOUND);
        lease_outcome_clear(&o);

        fake_answer(-EIO, NULL);
        assert_int_equal(lease_heartbeat(NULL, &test_cfg, "acme", NULL, "u1", "s1", &o), -EIO);
}

static void test_release(void **state)
{
        /* lib/store/lua/release.lua: userId, sessionId, sandbox action, reason. */
        static const struct {
                const char *policy, *reason, *action, *why;
        } cases[] = {
                { "stop_keep", "idle", "stop", "RELEASED_IDLE" },
                { "stop_keep", "deleted", "remove", "RELEASED_DELETED" },
                { "delete", "idle", "remove", "RELEASED_IDLE" },
                { "delete", "deleted", "remove", "RELEASED_DELETED" },
        };
        struct lease_outcome o;

        (void)state;
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                strcpy(test_cfg.idle_policy, cases[i].policy);
                fake_answer(0, r_arr(3, r_str("released"), r_str(LEASE_ID), r_int(1)));
                assert_int_equal(lease_release(NULL, &test_cfg, "acme", "u1", "s1", cases[i].reason, &o), 0);
                assert_int_equal(fake.id, LUA_RELEASE);
                assert_int_equal(fake.argc, 4);
                assert_string_equal(fake.argv[0], "acme/u1");
                assert_string_equal(fake.argv[1], "s1");
                assert_string_equal(fake.argv[2], cases[i].action);
                assert_string_equal(fake.argv[3], cases[i].why);
                assert_int_equal(o.kind, LEASE_RELEASED);
                assert_string_equal(o.lease_id, LEASE_ID);
                assert_true(o.slot_freed);
                lease_outcome_clear(&o);
        }

        fake_answer(0, r_arr(1, r_str("notfound")));
        assert_int_equal(lease_release(NULL, &test_cfg, "acme", "u1", "s1", "idle", &o), 0);
        assert_int_equal(o.kind, LEASE_NOT_FOUND);
        fake_answer(0, r_arr(3, r_str("released"), r_int(9), r_int(1)));
        assert_int_equal(lease_release(NULL, &test_cfg, "acme", "u1", "s1", "idle", &o), -EPROTO);
        assert_string_equal(o.lease_id, "");
        fake_answer(-EIO, NULL);
        assert_int_equal(lease_release(NULL, &test_cfg, "acme", "u1", "s1", "deleted", &o), -EIO);
}

static void test_ticket_cancel(void **state)
{
        (void)state;
        fake_answer(0, r_arr(1, r_str("cancelled")));
        assert_int_equal(lease_ticket_cancel(NULL, TICKET_ID), 0);
        assert_int_equal(fake.id, LUA_CANCEL);
        assert_int_equal(fake.argc, 1);
        assert_string_equal(fake.argv[0], TICKET_ID);

        fake_answer(0, r_arr(1, r_str("notqueued")));
        assert_int_equal(lease_ticket_cancel(NULL, TICKET_ID), 1);
        fake_answer(0, r_arr(0));
        assert_int_equal(lease_ticket_cancel(NULL, TICKET_ID), 1);
        fake_answer(0, r_nil());
        assert_int_equal(lease_ticket_cancel(NULL, TICKET_ID), 1);
        fake_answer(-EIO, NULL);
        assert_int_equal(lease_ticket_cancel(NULL, TICKET_ID), -EIO);
}

static void test_status(void **state)
{
        struct json_object *o = (struct json_object *)&o;

        (void)state;
        test_cfg.capacity = 4;
        fake_answer(0, r_arr(4, r_int(2), r_int(3), r_int(1),
                             r_strs("exclusive:slots", "1", "exclusive:leases", "1",
                                    "user_shared:slots", "1", "user_shared:leases", "2",
                                    "multi_user_shared:slotsX", "9", "bogus", "5", NULL)));
        assert_int_equal(lease_status(NULL, &test_cfg, &o), 0);
        assert_int_equal(fake.id, LUA_STATUS);
        assert_int_equal(fake.argc, 0);
        assert_string_equal(json_text(o),
                            "{\"capacity\":4,\"activeSlots\":2,\"activeLeases\":3,\"queueDepth\":1,"
                            "\"provider\":\"none\",\"modes\":{"
                            "\"exclusive\":{\"slots\":1,\"leases\":1},"
                            "\"user_shared\":{\"slots\":1,\"leases\":2},"
                            "\"multi_user_shared\":{\"slots\":0,\"leases\":0}}}");
        json_put(o);

        fake_answer(0, r_arr(3, r_int(2), r_int(3), r_int(1)));
        assert_int_equal(lease_status(NULL, &test_cfg, &o), -EPROTO);
        assert_null(o);
        fake_answer(0, r_arr(4, r_int(2), r_int(3), r_int(1), r_nil()));
        assert_int_equal(lease_status(NULL, &test_cfg, &o), -EPROTO);
        assert_null(o);
        fake_answer(0, r_int(1));
        assert_int_equal(lease_status(NULL, &test_cfg, &o), -EPROTO);
        fake_answer(-EIO, NULL);
        assert_int_equal(lease_status(NULL, &test_cfg, &o), -EIO);
        assert_null(o);
}

/* Grant and reap hooks record what they were told. */
static struct {
        int granted, expired, reaped;
        char last[4][40];
} seen;

static void on_granted(void *ud, const char *t, const char *l, const char *u, const char *s)
{
        assert_ptr_equal(ud, &seen);
        seen.granted++;
        snprintf(seen.last[0], sizeof(seen.last[0]), "%s", t ? t : "(null)");
        snprintf(seen.last[1], sizeof(seen.last[1]), "%s", l ? l : "(null)");
        snprintf(seen.last[2], sizeof(seen.last[2]), "%s", u ? u : "(null)");
        snprintf(seen.last[3], sizeof(seen.last[3]), "%s", s ? s : "(null)");
}

static void on_expired(void *ud, const char *t)
{
        assert_ptr_equal(ud, &seen);
        assert_non_null(t);
        seen.expired++;
}

static void on_reaped(void *ud, const char *l, const char *u, const char *s)
{
        assert_ptr_equal(ud, &seen);
        seen.reaped++;
        snprintf(seen.last[0], sizeof(seen.last[0]), "%s", l ? l : "(null)");
        snprintf(seen.last[1], sizeof(seen.last[1]), "%s", u ? u : "(null)");
        snprintf(seen.last[2], sizeof(seen.last[2]), "%s", s ? s : "(null)");
}

static const struct lease_grant_hooks hooks = { on_granted, on_expired, on_reaped, &seen };

static void test_grant_step(void **state)
{
        char st[16];

        (void)state;
        memset(&seen, 0, sizeof(seen));
        fake_answer(0, r_arr(3, r_str("granted"),
                             r_strs(TICKET_ID, LEASE_ID, "u1", "s1", "t2", "l2", "u2", "s2", NULL),
                             r_strs("t3", NULL)));
        assert_int_equal(lease_grant_step(NULL, &test_cfg, TICKET_ID, &hooks, st), 0);
        assert_int_equal(fake.id, LUA_GRANT);
        /* lib/store/lua/grant.lua: target, capacity, ttl, ticket ttl, seats, provider,
         * per-tenant slot cap, ids. */
        assert_int_equal(fake.argc, 7 + 16);
        assert_string_equal(fake.argv[0], TICKET_ID);
        assert_string_equal(fake.argv[1], "10");
        assert_string_equal(fake.argv[2], "60000");
        assert_string_equal(fake.argv[3], "30000");
        assert_string_equal(fake.argv[4], "8");
        assert_string_equal(fake.argv[5], "none");
        assert_string_equal(fake.argv[6], "0");
        for (int i = 7; i < fake.argc; i++) {
                assert_hex_id(fake.argv[i]);
                if (i > 7)
                        assert_string_not_equal(fake.argv[i], fake.argv[i - 1]);
        }
        assert_string_equal(st, "granted");
        assert_int_equal(seen.granted, 2);
        assert_int_equal(seen.expired, 1);
        assert_string_equal(seen.last[0], "t2");
        assert_string_equal(seen.last[3], "s2");

        /* No target, no state buffer, no hooks. */
        fake_answer(0, r_arr(3, r_str(""), r_arr(0), r_arr(0)));
        assert_int_equal(lease_grant_step(NULL, &test_cfg, NULL, NULL, NULL), 0);
        assert_string_equal(fake.argv[0], "");

        fake_answer(-EIO, NULL);
        assert_int_equal(lease_grant_step(NULL, &test_cfg, NULL, &hooks, st), -EIO);
        fake_answer(0, r_arr(2, r_str("gone"), r_arr(0)));
        assert_int_equal(lease_grant_step(NULL, &test_cfg, NULL, &hooks, st), -EPROTO);
        fake_answer(0, r_arr(3, r_str("0123456789abcdef"), r_arr(0), r_arr(0)));
        assert_int_equal(lease_grant_step(NULL, &test_cfg, NULL, &hooks, st), -EPROTO);
        fake_answer(0, r_arr(3, r_int(1), r_arr(0), r_arr(0)));
        assert_int_equal(lease_grant_step(NULL, &test_cfg, NULL, &hooks, st), -EPROTO);
        fake_answer(0, r_arr(3, r_str("queued"), r_strs("a", "b", "c", NULL), r_arr(0)));
        assert_int_equal(lease_grant_step(NULL, &test_cfg, NULL, &hooks, st), -EPROTO);
        fake_answer(0, r_arr(3, r_str("queued"), r_nil(), r_arr(0)));
        assert_int_equal(lease_grant_step(NULL, &test_cfg, NULL, &hooks, st), -EPROTO);
        fake_answer(0, r_arr(3, r_str("queued"), r_arr(0), r_str("t")));
        assert_int_equal(lease_grant_step(NULL, &test_cfg, NULL, &hooks, st), -EPROTO);
}

static void test_reap(void **state)
{
        int freed = -1;

        (void)state;
        memset(&seen, 0, sizeof(seen));
        test_cfg.idle_keep_ms = 1234;
        fake_answer(0, r_arr(4, r_int(1), r_strs(LEASE_ID, "u1", "s1", "l2", "", "", NULL),
                             r_strs("t1", "t2", NULL), r_strs("sbx-1", NULL)));
        assert_int_equal(lease_reap(NULL, &test_cfg, 50, 0, &hooks, &freed), 0);
        assert_int_equal(fake.id, LUA_REAP);
        /* lib/store/lua/reap.lua: ticketTtlMs, limit, idleKeepMs. */
        assert_int_equal(fake.argc, 4);
        assert_string_equal(fake.argv[0], "30000");
        assert_string_equal(fake.argv[1], "50");
        assert_string_equal(fake.argv[2], "1234");
        assert_int_equal(freed, 1);
        assert_int_equal(seen.reaped, 2);
        assert_int_equal(seen.expired, 2);
        assert_string_equal(seen.last[0], "l2");

        freed = -1;
        fake_answer(-EIO, NULL);
        assert_int_equal(lease_reap(NULL, &test_cfg, 50, 0, &hooks, &freed), -EIO);
        assert_int_equal(freed, 0);
        fake_answer(0, r_arr(4, r_int(0), r_strs("l", "u", NULL), r_arr(0), r_arr(0)));
        assert_int_equal(lease_reap(NULL, &test_cfg, 50, 0, &hooks, &freed), -EPROTO);
        fake_answer(0, r_arr(4, r_int(0), r_nil(), r_arr(0), r_arr(0)));
        assert_int_equal(lease_reap(NULL, &test_cfg, 50, 0, &hooks, &freed), -EPROTO);
        /* The reply of the previous script version (three elements). */
        fake_answer(0, r_arr(3, r_int(0), r_arr(0), r_arr(0)));
        assert_int_equal(lease_reap(NULL, &test_cfg, 50, 0, &hooks, &freed), -EPROTO);
        fake_answer(0, r_arr(4, r_int(0), r_arr(0), r_nil(), r_arr(0)));
        assert_int_equal(lease_reap(NULL, &test_cfg, 50, 0, &hooks, &freed), -EPROTO);
        fake_answer(0, r_int(0));
        assert_int_equal(lease_reap(NULL, &test_cfg, 50, 0, &hooks, &freed), -EPROTO);
}

/* What lease_stale and lease_intents_take hand their callback. */
static struct {
        int n;
        char id[4][40];
        int64_t waited[4];
} ids;

static void collect_id(void *ud, const char *lease_id, int64_t waited_ms)
{
        assert_ptr_equal(ud, &ids);
        assert_in_range(ids.n, 0, 3);
        snprintf(ids.id[ids.n], sizeof(ids.id[0]), "%s", lease_id);
        ids.waited[ids.n++] = waited_ms;
}

static void test_stale_ids(void **state)
{
        (void)state;
        memset(&ids, 0, sizeof(ids));
        /* strings only; anything else in the array is skipped */
        fake_answer(0, r_arr(3, r_str("l1"), r_int(7), r_str("l2")));
        assert_int_equal(lease_stale(NULL, 60000, 64, collect_id, &ids), 0);
        assert_int_equal(fake.id, LUA_LEASE_STALE);
        assert_int_equal(fake.argc, 2);
        assert_string_equal(fake.argv[0], "60000");
        assert_string_equal(fake.argv[1], "64");
        assert_int_equal(ids.n, 2);
        assert_string_equal(ids.id[0], "l1");
        assert_string_equal(ids.id[1], "l2");
        assert_int_equal(ids.waited[0], 0);

        memset(&ids, 0, sizeof(ids));
        fake_answer(0, r_int(0));
        assert_int_equal(lease_stale(NULL, 1, 1, collect_id, &ids), -EPROTO);
        fake_answer(-EIO, NULL);
        assert_int_equal(lease_stale(NULL, 1, 1, collect_id, &ids), -EIO);
        assert_int_equal(ids.n, 0);
}

static void test_intents_take(void **state)
{
        (void)state;
        memset(&ids, 0, sizeof(ids));
        /* pairs of id and waited ms; a pair whose id is no string is
         * skipped, a waited that is no integer is 0, a lone last id too */
        fake_answer(0, r_arr(7, r_str("l1"), r_int(250), r_nil(), r_int(5), r_str("l3"), r_str("x"),
                             r_str("l4")));
        assert_int_equal(lease_intents_take(NULL, 3, collect_id, &ids), 0);
        assert_int_equal(fake.id, LUA_INTENTS_TAKE);
        assert_int_equal(fake.argc, 1);
        assert_string_equal(fake.argv[0], "3");
        assert_int_equal(ids.n, 2);
        assert_string_equal(ids.id[0], "l1");
        assert_int_equal(ids.waited[0], 250);
        assert_string_equal(ids.id[1], "l3");
        assert_int_equal(ids.waited[1], 0);

        fake_answer(0, r_str("no"));
        assert_int_equal(lease_intents_take(NULL, 3, collect_id, &ids), -EPROTO);
}

#define FAKE_TEST(f) cmocka_unit_test_setup_teardown(f, fake_setup, fake_teardown)

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_hash_exclusive),
                cmocka_unit_test(test_outcome_granted_provisioning),
                cmocka_unit_test(test_hash_shared_with_extras),
                cmocka_unit_test(test_hash_seat_and_times),
                cmocka_unit_test(test_hash_missing_fields),
                cmocka_unit_test(test_hash_bad_expires),
                cmocka_unit_test(test_hash_malformed),
                cmocka_unit_test(test_outcome_granted),
                cmocka_unit_test(test_outcome_granted_malformed),
                cmocka_unit_test(test_outcome_queued_acquire),
                cmocka_unit_test(test_outcome_queued_acquire_malformed),
                cmocka_unit_test(test_outcome_queued_poll),
                cmocka_unit_test(test_outcome_conflict),
                cmocka_unit_test(test_outcome_released),
                cmocka_unit_test(test_outcome_notfound_expired),
                cmocka_unit_test(test_outcome_provisioning_failed),
                cmocka_unit_test(test_outcome_lost),
                cmocka_unit_test(test_outcome_malformed),
                cmocka_unit_test(test_outcome_clear),
                cmocka_unit_test(test_ticket_message),
                cmocka_unit_test(test_ticket_message_pool),
                cmocka_unit_test(test_ticket_message_id_bad),
                FAKE_TEST(test_acquire_args),
                FAKE_TEST(test_acquire_fresh_ids),
                FAKE_TEST(test_acquire_errors),
                FAKE_TEST(test_poll),
                FAKE_TEST(test_heartbeat),
                FAKE_TEST(test_release),
                FAKE_TEST(test_ticket_cancel),
                FAKE_TEST(test_status),
                FAKE_TEST(test_grant_step),
                FAKE_TEST(test_reap),
                FAKE_TEST(test_stale_ids),
                FAKE_TEST(test_intents_take),
        };
        return cmocka_run_group_tests_name("lease_mapping", tests, NULL, NULL);
}
