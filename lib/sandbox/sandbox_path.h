/* sandbox_path: client paths inside a sandbox, checked before any call.
 *
 * A path must be 1..4095 bytes without NUL and without a ".." component;
 * a relative path is taken from the lease's workdir. With `confine` (shared
 * sandboxes) the result must stay inside the workdir, so one session or user
 * cannot name another's files through the file API. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#define SANDBOX_PATH_MAX 4096

/* Resolve path against workdir into out (normalised: no "//", no "/./",
 * no trailing "/"). Returns 0 or -EINVAL with a reason in why (128 bytes). */
int sandbox_path_resolve(const char *workdir, const char *path, bool confine, char *out,
                         size_t size, char *why);
