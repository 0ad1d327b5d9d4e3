/* Latency of the Docker provider's calls (persistent libcurl connection):
 * create, start, exec `true` round trip, remove; median and p90 over N runs.
 * Compare with bench/docker-raw-bench (one curl process per Engine API call).
 *
 *   make && cc -O2 -std=gnu11 -D_GNU_SOURCE -Ilib -o build/docker_provider_bench \
 *       bench/docker_provider_bench.c build/libbroker.a \
 *       $(pkg-config --libs hiredis rdkafka json-c libsystemd libcurl libarchive) -lfcgi -lpthread
 *   build/docker_provider_bench [N] [IMAGE] */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "providers/docker/docker.h"

static double now_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;

        return x < y ? -1 : x > y;
}

static void report(const char *what, double *v, int n)
{
        qsort(v, (size_t)n, sizeof(*v), cmp);
        printf("%-14s median %7.1f ms  p90 %7.1f ms  (n=%d)\n", what, v[n / 2], v[(n * 9) / 10], n);
}

int main(int argc, char **argv)
{
        int n = argc > 1 ? atoi(argv[1]) : 10;
        const char *image = argc > 2 ? argv[2] : "sandbox-broker/base:latest";
        double *tc = calloc((size_t)n, sizeof(double)), *ts = calloc((size_t)n, sizeof(double));
        double *te = calloc((size_t)n * 3, sizeof(double)), *tr = calloc((size_t)n, sizeof(double));
        struct provider *p = NULL;
        char err[PROVIDER_ERR_MAX], ref[PROVIDER_REF_MAX], id[64];
        int ne = 0;

        if (n < 1 || !tc || !ts || !te || !tr)
                return 2;
        curl_global_init(CURL_GLOBAL_DEFAULT);
        if (docker_provider_new(NULL, 30000, &p) < 0 || p->ops->ping(p, err) < 0) {
                fprintf(stderr, "no docker: %s\n", err);
                return 1;
        }
        for (int i = 0; i < n; i++) {
                struct sandbox_spec spec = { .sandbox_id = id, .key_prefix = "bench:", .image = image,
                                             .network = "none",
                                             .limits = { 500000000, 512LL << 20, 256 } };
                struct exec_spec es = { .argv = (const char *const[]){ "true", NULL },
                                        .timeout_ms = 10000, .max_output = 1024 };
                struct exec_result res;
                double t;

                snprintf(id, sizeof(id), "bench-%d-%d", (int)getpid(), i);
                t = now_ms();
                if (p->ops->create(p, &spec, ref, err) < 0)
                        goto fail;
                tc[i] = now_ms() - t;
                t = now_ms();
                if (p->ops->start(p, ref, err) < 0)
                        goto fail;
                ts[i] = now_ms() - t;
                for (int k = 0; k < 3; k++) {
                        t = now_ms();
                        if (p->ops->exec(p, ref, &es, &res, err) < 0 || res.exit_code != 0)
                                goto fail;
                        te[ne++] = now_ms() - t;
                        exec_result_free(&res);
                }
                t = now_ms();
                if (p->ops->remove(p, ref, err) < 0)
                        goto fail;
                tr[i] = now_ms() - t;
        }
        printf("provider (persistent connection), image %s\n", image);
        report("create", tc, n);
        report("start", ts, n);
        report("exec true", te, ne);
        report("remove", tr, n);
        provider_free(p);
        curl_global_cleanup();
        free(tc), free(ts), free(te), free(tr);
        return 0;
fail:
        fprintf(stderr, "failed: %s\n", err);
        p->ops->remove(p, ref, err);
        return 1;
}
