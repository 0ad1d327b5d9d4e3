/* Unit tests for agent/seat_pidguard.c (a seat may not learn whether a PID
 * of another user exists): the answer for each call form, against an owner
 * table that owns PID 100, group 100 and uid 1000 (every other PID, group
 * or uid: ESRCH, or EINVAL where that is the kernel's answer for a PID that
 * does not exist: CPU clocks, PR_SET_PTRACER; the caller's own 0/-1 forms
 * asked of nobody); only the
 * low 32 bits of an argument count, as for the kernel; and the seccomp
 * program itself, run by a small cBPF interpreter and then loaded into the
 * kernel of a child (without a listener: the guarded calls then fail with
 * ENOSYS, every other call works). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "seat_pidguard.h"

#define MINE 100
#define THEIRS 200
#define MY_UID 1000

static int asked; /* how many times owned() was asked */

static bool owned(void *ctx, enum pidguard_target t, long long id)
{
        (void)ctx;
        asked++;
        if (t == PIDGUARD_USER)
                return id == MY_UID;
        return id == MINE;
}

static int decide3(uint32_t arch, int nr, uint64_t a0, uint64_t a1, uint64_t a2)
{
        const uint64_t args[6] = { a0, a1, a2, 0, 0, 0 };

        return pidguard_decide(arch, nr, args, owned, NULL);
}

static int native3(int nr, uint64_t a0, uint64_t a1, uint64_t a2)
{
        return decide3(PIDGUARD_ARCH, nr, a0, a1, a2);
}

#define NEG(x) ((uint64_t)(uint32_t)(int32_t)(x))

static void test_kill_forms(void **state)
{
        (void)state;
        assert_int_equal(native3(SYS_kill, MINE, 0, 0), 0);
        assert_int_equal(native3(SYS_kill, THEIRS, 0, 0), ESRCH);
        assert_int_equal(native3(SYS_kill, NEG(-MINE), 0, 0), 0); /* my group */
        assert_int_equal(native3(SYS_kill, NEG(-THEIRS), 0, 0), ESRCH);
        asked = 0;
        assert_int_equal(native3(SYS_kill, 0, 9, 0), 0);            /* my group */
        assert_int_equal(native3(SYS_kill, NEG(-1), 9, 0), 0);      /* all I may */
        assert_int_equal(native3(SYS_kill, NEG(INT_MIN), 9, 0), 0); /* the kernel's ESRCH */
        assert_int_equal(asked, 0);
        /* a pid_t is the low 32 bits: the rest is not a way around */
        assert_int_equal(native3(SYS_kill, 0xffffffff00000000ULL | THEIRS, 0, 0), ESRCH);
        assert_int_equal(native3(SYS_kill, 0x100000000ULL, 0, 0), 0); /* that is kill(0) */
        assert_int_equal(native3(SYS_tkill, THEIRS, 0, 0), ESRCH);
        assert_int_equal(native3(SYS_tgkill, MINE, THEIRS, 0), ESRCH);
        assert_int_equal(native3(SYS_tgkill, THEIRS, MINE, 0), ESRCH);
        assert_int_equal(native3(SYS_tgkill, MINE, MINE, 0), 0);
        assert_int_equal(native3(SYS_rt_sigqueueinfo, THEIRS, 0, 0), ESRCH);
        assert_int_equal(native3(SYS_rt_tgsigqueueinfo, MINE, THEIRS, 0), ESRCH);
        assert_int_equal(native3(SYS_pidfd_open, THEIRS, 0, 0), ESRCH);
        assert_int_equal(native3(SYS_pidfd_open, MINE, 0, 0), 0);
}

