/* sandbox_path: client paths inside a sandbox, checked before any call.
 *
 * A path must be 1..4095 bytes (PATH_MAX less the NUL) without NUL, without
 * a ".." component and without a component over 255 bytes (NAME_MAX, what
 * every Linux file system allows: a longer name would fail inside the
 * sandbox with ENAMETOOLONG, so it is refused here as the client's error);
 * a relative path is taken from the lease's workdir. With `confine` (shared
 * sandboxes) the result must stay inside the workdir, so one session or user
 * cannot name another's files through the file API. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#define SANDBOX_PATH_MAX 4096 /* PATH_MAX: a path's bytes with its NUL */
#define SANDBOX_NAME_MAX 255  /* NAME_MAX: one component's bytes */

/* Check the lengths of path (not yet normalised): at most
 * SANDBOX_PATH_MAX - 1 bytes, no component ("/"-separated) over
 * SANDBOX_NAME_MAX. Returns 0, or -ENAMETOOLONG with the reason in why
 * (128 bytes; why may be NULL). */
int sandbox_path_check_lengths(const char *path, char *why);

/* Resolve path against workdir into out (normalised: no "//", no "/./",
 * no trailing "/"). Returns 0 or -EINVAL with a reason in why (128 bytes). */
int sandbox_path_resolve(const char *workdir, const char *path, bool confine, char *out,
                         size_t size, char *why);
