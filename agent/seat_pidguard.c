/* sandbox-agent: the calls that look a PID up, their seccomp filter, and
 * the answer for one of them (seat_pidguard.h). Pure: no system call. */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <sys/syscall.h>

#include "seat_pidguard.h"

/* How a call names PIDs: which arguments, read how. */
enum form {
        F_PID0,    /* arg0 a PID (0: the caller) */
        F_PID01,   /* arg0 and arg1 PIDs: tgkill, rt_tgsigqueueinfo, kcmp */
        F_KILL,    /* arg0 as kill(2): > 0 a PID, 0 and -1 the caller's, < -1 a group */
        F_PTRACE,  /* arg1 a PID but for PTRACE_TRACEME */
        F_PERF,    /* arg1 a PID (-1: any) unless arg4 has PERF_FLAG_PID_CGROUP */
        F_PRIO,    /* arg0 PRIO_PROCESS/PGRP/USER, arg1 who (0: the caller's) */
        F_IOPRIO,  /* arg0 IOPRIO_WHO_PROCESS/PGRP/USER, arg1 who (0: the caller's) */
        F_FCNTL,   /* fcntl(fd, F_SETOWN, arg2): > 0 a PID, < 0 a group;
                    * F_SETOWN_EX: refused (pidguard_decide) */
        F_IOCTL,   /* ioctl FIOSETOWN, SIOCSPGRP: refused; TIOCSPGRP: the
                    * group is in memory (pidguard_tiocspgrp) */
        F_PTRACER, /* prctl(PR_SET_PTRACER, arg1): a PID (Yama) but 0 and -1 (any) */
        F_CLOCK,   /* arg0 a clockid: < 0 a CPU clock of a PID (0: the caller) or an fd */
        F_CAPGET,  /* capget: the PID is in the header arg0 points to (pidguard_capget) */
};

struct call {
        int nr;
        enum form form;
};

#define F_SETOWN_CMD 8     /* F_SETOWN of fcntl.h, the same on every arch */
#define F_SETOWN_EX_CMD 15 /* F_SETOWN_EX, likewise */
#define FIOSETOWN_CMD 0x8901U
#define SIOCSPGRP_CMD 0x8902U
#define TIOCSPGRP_CMD 0x5410U /* x86 and asm-generic (aarch64) */
#define PR_SET_PTRACER_CMD 0x59616d61
#define PERF_FLAG_PID_CGROUP (1U << 2)

/* The native numbers (sys/syscall.h of the agent's libc). */
static const struct call native[] = {
        { SYS_kill, F_KILL },
        { SYS_tkill, F_PID0 },
        { SYS_tgkill, F_PID01 },
        { SYS_rt_sigqueueinfo, F_PID0 },
        { SYS_rt_tgsigqueueinfo, F_PID01 },
        { SYS_pidfd_open, F_PID0 },
        { SYS_getpgid, F_PID0 },
        { SYS_getsid, F_PID0 },
        { SYS_setpgid, F_PID0 },
        { SYS_getpriority, F_PRIO },
        { SYS_setpriority, F_PRIO },
        { SYS_sched_setparam, F_PID0 },
        { SYS_sched_getparam, F_PID0 },
        { SYS_sched_setscheduler, F_PID0 },
        { SYS_sched_getscheduler, F_PID0 },
        { SYS_sched_rr_get_interval, F_PID0 },
        { SYS_sched_setaffinity, F_PID0 },
        { SYS_sched_getaffinity, F_PID0 },
        { SYS_sched_setattr, F_PID0 },
        { SYS_sched_getattr, F_PID0 },
        { SYS_ioprio_get, F_IOPRIO },
        { SYS_ioprio_set, F_IOPRIO },
        { SYS_prlimit64, F_PID0 },
        { SYS_process_vm_readv, F_PID0 },
        { SYS_process_vm_writev, F_PID0 },
        { SYS_kcmp, F_PID01 },
        { SYS_ptrace, F_PTRACE },
        { SYS_get_robust_list, F_PID0 },
        { SYS_migrate_pages, F_PID0 },
        { SYS_move_pages, F_PID0 },
        { SYS_perf_event_open, F_PERF },
        { SYS_fcntl, F_FCNTL },
        { SYS_ioctl, F_IOCTL },
        { SYS_prctl, F_PTRACER },
        { SYS_clock_gettime, F_CLOCK },
        { SYS_clock_getres, F_CLOCK },
        { SYS_clock_settime, F_CLOCK },
        { SYS_clock_adjtime, F_CLOCK },
        { SYS_clock_nanosleep, F_CLOCK },
        { SYS_timer_create, F_CLOCK },
        { SYS_capget, F_CAPGET },
};

