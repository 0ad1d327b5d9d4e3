/* sandbox-egress-relay: the TCP agents' marker (docs/AGENT.md, "Transports",
 * "TCP (Kubernetes)"). A provider whose sandboxes' agents listen on TCP
 * (--listen-tcp) writes AGENT_DIR/<ref>.tcp, one line
 *   ADDR PORT KEYHEX\n
 * ADDR an IPv4 or IPv6 literal (no brackets, no zone), PORT 1..65535
 * (decimal, no leading zero), KEYHEX the sandbox's key, 64 lowercase hex
 * digits; single spaces, one final newline, nothing else. <ref> is a DNS
 * label. Pure: relay_tcp.c reads the file, this parses it
 * (tests/unit/test_agent_marker.c, tests/fuzz/fuzz_agent_marker.c). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#include "tcp_auth.h"

#define AGENT_MARKER_MAX 160 /* longer than any valid line; a longer file is refused */
#define AGENT_REF_MAX 63

struct agent_marker {
        struct sockaddr_storage addr; /* address and port */
        socklen_t addr_len;
        unsigned char key[TCP_KEY_LEN];
};

/* Parse len bytes (not NUL-terminated). 0, or -EINVAL with why set to a
 * short reason for the log. */
int agent_marker_parse(const char *buf, size_t len, struct agent_marker *m, const char **why);

/* A DNS label: [a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?, n bytes of s. */
bool agent_ref_ok(const char *s, size_t n);
