/* image_ref: see image_ref.h. */
#include "codec/image_ref.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define IMAGE_REF_IN_MAX 255 /* the config's and the records' image fields */

static bool has_upper(const char *s, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (s[i] >= 'A' && s[i] <= 'Z')
                        return true;
        return false;
}

static bool is_hex(const char *s, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
                        return false;
        return true;
}

/* The first path component of name[0..n) is a registry host (Docker's
 * splitDockerDomain): it has a '.' or a ':', is "localhost", or has an
 * uppercase letter (which a repository path may not). */
static bool first_is_host(const char *name, size_t n)
{
        return memchr(name, '.', n) || memchr(name, ':', n) ||
               (n == 9 && !memcmp(name, "localhost", 9)) || has_upper(name, n);
}

/* A repository path: components separated by single slashes, none empty,
 * no uppercase (Docker: "repository name must be lowercase"). */
static bool path_ok(const char *p, size_t n)
{
        if (n == 0 || p[0] == '/' || p[n - 1] == '/' || has_upper(p, n))
                return false;
        for (size_t i = 1; i < n; i++)
                if (p[i] == '/' && p[i - 1] == '/')
                        return false;
        return !memchr(p, ':', n) && !memchr(p, '@', n);
}

int image_ref_normalize(const char *image, char *out, size_t size)
{
        const char *digest, *domain = "docker.io", *rest, *tag = NULL, *slash, *first;
        size_t len, n, dn = 9, rn, pn, tn = 0;
        int w;

        if (!image || !*image || (len = strlen(image)) > IMAGE_REF_IN_MAX)
                return -EINVAL;
        for (size_t i = 0; i < len; i++)
                if ((unsigned char)image[i] <= ' ' || image[i] == 0x7f)
                        return -EINVAL;
        /* an image id names no repository: never a spelling of a name */
        if ((len == 64 && is_hex(image, 64)) ||
            (len == 71 && !strncmp(image, "sha256:", 7) && is_hex(image + 7, 64)))
                return -EINVAL;
        digest = strchr(image, '@');
        if (digest && (!digest[1] || !strchr(digest + 1, ':') || strchr(digest + 1, '@')))
                return -EINVAL;
        n = digest ? (size_t)(digest - image) : len;
        if (n == 0)
                return -EINVAL;
        first = memchr(image, '/', n);
        rest = image;
        rn = n;
        if (first && first_is_host(image, (size_t)(first - image))) {
                domain = image;
                dn = (size_t)(first - image);
                rest = first + 1;
                rn = n - dn - 1;
        }
        if (dn == 0)
                return -EINVAL;
        if (dn == 15 && !strncmp(domain, "index.docker.io", 15)) {
                domain = "docker.io";
                dn = 9;
        }
        /* the tag follows the last ':' after the last '/' */
        slash = NULL;
        for (size_t i = 0; i < rn; i++)
                if (rest[i] == '/')
                        slash = rest + i;
        pn = rn;
        for (const char *p = slash ? slash : rest; p < rest + rn; p++)
                if (*p == ':') {
                        tag = p + 1;
                        pn = (size_t)(p - rest);
                        tn = rn - pn - 1;
                        break;
                }
        if ((tag && (tn == 0 || memchr(tag, ':', tn))) || !path_ok(rest, pn))
                return -EINVAL;
        bool library = dn == 9 && !strncmp(domain, "docker.io", 9) && !memchr(rest, '/', pn);
        w = snprintf(out, size, "%.*s/%s%.*s%s%.*s%s", (int)dn, domain, library ? "library/" : "",
                     (int)pn, rest, tag ? ":" : (digest ? "" : ":latest"), (int)tn, tag ? tag : "",
                     digest ? digest : "");
        if (w < 0 || (size_t)w >= size)
                return -E2BIG;
        return 0;
}

bool image_ref_same(const char *a, const char *b)
{
        char na[IMAGE_REF_MAX], nb[IMAGE_REF_MAX];

        if (!a || !b)
                return false;
        if (image_ref_normalize(a, na, sizeof(na)) < 0 || image_ref_normalize(b, nb, sizeof(nb)) < 0)
                return strcmp(a, b) == 0;
        return strcmp(na, nb) == 0;
}
