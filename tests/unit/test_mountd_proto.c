/* Unit tests for mountd/proto.c: the request lines of sandbox-mountd, the
 * root helper that mounts for the broker. Every name in a request ends up
 * in a path the helper builds as root, so the parser takes hex ids only,
 * of the right length, and nothing else on the line. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "mountd.h"

#define SID "0123456789abcdef0123456789abcdef"
#define CID "aaaaaaaaaaaabbbbbbbbbbbbccccccccccccddddddddddddeeeeeeeeeeeeffff"
#define LAYER "1111111111112222222222223333333333334444444444445555555555556666"

static int parse(const char *line, struct mountd_req *q)
{
        char err[200];

        return mountd_parse(line, strlen(line), q, err, sizeof(err));
}

static void test_good(void **state)
{
        struct mountd_req q;

        (void)state;
        assert_int_equal(parse("run " CID, &q), 0);
        assert_int_equal(q.verb, MOUNTD_RUN);
        assert_string_equal(q.id, CID);
        assert_int_equal(parse("unrun 0123456789ab", &q), 0); /* a short container id */
        assert_int_equal(q.verb, MOUNTD_UNRUN);
        assert_int_equal(parse("disk-make " SID " 1024 " LAYER, &q), 0);
        assert_int_equal(q.verb, MOUNTD_DISK_MAKE);
        assert_string_equal(q.id, SID);
        assert_int_equal(q.mib, 1024);
        assert_string_equal(q.layer, LAYER);
        assert_int_equal(parse("disk-attach " SID " " LAYER, &q), 0);
        assert_int_equal(q.verb, MOUNTD_DISK_ATTACH);
        assert_int_equal(parse("undisk " SID, &q), 0);
        assert_int_equal(q.verb, MOUNTD_UNDISK);
        assert_int_equal(parse("disks", &q), 0);
        assert_int_equal(q.verb, MOUNTD_DISKS);
        assert_int_equal(parse("ping", &q), 0);
        assert_int_equal(q.verb, MOUNTD_PING);
}

static void test_refused(void **state)
{
        static const char *const bad[] = {
                "",
                "run",
                "run ../../etc",
                "run " CID "/x",
                "run /var/lib/docker",
                "run 0123456789a",      /* 11: too short */
                "run " CID "0",         /* 65: too long */
                "run AAAAAAAAAAAAAAAA", /* upper case */
                "run " CID " extra",
                "run " CID " ", /* a trailing space */
                "run  " CID,    /* two spaces */
                "RUN " CID,
                "mount " CID,
                "disk-make " SID " 1024",      /* no layer */
                "disk-make " SID " 63 " LAYER, /* below the minimum */
                "disk-make " SID " 99999999999 " LAYER,
                "disk-make " SID " -1 " LAYER,
                "disk-make " SID " +100 " LAYER,
                "disk-make " SID " 1e3 " LAYER,
                "disk-make " SID " 100x " LAYER,
                "disk-make " CID " 100 " LAYER, /* a container id is no sandbox id */
                "disk-make " SID " 100 ../" LAYER,
                "disk-make " SID " 100 " SID, /* a layer id is 64 */
                "disk-attach " SID,
                "disk-attach " SID " 100 " LAYER, /* attach takes no size */
                "undisk " SID "0",
                "undisk",
                "disks now",
                "ping pong",
        };
        struct mountd_req q;

        (void)state;
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                if (parse(bad[i], &q) != -EINVAL)
                        fail_msg("accepted: \"%s\"", bad[i]);
}

static void test_bytes(void **state)
{
        char line[MOUNTD_LINE_MAX + 8], err[200];
        struct mountd_req q;

        (void)state;
        /* a NUL inside the line: "run <id>\0..." must not read as "run <id>" */
        memcpy(line, "run " CID "\0x", 4 + 64 + 2);
        assert_int_equal(mountd_parse(line, 4 + 64 + 2, &q, err, sizeof(err)), -EINVAL);
        /* the length counts, not a NUL: a line shorter than its buffer */
        assert_int_equal(mountd_parse("ping and more", 4, &q, err, sizeof(err)), 0);
        assert_int_equal(q.verb, MOUNTD_PING);
        memset(line, 'a', sizeof(line));
        assert_int_equal(mountd_parse(line, MOUNTD_LINE_MAX, &q, err, sizeof(err)), -EINVAL);
        assert_true(mountd_hex("00ff", 4, 4));
        assert_false(mountd_hex("00ff", 5, 8));
        assert_false(mountd_hex("00fg", 4, 4));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_good),
                cmocka_unit_test(test_refused),
                cmocka_unit_test(test_bytes),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
