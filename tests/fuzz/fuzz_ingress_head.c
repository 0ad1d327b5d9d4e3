/* fuzz_ingress_head: the request head sandbox-ingress reads (from nginx,
 * but built from a client's request line and headers) goes through
 * ingress_head_rewrite. The input is the head (a head is cut at its first
 * blank line, as the daemon does). Contracts: the rewritten head is never
 * longer than the input, starts with the method and a path "/...", ends
 * with the blank line, holds no line of the broker's credentials or of the
 * ingress's own headers; the port is 1..65535, the agent name
 * [A-Za-z0-9_-] and the tenant, when there is one, [A-Za-z0-9._@-]. Any crash, sanitizer report or abort() is a bug. */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fuzz.h"
#include "codec/ingress_head.h"

static char out[INGRESS_HEAD_MAX];

static void check_out(const char *o, size_t n)
{
        static const char *const never[] = { "open-sandbox-api-key:", "x-execd-access-token:",
                                             "opensandbox-egress-auth:", "x-sandbox-ingress-" };
        const char *sp = memchr(o, ' ', n);

        CHECK(n >= 4 && memcmp(o + n - 4, "\r\n\r\n", 4) == 0);
        CHECK(sp && sp + 1 < o + n && sp[1] == '/');
        for (const char *l = memmem(o, n, "\r\n", 2); l && l + 2 < o + n;
             l = memmem(l + 2, (size_t)(o + n - l - 2), "\r\n", 2))
                for (size_t i = 0; i < sizeof(never) / sizeof(never[0]); i++) {
                        size_t k = strlen(never[i]);
                        CHECK(!((size_t)(o + n - l - 2) >= k && strncasecmp(l + 2, never[i], k) == 0));
                }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        const char *in = (const char *)data;
        struct ingress_head h;
        size_t len;

        if (size > INGRESS_HEAD_MAX)
                return 0;
        len = ingress_head_end(in, size);
        if (len == 0)
                len = size; /* an incomplete head: must be refused */
        if (ingress_head_rewrite(in, len, out, &h) != 0) {
                CHECK(h.why != NULL);
                return 0;
        }
        CHECK(h.out_len <= len);
        CHECK(h.port >= 1 && h.port <= 65535);
        CHECK(h.agent[0]);
        for (const char *p = h.agent; *p; p++)
                CHECK(isalnum((unsigned char)*p) || *p == '_' || *p == '-');
        CHECK(strlen(h.tenant) <= INGRESS_TENANT_NAME_MAX);
        for (const char *p = h.tenant; *p; p++)
                CHECK(isalnum((unsigned char)*p) || strchr("._@-", *p));
        check_out(out, h.out_len);
        return 0;
}
