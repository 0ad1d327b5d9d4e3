/* body_out: see body_out.h. A FastCGI record is an 8-byte header (version
 * 1, type, request id, content length, padding length) and its content;
 * records of one request may be split anywhere, so bytes written here after
 * a flush of the stream arrive in order. */
#include "body_out.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#define FCGI_VERSION_1 1
#define FCGI_STDOUT_TYPE 6
#define RECORD_MAX 65528 /* content length <= 65535, kept 8-aligned */
#define RECORDS 8

/* writev until everything is out (the connection is a blocking socket). */
static int writev_all(int fd, struct iovec *iov, int n)
{
        while (n > 0) {
                ssize_t w = writev(fd, iov, n);

                if (w < 0 && errno == EINTR)
                        continue;
                if (w <= 0)
                        return -1;
                while (n > 0 && (size_t)w >= iov->iov_len) {
                        w -= (ssize_t)iov->iov_len;
                        iov++;
                        n--;
                }
                if (n > 0) {
                        iov->iov_base = (char *)iov->iov_base + w;
                        iov->iov_len -= (size_t)w;
                }
        }
        return 0;
}

static void record_header(unsigned char *h, const FCGX_Request *f, size_t len)
{
        h[0] = FCGI_VERSION_1;
        h[1] = FCGI_STDOUT_TYPE;
        h[2] = (unsigned char)(f->requestId >> 8);
        h[3] = (unsigned char)f->requestId;
        h[4] = (unsigned char)(len >> 8);
        h[5] = (unsigned char)len;
        h[6] = h[7] = 0;
}

int body_put(struct request *req, const char *data, size_t n)
{
        FCGX_Request *f = req->fcgx;

        if (n < BODY_OUT_DIRECT_MIN)
                return n && FCGX_PutStr(data, (int)n, f->out) < 0 ? -1 : 0;
        if (FCGX_FFlush(f->out) < 0 || FCGX_GetError(f->out) != 0)
                return -1;
        while (n > 0) {
                /* up to RECORDS records in one writev */
                unsigned char h[RECORDS][8];
                struct iovec iov[2 * RECORDS];
                int k = 0;

                for (; k < RECORDS && n > 0; k++) {
                        size_t len = n < RECORD_MAX ? n : RECORD_MAX;

                        record_header(h[k], f, len);
                        iov[2 * k] = (struct iovec){ h[k], 8 };
                        iov[2 * k + 1] = (struct iovec){ (void *)data, len };
                        data += len;
                        n -= len;
                }
                if (writev_all(f->ipcFd, iov, 2 * k) < 0)
                        return -1;
        }
        return 0;
}

/* Each handler thread's pipe for body_splice, made at its first use; empty
 * between calls (a call that fails with bytes in it closes it). Thread-local
 * on purpose: a cache of two fds reused by the thread's requests, holding
 * nothing of any request (a pipe per request would cost two system calls
 * each). */
static __thread int splice_pipe[2] = { -1, -1 };

static void splice_pipe_close(void)
{
        (void)close(splice_pipe[0]);
        (void)close(splice_pipe[1]);
        splice_pipe[0] = splice_pipe[1] = -1;
}

/* One record of what is queued on fd (at most max bytes): its count, 0 at
 * fd's end, or a negative errno (-EPIPE: the connection broke). */
static ssize_t splice_record(FCGX_Request *f, int fd, size_t max)
{
        unsigned char h[8];
        struct iovec iov = { h, sizeof(h) };
        ssize_t n, done = 0;

        if (max > RECORD_MAX)
                max = RECORD_MAX;
        /* the pipe is empty and holds 64 KiB: EAGAIN says fd has nothing */
        do
                n = splice(fd, NULL, splice_pipe[1], NULL, max, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return errno == EINVAL ? -EOPNOTSUPP : -errno;
        if (n == 0)
                return 0;
        /* the record's header says exactly what was taken */
        record_header(h, f, (size_t)n);
        if (writev_all(f->ipcFd, &iov, 1) < 0)
                goto broken;
        while (done < n) {
                ssize_t w = splice(splice_pipe[0], NULL, f->ipcFd, NULL, (size_t)(n - done),
                                   SPLICE_F_MOVE);

                if (w < 0 && errno == EINTR)
                        continue;
                if (w <= 0)
                        goto broken;
                done += w;
        }
        return n;
broken:
        splice_pipe_close();
        return -EPIPE;
}

ssize_t body_splice(struct request *req, int fd, size_t max)
{
        FCGX_Request *f = req->fcgx;
        size_t total = 0;

        if (splice_pipe[0] < 0 && pipe2(splice_pipe, O_CLOEXEC) < 0)
                return -EOPNOTSUPP;
        if (FCGX_FFlush(f->out) < 0 || FCGX_GetError(f->out) != 0)
                return -EPIPE;
        /* all that is queued, record by record (one wakeup of the caller
         * for what the agent's socket holds, not one per record) */
        while (total < max) {
                ssize_t n = splice_record(f, fd, max - total);

                if (n == -EPIPE || (n <= 0 && total == 0))
                        return n;
                if (n <= 0)
                        break; /* the count so far; the caller comes back for the rest */
                total += (size_t)n;
        }
        return (ssize_t)total;
}
