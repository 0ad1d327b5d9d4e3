/* volume_spec: the `volumes` of an OpenSandbox create request (the Volume,
 * Host, PVC and OSSFS schemas of sandbox-lifecycle.yml) as data, and the
 * operator's host path allowlist (VOLUME_HOST_ALLOW). Pure: no I/O, so
 * unit tests and the fuzzer drive it. Resolving paths on the host and
 * making volumes is volume.h's. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

struct json_object;

#define VOLUME_MAX 8         /* volumes per sandbox */
#define VOLUME_NAME_MAX 63   /* Volume.name and PVC.claimName: a DNS label */
#define VOLUME_PATH_MAX 1024 /* bytes of a host path, a mountPath or a subPath */
#define VOLUME_ALLOW_MAX 16  /* entries of VOLUME_HOST_ALLOW */
#define VOLUME_ERR_MAX 512

enum volume_kind { VOLUME_HOST, VOLUME_NAMED };

/* One validated Volume. */
struct volume_entry {
        char name[VOLUME_NAME_MAX + 1];
        enum volume_kind kind;
        char host_path[VOLUME_PATH_MAX + 1];  /* VOLUME_HOST: as the client wrote it */
        char claim[VOLUME_NAME_MAX + 1];      /* VOLUME_NAMED: pvc.claimName */
        bool create_if_missing;               /* pvc.createIfNotExists (default true) */
        bool delete_on_termination;           /* pvc.deleteOnSandboxTermination */
        char mount_path[VOLUME_PATH_MAX + 1]; /* absolute, normalised */
        char sub_path[VOLUME_PATH_MAX + 1];   /* relative, normalised; "" = none */
        bool read_only;
};

struct volume_set {
        size_t n;
        struct volume_entry v[VOLUME_MAX];
};

/* Validate a create request's `volumes` (a JSON array; NULL or null = none)
 * into *ret: at most VOLUME_MAX entries of unique names and mount paths;
 * exactly one backend each. `host` and `pvc` (a named volume) are taken;
 * `ossfs` is refused by name. A mountPath must be absolute, normalised (no
 * "//", ".", "..", trailing "/"), not "/", and not at or under a path the
 * broker or the kernel owns (/.sandbox-broker, /proc, /sys, /dev); a
 * subPath relative and normalised. pvc's Kubernetes hints (storageClass,
 * accessModes) are checked for type and ignored; storage for syntax.
 * Returns 0 or -EINVAL with err (VOLUME_ERR_MAX) naming the entry. */
int volume_spec_parse(struct json_object *volumes, struct volume_set *ret, char *err);

/* Is s a Kubernetes quantity of the spec's pattern ^\d+(\.\d+)?(Ki|Mi|Gi|Ti|Pi|Ei)?$ */
bool volume_storage_valid(const char *s);

/* Is path absolute and normalised (see volume_spec_parse), within
 * VOLUME_PATH_MAX and free of control bytes? relative: the same for a
 * relative path (a subPath). */
bool volume_path_normal(const char *path, bool relative);

/* VOLUME_HOST_ALLOW: "dir[:ro|:rw],..." of absolute normalised host
 * directories, read-only unless ":rw". */
struct volume_allow {
        size_t n;
        struct {
                char dir[VOLUME_PATH_MAX + 1];
                bool rw;
        } e[VOLUME_ALLOW_MAX];
};

/* Parse VOLUME_HOST_ALLOW ("" = no entries). Returns 0 or -EINVAL with err. */
int volume_allow_parse(const char *s, struct volume_allow *ret, char *err);

/* Is resolved (a realpath) at or under root (a realpath)? */
bool volume_path_within(const char *resolved, const char *root);
