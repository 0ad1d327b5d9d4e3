/* kubernetes: see kubernetes.h. Contract: the core/v1 API of Kubernetes
 * v1.37 (Pods: create, get, list, watch, delete). */
#include "providers/kubernetes/kubernetes_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/timeutil.h"

#define POLL_FIRST_MS 100 /* create's wait: 100, 200, 400, 500, 500 ... ms */
#define POLL_STEP_MAX_MS 500
#define DELETE_TRIES 5 /* a failed create's pod: 250, 500, 1000, 2000 ms between tries */
#define DELETE_FIRST_MS 250

bool k8s_ref_valid(const char *ref)
{
        size_t n = ref ? strlen(ref) : 0;

        if (n == 0 || n > 63 || ref[0] == '-' || ref[n - 1] == '-')
                return false;
        for (size_t i = 0; i < n; i++)
                if (!((ref[i] >= 'a' && ref[i] <= 'z') || (ref[i] >= '0' && ref[i] <= '9') ||
                      ref[i] == '-'))
                        return false;
        return true;
}

static int bad_ref(const char *what, char *ret_err)
{
        provider_errf(ret_err, "kubernetes: %s: not a pod name of ours", what);
        return -ENOENT;
}

int k8s_call(struct k8s *k, const char *method, const char *path, const char *json, size_t max,
             struct http_buf *resp, const char *what, char *ret_err)
{
        struct k8s_request req = { .method = method,
                                   .path = path,
                                   .json = json,
                                   .timeout_ms = k->timeout_ms,
                                   .max_resp = max };
        struct http_buf b = { 0 };
        long status = 0;
        int r;

        if (!path) {
                provider_errf(ret_err, "kubernetes: %s: out of memory", what);
                return -ENOMEM;
        }
        r = k8s_api_request(k->api, &req, &status, &b, ret_err);
        if (r == -EIO)
                r = -EREMOTEIO; /* -EIO reads "Redis is down" to callers */
        if (r == 0 && (r = k8s_api_status_errno(status)) < 0)
                k8s_json_error_message(what, status, b.data, ret_err); /* with its hint */
        if (r == 0 && resp) {
                *resp = b;
                b = (struct http_buf){ 0 };
        }
        http_buf_release(&b);
        return r;
}

static char *pod_path(struct k8s *k, const char *ref)
{
        char *p;

        return asprintf(&p, "/api/v1/namespaces/%s/pods/%s", k->ns, ref) < 0 ? NULL : p;
}

int k8s_pod_get(struct k8s *k, const char *ref, struct k8s_pod *pod, const char *what, char *ret_err)
{
        struct http_buf resp = { 0 };
        char *path = pod_path(k, ref);
        int r = k8s_call(k, "GET", path, NULL, K8S_RESP_MAX, &resp, what, ret_err);

        free(path);
        if (r == 0 && (r = k8s_json_parse_pod(resp.data, resp.len, pod)) < 0)
                provider_errf(ret_err, "kubernetes: %s: malformed Pod answer", what);
        http_buf_release(&resp);
        return r;
}

int k8s_pod_list(struct k8s *k, const char *sel, void (*fn)(void *ud, const struct k8s_pod *pod),
                 void *ud, char ret_rv[K8S_RV_MAX], const char *what, char *ret_err)
{
        char *cont = calloc(1, K8S_CONTINUE_MAX), rv[K8S_RV_MAX] = "";
        int r = -ENOMEM;

        if (!cont)
                return r;
        for (int page = 0; page < K8S_LIST_PAGES; page++) {
                struct http_buf resp = { 0 };
                char *ec = cont[0] ? http_escape(cont) : NULL, *path = NULL;

                if ((!cont[0] || ec) &&
                    asprintf(&path,
                             "/api/v1/namespaces/%s/pods?labelSelector=%s&limit=" K8S_LIST_PAGE
                             "%s%s",
                             k->ns, sel, ec ? "&continue=" : "", ec ? ec : "") < 0)
                        path = NULL;
                free(ec);
                r = k8s_call(k, "GET", path, NULL, K8S_LIST_MAX, &resp, what, ret_err);
                free(path);
                if (r == 0 && (r = k8s_json_parse_list(resp.data, resp.len, fn, ud, cont,
                                                       K8S_CONTINUE_MAX, rv)) < 0)
                        provider_errf(ret_err, "kubernetes: %s: malformed PodList answer", what);
                http_buf_release(&resp);
                if (r < 0 || !cont[0])
                        break;
        }
        if (r == 0 && ret_rv)
                memcpy(ret_rv, rv, K8S_RV_MAX);
        free(cont);
        return r;
}

