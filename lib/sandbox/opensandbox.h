/* opensandbox: the OpenSandbox lifecycle contract
 * (sandbox-lifecycle.yml of the OpenSandbox project) as data: validation of create requests and metadata, and rendering of
 * sandbox records as the spec's Sandbox object. No I/O. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>

#include "core/config.h"

#define OSB_EXECD_PORT 44772
#define OSB_EGRESS_PORT 18080
#define OSB_ENTRYPOINT_MAX 4096 /* bytes of the entrypoint as JSON */
#define OSB_ENV_MAX 16384       /* bytes of env as JSON */
#define OSB_METADATA_MAX 8192   /* bytes of metadata as JSON */
#define OSB_ERR_MAX 256
#define OSB_AUTH_USER_MAX 256   /* image.auth.username, NUL included */
#define OSB_AUTH_PASS_MAX 4096  /* image.auth.password (tokens can be long) */
/* The create's `extensions` key choosing the sandbox's container runtime
 * (docs/OPENSANDBOX.md, "Runtimes"): a value of SANDBOX_RUNTIME or
 * SANDBOX_RUNTIMES. OpenSandbox's own server picks its secure runtime
 * server-wide and names no key for it. */
#define OSB_EXT_RUNTIME "runtime"
/* extensions (a JSON object of strings, kept on the record and answered
 * back as the reference server does): at most OSB_EXT_KEYS_MAX keys of
 * 1..OSB_EXT_KEY_MAX bytes, OSB_EXTENSIONS_MAX bytes as JSON. */
#define OSB_EXTENSIONS_MAX 4096
#define OSB_EXT_KEYS_MAX 32
#define OSB_EXT_KEY_MAX 128
/* renew-on-access (OSEP-0009): a decimal string of seconds, 300..86400; an
 * access through the data plane of a Running sandbox moves its expiry to
 * now + that, at most once a minute (token_check.lua) */
#define OSB_EXT_RENEW "access.renew.extend.seconds"
#define OSB_RENEW_EXTEND_MIN_S 300
#define OSB_RENEW_EXTEND_MAX_S 86400
/* The resourceLimits key of a sandbox's disk (its root filesystem's bound;
 * docs/OPENSANDBOX.md, "Disks"): Kubernetes' name for a container's local
 * writable storage; the spec's resourceLimits is an open map of strings. */
#define OSB_LIMIT_DISK "ephemeral-storage"

/* "500m", "1", "0.25" -> nano-CPUs. Returns 0 or -EINVAL. */
int osb_parse_cpu(const char *s, int64_t *ret_nano);

/* "512Mi", "2Gi", "1G", "1048576" -> bytes. Returns 0 or -EINVAL. */
int osb_parse_memory(const char *s, int64_t *ret_bytes);

/* Metadata rules of the spec (Kubernetes labels): a DNS label or
 * prefix/name key, not under opensandbox.io/; a value of at most 63
 * characters matching [A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?. */
bool osb_metadata_key_valid(const char *key);
bool osb_metadata_value_valid(const char *value);

/* Check a metadata object (strings only); err explains the first problem. */
int osb_metadata_check(struct json_object *md, char *err);

/* The spec's spelling of a sandbox state named in any letter case
 * ("RUNNING", "running" -> "Running"), or NULL for no such state. */
const char *osb_state_canonical(const char *s);

/* Check a JSON Merge Patch of metadata: an object whose keys are valid
 * metadata keys and whose values are valid values or null (delete).
 * Returns 0 or -EINVAL with err explaining the first problem. */
int osb_metadata_patch_check(struct json_object *patch, char *err);

/* A validated create request. Strings are JSON texts ready to store. */
struct osb_create {
        char image[256];                     /* "" with snapshot_id: the handler resolves it */
        char snapshot_id[33];                /* "" unless restored from a snapshot */
        char entrypoint[OSB_ENTRYPOINT_MAX]; /* JSON array */
        char env[OSB_ENV_MAX];               /* JSON object */
        char metadata[OSB_METADATA_MAX];     /* JSON object */
        int64_t nano_cpus, memory_bytes;
        int64_t disk_mb;                     /* resourceLimits OSB_LIMIT_DISK in MiB
                                              * (rounded up); -1: not asked */
        int64_t timeout_s;                   /* -1: manual cleanup */
        /* extensions.runtime (OSB_EXT_RUNTIME), else SANDBOX_RUNTIME_EXCLUSIVE,
         * else SANDBOX_RUNTIME; "" = dockerd's default */
        char runtime[CONFIG_RUNTIME_MAX];
        char extensions[OSB_EXTENSIONS_MAX]; /* JSON object; "" = none given */
        char renew_extend_ms[24];            /* OSB_EXT_RENEW in ms; "" = off */
        char *lifecycle;                     /* lifecycle.h's normalized JSON, malloc'd
                                              * (osb_create_wipe frees it); NULL = none */
        /* image.auth: for the pull only, never stored or logged; wipe
         * with osb_create_wipe when done */
        bool has_auth;
        char auth_user[OSB_AUTH_USER_MAX];
        char auth_pass[OSB_AUTH_PASS_MAX];
};

