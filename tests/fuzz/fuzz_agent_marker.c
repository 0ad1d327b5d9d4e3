/* fuzz_agent_marker: the relay parses AGENT_DIR/<ref>.tcp
 * (egress/agent_marker.c), which a provider writes: any bytes here. The
 * input is the file. Contracts: accepted only if it is one line ending in
 * its only newline with exactly two spaces; the address family is IPv4 or
 * IPv6 with a port of 1..65535; the key is the line's last 64 hex digits;
 * refused leaves a reason and a zeroed key; parsing again gives the same.
 * Any crash, sanitizer report or abort() is a bug. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "agent_marker.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct agent_marker a, b;
        const char *why = NULL, *why2 = NULL;
        const char *s = (const char *)data;
        int r = agent_marker_parse(s, size, &a, &why);
        int r2 = agent_marker_parse(s, size, &b, &why2);

        CHECK(r == r2);
        CHECK(r == 0 || r == -EINVAL);
        if (r < 0) {
                static const unsigned char zero[TCP_KEY_LEN];

                CHECK(why != NULL);
                CHECK(memcmp(a.key, zero, sizeof(zero)) == 0);
                return 0;
        }
        CHECK(why == NULL);
        CHECK(memcmp(&a, &b, sizeof(a)) == 0);
        CHECK(size >= 2 + 1 + 1 + TCP_KEY_HEX_LEN + 1 && s[size - 1] == '\n');
        CHECK(memchr(s, '\n', size) == s + size - 1);
        {
                size_t spaces = 0;

                for (size_t i = 0; i < size; i++)
                        spaces += s[i] == ' ';
                CHECK(spaces == 2);
        }
        for (size_t i = 0; i < TCP_KEY_LEN; i++) {
                char hex[3];

                snprintf(hex, sizeof(hex), "%02x", a.key[i]);
                CHECK(!memcmp(s + size - 1 - TCP_KEY_HEX_LEN + 2 * i, hex, 2));
        }
        if (a.addr.ss_family == AF_INET) {
                CHECK(a.addr_len == sizeof(struct sockaddr_in));
                CHECK(((struct sockaddr_in *)&a.addr)->sin_port != 0);
        } else {
                CHECK(a.addr.ss_family == AF_INET6);
                CHECK(a.addr_len == sizeof(struct sockaddr_in6));
                CHECK(((struct sockaddr_in6 *)&a.addr)->sin6_port != 0);
        }
        return 0;
}