#if defined(__x86_64__)
/* The same calls through int 0x80 (arch/x86/entry/syscalls/syscall_32.tbl). */
static const struct call i386[] = {
        { 37, F_KILL },   { 238, F_PID0 },   { 270, F_PID01 },  { 178, F_PID0 },
        { 335, F_PID01 }, { 434, F_PID0 },   { 132, F_PID0 },   { 147, F_PID0 },
        { 57, F_PID0 },   { 96, F_PRIO },    { 97, F_PRIO },    { 154, F_PID0 },
        { 155, F_PID0 },  { 156, F_PID0 },   { 157, F_PID0 },   { 161, F_PID0 },
        { 423, F_PID0 },  { 241, F_PID0 },   { 242, F_PID0 },   { 351, F_PID0 },
        { 352, F_PID0 },  { 290, F_IOPRIO }, { 289, F_IOPRIO }, { 340, F_PID0 },
        { 347, F_PID0 },  { 348, F_PID0 },   { 349, F_PID01 },  { 26, F_PTRACE },
        { 312, F_PID0 },  { 294, F_PID0 },   { 317, F_PID0 },   { 336, F_PERF },
        { 55, F_FCNTL },  { 221, F_FCNTL },  { 54, F_IOCTL },   { 172, F_PTRACER },
        { 259, F_CLOCK }, { 264, F_CLOCK },  { 265, F_CLOCK },  { 266, F_CLOCK },
        { 267, F_CLOCK }, { 343, F_CLOCK },  { 403, F_CLOCK },  { 404, F_CLOCK },
        { 405, F_CLOCK }, { 406, F_CLOCK },  { 407, F_CLOCK },  { 184, F_CAPGET },
};
#endif

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* A PID argument as the kernel reads it: a pid_t, the low 32 bits. */
static int pid_arg(uint64_t v)
{
        return (int)(uint32_t)v;
}

/* A PID > 0 must be the seat's; 0 (the caller) and < 0 (EINVAL from the
 * kernel, whatever exists) tell nothing. */
static bool pid_ok(int pid, pidguard_owned_fn owned, void *ctx)
{
        return pid <= 0 || owned(ctx, PIDGUARD_PROCESS, pid);
}

/* kill(2)'s first argument (and F_SETOWN's, but for -1: a group of 1). */
static bool kill_ok(int pid, bool setown, pidguard_owned_fn owned, void *ctx)
{
        if (pid > 0)
                return owned(ctx, PIDGUARD_PROCESS, pid);
        if (pid == 0 || (pid == -1 && !setown) || pid == INT_MIN)
                return true; /* the caller's group, all it may signal, EINVAL/ESRCH */
        return owned(ctx, PIDGUARD_GROUP, -(long long)pid);
}

/* which/who of getpriority(2) (PRIO_PROCESS 0, PRIO_PGRP 1, PRIO_USER 2)
 * and ioprio_get(2) (IOPRIO_WHO_PROCESS 1, PGRP 2, USER 3): base is the
 * number of the PROCESS kind. */
static bool who_ok(uint64_t which, uint64_t who_arg, int base, pidguard_owned_fn owned, void *ctx)
{
        int w = pid_arg(which) - base, who = pid_arg(who_arg);

        if (who == 0 || w < 0 || w > 2)
                return true; /* the caller's own, or EINVAL */
        if (w == 2)
                return owned(ctx, PIDGUARD_USER, (long long)(uint32_t)who_arg);
        if (who < 0)
                return true; /* no such process or group: ESRCH either way */
        return owned(ctx, w == 0 ? PIDGUARD_PROCESS : PIDGUARD_GROUP, who);
}

/* A clockid: CPU clocks are < 0, ~pid << 3 | perthread << 2 | which, and
 * which 3 is a clock of an fd (posix-timers.h). */
static bool clock_ok(int clk, pidguard_owned_fn owned, void *ctx)
{
        int pid;

        if (clk >= 0 || (clk & 3) == 3)
                return true;
        pid = ~(clk >> 3); /* an arithmetic shift, as the kernel's CPUCLOCK_PID */
        return pid_ok(pid, owned, ctx);
}

