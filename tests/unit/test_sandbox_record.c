/* Unit tests for lib/store/sandbox_record.c (the one reader of the sandbox
 * hash) and reply_hash_get (the one flat-hash lookup, redis_conn.c).
 * Redis is replaced at the link seam by __wrap_redis_conn_command below: a
 * fake hash that answers HMGET as Redis does (one element per field asked,
 * nil for an absent one), and records what was asked, so the tests check
 * the key, the field list of each group (a narrow read never asks for env,
 * volumes or the policy), and what a missing, odd or oversized record
 * gives. */
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
#include "store/redis_conn.h"
#include "store/sandbox_record.h"
#include "store/sandbox_record_reply.h"
#include "reply_fake.h"

/* ---- the fake Redis: one hash ---- */

#define FAKE_FIELDS 32

static struct {
        int calls;
        char key[256];
        int argc;
        char *argv[FAKE_FIELDS + 2];
        const char *field[FAKE_FIELDS];
        char *value[FAKE_FIELDS];
        size_t value_len[FAKE_FIELDS];
        int n;
        int fail;      /* the command's return, when not 0 */
        int odd_reply; /* 1: an integer reply; 2: one element too few */
        const char *list[8]; /* what LRANGE answers (the transitions) */
        size_t list_len[8];
        int n_list;
} fake;

static void fake_reset(void)
{
        for (int i = 0; i < fake.argc; i++)
                free(fake.argv[i]);
        for (int i = 0; i < fake.n; i++)
                free(fake.value[i]);
        memset(&fake, 0, sizeof(fake));
}

static void fake_set_bin(const char *field, const char *value, size_t len)
{
        assert_true(fake.n < FAKE_FIELDS);
        fake.field[fake.n] = field;
        fake.value[fake.n] = malloc(len + 1);
        assert_non_null(fake.value[fake.n]);
        memcpy(fake.value[fake.n], value, len);
        fake.value[fake.n][len] = '\0';
        fake.value_len[fake.n++] = len;
}

static void fake_set(const char *field, const char *value)
{
        fake_set_bin(field, value, strlen(value));
}

static bool asked(const char *field)
{
        for (int i = 2; i < fake.argc; i++)
                if (strcmp(fake.argv[i], field) == 0)
                        return true;
        return false;
}

int __wrap_redis_conn_command(struct redis_conn *c, int argc, const char **argv, redisReply **ret);
int __wrap_redis_conn_command(struct redis_conn *c, int argc, const char **argv, redisReply **ret)
{
        redisReply *rep;

        (void)c;
        *ret = NULL;
        fake.calls++;
        assert_true(argc >= 3 && argc <= FAKE_FIELDS + 2);
        for (int i = 0; i < fake.argc; i++)
                free(fake.argv[i]);
        fake.argc = argc;
        for (int i = 0; i < argc; i++)
                fake.argv[i] = strdup(argv[i]);
        snprintf(fake.key, sizeof(fake.key), "%s", argv[1]);
        if (fake.fail)
                return fake.fail;
        if (strcmp(argv[0], "LRANGE") == 0) {
                assert_int_equal(argc, 4);
                assert_string_equal(argv[2], "0");
                assert_string_equal(argv[3], "-1");
                rep = r_new(fake.odd_reply == 1 ? REDIS_REPLY_INTEGER : REDIS_REPLY_ARRAY);
                if (rep->type == REDIS_REPLY_ARRAY) {
                        rep->elements = (size_t)fake.n_list;
                        rep->element = calloc(fake.n_list + 1, sizeof(*rep->element));
                        assert_non_null(rep->element);
                        for (int i = 0; i < fake.n_list; i++)
                                rep->element[i] = fake.list[i] ? r_bytes(fake.list[i], fake.list_len[i])
                                                               : r_new(REDIS_REPLY_NIL);
                }
                *ret = rep;
                return 0;
        }
        assert_string_equal(argv[0], "HMGET");
        if (fake.odd_reply == 1) {
                rep = r_new(REDIS_REPLY_INTEGER);
                *ret = rep;
                return 0;
        }
        rep = r_new(REDIS_REPLY_ARRAY);
        rep->elements = (size_t)(argc - 2) - (fake.odd_reply == 2);
        rep->element = calloc(argc, sizeof(*rep->element));
        assert_non_null(rep->element);
        for (size_t i = 0; i < rep->elements; i++) {
                rep->element[i] = r_new(REDIS_REPLY_NIL);
                for (int k = 0; k < fake.n; k++)
                        if (strcmp(fake.field[k], argv[2 + i]) == 0) {
                                reply_free(rep->element[i]);
                                rep->element[i] = r_bytes(fake.value[k], fake.value_len[k]);
                        }
        }
        *ret = rep;
        return 0;
}

