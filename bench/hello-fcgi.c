/* hello-fcgi: the smallest FastCGI handler, threaded like broker-fcgi, used by
 * scripts/bench-leases to measure what nginx + libfcgi cost without any broker
 * work (no Redis, no Kafka, no JSON parsing).
 *
 *   hello-fcgi --socket PATH [--keep]     (FCGI_THREADS threads, default 8)
 *
 * Each thread loops FCGX_Accept_r under one mutex (libfcgi's threaded example)
 * and answers a tiny JSON: the raw nginx + libfcgi layer, one connection per
 * request. With --keep the threads wait in broker-fcgi's own loop instead
 * (fcgi/accept_loop.c, built in by scripts/bench-leases), which serves the
 * connections nginx keeps (fastcgi_keep_conn): the same hop as the broker's
 * leases and status groups. SIGTERM/SIGINT end it. */
#include <fcgiapp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "accept_loop.h"

#define LISTEN_BACKLOG 512

static int listen_fd;
static pthread_mutex_t accept_lock = PTHREAD_MUTEX_INITIALIZER;
static struct accept_loop *loop; /* --keep */

#define HELLO_ANSWER                                           \
        "Status: 200 OK\r\nContent-Type: application/json\r\n" \
        "Cache-Control: no-store\r\n\r\n{\"status\":\"ok\"}\n"

static void *worker_keep(void *arg)
{
        FCGX_Request req;

        (void)arg;
        accept_loop_init_request(loop, &req);
        while (accept_loop_next(loop, &req) == 0) {
                FCGX_PutS(HELLO_ANSWER, req.out);
                accept_loop_finish(loop, &req);
        }
        return NULL;
}

static void *worker_main(void *arg)
{
        FCGX_Request req;

        (void)arg;
        if (FCGX_InitRequest(&req, listen_fd, 0) != 0)
                return NULL;
        for (;;) {
                int r;

                pthread_mutex_lock(&accept_lock);
                r = FCGX_Accept_r(&req);
                pthread_mutex_unlock(&accept_lock);
                if (r < 0)
                        break;
                FCGX_PutS(HELLO_ANSWER, req.out);
                FCGX_Finish_r(&req);
        }
        return NULL;
}

int main(int argc, char **argv)
{
        const char *path = NULL, *env;
        int nthreads = 8, sig, keep = 0;
        sigset_t sigs;

        if ((argc == 3 || (argc == 4 && strcmp(argv[3], "--keep") == 0)) &&
            strcmp(argv[1], "--socket") == 0) {
                path = argv[2];
                keep = argc == 4;
        }
        if (!path) {
                fprintf(stderr, "usage: hello-fcgi --socket PATH [--keep]\n");
                return 2;
        }
        env = getenv("FCGI_THREADS");
        if (env && *env) {
                char *end;
                long n = strtol(env, &end, 10);

                if (*end || n < 1 || n > 1024) {
                        fprintf(stderr, "hello-fcgi: bad FCGI_THREADS '%s'\n", env);
                        return 2;
                }
                nthreads = (int)n;
        }
        signal(SIGPIPE, SIG_IGN);
        sigemptyset(&sigs);
        sigaddset(&sigs, SIGTERM);
        sigaddset(&sigs, SIGINT);
        pthread_sigmask(SIG_BLOCK, &sigs, NULL);

        if (FCGX_Init() != 0) {
                fprintf(stderr, "hello-fcgi: FCGX_Init failed\n");
                return 1;
        }
        unlink(path);
        listen_fd = FCGX_OpenSocket(path, LISTEN_BACKLOG);
        if (listen_fd < 0) {
                fprintf(stderr, "hello-fcgi: cannot listen on %s\n", path);
                return 1;
        }
        chmod(path, 0660);
        if (keep && accept_loop_new(listen_fd, nthreads * 4 > 64 ? nthreads * 4 : 64, &loop) < 0) {
                fprintf(stderr, "hello-fcgi: cannot set up the accept loop\n");
                return 1;
        }
        for (int i = 0; i < nthreads; i++) {
                pthread_t t;

                if (pthread_create(&t, NULL, keep ? worker_keep : worker_main, NULL) != 0) {
                        fprintf(stderr, "hello-fcgi: cannot start thread %d\n", i);
                        return 1;
                }
                pthread_detach(t);
        }
        fprintf(stderr, "hello-fcgi: serving %s with %d threads%s\n", path, nthreads,
                keep ? ", kept connections" : "");
        sigwait(&sigs, &sig);
        unlink(path);
        _exit(0);
}