static const struct call *lookup(uint32_t arch, int nr)
{
        const struct call *t = NULL;
        size_t n = 0;

#ifdef PIDGUARD_ARCH
        if (arch == PIDGUARD_ARCH)
                t = native, n = N(native);
#endif
#if defined(__x86_64__)
        if (arch == PIDGUARD_ARCH_I386)
                t = i386, n = N(i386);
#endif
        for (size_t i = 0; i < n; i++)
                if (t[i].nr == nr)
                        return &t[i];
        return NULL;
}

int pidguard_decide(uint32_t arch, int nr, const uint64_t args[6], pidguard_owned_fn owned, void *ctx)
{
        const struct call *c = lookup(arch, nr);
        bool ok = true;

        if (!c)
                return 0;
        switch (c->form) {
        case F_PID0: ok = pid_ok(pid_arg(args[0]), owned, ctx); break;
        case F_PID01:
                ok = pid_ok(pid_arg(args[0]), owned, ctx) && pid_ok(pid_arg(args[1]), owned, ctx);
                break;
        case F_KILL: ok = kill_ok(pid_arg(args[0]), false, owned, ctx); break;
        case F_PTRACE:
                ok = args[0] == 0 /* PTRACE_TRACEME */ || pid_ok(pid_arg(args[1]), owned, ctx);
                break;
        case F_PERF:
                ok = (args[4] & PERF_FLAG_PID_CGROUP) || pid_ok(pid_arg(args[1]), owned, ctx);
                break;
        case F_PRIO: ok = who_ok(args[0], args[1], 0, owned, ctx); break;
        case F_IOPRIO: ok = who_ok(args[0], args[1], 1, owned, ctx); break;
        case F_FCNTL:
                /* fcntl's and ioctl's cmd: an unsigned int, the low 32 bits */
                if ((uint32_t)args[1] == F_SETOWN_EX_CMD)
                        return EPERM;
                ok = (uint32_t)args[1] != F_SETOWN_CMD || kill_ok(pid_arg(args[2]), true, owned, ctx);
                break;
        case F_IOCTL:
                if ((uint32_t)args[1] == FIOSETOWN_CMD || (uint32_t)args[1] == SIOCSPGRP_CMD)
                        return EPERM;
                return (uint32_t)args[1] == TIOCSPGRP_CMD ? PIDGUARD_TIOCSPGRP : 0;
        case F_PTRACER:
                ok = args[0] != PR_SET_PTRACER_CMD || args[1] == (uint64_t)-1 ||
                     pid_ok(pid_arg(args[1]), owned, ctx);
                break;
        case F_CLOCK: ok = clock_ok(pid_arg(args[0]), owned, ctx); break;
        case F_CAPGET: return PIDGUARD_CAPGET;
        }
        if (ok)
                return 0;
        /* what the kernel answers for a PID that does not exist: EINVAL
         * for a clock of one and for Yama's tracer, else ESRCH */
        return c->form == F_CLOCK || c->form == F_PTRACER ? EINVAL : ESRCH;
}

int pidguard_capget(uint32_t *version, int pid, bool data, pidguard_owned_fn owned, void *ctx)
{
        if (*version != PIDGUARD_CAP_V1 && *version != PIDGUARD_CAP_V2 &&
            *version != PIDGUARD_CAP_V3) {
                /* the kernel writes its version back: EINVAL, or 0 with no data */
                *version = PIDGUARD_CAP_V3;
                return data ? -EINVAL : 0;
        }
        if (!data)
                return 0; /* a version probe: no lookup */
        if (pid < 0)
                return -EINVAL;
        if (pid == 0 || owned(ctx, PIDGUARD_PROCESS, pid))
                return 1;
        return -ESRCH;
}

int pidguard_tiocspgrp(int pgrp, pidguard_owned_fn owned, void *ctx)
{
        if (pgrp < 0)
                return EINVAL; /* the kernel's answer before any lookup */
        /* 0 and group 1 are nobody's group of the seat's: ESRCH, as for a
         * group that does not exist */
        return pgrp > 1 && owned(ctx, PIDGUARD_GROUP, pgrp) ? 0 : ESRCH;
}

/* ---------------------------------------------------------------- filter */

#define LD_W_ABS 0x20 /* BPF_LD | BPF_W | BPF_ABS */
#define JEQ_K 0x15    /* BPF_JMP | BPF_JEQ | BPF_K */
#define JGE_K 0x35    /* BPF_JMP | BPF_JGE | BPF_K */
#define RET_K 0x06    /* BPF_RET | BPF_K */
#define RET_ALLOW 0x7fff0000U
#define RET_NOTIFY 0x7fc00000U
#define RET_ENOSYS (0x00050000U | ENOSYS)

