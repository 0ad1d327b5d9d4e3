/* sandbox-agent: the PID guard of a seat's command tree (seat_guard.c;
 * docs/AGENT.md, "Seats"; what it answers: seat_pidguard.h).
 *
 * exec_spawn makes a socketpair for a seat's command; the command's child,
 * after it became the seat's user and before it execs, calls
 * seat_guard_install: no_new_privs (no capability needed), then the
 * pidguard filter with a user-notification listener, whose fd it sends
 * back over the socket (SCM_RIGHTS) and closes. Seccomp filters are
 * inherited by every fork and exec and cannot be removed: the whole tree
 * is covered. The handler then calls seat_guard_start: a guard process
 * (a grandchild, so PID 1 reaps it) of the seat's own uid:gid, not
 * dumpable (no other process of the seat can ptrace it, read its memory
 * or take its fds), answers the tree's notifications one at a time, as
 * fast as the kernel hands them over (nothing is queued by us: the waiting
 * callers are the queue), and exits when the last process of the tree is
 * gone (the listener then reads POLLHUP). One listener and one guard per
 * seat command tree: the seats' guards never wait on each other.
 *
 * A guard answers "is PID mine" with kill(PID, 0) as the seat's own user:
 * 0 exactly when the kernel lets that user signal it, i.e. it is one of
 * the seat's processes. A seat can kill its own guard: its tree's guarded
 * calls then fail with ENOSYS (the kernel's answer without a listener),
 * which tells nothing either. */
#pragma once

#include <sys/types.h>

/* In the command's child, as the seat's user: the filter and its listener
 * sent over sock. Returns 0; -EOPNOTSUPP when the kernel has no user
 * notification (gVisor: the command then runs unguarded, docs/API.md);
 * else the negative errno of the step named in *ret_what. Async-signal-
 * safe, no allocation (the child shares the handler's memory). */
int seat_guard_install(int sock, const char **ret_what);

/* In the handler, once the child exec'd: the listener from sock (none
 * there: -ENOENT, nothing started) served by a guard process of uid:gid.
 * Returns 0 or -errno; the listener is closed here either way. */
int seat_guard_start(int sock, uid_t uid, gid_t gid);

/* The guard's loop over listener (as uid, already): until the tree is
 * gone or the listener fails. Returns the number of answers given. */
long seat_guard_serve(int listener, uid_t uid);