/* Idempotency-Key of a create (docs/API.md, "Idempotent creates"): 1 to
 * OSB_IDEMPOTENCY_KEY_MAX characters of A-Z a-z 0-9 - _ . : + / = (UUIDs,
 * ULIDs, base64 and base64url fit), optionally as the quoted string of the
 * IETF draft's structured field ("..."). */
#define OSB_IDEMPOTENCY_KEY_MAX 128
#define OSB_FINGERPRINT_MAX 65 /* SHA-256 hex and the NUL */

/* The key of header value hdr (NULL: no header) into ret
 * (OSB_IDEMPOTENCY_KEY_MAX + 1 bytes; "" without a header). Returns 0, or
 * -EINVAL with err (OSB_ERR_MAX) for an empty, oversize or badly spelled
 * value (duplicate headers, which nginx joins with ", ", included). */
int osb_idempotency_key_parse(const char *hdr, char *ret, char *err);

/* The fingerprint of a create body (what "the same create" means to an
 * Idempotency-Key): SHA-256 of the body as JSON, whitespace aside and
 * image.auth left out (credentials are never kept, not even hashed; a
 * retry with a refreshed token is the same create): the same keys in the
 * same order are the same body. body keeps its content (image.auth moves
 * to the end of image's keys). Returns 0, or -ENOMEM. */
int osb_create_fingerprint(struct json_object *body, char ret[OSB_FINGERPRINT_MAX]);

/* Which warm pool can serve c (lib/sandbox/pool.h)? Yes when
 * its image has a pool (POOL) and it asks nothing a running container
 * cannot take afterwards: limits go through a container update, env
 * through every command, the entrypoint through the agent (docs/AGENT.md,
 * POST /entrypoint). A request that must shape the container itself
 * (has_volumes: the body has volumes; a snapshotId; another runtime than
 * the members' SANDBOX_RUNTIME, or one without the agent) is a cold
 * create; such fields add their test here. Returns the pool's image as
 * POOL spells it (its Redis keys' name: "img" serves a create of
 * "img:latest"; cfg's storage), or NULL when c is a cold create. */
const char *osb_create_pool(const struct broker_config *cfg, const struct osb_create *c, bool has_volumes);

/* Wipe the credentials of c (explicit_bzero). */
void osb_create_wipe(struct osb_create *c);

/* Validate a CreateSandboxRequest body. Returns 0, or -EINVAL with err.
 * extensions: an object of strings (bounds above), kept as given;
 * OSB_EXT_RUNTIME is an allowed runtime (Docker provider only), OSB_EXT_RENEW
 * a number of seconds in its range and at most OPENSANDBOX_MAX_TIMEOUT_S;
 * the other keys stay opaque. resourceLimits
 * OSB_LIMIT_DISK: a quantity of CONFIG_DISK_MIN_MB MiB to
 * SANDBOX_DISK_MAX_MB, only with the Docker provider and disks on
 * (SANDBOX_DISK_MB > 0); the tenant's own cap is the store's to check
 * (osb_store_create). */
int osb_create_parse(const struct broker_config *cfg, struct json_object *body,
                     struct osb_create *ret, char *err);

/* Parse an RFC 3339 UTC timestamp ("2025-11-16T14:30:45Z", fractional
 * seconds and +00:00 accepted) to ms. Returns 0 or -EINVAL. */
int osb_parse_time(const char *s, int64_t *ret_ms);

/* The SDKs' create telemetry, POST /v1/metrics/events (in no spec; the
 * MetricsEvent model of opensandbox-server 1.1.1): {eventType:
 * "sandbox.create", createDurationMs, success, sandboxId?, image?}. */
#define OSB_EVENT_DURATION_MAX_MS (24LL * 3600 * 1000) /* createDurationMs at most */
#define OSB_EVENT_IMAGE_MAX 255                        /* bytes of image */
struct osb_metrics_event {
        int64_t duration_ms;    /* createDurationMs, 0..OSB_EVENT_DURATION_MAX_MS */
        bool success;
        const char *sandbox_id; /* NULL when absent; borrows from the body */
        const char *image;      /* NULL when absent; borrows from the body */
};

/* Validate a MetricsEvent body. eventType must be "sandbox.create" (the
 * only one the model knows); createDurationMs an integer in range; success
 * a boolean; sandboxId (json_input_id_valid) and image (1 to
 * OSB_EVENT_IMAGE_MAX bytes, no NUL) optional, null meaning absent; other
 * keys are ignored, as the reference server's model does. Returns 0, or
 * -EINVAL with err (OSB_ERR_MAX bytes). ret borrows from body. */
int osb_metrics_event_parse(struct json_object *body, struct osb_metrics_event *ret, char *err);

/* The spec's paged list answer: {"items": items (taken over), "pagination":
 * {page, pageSize, totalItems, totalPages, hasNextPage}}. */
struct json_object *osb_page_json(struct json_object *items, long page, long size, long long total);
