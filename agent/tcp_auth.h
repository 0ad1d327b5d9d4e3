/* sandbox-agent: the TCP transport's mutual handshake (docs/AGENT.md,
 * "Transports", "TCP (Kubernetes)"). Pure functions: no I/O, no clock, no
 * randomness (the callers bring the nonces, from getrandom). Used by the
 * agent (tcp_listener.c, the accepting side) and by the host relay
 * (egress/relay_tcp.c, the connecting side).
 *
 * Framing, all sizes fixed, before any HTTP byte:
 *   relay -> agent  HELLO  "SBAGTCP1" Nr                      8 + 32 bytes
 *   agent -> relay  REPLY  "SBAGTCP1" Na HMAC(K, "agent" Nr Na) 8 + 32 + 32
 *   relay -> agent  PROOF  HMAC(K, "relay" Nr Na)              32
 * K: the sandbox's 32-byte key; Nr, Na: 32 fresh random bytes of each side;
 * the role labels ("sandbox-agent tcp1 agent\0", "... relay\0") differ, so
 * that one side's proof is never the other's (no reflection), and each
 * proof covers both nonces (no replay). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#define TCP_KEY_LEN 32
#define TCP_KEY_HEX_LEN 64
#define TCP_NONCE_LEN 32
#define TCP_MAC_LEN 32
#define TCP_MAGIC "SBAGTCP1"
#define TCP_MAGIC_LEN 8
#define TCP_HELLO_LEN (TCP_MAGIC_LEN + TCP_NONCE_LEN)
#define TCP_REPLY_LEN (TCP_MAGIC_LEN + TCP_NONCE_LEN + TCP_MAC_LEN)
#define TCP_PROOF_LEN TCP_MAC_LEN

/* Exactly 64 lowercase hex digits (and the NUL) into key. 0 or -EINVAL. */
int tcp_key_parse(const char *hex, unsigned char key[TCP_KEY_LEN]);

/* "[ADDR:]PORT": ADDR an IPv4 literal or a bracketed IPv6 one ("[::1]:80");
 * without ADDR, every address (IPv6 "::", which also takes IPv4 where
 * the host allows). PORT 1..65535, decimal, no sign or leading zero.
 * 0 or -EINVAL. */
int tcp_listen_parse(const char *spec, struct sockaddr_storage *ss, socklen_t *len);

/* Equal n bytes, in time that depends on n only. */
bool tcp_equal(const unsigned char *a, const unsigned char *b, size_t n);

/* The relay's HELLO with its nonce. */
void tcp_hello_build(const unsigned char nr[TCP_NONCE_LEN], unsigned char out[TCP_HELLO_LEN]);
/* A HELLO's nonce, or -EINVAL (wrong magic). */
int tcp_hello_parse(const unsigned char in[TCP_HELLO_LEN], unsigned char nr[TCP_NONCE_LEN]);

/* The agent's REPLY to nonce nr, with its own nonce na. */
void tcp_reply_build(const unsigned char key[TCP_KEY_LEN], const unsigned char nr[TCP_NONCE_LEN],
                     const unsigned char na[TCP_NONCE_LEN], unsigned char out[TCP_REPLY_LEN]);
/* The relay checks a REPLY to its nonce nr: 0 and the agent's nonce into na
 * when it proves the key, else -EACCES (-EINVAL: wrong magic). */
int tcp_reply_check(const unsigned char key[TCP_KEY_LEN], const unsigned char nr[TCP_NONCE_LEN],
                    const unsigned char in[TCP_REPLY_LEN], unsigned char na[TCP_NONCE_LEN]);

/* The relay's PROOF for the nonces nr, na. */
void tcp_proof_build(const unsigned char key[TCP_KEY_LEN], const unsigned char nr[TCP_NONCE_LEN],
                     const unsigned char na[TCP_NONCE_LEN], unsigned char out[TCP_PROOF_LEN]);
/* The agent checks a PROOF: 0 when it proves the key, else -EACCES. */
int tcp_proof_check(const unsigned char key[TCP_KEY_LEN], const unsigned char nr[TCP_NONCE_LEN],
                    const unsigned char na[TCP_NONCE_LEN], const unsigned char in[TCP_PROOF_LEN]);
