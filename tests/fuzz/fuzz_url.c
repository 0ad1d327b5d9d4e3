/* fuzz_url: a request URI's query string and path are the client's bytes.
 * Each input is split at its first '\n': before it a query string, after it
 * a path. The query goes through url_query_next (into buffers of several
 * sizes, as the handlers use them) and url_query_param; the path is matched
 * against route patterns with url_path_match. Buffers are malloc'ed at their
 * exact size and pre-filled with garbage, so an over-write is a sanitizer
 * report and a missing NUL a contract failure. Any crash, sanitizer report
 * or abort() is a bug. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "codec/url.h"

static void walk(const char *query, size_t nsz, size_t vsz)
{
        char *name = malloc(nsz ? nsz : 1), *value = malloc(vsz ? vsz : 1);
        const char *cur = query;
        size_t steps = 0;
        int r;

        CHECK(name && value);
        for (;;) {
                const char *before = cur;

                memset(name, 0xA5, nsz ? nsz : 1);
                memset(value, 0xA5, vsz ? vsz : 1);
                r = url_query_next(&cur, name, nsz, value, vsz);
                CHECK(r == 1 || r == 0 || r == -E2BIG || r == -EINVAL);
                CHECK(cur >= before && cur <= query + strlen(query));
                if (r == 0) {
                        CHECK(*cur == '\0');
                        break;
                }
                CHECK(cur > before); /* always progress */
                if (r == 1) {
                        CHECK(strnlen(name, nsz) < nsz && strnlen(value, vsz) < vsz);
                        CHECK(!strchr(name, '&') || strstr(before, "%26"));
                }
                CHECK(++steps <= strlen(query));
        }
        free(name);
        free(value);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        static const size_t sizes[] = { 1, 2, 8, 65, 256 };
        static const char *const patterns[] = { "/v1/status", "/v1/sandboxes/{}",
                                                "/v1/sandboxes/{}/proxy/{}/files/download",
                                                "/{}/{}/{}" };
        char *in = malloc(size + 1), *path, *buf;
        char (*args)[URL_PATH_ARG_MAX];
        int r;

        CHECK(in);
        memcpy(in, data, size);
        in[size] = '\0';
        path = strchr(in, '\n');
        if (path)
                *path++ = '\0';
        else
                path = in + strlen(in);

        for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
                for (size_t j = 0; j < sizeof(sizes) / sizeof(sizes[0]); j++)
                        walk(in, sizes[i], sizes[j]);

        for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
                buf = malloc(sizes[i]);
                CHECK(buf);
                memset(buf, 0xA5, sizes[i]);
                r = url_query_param(in, "id", buf, sizes[i]);
                CHECK(r == 0 || r == -ENOENT || r == -E2BIG);
                if (r == 0)
                        CHECK(strnlen(buf, sizes[i]) < sizes[i] && !strchr(buf, '&'));
                memset(buf, 0xA5, sizes[i]);
                r = url_decode(in, strlen(in), buf, sizes[i]);
                CHECK(r == 0 || r == -E2BIG || r == -EINVAL);
                if (r == 0)
                        CHECK(strnlen(buf, sizes[i]) < sizes[i]);
                free(buf);
        }

        args = malloc(2 * sizeof(*args));
        CHECK(args);
        for (size_t i = 0; i < sizeof(patterns) / sizeof(patterns[0]); i++) {
                memset(args, 0xA5, 2 * sizeof(*args));
                r = url_path_match(patterns[i], path, args, 2);
                CHECK(r == 0 || r == 1);
                if (r == 1 && strstr(patterns[i], "{}")) {
                        CHECK(strnlen(args[0], URL_PATH_ARG_MAX) < URL_PATH_ARG_MAX);
                        CHECK(args[0][0] && !strchr(args[0], '/'));
                }
        }
        free(args);
        free(in);
        return 0;
}
