/* Unit tests for the agent markers of the Kubernetes provider on a node that did not make the
 * pod (lib/providers/kubernetes/kubernetes_agent.c, kubernetes.c's list), with the API server
 * replaced at the link seam: __wrap_k8s_api_request answers a GET of a pod or a PodList from
 * the pods below and records each path. Checked: the reconciler's list writes the markers of
 * this broker's key prefix only (another broker's pod in the namespace gets none); a command
 * for a pod whose marker this node lacks (another broker node made it) reads the pod and writes
 * its marker (IP, port, the key of its spec; 0600) before the call, for a pod of this prefix
 * only; a marker already there is not asked for again; without a relay to serve it the call
 * still fails as the sandbox's (-EIO), after a bounded wait. */
/* WRAP: -Wl,--wrap=k8s_api_request */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "providers/kubernetes/kubernetes.h"
#include "providers/kubernetes/kubernetes_api.h"
#include "providers/kubernetes/kubernetes_json.h"

#define KEY_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define KEY_B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

static char paths[16][512];
static int ncalls;

/* A Running pod with the agent, of prefix px, at ip, its key in the main container's env. */
static char *pod(const char *name, const char *px, const char *ip, const char *key)
{
        char *s;

        assert_true(asprintf(&s,
                             "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"resourceVersion\":\"5\","
                             "\"labels\":{\"sandbox-broker.io/managed\":\"1\",\"sandbox-broker.io/agent\":\"1\"},"
                             "\"annotations\":{\"sandbox-broker.io/sandbox-id\":\"id-%s\","
                             "\"sandbox-broker.io/prefix\":\"%s\"}},"
                             "\"spec\":{\"containers\":[{\"name\":\"sandbox\",\"env\":[{\"name\":"
                             "\"SANDBOX_AGENT_KEY\",\"value\":\"%s\"}]}]},"
                             "\"status\":{\"phase\":\"Running\",\"podIP\":\"%s\"}}",
                             name, name, px, key, ip) > 0);
        return s;
}

static int answer(struct http_buf *resp, long *status, long code, char *body)
{
        *status = code;
        memset(resp, 0, sizeof(*resp));
        resp->max = 1 << 20;
        assert_int_equal(http_buf_append(resp, body, strlen(body)), 0);
        free(body);
        return 0;
}

int __wrap_k8s_api_request(struct k8s_api *api, const struct k8s_request *req, long *ret_status,
                           struct http_buf *ret_resp, char *ret_err);
int __wrap_k8s_api_request(struct k8s_api *api, const struct k8s_request *req, long *ret_status,
                           struct http_buf *ret_resp, char *ret_err)
{
        char *a, *b, *list;

        (void)api, (void)ret_err;
        assert_true(ncalls < 16);
        snprintf(paths[ncalls++], sizeof(paths[0]), "%s", req->path);
        assert_non_null(ret_resp);
        if (strstr(req->path, "/pods?")) {
                a = pod("sb-a", "sb:", "10.244.7.5", KEY_A);
                b = pod("sb-b", "other:", "10.244.7.6", KEY_B);
                assert_true(asprintf(&list,
                                     "{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"9\"},"
                                     "\"items\":[%s,%s]}",
                                     a, b) > 0);
                free(a), free(b);
                return answer(ret_resp, ret_status, 200, list);
        }
        if (strstr(req->path, "/pods/sb-a"))
                return answer(ret_resp, ret_status, 200, pod("sb-a", "sb:", "10.244.7.5", KEY_A));
        if (strstr(req->path, "/pods/sb-b"))
                return answer(ret_resp, ret_status, 200, pod("sb-b", "other:", "10.244.7.6", KEY_B));
        return answer(ret_resp, ret_status, 404, strdup("{\"kind\":\"Status\",\"code\":404}"));
}

struct fixture {
        char dir[64], tok[80];
        struct provider *p;
};

