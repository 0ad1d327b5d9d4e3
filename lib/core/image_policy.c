/* image_policy: see image_policy.h. */
#include "core/image_policy.h"

#include <fnmatch.h>
#include <string.h>

#define IMAGE_PATTERN_MAX 256

bool image_policy_allows(const char *allow, const char *image)
{
        const char *p = allow;

        if (!allow || !image || !*image || strlen(image) >= IMAGE_PATTERN_MAX * 2)
                return false;
        while (*p) {
                char pat[IMAGE_PATTERN_MAX];
                size_t n;

                while (*p == ',' || *p == ' ' || *p == '\t')
                        p++;
                n = strcspn(p, ",");
                while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t'))
                        n--;
                if (n > 0 && n < sizeof(pat)) {
                        memcpy(pat, p, n);
                        pat[n] = '\0';
                        if (fnmatch(pat, image, 0) == 0)
                                return true;
                }
                p += n;
                while (*p && *p != ',')
                        p++;
        }
        return false;
}