/* A failure that another try may not meet: the API server away or
 * restarting (refused, reset, timed out), overloaded (429) or answering 5xx. */
static bool transient(int r)
{
        return r == -ECONNREFUSED || r == -ETIMEDOUT || r == -EREMOTEIO || r == -EAGAIN;
}

static void sleep_ms(int ms)
{
        nanosleep(&(struct timespec){ ms / 1000, (ms % 1000) * 1000000L }, NULL);
}

static int pod_delete(struct k8s *k, const char *ref, char *ret_err)
{
        char *path = pod_path(k, ref), *body = NULL;
        int r;

        if (asprintf(&body,
                     "{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\",\"gracePeriodSeconds\":%d}",
                     k->grace_s) < 0)
                body = NULL;
        r = k8s_call(k, "DELETE", body ? path : NULL, body, K8S_RESP_MAX, NULL, "delete", ret_err);
        free(body);
        free(path);
        return r;
}

/* A failed create's pod deleted, through a short outage of the API server
 * (DELETE_TRIES tries, 250 ms apart doubling: about 4 s); after that the
 * reconciler removes it (a pod of this prefix without a record). */
static void pod_delete_retried(struct k8s *k, const char *ref)
{
        char ignored[PROVIDER_ERR_MAX];
        int wait = DELETE_FIRST_MS;

        for (int i = 1; transient(pod_delete(k, ref, ignored)) && i < DELETE_TRIES; i++) {
                sleep_ms(wait);
                wait *= 2;
        }
}

/* Wait for ref to be Running with an IP, at most pod_wait_ms; *pod the last seen. */
static int wait_running(struct k8s *k, const char *ref, struct k8s_pod *pod, const char *what,
                        char *ret_err)
{
        int64_t deadline = timeutil_mono_ms() + k->pod_wait_ms;
        int step = POLL_FIRST_MS, r;

        for (;;) {
                r = k8s_pod_get(k, ref, pod, what, ret_err);
                if (r < 0 && (!transient(r) || timeutil_mono_ms() + step > deadline))
                        return r;
                if (r < 0) { /* the API server restarting: the pod is there, ask again */
                        sleep_ms(step);
                        step = step * 2 > POLL_STEP_MAX_MS ? POLL_STEP_MAX_MS : step * 2;
                        continue;
                }
                enum sandbox_run_state st = k8s_pod_state(pod);

                if (st == SANDBOX_RUN_RUNNING && pod->ip[0])
                        return 0;
                if (st == SANDBOX_RUN_EXITED || k8s_pod_stuck(pod)) {
                        provider_errf(ret_err, "kubernetes: %s: pod %s %s%s%s%s%.120s", what, ref,
                                      st == SANDBOX_RUN_EXITED ? "ended" : "cannot start",
                                      pod->reason[0] ? ": " : "", pod->reason,
                                      pod->message[0] ? ": " : "", pod->message);
                        return -EREMOTEIO;
                }
                if (timeutil_mono_ms() + step > deadline) {
                        provider_errf(ret_err,
                                      "kubernetes: %s: pod %s not Running after %d ms (%s%s%s)", what,
                                      ref, k->pod_wait_ms, pod->phase[0] ? pod->phase : "no phase",
                                      pod->reason[0] ? ", " : "", pod->reason);
                        return -ETIMEDOUT;
                }
                sleep_ms(step);
                step = step * 2 > POLL_STEP_MAX_MS ? POLL_STEP_MAX_MS : step * 2;
        }
}

