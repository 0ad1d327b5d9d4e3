/* kubernetes_internal: what the Kubernetes provider's files share (not for
 * callers: they use kubernetes.h). */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include "providers/http_buf.h"
#include "providers/kubernetes/kubernetes.h"
#include "providers/kubernetes/kubernetes_api.h"
#include "providers/kubernetes/kubernetes_json.h"

#define K8S_RESP_MAX (1024 * 1024)      /* a Pod, a Status */
#define K8S_LIST_MAX (32 * 1024 * 1024) /* one page of a PodList */
#define K8S_LIST_PAGE "500"
#define K8S_LIST_PAGES 200 /* 100000 pods */
#define K8S_CONTINUE_MAX 4096

struct k8s {
        struct k8s_api *api;
        char ns[64];
        char pull_policy[16];
        char agent_image[256];
        bool agent;
        int agent_port;
        char agent_dir[200];
        char prefix[64]; /* the broker's key prefix: the markers written are its pods' only */
        int timeout_ms, pod_wait_ms, grace_s;
};

static inline struct k8s *k8s_impl(struct provider *p)
{
        return p->impl;
}

/* Is ref a pod name of ours (a DNS label: 1..63 of [a-z0-9-])? Every op
 * checks: a ref names a path under AGENT_DIR. */
bool k8s_ref_valid(const char *ref);

/* One API call: the status mapped by k8s_api_status_errno with the API
 * server's message in ret_err. With resp != NULL and on success, *resp owns
 * the body. path NULL (a failed allocation) is -ENOMEM. */
int k8s_call(struct k8s *k, const char *method, const char *path, const char *json, size_t max,
             struct http_buf *resp, const char *what, char *ret_err);

/* GET the pod ref into *pod. */
int k8s_pod_get(struct k8s *k, const char *ref, struct k8s_pod *pod, const char *what, char *ret_err);

/* List our pods (labelSelector sel, escaped), all pages; *ret_rv the list's
 * resourceVersion (may be NULL). */
int k8s_pod_list(struct k8s *k, const char *sel, void (*fn)(void *ud, const struct k8s_pod *pod),
                 void *ud, char ret_rv[K8S_RV_MAX], const char *what, char *ret_err);

/* ---- kubernetes_agent.c ---- */

/* A fresh key: K8S_AGENT_KEY_HEX lowercase hex digits of getrandom() (buf
 * > K8S_AGENT_KEY_HEX). */
int k8s_agent_key(char *buf, size_t size);

/* AGENT_DIR/<ref>/ (0700) and AGENT_DIR/<ref>.tcp ("IP PORT KEY\n", 0600,
 * written to a temp file and renamed) of a Running pod with its IP and
 * key; with only_missing, nothing is rewritten when the marker exists. */
int k8s_agent_marker_write(struct k8s *k, const struct k8s_pod *pod, bool only_missing,
                           char *ret_err);

/* Remove both (absent is fine). */
void k8s_agent_marker_remove(struct k8s *k, const char *ref);

int k8s_exec(struct provider *p, const char *ref, const struct exec_spec *spec,
             struct exec_result *ret, char *ret_err);
int k8s_exec_stream(struct provider *p, const char *ref, const struct exec_spec *spec,
                    const struct exec_stream_cb *cb, struct exec_result *ret, char *ret_err);
int k8s_read_file(struct provider *p, const char *ref, const char *path, int64_t offset,
                  int64_t len, const struct file_read_cb *cb, int timeout_ms, char *ret_err);
int k8s_write_file(struct provider *p, const char *ref, const char *path, const void *data,
                   size_t len, int mode, int64_t uid, int64_t gid, bool append, int timeout_ms,
                   char *ret_err);
int k8s_agent_dir_name(struct provider *p, const char *ref, char *buf, size_t size, char *ret_err);

/* ---- kubernetes_events.c ---- */

int k8s_watch_events(struct provider *p, const char *prefix,
                     void (*on_event)(void *ud, const struct sandbox_event *ev),
                     bool (*stop)(void *ud), void *ud, char *ret_err);