static void test_pid_forms(void **state)
{
        static const int calls[] = {
                SYS_getpgid,
                SYS_getsid,
                SYS_setpgid,
                SYS_sched_setparam,
                SYS_sched_getparam,
                SYS_sched_setscheduler,
                SYS_sched_getscheduler,
                SYS_sched_rr_get_interval,
                SYS_sched_setaffinity,
                SYS_sched_getaffinity,
                SYS_sched_setattr,
                SYS_sched_getattr,
                SYS_prlimit64,
                SYS_process_vm_readv,
                SYS_process_vm_writev,
                SYS_get_robust_list,
                SYS_migrate_pages,
                SYS_move_pages,
        };

        (void)state;
        for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
                asked = 0;
                assert_int_equal(native3(calls[i], THEIRS, 0, 0), ESRCH);
                assert_int_equal(native3(calls[i], MINE, 0, 0), 0);
                assert_int_equal(native3(calls[i], 0, 0, 0), 0);       /* the caller */
                assert_int_equal(native3(calls[i], NEG(-5), 0, 0), 0); /* EINVAL anyway */
                assert_int_equal(asked, 2);
        }
        assert_int_equal(native3(SYS_kcmp, MINE, THEIRS, 0), ESRCH);
        assert_int_equal(native3(SYS_kcmp, THEIRS, MINE, 0), ESRCH);
        assert_int_equal(native3(SYS_kcmp, MINE, MINE, 0), 0);
        assert_int_equal(native3(SYS_ptrace, 0 /* PTRACE_TRACEME */, THEIRS, 0), 0);
        assert_int_equal(native3(SYS_ptrace, 16 /* PTRACE_ATTACH */, THEIRS, 0), ESRCH);
        assert_int_equal(native3(SYS_ptrace, 0x4206 /* PTRACE_SEIZE */, MINE, 0), 0);
}

static void test_which_who(void **state)
{
        (void)state;
        /* getpriority: PRIO_PROCESS 0, PRIO_PGRP 1, PRIO_USER 2 */
        assert_int_equal(native3(SYS_getpriority, 0, THEIRS, 0), ESRCH);
        assert_int_equal(native3(SYS_getpriority, 0, MINE, 0), 0);
        assert_int_equal(native3(SYS_setpriority, 1, THEIRS, 19), ESRCH);
        assert_int_equal(native3(SYS_setpriority, 1, MINE, 19), 0);
        assert_int_equal(native3(SYS_getpriority, 2, 2000, 0), ESRCH); /* another's uid */
        assert_int_equal(native3(SYS_getpriority, 2, MY_UID, 0), 0);
        asked = 0;
        assert_int_equal(native3(SYS_getpriority, 2, 0, 0), 0); /* my own uid */
        assert_int_equal(native3(SYS_getpriority, 0, 0, 0), 0);
        assert_int_equal(native3(SYS_getpriority, 7, THEIRS, 0), 0); /* EINVAL */
        assert_int_equal(asked, 0);
        /* ioprio: WHO_PROCESS 1, WHO_PGRP 2, WHO_USER 3 */
        assert_int_equal(native3(SYS_ioprio_get, 1, THEIRS, 0), ESRCH);
        assert_int_equal(native3(SYS_ioprio_get, 2, THEIRS, 0), ESRCH);
        assert_int_equal(native3(SYS_ioprio_set, 3, 2000, 0), ESRCH);
        assert_int_equal(native3(SYS_ioprio_get, 3, MY_UID, 0), 0);
        assert_int_equal(native3(SYS_ioprio_get, 1, MINE, 0), 0);
        assert_int_equal(native3(SYS_ioprio_get, 0, THEIRS, 0), 0); /* EINVAL */
}

