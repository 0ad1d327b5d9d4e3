/* digest: SHA-256 as lowercase hex, for the values the broker keeps a
 * fingerprint of instead of the value (API keys, create bodies). */
#pragma once
#include <stddef.h>

#define DIGEST_HEX_MAX 65 /* 64 hex characters and the NUL */

/* SHA-256 of len bytes of data into out. 0, or -ENOMEM (libcrypto failed). */
int digest_sha256_hex(const void *data, size_t len, char out[DIGEST_HEX_MAX]);
