/* tarball: see tarball.h. */
#include "codec/tarball.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct membuf {
        unsigned char *data;
        size_t len, cap;
        int err;
};

static la_ssize_t membuf_write(struct archive *a, void *ud, const void *p, size_t n)
{
        struct membuf *m = ud;

        (void)a;
        if (m->len + n > m->cap) {
                size_t cap = m->cap ? m->cap : 16384;
                unsigned char *d;

                while (cap < m->len + n)
                        cap *= 2;
                d = realloc(m->data, cap);
                if (!d) {
                        m->err = -ENOMEM;
                        return -1;
                }
                m->data = d;
                m->cap = cap;
        }
        memcpy(m->data + m->len, p, n);
        m->len += n;
        return (la_ssize_t)n;
}

static void archive_write_release(struct archive *a)
{
        if (a)
                archive_write_free(a);
}

static void archive_read_release(struct archive *a)
{
        if (a)
                archive_read_free(a);
}

static void entry_release(struct archive_entry *e)
{
        if (e)
                archive_entry_free(e);
}

int tarball_pack_file(const char *name, const void *data, size_t len, mode_t mode, uid_t uid,
                      gid_t gid, void **ret_tar, size_t *ret_len)
{
        struct membuf m = { 0 };
        struct archive *a = NULL;
        struct archive_entry *e = NULL;
        int r = -EINVAL;

        if (!name || !name[0] || name[0] == '/')
                goto out;
        r = -ENOMEM;
        a = archive_write_new();
        e = archive_entry_new();
        if (!a || !e)
                goto out;
        r = -EIO;
        /* pax: long names and large files; the Docker daemon (Go archive/tar)
         * reads it. Blocks of 512 bytes: no 10 KiB padding per file. */
        if (archive_write_set_format_pax_restricted(a) != ARCHIVE_OK ||
            archive_write_set_bytes_per_block(a, 512) != ARCHIVE_OK ||
            archive_write_open2(a, &m, NULL, membuf_write, NULL, NULL) != ARCHIVE_OK)
                goto out;
        archive_entry_set_pathname(e, name);
        archive_entry_set_filetype(e, AE_IFREG);
        archive_entry_set_perm(e, mode & 07777);
        archive_entry_set_size(e, (la_int64_t)len);
        archive_entry_set_uid(e, uid);
        archive_entry_set_gid(e, gid);
        archive_entry_set_mtime(e, 0, 0);
        if (archive_write_header(a, e) != ARCHIVE_OK)
                goto out;
        if (len > 0 && archive_write_data(a, data, len) != (la_ssize_t)len)
                goto out;
        if (archive_write_close(a) != ARCHIVE_OK)
                goto out;
        r = 0;
out:
        if (r < 0 && m.err)
                r = m.err;
        entry_release(e);
        archive_write_release(a);
        if (r < 0) {
                free(m.data);
                m.data = NULL;
                m.len = 0;
        }
        *ret_tar = m.data;
        *ret_len = m.len;
        return r;
}

int tarball_unpack_file(const void *tar, size_t tar_len, size_t max_len, void **ret_data,
                        size_t *ret_len)
{
        struct archive *a = NULL;
        struct archive_entry *e;
        unsigned char *data = NULL;
        size_t len = 0;
        int r = -ENOMEM;

        a = archive_read_new();
        if (!a)
                goto out;
        r = -EPROTO;
        if (archive_read_support_format_tar(a) != ARCHIVE_OK ||
            archive_read_open_memory(a, tar, tar_len) != ARCHIVE_OK)
                goto out;
        for (;;) {
                int rc = archive_read_next_header(a, &e);
                la_int64_t size;

                if (rc == ARCHIVE_EOF) {
                        r = -ENOENT;
                        goto out;
                }
                if (rc != ARCHIVE_OK && rc != ARCHIVE_WARN)
                        goto out;
                if (archive_entry_filetype(e) == AE_IFDIR) {
                        r = -EISDIR;
                        goto out;
                }
                if (archive_entry_filetype(e) != AE_IFREG)
                        continue;
                size = archive_entry_size(e);
                if (size < 0 || (uint64_t)size > max_len) {
                        r = -EFBIG;
                        goto out;
                }
                data = malloc((size_t)size + 1);
                if (!data) {
                        r = -ENOMEM;
                        goto out;
                }
                /* Trust the bytes read, not the header, and stay under the cap. */
                for (;;) {
                        la_ssize_t n = archive_read_data(a, data + len, (size_t)size - len);

                        if (n < 0)
                                goto out;
                        if (n == 0)
                                break;
                        len += (size_t)n;
                        if (len == (size_t)size) {
                                char probe;

                                n = archive_read_data(a, &probe, 1);
                                if (n < 0)
                                        goto out;
                                if (n > 0) {
                                        r = -EFBIG;
                                        goto out;
                                }
                                break;
                        }
                }
                if (len != (size_t)size)
                        goto out; /* short: the stream was cut */
                data[len] = '\0';
                r = 0;
                goto out;
        }
out:
        archive_read_release(a);
        if (r < 0) {
                free(data);
                data = NULL;
                len = 0;
        }
        *ret_data = data;
        *ret_len = len;
        return r;
}