static int k8s_create(struct provider *p, const struct sandbox_spec *spec, char *ret_ref,
                      char *ret_err)
{
        struct k8s *k = k8s_impl(p);
        char name[K8S_NAME_MAX], key[K8S_AGENT_KEY_HEX + 1] = "", *body = NULL, *path = NULL;
        struct k8s_pod_opts o = { .pull_policy = k->pull_policy,
                                  .agent = k->agent,
                                  .agent_image = k->agent_image,
                                  .agent_port = k->agent_port,
                                  .agent_key = key,
                                  .grace_s = k->grace_s };
        struct k8s_pod pod;
        int r;

        ret_ref[0] = '\0';
        if (spec->n_mounts) {
                /* no volume ops: the broker refuses volumes before it gets here */
                provider_errf(ret_err,
                              "kubernetes: create: volumes are not supported by this provider");
                return -EINVAL;
        }
        r = k8s_pod_name(spec->sandbox_id, name, sizeof(name));
        if (r == 0 && k->agent)
                r = k8s_agent_key(key, sizeof(key));
        if (r == 0)
                r = k8s_json_pod_manifest(spec, &o, &body);
        explicit_bzero(key, sizeof(key));
        if (r < 0) {
                provider_errf(
                        ret_err, "kubernetes: create: %s",
                        r == -ENOMEM ? "out of memory" : "a sandbox id of at most 60 characters, an image and K=V env are required");
                goto out;
        }
        if (asprintf(&path, "/api/v1/namespaces/%s/pods", k->ns) < 0)
                path = NULL;
        r = k8s_call(k, "POST", path, body, K8S_RESP_MAX, NULL, "create", ret_err);
        if (transient(r))
                /* the answer lost, not necessarily the pod: it is this sandbox's name */
                pod_delete_retried(k, name);
        if (r < 0)
                goto out;
        snprintf(ret_ref, PROVIDER_REF_MAX, "%s", name);
        r = wait_running(k, name, &pod, "create", ret_err);
        if (r == 0 && k->agent)
                r = k8s_agent_marker_write(k, &pod, false, ret_err);
        if (r < 0) {
                /* nothing half-made stays behind: the caller has no ref */
                pod_delete_retried(k, name);
                k8s_agent_marker_remove(k, name);
                ret_ref[0] = '\0';
        }
out:
        if (body)
                explicit_bzero(body, strlen(body)); /* it held the key */
        free(body);
        free(path);
        return r;
}

/* A pod runs from its create on: start waits for that (and rewrites a
 * missing marker); one that ended cannot be started again. */
static int k8s_start(struct provider *p, const char *ref, char *ret_err)
{
        struct k8s *k = k8s_impl(p);
        struct k8s_pod pod;
        int r;

        if (!k8s_ref_valid(ref))
                return bad_ref("start", ret_err);
        r = wait_running(k, ref, &pod, "start", ret_err);
        if (r == -EREMOTEIO) {
                provider_errf(ret_err,
                              "kubernetes: start: pod %s has ended; a pod is not restarted", ref);
                return -EBUSY;
        }
        if (r == 0 && k->agent)
                r = k8s_agent_marker_write(k, &pod, true, ret_err);
        return r;
}

static int refuse(const char *what, char *ret_err)
{
        provider_errf(ret_err, "kubernetes: %s", what);
        return -EOPNOTSUPP;
}

static int k8s_stop(struct provider *p, const char *ref, char *ret_err)
{
        (void)p, (void)ref;
        return refuse("a pod cannot be stopped and kept (it is removed instead)", ret_err);
}

static int k8s_pause(struct provider *p, const char *ref, char *ret_err)
{
        (void)p, (void)ref;
        return refuse("pause is not supported: the Kubernetes API cannot freeze a pod", ret_err);
}

static int k8s_resume(struct provider *p, const char *ref, char *ret_err)
{
        (void)p, (void)ref;
        return refuse("resume is not supported: the Kubernetes API cannot freeze a pod", ret_err);
}

