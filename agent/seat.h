/* sandbox-agent: a seat's private temporary directory (docs/AGENT.md,
 * "Seats"). The seats of a multi_user_shared sandbox are Linux users that
 * share one /tmp; a command run with seat=1 gets TMPDIR set to a directory
 * only its user can enter, PARENT/.seats/<uid> (PARENT is /tmp in the
 * agent), made here by the agent (root) before the command starts:
 *
 *   PARENT          must be a directory (not a link) of the agent's user,
 *                   sticky or writable by nobody else: else -EPERM, nothing
 *                   is made (a seat could rename .seats away and put its own
 *                   in its place)
 *   PARENT/.seats   the agent's, mode 0711: no seat can make, rename or
 *                   remove anything in it, nor list it. Whatever else holds
 *                   the name (a link or a file a seat planted before the
 *                   agent made it: removed; a directory of another user or
 *                   one writable by others: renamed aside to
 *                   .seats.planted.<inode>, contents untouched) is replaced;
 *                   a directory of the agent's user has its mode put back
 *   .seats/<uid>    the seat's (owner uid:gid), mode 0700, put back on
 *                   every call (a seat that opened its own up gets it closed)
 *
 * Every step is relative to an fd of the directory checked before it
 * (O_NOFOLLOW, fstat), so no link is followed on the way. */
#pragma once

#include <stddef.h>
#include <sys/types.h>

#define SEAT_TMP_PARENT "/tmp"
#define SEAT_TMP_DIR ".seats"

/* Make (or check and repair) PARENT/.seats/<uid> for user uid:gid and
 * write its path to ret_path (size bytes). Returns 0, -EPERM (PARENT is
 * not safe to hold it), -ENAMETOOLONG, or the negative errno of the step that failed (-EAGAIN: something kept
 * replacing .seats). On failure *ret_what names the step. */
int seat_tmp_prepare(const char *parent, uid_t uid, gid_t gid, char *ret_path, size_t size,
                     const char **ret_what);
