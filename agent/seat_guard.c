/* sandbox-agent: the PID guard of a seat's command tree (seat_guard.h). */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent.h"
#include "seat_guard.h"
#include "seat_pidguard.h"

/* <linux/seccomp.h>, which musl does not ship: the kernel's ABI. */
#define SECCOMP_SET_MODE_FILTER 1
#define SECCOMP_GET_NOTIF_SIZES 3
#define SECCOMP_FILTER_FLAG_NEW_LISTENER (1UL << 3)
#define SECCOMP_USER_NOTIF_FLAG_CONTINUE (1UL << 0)

struct notif {
        uint64_t id;
        uint32_t pid;
        uint32_t flags;
        struct pidguard_data data;
};

struct notif_resp {
        uint64_t id;
        int64_t val;
        int32_t error;
        uint32_t flags;
};

struct notif_sizes {
        uint16_t notif, resp, data;
};

struct fprog {
        unsigned short len;
        struct pidguard_insn *filter;
};

#define IOCTL_NOTIF_RECV _IOWR('!', 0, struct notif)
#define IOCTL_NOTIF_SEND _IOWR('!', 1, struct notif_resp)
#define IOCTL_NOTIF_ID_VALID _IOW('!', 2, uint64_t)

int seat_guard_install(int sock, const char **ret_what)
{
        struct pidguard_insn prog[PIDGUARD_FILTER_MAX];
        struct fprog fp = { .filter = prog };
        union {
                char buf[CMSG_SPACE(sizeof(int))];
                struct cmsghdr align;
        } u;
        char byte = 'g';
        struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
        struct msghdr msg = { .msg_iov = &iov,
                              .msg_iovlen = 1,
                              .msg_control = u.buf,
                              .msg_controllen = sizeof(u.buf) };
        struct cmsghdr *c;
        long fd;
        int r = 0;

        fp.len = (unsigned short)pidguard_filter(prog);
        if (fp.len == 0) {
                *ret_what = "no PID guard for this architecture";
                return -ENOSYS;
        }
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
                *ret_what = "no_new_privs";
                return -errno;
        }
        fd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &fp);
        if (fd < 0) {
                *ret_what = "the PID guard's seccomp filter";
                /* a kernel without user notification (gVisor) refuses the
                 * flag; nothing was installed */
                return errno == EINVAL ? -EOPNOTSUPP : -errno;
        }
        memset(u.buf, 0, sizeof(u.buf));
        c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &(int){ (int)fd }, sizeof(int));
        if (sendmsg(sock, &msg, MSG_NOSIGNAL) != 1) {
                *ret_what = "hand the PID guard's listener over";
                r = -errno;
        }
        (void)close((int)fd);
        /* without a listener the guarded calls fail with ENOSYS: closed */
        return r;
}

/* The listener sent over sock, or -1. */
static int recv_listener(int sock)
{
        union {
                char buf[CMSG_SPACE(sizeof(int))];
                struct cmsghdr align;
        } u;
        char byte;
        struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
        struct msghdr msg = { .msg_iov = &iov,
                              .msg_iovlen = 1,
                              .msg_control = u.buf,
                              .msg_controllen = sizeof(u.buf) };
        struct cmsghdr *c;
        int fd = -1;

        if (recvmsg(sock, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC) != 1)
                return -1;
        c = CMSG_FIRSTHDR(&msg);
        if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
            c->cmsg_len == CMSG_LEN(sizeof(int)))
                memcpy(&fd, CMSG_DATA(c), sizeof(int));
        return fd;
}

struct owner {
        uid_t uid;
};

/* As the seat's user (the guard's own): may it signal the PID or group?
 * Then it is the seat's (seat_guard.h). */
static bool owned(void *ctx, enum pidguard_target t, long long id)
{
        const struct owner *o = ctx;

        switch (t) {
        case PIDGUARD_PROCESS: return id > 0 && id <= INT_MAX && kill((pid_t)id, 0) == 0;
        case PIDGUARD_GROUP: return id > 1 && id <= INT_MAX && kill(-(pid_t)id, 0) == 0;
        case PIDGUARD_USER: return id == (long long)o->uid;
        }
        return false;
}

/* The caller's memory (/proc/PID/mem, as its own user), open read-write,
 * or -errno (-EPERM: a caller that made itself not dumpable, told nothing);
 * *gone (and -ENOENT) when the caller no longer waits. */
static int caller_mem(int listener, struct notif *n, bool *gone)
{
        char path[32];
        int fd;

        *gone = false;
        (void)snprintf(path, sizeof(path), "/proc/%u/mem", (unsigned)n->pid);
        fd = open(path, O_RDWR | O_CLOEXEC);
        if (fd < 0)
                return -EPERM;
        /* the fd is the caller's memory only while the caller still waits */
        if (ioctl(listener, IOCTL_NOTIF_ID_VALID, &n->id) < 0) {
                (void)close(fd);
                *gone = true;
                return -ENOENT;
        }
        return fd;
}

/* ioctl(fd, TIOCSPGRP, &pgrp) of the caller: the group read once; 1 → the
 * kernel does the call (the seat's own group), else the answer (-errno). */
static int tiocspgrp_for(int listener, struct notif *n, struct owner *o, bool *gone)
{
        int32_t pgrp;
        int fd, r;

        if ((fd = caller_mem(listener, n, gone)) < 0)
                return fd;
        if (pread(fd, &pgrp, sizeof(pgrp), (off_t)n->data.args[2]) != (ssize_t)sizeof(pgrp))
                r = -EFAULT;
        else if ((r = pidguard_tiocspgrp(pgrp, owned, o)) == 0)
                r = 1;
        else
                r = -r;
        (void)close(fd);
        return r;
}

