/* sandbox-agent: SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104), for the
 * TCP transport's handshake (tcp_auth.h). Our own because the agent is a
 * static musl binary that links nothing (no libcrypto); the relay
 * (egress/) compiles the same file. Pure; tests/unit/test_agent_tcp_auth.c
 * checks the FIPS 180-4 and RFC 4231 vectors. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define SHA256_LEN 32
#define SHA256_BLOCK 64

struct sha256 {
        uint32_t h[8];
        uint64_t total; /* bytes so far */
        unsigned char buf[SHA256_BLOCK];
        size_t n; /* bytes in buf */
};

void sha256_init(struct sha256 *s);
void sha256_update(struct sha256 *s, const void *data, size_t len);
void sha256_final(struct sha256 *s, unsigned char out[SHA256_LEN]);

/* HMAC-SHA256 of the concatenation of n parts (part i: ptr[i], len[i]),
 * keyed with key_len bytes of key (any length). */
void hmac_sha256(const void *key, size_t key_len, size_t n, const void *const *ptr,
                 const size_t *len, unsigned char out[SHA256_LEN]);