static int setup(void **state)
{
        struct fixture *f = calloc(1, sizeof(*f));
        char err[PROVIDER_ERR_MAX] = "";
        int fd;

        assert_non_null(f);
        snprintf(f->dir, sizeof(f->dir), "/tmp/k8s-marker-XXXXXX");
        assert_non_null(mkdtemp(f->dir));
        snprintf(f->tok, sizeof(f->tok), "%s/token", f->dir);
        fd = open(f->tok, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, "token\n", 6), 6);
        close(fd);
        struct k8s_settings s = { .api_url = "https://127.0.0.1:1",
                                  .ca_file = f->tok,
                                  .token_file = f->tok,
                                  .ns = "ns",
                                  .pull_policy = "Never",
                                  .agent = true,
                                  .agent_image = "agent:1",
                                  .agent_port = 7070,
                                  .agent_dir = f->dir,
                                  .key_prefix = "sb:",
                                  .timeout_ms = 1000,
                                  .pod_wait_ms = 1000,
                                  .grace_s = 1 };
        assert_int_equal(k8s_provider_new(&s, &f->p, err), 0);
        ncalls = 0;
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fixture *f = *state;
        char cmd[128];

        provider_free(f->p);
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
        assert_int_equal(system(cmd), 0);
        free(f);
        return 0;
}

/* The marker of ref as a string ("" when there is none); its mode in *mode. */
static void marker(const struct fixture *f, const char *ref, char *buf, size_t size, mode_t *mode)
{
        char path[160];
        struct stat st;
        FILE *fp;

        buf[0] = '\0';
        snprintf(path, sizeof(path), "%s/%s.tcp", f->dir, ref);
        if (stat(path, &st) < 0)
                return;
        *mode = st.st_mode & 07777;
        fp = fopen(path, "re");
        assert_non_null(fp);
        if (!fgets(buf, (int)size, fp))
                buf[0] = '\0';
        fclose(fp);
}

static void list_fn(void *ud, const struct sandbox_info *info)
{
        (void)info;
        ++*(int *)ud;
}

static void test_list_writes_this_prefixs_markers_only(void **state)
{
        struct fixture *f = *state;
        char err[PROVIDER_ERR_MAX] = "", m[256];
        mode_t mode = 0;
        int n = 0;

        assert_int_equal(f->p->ops->list_managed(f->p, list_fn, &n, err), 0);
        assert_int_equal(n, 2); /* both reported to the reconciler, which filters by prefix */
        marker(f, "sb-a", m, sizeof(m), &mode);
        assert_string_equal(m, "10.244.7.5 7070 " KEY_A "\n");
        assert_int_equal(mode, 0600);
        marker(f, "sb-b", m, sizeof(m), &mode);
        assert_string_equal(m, ""); /* another broker's pod: not this node's to serve */
}

static void test_command_on_a_pod_made_elsewhere_writes_its_marker(void **state)
{
        struct fixture *f = *state;
        struct exec_spec spec = { 0 };
        struct exec_result res;
        const char *argv[] = { "true", NULL };
        char err[PROVIDER_ERR_MAX] = "", m[256];
        mode_t mode = 0;

        spec.argv = argv;
        spec.timeout_ms = 1000;
        /* no relay here: the marker is written, agent.sock never comes, the call fails as the
         * sandbox's after the bounded wait */
        assert_int_equal(f->p->ops->exec(f->p, "sb-a", &spec, &res, err), -EIO);
        assert_int_equal(ncalls, 1);
        assert_non_null(strstr(paths[0], "/namespaces/ns/pods/sb-a"));
        marker(f, "sb-a", m, sizeof(m), &mode);
        assert_string_equal(m, "10.244.7.5 7070 " KEY_A "\n");
        assert_int_equal(mode, 0600);

        /* the marker there: no GET again */
        assert_int_equal(f->p->ops->exec(f->p, "sb-a", &spec, &res, err), -EIO);
        assert_int_equal(ncalls, 1);

        /* a pod of another key prefix: read, but no marker */
        assert_int_equal(f->p->ops->exec(f->p, "sb-b", &spec, &res, err), -EIO);
        assert_int_equal(ncalls, 2);
        marker(f, "sb-b", m, sizeof(m), &mode);
        assert_string_equal(m, "");

        /* no such pod: nothing */
        assert_int_equal(f->p->ops->exec(f->p, "sb-zz", &spec, &res, err), -EIO);
        marker(f, "sb-zz", m, sizeof(m), &mode);
        assert_string_equal(m, "");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_list_writes_this_prefixs_markers_only, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_command_on_a_pod_made_elsewhere_writes_its_marker,
                                                setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
