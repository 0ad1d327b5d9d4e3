/* vault_seal: see vault_seal.h. */
#include "sandbox/vault_seal.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "codec/base64.h"
#include "core/json_input.h"
#include "codec/url.h"

#define SEAL_PREFIX "v1:"
#define NONCE_BYTES 12
#define TAG_BYTES 16
/* A sealed value: the cap on a value (vault.h) plus nonce and tag, as base64. */
#define SEALED_MAX 8192

int vault_key_load(const char *path, uint8_t key[VAULT_KEY_BYTES], char *err, size_t errlen)
{
        char buf[2 * VAULT_KEY_BYTES + 3];
        struct stat st;
        ssize_t n;
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW), r = 0;

        if (fd < 0) {
                r = -errno;
                snprintf(err, errlen, "VAULT_KEY_FILE %s: %s", path, strerror(-r));
                return r;
        }
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (st.st_mode & 077)) {
                snprintf(err, errlen,
                         "VAULT_KEY_FILE %s: must be a regular file readable by its owner only",
                         path);
                r = -EINVAL;
                goto out;
        }
        n = read(fd, buf, sizeof(buf));
        if (n > 0 && buf[n - 1] == '\n')
                n--;
        if (n != 2 * VAULT_KEY_BYTES) {
                snprintf(err, errlen, "VAULT_KEY_FILE %s: must hold 64 hexadecimal digits", path);
                r = -EINVAL;
                goto out;
        }
        for (int i = 0; i < VAULT_KEY_BYTES && r == 0; i++) {
                int hi = url_hex_digit((unsigned char)buf[2 * i]),
                    lo = url_hex_digit((unsigned char)buf[2 * i + 1]);

                if (hi < 0 || lo < 0) {
                        snprintf(err, errlen, "VAULT_KEY_FILE %s: must hold 64 hexadecimal digits",
                                 path);
                        r = -EINVAL;
                } else {
                        key[i] = (uint8_t)(hi << 4 | lo);
                }
        }
out:
        OPENSSL_cleanse(buf, sizeof(buf));
        if (r < 0)
                OPENSSL_cleanse(key, VAULT_KEY_BYTES);
        close(fd);
        return r;
}

/* The additional data: "<sid>/<name>" into buf. */
static int aad_of(const char *sid, const char *name, char *buf, size_t size)
{
        int n = snprintf(buf, size, "%s/%s", sid, name);

        return n < 0 || (size_t)n >= size ? -EINVAL : n;
}

/* AES-256-GCM in one direction; out gets inlen bytes. */
static int gcm(bool enc, const uint8_t key[VAULT_KEY_BYTES], const uint8_t *nonce, const char *aad,
               int aadlen, const uint8_t *in, int inlen, uint8_t *out, uint8_t *tag)
{
        EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
        int n = 0, ok;

        if (!ctx)
                return -ENOMEM;
        ok = (enc ? EVP_EncryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, key, nonce)
                  : EVP_DecryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, key, nonce)) == 1 &&
             EVP_CipherUpdate(ctx, NULL, &n, (const uint8_t *)aad, aadlen) == 1 &&
             (inlen == 0 || EVP_CipherUpdate(ctx, out, &n, in, inlen) == 1) &&
             (enc || EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, TAG_BYTES, tag) == 1) &&
             EVP_CipherFinal_ex(ctx, out + n, &n) == 1 &&
             (!enc || EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, TAG_BYTES, tag) == 1);
        EVP_CIPHER_CTX_free(ctx);
        return ok ? 0 : enc ? -EIO : -EBADMSG;
}

int vault_seal(const uint8_t key[VAULT_KEY_BYTES], const char *sid, const char *name,
               const char *value, char **ret)
{
        char aad[256], *b64 = NULL;
        size_t len = strlen(value);
        uint8_t *buf;
        int alen = aad_of(sid, name, aad, sizeof(aad)), r;

        *ret = NULL;
        if (alen < 0 || len > SEALED_MAX)
                return -EINVAL;
        if (!(buf = malloc(NONCE_BYTES + len + TAG_BYTES)))
                return -ENOMEM;
        r = RAND_bytes(buf, NONCE_BYTES) == 1 ? 0 : -EIO;
        if (r == 0)
                r = gcm(true, key, buf, aad, alen, (const uint8_t *)value, (int)len,
                        buf + NONCE_BYTES, buf + NONCE_BYTES + len);
        if (r == 0)
                r = base64_encode(buf, NONCE_BYTES + len + TAG_BYTES, &b64);
        OPENSSL_cleanse(buf, NONCE_BYTES + len + TAG_BYTES);
        free(buf);
        if (r == 0 && !(*ret = malloc(strlen(SEAL_PREFIX) + strlen(b64) + 1)))
                r = -ENOMEM;
        if (r == 0)
                sprintf(*ret, SEAL_PREFIX "%s", b64);
        free(b64);
        return r;
}

int vault_unseal(const uint8_t key[VAULT_KEY_BYTES], const char *sid, const char *name,
                 const char *sealed, char **ret)
{
        char aad[256];
        void *raw = NULL;
        size_t n = 0, plen = strlen(SEAL_PREFIX);
        int alen = aad_of(sid, name, aad, sizeof(aad)), r;
        char *out;

        *ret = NULL;
        if (alen < 0 || strncmp(sealed, SEAL_PREFIX, plen) ||
            base64_decode(sealed + plen, strlen(sealed + plen), SEALED_MAX, &raw, &n) < 0 ||
            n < NONCE_BYTES + TAG_BYTES) {
                free(raw);
                return -EBADMSG;
        }
        n -= NONCE_BYTES + TAG_BYTES;
        if (!(out = malloc(n + 1))) {
                free(raw);
                return -ENOMEM;
        }
        r = gcm(false, key, raw, aad, alen, (const uint8_t *)raw + NONCE_BYTES, (int)n,
                (uint8_t *)out, (uint8_t *)raw + NONCE_BYTES + n);
        free(raw);
        if (r < 0 || memchr(out, '\0', n)) {
                OPENSSL_cleanse(out, n);
                free(out);
                return -EBADMSG;
        }
        out[n] = '\0';
        *ret = out;
        return 0;
}

int vault_seal_values(struct json_object *v, const uint8_t key[VAULT_KEY_BYTES], const char *sid)
{
        struct json_object *creds;

        if (!json_object_object_get_ex(v, "credentials", &creds))
                return 0;
        for (size_t i = 0; i < json_object_array_length(creds); i++) {
                struct json_object *c = json_object_array_get_idx(creds, i);
                const char *value = json_get_str(c, "value"), *name = json_get_str(c, "name");
                char *sealed = NULL;
                int r;

                if (!value || !name)
                        continue;
                if ((r = vault_seal(key, sid, name, value, &sealed)) < 0)
                        return r;
                if (json_add_str(c, "sealed", sealed) < 0) {
                        free(sealed);
                        return -ENOMEM;
                }
                free(sealed);
                json_object_object_del(c, "value");
        }
        return 0;
}
