/* body_out: see body_out.h. A FastCGI record is an 8-byte header (version
 * 1, type, request id, content length, padding length) and its content;
 * records of one request may be split anywhere, so bytes written here after
 * a flush of the stream arrive in order. */
#include "body_out.h"

#include <errno.h>
#include <sys/uio.h>

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

                        h[k][0] = FCGI_VERSION_1;
                        h[k][1] = FCGI_STDOUT_TYPE;
                        h[k][2] = (unsigned char)(f->requestId >> 8);
                        h[k][3] = (unsigned char)f->requestId;
                        h[k][4] = (unsigned char)(len >> 8);
                        h[k][5] = (unsigned char)len;
                        h[k][6] = h[k][7] = 0;
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
