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

#include "docker_api.h"
#include "provider.h"

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