static struct broker_config cfg = { .key_prefix = "t:" };

static int setup(void **state)
{
        (void)state;
        fake_reset();
        return 0;
}

static int teardown(void **state)
{
        (void)state;
        fake_reset();
        return 0;
}

/* ---- the key ---- */

static void test_key(void **state)
{
        char key[SANDBOX_RECORD_KEY_MAX], small[12];
        struct broker_config big = { 0 };

        (void)state;
        assert_int_equal(sandbox_record_key(&cfg, "abc", key, sizeof(key)), 0);
        assert_string_equal(key, "t:sandbox:abc");
        assert_int_equal(sandbox_record_key(&cfg, "abc", small, sizeof(small)), -ENAMETOOLONG);
        assert_string_equal(small, "");
        /* the longest prefix and a 64-byte id fit the documented size */
        memset(big.key_prefix, 'p', sizeof(big.key_prefix) - 1);
        assert_int_equal(sandbox_record_key(&big, "0123456789012345678901234567890123456789012345678901234567890123",
                                            key, sizeof(key)),
                         0);
}

/* ---- reads ---- */

static void test_core_read_asks_only_the_core(void **state)
{
        struct sandbox_record rec;

        (void)state;
        fake_set("state", "Running");
        fake_set("reason", "user_resume");
        fake_set("lastTransitionAt", "1733400000000");
        fake_set("ref", "c0ffee");
        fake_set("env", "{\"SECRET\":\"x\"}");
        fake_set("egress_policy", "{}");
        assert_int_equal(sandbox_record_read(NULL, &cfg, "sb1", 0, &rec), 0);
        assert_string_equal(fake.key, "t:sandbox:sb1");
        assert_int_equal(fake.argc, 2 + 4);
        assert_true(asked("state") && asked("reason") && asked("lastTransitionAt") && asked("ref"));
        assert_string_equal(rec.state, "Running");
        assert_string_equal(rec.reason, "user_resume");
        assert_string_equal(rec.last_transition_at, "1733400000000");
        assert_string_equal(rec.ref, "c0ffee");
        /* groups not asked for stay unread */
        assert_null(rec.env);
        assert_null(rec.entrypoint);
        assert_null(rec.volumes);
        assert_null(rec.egress_policy);
        assert_string_equal(rec.user_id, "");
        sandbox_record_clear(&rec);
}

