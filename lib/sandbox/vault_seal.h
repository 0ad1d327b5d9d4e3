/* vault_seal: the Credential Vault's values encrypted at rest (AES-256-GCM,
 * OpenSSL's libcrypto) with the deployment's key, VAULT_KEY_FILE
 * (docs/CONFIGURATION.md): a file of 64 hexadecimal digits (32 bytes), an
 * optional newline, readable by its owner only.
 *
 * A sealed value is "v1:" + base64(nonce[12] || ciphertext || tag[16]), the
 * nonce random per sealing; the additional data is "<sandbox id>/<credential
 * name>", so a sealed value copied into another sandbox's record or under
 * another name does not open. No function logs or keeps a value. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>

#define VAULT_KEY_BYTES 32

/* Read the key file at path into key. -EINVAL with a message in err (not
 * a regular file, readable by group or others, not 64 hex digits), or the
 * open/read errno. The key bytes are never put into err. */
int vault_key_load(const char *path, uint8_t key[VAULT_KEY_BYTES], char *err, size_t errlen);

/* Seal value for (sid, name); *ret malloc'd. 0, -ENOMEM, -EIO (libcrypto). */
int vault_seal(const uint8_t key[VAULT_KEY_BYTES], const char *sid, const char *name,
               const char *value, char **ret);

/* Open a sealed value of (sid, name); *ret malloc'd, NUL-terminated (the
 * caller clears and frees it). -EBADMSG: not a sealed value of this key,
 * sandbox and name (tampered, moved, another key). */
int vault_unseal(const uint8_t key[VAULT_KEY_BYTES], const char *sid, const char *name,
                 const char *sealed, char **ret);

/* Replace every credential's "value" of the stored form v by its "sealed"
 * form (credentials already sealed are left as they are). 0, -ENOMEM, -EIO. */
int vault_seal_values(struct json_object *v, const uint8_t key[VAULT_KEY_BYTES], const char *sid);
