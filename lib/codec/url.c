/* url: see url.h. */
#include "codec/url.h"

#include <errno.h>
#include <string.h>

int url_hex_digit(int c)
{
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

int url_decode(const char *src, size_t len, char *dst, size_t dsz)
{
        size_t o = 0;

        if (dsz == 0)
                return -E2BIG;
        for (size_t i = 0; i < len; i++) {
                char c = src[i];
                if (c == '%') {
                        int hi = i + 1 < len ? url_hex_digit(src[i + 1]) : -1;
                        int lo = i + 2 < len ? url_hex_digit(src[i + 2]) : -1;
                        if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
                                return -EINVAL; /* malformed, or an encoded NUL */
                        c = (char)(hi * 16 + lo);
                        i += 2;
                } else if (c == '+') {
                        c = ' ';
                }
                if (o + 1 >= dsz)
                        return -E2BIG;
                dst[o++] = c;
        }
        dst[o] = '\0';
        return 0;
}

int url_query_next(const char **cursor, char *name, size_t nsz, char *value, size_t vsz)
{
        const char *p = *cursor;
        size_t seg, eq;
        int r;

        while (*p == '&')
                p++;
        if (!*p) {
                *cursor = p;
                return 0;
        }
        seg = strcspn(p, "&");
        eq = strcspn(p, "=");
        if (eq > seg)
                eq = seg;
        *cursor = p + seg;
        r = url_decode(p, eq, name, nsz);
        if (r == 0)
                r = url_decode(p + eq + (eq < seg), seg - eq - (eq < seg), value, vsz);
        return r < 0 ? r : 1;
}

int url_query_param(const char *query, const char *name, char *buf, size_t size)
{
        size_t nlen = strlen(name);
        const char *p = query;

        while (p && *p) {
                size_t seg = strcspn(p, "&");
                if (seg > nlen && strncmp(p, name, nlen) == 0 && p[nlen] == '=') {
                        size_t vlen = seg - nlen - 1;
                        if (vlen >= size)
                                return -E2BIG;
                        memcpy(buf, p + nlen + 1, vlen);
                        buf[vlen] = '\0';
                        return 0;
                }
                p += seg;
                if (*p == '&')
                        p++;
        }
        return -ENOENT;
}

int url_path_match(const char *pattern, const char *path, char args[][URL_PATH_ARG_MAX],
                   int max_args)
{
        int n = 0;

        for (;;) {
                const char *hole = strstr(pattern, "{}");
                size_t pre, seg;

                if (!hole)
                        return strcmp(pattern, path) == 0;
                pre = (size_t)(hole - pattern);
                if (strncmp(pattern, path, pre) != 0)
                        return 0;
                path += pre;
                seg = strcspn(path, "/");
                if (seg == 0 || seg >= URL_PATH_ARG_MAX || n >= max_args)
                        return 0;
                memcpy(args[n], path, seg);
                args[n][seg] = '\0';
                n++;
                path += seg;
                pattern = hole + 2;
        }
}