static void test_each_group_asks_its_fields(void **state)
{
        static const struct {
                unsigned group;
                const char *in[10], *out[4];
        } cases[] = {
                { SANDBOX_RECORD_OWNER, { "userId", "tenant", "answerBy" }, { "env", "image", "volumes", "egress_policy" } },
                { SANDBOX_RECORD_STATUS, { "message" }, { "env", "entrypoint", "volumes", "egress_policy" } },
                { SANDBOX_RECORD_SPEC,
                  { "image", "nanoCpus", "memoryBytes", "pids", "diskMb", "poolLimits", "runtime", "entrypoint", "env" },
                  { "userId", "volumes", "egress_policy" } },
                { SANDBOX_RECORD_VOLUMES, { "volumes" }, { "env", "entrypoint", "userId", "egress_policy" } },
                /* the Squid helper's read: never the env or the volumes */
                { SANDBOX_RECORD_EGRESS, { "egress_policy" }, { "env", "entrypoint", "volumes", "image" } },
        };
        struct sandbox_record rec;

        (void)state;
        for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
                fake_reset();
                fake_set("state", "Pending");
                assert_int_equal(sandbox_record_read(NULL, &cfg, "sb1", cases[c].group, &rec), 0);
                assert_true(asked("state") && asked("ref"));
                for (size_t i = 0; i < 10 && cases[c].in[i]; i++)
                        assert_true(asked(cases[c].in[i]));
                for (size_t i = 0; i < 4 && cases[c].out[i]; i++)
                        assert_false(asked(cases[c].out[i]));
                assert_int_equal(rec.groups, cases[c].group);
                sandbox_record_clear(&rec);
        }
}

static void test_spec_values_and_absences(void **state)
{
        struct sandbox_record rec;

        (void)state;
        fake_set("state", "Pending");
        fake_set("image", "alpine:3.20");
        fake_set("nanoCpus", "1500000000");
        fake_set("memoryBytes", "536870912");
        fake_set("poolLimits", "1,512,256");
        fake_set("entrypoint", "[\"sleep\",\"9\"]");
        assert_int_equal(sandbox_record_read(NULL, &cfg, "sb1", SANDBOX_RECORD_SPEC | SANDBOX_RECORD_VOLUMES, &rec),
                         0);
        assert_string_equal(rec.image, "alpine:3.20");
        assert_int_equal(rec.nano_cpus, 1500000000LL);
        assert_int_equal(rec.memory_bytes, 536870912LL);
        assert_int_equal(rec.pids, 0);      /* absent: 0 */
        assert_int_equal(rec.disk_mb, -1);  /* absent: -1, a record older than disks */
        assert_string_equal(rec.pool_limits, "1,512,256");
        assert_string_equal(rec.runtime, ""); /* absent: the default runtime */
        assert_string_equal(rec.entrypoint, "[\"sleep\",\"9\"]");
        /* asked but absent: "", never NULL */
        assert_non_null(rec.env);
        assert_string_equal(rec.env, "");
        assert_non_null(rec.volumes);
        assert_string_equal(rec.volumes, "");
        assert_string_equal(rec.reason, "");
        sandbox_record_clear(&rec);

        fake_reset();
        fake_set("state", "Running");
        fake_set("diskMb", "0");
        assert_int_equal(sandbox_record_read(NULL, &cfg, "sb1", SANDBOX_RECORD_SPEC, &rec), 0);
        assert_int_equal(rec.disk_mb, 0);
        sandbox_record_clear(&rec);
}

static void test_policy_keeps_its_length(void **state)
{
        static const char pol[] = "{\"a\":1}\0tail";
        struct sandbox_record rec;

        (void)state;
        fake_set("state", "Running");
        fake_set_bin("egress_policy", pol, sizeof(pol) - 1);
        assert_int_equal(sandbox_record_read(NULL, &cfg, "sb1", SANDBOX_RECORD_EGRESS, &rec), 0);
        assert_int_equal(rec.egress_policy_len, sizeof(pol) - 1);
        assert_memory_equal(rec.egress_policy, pol, sizeof(pol) - 1);
        sandbox_record_clear(&rec);
}

