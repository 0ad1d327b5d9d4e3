/* kubernetes: the Kubernetes provider (struct provider_ops over the API
 * server's core/v1 Pods; docs/KUBERNETES.md, docs/PROVIDERS.md). One
 * sandbox is one Pod named k8s_pod_name(sandbox id) ("sb-<id>") in
 * KUBERNETES_NAMESPACE, carrying our labels and annotations
 * (kubernetes_json.h); its ref is the pod's name.
 *
 * create POSTs the Pod and waits, at most KUBERNETES_POD_WAIT_MS, for it to
 * be Running with an IP (a pod that fails, or waits for an image or a
 * config it cannot have, ends the wait at once with the kubelet's reason;
 * the pod is then deleted). With the agent (KUBERNETES_AGENT=1) the pod's
 * command is the sandbox-agent, listening on TCP with a per-sandbox key, and
 * once the pod has an IP the provider writes AGENT_DIR/<ref>/ and the marker
 * AGENT_DIR/<ref>.tcp ("ADDR PORT KEYHEX\n"): commands and files go through
 * it (kubernetes_agent.c). A pod cannot be frozen, stopped and kept, or
 * committed to an image: pause, resume, stop, snapshots and volumes are
 * refused (-EOPNOTSUPP, a 501 with the reason); limits are not changed in
 * place. remove deletes the pod (grace KUBERNETES_GRACE_S). The supervisor
 * follows the pods with a watch (kubernetes_events.c).
 *
 * Errors (see provider.h), mapped from the API server's answers: 401/403
 * -EACCES, 404 -ENOENT, 409 -EBUSY, a pod that cannot run -EREMOTEIO, a
 * malformed answer -EPROTO, no answer in time -ETIMEDOUT, unreachable
 * -ECONNREFUSED.
 *
 * NOT thread-safe (one libcurl handle); each thread owns its provider. */
#pragma once
#include <stdbool.h>

#include "core/config.h"
#include "providers/provider.h"

struct k8s_settings {
        const char *api_url;                                     /* https://... */
        const char *ca_file, *cert_file, *key_file, *token_file; /* kubernetes_api.h */
        const char *ns;                                          /* the namespace of our pods */
        const char *pull_policy;                                 /* Always | IfNotPresent | Never */
        bool agent;              /* the sandbox-agent in every pod */
        const char *agent_image; /* the image its init container copies it from */
        int agent_port;
        const char *agent_dir;  /* AGENT_DIR: run directories and .tcp markers */
        const char *key_prefix; /* REDIS_KEY_PREFIX: markers only for pods of this one */
        int timeout_ms;         /* one API call */
        int pod_wait_ms;        /* create's wait for Running */
        int grace_s;            /* terminationGracePeriodSeconds */
};

/* Make a Kubernetes provider; settings are copied, the token file read.
 * No request is made (ops->ping checks). Errors: -EINVAL (a reason in
 * ret_err), a file's errno, -ENOMEM. */
int k8s_provider_new(const struct k8s_settings *s, struct provider **ret, char *ret_err);

/* The same from the broker's config (SANDBOX_PROVIDER=kubernetes). */
int k8s_provider_from_config(const struct broker_config *cfg, struct provider **ret);

/* The factory's entry: deadline KUBERNETES_TIMEOUT_MS + KUBERNETES_POD_WAIT_MS. */
extern const struct provider_backend kubernetes_backend;