#define OFF_NR offsetof(struct pidguard_data, nr)
#define OFF_ARCH offsetof(struct pidguard_data, arch)
#define OFF_ARG_LO(i) (offsetof(struct pidguard_data, args) + 8 * (i)) /* little-endian */

static size_t emit(struct pidguard_insn *p, size_t n, uint16_t code, uint8_t jt, uint8_t jf,
                   uint32_t k)
{
        p[n] = (struct pidguard_insn){ .code = code, .jt = jt, .jf = jf, .k = k };
        return n + 1;
}

/* The calls sent only when an argument says so (fcntl F_SETOWN and
 * F_SETOWN_EX, ioctl FIOSETOWN, SIOCSPGRP and TIOCSPGRP, prctl
 * PR_SET_PTRACER, a CPU clock): which argument, compared how, with which
 * values (any of them sends the call; at most 3). Others: 0. */
static size_t condition(enum form f, unsigned *arg, uint16_t *op, uint32_t k[3])
{
        switch (f) {
        case F_FCNTL: *arg = 1, *op = JEQ_K, k[0] = F_SETOWN_CMD, k[1] = F_SETOWN_EX_CMD; return 2;
        case F_IOCTL:
                *arg = 1, *op = JEQ_K;
                k[0] = FIOSETOWN_CMD, k[1] = SIOCSPGRP_CMD, k[2] = TIOCSPGRP_CMD;
                return 3;
        case F_PTRACER: *arg = 0, *op = JEQ_K, k[0] = PR_SET_PTRACER_CMD; return 1;
        case F_CLOCK:
                *arg = 0, *op = JGE_K, k[0] = 0x80000000U; /* < 0 as an int */
                return 1;
        default: return 0;
        }
}

/* One ABI's block: its calls to the listener (some only when an argument
 * says so), the rest allowed. Starts with the number loaded. */
static size_t block(struct pidguard_insn *p, size_t n, const struct call *t, size_t count)
{
        unsigned arg;
        uint16_t op;
        uint32_t k[3];
        size_t nk;

        for (size_t i = 0; i < count; i++) {
                if (condition(t[i].form, &arg, &op, k))
                        continue;
                n = emit(p, n, JEQ_K, 0, 1, (uint32_t)t[i].nr);
                n = emit(p, n, RET_K, 0, 0, RET_NOTIFY);
        }
        for (size_t i = 0; i < count; i++) {
                if (!(nk = condition(t[i].form, &arg, &op, k)))
                        continue;
                /* nr matches: load the argument; any value → listener */
                n = emit(p, n, JEQ_K, 0, (uint8_t)(1 + 2 * nk), (uint32_t)t[i].nr);
                n = emit(p, n, LD_W_ABS, 0, 0, OFF_ARG_LO(arg));
                for (size_t j = 0; j < nk; j++) {
                        n = emit(p, n, op, 0, 1, k[j]);
                        n = emit(p, n, RET_K, 0, 0, RET_NOTIFY);
                }
                /* another call, or the condition false: the number again
                 * (no other entry matches it: allowed in the end) */
                n = emit(p, n, LD_W_ABS, 0, 0, OFF_NR);
        }
        return emit(p, n, RET_K, 0, 0, RET_ALLOW);
}

size_t pidguard_filter(struct pidguard_insn *p)
{
        size_t n = 0;

#ifndef PIDGUARD_ARCH
        (void)p;
        return 0;
#else
        size_t jump;

        n = emit(p, n, LD_W_ABS, 0, 0, OFF_ARCH);
        jump = n;
        n = emit(p, n, JEQ_K, 0, 0, PIDGUARD_ARCH); /* jf patched: the next ABI */
        n = emit(p, n, LD_W_ABS, 0, 0, OFF_NR);
#if defined(__x86_64__)
        n = emit(p, n, JGE_K, 0, 1, PIDGUARD_X32_BIT);
        n = emit(p, n, RET_K, 0, 0, RET_ENOSYS);
#endif
        n = block(p, n, native, N(native));
        p[jump].jf = (uint8_t)(n - jump - 1);
#if defined(__x86_64__)
        jump = n;
        n = emit(p, n, JEQ_K, 0, 0, PIDGUARD_ARCH_I386);
        n = emit(p, n, LD_W_ABS, 0, 0, OFF_NR);
        n = block(p, n, i386, N(i386));
        p[jump].jf = (uint8_t)(n - jump - 1);
#endif
        return emit(p, n, RET_K, 0, 0, RET_ENOSYS); /* any other ABI */
#endif
}