static void test_setown_perf_and_others(void **state)
{
        uint64_t args[6] = { 0, THEIRS, 0, 0, 0, 0 };

        (void)state;
        assert_int_equal(native3(SYS_fcntl, 3, F_SETOWN, THEIRS), ESRCH);
        assert_int_equal(native3(SYS_fcntl, 3, F_SETOWN, NEG(-THEIRS)), ESRCH);
        assert_int_equal(native3(SYS_fcntl, 3, F_SETOWN, MINE), 0);
        assert_int_equal(native3(SYS_fcntl, 3, F_SETOWN, NEG(-MINE)), 0);
        assert_int_equal(native3(SYS_fcntl, 3, F_SETOWN, 0), 0);
        /* F_SETOWN -1: process group 1, not the seat's */
        assert_int_equal(native3(SYS_fcntl, 3, F_SETOWN, NEG(-1)), ESRCH);
        asked = 0;
        assert_int_equal(native3(SYS_fcntl, 3, F_GETFL, THEIRS), 0);
        assert_int_equal(native3(SYS_getpid, THEIRS, 0, 0), 0);           /* not a guarded call */
        assert_int_equal(decide3(0x12345678, SYS_kill, THEIRS, 0, 0), 0); /* never sent */
        assert_int_equal(asked, 0);
        assert_int_equal(pidguard_decide(PIDGUARD_ARCH, SYS_perf_event_open, args, owned, NULL),
                         ESRCH);
        args[4] = 1U << 2; /* PERF_FLAG_PID_CGROUP: a cgroup fd, not a PID */
        assert_int_equal(pidguard_decide(PIDGUARD_ARCH, SYS_perf_event_open, args, owned, NULL), 0);
        args[4] = 0;
        args[1] = NEG(-1); /* every process on a CPU */
        assert_int_equal(pidguard_decide(PIDGUARD_ARCH, SYS_perf_event_open, args, owned, NULL), 0);
        /* prctl(PR_SET_PTRACER, pid) (Yama) */
        assert_int_equal(native3(SYS_prctl, 0x59616d61, THEIRS, 0), EINVAL);
        assert_int_equal(native3(SYS_prctl, 0x59616d61, MINE, 0), 0);
        assert_int_equal(native3(SYS_prctl, 0x59616d61, (uint64_t)-1, 0), 0); /* any */
        assert_int_equal(native3(SYS_prctl, PR_SET_NAME, THEIRS, 0), 0);
#if defined(__x86_64__)
        /* the i386 numbers: kill 37, getsid 147, fcntl64 221; getpid 20 is not guarded */
        assert_int_equal(decide3(PIDGUARD_ARCH_I386, 37, THEIRS, 0, 0), ESRCH);
        assert_int_equal(decide3(PIDGUARD_ARCH_I386, 147, THEIRS, 0, 0), ESRCH);
        assert_int_equal(decide3(PIDGUARD_ARCH_I386, 221, 3, F_SETOWN, THEIRS), ESRCH);
        assert_int_equal(decide3(PIDGUARD_ARCH_I386, 37, MINE, 0, 0), 0);
        assert_int_equal(decide3(PIDGUARD_ARCH_I386, 20, THEIRS, 0, 0), 0);
#endif
}

#define F_SETOWN_EX_ 15
#define F_GETOWN_EX_ 16
#define FIOSETOWN_ 0x8901
#define SIOCSPGRP_ 0x8902
#define TIOCSPGRP_ 0x5410
#define TIOCGPGRP_ 0x540f
#define FIONREAD_ 0x541b

/* The owner set through a pointer: F_SETOWN_EX, FIOSETOWN and SIOCSPGRP
 * are EPERM whatever they point to (nothing asked, nothing read); for
 * TIOCSPGRP the guard reads the group and asks pidguard_tiocspgrp. */
