/* broker-fcgi: the FastCGI handler program, one process per route group.
 *
 *   broker-fcgi --group leases|status|sandboxes|execd|execd-lane [--socket PATH] [--threads N]
 *
 * Without --socket it serves the listening socket systemd passed
 * (LISTEN_FDS) or, per the FastCGI spec, fd 0. FCGI_THREADS threads serve
 * one request each at a time; connections nginx keeps open between requests
 * (fastcgi_keep_conn) hold no thread while idle (accept_loop.h), so there may
 * be more of them than threads (docs/ARCHITECTURE.md §6). */
#include <curl/curl.h>
#include <errno.h>
#include <fcgiapp.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "accept_loop.h"
#include "core/config.h"
#include "store/auth_cache.h"
#include "queue/kafka.h"
#include "core/log.h"
#include "providers/provider_factory.h"
#include "core/metrics.h"
#include "store/metrics_store.h"
#include "store/redis_conn.h"
#include "request.h"
#include "routes.h"
#include "sandbox/sandbox.h"
#include "stream_guard.h"
#include "tenant_share.h"
#include "core/timeutil.h"

#define LISTEN_BACKLOG 512
/* Connections nginx may keep open to one handler process (fastcgi_keep_conn,
 * accept_loop.h), per worker thread: idle ones cost a descriptor each, no
 * thread; nginx's pool (nginx/broker.conf.in: keepalive 16 per nginx worker)
 * plus its busy ones stay far below. Past it a kept connection is closed
 * after its request and nginx opens another. */
#define KEPT_PER_THREAD 4
#define KEPT_MIN 64
#define DRAIN_TIMEOUT_MS 10000

/* Memory by design (docs/OPERATIONS.md, "Memory"). A worker's stack: the
 * deepest handler path of the broker's own frames (-fstack-usage with
 * -fcallgraph-info: ~230 KiB for an OpenSandbox create that provisions
 * through the agent, ~390 KiB if every indirect call took the deepest
 * target) plus libcurl's, OpenSSL's and glibc's, with a margin; large
 * working arrays are the request's (request_scratch), never thread-local.
 * Only the pages a thread touched count, but those stay resident: the
 * bound caps what one deep path can leave behind (8 MiB by default). A
 * sanitizer build keeps the default: its frames are several times
 * larger. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define WORKER_STACK_BYTES 0
#else
#define WORKER_STACK_BYTES (1024 * 1024)
#endif
/* malloc: at most this many arenas (glibc's default is 8 per core, each
 * keeping what its threads freed), and a fixed mmap threshold, so a large
 * buffer (a 5 MiB file's) is its own mapping, given back when freed, rather
 * than raising glibc's dynamic threshold and staying in an arena's heap */
#define MALLOC_ARENAS 2
#define MALLOC_MMAP_BYTES (128 * 1024)

static struct {
        struct broker_config cfg;
        const char *group;
        int listen_fd;
        struct accept_loop *loop;
        struct kafka_producer *kafka;
        atomic_int busy;
        atomic_bool stopping;
} app;

static void serve_one(struct worker *w, FCGX_Request *fcgx)
{
        struct request req;

        if (request_init(&req, fcgx, w) == 0)
                routes_dispatch(app.group, &req);
        if (!req.status)
                reply_error(&req, API_INTERNAL, "handler sent no response");
        metrics_request(app.group, req.route, req.method, req.status);
        if (req.after) {
                /* the client has its answer; the work goes on in this thread,
                 * the connection to nginx serves its next request meanwhile */
                request_finish_io(&req);
                accept_loop_finish(app.loop, fcgx);
                req.after(&req);
        }
        request_done(&req);
        accept_loop_finish(app.loop, fcgx);
}

static void *worker_main(void *arg)
{
        struct worker *w = arg;
        FCGX_Request fcgx;

        accept_loop_init_request(app.loop, &fcgx);
        while (!app.stopping) {
                /* No lock around the wait: every thread waits in epoll_wait
                 * on one set and the kernel wakes one per ready connection
                 * (accept_loop.h). A mutex only added a futex hand-off, a
                 * wake-up and a context switch per request
                 * (docs/LOAD-CAPACITY.md, the lease path). */
                int r = accept_loop_next(app.loop, &fcgx);

                if (r < 0) {
                        log_err(NULL, "worker %d: waiting for requests: %s", w->id, strerror(-r));
                        break;
                }
                atomic_fetch_add(&app.busy, 1);
                serve_one(w, &fcgx);
                atomic_fetch_sub(&app.busy, 1);
        }
        return NULL;
}

