/* sandbox_path: see sandbox_path.h. */
#include "sandbox/sandbox_path.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int sandbox_path_check_lengths(const char *path, char *why)
{
        size_t len = strlen(path);

        if (len >= SANDBOX_PATH_MAX) {
                if (why)
                        snprintf(why, 128, "path is %zu bytes, longer than %d (PATH_MAX)", len,
                                 SANDBOX_PATH_MAX - 1);
                return -ENAMETOOLONG;
        }
        for (const char *p = path; *p;) {
                size_t n = strcspn(p, "/");

                if (n > SANDBOX_NAME_MAX) {
                        if (why)
                                snprintf(why, 128, "a file name in the path is %zu bytes, longer than %d "
                                         "(NAME_MAX)", n, SANDBOX_NAME_MAX);
                        return -ENAMETOOLONG;
                }
                p += n;
                p += strspn(p, "/");
        }
        return 0;
}

int sandbox_path_resolve(const char *workdir, const char *path, bool confine, char *out,
                         size_t size, char *why)
{
        char joined[2 * SANDBOX_PATH_MAX + 2];
        size_t plen = strlen(path), o = 0, wlen;
        const char *p;

        if (plen == 0 || plen >= SANDBOX_PATH_MAX) {
                snprintf(why, 128, "path must be 1 to %d bytes", SANDBOX_PATH_MAX - 1);
                return -EINVAL;
        }
        if (sandbox_path_check_lengths(path, why) < 0)
                return -EINVAL;
        if (path[0] == '/')
                snprintf(joined, sizeof(joined), "%s", path);
        else
                snprintf(joined, sizeof(joined), "%s/%s", workdir, path);
        /* Walk the components: drop empty and ".", refuse "..". */
        for (p = joined; *p;) {
                size_t n;
                while (*p == '/')
                        p++;
                n = strcspn(p, "/");
                if (n == 0)
                        break;
                if (n == 2 && p[0] == '.' && p[1] == '.') {
                        snprintf(why, 128, "path must not contain '..'");
                        return -EINVAL;
                }
                if (!(n == 1 && p[0] == '.')) {
                        if (o + 1 + n + 1 > size) {
                                snprintf(why, 128, "path is too long");
                                return -EINVAL;
                        }
                        out[o++] = '/';
                        memcpy(out + o, p, n);
                        o += n;
                }
                p += n;
        }
        if (o == 0) {
                if (size < 2)
                        return -EINVAL;
                out[o++] = '/';
        }
        out[o] = '\0';
        /* the workdir without trailing '/': "/" confines to everything, and
         * "/workspace/" is "/workspace" */
        wlen = strlen(workdir);
        while (wlen > 0 && workdir[wlen - 1] == '/')
                wlen--;
        if (confine && !(strncmp(out, workdir, wlen) == 0 && (out[wlen] == '\0' || out[wlen] == '/'))) {
                snprintf(why, 128, "path must stay inside %s", workdir);
                return -EINVAL;
        }
        return 0;
}
