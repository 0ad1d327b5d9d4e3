/* Unit tests for lib/codec/image_ref.c: image references normalised as
 * Docker does, so that the warm pool's image and a claim's compare equal
 * whatever spelling each was configured or asked with. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "codec/image_ref.h"

static void norm_is(const char *in, const char *want)
{
        char out[IMAGE_REF_MAX];
        int r = image_ref_normalize(in, out, sizeof(out));

        if (r != 0 || strcmp(out, want) != 0)
                fail_msg("'%s' -> %d '%s', want '%s'", in, r, r == 0 ? out : "", want);
}

static void norm_fails(const char *in, int want)
{
        char out[IMAGE_REF_MAX];
        int r = image_ref_normalize(in, out, sizeof(out));

        if (r != want)
                fail_msg("'%s' -> %d, want %d", in ? in : "(null)", r, want);
}

static void test_docker_hub_names(void **state)
{
        (void)state;
        norm_is("busybox", "docker.io/library/busybox:latest");
        norm_is("busybox:latest", "docker.io/library/busybox:latest");
        norm_is("library/busybox", "docker.io/library/busybox:latest");
        norm_is("docker.io/busybox", "docker.io/library/busybox:latest");
        norm_is("docker.io/library/busybox:1.36", "docker.io/library/busybox:1.36");
        norm_is("index.docker.io/library/busybox", "docker.io/library/busybox:latest");
        norm_is("index.docker.io/busybox:1", "docker.io/library/busybox:1");
        /* two components: no library/ */
        norm_is("sandbox-broker/base", "docker.io/sandbox-broker/base:latest");
        norm_is("sandbox-broker/base:latest", "docker.io/sandbox-broker/base:latest");
        norm_is("docker.io/sandbox-broker/base", "docker.io/sandbox-broker/base:latest");
        norm_is("a/b/c:v1.2-rc_3", "docker.io/a/b/c:v1.2-rc_3");
        /* "host:5000" alone is a name with a tag (Docker's reading) */
        norm_is("host:5000", "docker.io/library/host:5000");
        norm_is("localhost", "docker.io/library/localhost:latest");
}

static void test_registry_hosts(void **state)
{
        (void)state;
        norm_is("127.0.0.1:5000/team/img", "127.0.0.1:5000/team/img:latest");
        norm_is("127.0.0.1:5000/img:2", "127.0.0.1:5000/img:2");
        norm_is("localhost/img", "localhost/img:latest");
        norm_is("localhost:5000/img", "localhost:5000/img:latest");
        norm_is("registry.example.com/team/img:tag", "registry.example.com/team/img:tag");
        /* a host's name is not put under library/ */
        norm_is("registry.example.com/img", "registry.example.com/img:latest");
        /* an uppercase first component can only be a host */
        norm_is("Registry/img", "Registry/img:latest");
}

static void test_digests_are_kept(void **state)
{
        const char *d = "@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
        char in[256], want[320];

        (void)state;
        snprintf(in, sizeof(in), "busybox%s", d);
        snprintf(want, sizeof(want), "docker.io/library/busybox%s", d);
        norm_is(in, want); /* no :latest beside a digest */
        snprintf(in, sizeof(in), "busybox:1%s", d);
        snprintf(want, sizeof(want), "docker.io/library/busybox:1%s", d);
        norm_is(in, want);
        snprintf(in, sizeof(in), "127.0.0.1:5000/x%s", d);
        snprintf(want, sizeof(want), "127.0.0.1:5000/x%s", d);
        norm_is(in, want);
        norm_fails("busybox@", -EINVAL);
        norm_fails("busybox@sha256", -EINVAL);
        norm_fails("busybox@sha256:a@sha256:b", -EINVAL);
}

static void test_not_references(void **state)
{
        (void)state;
        norm_fails(NULL, -EINVAL);
        norm_fails("", -EINVAL);
        norm_fails("bad image", -EINVAL);
        norm_fails("bad\timage", -EINVAL);
        norm_fails("bad\nimage", -EINVAL);
        norm_fails("Busybox", -EINVAL); /* uppercase path */
        norm_fails("team/Img", -EINVAL);
        norm_fails("/img", -EINVAL);
        norm_fails("img/", -EINVAL);
        norm_fails("a//b", -EINVAL);
        norm_fails("img:", -EINVAL);
        norm_fails("img:a:b", -EINVAL);
        norm_fails(":tag", -EINVAL);
        norm_fails("@sha256:00", -EINVAL);
        norm_fails("host:5000/", -EINVAL);
        /* image ids name no repository */
        norm_fails("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", -EINVAL);
        norm_fails("sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                   -EINVAL);
        {
                char big[300];
                memset(big, 'a', sizeof(big) - 1);
                big[sizeof(big) - 1] = '\0';
                norm_fails(big, -EINVAL);
        }
}

static void test_small_buffer(void **state)
{
        char out[16];

        (void)state;
        assert_int_equal(image_ref_normalize("busybox", out, sizeof(out)), -E2BIG);
        assert_int_equal(image_ref_normalize("busybox", out, 0), -E2BIG);
        /* the longest accepted input fits IMAGE_REF_MAX */
        char big[256], res[IMAGE_REF_MAX];
        memset(big, 'a', 255);
        big[255] = '\0';
        assert_int_equal(image_ref_normalize(big, res, sizeof(res)), 0);
        assert_int_equal(strlen(res), strlen("docker.io/library/") + 255 + strlen(":latest"));
}

static void test_same(void **state)
{
        (void)state;
        assert_true(image_ref_same("sandbox-broker/base", "sandbox-broker/base:latest"));
        assert_true(image_ref_same("docker.io/sandbox-broker/base:latest", "sandbox-broker/base"));
        assert_true(image_ref_same("busybox", "docker.io/library/busybox:latest"));
        assert_false(image_ref_same("sandbox-broker/base", "sandbox-broker/base:1"));
        assert_false(image_ref_same("sandbox-broker/base", "sandbox-broker/tiny"));
        assert_false(image_ref_same("localhost/base", "base"));
        assert_false(image_ref_same("127.0.0.1:5000/base", "base"));
        /* what cannot be normalised compares as written */
        assert_true(image_ref_same("Not An Image", "Not An Image"));
        assert_false(image_ref_same("Not An Image", "not-an-image"));
        assert_false(image_ref_same(NULL, "busybox"));
        assert_false(image_ref_same("busybox", NULL));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_docker_hub_names), cmocka_unit_test(test_registry_hosts),
                cmocka_unit_test(test_digests_are_kept), cmocka_unit_test(test_not_references),
                cmocka_unit_test(test_small_buffer),     cmocka_unit_test(test_same),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
