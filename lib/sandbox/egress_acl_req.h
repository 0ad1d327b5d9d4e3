/* egress_acl_req: one request line Squid sends to sandbox-egress-acl
 * (egress/acl_helper.c, docs/EGRESS.md), parsed. Pure code, no I/O.
 *
 * The helper is declared `external_acl_type ... %>a %PORT %DATA %DST`, so a
 * line is "<source address> <port> <data> <host>\n": four tokens separated
 * by single spaces, each %-encoded by Squid (RFC 1738 style). <data> is the
 * argument of the `acl ... external` line: "-" when there is none (a policy
 * question), else what the recorder is to record: "port" or "address" (a
 * refusal of Squid's) or "allowed" (the request passed every check), or,
 * for the Credential Vault's question (the helper's --vault role), "https"
 * (is the host bound for https; "-": for http). Trailing spaces are ignored
 * (Squid 5.7 ends the line with one). The host, the only token of
 * unbounded length, comes last: a line cut at EGRESS_ACL_REQ_MAX still
 * gives the sandbox, the port and the reason, so a refusal is still logged.
 *
 * The host comes from a sandbox's request: hostile input. Every size is
 * capped, and a host is accepted only if it decodes to printable ASCII
 * without spaces (so it can be logged as is). The source address is the
 * sandbox id the relay wrote as an IPv6 address; anything else (IPv4, a
 * malformed address) leaves the sandbox unknown, which is not an error: the
 * decision is then "deny" (no identity). */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#define EGRESS_ACL_REQ_MAX 4096 /* longest line, newline included */
#define EGRESS_ACL_HOST_MAX 255 /* longest host, decoded (a DNS name is <= 253; [v6 literal]) */

enum egress_refusal {
        EGRESS_REFUSAL_NONE,    /* no <data>, or "-": a policy question */
        EGRESS_REFUSAL_PORT,    /* "port": Squid refused the destination port */
        EGRESS_REFUSAL_ADDRESS, /* "address": the resolved address is in a blocked range */
};

struct egress_acl_req {
        char sid[33];                       /* 32 hex digits, "" = no sandbox identity */
        char host[EGRESS_ACL_HOST_MAX + 1]; /* decoded, "" if unreadable */
        int port;                           /* 0..65535, -1 if Squid had none ("-") or unreadable */
        enum egress_refusal refusal;
        bool allowed; /* <data> "allowed" (then refusal is NONE) */
        bool https;   /* <data> "https" (a vault question for scheme https) */
};

/* Parse line[0..len) (a trailing "\n" or "\r\n" is allowed) into *ret.
 * len > EGRESS_ACL_REQ_MAX means the line was cut: only its first
 * EGRESS_ACL_REQ_MAX bytes are read and the host is unreadable. Every token
 * is read even if another one is bad, so on error *ret still holds what
 * could be read (the rest at the "unknown" values: "", -1, NONE, false): a refusal
 * is logged even when its host is not fit to be. Returns 0, or -EMSGSIZE
 * (cut), -EINVAL (not 4 tokens, a bad %-escape, a host too long or with
 * bytes unfit for a log, a bad port, an unknown <data>). */
int egress_acl_req_parse(const char *line, size_t len, struct egress_acl_req *ret);

/* "port", "address" or "policy" (for EGRESS_REFUSAL_NONE): the value of
 * EGRESS_REASON= and of the reason label of broker_egress_denied_total. */
const char *egress_refusal_name(enum egress_refusal r);