static void test_no_state_is_no_record(void **state)
{
        struct sandbox_record rec;

        (void)state;
        /* nothing at all */
        assert_int_equal(sandbox_record_read(NULL, &cfg, "gone", SANDBOX_RECORD_SPEC, &rec), -ENOENT);
        assert_null(rec.env);
        assert_string_equal(rec.state, "");
        /* fields but no state: not a record (every script sets one) */
        fake_set("egress_policy", "{}");
        fake_set("env", "{}");
        assert_int_equal(sandbox_record_read(NULL, &cfg, "half", SANDBOX_RECORD_SPEC | SANDBOX_RECORD_EGRESS, &rec),
                         -ENOENT);
        assert_null(rec.env);
        assert_null(rec.egress_policy);
}

static void test_oversized_field_is_eproto_and_frees(void **state)
{
        char big[400];
        struct sandbox_record rec;

        (void)state;
        memset(big, 'x', sizeof(big) - 1);
        big[sizeof(big) - 1] = '\0';
        fake_set("state", "Running");
        fake_set("entrypoint", "[\"a\"]");
        fake_set("env", "{}");
        fake_set("runtime", big);
        assert_int_equal(sandbox_record_read(NULL, &cfg, "sb1", SANDBOX_RECORD_SPEC, &rec), -EPROTO);
        assert_null(rec.entrypoint); /* nothing handed out (ASan sees a leak) */
        assert_null(rec.env);
        assert_string_equal(rec.state, "");

        /* a state longer than any the broker writes */
        fake_reset();
        fake_set("state", big);
        assert_int_equal(sandbox_record_read(NULL, &cfg, "sb1", 0, &rec), -EPROTO);
}

static void test_odd_replies_and_errors(void **state)
{
        struct sandbox_record rec;

        (void)state;
        fake_set("state", "Running");
        fake.odd_reply = 1;
        assert_int_equal(sandbox_record_read(NULL, &cfg, "sb1", 0, &rec), -EPROTO);
        fake.odd_reply = 2;
        assert_int_equal(sandbox_record_read(NULL, &cfg, "sb1", SANDBOX_RECORD_OWNER, &rec), -EPROTO);
        fake.odd_reply = 0;
        fake.fail = -EIO;
        assert_int_equal(sandbox_record_read(NULL, &cfg, "sb1", 0, &rec), -EIO);
        fake.fail = 0;
        /* an id the key cannot hold: no command at all */
        {
                char sid[300];

                memset(sid, 'a', sizeof(sid) - 1);
                sid[sizeof(sid) - 1] = '\0';
                fake.calls = 0;
                assert_int_equal(sandbox_record_read(NULL, &cfg, sid, 0, &rec), -ENAMETOOLONG);
                assert_int_equal(fake.calls, 0);
        }
        sandbox_record_clear(NULL);
}

/* ---- sandbox_record_from_hash: the same fields from an HGETALL ---- */

static redisReply *flat(size_t n, const char *const *kv)
{
        redisReply *h = r_new(REDIS_REPLY_ARRAY);

        h->elements = n;
        h->element = calloc(n ? n : 1, sizeof(*h->element));
        assert_non_null(h->element);
        for (size_t i = 0; i < n; i++)
                h->element[i] = r_str(kv[i]);
        return h;
}

