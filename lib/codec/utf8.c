/* utf8: see utf8.h. */
#include "codec/utf8.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Length of the valid sequence at s (at most n bytes), or 0 if invalid. */
static size_t seq_len(const unsigned char *s, size_t n)
{
        size_t need;
        unsigned cp;

        if (s[0] >= 0x01 && s[0] < 0x80)
                return 1;
        if (s[0] >= 0xc2 && s[0] <= 0xdf)
                need = 2, cp = s[0] & 0x1f;
        else if (s[0] >= 0xe0 && s[0] <= 0xef)
                need = 3, cp = s[0] & 0x0f;
        else if (s[0] >= 0xf0 && s[0] <= 0xf4)
                need = 4, cp = s[0] & 0x07;
        else
                return 0;
        if (n < need)
                return 0;
        for (size_t i = 1; i < need; i++) {
                if ((s[i] & 0xc0) != 0x80)
                        return 0;
                cp = (cp << 6) | (s[i] & 0x3f);
        }
        /* overlong forms, surrogates, beyond U+10FFFF */
        if ((need == 3 && cp < 0x800) || (need == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
            (cp >= 0xd800 && cp <= 0xdfff))
                return 0;
        return need;
}

int utf8_sanitize(const char *s, size_t len, char **ret, size_t *ret_len)
{
        const unsigned char *in = (const unsigned char *)s;
        char *out = malloc(3 * len + 1); /* each bad byte becomes 3 bytes */
        size_t o = 0;

        *ret = NULL;
        if (!out)
                return -ENOMEM;
        for (size_t i = 0; i < len;) {
                size_t n = seq_len(in + i, len - i);
                if (n) {
                        memcpy(out + o, in + i, n);
                        o += n;
                        i += n;
                } else {
                        memcpy(out + o, "\xef\xbf\xbd", 3);
                        o += 3;
                        i++;
                }
        }
        out[o] = '\0';
        *ret = out;
        if (ret_len)
                *ret_len = o;
        return 0;
}
