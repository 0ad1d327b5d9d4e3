/* Unit tests for sandbox_orphan_check (lib/sandbox/sandbox_reconcile.c), the
 * reconciler's test of whether a container of ours is an orphan: no record
 * (or a finished one) and no warm pool member of its id. The case that
 * matters is a claim landing between the two reads: the claim turns the
 * member into a record of the same id in one script, so the check asks the
 * pool first and the record after; read the other way round, it saw no
 * record, then no member, and removed a claimed sandbox's container.
 * Redis (the pool script) and the record read are replaced at the link seam;
 * the fake's world changes as a claim does after the first read. */
/* WRAP: -Wl,--wrap=redis_conn_script -Wl,--wrap=sandbox_record_state */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sandbox/sandbox_internal.h"
#include "reply_fake.h"

#define SID "0123456789abcdef0123456789abcdef"

static struct {
        bool member;            /* the pool holds SID */
        const char *state;      /* the record's state, "" none */
        int member_r;           /* <0: the pool script fails */
        int state_r;            /* <0: the record read fails */
        bool claim_after_first; /* a claim lands after the first read */
        int reads;
        char order[2][8];
} w;

static void maybe_claim(const char *what)
{
        if (w.reads < 2)
                snprintf(w.order[w.reads], sizeof(w.order[0]), "%s", what);
        if (w.reads++ == 0 && w.claim_after_first) {
                w.member = false;
                w.state = "Running";
        }
}

int __wrap_redis_conn_script(struct redis_conn *c, enum lua_script_id id, int argc,
                             const char **argv, redisReply **ret);
int __wrap_redis_conn_script(struct redis_conn *c, enum lua_script_id id, int argc,
                             const char **argv, redisReply **ret)
{
        (void)c;
        assert_int_equal(id, LUA_WPOOL);
        assert_int_equal(argc, 2);
        assert_string_equal(argv[0], "member");
        assert_string_equal(argv[1], SID);
        if (w.member_r < 0)
                return w.member_r;
        *ret = r_int(w.member);
        maybe_claim("pool");
        return 0;
}

int __wrap_sandbox_record_state(struct redis_conn *rc, const struct broker_config *cfg,
                                const char *sid, char *state, size_t size, char *seen);
int __wrap_sandbox_record_state(struct redis_conn *rc, const struct broker_config *cfg,
                                const char *sid, char *state, size_t size, char *seen)
{
        (void)rc;
        (void)cfg;
        assert_null(seen);
        assert_string_equal(sid, SID);
        state[0] = '\0';
        if (w.state_r < 0)
                return w.state_r;
        snprintf(state, size, "%s", w.state);
        maybe_claim("record");
        return 0;
}

static int setup(void **s)
{
        (void)s;
        memset(&w, 0, sizeof(w));
        w.state = "";
        return 0;
}

static int check(char *state)
{
        struct broker_config cfg;

        memset(&cfg, 0, sizeof(cfg));
        return sandbox_orphan_check(NULL, &cfg, SID, state, 16);
}

static void no_record_no_member_is_an_orphan(void **s)
{
        char st[16];

        (void)s;
        assert_int_equal(check(st), 1);
        assert_string_equal(st, "");
}

static void a_member_is_kept_without_reading_the_record(void **s)
{
        char st[16];

        (void)s;
        w.member = true;
        assert_int_equal(check(st), 0);
        assert_int_equal(w.reads, 1);
        assert_string_equal(w.order[0], "pool");
}

static void a_live_record_is_kept(void **s)
{
        static const char *live[] = { "Pending", "Running", "Paused", "Stopping", "Stopped" };
        char st[16];

        (void)s;
        for (size_t i = 0; i < sizeof(live) / sizeof(live[0]); i++) {
                setup(NULL);
                w.state = live[i];
                assert_int_equal(check(st), 0);
                assert_string_equal(st, live[i]);
        }
}

static void a_finished_record_is_an_orphan(void **s)
{
        char st[16];

        (void)s;
        w.state = "Terminated";
        assert_int_equal(check(st), 1);
        setup(NULL);
        w.state = "Failed";
        assert_int_equal(check(st), 1);
        assert_string_equal(st, "Failed");
}

/* the race CI hit: a member claimed between the two reads is kept */
static void a_claim_between_the_reads_is_kept(void **s)
{
        char st[16];

        (void)s;
        w.member = true;
        w.claim_after_first = true;
        /* the pool answered "member" before the claim: kept, and so it is
         * when the claim lands before the pool read (no member, a record) */
        assert_int_equal(check(st), 0);
        setup(NULL);
        w.member = false;
        w.state = "Running";
        assert_int_equal(check(st), 0);
        /* the fake's claim after the first read, where the pool said
         * "member" then: the pool is read first, so no orphan either way */
        setup(NULL);
        w.member = true;
        w.claim_after_first = true;
        assert_int_equal(check(st), 0);
        assert_string_equal(w.order[0], "pool");
}

/* a pool script that fails keeps the container (the next round decides);
 * a record read that fails is the caller's error */
static void errors(void **s)
{
        char st[16];

        (void)s;
        w.member_r = -EIO;
        assert_int_equal(check(st), 0);
        setup(NULL);
        w.state_r = -EIO;
        assert_int_equal(check(st), -EIO);
}

int main(void)
{
        const struct CMUnitTest t[] = {
                cmocka_unit_test_setup(no_record_no_member_is_an_orphan, setup),
                cmocka_unit_test_setup(a_member_is_kept_without_reading_the_record, setup),
                cmocka_unit_test_setup(a_live_record_is_kept, setup),
                cmocka_unit_test_setup(a_finished_record_is_an_orphan, setup),
                cmocka_unit_test_setup(a_claim_between_the_reads_is_kept, setup),
                cmocka_unit_test_setup(errors, setup),
        };
        return cmocka_run_group_tests(t, NULL, NULL);
}
