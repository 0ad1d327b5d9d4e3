/* digest: see digest.h. */
#include "codec/digest.h"

#include <errno.h>
#include <openssl/evp.h>

int digest_sha256_hex(const void *data, size_t len, char out[DIGEST_HEX_MAX])
{
        static const char digits[] = "0123456789abcdef";
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned int n = 0;

        if (!EVP_Digest(data, len, md, &n, EVP_sha256(), NULL) || n != 32)
                return -ENOMEM;
        for (unsigned int i = 0; i < n; i++) {
                out[2 * i] = digits[md[i] >> 4];
                out[2 * i + 1] = digits[md[i] & 15];
        }
        out[2 * n] = '\0';
        return 0;
}