static int open_listener(const char *path)
{
        int fd;

        if (!path) {
                if (sd_listen_fds(1) == 1)
                        return SD_LISTEN_FDS_START;
                return 0; /* FCGI_LISTENSOCK_FILENO */
        }
        if (unlink(path) < 0 && errno != ENOENT) {
                log_err(NULL, "cannot remove stale socket %s: %m", path);
                return -1;
        }
        fd = FCGX_OpenSocket(path, LISTEN_BACKLOG);
        if (fd < 0) {
                log_err(NULL, "cannot listen on %s", path);
                return -1;
        }
        /* Only the owner and its group (nginx's) may connect. */
        if (chmod(path, 0660) < 0)
                log_warn(NULL, "cannot chmod %s: %m", path);
        return fd;
}

static void memory_bounds(void)
{
        mallopt(M_ARENA_MAX, MALLOC_ARENAS);
        mallopt(M_MMAP_THRESHOLD, MALLOC_MMAP_BYTES);
        mallopt(M_TRIM_THRESHOLD, MALLOC_MMAP_BYTES);
}

static int worker_attr(pthread_attr_t *attr)
{
        if (pthread_attr_init(attr) != 0)
                return -1;
        if (WORKER_STACK_BYTES && pthread_attr_setstacksize(attr, WORKER_STACK_BYTES) != 0) {
                pthread_attr_destroy(attr);
                return -1;
        }
        return 0;
}

static void usage(void)
{
        fprintf(stderr, "usage: broker-fcgi --group leases|status|sandboxes|execd|execd-lane "
                        "[--socket PATH] "
                        "[--threads N]\n");
}