static void test_from_hash(void **state)
{
        static const char *const kv[] = { "sandboxId", "sb1", "tenant", "acme", "state", "Pending",
                                          "answerBy", "1733400009000", "message", "waiting for admission",
                                          "volumes", "[]", "env", "{\"A\":\"1\"}", "ref", "" };
        char big[200];
        struct sandbox_record rec;
        redisReply *h = flat(16, kv);

        (void)state;
        assert_int_equal(sandbox_record_from_hash(h, SANDBOX_RECORD_OWNER | SANDBOX_RECORD_STATUS | SANDBOX_RECORD_VOLUMES,
                                                  &rec),
                         0);
        assert_int_equal(fake.calls, 0); /* no Redis */
        assert_string_equal(rec.state, "Pending");
        assert_string_equal(rec.tenant, "acme");
        assert_string_equal(rec.answer_by, "1733400009000");
        assert_string_equal(rec.message, "waiting for admission");
        assert_string_equal(rec.volumes, "[]");
        assert_string_equal(rec.reason, "");
        assert_null(rec.env); /* SPEC not asked */
        sandbox_record_clear(&rec);
        reply_free(h);

        /* empty (HGETALL of no key) and stateless: no record */
        h = flat(0, kv);
        assert_int_equal(sandbox_record_from_hash(h, SANDBOX_RECORD_OWNER, &rec), -ENOENT);
        reply_free(h);
        h = flat(4, kv);
        assert_int_equal(sandbox_record_from_hash(h, SANDBOX_RECORD_OWNER, &rec), -ENOENT);
        reply_free(h);
        /* odd: a dangling field, no array */
        h = flat(5, kv);
        assert_int_equal(sandbox_record_from_hash(h, 0, &rec), -EPROTO);
        reply_free(h);
        assert_int_equal(sandbox_record_from_hash(NULL, 0, &rec), -EPROTO);
        /* a field longer than its member: nothing handed out */
        memset(big, '7', sizeof(big) - 1);
        big[sizeof(big) - 1] = '\0';
        {
                const char *const kv2[] = { "state", "Pending", "message", "m", "answerBy", big };
                h = flat(6, kv2);
        }
        assert_int_equal(sandbox_record_from_hash(h, SANDBOX_RECORD_OWNER | SANDBOX_RECORD_STATUS, &rec), -EPROTO);
        assert_null(rec.message);
        reply_free(h);
}

/* ---- reply_hash_get ---- */

static void test_reply_hash_get(void **state)
{
        redisReply *h = r_new(REDIS_REPLY_ARRAY);
        redisReply *one = r_str("x");

        (void)state;
        h->elements = 7; /* three pairs and a dangling field */
        h->element = calloc(h->elements, sizeof(*h->element));
        assert_non_null(h->element);
        h->element[0] = r_str("state");
        h->element[1] = r_str("Running");
        h->element[2] = r_str("n");
        h->element[3] = r_new(REDIS_REPLY_INTEGER);
        h->element[4] = r_str("Running"); /* a value equal to a name is no name */
        h->element[5] = r_str("v");
        h->element[6] = r_str("dangling");
        assert_string_equal(reply_hash_get(h, "state"), "Running");
        assert_null(reply_hash_get(h, "n"));        /* not a string */
        assert_null(reply_hash_get(h, "missing"));
        assert_null(reply_hash_get(h, "dangling")); /* no value */
        assert_string_equal(reply_hash_get(h, "Running"), "v");
        assert_null(reply_hash_get(NULL, "state"));
        assert_null(reply_hash_get(one, "x")); /* not an array */
        reply_free(h);
        reply_free(one);
}

/* ---- the transitions (sandbox_record_transitions) ---- */

static void list_add(const char *s, size_t len)
{
        assert_true(fake.n_list < 8);
        fake.list[fake.n_list] = s;
        fake.list_len[fake.n_list++] = len;
}

#define LIST_ADD(lit) list_add(lit, sizeof(lit) - 1)

struct seen {
        struct sandbox_transition t[8];
        char msg[8][64];
        int n;
        int stop_at; /* > 0: fn answers -ECANCELED at this call */
};

static int seen_fn(void *ud, const struct sandbox_transition *t)
{
        struct seen *s = ud;

        if (s->stop_at && s->n + 1 == s->stop_at)
                return -ECANCELED;
        assert_true(s->n < 8 && t->message_len < 64);
        s->t[s->n] = *t;
        memcpy(s->msg[s->n], t->message, t->message_len);
        s->msg[s->n][t->message_len] = '\0';
        s->t[s->n].message = NULL;
        s->n++;
        return 0;
}

