/* fuzz_kubernetes_json: the API server's answers and watch events come over
 * the network, and a pod's status is written by a kubelet whose node may be
 * hostile. Each input is fed, as the client hands it over (bytes with a
 * length; a NUL-terminated copy for the error reader), to every
 * kubernetes_json reader: a Pod, a PodList (with continue buffers of several
 * sizes), a watch event line, the Status message; and every Pod that parses
 * goes through the state mapping and k8s_pod_info. Outputs must be
 * terminated and within their fields; a parsed pod's name is a non-empty
 * string; an agent key is either empty or 64 lowercase hex digits. Any crash,
 * sanitizer report or abort() is a bug. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "providers/kubernetes/kubernetes_json.h"

#define TERMINATED(a) (strnlen((a), sizeof(a)) < sizeof(a))

static void check_pod(const struct k8s_pod *pod)
{
        struct sandbox_info info;
        enum sandbox_run_state st;

        CHECK(TERMINATED(pod->name) && pod->name[0]);
        CHECK(TERMINATED(pod->phase) && TERMINATED(pod->ip) && TERMINATED(pod->rv));
        CHECK(TERMINATED(pod->sandbox_id) && TERMINATED(pod->prefix));
        CHECK(TERMINATED(pod->reason) && TERMINATED(pod->message));
        CHECK(TERMINATED(pod->agent_key));
        CHECK(!pod->agent_key[0] ||
              (strlen(pod->agent_key) == K8S_AGENT_KEY_HEX &&
               strspn(pod->agent_key, "0123456789abcdef") == K8S_AGENT_KEY_HEX));
        CHECK(pod->exit_code >= -1 && pod->exit_code <= 255);
        st = k8s_pod_state(pod);
        CHECK(st == SANDBOX_RUN_CREATED || st == SANDBOX_RUN_RUNNING || st == SANDBOX_RUN_EXITED);
        /* a pod that will never run is never one that runs */
        if (k8s_pod_stuck(pod))
                CHECK(st != SANDBOX_RUN_RUNNING);
        k8s_pod_info(pod, &info);
        CHECK(info.state == st);
        CHECK(TERMINATED(info.ref) && strcmp(info.ref, pod->name) == 0);
        CHECK(TERMINATED(info.sandbox_id) && TERMINATED(info.prefix));
}

struct count {
        size_t calls, max;
};

static void on_item(void *ud, const struct k8s_pod *pod)
{
        struct count *c = ud;

        check_pod(pod);
        CHECK(++c->calls <= c->max);
}

static void check_list(const char *data, size_t size, size_t cont_size)
{
        struct count c = { 0, size / 16 + 1 }; /* an item is at least {"metadata":{"name":"x"}} */
        char *cont = malloc(cont_size), rv[K8S_RV_MAX];
        int r;

        CHECK(cont);
        memset(cont, 0xA5, cont_size);
        memset(rv, 0xA5, sizeof(rv));
        r = k8s_json_parse_list(data, size, on_item, &c, cont, cont_size, rv);
        CHECK(r == 0 || r == -EPROTO || r == -ENAMETOOLONG);
        CHECK(strnlen(cont, cont_size) < cont_size && TERMINATED(rv));
        free(cont);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        const char *d = (const char *)data;
        enum k8s_event_type type;
        struct k8s_pod pod;
        char err[PROVIDER_ERR_MAX], *s;
        int r, code;

        r = k8s_json_parse_pod(d, size, &pod);
        CHECK(r == 0 || r == -EPROTO);
        if (r == 0)
                check_pod(&pod);
        check_list(d, size, 1);
        check_list(d, size, 16);
        check_list(d, size, 4096);
        r = k8s_json_parse_event(d, size, &type, &pod, &code);
        CHECK(r == 0 || r == -EPROTO);
        if (r == 0) {
                CHECK(type >= K8S_EV_ADDED && type <= K8S_EV_ERROR);
                if (type == K8S_EV_ADDED || type == K8S_EV_MODIFIED || type == K8S_EV_DELETED)
                        check_pod(&pod);
                if (type == K8S_EV_BOOKMARK)
                        CHECK(pod.rv[0] && TERMINATED(pod.rv));
        }
        s = malloc(size + 1);
        CHECK(s);
        memcpy(s, data, size);
        s[size] = '\0';
        k8s_json_error_message("fuzz", 500, s, err);
        CHECK(TERMINATED(err));
        free(s);
        return 0;
}
