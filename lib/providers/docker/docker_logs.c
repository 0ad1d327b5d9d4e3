/* docker_logs: the Docker provider's logs op (provider.h): the container's
 * log (json-file, bounded by DOCKER_LOG_* at create) through
 * GET /containers/{id}/logs, its stdout and stderr frames demultiplexed in
 * Docker's order into a ring of max_bytes (tailbuf.h), so a sandbox that
 * wrote more costs the broker max_bytes, never the log's size. */
#include "providers/docker/docker_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "providers/docker/docker_json.h"
#include "codec/tailbuf.h"

struct logs_read {
        struct docker_demux demux;
        struct tailbuf tail;
        uint64_t newlines;
        char last; /* the last byte of the output: a last line without its newline */
};

static int logs_piece(void *ud, int stream, const void *p, size_t n)
{
        struct logs_read *l = ud;
        const char *s = p;
        size_t i;

        (void)stream; /* stdout and stderr as Docker interleaved them */
        if (n == 0)
                return 0;
        for (i = 0; i < n; i++)
                l->newlines += s[i] == '\n';
        l->last = s[n - 1];
        return tailbuf_append(&l->tail, p, n);
}

static int logs_sink(void *ud, const void *data, size_t len)
{
        struct logs_read *l = ud;

        return docker_demux_feed_fn(&l->demux, data, len, logs_piece, l);
}

int docker_logs(struct provider *p, const char *ref, const struct logs_spec *spec,
                struct sandbox_logs *ret, char *ret_err)
{
        struct docker *d = impl(p);
        struct logs_read l = { .tail.max = spec->max_bytes };
        struct http_buf resp = { 0 };
        char query[96], *path = NULL, *kept = NULL;
        uint64_t lines;
        size_t start, n;
        long status = 0;
        int r;

        /* one line more than asked: its presence tells that lines were left out */
        snprintf(query, sizeof(query), "?stdout=1&stderr=1&follow=0&tail=%d", spec->tail + 1);
        path = docker_path_fmt("/containers/%s/logs", ref, NULL);
        char *full = NULL;
        if (path && asprintf(&full, "%s%s", path, query) < 0)
                full = NULL;
        struct docker_request req = {
                .method = "GET",
                .path = full,
                .timeout_ms = spec->timeout_ms,
                .max_resp = DOCKER_RESP_MAX,
                .sink = logs_sink,
                .sink_ud = &l,
        };
        r = full ? docker_api_request(d->api, &req, &status, &resp, ret_err) : -ENOMEM;
        if (r == 0 && (r = docker_api_status_errno(status)) < 0) {
                docker_json_error_message("logs", status, resp.data, ret_err);
                goto out;
        }
        if (r < 0)
                goto out;
        if (!docker_demux_complete(&l.demux)) {
                provider_errf(ret_err, "docker: logs: the stream ended inside a frame");
                r = -EPROTO;
                goto out;
        }
        kept = malloc(l.tail.len + 1);
        if (!kept) {
                r = -ENOMEM;
                goto out;
        }
        n = tailbuf_copy(&l.tail, kept);
        lines = l.newlines + (l.tail.total > 0 && l.last != '\n');
        start = tailbuf_line_start(kept, n, lines, (uint64_t)spec->tail, l.tail.total > l.tail.len,
                                   &ret->truncated);
        memmove(kept, kept + start, n - start);
        kept[n - start] = '\0';
        ret->data = kept;
        ret->len = n - start;
        kept = NULL;
        r = 0;
out:
        free(kept);
        free(full);
        free(path);
        tailbuf_release(&l.tail);
        http_buf_release(&resp);
        return r;
}