static void test_owner_through_a_pointer(void **state)
{
        (void)state;
        asked = 0;
        assert_int_equal(native3(SYS_fcntl, 3, F_SETOWN_EX_, 0x7fff0000), EPERM);
        assert_int_equal(native3(SYS_fcntl, 3, 0x100000000ULL | F_SETOWN_EX_, 0), EPERM);
        assert_int_equal(native3(SYS_fcntl, 3, F_GETOWN_EX_, 0x7fff0000), 0);
        assert_int_equal(native3(SYS_ioctl, 3, FIOSETOWN_, 0x7fff0000), EPERM);
        assert_int_equal(native3(SYS_ioctl, 3, SIOCSPGRP_, 0), EPERM);
        assert_int_equal(native3(SYS_ioctl, 3, TIOCSPGRP_, 0x7fff0000), PIDGUARD_TIOCSPGRP);
        /* the cmd is an unsigned int: the high bits are no way around */
        assert_int_equal(native3(SYS_ioctl, 3, 0xffffffff00000000ULL | TIOCSPGRP_, 0),
                         PIDGUARD_TIOCSPGRP);
        assert_int_equal(native3(SYS_ioctl, 3, TIOCGPGRP_, 0x7fff0000), 0);
        assert_int_equal(native3(SYS_ioctl, 3, FIONREAD_, 0x7fff0000), 0);
        assert_int_equal(asked, 0);
        /* the group read from memory */
        assert_int_equal(pidguard_tiocspgrp(MINE, owned, NULL), 0);
        assert_int_equal(asked, 1);
        assert_int_equal(pidguard_tiocspgrp(THEIRS, owned, NULL), ESRCH);
        asked = 0;
        assert_int_equal(pidguard_tiocspgrp(0, owned, NULL), ESRCH); /* no group 0 */
        assert_int_equal(pidguard_tiocspgrp(1, owned, NULL), ESRCH); /* nobody's of the seat */
        assert_int_equal(pidguard_tiocspgrp(-MINE, owned, NULL), EINVAL);
        assert_int_equal(pidguard_tiocspgrp(INT_MIN, owned, NULL), EINVAL);
        assert_int_equal(asked, 0);
#if defined(__x86_64__)
        /* i386: ioctl 54, fcntl 55, fcntl64 221 */
        assert_int_equal(decide3(PIDGUARD_ARCH_I386, 54, 3, TIOCSPGRP_, 0), PIDGUARD_TIOCSPGRP);
        assert_int_equal(decide3(PIDGUARD_ARCH_I386, 54, 3, SIOCSPGRP_, 0), EPERM);
        assert_int_equal(decide3(PIDGUARD_ARCH_I386, 54, 3, FIONREAD_, 0), 0);
        assert_int_equal(decide3(PIDGUARD_ARCH_I386, 221, 3, F_SETOWN_EX_, 0), EPERM);
        assert_int_equal(decide3(PIDGUARD_ARCH_I386, 55, 3, F_SETOWN_EX_, 0), EPERM);
#endif
}

/* A CPU clock of pid (which 2: CPUCLOCK_SCHED), as clock_getcpuclockid. */
static uint64_t cpuclock(int pid, int perthread)
{
        return (uint64_t)(uint32_t)(int)((~(unsigned)pid << 3) | (unsigned)perthread << 2 | 2);
}

static void test_cpu_clocks(void **state)
{
        static const int calls[] = { SYS_clock_gettime, SYS_clock_getres,    SYS_clock_settime,
                                     SYS_clock_adjtime, SYS_clock_nanosleep, SYS_timer_create };

        (void)state;
        for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
                /* EINVAL: the kernel's answer for a clock of no process */
                assert_int_equal(native3(calls[i], cpuclock(THEIRS, 0), 0, 0), EINVAL);
                assert_int_equal(native3(calls[i], cpuclock(THEIRS, 1), 0, 0), EINVAL);
                assert_int_equal(native3(calls[i], cpuclock(MINE, 0), 0, 0), 0);
                asked = 0;
                assert_int_equal(native3(calls[i], cpuclock(0, 0), 0, 0), 0); /* the caller's */
                assert_int_equal(native3(calls[i], 1 /* CLOCK_MONOTONIC */, 0, 0), 0);
                assert_int_equal(native3(calls[i], NEG((int)((~3U << 3) | 3)), 0, 0), 0); /* fd 3's */
                assert_int_equal(asked, 0);
        }
}

