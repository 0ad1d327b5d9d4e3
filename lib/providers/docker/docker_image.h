/* docker_image: images through the Engine API: is one present
 * (GET /images/{name}/json), and pull one (POST /images/create, Docker API
 * "Create an image"), with registry credentials in X-Registry-Auth and the
 * answer's JSON progress lines counted into "pulling image: k/n layers".
 *
 * Credentials live only in the caller's memory and the one request's
 * header: they are never put in an error message (a registry message that
 * quotes the password has it masked). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "providers/docker/docker_api.h"
#include "providers/provider.h"

#define DOCKER_IMAGE_MAX 256   /* longest image reference accepted */
#define DOCKER_PULL_LAYERS 128 /* layers tracked for the progress count */

/* ---- pure parts (fuzzable) ---- */

/* Split image into the repository and the tag for fromImage/tag: "a/b:1"
 * -> "a/b", "1"; "host:5000/a" -> "host:5000/a", "latest"; a digest
 * ("a@sha256:...") stays whole in name with tag "". -EINVAL when empty,
 * too long for the buffers, or holding spaces or control characters. */
int docker_image_split(const char *image, char *name, size_t name_size, char *tag,
                       size_t tag_size);

/* The X-Registry-Auth value for auth: base64url of
 * {"username","password","serveraddress"} (the registry host of image).
 * *ret is owned by the caller and should be wiped (it holds the password).
 * -ENOMEM. */
int docker_registry_auth(const struct image_auth *auth, const char *image, char **ret);

/* The progress of one pull, fed line by line with the answer's JSON. */
struct docker_pull_state {
        char ids[DOCKER_PULL_LAYERS][16];
        bool done[DOCKER_PULL_LAYERS];
        int n, n_done;
        char error[PROVIDER_ERR_MAX]; /* the first error line's message */
};

/* Feed one line. Returns 1 when the layer count changed, 0 when not, or,
 * on an error line ({"error": ...}), -EACCES (credentials refused),
 * -ENOENT (no such image) or -EIO, with the message in s->error. Lines
 * that are not JSON objects are ignored. */
int docker_pull_line(struct docker_pull_state *s, const char *line, size_t len);

/* A pull's failure from Docker's message: -EACCES, -ENOENT or -EIO. */
int docker_pull_errno(long status, const char *message);

/* The body of POST /commit for spec: {"Entrypoint": [], "Labels": {...}}.
 * The empty Entrypoint replaces the container's (the agent's, whose
 * binary is a mount and not in the image); the snapshot's labels are
 * added, and the container's managed, sandbox-id and agent labels (which
 * Docker would carry over) are set to "". *ret is owned by the caller
 * (free). -EINVAL (a field missing), -ENOMEM. */
int docker_commit_body(const struct snapshot_spec *spec, char **ret);

/* The integer member `field` of a JSON object (an image inspect's "Size",
 * a container inspect's "SizeRootFs" with ?size=1) into *ret_size.
 * -EPROTO when the body is not an object with that member an integer >= 0. */
int docker_size_parse(const char *body, const char *field, int64_t *ret_size);

/* ---- Engine API calls ---- */

/* 1 if image is on the host, 0 if not, or a transport errno (ret_err). */
/* The id ("sha256:...") image names now, into ret_id (size bytes).
 * -ENOENT not on the host, -EIO, or a transport error. */
int docker_image_id(struct docker_api *api, const char *image, int timeout_ms, char *ret_id,
                    size_t size, char *ret_err);

int docker_image_present(struct docker_api *api, const char *image, int timeout_ms,
                         char *ret_err);

/* Pull image (auth may be NULL; cb may be NULL) within timeout_ms.
 * Returns 0, -EACCES, -ENOENT, -ETIMEDOUT, -EIO, -EINVAL (a bad reference),
 * with a one-line reason in ret_err that never holds the password. */
int docker_image_pull(struct docker_api *api, const char *image, const struct image_auth *auth,
                      int timeout_ms, const struct image_pull_cb *cb, char *ret_err);

/* Commit container ref to spec->image (POST /commit, paused meanwhile:
 * Docker's default), then read its size (GET /images/{name}/json) into
 * *ret_size. With spec->max_bytes, the container's size is read first
 * (GET /containers/{ref}/json?size=1, SizeRootFs): over it, nothing is
 * committed and -EFBIG is returned with that size in *ret_size. -ENOENT no
 * such container, -EBUSY, -ETIMEDOUT, -EIO, -EINVAL (a bad image name); a
 * reason in ret_err. */
int docker_image_commit(struct docker_api *api, const char *ref, const struct snapshot_spec *spec,
                        int64_t *ret_size, char *ret_err);

/* Remove image by name (DELETE /images/{name}?force=1: an image a
 * container still uses loses its name and stays until that container is
 * removed). -ENOENT when there is no such image, -EIO. */
int docker_image_remove(struct docker_api *api, const char *image, int timeout_ms, char *ret_err);

/* Call fn for every image labelled PROVIDER_LABEL_SNAPSHOT whose
 * PROVIDER_LABEL_PREFIX is prefix (GET /images/json, filtered by the
 * label; untagged images included). -EIO, a transport error. */
int docker_image_list_snapshots(struct docker_api *api, const char *prefix, int timeout_ms,
                                void (*fn)(void *ud, const struct snapshot_image *im), void *ud,
                                char *ret_err);

/* Remove image id (DELETE /images/{id}, not forced: one a container or a
 * child image uses stays, -EBUSY). -ENOENT when it is gone, -EIO. */
int docker_image_prune(struct docker_api *api, const char *id, int timeout_ms, char *ret_err);
