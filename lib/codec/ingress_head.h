/* ingress_head: the request head sandbox-ingress gets from nginx
 * (docs/INGRESS.md), checked and rewritten for the service in the sandbox.
 *
 * In:  METHOD /v1/sandboxes/{id}/proxy/{port}[/rest][?query] HTTP/1.x CRLF
 *      header lines, among them exactly one X-Sandbox-Ingress-Agent (the
 *      sandbox's agent directory name, set by nginx from its auth_request)
 *      and at most one X-Sandbox-Ingress-Tenant (the sandbox's owner, set
 *      the same way: sandbox-ingress refuses a head without it), CRLF
 * Out: METHOD /rest[?query] HTTP/1.x CRLF, the same header lines in the same
 *      order but for the ingress's own (X-Sandbox-Ingress-*) and the
 *      broker's credentials (OPEN-SANDBOX-API-KEY, X-EXECD-ACCESS-TOKEN,
 *      OPENSANDBOX-EGRESS-AUTH: nginx clears them already; never forwarded
 *      into a sandbox whatever nginx does), CRLF.
 * Strict: a bare CR or LF, a NUL, a folded line, a malformed request line
 * or header name is refused. Pure: no I/O, no allocation. */
#pragma once
#include <stddef.h>

#define INGRESS_HEAD_MAX (64 * 1024) /* request line + headers, blank line included */
#define INGRESS_AGENT_NAME_MAX 128
#define INGRESS_AGENT_HEADER "X-Sandbox-Ingress-Agent"
#define INGRESS_TENANT_NAME_MAX 128 /* as JSON_INPUT_ID_MAX: a tenant id */
#define INGRESS_TENANT_HEADER "X-Sandbox-Ingress-Tenant"

struct ingress_head {
        int port;                                 /* 1..65535 */
        char agent[INGRESS_AGENT_NAME_MAX + 1];   /* [A-Za-z0-9_-], 1..128 */
        char tenant[INGRESS_TENANT_NAME_MAX + 1]; /* [A-Za-z0-9._@-], 1..128; "" when absent */
        size_t out_len;                           /* bytes of the rewritten head */
        const char *why;                          /* static reason when refused */
};

/* The length of the head in buf (through its blank line), 0 when buf does
 * not hold a whole head yet. */
size_t ingress_head_end(const char *buf, size_t len);

/* Parse the head in[0..len) (exactly one head, ending with CRLF CRLF) and
 * write the rewritten head to out (room for len bytes: it never grows).
 * Returns 0 with *ret filled, or -EINVAL with ret->why set. */
int ingress_head_rewrite(const char *in, size_t len, char *out, struct ingress_head *ret);
