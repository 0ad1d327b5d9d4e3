/* sandbox-agent: which system calls of a seat may learn about a PID, and
 * the answer for one of them (seat_pidguard.c; docs/AGENT.md, "Seats").
 *
 * Seats share one PID namespace: /proc is hidden (hidepid), but every
 * system call that takes a PID and looks it up before it checks
 * permission tells a PID of another user (EPERM, or a result) from a free
 * one (ESRCH). A seat's command therefore runs under a seccomp filter
 * (pidguard_filter) that sends those calls to a user-notification
 * listener, a guard process of the agent's (seat_guard.h); the guard asks
 * pidguard_decide: every PID, process group or user the call names is the
 * seat's own (or the caller itself: 0, -1) → the kernel does the call with
 * its own checks; anything else → the kernel's answer for a PID that does
 * not exist (ESRCH; EINVAL for a CPU clock and for PR_SET_PTRACER).
 *
 *   calls       kill tkill tgkill rt_sigqueueinfo rt_tgsigqueueinfo
 *               pidfd_open getpgid getsid setpgid getpriority setpriority
 *               sched_{get,set}{param,scheduler,affinity,attr}
 *               sched_rr_get_interval ioprio_get ioprio_set prlimit64
 *               process_vm_readv process_vm_writev kcmp ptrace (but
 *               PTRACE_TRACEME) get_robust_list migrate_pages move_pages
 *               perf_event_open fcntl(F_SETOWN, F_SETOWN_EX)
 *               ioctl(FIOSETOWN, SIOCSPGRP, TIOCSPGRP) prctl(PR_SET_PTRACER)
 *               and, with a CPU clock of a PID (clockid < 0),
 *               clock_{gettime,getres,settime,adjtime,nanosleep}
 *               timer_create; capget; on x86_64 also their i386 (int 0x80)
 *               numbers (time64 ones included)
 *   x32 calls   ENOSYS (the x32 ABI is not offered to a seat)
 *   other ABIs  ENOSYS
 *
 * capget's PID is in memory (its header): the guard reads the header
 * once and does the call itself for a PID of the seat's (pidguard_capget),
 * so that no other thread of the caller can change it between the check
 * and the call.
 *
 * The owner of an open file description set through a pointer (fcntl
 * F_SETOWN_EX, ioctl FIOSETOWN and SIOCSPGRP) cannot be set by the guard
 * for the caller (that needs the caller's fd: pidfd_getfd(2), which
 * Docker's seccomp profile refuses without CAP_SYS_PTRACE) nor checked and
 * then left to the kernel (it reads the memory again: another thread, or
 * another process of the seat through /proc/PID/mem or a shared mapping,
 * could swap the PID in between): they are refused, EPERM, whatever the
 * PID. F_SETOWN (the PID in a register) does the same for a process or a
 * group.
 *
 * TIOCSPGRP needs the caller's controlling terminal, so only the kernel
 * can do it: the guard reads the group once (pidguard_tiocspgrp); not the
 * seat's → the answer for a group that does not exist; the seat's → the
 * kernel, which reads it again: a caller that swaps it in between (a second
 * writer racing the call) can still learn whether the group it swapped in
 * exists (docs/API.md, "What separates whom"). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* What a PID argument names. */
enum pidguard_target {
        PIDGUARD_PROCESS, /* a process or thread id > 0 */
        PIDGUARD_GROUP,   /* a process group id > 0 */
        PIDGUARD_USER,    /* a uid (PRIO_USER, IOPRIO_WHO_USER), not the caller's 0 */
};

/* Is id (of kind t) the seat's own? ctx is pidguard_decide's. */
typedef bool (*pidguard_owned_fn)(void *ctx, enum pidguard_target t, long long id);

/* The answer for one notified call: 0 (let the kernel do it), or ESRCH
 * (EINVAL for a CPU clock and PR_SET_PTRACER): a PID that does not exist;
 * EPERM for F_SETOWN_EX, FIOSETOWN and SIOCSPGRP, whatever the PID;
 * PIDGUARD_CAPGET, PIDGUARD_TIOCSPGRP: the guard reads memory first.
 * arch and nr as in struct seccomp_data; args its six arguments. A call
 * this filter does not send (or of an unknown arch) is 0: the filter never
 * sends one, and the kernel then answers as it would. Pure: owned is the
 * only thing it asks. */
int pidguard_decide(uint32_t arch, int nr, const uint64_t args[6], pidguard_owned_fn owned,
                    void *ctx);

/* pidguard_decide's answer for capget: the guard reads the header (arg0)
 * and asks pidguard_capget. */
#define PIDGUARD_CAPGET (-1)

/* pidguard_decide's answer for ioctl(TIOCSPGRP): the guard reads the group
 * (the int arg2 points to) once and asks pidguard_tiocspgrp. */
#define PIDGUARD_TIOCSPGRP (-2)

/* TIOCSPGRP to group pgrp: 0 (the seat's own group: the kernel does the
 * call), else the kernel's answer for a group that does not exist (EINVAL
 * for pgrp < 0, ESRCH). */
int pidguard_tiocspgrp(int pgrp, pidguard_owned_fn owned, void *ctx);

#define PIDGUARD_CAP_V1 0x19980330U
#define PIDGUARD_CAP_V2 0x20071026U
#define PIDGUARD_CAP_V3 0x20080522U

/* capget with header {*version, pid}, data (arg1) non-NULL or not: 1 →
 * the guard does capget itself on pid (0: the caller) and writes the data
 * back; else the answer (0 or -errno) the kernel would give for a PID that
 * does not exist. A version the kernel does not know is set to its own
 * in *version (to be written back). */
int pidguard_capget(uint32_t *version, int pid, bool data, pidguard_owned_fn owned, void *ctx);

/* struct sock_filter of <linux/filter.h> (the agent's libc, musl, comes
 * without the kernel's headers) */
struct pidguard_insn {
        uint16_t code;
        uint8_t jt, jf;
        uint32_t k;
};

#define PIDGUARD_FILTER_MAX 512 /* instructions */

/* The seccomp program into prog (room for PIDGUARD_FILTER_MAX); returns
 * its length. */
size_t pidguard_filter(struct pidguard_insn *prog);

/* struct seccomp_data of <linux/seccomp.h> */
struct pidguard_data {
        int nr;
        uint32_t arch;
        uint64_t ip;
        uint64_t args[6];
};

#define PIDGUARD_ARCH_X86_64 0xc000003eU
#define PIDGUARD_ARCH_I386 0x40000003U
#define PIDGUARD_ARCH_AARCH64 0xc00000b7U
#define PIDGUARD_X32_BIT 0x40000000U
#if defined(__x86_64__)
#define PIDGUARD_ARCH PIDGUARD_ARCH_X86_64
#elif defined(__aarch64__)
#define PIDGUARD_ARCH PIDGUARD_ARCH_AARCH64
#endif