/* capget: the header's PID, read by the guard, which then makes the call. */
static void test_capget(void **state)
{
        uint64_t args[6] = { 0x1000, 0x2000, 0, 0, 0, 0 };
        uint32_t v = PIDGUARD_CAP_V3;

        (void)state;
        assert_int_equal(pidguard_decide(PIDGUARD_ARCH, SYS_capget, args, owned, NULL),
                         PIDGUARD_CAPGET);
#if defined(__x86_64__)
        assert_int_equal(pidguard_decide(PIDGUARD_ARCH_I386, 184, args, owned, NULL),
                         PIDGUARD_CAPGET);
#endif
        assert_int_equal(pidguard_capget(&v, THEIRS, true, owned, NULL), -ESRCH);
        assert_int_equal(pidguard_capget(&v, MINE, true, owned, NULL), 1);
        asked = 0;
        assert_int_equal(pidguard_capget(&v, 0, true, owned, NULL), 1); /* the caller */
        assert_int_equal(pidguard_capget(&v, -3, true, owned, NULL), -EINVAL);
        /* no data: a version probe, 0 whatever the PID, nothing looked up */
        assert_int_equal(pidguard_capget(&v, THEIRS, false, owned, NULL), 0);
        assert_int_equal(v, PIDGUARD_CAP_V3);
        v = PIDGUARD_CAP_V1;
        assert_int_equal(pidguard_capget(&v, 0, true, owned, NULL), 1);
        assert_int_equal(v, PIDGUARD_CAP_V1);
        /* an unknown version: the kernel's written back, EINVAL (0 without data) */
        v = 42;
        assert_int_equal(pidguard_capget(&v, THEIRS, true, owned, NULL), -EINVAL);
        assert_int_equal(v, PIDGUARD_CAP_V3);
        v = 42;
        assert_int_equal(pidguard_capget(&v, THEIRS, false, owned, NULL), 0);
        assert_int_equal(v, PIDGUARD_CAP_V3);
        assert_int_equal(asked, 0);
}

/* ---------------------------------------------------- the seccomp program */

#define RET_ALLOW 0x7fff0000U
#define RET_NOTIFY 0x7fc00000U
#define RET_ENOSYS (0x00050000U | ENOSYS)

/* The subset of cBPF that pidguard_filter emits; anything else fails. */
static uint32_t run(const struct pidguard_insn *p, size_t n, const struct pidguard_data *d)
{
        uint32_t acc = 0;

        for (size_t pc = 0; pc < n; pc++) {
                const struct pidguard_insn *i = &p[pc];

                switch (i->code) {
                case 0x20: /* ld [k] */
                        assert_true(i->k % 4 == 0 && i->k + 4 <= sizeof(*d));
                        memcpy(&acc, (const char *)d + i->k, 4);
                        break;
                case 0x15: /* jeq #k */ pc += acc == i->k ? i->jt : i->jf; break;
                case 0x35: /* jge #k */ pc += acc >= i->k ? i->jt : i->jf; break;
                case 0x06: /* ret #k */ return i->k;
                default: fail_msg("opcode %#x", i->code);
                }
        }
        fail_msg("ran off the end");
        return 0;
}

static uint32_t filter(uint32_t arch, int nr, uint64_t a1)
{
        struct pidguard_insn prog[PIDGUARD_FILTER_MAX];
        struct pidguard_data d = { .nr = nr, .arch = arch, .args = { 3, a1, THEIRS } };
        size_t n = pidguard_filter(prog);

        assert_true(n > 0 && n <= PIDGUARD_FILTER_MAX);
        return run(prog, n, &d);
}

/* The same with arg0 given (the clocks, prctl). */
static uint32_t filter0(uint32_t arch, int nr, uint64_t a0)
{
        struct pidguard_insn prog[PIDGUARD_FILTER_MAX];
        struct pidguard_data d = { .nr = nr, .arch = arch, .args = { a0, THEIRS, THEIRS } };

        return run(prog, pidguard_filter(prog), &d);
}

