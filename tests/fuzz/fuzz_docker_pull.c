/* fuzz_docker_pull: the answer of POST /images/create is a stream of JSON
 * lines written by dockerd from what a registry sent (layer ids, error
 * messages): untrusted. Each input line goes to docker_pull_line; the rest
 * of the input also goes through docker_image_split and image_policy_allows
 * (the image reference comes from a client). Contracts: the layer counts
 * stay within bounds and done <= seen, an error sets a terminated message,
 * the split's parts fit and rebuild the reference. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "providers/docker/docker_image.h"
#include "fuzz.h"
#include "core/image_policy.h"

static struct docker_pull_state st;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        const char *p = (const char *)data, *end = p + size;
        char ref[DOCKER_IMAGE_MAX + 1], name[DOCKER_IMAGE_MAX], tag[DOCKER_IMAGE_MAX];
        size_t n;

        memset(&st, 0, sizeof(st));
        while (p < end) {
                const char *nl = memchr(p, '\n', (size_t)(end - p));
                size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
                int r = docker_pull_line(&st, p, len);

                CHECK(r == 0 || r == 1 || r == -EACCES || r == -ENOENT || r == -EIO);
                CHECK(st.n >= 0 && st.n <= DOCKER_PULL_LAYERS);
                CHECK(st.n_done >= 0 && st.n_done <= st.n);
                CHECK(memchr(st.error, '\0', sizeof(st.error)) != NULL);
                p += len + (nl ? 1 : 0);
        }
        n = size < DOCKER_IMAGE_MAX ? size : DOCKER_IMAGE_MAX;
        memcpy(ref, data, n);
        ref[n] = '\0';
        if (docker_image_split(ref, name, sizeof(name), tag, sizeof(tag)) == 0) {
                char back[2 * DOCKER_IMAGE_MAX + 2];

                CHECK(name[0] != '\0');
                snprintf(back, sizeof(back), "%s%s%s", name, tag[0] && !strchr(ref, '@') ? ":" : "",
                         strchr(ref, '@') ? "" : tag);
                /* "repo" gets the tag latest that it did not write */
                CHECK(strcmp(back, ref) == 0 ||
                      (strcmp(tag, "latest") == 0 && strcmp(name, ref) == 0));
        }
        (void)image_policy_allows("127.0.0.1:5000/*,a/*", ref);
        (void)image_policy_allows(ref, "127.0.0.1:5000/x:1");
        return 0;
}
