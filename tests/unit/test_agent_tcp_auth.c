/* Unit tests for agent/sha256.c and agent/tcp_auth.c (the TCP transport's
 * handshake, docs/AGENT.md "TCP (Kubernetes)"): SHA-256 against the
 * FIPS 180-4 examples (and the million-'a' one of its validation set),
 * HMAC-SHA256 against every RFC 4231 case; the key and listen-address
 * parsers, strict; the handshake run both ways, and as the attacks: a wrong
 * key on either side, a reflected REPLY, the agent's proof offered as the
 * relay's, a replayed PROOF against a fresh agent nonce, a flipped bit
 * anywhere, a wrong magic. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sha256.h"
#include "tcp_auth.h"

static void hex_of(const unsigned char *b, size_t n, char *out)
{
        for (size_t i = 0; i < n; i++)
                sprintf(out + 2 * i, "%02x", b[i]);
}

static size_t unhex(const char *h, unsigned char *out)
{
        size_t n = strlen(h) / 2;

        for (size_t i = 0; i < n; i++) {
                unsigned v;

                assert_int_equal(sscanf(h + 2 * i, "%2x", &v), 1);
                out[i] = (unsigned char)v;
        }
        return n;
}

static void sha_hex(const void *d, size_t n, char out[65])
{
        struct sha256 s;
        unsigned char md[SHA256_LEN];

        sha256_init(&s);
        sha256_update(&s, d, n);
        sha256_final(&s, md);
        hex_of(md, sizeof(md), out);
}

static void test_sha256_vectors(void **state)
{
        char out[65];
        static const char two_block[] = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
        struct sha256 s;
        unsigned char md[SHA256_LEN], a[1000];

        (void)state;
        sha_hex("abc", 3, out);
        assert_string_equal(out,
                            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        sha_hex("", 0, out);
        assert_string_equal(out,
                            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        sha_hex(two_block, strlen(two_block), out);
        assert_string_equal(out,
                            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
        /* one million 'a', fed in uneven pieces */
        memset(a, 'a', sizeof(a));
        sha256_init(&s);
        for (size_t done = 0, k = 1; done < 1000000; done += k, k = k % 997 + 1) {
                if (done + k > 1000000)
                        k = 1000000 - done;
                sha256_update(&s, a, k);
        }
        sha256_final(&s, md);
        hex_of(md, sizeof(md), out);
        assert_string_equal(out,
                            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
        /* 55, 56, 64 bytes: the padding's edges (checked against sha256sum) */
        sha_hex(a, 55, out);
        assert_string_equal(out,
                            "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
        sha_hex(a, 56, out);
        assert_string_equal(out,
                            "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a");
        sha_hex(a, 64, out);
        assert_string_equal(out,
                            "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
}

/* 131 bytes of 0xaa, the key of RFC 4231's cases 6 and 7 */
#define AA131                                                                                      \
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" \
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" \
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

struct rfc4231 {
        const char *key, *data, *mac; /* hex; mac truncated where the RFC does (case 5) */
};

static void test_hmac_rfc4231(void **state)
{
        static const struct rfc4231 cases[] = {
                { "0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b", "4869205468657265",
                  "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7" },
                { "4a656665", "7768617420646f2079612077616e7420666f72206e6f7468696e673f",
                  "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843" },
                { "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
                  "dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd"
                  "dddddddddddddddddddd",
                  "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe" },
                { "0102030405060708090a0b0c0d0e0f10111213141516171819",
                  "cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd"
                  "cdcdcdcdcdcdcdcdcdcd",
                  "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b" },
                { "0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c",
                  "546573742057697468205472756e636174696f6e", "a3b6167473100ee06e0c796c2955552b" },
                { AA131,
                  "54657374205573696e67204c6172676572205468616e20426c6f636b2d53697a65204b6579202d20"
                  "48"
                  "617368204b6579204669727374",
                  "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54" },
                { AA131,
                  "5468697320697320612074657374207573696e672061206c6172676572207468616e20626c6f636b"
                  "2d73697a65206b657920616e642061206c6172676572207468616e20626c6f636b2d73697a652064"
                  "6174612e20546865206b6579206e6565647320746f20626520686173686564206265666f72652062"
                  "65696e6720757365642062792074686520484d414320616c676f726974686d2e",
                  "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2" },
        };
        (void)state;
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                unsigned char key[200], data[200], mac[SHA256_LEN];
                size_t kl = unhex(cases[i].key, key), dl = unhex(cases[i].data, data);
                char out[65];
                /* the data in two parts, as the handshake passes it */
                const void *parts[2] = { data, data + dl / 3 };
                const size_t lens[2] = { dl / 3, dl - dl / 3 };

                hmac_sha256(key, kl, 2, parts, lens, mac);
                hex_of(mac, sizeof(mac), out);
                out[strlen(cases[i].mac)] = '\0';
                assert_string_equal(out, cases[i].mac);
        }
}

static const char KEYHEX[] = "00112233445566778899aabbccddeeff0f1e2d3c4b5a69788796a5b4c3d2e1f0";

static void test_key_parse(void **state)
{
        unsigned char key[TCP_KEY_LEN], before[TCP_KEY_LEN];
        char bad[80];

        (void)state;
        assert_int_equal(tcp_key_parse(KEYHEX, key), 0);
        assert_int_equal(key[0], 0x00);
        assert_int_equal(key[5], 0x55);
        assert_int_equal(key[31], 0xf0);
        memcpy(before, key, sizeof(key));
        /* uppercase, short, long, a non-hex byte, empty: refused, key untouched */
        strcpy(bad, KEYHEX);
        bad[10] = 'A';
        assert_int_equal(tcp_key_parse(bad, key), -EINVAL);
        strcpy(bad, KEYHEX);
        bad[63] = '\0';
        assert_int_equal(tcp_key_parse(bad, key), -EINVAL);
        snprintf(bad, sizeof(bad), "%s0", KEYHEX);
        assert_int_equal(tcp_key_parse(bad, key), -EINVAL);
        snprintf(bad, sizeof(bad), "%s\n", KEYHEX);
        assert_int_equal(tcp_key_parse(bad, key), -EINVAL);
        strcpy(bad, KEYHEX);
        bad[0] = 'g';
        assert_int_equal(tcp_key_parse(bad, key), -EINVAL);
        strcpy(bad, KEYHEX);
        bad[33] = ' ';
        assert_int_equal(tcp_key_parse(bad, key), -EINVAL);
        assert_int_equal(tcp_key_parse("", key), -EINVAL);
        assert_memory_equal(key, before, sizeof(key));
}

static void test_listen_parse(void **state)
{
        struct sockaddr_storage ss;
        socklen_t len;
        struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
        static const char *const bad[] = {
                "",        "0",          "65536",        "080",
                "-1",      "+80",        "80x",          "1.2.3.4:",
                ":80",     "1.2.3:80",   "1.2.3.4.5:1",  "::1:80",
                "[::1]",   "[::1]80",    "[1.2.3.4]:80", "host:80",
                "[::1]:0", "1.2.3.04:1", " 80",          "[fe80::1%eth0]:1"
        };

        (void)state;
        assert_int_equal(tcp_listen_parse("8080", &ss, &len), 0);
        assert_int_equal(ss.ss_family, AF_INET6);
        assert_int_equal(ntohs(s6->sin6_port), 8080);
        assert_memory_equal(&s6->sin6_addr, &in6addr_any, sizeof(in6addr_any));
        assert_int_equal(tcp_listen_parse("127.0.0.1:1", &ss, &len), 0);
        assert_int_equal(ss.ss_family, AF_INET);
        assert_int_equal(len, sizeof(struct sockaddr_in));
        assert_int_equal(ntohl(s4->sin_addr.s_addr), 0x7f000001);
        assert_int_equal(ntohs(s4->sin_port), 1);
        assert_int_equal(tcp_listen_parse("[::1]:65535", &ss, &len), 0);
        assert_int_equal(ss.ss_family, AF_INET6);
        assert_int_equal(ntohs(s6->sin6_port), 65535);
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                if (tcp_listen_parse(bad[i], &ss, &len) != -EINVAL)
                        fail_msg("accepted %s", bad[i]);
        }
}

