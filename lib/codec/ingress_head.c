/* ingress_head: see ingress_head.h. */
#include "codec/ingress_head.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <strings.h>

#define PREFIX "/v1/sandboxes/"
#define PROXY "/proxy/"

/* Headers never forwarded into a sandbox: case-insensitive names. */
static const char *const dropped[] = {
        "OPEN-SANDBOX-API-KEY",
        "X-EXECD-ACCESS-TOKEN",
        "OPENSANDBOX-EGRESS-AUTH",
};
#define OWN_PREFIX "X-Sandbox-Ingress-"

/* RFC 9110 token characters. */
static bool is_tchar(unsigned char c)
{
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
               (c && strchr("!#$%&'*+-.^_`|~", c));
}

size_t ingress_head_end(const char *buf, size_t len)
{
        const char *e = memmem(buf, len, "\r\n\r\n", 4);

        return e ? (size_t)(e - buf) + 4 : 0;
}

static int refuse(struct ingress_head *ret, const char *why)
{
        ret->why = why;
        return -EINVAL;
}

static bool name_is(const char *name, size_t n, const char *want)
{
        return strlen(want) == n && strncasecmp(name, want, n) == 0;
}

/* The request line in[0..n) (no CRLF), rewritten into out. */
static int request_line(const char *in, size_t n, char *out, size_t *o, struct ingress_head *ret)
{
        const char *sp1 = memchr(in, ' ', n), *sp2, *t, *end, *rest;
        size_t tlen;
        long port = 0;
        int digits = 0;

        if (!sp1 || sp1 == in)
                return refuse(ret, "malformed request line");
        for (const char *p = in; p < sp1; p++)
                if (!is_tchar((unsigned char)*p))
                        return refuse(ret, "malformed request line");
        t = sp1 + 1;
        sp2 = memchr(t, ' ', (size_t)(in + n - t));
        if (!sp2)
                return refuse(ret, "malformed request line");
        end = in + n;
        if (!((end - sp2 - 1) == 8 &&
              (memcmp(sp2 + 1, "HTTP/1.1", 8) == 0 || memcmp(sp2 + 1, "HTTP/1.0", 8) == 0)))
                return refuse(ret, "malformed request line");
        tlen = (size_t)(sp2 - t);
        for (size_t i = 0; i < tlen; i++)
                if ((unsigned char)t[i] <= 0x20 || (unsigned char)t[i] >= 0x7f)
                        return refuse(ret, "malformed request target");
        /* /v1/sandboxes/{id}/proxy/{port} */
        if (tlen < sizeof(PREFIX) - 1 || memcmp(t, PREFIX, sizeof(PREFIX) - 1) != 0)
                return refuse(ret, "not a sandbox endpoint path");
        rest = t + sizeof(PREFIX) - 1;
        while (rest < sp2 && *rest != '/' && *rest != '?')
                rest++;
        if (rest == t + sizeof(PREFIX) - 1 || (size_t)(sp2 - rest) < sizeof(PROXY) - 1 ||
            memcmp(rest, PROXY, sizeof(PROXY) - 1) != 0)
                return refuse(ret, "not a sandbox endpoint path");
        rest += sizeof(PROXY) - 1;
        while (rest < sp2 && *rest >= '0' && *rest <= '9' && digits < 6) {
                port = port * 10 + (*rest++ - '0');
                digits++;
        }
        if (digits == 0 || digits > 5 || port < 1 || port > 65535 ||
            (rest < sp2 && *rest != '/' && *rest != '?'))
                return refuse(ret, "the port must be a number from 1 to 65535");
        ret->port = (int)port;

        memcpy(out + *o, in, (size_t)(t - in));
        *o += (size_t)(t - in);
        if (rest == sp2 || *rest == '?')
                out[(*o)++] = '/';
        memcpy(out + *o, rest, (size_t)(end - rest));
        *o += (size_t)(end - rest);
        memcpy(out + *o, "\r\n", 2);
        *o += 2;
        return 0;
}

/* The value of one of the ingress's own headers (colon+1 .. ve), blanks
 * trimmed, into dst: 1..max characters of [A-Za-z0-9_-] and those of extra. */