static void test_transitions_in_order_and_skips_garbage(void **state)
{
        struct seen s = { 0 };
        static const char tab_msg[] = "1700000000002\tFailed\tCRASHED\tline\twith\ttabs";
        static const char nul_msg[] = "1700000000003\tRunning\t\tnul\0in";

        (void)state;
        LIST_ADD("1700000000000\tPending\tCREATING\twaiting for admission");
        LIST_ADD("garbage without tabs");
        list_add(NULL, 0); /* not a string */
        LIST_ADD("x1\tRunning\tREADY\t"); /* not a time */
        LIST_ADD("1700000000001\t\tREADY\t"); /* no state */
        list_add(tab_msg, sizeof(tab_msg) - 1);
        list_add(nul_msg, sizeof(nul_msg) - 1);
        assert_int_equal(sandbox_record_transitions(NULL, &cfg, "sid1", seen_fn, &s), 0);
        assert_string_equal(fake.key, "t:sbevents:sid1");
        assert_int_equal(s.n, 3);
        assert_int_equal(s.t[0].at_ms, 1700000000000LL);
        assert_string_equal(s.t[0].state, "Pending");
        assert_string_equal(s.t[0].reason, "CREATING");
        assert_string_equal(s.msg[0], "waiting for admission");
        /* the message is the rest: its own tabs stay */
        assert_string_equal(s.t[1].state, "Failed");
        assert_string_equal(s.msg[1], "line\twith\ttabs");
        /* an empty reason; a message with a NUL keeps its length */
        assert_string_equal(s.t[2].reason, "");
        assert_int_equal(s.t[2].message_len, 6);
}

static void test_transitions_stop_and_errors(void **state)
{
        struct seen s = { .stop_at = 2 };
        char long_sid[300];

        (void)state;
        LIST_ADD("1\tPending\t\t");
        LIST_ADD("2\tRunning\tREADY\t");
        LIST_ADD("3\tPaused\tuser_pause\t");
        assert_int_equal(sandbox_record_transitions(NULL, &cfg, "s", seen_fn, &s), -ECANCELED);
        assert_int_equal(s.n, 1);
        /* none kept: no call of fn */
        fake.n_list = 0;
        memset(&s, 0, sizeof(s));
        assert_int_equal(sandbox_record_transitions(NULL, &cfg, "s", seen_fn, &s), 0);
        assert_int_equal(s.n, 0);
        fake.odd_reply = 1;
        assert_int_equal(sandbox_record_transitions(NULL, &cfg, "s", seen_fn, &s), -EPROTO);
        fake.odd_reply = 0;
        fake.fail = -EIO;
        assert_int_equal(sandbox_record_transitions(NULL, &cfg, "s", seen_fn, &s), -EIO);
        fake.fail = 0;
        memset(long_sid, 'a', sizeof(long_sid) - 1);
        long_sid[sizeof(long_sid) - 1] = '\0';
        assert_int_equal(sandbox_record_transitions(NULL, &cfg, long_sid, seen_fn, &s), -ENAMETOOLONG);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_key, setup, teardown),
                cmocka_unit_test_setup_teardown(test_core_read_asks_only_the_core, setup, teardown),
                cmocka_unit_test_setup_teardown(test_each_group_asks_its_fields, setup, teardown),
                cmocka_unit_test_setup_teardown(test_spec_values_and_absences, setup, teardown),
                cmocka_unit_test_setup_teardown(test_policy_keeps_its_length, setup, teardown),
                cmocka_unit_test_setup_teardown(test_no_state_is_no_record, setup, teardown),
                cmocka_unit_test_setup_teardown(test_oversized_field_is_eproto_and_frees, setup, teardown),
                cmocka_unit_test_setup_teardown(test_odd_replies_and_errors, setup, teardown),
                cmocka_unit_test_setup_teardown(test_from_hash, setup, teardown),
                cmocka_unit_test_setup_teardown(test_reply_hash_get, setup, teardown),
                cmocka_unit_test_setup_teardown(test_transitions_in_order_and_skips_garbage, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_transitions_stop_and_errors, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