struct run {
        unsigned char key_agent[TCP_KEY_LEN], key_relay[TCP_KEY_LEN];
        unsigned char nr[TCP_NONCE_LEN], na[TCP_NONCE_LEN];
        unsigned char hello[TCP_HELLO_LEN], reply[TCP_REPLY_LEN], proof[TCP_PROOF_LEN];
};

static void fill(unsigned char *b, size_t n, unsigned seed)
{
        for (size_t i = 0; i < n; i++)
                b[i] = (unsigned char)(seed * 131 + i * 7 + 1);
}

/* Both sides as tcp_listener.c and relay_tcp.c drive them. Returns the
 * relay's check of the reply, and (when that passed) the agent's check of
 * the proof in *agent. */
static int handshake(struct run *r, int *agent)
{
        unsigned char nr_seen[TCP_NONCE_LEN], na_seen[TCP_NONCE_LEN];
        int rc;

        tcp_hello_build(r->nr, r->hello);
        assert_int_equal(tcp_hello_parse(r->hello, nr_seen), 0);
        tcp_reply_build(r->key_agent, nr_seen, r->na, r->reply);
        rc = tcp_reply_check(r->key_relay, r->nr, r->reply, na_seen);
        if (rc < 0)
                return rc;
        assert_memory_equal(na_seen, r->na, TCP_NONCE_LEN);
        tcp_proof_build(r->key_relay, r->nr, na_seen, r->proof);
        *agent = tcp_proof_check(r->key_agent, nr_seen, r->na, r->proof);
        return 0;
}

