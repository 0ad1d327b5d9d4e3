/* Unit tests for lib/codec/tarball.c: single-file tar streams round trip binary
 * content, empty files and caps; directories and garbage are refused. */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "codec/tarball.h"

static void roundtrip(const void *data, size_t len)
{
        void *tar = NULL, *out = NULL;
        size_t tar_len = 0, out_len = 99;

        assert_int_equal(tarball_pack_file("dir/file.bin", data, len, 0640, 1000, 1001, &tar,
                                           &tar_len), 0);
        assert_true(tar_len >= 1024 && tar_len % 512 == 0);
        assert_int_equal(tarball_unpack_file(tar, tar_len, len, &out, &out_len), 0);
        assert_int_equal(out_len, len);
        if (len)
                assert_memory_equal(out, data, len);
        assert_int_equal(((char *)out)[len], '\0');
        free(out);
        free(tar);
}

static void test_roundtrip_binary(void **state)
{
        size_t n = 300000;
        unsigned char *data = malloc(n);

        (void)state;
        assert_non_null(data);
        for (size_t i = 0; i < n; i++)
                data[i] = (unsigned char)(i * 7 + (i >> 9)); /* every byte value, NULs too */
        roundtrip(data, n);
        roundtrip("\0\0\0x\0", 5);
        roundtrip("\xff", 1);
        free(data);
}

static void test_roundtrip_empty(void **state)
{
        (void)state;
        roundtrip("", 0);
}

/* uid, gid and mode land in the header (the archive API applies them). */
static void test_header_fields(void **state)
{
        struct archive *a = archive_read_new();
        struct archive_entry *e;
        void *tar = NULL;
        size_t tar_len = 0;

        (void)state;
        assert_int_equal(tarball_pack_file(".sb-stdin-x", "abc", 3, 0600, 1234, 99, &tar, &tar_len),
                         0);
        archive_read_support_format_tar(a);
        assert_int_equal(archive_read_open_memory(a, tar, tar_len), ARCHIVE_OK);
        assert_int_equal(archive_read_next_header(a, &e), ARCHIVE_OK);
        assert_string_equal(archive_entry_pathname(e), ".sb-stdin-x");
        assert_int_equal(archive_entry_uid(e), 1234);
        assert_int_equal(archive_entry_gid(e), 99);
        assert_int_equal(archive_entry_perm(e), 0600);
        assert_int_equal(archive_entry_filetype(e), AE_IFREG);
        assert_int_equal(archive_entry_size(e), 3);
        archive_read_free(a);
        free(tar);
}

static void test_too_large(void **state)
{
        void *tar = NULL, *out = (void *)1;
        size_t tar_len = 0, out_len = 1;

        (void)state;
        assert_int_equal(tarball_pack_file("f", "0123456789", 10, 0644, 0, 0, &tar, &tar_len), 0);
        assert_int_equal(tarball_unpack_file(tar, tar_len, 9, &out, &out_len), -EFBIG);
        assert_null(out);
        assert_int_equal(out_len, 0);
        assert_int_equal(tarball_unpack_file(tar, tar_len, 10, &out, &out_len), 0);
        free(out);
        free(tar);
}

static void test_bad_names(void **state)
{
        void *tar = (void *)1;
        size_t tar_len = 1;

        (void)state;
        assert_int_equal(tarball_pack_file("/abs", "x", 1, 0644, 0, 0, &tar, &tar_len), -EINVAL);
        assert_null(tar);
        assert_int_equal(tarball_pack_file("", "x", 1, 0644, 0, 0, &tar, &tar_len), -EINVAL);
}

/* What Docker answers for GET archive of a directory: the directory first. */
static void test_directory(void **state)
{
        struct archive *a = archive_write_new();
        struct archive_entry *e = archive_entry_new();
        static char buf[16384];
        size_t used = 0;
        void *out = NULL;
        size_t out_len = 0;

        (void)state;
        archive_write_set_format_pax_restricted(a);
        assert_int_equal(archive_write_open_memory(a, buf, sizeof(buf), &used), ARCHIVE_OK);
        archive_entry_set_pathname(e, "home");
        archive_entry_set_filetype(e, AE_IFDIR);
        archive_entry_set_perm(e, 0755);
        assert_int_equal(archive_write_header(a, e), ARCHIVE_OK);
        archive_entry_clear(e);
        archive_entry_set_pathname(e, "home/f");
        archive_entry_set_filetype(e, AE_IFREG);
        archive_entry_set_size(e, 1);
        assert_int_equal(archive_write_header(a, e), ARCHIVE_OK);
        assert_int_equal(archive_write_data(a, "x", 1), 1);
        archive_write_close(a);
        archive_write_free(a);
        archive_entry_free(e);
        assert_int_equal(tarball_unpack_file(buf, used, 100, &out, &out_len), -EISDIR);
        assert_null(out);
}

static void test_garbage(void **state)
{
        static const char junk[1024] = "this is not a tar stream";
        void *out = NULL;
        size_t out_len = 0;
        int r;

        (void)state;
        r = tarball_unpack_file(junk, sizeof(junk), 100, &out, &out_len);
        assert_true(r == -EPROTO || r == -ENOENT);
        assert_null(out);
        r = tarball_unpack_file("", 0, 100, &out, &out_len);
        assert_true(r == -EPROTO || r == -ENOENT);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_roundtrip_binary), cmocka_unit_test(test_roundtrip_empty),
                cmocka_unit_test(test_header_fields),    cmocka_unit_test(test_too_large),
                cmocka_unit_test(test_bad_names),        cmocka_unit_test(test_directory),
                cmocka_unit_test(test_garbage),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
