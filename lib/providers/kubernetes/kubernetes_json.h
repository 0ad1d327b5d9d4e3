/* kubernetes_json: the Pod manifest the Kubernetes provider sends and the
 * parts of the API server's answers it reads (a Pod, a PodList, a watch
 * event, a Status). Pure (no I/O), so unit tests and fuzzers drive it.
 * Contract: the core/v1 API of Kubernetes v1.37 (Pod, PodList, WatchEvent,
 * meta/v1 Status).
 *
 * Labels. PROVIDER_LABEL_* keys ("io.sandbox-broker.NAME") are not the
 * form Kubernetes gives a tool's labels; they map to "sandbox-broker.io/NAME"
 * (k8s_label_key). Values must be valid label values (63 characters of
 * [A-Za-z0-9._-], alphanumeric at both ends): the managed flag ("1") and
 * the agent flag are; the sandbox id is put as a label only when it is one;
 * the key prefix ("sb:") is not, so its label is "p" + the first 32 hex
 * digits of its SHA-256 (what a labelSelector filters on) and the prefix
 * itself, with the sandbox id, is an annotation (what the parser reads
 * back). */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include "providers/provider.h"

#define K8S_LABEL_DOMAIN "sandbox-broker.io/"
#define K8S_LABEL_PREFIX_HASH K8S_LABEL_DOMAIN "prefix-hash"
#define K8S_AGENT_ENV "SANDBOX_AGENT_KEY"
#define K8S_AGENT_KEY_HEX 64                     /* 32 random bytes */
#define K8S_AGENT_BIN_DIR "/.sandbox-broker/bin" /* the emptyDir, read-only in the sandbox */
#define K8S_AGENT_BIN K8S_AGENT_BIN_DIR "/sandbox-agent"
#define K8S_AGENT_INSTALL "/agent-install" /* the agent image's copier */
#define K8S_CONTAINER "sandbox"            /* the main container's name */
#define K8S_NAME_MAX 64                    /* a DNS label and its NUL */
#define K8S_PHASE_MAX 16
#define K8S_REASON_MAX 64
#define K8S_RV_MAX 64
#define K8S_IP_MAX 46

/* What a Pod manifest needs beyond the sandbox_spec. */
struct k8s_pod_opts {
        const char *pull_policy; /* Always | IfNotPresent | Never */
        bool agent;              /* the agent as the main container's command */
        const char *agent_image; /* its init container's image (agent only) */
        int agent_port;          /* --listen-tcp 0.0.0.0:PORT */
        const char *agent_key;   /* K8S_AGENT_KEY_HEX lowercase hex (agent only) */
        int grace_s;             /* terminationGracePeriodSeconds */
};

/* The fields of a Pod the provider uses. */
struct k8s_pod {
        char name[K8S_NAME_MAX];
        char phase[K8S_PHASE_MAX]; /* Pending | Running | Succeeded | Failed | Unknown | "" */
        char ip[K8S_IP_MAX];       /* status.podIP; "" none yet */
        char rv[K8S_RV_MAX];       /* metadata.resourceVersion */
        bool deleting;             /* metadata.deletionTimestamp is set */
        bool managed;              /* our managed label "1" */
        bool agent;                /* our agent label "1" */
        char sandbox_id[64];       /* our annotations; "" absent */
        char prefix[64];
        char agent_key[K8S_AGENT_KEY_HEX + 1]; /* the main container's SANDBOX_AGENT_KEY; "" none */
        /* the main container: terminated (its exit code and reason) or
         * waiting (its reason and message) */
        bool terminated;
        int exit_code;               /* -1 unknown */
        char reason[K8S_REASON_MAX]; /* OOMKilled, Error, Evicted (the pod's), ErrImagePull, ... */
        char message[160];
};

/* The Kubernetes form of PROVIDER_LABEL_* key (see above) into buf.
 * -EINVAL for a key not of ours, -ENAMETOOLONG. */
int k8s_label_key(const char *provider_label, char *buf, size_t size);

/* Is s a valid label value (empty included)? */
bool k8s_label_value_valid(const char *s);

/* The prefix-hash label's value of key prefix: "p" + 32 hex digits (buf >= 34). */
int k8s_prefix_hash(const char *prefix, char *buf, size_t size);

/* The Pod name of sandbox_id: "sb-" + the id lowercased, each character
 * outside [a-z0-9-] a '-', a DNS label (63 characters, alphanumeric at
 * the end). -EINVAL for an empty id, -ENAMETOOLONG over 60 characters. */
int k8s_pod_name(const char *sandbox_id, char *buf, size_t size);

/* The Pod manifest of spec (see docs/KUBERNETES.md, "The Pod"). *ret is
 * malloc'ed (free()). Errors: -EINVAL (no id or image, an env entry
 * without '=' or with an empty name, agent without image or a key of
 * K8S_AGENT_KEY_HEX hex digits, a pull policy not of the three), -ENOMEM. */
int k8s_json_pod_manifest(const struct sandbox_spec *spec, const struct k8s_pod_opts *o, char **ret);

/* Parse a Pod. Errors: -EPROTO (not JSON, not a Pod, no name). */
int k8s_json_parse_pod(const char *body, size_t len, struct k8s_pod *ret);

/* Where the pod stands: Pending CREATED; Running RUNNING, unless its main
 * container has terminated or it is being deleted (EXITED); Succeeded and
 * Failed EXITED; anything else CREATED. */
enum sandbox_run_state k8s_pod_state(const struct k8s_pod *pod);

/* A Pending pod that will never run: its main or init container waits for
 * an image it cannot have (ErrImageNeverPull, ErrImagePull,
 * ImagePullBackOff, InvalidImageName) or a config it cannot
 * (CreateContainerConfigError, CreateContainerError, RunContainerError). */
bool k8s_pod_stuck(const struct k8s_pod *pod);

/* The sandbox_info of a pod (state, ids from the annotations, ref = name,
 * agent, exit code, OOMKilled). */
void k8s_pod_info(const struct k8s_pod *pod, struct sandbox_info *ret);

/* Parse a PodList: fn for every item that parses (others are skipped),
 * metadata.continue into cont ("" none) and metadata.resourceVersion into
 * rv. Errors: -EPROTO (not a list), -ENAMETOOLONG (a continue token over
 * cont_size). */
int k8s_json_parse_list(const char *body, size_t len, void (*fn)(void *ud, const struct k8s_pod *pod),
                        void *ud, char *cont, size_t cont_size, char rv[K8S_RV_MAX]);

/* One watch event (a line of a ?watch=1 stream).
 *   ADDED, MODIFIED, DELETED   *pod filled
 *   BOOKMARK                   pod->rv only
 *   ERROR                      *code the Status's code (410: resourceVersion too old)
 * Errors: -EPROTO (not an event). */
enum k8s_event_type {
        K8S_EV_ADDED,
        K8S_EV_MODIFIED,
        K8S_EV_DELETED,
        K8S_EV_BOOKMARK,
        K8S_EV_ERROR
};
int k8s_json_parse_event(const char *line, size_t len, enum k8s_event_type *type,
                         struct k8s_pod *pod, int *code);

/* "kubernetes: <what>: HTTP <status>: <Status.message>" into ret_err, with a
 * hint where the status says where to look: a 401, "check the credentials";
 * a 403 of the authorizer (User "..." cannot ...), "... and the RBAC Role";
 * a 403 of admission (an unknown RuntimeClass, a quota): its message only. */
void k8s_json_error_message(const char *what, long status, const char *body, char *ret_err);
