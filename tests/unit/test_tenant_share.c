/* Unit tests for fcgi/tenant_share.c, written as the attack: tenant A takes
 * every thread it can, and B must still get its requests in; A's control
 * calls (interrupt, status; in the sandboxes group: delete, stop, status)
 * still pass at its share, and which calls are control calls is exactly
 * the documented lists (a long call that slipped in would let a tenant
 * past its share); every slot comes back;
 * and the shares of the shipped thread counts (the stack's 32, the
 * default 8) are what docs/OPERATIONS.md says. Threads of their own hammer
 * take/put at once: the counts stay exact. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "tenant_share.h"

static int put_all(int *slots, int n)
{
        for (int i = 0; i < n; i++)
                tenant_share_put(slots[i]);
        return tenant_share_held(NULL);
}

static void test_shares_of_the_shipped_thread_counts(void **state)
{
        (void)state;
        /* the stack's execd group: 32 threads, 4 reserved, half of 28 */
        assert_int_equal(tenant_share_cap(32), 28);
        assert_int_equal(tenant_share_of(32, 50), 14);
        /* FCGI_THREADS' default: 8 threads, 4 reserved, half of 4 */
        assert_int_equal(tenant_share_cap(8), 4);
        assert_int_equal(tenant_share_of(8, 50), 2);
        /* never 0, whatever the thread count or the percentage */
        assert_int_equal(tenant_share_cap(1), 1);
        assert_int_equal(tenant_share_cap(4), 1);
        assert_int_equal(tenant_share_of(1, 1), 1);
        assert_int_equal(tenant_share_of(5, 1), 1);
        assert_int_equal(tenant_share_of(256, 100), 252);
}

static void test_one_tenant_cannot_take_the_others_threads(void **state)
{
        int a[64], b[64], slot, held, na = 0, nb = 0;

        (void)state;
        /* A asks for 40 threads; it gets its share of 14, the rest is refused */
        for (int i = 0; i < 40; i++) {
                int r = tenant_share_take("ta", false, 14, 28, &slot, &held);
                if (r == 0) {
                        a[na++] = slot;
                        assert_int_equal(held, na);
                } else {
                        assert_int_equal(r, -EAGAIN);
                        assert_int_equal(slot, -1);
                        assert_int_equal(held, 14);
                }
        }
        assert_int_equal(na, 14);
        assert_int_equal(tenant_share_held("ta"), 14);
        /* B gets its own share in full, all the while */
        for (int i = 0; i < 14; i++) {
                assert_int_equal(tenant_share_take("tb", false, 14, 28, &b[nb], &held), 0);
                nb++;
                assert_int_equal(held, nb);
        }
        assert_int_equal(tenant_share_held("tb"), 14);
        /* the cap is full now: a third tenant waits for the rest to end,
         * refused though it holds nothing (held 0 < share: the cap's 429) */
        assert_int_equal(tenant_share_take("tc", false, 14, 28, &slot, &held), -EAGAIN);
        assert_int_equal(held, 0);
        assert_int_equal(tenant_share_held(NULL), 28);
        /* A's control calls pass at its share, past the cap: two of them */
        int c1, c2;
        assert_int_equal(tenant_share_take("ta", true, 14, 28, &c1, &held), 0);
        assert_int_equal(held, 15);
        assert_int_equal(tenant_share_take("ta", true, 14, 28, &c2, &held), 0);
        assert_int_equal(held, 16);
        assert_int_equal(tenant_share_take("ta", true, 14, 28, &slot, &held), -EAGAIN);
        assert_int_equal(held, 16);
        /* and a third tenant's control call passes the full cap too */
        int c3;
        assert_int_equal(tenant_share_take("tc", true, 14, 28, &c3, &held), 0);
        assert_int_equal(held, 1);
        tenant_share_put(c1);
        tenant_share_put(c2);
        tenant_share_put(c3);
        /* one of A's ends: B is at its share, the cap still full, so C waits;
         * once one of B's ends, C gets it */
        tenant_share_put(a[--na]);
        assert_int_equal(tenant_share_take("tb", false, 14, 28, &slot, &held), -EAGAIN);
        assert_int_equal(tenant_share_take("tc", false, 14, 28, &slot, &held), 0);
        assert_int_equal(held, 1);
        tenant_share_put(slot);
        /* everything comes back */
        assert_int_equal(put_all(a, na), 14);
        assert_int_equal(put_all(b, nb), 0);
        assert_int_equal(tenant_share_held("ta"), 0);
}

