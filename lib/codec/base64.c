/* base64: see base64.h. */
#include "codec/base64.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int base64_encode(const void *data, size_t len, char **ret)
{
        const unsigned char *in = data;
        size_t out_len = 4 * ((len + 2) / 3), o = 0;
        char *out = malloc(out_len + 1);

        *ret = NULL;
        if (!out)
                return -ENOMEM;
        for (size_t i = 0; i < len; i += 3) {
                uint32_t v = (uint32_t)in[i] << 16;
                if (i + 1 < len)
                        v |= (uint32_t)in[i + 1] << 8;
                if (i + 2 < len)
                        v |= in[i + 2];
                out[o++] = alphabet[(v >> 18) & 63];
                out[o++] = alphabet[(v >> 12) & 63];
                out[o++] = i + 1 < len ? alphabet[(v >> 6) & 63] : '=';
                out[o++] = i + 2 < len ? alphabet[v & 63] : '=';
        }
        out[o] = '\0';
        *ret = out;
        return 0;
}

static int sextet(char c)
{
        if (c >= 'A' && c <= 'Z')
                return c - 'A';
        if (c >= 'a' && c <= 'z')
                return c - 'a' + 26;
        if (c >= '0' && c <= '9')
                return c - '0' + 52;
        if (c == '+')
                return 62;
        if (c == '/')
                return 63;
        return -1;
}

int base64_decode(const char *text, size_t text_len, size_t max_len, void **ret, size_t *ret_len)
{
        unsigned char *out;
        size_t pad = 0, n, o = 0;

        *ret = NULL;
        *ret_len = 0;
        if (text_len % 4)
                return -EINVAL;
        if (text_len >= 1 && text[text_len - 1] == '=')
                pad++;
        if (text_len >= 2 && text[text_len - 2] == '=')
                pad++;
        n = text_len / 4 * 3 - pad;
        if (n > max_len)
                return -EFBIG;
        out = malloc(n ? n : 1);
        if (!out)
                return -ENOMEM;
        for (size_t i = 0; i < text_len; i += 4) {
                int s[4];
                int last = i + 4 == text_len;
                for (int k = 0; k < 4; k++) {
                        s[k] = sextet(text[i + k]);
                        /* '=' only as the final one or two characters */
                        if (s[k] < 0 && !(last && text[i + k] == '=' && k >= 4 - (int)pad)) {
                                free(out);
                                return -EINVAL;
                        }
                }
                uint32_t v = ((uint32_t)(s[0] & 63) << 18) | ((uint32_t)(s[1] & 63) << 12) |
                             ((uint32_t)(s[2] < 0 ? 0 : s[2]) << 6) | (uint32_t)(s[3] < 0 ? 0 : s[3]);
                out[o++] = (unsigned char)(v >> 16);
                if (s[2] >= 0)
                        out[o++] = (unsigned char)(v >> 8);
                if (s[3] >= 0)
                        out[o++] = (unsigned char)v;
        }
        *ret = out;
        *ret_len = o;
        return 0;
}