static void test_filter_program(void **state)
{
        (void)state;
        assert_int_equal(filter(PIDGUARD_ARCH, SYS_kill, 0), RET_NOTIFY);
        assert_int_equal(filter(PIDGUARD_ARCH, SYS_getsid, 0), RET_NOTIFY);
        assert_int_equal(filter(PIDGUARD_ARCH, SYS_perf_event_open, 0), RET_NOTIFY);
        assert_int_equal(filter(PIDGUARD_ARCH, SYS_getpid, 0), RET_ALLOW);
        assert_int_equal(filter(PIDGUARD_ARCH, SYS_read, 0), RET_ALLOW);
        assert_int_equal(filter(PIDGUARD_ARCH, SYS_fcntl, F_SETOWN), RET_NOTIFY);
        assert_int_equal(filter(PIDGUARD_ARCH, SYS_fcntl, F_GETFL), RET_ALLOW);
        assert_int_equal(filter(PIDGUARD_ARCH, SYS_fcntl, 0x100000000ULL | F_SETOWN), RET_NOTIFY);
        assert_int_equal(filter(PIDGUARD_ARCH, SYS_fcntl, F_SETOWN_EX_), RET_NOTIFY);
        assert_int_equal(filter(PIDGUARD_ARCH, SYS_fcntl, F_GETOWN_EX_), RET_ALLOW);
        assert_int_equal(filter(PIDGUARD_ARCH, SYS_ioctl, FIOSETOWN_), RET_NOTIFY);
        assert_int_equal(filter(PIDGUARD_ARCH, SYS_ioctl, SIOCSPGRP_), RET_NOTIFY);
        assert_int_equal(filter(PIDGUARD_ARCH, SYS_ioctl, TIOCSPGRP_), RET_NOTIFY);
        assert_int_equal(filter(PIDGUARD_ARCH, SYS_ioctl, 0xffffffff00000000ULL | TIOCSPGRP_),
                         RET_NOTIFY);
        assert_int_equal(filter(PIDGUARD_ARCH, SYS_ioctl, TIOCGPGRP_), RET_ALLOW);
        assert_int_equal(filter(PIDGUARD_ARCH, SYS_ioctl, FIONREAD_), RET_ALLOW);
        assert_int_equal(filter0(PIDGUARD_ARCH, SYS_clock_gettime, cpuclock(THEIRS, 0)), RET_NOTIFY);
        assert_int_equal(filter0(PIDGUARD_ARCH, SYS_clock_gettime, 1), RET_ALLOW);
        assert_int_equal(filter0(PIDGUARD_ARCH, SYS_clock_nanosleep, 0), RET_ALLOW);
        assert_int_equal(filter0(PIDGUARD_ARCH, SYS_prctl, 0x59616d61), RET_NOTIFY);
        assert_int_equal(filter0(PIDGUARD_ARCH, SYS_prctl, PR_SET_NAME), RET_ALLOW);
        /* every call pidguard_decide can refuse is sent; none it ignores */
        for (int nr = 0; nr < 512; nr++) {
                uint64_t args[6] = { THEIRS, THEIRS, THEIRS, 0, 0, 0 };
                uint32_t ret = filter(PIDGUARD_ARCH, nr, nr == SYS_fcntl ? F_SETOWN : THEIRS);

                asked = 0;
                (void)pidguard_decide(PIDGUARD_ARCH, nr, args, owned, NULL);
                if (nr == SYS_fcntl)
                        continue;
                /* (which/who calls: which 200 is EINVAL, nobody asked;
                 * capget: the guard reads its header) */
                assert_int_equal(ret == RET_NOTIFY,
                                 asked > 0 || nr == SYS_getpriority || nr == SYS_setpriority ||
                                         nr == SYS_ioprio_get || nr == SYS_ioprio_set ||
                                         nr == SYS_capget);
        }
#if defined(__x86_64__)
        assert_int_equal(filter(PIDGUARD_ARCH, SYS_kill | PIDGUARD_X32_BIT, 0), RET_ENOSYS);
        assert_int_equal(filter(PIDGUARD_ARCH, SYS_getpid | PIDGUARD_X32_BIT, 0), RET_ENOSYS);
        assert_int_equal(filter(PIDGUARD_ARCH_I386, 37, 0), RET_NOTIFY);
        assert_int_equal(filter(PIDGUARD_ARCH_I386, 221, F_SETOWN), RET_NOTIFY);
        assert_int_equal(filter(PIDGUARD_ARCH_I386, 55, F_SETOWN), RET_NOTIFY);
        assert_int_equal(filter(PIDGUARD_ARCH_I386, 221, F_GETFL), RET_ALLOW);
        assert_int_equal(filter(PIDGUARD_ARCH_I386, 221, F_SETOWN_EX_), RET_NOTIFY);
        assert_int_equal(filter(PIDGUARD_ARCH_I386, 54, TIOCSPGRP_), RET_NOTIFY);
        assert_int_equal(filter(PIDGUARD_ARCH_I386, 54, FIOSETOWN_), RET_NOTIFY);
        assert_int_equal(filter(PIDGUARD_ARCH_I386, 54, FIONREAD_), RET_ALLOW);
        assert_int_equal(filter(PIDGUARD_ARCH_I386, 20, 0), RET_ALLOW);
        assert_int_equal(filter0(PIDGUARD_ARCH_I386, 265, cpuclock(THEIRS, 0)), RET_NOTIFY);
        assert_int_equal(filter0(PIDGUARD_ARCH_I386, 403, cpuclock(THEIRS, 0)), RET_NOTIFY);
        assert_int_equal(filter0(PIDGUARD_ARCH_I386, 403, 0), RET_ALLOW);
        assert_int_equal(filter(PIDGUARD_ARCH_AARCH64, SYS_getpid, 0), RET_ENOSYS);
#endif
}

