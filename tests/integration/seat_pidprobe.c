/* seat_pidprobe PID [UID]: every system call form that looks a PID (a
 * process group, a user) up, against PID (and UID), one line each:
 * "name ok" or "name E<errno>". test_seat_isolation.py compiles it static,
 * copies it into a seat's home and compares what a seat gets for another
 * seat's PID with what it gets for a PID that does not exist. A third
 * argument: PID is ours, no ptrace attach. Nothing it
 * calls changes a process that it may not change (signal 0, the current
 * values, an attach only to what is not ours). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__)
/* The i386 ABI from a 64-bit process (int 0x80): -errno or the result. */
static long int80(long nr, long a, long b)
{
        long ret;

        __asm__ volatile("int $0x80" : "=a"(ret) : "a"(nr), "b"(a), "c"(b) : "memory");
        if (ret < 0 && ret > -4096) {
                errno = (int)-ret;
                return -1;
        }
        return ret;
}
#endif

/* A seccomp filter with a listener of our own: under the seat's guard the
 * kernel refuses a second one (EBUSY), so nobody but the agent's guard
 * answers the guarded calls. Allows everything; the process ends soon. */
static long second_listener(void)
{
        struct {
                unsigned short code;
                unsigned char jt, jf;
                unsigned k;
        } allow = { 0x06, 0, 0, 0x7fff0000 };
        struct {
                unsigned short len;
                void *filter;
        } fp = { 1, &allow };
        long fd;

        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                return -1;
        fd = syscall(SYS_seccomp, 1 /* SET_MODE_FILTER */, 8 /* NEW_LISTENER */, &fp);
        if (fd >= 0)
                close((int)fd);
        return fd;
}

/* ioctl(TIOCSPGRP, pgrp) on a controlling terminal of our own: a child in
 * a new session opens a pty's other end (so it is its terminal) and asks;
 * pgrp 0: the child's own group. -1 (errno set) or 0, as the call. */
static long tiocspgrp(pid_t pgrp)
{
        int m = posix_openpt(O_RDWR | O_NOCTTY), p[2], e = -1;
        pid_t c;

        if (m < 0 || grantpt(m) < 0 || unlockpt(m) < 0 || pipe(p) < 0)
                return -1;
        c = fork();
        if (c == 0) {
                int s, v;

                close(p[0]);
                if (setsid() < 0 || (s = open(ptsname(m), O_RDWR)) < 0)
                        e = 1000 + errno;
                else {
                        v = pgrp ? pgrp : getpgrp();
                        e = ioctl(s, TIOCSPGRP, &v) < 0 ? errno : 0;
                }
                (void)!write(p[1], &e, sizeof(e));
                _exit(0);
        }
        close(p[1]);
        if (c < 0 || read(p[0], &e, sizeof(e)) != (ssize_t)sizeof(e))
                e = 999; /* shows as E999: the probe itself failed */
        if (c > 0)
                waitpid(c, NULL, 0);
        close(p[0]);
        close(m);
        errno = e;
        return e ? -1 : 0;
}

static void show(const char *name, long r)
{
        if (r < 0)
                printf("%s E%d\n", name, errno);
        else
                printf("%s ok\n", name);
}

