/* kubernetes_events: the Kubernetes provider's event stream (watch_events):
 * a list of our pods of this key prefix (labelSelector managed=1 and the
 * prefix's hash), then a watch from the list's resourceVersion
 * (allowWatchBookmarks, timeoutSeconds K8S_WATCH_S), followed again from the
 * last resourceVersion seen when the server ends it, and from a fresh list
 * when the version is too old (410 Gone: an ERROR event or the status).
 * What a pod does becomes a sandbox event:
 *   Failed, Succeeded, its main container terminated, or being deleted
 *                              EXITED (its exit code; OOM first when the
 *                              kernel killed it: reason OOMKilled)
 *   DELETED                    EXITED (code unknown); its marker goes
 *   Running with an IP         its agent marker, when missing, is written
 *                              (a supervisor restarted after AGENT_DIR was
 *                              emptied: kubernetes_agent.c)
 * The list at each (re)start reports the pods that ended meanwhile. */
#include "providers/kubernetes/kubernetes_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/linebuf.h"

#define K8S_WATCH_S 300                      /* one watch request; then followed again */
#define K8S_EVENT_LINE_MAX (4 * 1024 * 1024) /* one event: a whole Pod */

struct watch {
        struct k8s *k;
        struct linebuf lb;
        const char *prefix;
        void (*on_event)(void *ud, const struct sandbox_event *ev);
        bool (*stop)(void *ud);
        void *ud;
        char rv[K8S_RV_MAX];
        bool gone; /* 410: list again */
};

static void emit(struct watch *w, const struct k8s_pod *pod, bool deleted)
{
        struct sandbox_event ev = { .kind = SANDBOX_EVENT_EXITED };

        if (!pod->managed || !pod->sandbox_id[0] || strcmp(pod->prefix, w->prefix))
                return;
        if (deleted) {
                if (w->k->agent)
                        k8s_agent_marker_remove(w->k, pod->name);
        } else if (k8s_pod_state(pod) != SANDBOX_RUN_EXITED) {
                if (w->k->agent && pod->agent && k8s_pod_state(pod) == SANDBOX_RUN_RUNNING &&
                    pod->ip[0])
                        (void)k8s_agent_marker_write(w->k, pod, true, NULL);
                return;
        }
        k8s_pod_info(pod, &ev.info);
        if (deleted && !pod->terminated)
                ev.info.exit_code = -1;
        if (ev.info.oom_killed) {
                struct sandbox_event oom = ev;

                oom.kind = SANDBOX_EVENT_OOM;
                w->on_event(w->ud, &oom);
        }
        w->on_event(w->ud, &ev);
}

static void list_item(void *ud, const struct k8s_pod *pod)
{
        emit(ud, pod, false);
}

static int watch_line(void *ud, const char *line, size_t len)
{
        struct watch *w = ud;
        enum k8s_event_type type;
        struct k8s_pod pod;
        int code;

        /* a piece of an over-long line parses as garbage and is skipped */
        if (k8s_json_parse_event(line, len, &type, &pod, &code) < 0)
                return 0;
        if (type == K8S_EV_ERROR) {
                if (code == 410) {
                        w->gone = true;
                        return -ESTALE;
                }
                return -EPROTO;
        }
        if (pod.rv[0])
                snprintf(w->rv, sizeof(w->rv), "%s", pod.rv);
        if (type != K8S_EV_BOOKMARK)
                emit(w, &pod, type == K8S_EV_DELETED);
        return 0;
}

static int watch_sink(void *ud, const void *data, size_t len)
{
        struct watch *w = ud;

        return linebuf_feed(&w->lb, data, len, watch_line, w);
}

static int watch_tick(void *ud)
{
        struct watch *w = ud;

        return w->stop(w->ud) ? -ECANCELED : 0;
}

int k8s_watch_events(struct provider *p, const char *prefix,
                     void (*on_event)(void *ud, const struct sandbox_event *ev),
                     bool (*stop)(void *ud), void *ud, char *ret_err)
{
        struct k8s *k = k8s_impl(p);
        struct watch w = { .k = k,
                           .lb.max = K8S_EVENT_LINE_MAX,
                           .prefix = prefix,
                           .on_event = on_event,
                           .stop = stop,
                           .ud = ud };
        char hash[40], sel[160];
        int r;

        r = k8s_prefix_hash(prefix, hash, sizeof(hash));
        if (r < 0)
                return r;
        snprintf(sel, sizeof(sel),
                 K8S_LABEL_DOMAIN "managed%%3D1%%2C" K8S_LABEL_PREFIX_HASH "%%3D%s", hash);
        while (!stop(ud)) {
                struct http_buf resp = { 0 };
                char *path = NULL;
                long status = 0;

                if (!w.rv[0]) {
                        r = k8s_pod_list(k, sel, list_item, &w, w.rv, "watch list", ret_err);
                        if (r < 0)
                                break;
                }
                if (asprintf(&path,
                             "/api/v1/namespaces/%s/"
                             "pods?labelSelector=%s&watch=1&allowWatchBookmarks=true"
                             "&resourceVersion=%s&timeoutSeconds=%d",
                             k->ns, sel, w.rv, K8S_WATCH_S) < 0) {
                        r = -ENOMEM;
                        break;
                }
                struct k8s_request req = { .method = "GET",
                                           .path = path,
                                           .timeout_ms = (K8S_WATCH_S + 30) * 1000,
                                           .sink = watch_sink,
                                           .sink_ud = &w,
                                           .tick = watch_tick,
                                           .tick_ud = &w };
                w.gone = false;
                linebuf_release(&w.lb);
                r = k8s_api_request(k->api, &req, &status, &resp, ret_err);
                free(path);
                if (r == 0 && status == 410)
                        w.gone = true;
                else if (r == 0 && (r = k8s_api_status_errno(status)) < 0)
                        k8s_json_error_message("watch", status, resp.data, ret_err);
                http_buf_release(&resp);
                if (r == -ECANCELED) {
                        r = 0; /* stop() said so */
                        break;
                }
                if (w.gone) {
                        w.rv[0] = '\0'; /* too old: a fresh list */
                        r = 0;
                        continue;
                }
                if (r < 0)
                        break;
                /* the server ended the watch (timeoutSeconds): on from w.rv */
        }
        linebuf_release(&w.lb);
        if (r == -EIO)
                r = -EREMOTEIO;
        return r;
}