#define P44772 "/v1/sandboxes/{}/proxy/44772/"

static bool ctl(const char *group, const char *method, const char *route)
{
        return tenant_share_is_control(group, method, route);
}

static void test_control_calls_of_each_group(void **state)
{
        (void)state;
        /* execd: what looks at or stops a command */
        assert_true(ctl("execd", "GET", P44772 "command/status/{}"));
        assert_true(ctl("execd", "GET", P44772 "command/{}/logs"));
        assert_true(ctl("execd", "HEAD", P44772 "command/{}/logs"));
        assert_true(ctl("execd", "DELETE", P44772 "command"));
        assert_true(ctl("execd", "DELETE", P44772 "session/{}"));
        assert_true(ctl("execd", "GET", P44772 "ping"));
        assert_true(ctl("execd", "GET", "/v1/sandboxes/{}/ingress-auth"));
        /* ... not what runs or moves data */
        assert_false(ctl("execd", "POST", P44772 "command"));
        assert_false(ctl("execd", "POST", P44772 "session/{}/run"));
        assert_false(ctl("execd", "POST", P44772 "files/upload"));
        assert_false(ctl("execd", "GET", P44772 "metrics/watch"));
        /* sandboxes: what looks at a sandbox or an exec, or ends things */
        assert_true(ctl("sandboxes", "GET", "/v1/sandboxes/{}"));
        assert_true(ctl("sandboxes", "HEAD", "/v1/sandboxes/{}"));
        assert_true(ctl("sandboxes", "GET", "/v1/sandboxes/{}/exec/{}"));
        assert_true(ctl("sandboxes", "DELETE", "/v1/sandboxes/{}"));
        assert_true(ctl("sandboxes", "POST", "/v1/sandboxes/{}/stop"));
        assert_true(ctl("sandboxes", "DELETE", "/v1/snapshots/{}"));
        assert_true(ctl("sandboxes", "DELETE", "/v1/volumes/{}"));
        /* ... not the runtime exec, files, creates, starts, snapshots, lists */
        assert_false(ctl("sandboxes", "POST", "/v1/sandboxes/{}/exec"));
        assert_false(ctl("sandboxes", "POST", "/v1/sandboxes/{}/files/read"));
        assert_false(ctl("sandboxes", "POST", "/v1/sandboxes/{}/files/write"));
        assert_false(ctl("sandboxes", "POST", "/v1/sandboxes"));
        assert_false(ctl("sandboxes", "GET", "/v1/sandboxes"));
        assert_false(ctl("sandboxes", "POST", "/v1/sandboxes/{}/start"));
        assert_false(ctl("sandboxes", "POST", "/v1/sandboxes/{}/resume"));
        assert_false(ctl("sandboxes", "POST", "/v1/sandboxes/{}/snapshots"));
        assert_false(ctl("sandboxes", "PATCH", "/v1/sandboxes/{}"));
        /* a route is a control call of its own group only; nothing else is */
        assert_false(ctl("execd", "DELETE", "/v1/sandboxes/{}"));
        assert_false(ctl("sandboxes", "DELETE", P44772 "command"));
        assert_false(ctl("leases", "GET", "/v1/sandboxes/{}"));
        /* leases: only an acquire's wait is shared (h_leases.c), no call */
        assert_false(ctl("leases", "POST", "/v1/leases/heartbeat"));
        assert_false(ctl(NULL, "GET", "/v1/sandboxes/{}"));
        assert_false(ctl("sandboxes", NULL, "/v1/sandboxes/{}"));
        assert_false(ctl("sandboxes", "GET", NULL));
}

/* The sandboxes group at FCGI_THREADS' default (8): A's runtime execs in
 * all its sandboxes get its share of 2, B still gets 2, and A, at its
 * share and at the full cap, still deletes and stops its sandboxes and
 * reads their state. */