int main(int argc, char **argv)
{
        pid_t pid, self = getpid();
        long uid;
        siginfo_t si;
        struct sched_param sp = { 0 };
        struct timespec ts;
        cpu_set_t cpus;
        struct rlimit rl;
        char b[1], attr[128];
        struct iovec l = { b, 1 }, r = { (void *)0x10000, 1 };
        void *head;
        size_t len;
        unsigned long mask = 1;
        long prio, n;
        int fd;

        if (argc < 2)
                return 2;
        pid = atoi(argv[1]);
        uid = argc > 2 ? atol(argv[2]) : 0;
        memset(&si, 0, sizeof(si));
        si.si_code = SI_QUEUE;
        si.si_signo = 0;
        show("kill", kill(pid, 0));
        show("kill_pgrp", kill(-pid, 0));
        show("tkill", syscall(SYS_tkill, pid, 0));
        show("tgkill", syscall(SYS_tgkill, pid, pid, 0));
        show("rt_sigqueueinfo", syscall(SYS_rt_sigqueueinfo, pid, 0, &si));
        show("rt_tgsigqueueinfo", syscall(SYS_rt_tgsigqueueinfo, pid, pid, 0, &si));
        fd = (int)syscall(SYS_pidfd_open, pid, 0);
        show("pidfd_open", fd);
        if (fd >= 0)
                close(fd);
        show("getpgid", getpgid(pid));
        show("getsid", getsid(pid));
        show("setpgid", setpgid(pid, pid));
        /* the raw calls: the kernel's 20 - nice, or -errno; set: as it is */
        prio = syscall(SYS_getpriority, PRIO_PROCESS, pid);
        show("getpriority", prio);
        show("setpriority", syscall(SYS_setpriority, PRIO_PROCESS, pid, prio > 0 ? 20 - prio : 0));
        prio = syscall(SYS_getpriority, PRIO_PGRP, pid);
        show("getpriority_pgrp", prio);
        show("setpriority_pgrp", syscall(SYS_setpriority, PRIO_PGRP, pid, prio > 0 ? 20 - prio : 0));
        if (uid) {
                show("getpriority_user", syscall(SYS_getpriority, PRIO_USER, uid));
                show("ioprio_get_user", syscall(SYS_ioprio_get, 3, uid));
        }
        /* musl answers some of these itself: the raw calls */
        show("sched_getparam", syscall(SYS_sched_getparam, pid, &sp));
        show("sched_setparam", syscall(SYS_sched_setparam, pid, &sp));
        show("sched_getscheduler", syscall(SYS_sched_getscheduler, pid));
        show("sched_rr_get_interval", syscall(SYS_sched_rr_get_interval, pid, &ts));
        n = syscall(SYS_sched_getaffinity, pid, sizeof(cpus), &cpus);
        show("sched_getaffinity", n);
        if (n <= 0) /* as it is; else empty: EINVAL after the lookup */
                CPU_ZERO(&cpus);
        show("sched_setaffinity",
             syscall(SYS_sched_setaffinity, pid, n > 0 ? (size_t)n : sizeof(cpus), &cpus));
        show("sched_getattr", syscall(SYS_sched_getattr, pid, attr, 48, 0));
        show("ioprio_get", syscall(SYS_ioprio_get, 1, pid));
        show("ioprio_get_pgrp", syscall(SYS_ioprio_get, 2, pid));
        show("prlimit", prlimit(pid, RLIMIT_NOFILE, NULL, &rl));
        show("process_vm_readv", process_vm_readv(pid, &l, 1, &r, 1, 0));
        show("process_vm_writev", process_vm_writev(pid, &l, 1, &r, 1, 0));
        show("kcmp", syscall(SYS_kcmp, pid, self, 0 /* KCMP_FILE */, 0, 0));
        show("get_robust_list", syscall(SYS_get_robust_list, pid, &head, &len));
        show("migrate_pages", syscall(SYS_migrate_pages, pid, 64, &mask, &mask));
        show("move_pages", syscall(SYS_move_pages, pid, 0, NULL, NULL, NULL, 0));
        fd = open("/dev/null", O_RDONLY);
        show("fcntl_setown", fcntl(fd, F_SETOWN, pid));
        show("fcntl_setown_pgrp", fcntl(fd, F_SETOWN, -pid));
        {
                /* the owner through a pointer: EPERM whatever it names */
                struct f_owner_ex o = { F_OWNER_PID, pid };

                show("fcntl_setown_ex", fcntl(fd, F_SETOWN_EX, &o));
                o.type = F_OWNER_PGRP;
                show("fcntl_setown_ex_pgrp", fcntl(fd, F_SETOWN_EX, &o));
                o.type = F_OWNER_TID;
                show("fcntl_setown_ex_tid", fcntl(fd, F_SETOWN_EX, &o));
        }
        close(fd);
        fd = socket(AF_UNIX, SOCK_STREAM, 0);
        {
                int v = pid;

                show("fiosetown", ioctl(fd, FIOSETOWN, &v));
                show("siocspgrp", ioctl(fd, SIOCSPGRP, &v));
                v = -pid;
                show("siocspgrp_pgrp", ioctl(fd, SIOCSPGRP, &v));
        }
        close(fd);
        /* the foreground group of a terminal: PID as a group, and ours */
        show("tiocspgrp", tiocspgrp(pid));
        show("tiocspgrp_self", tiocspgrp(0));
        {
                /* a CPU clock of PID (clock_getcpuclockid's) */
                clockid_t clk = (clockid_t)((~(unsigned)pid << 3) | 2);

                show("clock_gettime_cpu", syscall(SYS_clock_gettime, clk, &ts));
                show("clock_getres_cpu", syscall(SYS_clock_getres, clk, &ts));
        }
#if defined(__x86_64__)
        show("kill_i386", int80(37, pid, 0));
        show("getsid_i386", int80(147, pid, 0));
#endif
        if (argc < 4) /* "own": not on our own processes */
                show("ptrace_attach", ptrace(PTRACE_ATTACH, pid, 0, 0));
        {
                /* the header's PID (_LINUX_CAPABILITY_VERSION_3) */
                struct {
                        unsigned version;
                        int pid;
                } hdr = { 0x20080522, pid };
                unsigned caps[6];

                show("capget", syscall(SYS_capget, &hdr, caps));
        }
        show("second_listener", second_listener()); /* last: it stays */
        return 0;
}