static int k8s_remove(struct provider *p, const char *ref, char *ret_err)
{
        struct k8s *k = k8s_impl(p);
        char *path, *body = NULL;
        int r;

        if (!k8s_ref_valid(ref))
                return bad_ref("remove", ret_err);
        k8s_agent_marker_remove(k, ref);
        path = pod_path(k, ref);
        if (asprintf(&body,
                     "{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\",\"gracePeriodSeconds\":%d,"
                     "\"propagationPolicy\":\"Background\"}",
                     k->grace_s) < 0)
                body = NULL;
        r = k8s_call(k, "DELETE", body ? path : NULL, body, K8S_RESP_MAX, NULL, "remove", ret_err);
        free(body);
        free(path);
        return r;
}

static int k8s_inspect(struct provider *p, const char *ref, struct sandbox_info *ret, char *ret_err)
{
        struct k8s_pod pod;
        int r;

        memset(ret, 0, sizeof(*ret));
        ret->state = SANDBOX_RUN_MISSING;
        ret->exit_code = -1;
        if (!k8s_ref_valid(ref))
                return bad_ref("inspect", ret_err);
        r = k8s_pod_get(k8s_impl(p), ref, &pod, "inspect", ret_err);
        if (r == 0)
                k8s_pod_info(&pod, ret);
        return r;
}

struct list_ctx {
        struct k8s *k;
        void (*fn)(void *ud, const struct sandbox_info *info);
        void *ud;
};

static void list_one(void *ud, const struct k8s_pod *pod)
{
        struct list_ctx *c = ud;
        struct sandbox_info info;

        if (!pod->managed)
                return;
        /* a supervisor restarted after AGENT_DIR was emptied: the reconciler's
         * listing brings the markers back; of this broker's pods only (another
         * broker's in the namespace are not this relay's to serve, nor are
         * their keys this node's to hold: no watch of ours would remove them) */
        if (c->k && c->k->agent && pod->agent && k8s_pod_state(pod) == SANDBOX_RUN_RUNNING &&
            strcmp(pod->prefix, c->k->prefix) == 0)
                (void)k8s_agent_marker_write(c->k, pod, true, NULL);
        k8s_pod_info(pod, &info);
        if (c->fn)
                c->fn(c->ud, &info);
}

static int k8s_list_managed(struct provider *p, void (*fn)(void *ud, const struct sandbox_info *info),
                            void *ud, char *ret_err)
{
        struct list_ctx c = { k8s_impl(p), fn, ud };

        return k8s_pod_list(k8s_impl(p), K8S_LABEL_DOMAIN "managed%3D1", list_one, &c, NULL, "list",
                            ret_err);
}

static int k8s_ping(struct provider *p, char *ret_err)
{
        struct k8s *k = k8s_impl(p);
        char *path;
        int r;

        if (asprintf(&path, "/api/v1/namespaces/%s/pods?limit=1", k->ns) < 0)
                path = NULL;
        r = k8s_call(k, "GET", path, NULL, K8S_LIST_MAX, NULL, "ping", ret_err);
        free(path);
        return r;
}

static int k8s_put_archive(struct provider *p, const char *ref, const char *dir, const void *tar,
                           size_t len, char *ret_err)
{
        (void)p, (void)ref, (void)dir, (void)tar, (void)len;
        return refuse("archives are not supported (files go through the agent)", ret_err);
}

static int k8s_get_archive(struct provider *p, const char *ref, const char *path, size_t max_len,
                           void **ret_tar, size_t *ret_len, char *ret_err)
{
        (void)p, (void)ref, (void)path, (void)max_len;
        *ret_tar = NULL;
        *ret_len = 0;
        return refuse("archives are not supported (files go through the agent)", ret_err);
}

static void k8s_free(struct provider *p)
{
        struct k8s *k = p ? k8s_impl(p) : NULL;

        if (k)
                k8s_api_free(k->api);
        free(k);
        free(p);
}

