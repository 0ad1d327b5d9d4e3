/* tarball: the single-file tar streams the Docker archive API speaks
 * (PUT/GET /containers/{id}/archive), made and read with libarchive. */
#pragma once
#include <stddef.h>
#include <sys/types.h>

/* Pack one regular file `name` (a relative path, no leading "/") with
 * data[0..len), mode (permission bits), uid and gid into a POSIX tar stream.
 * On success *ret_tar is malloc'ed (free()) and *ret_len its size.
 * Errors: -EINVAL (empty or absolute name), -ENOMEM, -EIO (libarchive). */
int tarball_pack_file(const char *name, const void *data, size_t len, mode_t mode, uid_t uid,
                      gid_t gid, void **ret_tar, size_t *ret_len);

/* Read the first regular file of tar[0..tar_len). On success *ret_data is
 * malloc'ed (free()), NUL-terminated for convenience, *ret_len its size.
 * Errors: -EISDIR (the first entry is a directory), -ENOENT (no regular
 * file), -EFBIG (the file is over max_len), -EPROTO (not a tar stream),
 * -ENOMEM. Other entry types (symlinks, ...) before the file are skipped. */
int tarball_unpack_file(const void *tar, size_t tar_len, size_t max_len, void **ret_data,
                        size_t *ret_len);