int main(int argc, char **argv)
{
        const char *socket_path = NULL;
        struct worker *workers = NULL;
        pthread_t *threads = NULL;
        pthread_attr_t attr;
        sigset_t sigs;
        char err[256];
        int sig = 0, rc = 1, started = 0, threads_arg = 0, share = 0, share_cap = 0, share_pct = 0, r;
        const char *share_what = NULL;
        size_t max_body;

        for (int i = 1; i < argc; i++) {
                if (strcmp(argv[i], "--group") == 0 && i + 1 < argc)
                        app.group = argv[++i];
                else if (strcmp(argv[i], "--socket") == 0 && i + 1 < argc)
                        socket_path = argv[++i];
                else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
                        threads_arg = atoi(argv[++i]);
                else {
                        usage();
                        return 2;
                }
        }
        if (!app.group || !routes_group_known(app.group)) {
                usage();
                return 2;
        }
        log_init("broker-fcgi", LOG_INFO);
        if (config_load(&app.cfg, err, sizeof(err)) < 0) {
                log_err(NULL, "configuration: %s", err);
                return 2;
        }
        log_init("broker-fcgi", app.cfg.log_priority);
        if (threads_arg < 0 || threads_arg > 256) {
                log_err(NULL, "--threads must be 1 to 256");
                return 2;
        }
        if (threads_arg)
                app.cfg.fcgi_threads = threads_arg;
        /* File writes carry base64 content: 4/3 of FILE_MAX_BYTES plus the JSON around it. */
        max_body = (size_t)app.cfg.max_body_bytes;
        if (strcmp(app.group, "sandboxes") == 0 &&
            max_body < (size_t)app.cfg.file_max_bytes / 3 * 4 + 65536)
                max_body = (size_t)app.cfg.file_max_bytes / 3 * 4 + 65536;
        /* the threads of the data plane and of the sandboxes API, whose
         * requests may hold one for a command's run, are shared per tenant
         * (tenant_share.h); so are the leases API's while an acquire waits
         * for its sandbox (h_leases.c: beyond its share it does not wait);
         * the lane and status serve short calls only and share nothing */
        if (strcmp(app.group, "execd") == 0) {
                share_pct = app.cfg.execd_tenant_share_pct;
                share_what = "the data plane";
        } else if (strcmp(app.group, "sandboxes") == 0) {
                share_pct = app.cfg.sandboxes_tenant_share_pct;
                share_what = "the sandboxes API";
        } else if (strcmp(app.group, "leases") == 0) {
                share_pct = app.cfg.leases_tenant_share_pct;
                share_what = "the leases API";
        }
        /* ...and, FCGI_THREADS unset, have FCGI_SHARED_THREADS: at the
         * general default (8) a tenant's share would be 2 of them */
        if (share_pct && !threads_arg && !getenv("FCGI_THREADS"))
                app.cfg.fcgi_threads = FCGI_SHARED_THREADS;
        if (share_pct) {
                share = tenant_share_of(app.cfg.fcgi_threads, share_pct);
                share_cap = tenant_share_cap(app.cfg.fcgi_threads);
        }
        /* the data plane's command streams end with an error event should
         * this process die (stream_guard.h): its guard forks before any
         * thread, the listener or a connection exists */
        if (strcmp(app.group, "execd") == 0 && (r = stream_guard_start()) < 0)
                log_warn(NULL,
                         "stream guard: cannot start it (%s); a stream whose handler dies "
                         "ends without its error event",
                         strerror(-r));
        memory_bounds(); /* before any thread */
        signal(SIGPIPE, SIG_IGN);
        curl_global_init(CURL_GLOBAL_DEFAULT); /* once, before any thread (docker.h) */
        sigemptyset(&sigs);
        sigaddset(&sigs, SIGTERM);
        sigaddset(&sigs, SIGINT);
        pthread_sigmask(SIG_BLOCK, &sigs, NULL); /* inherited by the workers */

        if (kafka_producer_new(&app.cfg, "broker-fcgi", &app.kafka, err, sizeof(err)) < 0) {
                log_err(NULL, "kafka producer: %s", err);
                goto out;
        }
        r = auth_cache_start(&app.cfg);
        if (r < 0)
                log_warn(NULL, "API key cache: cannot start (%s); every key is looked up in Redis",
                         strerror(-r));
        if (FCGX_Init() != 0) {
                log_err(NULL, "FCGX_Init failed");
                goto out;
        }
        app.listen_fd = open_listener(socket_path);
        if (app.listen_fd < 0)
                goto out;
        r = accept_loop_new(app.listen_fd,
                            app.cfg.fcgi_threads * KEPT_PER_THREAD > KEPT_MIN
                                    ? app.cfg.fcgi_threads * KEPT_PER_THREAD
                                    : KEPT_MIN,
                            &app.loop);
        if (r < 0) {
                log_err(NULL, "cannot wait for connections: %s", strerror(-r));
                goto out;
        }
        workers = calloc((size_t)app.cfg.fcgi_threads, sizeof(*workers));
        threads = calloc((size_t)app.cfg.fcgi_threads, sizeof(*threads));
        if (!workers || !threads || worker_attr(&attr) < 0)
                goto out;
        for (int i = 0; i < app.cfg.fcgi_threads; i++) {
                char perr[SANDBOX_ERR_MAX];
                workers[i] = (struct worker){ .id = i,
                                              .cfg = &app.cfg,
                                              .kafka = app.kafka,
                                              .max_body = max_body,
                                              .tenant_share = share,
                                              .share_cap = share_cap,
                                              .share_group = app.group,
                                              .share_what = share_what };
                if (provider_new_from_config(&app.cfg, &workers[i].provider, perr) < 0) {
                        log_err(NULL, "%s", perr);
                        goto out;
                }
                if (redis_conn_new(&app.cfg, &workers[i].redis) < 0 ||
                    pthread_create(&threads[i], &attr, worker_main, &workers[i]) != 0) {
                        log_err(NULL, "cannot start worker %d", i);
                        goto out;
                }
                started++;
        }
        if (metrics_flusher_start(&app.cfg) < 0)
                log_warn(NULL, "metrics: cannot start the flusher; counts stay in this process");
        log_info(NULL, "serving group %s on %s with %d threads", app.group,
                 socket_path ? socket_path : "the inherited socket", app.cfg.fcgi_threads);
        if (share)
                log_info(NULL, "a tenant holds at most %d threads (%d%% of %d), %d in all but control calls",
                         share, share_pct, share_cap, share_cap);
        sigwait(&sigs, &sig);
        log_info(NULL, "signal %d: draining", sig);
        rc = 0;
out:
        app.stopping = true;
        /* Workers blocked in accept() are not interrupted; wait only for the
         * ones serving a request, then exit with them still parked. */
        for (int64_t t0 = timeutil_mono_ms();
             started && atomic_load(&app.busy) > 0 && timeutil_mono_ms() - t0 < DRAIN_TIMEOUT_MS;)
                usleep(10000);
        metrics_flusher_stop(); /* after the drain: the last requests count too */
        if (started)
                kafka_producer_flush(app.kafka); /* the audit events still gathering */
        if (socket_path && app.listen_fd > 0)
                unlink(socket_path);
        if (!started) {
                kafka_producer_free(app.kafka);
                free(workers);
                free(threads);
        }
        fflush(stderr);
        _exit(rc);
}
