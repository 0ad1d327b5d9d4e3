/* fuzz_egress_acl_req: the line Squid hands sandbox-egress-acl carries a
 * host name chosen inside a sandbox. Feeds any bytes to
 * egress_acl_req_parse() (whole, and as a cut line) and checks the contract:
 * known errors only; fields within their caps whatever the result; a host is
 * printable ASCII without spaces (fit for a log) or empty; the sandbox id is
 * 32 lower-case hex digits or empty. Any crash, sanitizer report or abort()
 * is a bug. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox/egress_acl_req.h"
#include "fuzz.h"

static void check(const struct egress_acl_req *q)
{
        size_t n = strnlen(q->sid, sizeof(q->sid));

        CHECK(n == 0 || n == 32);
        for (size_t i = 0; i < n; i++)
                CHECK((q->sid[i] >= '0' && q->sid[i] <= '9') ||
                      (q->sid[i] >= 'a' && q->sid[i] <= 'f'));
        CHECK(strnlen(q->host, sizeof(q->host)) <= EGRESS_ACL_HOST_MAX);
        for (const char *h = q->host; *h; h++)
                CHECK(*h > 0x20 && *h < 0x7f);
        CHECK(q->port >= -1 && q->port <= 65535);
        CHECK(q->refusal == EGRESS_REFUSAL_NONE || q->refusal == EGRESS_REFUSAL_PORT ||
              q->refusal == EGRESS_REFUSAL_ADDRESS);
        CHECK(strlen(egress_refusal_name(q->refusal)) > 0);
        CHECK(!q->allowed || q->refusal == EGRESS_REFUSAL_NONE);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct egress_acl_req q;
        int r;

        r = egress_acl_req_parse((const char *)data, size, &q);
        CHECK(r == 0 || r == -EINVAL || r == -EMSGSIZE);
        CHECK(r != -EMSGSIZE || size > EGRESS_ACL_REQ_MAX);
        check(&q);
        if (r == 0)
                CHECK(q.host[0] != '\0');
        /* the same bytes as the start of a cut line (only MAX bytes are read) */
        if (size <= EGRESS_ACL_REQ_MAX) {
                static char cut[EGRESS_ACL_REQ_MAX + 1];
                memcpy(cut, data, size);
                memset(cut + size, 'a', sizeof(cut) - size);
                r = egress_acl_req_parse(cut, sizeof(cut), &q);
                CHECK(r == -EMSGSIZE || r == -EINVAL);
                check(&q);
                CHECK(q.host[0] == '\0');
        }
        return 0;
}
