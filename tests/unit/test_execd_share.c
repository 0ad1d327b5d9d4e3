/* Unit tests for fcgi/execd_share.c, written as the attack: tenant A takes
 * every thread it can, and B must still get its requests in; A's control
 * calls (interrupt, status) still pass at its share; every slot comes back;
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

#include "execd_share.h"

static int put_all(int *slots, int n)
{
        for (int i = 0; i < n; i++)
                execd_share_put(slots[i]);
        return execd_share_held(NULL);
}

static void test_shares_of_the_shipped_thread_counts(void **state)
{
        (void)state;
        /* the stack's execd group: 32 threads, 4 reserved, half of 28 */
        assert_int_equal(execd_share_cap(32), 28);
        assert_int_equal(execd_share_of(32, 50), 14);
        /* FCGI_THREADS' default: 8 threads, 4 reserved, half of 4 */
        assert_int_equal(execd_share_cap(8), 4);
        assert_int_equal(execd_share_of(8, 50), 2);
        /* never 0, whatever the thread count or the percentage */
        assert_int_equal(execd_share_cap(1), 1);
        assert_int_equal(execd_share_cap(4), 1);
        assert_int_equal(execd_share_of(1, 1), 1);
        assert_int_equal(execd_share_of(5, 1), 1);
        assert_int_equal(execd_share_of(256, 100), 252);
}

static void test_one_tenant_cannot_take_the_others_threads(void **state)
{
        int a[64], b[64], slot, held, na = 0, nb = 0;

        (void)state;
        /* A asks for 40 threads; it gets its share of 14, the rest is refused */
        for (int i = 0; i < 40; i++) {
                int r = execd_share_take("ta", false, 14, 28, &slot, &held);
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
        assert_int_equal(execd_share_held("ta"), 14);
        /* B gets its own share in full, all the while */
        for (int i = 0; i < 14; i++) {
                assert_int_equal(execd_share_take("tb", false, 14, 28, &b[nb], &held), 0);
                nb++;
                assert_int_equal(held, nb);
        }
        assert_int_equal(execd_share_held("tb"), 14);
        /* the cap is full now: a third tenant waits for the rest to end,
         * refused though it holds nothing (held 0 < share: the cap's 429) */
        assert_int_equal(execd_share_take("tc", false, 14, 28, &slot, &held), -EAGAIN);
        assert_int_equal(held, 0);
        assert_int_equal(execd_share_held(NULL), 28);
        /* A's control calls pass at its share, past the cap: two of them */
        int c1, c2;
        assert_int_equal(execd_share_take("ta", true, 14, 28, &c1, &held), 0);
        assert_int_equal(held, 15);
        assert_int_equal(execd_share_take("ta", true, 14, 28, &c2, &held), 0);
        assert_int_equal(held, 16);
        assert_int_equal(execd_share_take("ta", true, 14, 28, &slot, &held), -EAGAIN);
        assert_int_equal(held, 16);
        /* and a third tenant's control call passes the full cap too */
        int c3;
        assert_int_equal(execd_share_take("tc", true, 14, 28, &c3, &held), 0);
        assert_int_equal(held, 1);
        execd_share_put(c1);
        execd_share_put(c2);
        execd_share_put(c3);
        /* one of A's ends: B is at its share, the cap still full, so C waits;
         * once one of B's ends, C gets it */
        execd_share_put(a[--na]);
        assert_int_equal(execd_share_take("tb", false, 14, 28, &slot, &held), -EAGAIN);
        assert_int_equal(execd_share_take("tc", false, 14, 28, &slot, &held), 0);
        assert_int_equal(held, 1);
        execd_share_put(slot);
        /* everything comes back */
        assert_int_equal(put_all(a, na), 14);
        assert_int_equal(put_all(b, nb), 0);
        assert_int_equal(execd_share_held("ta"), 0);
}

static void test_put_of_nothing_and_bad_names(void **state)
{
        char longname[EXECD_SHARE_TENANT_MAX + 1];
        int slot, held;

        (void)state;
        execd_share_put(-1);
        execd_share_put(EXECD_SHARE_SLOTS);
        assert_int_equal(execd_share_held(NULL), 0);
        memset(longname, 'x', sizeof(longname) - 1);
        longname[sizeof(longname) - 1] = '\0';
        assert_int_equal(execd_share_take(longname, false, 4, 4, &slot, &held), -EINVAL);
        assert_int_equal(slot, -1);
        /* the longest name that fits is a tenant like any */
        longname[EXECD_SHARE_TENANT_MAX - 1] = '\0';
        assert_int_equal(execd_share_take(longname, false, 1, 4, &slot, &held), 0);
        assert_int_equal(execd_share_held(longname), 1);
        execd_share_put(slot);
        /* a name is a name: "ta" and "ta2" are two tenants */
        int s1, s2;
        assert_int_equal(execd_share_take("ta", false, 1, 4, &s1, &held), 0);
        assert_int_equal(execd_share_take("ta2", false, 1, 4, &s2, &held), 0);
        assert_int_equal(held, 1);
        execd_share_put(s1);
        execd_share_put(s2);
        /* a share of 1 with the cap past the slots there are: the registry's
         * own size bounds it, no overflow */
        int slots[EXECD_SHARE_SLOTS], n = 0;
        char name[16];
        for (int i = 0; i < EXECD_SHARE_SLOTS + 8; i++) {
                snprintf(name, sizeof(name), "t%d", i);
                if (execd_share_take(name, false, 1, 100000, &slot, &held) == 0)
                        slots[n++] = slot;
        }
        assert_int_equal(n, EXECD_SHARE_SLOTS);
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
                if (execd_share_take(h->tenant, false, 3, 28, &slot, &held) < 0) {
                        h->refused++;
                        continue;
                }
                assert_true(held >= 1 && held <= 3);
                execd_share_put(slot);
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
        assert_int_equal(execd_share_held(NULL), 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_shares_of_the_shipped_thread_counts),
                cmocka_unit_test(test_one_tenant_cannot_take_the_others_threads),
                cmocka_unit_test(test_put_of_nothing_and_bad_names),
                cmocka_unit_test(test_threads_at_once_keep_the_counts_exact),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
