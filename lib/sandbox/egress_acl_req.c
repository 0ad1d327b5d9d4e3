/* egress_acl_req: see egress_acl_req.h. */
#include "sandbox/egress_acl_req.h"
#include "codec/url.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define TOKENS_MAX 4

struct tok {
        const char *p;
        size_t len;
};

static bool printable(unsigned char c)
{
        return c > 0x20 && c < 0x7f;
}

/* Undo Squid's %-encoding of t into out (cap bytes, NUL-terminated). Only
 * printable ASCII is accepted, raw or decoded. -EINVAL otherwise, or if it
 * does not fit. */
static int decode(struct tok t, char *out, size_t cap)
{
        size_t o = 0;

        for (size_t i = 0; i < t.len; i++) {
                unsigned char c = (unsigned char)t.p[i];
                if (!printable(c))
                        return -EINVAL;
                if (c == '%') {
                        int hi = i + 2 < t.len ? url_hex_digit((unsigned char)t.p[i + 1]) : -1;
                        int lo = i + 2 < t.len ? url_hex_digit((unsigned char)t.p[i + 2]) : -1;
                        if (hi < 0 || lo < 0)
                                return -EINVAL;
                        c = (unsigned char)(hi << 4 | lo);
                        if (!printable(c))
                                return -EINVAL;
                        i += 2;
                }
                if (o + 1 >= cap)
                        return -EINVAL;
                out[o++] = (char)c;
        }
        out[o] = '\0';
        return 0;
}

/* The sandbox id of an IPv6 source address into sid (33 bytes), else "". */
static void parse_source(struct tok t, char sid[33])
{
        char addr[INET6_ADDRSTRLEN + 1];
        struct in6_addr a;

        sid[0] = '\0';
        if (decode(t, addr, sizeof(addr)) < 0 || inet_pton(AF_INET6, addr, &a) != 1)
                return;
        for (int i = 0; i < 16; i++)
                snprintf(sid + 2 * i, 3, "%02x", a.s6_addr[i]);
}

static int parse_port(struct tok t, int *ret)
{
        int v = 0;

        *ret = -1;
        if (t.len == 1 && t.p[0] == '-')
                return 0;
        if (t.len < 1 || t.len > 5)
                return -EINVAL;
        for (size_t i = 0; i < t.len; i++) {
                if (t.p[i] < '0' || t.p[i] > '9')
                        return -EINVAL;
                v = v * 10 + (t.p[i] - '0');
        }
        if (v > 65535)
                return -EINVAL;
        *ret = v;
        return 0;
}

static int parse_data(struct tok t, struct egress_acl_req *ret)
{
        static const struct {
                const char *word;
                enum egress_refusal r;
                bool allowed, https;
        } words[] = { { "-", EGRESS_REFUSAL_NONE, false, false },
                      { "port", EGRESS_REFUSAL_PORT, false, false },
                      { "address", EGRESS_REFUSAL_ADDRESS, false, false },
                      { "allowed", EGRESS_REFUSAL_NONE, true, false },
                      { "https", EGRESS_REFUSAL_NONE, false, true } };

        for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
                if (t.len == strlen(words[i].word) && !memcmp(t.p, words[i].word, t.len)) {
                        ret->refusal = words[i].r;
                        ret->allowed = words[i].allowed;
                        ret->https = words[i].https;
                        return 0;
                }
        return -EINVAL;
}

int egress_acl_req_parse(const char *line, size_t len, struct egress_acl_req *ret)
{
        struct tok t[TOKENS_MAX];
        size_t n = 0, start = 0;
        bool cut = len > EGRESS_ACL_REQ_MAX;
        int r = 0;

        memset(ret, 0, sizeof(*ret));
        ret->port = -1;
        if (cut)
                len = EGRESS_ACL_REQ_MAX;
        else if (len && line[len - 1] == '\n' && --len && line[len - 1] == '\r')
                len--;
        /* Squid 5 ends its line with a space (after the last token) */
        while (!cut && len && line[len - 1] == ' ')
                len--;
        /* the last token takes the rest: a space in it is refused by decode() */
        for (size_t i = 0; i <= len && n < TOKENS_MAX; i++) {
                if (i < len && (line[i] != ' ' || n == TOKENS_MAX - 1))
                        continue;
                t[n].p = line + start;
                t[n++].len = i - start;
                start = i + 1;
        }
        if (n < 3)
                return cut ? -EMSGSIZE : -EINVAL; /* no reason: nothing of use */
        parse_source(t[0], ret->sid);
        if (parse_port(t[1], &ret->port) < 0)
                r = -EINVAL;
        if (parse_data(t[2], ret) < 0)
                r = -EINVAL;
        if (cut)
                return -EMSGSIZE;
        if (n < TOKENS_MAX || t[3].len == 0 || decode(t[3], ret->host, sizeof(ret->host)) < 0) {
                ret->host[0] = '\0';
                r = -EINVAL;
        }
        return r;
}

const char *egress_refusal_name(enum egress_refusal r)
{
        switch (r) {
        case EGRESS_REFUSAL_PORT: return "port";
        case EGRESS_REFUSAL_ADDRESS: return "address";
        case EGRESS_REFUSAL_NONE:
        default: return "policy";
        }
}