static void test_sandboxes_group_at_the_default_threads(void **state)
{
        int share = tenant_share_of(8, 50), cap = tenant_share_cap(8);
        int a[8], b[2], c[4], slot, held, na = 0;

        (void)state;
        assert_int_equal(share, 2);
        assert_int_equal(cap, 4);
        for (int i = 0; i < 8; i++)
                if (tenant_share_take("alpha", ctl("sandboxes", "POST", "/v1/sandboxes/{}/exec"),
                                      share, cap, &slot, &held) == 0)
                        a[na++] = slot;
        assert_int_equal(na, share);
        for (int i = 0; i < 2; i++)
                assert_int_equal(tenant_share_take("bravo", false, share, cap, &b[i], &held), 0);
        assert_int_equal(tenant_share_held(NULL), cap);
        assert_int_equal(tenant_share_take("alpha", true, share, cap, &c[0], &held), 0);
        assert_int_equal(tenant_share_take("alpha", true, share, cap, &c[1], &held), 0);
        assert_int_equal(tenant_share_take("bravo", true, share, cap, &c[2], &held), 0);
        assert_int_equal(tenant_share_take("bravo", true, share, cap, &c[3], &held), 0);
        assert_int_equal(tenant_share_held(NULL), 8); /* every thread: none is left waiting */
        assert_int_equal(tenant_share_take("alpha", true, share, cap, &slot, &held), -EAGAIN);
        assert_int_equal(put_all(c, 4), 4);
        assert_int_equal(put_all(b, 2), 2);
        assert_int_equal(put_all(a, na), 0);
}

static void test_put_of_nothing_and_bad_names(void **state)
{
        char longname[TENANT_SHARE_TENANT_MAX + 1];
        int slot, held;

        (void)state;
        tenant_share_put(-1);
        tenant_share_put(TENANT_SHARE_SLOTS);
        assert_int_equal(tenant_share_held(NULL), 0);
        memset(longname, 'x', sizeof(longname) - 1);
        longname[sizeof(longname) - 1] = '\0';
        assert_int_equal(tenant_share_take(longname, false, 4, 4, &slot, &held), -EINVAL);
        assert_int_equal(slot, -1);
        /* the longest name that fits is a tenant like any */
        longname[TENANT_SHARE_TENANT_MAX - 1] = '\0';
        assert_int_equal(tenant_share_take(longname, false, 1, 4, &slot, &held), 0);
        assert_int_equal(tenant_share_held(longname), 1);
        tenant_share_put(slot);
        /* a name is a name: "ta" and "ta2" are two tenants */
        int s1, s2;
        assert_int_equal(tenant_share_take("ta", false, 1, 4, &s1, &held), 0);
        assert_int_equal(tenant_share_take("ta2", false, 1, 4, &s2, &held), 0);
        assert_int_equal(held, 1);
        tenant_share_put(s1);
        tenant_share_put(s2);
        /* a share of 1 with the cap past the slots there are: the registry's
         * own size bounds it, no overflow */
        int slots[TENANT_SHARE_SLOTS], n = 0;
        char name[16];
        for (int i = 0; i < TENANT_SHARE_SLOTS + 8; i++) {
                snprintf(name, sizeof(name), "t%d", i);
                if (tenant_share_take(name, false, 1, 100000, &slot, &held) == 0)
                        slots[n++] = slot;
        }
        assert_int_equal(n, TENANT_SHARE_SLOTS);
        assert_int_equal(put_all(slots, n), 0);
}

struct hammer {
        const char *tenant;
        int refused;
};

static void *hammer_main(void *arg)
{
        struct hammer *h = arg;

        for (int i = 0; i < 20000; i++) {
                int slot, held;
                if (tenant_share_take(h->tenant, false, 3, 28, &slot, &held) < 0) {
                        h->refused++;
                        continue;
                }
                assert_true(held >= 1 && held <= 3);
                tenant_share_put(slot);
        }
        return NULL;
}

static void test_threads_at_once_keep_the_counts_exact(void **state)
{
        struct hammer h[8] = { { "ta", 0 }, { "ta", 0 }, { "ta", 0 }, { "ta", 0 },
                               { "tb", 0 }, { "tb", 0 }, { "tc", 0 }, { "td", 0 } };
        pthread_t t[8];

        (void)state;
        for (int i = 0; i < 8; i++)
                assert_int_equal(pthread_create(&t[i], NULL, hammer_main, &h[i]), 0);
        for (int i = 0; i < 8; i++)
                pthread_join(t[i], NULL);
        /* tc and td ran alone: never past their share, never refused */
        assert_int_equal(h[6].refused, 0);
        assert_int_equal(h[7].refused, 0);
        assert_int_equal(tenant_share_held(NULL), 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_shares_of_the_shipped_thread_counts),
                cmocka_unit_test(test_one_tenant_cannot_take_the_others_threads),
                cmocka_unit_test(test_control_calls_of_each_group),
                cmocka_unit_test(test_sandboxes_group_at_the_default_threads),
                cmocka_unit_test(test_put_of_nothing_and_bad_names),
                cmocka_unit_test(test_threads_at_once_keep_the_counts_exact),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