static const struct provider_ops k8s_ops = {
        .name = "kubernetes",
        .create = k8s_create,
        .start = k8s_start,
        .stop = k8s_stop,
        .pause = k8s_pause,
        .resume = k8s_resume,
        .remove = k8s_remove,
        .exec = k8s_exec,
        .exec_stream = k8s_exec_stream,
        .inspect = k8s_inspect,
        .list_managed = k8s_list_managed,
        .put_archive = k8s_put_archive,
        .get_archive = k8s_get_archive,
        .ping = k8s_ping,
        .watch_events = k8s_watch_events,
        .read_file = k8s_read_file,
        .write_file = k8s_write_file,
        .agent_dir_name = k8s_agent_dir_name,
        .free = k8s_free,
};

static bool copy(char *dst, size_t size, const char *src)
{
        return (size_t)snprintf(dst, size, "%s", src ? src : "") < size;
}

int k8s_provider_new(const struct k8s_settings *s, struct provider **ret, char *ret_err)
{
        struct k8s_auth auth = { s->ca_file, s->cert_file, s->key_file, s->token_file };
        struct provider *p = NULL;
        struct k8s *k = NULL;
        int r = -EINVAL;

        *ret = NULL;
        if (s->timeout_ms <= 0 || s->pod_wait_ms <= 0 || s->grace_s < 0 || !s->ns || !s->ns[0] ||
            (s->agent && (s->agent_port < 1 || s->agent_port > 65535))) {
                provider_errf(ret_err, "kubernetes: bad settings");
                return r;
        }
        r = -ENOMEM;
        p = calloc(1, sizeof(*p));
        k = calloc(1, sizeof(*k));
        if (!p || !k)
                goto out;
        r = -ENAMETOOLONG;
        if (!copy(k->ns, sizeof(k->ns), s->ns) ||
            !copy(k->pull_policy, sizeof(k->pull_policy), s->pull_policy) ||
            !copy(k->agent_image, sizeof(k->agent_image), s->agent_image) ||
            !copy(k->agent_dir, sizeof(k->agent_dir), s->agent_dir) ||
            !copy(k->prefix, sizeof(k->prefix), s->key_prefix))
                goto out;
        k->agent = s->agent;
        k->agent_port = s->agent_port;
        k->timeout_ms = s->timeout_ms;
        k->pod_wait_ms = s->pod_wait_ms;
        k->grace_s = s->grace_s;
        r = k8s_api_new(s->api_url, &auth, &k->api, ret_err);
        if (r < 0)
                goto out;
        p->ops = &k8s_ops;
        p->impl = k;
        *ret = p;
        return 0;
out:
        free(k);
        free(p);
        return r;
}

int k8s_provider_from_config(const struct broker_config *cfg, struct provider **ret)
{
        struct k8s_settings s = {
                .api_url = cfg->kubernetes_api_url,
                .ca_file = cfg->kubernetes_ca_file,
                .cert_file = cfg->kubernetes_cert_file,
                .key_file = cfg->kubernetes_key_file,
                .token_file = cfg->kubernetes_token_file,
                .ns = cfg->kubernetes_namespace,
                .pull_policy = cfg->kubernetes_pull_policy,
                .agent = cfg->kubernetes_agent != 0,
                .agent_image = cfg->kubernetes_agent_image,
                .agent_port = cfg->kubernetes_agent_port,
                .agent_dir = cfg->agent_dir,
                .key_prefix = cfg->key_prefix,
                .timeout_ms = cfg->kubernetes_timeout_ms,
                .pod_wait_ms = cfg->kubernetes_pod_wait_ms,
                .grace_s = cfg->kubernetes_grace_s,
        };

        return k8s_provider_new(&s, ret, NULL);
}

/* create is one POST and the wait for Running (kubernetes.h) */
static int k8s_deadline_ms(const struct broker_config *cfg)
{
        return 2 * cfg->kubernetes_timeout_ms + cfg->kubernetes_pod_wait_ms;
}

const struct provider_backend kubernetes_backend = {
        .name = "kubernetes",
        .new_from_config = k8s_provider_from_config,
        .deadline_ms = k8s_deadline_ms,
};