/* capget for the caller, through its memory (/proc/PID/mem, as its own
 * user): the header is read once and the call made here, so that no other
 * thread of the caller can change the PID after the check. Returns the
 * answer (0 or -errno); *gone when the caller no longer waits. */
static int capget_for(int listener, struct notif *n, struct owner *o, bool *gone)
{
        struct {
                uint32_t version;
                int32_t pid;
        } h, k;
        uint32_t data[6], v0;
        size_t len;
        int fd, r;

        if ((fd = caller_mem(listener, n, gone)) < 0)
                return fd;
        if (pread(fd, &h, sizeof(h), (off_t)n->data.args[0]) != (ssize_t)sizeof(h)) {
                (void)close(fd);
                return -EFAULT;
        }
        v0 = h.version;
        r = pidguard_capget(&h.version, h.pid, n->data.args[1] != 0, owned, o);
        if (h.version != v0 &&
            pwrite(fd, &h.version, sizeof(h.version), (off_t)n->data.args[0]) != sizeof(h.version))
                r = -EFAULT;
        if (r == 1) {
                k.version = h.version;
                k.pid = h.pid ? h.pid : (int32_t)n->pid;
                len = (h.version == PIDGUARD_CAP_V1 ? 1 : 2) * 3 * sizeof(uint32_t);
                if (syscall(SYS_capget, &k, data) < 0)
                        r = -errno;
                else
                        r = pwrite(fd, data, len, (off_t)n->data.args[1]) == (ssize_t)len ? 0
                                                                                          : -EFAULT;
        }
        (void)close(fd);
        return r;
}

long seat_guard_serve(int listener, uid_t uid)
{
        struct owner o = { .uid = uid };
        struct notif_sizes sizes;
        long answered = 0;
        union {
                struct notif n;
                unsigned char room[512]; /* the kernel's struct, if it grows */
        } u;

        if (syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sizes) < 0 || sizes.notif > sizeof(u) ||
            sizes.notif < sizeof(struct notif) || sizes.resp < sizeof(struct notif_resp))
                return -EPROTO;
        for (;;) {
                struct pollfd p = { .fd = listener, .events = POLLIN };
                struct notif_resp resp;
                int err;

                if (poll(&p, 1, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (!(p.revents & POLLIN))
                        return answered; /* POLLHUP: no process of the tree left */
                /* the kernel wants a zeroed buffer; it never blocks here
                 * after POLLIN (a caller killed since: ENOENT) */
                memset(&u, 0, sizeof(u));
                if (ioctl(listener, IOCTL_NOTIF_RECV, &u.n) < 0) {
                        if (errno == ENOENT || errno == EINTR)
                                continue;
                        return -errno;
                }
                err = pidguard_decide(u.n.data.arch, u.n.data.nr, u.n.data.args, owned, &o);
                if (err == PIDGUARD_CAPGET || err == PIDGUARD_TIOCSPGRP) {
                        bool gone;
                        int r = err == PIDGUARD_CAPGET ? capget_for(listener, &u.n, &o, &gone)
                                                       : tiocspgrp_for(listener, &u.n, &o, &gone);

                        if (gone)
                                continue;
                        resp = (struct notif_resp){ .id = u.n.id, .error = r < 0 ? r : 0 };
                        if (r == 1) /* checked: the kernel does it (TIOCSPGRP) */
                                resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
                        if (ioctl(listener, IOCTL_NOTIF_SEND, &resp) < 0 && errno != ENOENT)
                                return -errno;
                        answered++;
                        continue;
                }
                /* the caller still waits (and its PID is still its own) */
                if (ioctl(listener, IOCTL_NOTIF_ID_VALID, &u.n.id) < 0)
                        continue;
                resp = (struct notif_resp){ .id = u.n.id };
                if (err)
                        resp.error = -err;
                else
                        resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
                if (ioctl(listener, IOCTL_NOTIF_SEND, &resp) < 0 && errno != ENOENT)
                        return -errno;
                answered++;
        }
}

int seat_guard_start(int sock, uid_t uid, gid_t gid)
{
        int fd = recv_listener(sock), status = 0;
        pid_t pid;

        if (fd < 0)
                return -ENOENT;
        pid = fork();
        if (pid == 0) {
                /* the guard: a grandchild, reaped by PID 1 */
                pid_t g = fork();

                if (g != 0)
                        _exit(g < 0 ? 1 : 0);
                int null = open("/dev/null", O_RDWR | O_CLOEXEC);

                /* nothing of the handler's (its connection) is kept open */
                if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(null, 2) < 0)
                        _exit(1);
                agent_child_reset(fd);
                (void)setsid();
                (void)prctl(PR_SET_NAME, "seat-pidguard", 0, 0, 0);
                if (setgroups(0, NULL) < 0 || setresgid(gid, gid, gid) < 0 ||
                    setresuid(uid, uid, uid) < 0)
                        _exit(1); /* the listener closes: the tree gets ENOSYS */
                /* after the change of user, and again: nobody of the seat
                 * may trace it or take its listener */
                (void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
                _exit(seat_guard_serve(fd, uid) < 0 ? 1 : 0);
        }
        (void)close(fd);
        if (pid < 0)
                return -errno;
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        return -errno;
        return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -EAGAIN;
}
