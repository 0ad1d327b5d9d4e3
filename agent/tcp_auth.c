/* sandbox-agent: the TCP transport's handshake, pure (tcp_auth.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>

#include "sha256.h"
#include "tcp_auth.h"

static const char LABEL_AGENT[] = "sandbox-agent tcp1 agent"; /* with its NUL */
static const char LABEL_RELAY[] = "sandbox-agent tcp1 relay";

static int hexval(char c)
{
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        return -1;
}

int tcp_key_parse(const char *hex, unsigned char key[TCP_KEY_LEN])
{
        unsigned char k[TCP_KEY_LEN];

        for (int i = 0; i < TCP_KEY_LEN; i++) {
                int hi = hexval(hex[2 * i]), lo = hi < 0 ? -1 : hexval(hex[2 * i + 1]);

                if (hi < 0 || lo < 0)
                        return -EINVAL;
                k[i] = (unsigned char)(hi << 4 | lo);
        }
        if (hex[TCP_KEY_HEX_LEN] != '\0')
                return -EINVAL;
        memcpy(key, k, sizeof(k));
        memset(k, 0, sizeof(k));
        return 0;
}

static int port_parse(const char *s)
{
        long v = 0;

        if (*s < '1' || *s > '9')
                return -EINVAL;
        for (; *s; s++) {
                if (*s < '0' || *s > '9')
                        return -EINVAL;
                v = v * 10 + (*s - '0');
                if (v > 65535)
                        return -EINVAL;
        }
        return (int)v;
}

int tcp_listen_parse(const char *spec, struct sockaddr_storage *ss, socklen_t *len)
{
        char addr[INET6_ADDRSTRLEN];
        const char *colon, *port_s;
        int port;

        memset(ss, 0, sizeof(*ss));
        if (spec[0] == '[') {
                const char *end = strchr(spec, ']');
                struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

                if (!end || end[1] != ':' || (size_t)(end - spec - 1) >= sizeof(addr))
                        return -EINVAL;
                memcpy(addr, spec + 1, (size_t)(end - spec - 1));
                addr[end - spec - 1] = '\0';
                port = port_parse(end + 2);
                if (port < 0 || inet_pton(AF_INET6, addr, &s6->sin6_addr) != 1)
                        return -EINVAL;
                s6->sin6_family = AF_INET6;
                s6->sin6_port = htons((unsigned short)port);
                *len = sizeof(*s6);
                return 0;
        }
        colon = strchr(spec, ':');
        port_s = colon ? colon + 1 : spec;
        port = port_parse(port_s);
        if (port < 0)
                return -EINVAL;
        if (colon) {
                struct sockaddr_in *s4 = (struct sockaddr_in *)ss;

                if ((size_t)(colon - spec) >= sizeof(addr))
                        return -EINVAL;
                memcpy(addr, spec, (size_t)(colon - spec));
                addr[colon - spec] = '\0';
                if (inet_pton(AF_INET, addr, &s4->sin_addr) != 1)
                        return -EINVAL;
                s4->sin_family = AF_INET;
                s4->sin_port = htons((unsigned short)port);
                *len = sizeof(*s4);
        } else {
                struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

                s6->sin6_family = AF_INET6;
                s6->sin6_addr = in6addr_any;
                s6->sin6_port = htons((unsigned short)port);
                *len = sizeof(*s6);
        }
        return 0;
}

bool tcp_equal(const unsigned char *a, const unsigned char *b, size_t n)
{
        volatile unsigned char d = 0;

        for (size_t i = 0; i < n; i++)
                d |= a[i] ^ b[i];
        return d == 0;
}

static void mac(const unsigned char key[TCP_KEY_LEN], const char *label, size_t label_len,
                const unsigned char nr[TCP_NONCE_LEN], const unsigned char na[TCP_NONCE_LEN],
                unsigned char out[TCP_MAC_LEN])
{
        const void *parts[3] = { label, nr, na };
        const size_t lens[3] = { label_len, TCP_NONCE_LEN, TCP_NONCE_LEN };

        hmac_sha256(key, TCP_KEY_LEN, 3, parts, lens, out);
}

void tcp_hello_build(const unsigned char nr[TCP_NONCE_LEN], unsigned char out[TCP_HELLO_LEN])
{
        memcpy(out, TCP_MAGIC, TCP_MAGIC_LEN);
        memcpy(out + TCP_MAGIC_LEN, nr, TCP_NONCE_LEN);
}

int tcp_hello_parse(const unsigned char in[TCP_HELLO_LEN], unsigned char nr[TCP_NONCE_LEN])
{
        if (memcmp(in, TCP_MAGIC, TCP_MAGIC_LEN) != 0)
                return -EINVAL;
        memcpy(nr, in + TCP_MAGIC_LEN, TCP_NONCE_LEN);
        return 0;
}

void tcp_reply_build(const unsigned char key[TCP_KEY_LEN], const unsigned char nr[TCP_NONCE_LEN],
                     const unsigned char na[TCP_NONCE_LEN], unsigned char out[TCP_REPLY_LEN])
{
        memcpy(out, TCP_MAGIC, TCP_MAGIC_LEN);
        memcpy(out + TCP_MAGIC_LEN, na, TCP_NONCE_LEN);
        mac(key, LABEL_AGENT, sizeof(LABEL_AGENT), nr, na, out + TCP_MAGIC_LEN + TCP_NONCE_LEN);
}

int tcp_reply_check(const unsigned char key[TCP_KEY_LEN], const unsigned char nr[TCP_NONCE_LEN],
                    const unsigned char in[TCP_REPLY_LEN], unsigned char na[TCP_NONCE_LEN])
{
        unsigned char want[TCP_MAC_LEN];
        const unsigned char *n = in + TCP_MAGIC_LEN;
        bool ok;

        if (memcmp(in, TCP_MAGIC, TCP_MAGIC_LEN) != 0)
                return -EINVAL;
        /* our own nonce sent back as the agent's: a reflection of HELLO */
        if (tcp_equal(n, nr, TCP_NONCE_LEN))
                return -EACCES;
        mac(key, LABEL_AGENT, sizeof(LABEL_AGENT), nr, n, want);
        ok = tcp_equal(want, n + TCP_NONCE_LEN, TCP_MAC_LEN);
        if (!ok)
                return -EACCES;
        memcpy(na, n, TCP_NONCE_LEN);
        return 0;
}

void tcp_proof_build(const unsigned char key[TCP_KEY_LEN], const unsigned char nr[TCP_NONCE_LEN],
                     const unsigned char na[TCP_NONCE_LEN], unsigned char out[TCP_PROOF_LEN])
{
        mac(key, LABEL_RELAY, sizeof(LABEL_RELAY), nr, na, out);
}

int tcp_proof_check(const unsigned char key[TCP_KEY_LEN], const unsigned char nr[TCP_NONCE_LEN],
                    const unsigned char na[TCP_NONCE_LEN], const unsigned char in[TCP_PROOF_LEN])
{
        unsigned char want[TCP_MAC_LEN];

        mac(key, LABEL_RELAY, sizeof(LABEL_RELAY), nr, na, want);
        return tcp_equal(want, in, TCP_MAC_LEN) ? 0 : -EACCES;
}
