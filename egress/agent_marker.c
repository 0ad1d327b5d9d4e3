/* sandbox-egress-relay: the TCP agents' marker, parsed (agent_marker.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>

#include "agent_marker.h"

bool agent_ref_ok(const char *s, size_t n)
{
        if (n < 1 || n > AGENT_REF_MAX || s[0] == '-' || s[n - 1] == '-')
                return false;
        for (size_t i = 0; i < n; i++)
                if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
                        return false;
        return true;
}

/* The next field of buf[*i..len) up to the byte end: its bounds, or false. */
static bool field(const char *buf, size_t len, size_t *i, char end, size_t *start, size_t *n)
{
        const char *e = memchr(buf + *i, end, len - *i);

        if (!e || e == buf + *i)
                return false;
        *start = *i;
        *n = (size_t)(e - (buf + *i));
        *i += *n + 1;
        return true;
}

int agent_marker_parse(const char *buf, size_t len, struct agent_marker *m, const char **why)
{
        char addr[INET6_ADDRSTRLEN], port_s[6], key[TCP_KEY_HEX_LEN + 1];
        size_t i = 0, s, n;
        long port = 0;

        memset(m, 0, sizeof(*m));
        *why = "not one line ADDR PORT KEYHEX";
        if (len == 0 || len > AGENT_MARKER_MAX || buf[len - 1] != '\n' || memchr(buf, '\0', len))
                return -EINVAL;
        if (!field(buf, len, &i, ' ', &s, &n) || n >= sizeof(addr))
                return -EINVAL;
        memcpy(addr, buf + s, n);
        addr[n] = '\0';
        if (!field(buf, len, &i, ' ', &s, &n) || n >= sizeof(port_s))
                return -EINVAL;
        memcpy(port_s, buf + s, n);
        port_s[n] = '\0';
        if (!field(buf, len, &i, '\n', &s, &n) || i != len || n != TCP_KEY_HEX_LEN ||
            memchr(buf + s, ' ', n))
                return -EINVAL;
        memcpy(key, buf + s, n);
        key[n] = '\0';

        *why = "bad PORT (1..65535)";
        if (port_s[0] < '1' || port_s[0] > '9')
                return -EINVAL;
        for (const char *p = port_s; *p; p++) {
                if (*p < '0' || *p > '9')
                        return -EINVAL;
                port = port * 10 + (*p - '0');
        }
        if (port > 65535)
                return -EINVAL;
        *why = "bad ADDR (an IPv4 or IPv6 literal)";
        if (strchr(addr, ':')) {
                struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&m->addr;

                if (inet_pton(AF_INET6, addr, &s6->sin6_addr) != 1)
                        return -EINVAL;
                s6->sin6_family = AF_INET6;
                s6->sin6_port = htons((unsigned short)port);
                m->addr_len = sizeof(*s6);
        } else {
                struct sockaddr_in *s4 = (struct sockaddr_in *)&m->addr;

                if (inet_pton(AF_INET, addr, &s4->sin_addr) != 1)
                        return -EINVAL;
                s4->sin_family = AF_INET;
                s4->sin_port = htons((unsigned short)port);
                m->addr_len = sizeof(*s4);
        }
        *why = "bad KEYHEX (64 lowercase hex digits)";
        if (tcp_key_parse(key, m->key) < 0) {
                memset(key, 0, sizeof(key));
                memset(m, 0, sizeof(*m));
                return -EINVAL;
        }
        memset(key, 0, sizeof(key));
        *why = NULL;
        return 0;
}