static void test_handshake(void **state)
{
        struct run r, r2;
        int agent = 1;
        unsigned char na[TCP_NONCE_LEN];

        (void)state;
        assert_int_equal(tcp_key_parse(KEYHEX, r.key_agent), 0);
        memcpy(r.key_relay, r.key_agent, TCP_KEY_LEN);
        fill(r.nr, TCP_NONCE_LEN, 1);
        fill(r.na, TCP_NONCE_LEN, 2);
        assert_int_equal(handshake(&r, &agent), 0);
        assert_int_equal(agent, 0);
        assert_int_equal(memcmp(r.hello, TCP_MAGIC, TCP_MAGIC_LEN), 0);
        assert_int_equal(memcmp(r.reply, TCP_MAGIC, TCP_MAGIC_LEN), 0);

        /* the relay's key differs (an impostor agent, or a stale marker) */
        r2 = r;
        r2.key_relay[7] ^= 1;
        assert_int_equal(handshake(&r2, &agent), -EACCES);
        /* the agent's key differs, the relay proves nothing either way */
        r2 = r;
        r2.key_agent[31] ^= 0x80;
        assert_int_equal(handshake(&r2, &agent), -EACCES);

        /* reflection: an impostor sends the HELLO's nonce back as its own,
         * with any MAC, or the relay's own proof as the agent's */
        memcpy(r2.reply, TCP_MAGIC, TCP_MAGIC_LEN);
        memcpy(r2.reply + TCP_MAGIC_LEN, r.nr, TCP_NONCE_LEN);
        tcp_proof_build(r.key_relay, r.nr, r.nr, r2.reply + TCP_MAGIC_LEN + TCP_NONCE_LEN);
        assert_int_equal(tcp_reply_check(r.key_relay, r.nr, r2.reply, na), -EACCES);
        /* the agent's proof offered back as the relay's: the labels differ */
        assert_int_equal(
                tcp_proof_check(r.key_agent, r.nr, r.na, r.reply + TCP_MAGIC_LEN + TCP_NONCE_LEN),
                -EACCES);
        /* the relay's proof offered as an agent's REPLY MAC */
        memcpy(r2.reply, r.reply, TCP_REPLY_LEN);
        memcpy(r2.reply + TCP_MAGIC_LEN + TCP_NONCE_LEN, r.proof, TCP_PROOF_LEN);
        assert_int_equal(tcp_reply_check(r.key_relay, r.nr, r2.reply, na), -EACCES);

        /* replay: a recorded HELLO and PROOF against a fresh agent nonce */
        fill(r2.na, TCP_NONCE_LEN, 3);
        assert_int_equal(tcp_proof_check(r.key_agent, r.nr, r2.na, r.proof), -EACCES);
        /* replay of a recorded REPLY to a fresh relay nonce */
        fill(r2.nr, TCP_NONCE_LEN, 4);
        assert_int_equal(tcp_reply_check(r.key_relay, r2.nr, r.reply, na), -EACCES);

        /* any flipped bit of the REPLY or the PROOF */
        for (size_t i = 0; i < TCP_REPLY_LEN * 8; i++) {
                memcpy(r2.reply, r.reply, TCP_REPLY_LEN);
                r2.reply[i / 8] ^= (unsigned char)(1u << (i % 8));
                assert_true(tcp_reply_check(r.key_relay, r.nr, r2.reply, na) < 0);
        }
        for (size_t i = 0; i < TCP_PROOF_LEN * 8; i++) {
                memcpy(r2.proof, r.proof, TCP_PROOF_LEN);
                r2.proof[i / 8] ^= (unsigned char)(1u << (i % 8));
                assert_int_equal(tcp_proof_check(r.key_agent, r.nr, r.na, r2.proof), -EACCES);
        }
        /* a HELLO without the magic (plain HTTP, say) */
        memcpy(r2.hello, "GET / HTTP/1.1\r\n\r\n0123456789abcdefghijklmn", TCP_HELLO_LEN);
        assert_int_equal(tcp_hello_parse(r2.hello, na), -EINVAL);
        memcpy(r2.reply, "HTTP/1.1", 8);
        assert_int_equal(tcp_reply_check(r.key_relay, r.nr, r2.reply, na), -EINVAL);
}

static void test_equal(void **state)
{
        unsigned char a[32] = { 0 }, b[32] = { 0 };

        (void)state;
        assert_true(tcp_equal(a, b, 32));
        b[31] = 1;
        assert_false(tcp_equal(a, b, 32));
        assert_true(tcp_equal(a, b, 31));
        b[0] = 0x80;
        assert_false(tcp_equal(a, b, 1));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_sha256_vectors), cmocka_unit_test(test_hmac_rfc4231),
                cmocka_unit_test(test_key_parse),      cmocka_unit_test(test_listen_parse),
                cmocka_unit_test(test_handshake),      cmocka_unit_test(test_equal),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