#if defined(__x86_64__)
static long int80(long nr, long a, long b)
{
        long ret;

        __asm__ volatile("int $0x80" : "=a"(ret) : "a"(nr), "b"(a), "c"(b) : "memory");
        return ret;
}
#endif

/* The program in a real kernel, without a listener: a guarded call fails
 * with ENOSYS, others work. The child reports by its exit code. */
static void test_filter_in_the_kernel(void **state)
{
        struct pidguard_insn prog[PIDGUARD_FILTER_MAX];
        struct {
                unsigned short len;
                struct pidguard_insn *filter;
        } fp = { (unsigned short)pidguard_filter(prog), prog };
        int status;
        pid_t pid;

        (void)state;
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                int code = 0;

                if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
                    syscall(SYS_seccomp, 1 /* SET_MODE_FILTER */, 0, &fp) < 0)
                        _exit(10);
                if (!(kill(getpid(), 0) < 0 && errno == ENOSYS))
                        code |= 1;
                if (!(getsid(0) < 0 && errno == ENOSYS))
                        code |= 2;
                if (!(fcntl(0, F_SETOWN, getpid()) < 0 && errno == ENOSYS))
                        code |= 4;
                {
                        int own[2] = { 1 /* F_OWNER_PID */, getpid() }, pg = getpgrp();

                        /* the owner through a pointer: sent; its reads are not */
                        if (!(fcntl(0, F_SETOWN_EX_, own) < 0 && errno == ENOSYS) ||
                            !(ioctl(0, TIOCSPGRP_, &pg) < 0 && errno == ENOSYS) ||
                            !(ioctl(0, FIOSETOWN_, &pg) < 0 && errno == ENOSYS) ||
                            fcntl(0, F_GETOWN_EX_, own) < 0 ||
                            (ioctl(0, TIOCGPGRP_, &pg) < 0 && errno == ENOSYS))
                                code |= 128;
                }
                if (fcntl(0, F_GETFD) < 0 || getpid() <= 0 || getppid() <= 0)
                        code |= 8;
                {
                        struct timespec ts;

                        if (syscall(SYS_clock_gettime, (clockid_t)cpuclock(getppid(), 0), &ts) != -1 ||
                            errno != ENOSYS || syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts) != 0)
                                code |= 64;
                }
#if defined(__x86_64__)
                if (int80(37, getpid(), 0) != -ENOSYS) /* i386 kill */
                        code |= 16;
                if (int80(20, 0, 0) != getpid() && int80(20, 0, 0) != -ENOSYS)
                        code |= 32; /* i386 getpid: works (or no IA32 emulation at all) */
#endif
                _exit(code);
        }
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_kill_forms),
                cmocka_unit_test(test_pid_forms),
                cmocka_unit_test(test_which_who),
                cmocka_unit_test(test_setown_perf_and_others),
                cmocka_unit_test(test_owner_through_a_pointer),
                cmocka_unit_test(test_cpu_clocks),
                cmocka_unit_test(test_capget),
                cmocka_unit_test(test_filter_program),
                cmocka_unit_test(test_filter_in_the_kernel),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