static int own_value(const char *v, const char *ve, char *dst, size_t max, const char *extra)
{
        while (v < ve && (*v == ' ' || *v == '\t'))
                v++;
        while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
                ve--;
        if (ve == v || (size_t)(ve - v) > max)
                return -EINVAL;
        for (const char *p = v; p < ve; p++)
                if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') ||
                      (*p >= 'A' && *p <= 'Z') || *p == '_' || *p == '-' || (*p && strchr(extra, *p))))
                        return -EINVAL;
        memcpy(dst, v, (size_t)(ve - v));
        dst[ve - v] = '\0';
        return 0;
}

/* One header line in[0..n) (no CRLF): kept (copied to out), dropped, or
 * the agent's or the tenant's name. */
static int header_line(const char *in, size_t n, char *out, size_t *o, struct ingress_head *ret,
                       bool *seen_agent)
{
        const char *colon = memchr(in, ':', n);
        size_t name_len;

        if (!colon || colon == in)
                return refuse(ret, "malformed header line");
        name_len = (size_t)(colon - in);
        for (size_t i = 0; i < name_len; i++)
                if (!is_tchar((unsigned char)in[i]))
                        return refuse(ret, "malformed header line");
        for (const char *p = colon + 1; p < in + n; p++)
                if (((unsigned char)*p < 0x20 && *p != '\t') || *p == 0x7f)
                        return refuse(ret, "malformed header line");
        if (name_is(in, name_len, INGRESS_AGENT_HEADER)) {
                if (*seen_agent)
                        return refuse(ret, "more than one " INGRESS_AGENT_HEADER);
                *seen_agent = true;
                if (own_value(colon + 1, in + n, ret->agent, INGRESS_AGENT_NAME_MAX, "") < 0)
                        return refuse(ret, "bad " INGRESS_AGENT_HEADER);
                return 0;
        }
        if (name_is(in, name_len, INGRESS_TENANT_HEADER)) {
                if (ret->tenant[0])
                        return refuse(ret, "more than one " INGRESS_TENANT_HEADER);
                if (own_value(colon + 1, in + n, ret->tenant, INGRESS_TENANT_NAME_MAX, ".@") < 0)
                        return refuse(ret, "bad " INGRESS_TENANT_HEADER);
                return 0;
        }
        if (name_len >= sizeof(OWN_PREFIX) - 1 &&
            strncasecmp(in, OWN_PREFIX, sizeof(OWN_PREFIX) - 1) == 0)
                return 0;
        for (size_t i = 0; i < sizeof(dropped) / sizeof(dropped[0]); i++)
                if (name_is(in, name_len, dropped[i]))
                        return 0;
        memcpy(out + *o, in, n);
        *o += n;
        memcpy(out + *o, "\r\n", 2);
        *o += 2;
        return 0;
}

int ingress_head_rewrite(const char *in, size_t len, char *out, struct ingress_head *ret)
{
        const char *p = in, *end = in + len;
        bool first = true, seen_agent = false;
        size_t o = 0;
        int r;

        memset(ret, 0, sizeof(*ret));
        if (len < 4 || len > INGRESS_HEAD_MAX || ingress_head_end(in, len) != len)
                return refuse(ret, "incomplete request head");
        if (memchr(in, '\0', len))
                return refuse(ret, "NUL byte in the request head");
        /* Lines end with CRLF; the last one (empty) is the blank line. */
        for (;;) {
                const char *eol = memmem(p, (size_t)(end - p), "\r\n", 2);
                size_t n = (size_t)(eol - p); /* found: the head ends with CRLF CRLF */

                if (memchr(p, '\r', n) || memchr(p, '\n', n))
                        return refuse(ret, "bare CR or LF in the request head");
                if (n == 0) {
                        if (first)
                                return refuse(ret, "malformed request line");
                        break;
                }
                if (!first && (*p == ' ' || *p == '\t'))
                        return refuse(ret, "folded header line");
                r = first ? request_line(p, n, out, &o, ret)
                          : header_line(p, n, out, &o, ret, &seen_agent);
                if (r < 0)
                        return r;
                first = false;
                p = eol + 2;
        }
        if (p + 2 != end)
                return refuse(ret, "bytes after the request head");
        if (!seen_agent)
                return refuse(ret, "no " INGRESS_AGENT_HEADER " (not sent through nginx)");
        memcpy(out + o, "\r\n", 2);
        o += 2;
        ret->out_len = o;
        return 0;
}
