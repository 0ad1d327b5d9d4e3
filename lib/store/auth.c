/* auth: see auth.h. */
#include "store/auth.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <openssl/crypto.h>

#include "store/auth_cache.h"
#include "codec/digest.h"
#include "core/json_input.h"
#include "store/lua_scripts.h"

static void hex_encode(const unsigned char *raw, size_t n, char *out)
{
        static const char digits[] = "0123456789abcdef";

        for (size_t i = 0; i < n; i++) {
                out[2 * i] = digits[raw[i] >> 4];
                out[2 * i + 1] = digits[raw[i] & 15];
        }
        out[2 * n] = '\0';
}

int auth_key_hash(const char *key, char out[65])
{
        if (!key)
                return -EINVAL;
        return digest_sha256_hex(key, strlen(key), out);
}

int auth_key_generate(char out[AUTH_KEY_MAX])
{
        unsigned char raw[24];
        size_t got = 0;

        while (got < sizeof(raw)) {
                ssize_t r = getrandom(raw + got, sizeof(raw) - got, 0);
                if (r < 0) {
                        if (errno == EINTR)
                                continue;
                        return -EIO;
                }
                got += (size_t)r;
        }
        memcpy(out, "sbk_", 4);
        hex_encode(raw, sizeof(raw), out + 4);
        explicit_bzero(raw, sizeof(raw));
        return 0;
}

bool auth_key_well_formed(const char *key)
{
        size_t n = key ? strlen(key) : 0;

        if (n == 0 || n > AUTH_KEY_LEN_MAX)
                return false;
        for (size_t i = 0; i < n; i++)
                if (key[i] <= ' ' || key[i] > '~')
                        return false;
        return true;
}

int auth_seed_tenant(const struct broker_config *cfg, const char *hash_hex, char *tenant)
{
        const char *p = cfg->osb_api_keys;
        char seed[AUTH_KEY_LEN_MAX + 1], h[65];
        int found = 0;

        tenant[0] = '\0';
        while (*p) {
                size_t n = strcspn(p, ","), klen = strcspn(p, ":");
                if (klen < n && klen <= AUTH_KEY_LEN_MAX && n - klen - 1 < AUTH_TENANT_MAX) {
                        memcpy(seed, p, klen);
                        seed[klen] = '\0';
                        /* every seed is hashed and compared; only the first
                         * match is remembered, without an early exit */
                        if (digest_sha256_hex(seed, klen, h) == 0 && CRYPTO_memcmp(h, hash_hex, 64) == 0 &&
                            !found) {
                                memcpy(tenant, p + klen + 1, n - klen - 1);
                                tenant[n - klen - 1] = '\0';
                                found = 1;
                        }
                }
                p += n;
                if (*p == ',')
                        p++;
        }
        explicit_bzero(seed, sizeof(seed));
        if (!found || !json_input_id_valid(tenant)) {
                tenant[0] = '\0';
                return -ENOENT;
        }
        return 0;
}

/* key_lookup.lua: {'ok', tenant, admin, id} | {'denied'} */
static int lookup_script(struct redis_conn *c, const char *hash, const char *seed_tenant,
                         struct auth_principal *ret)
{
        char id[17];
        redisReply *rep = NULL;
        int r;

        memcpy(id, hash, 16);
        id[16] = '\0';
        const char *argv[] = { hash, id, seed_tenant };
        r = redis_conn_script(c, LUA_KEY_LOOKUP, 3, argv, &rep);
        if (r < 0)
                return r;
        r = -EPROTO;
        if (rep->type != REDIS_REPLY_ARRAY || rep->elements < 1 ||
            rep->element[0]->type != REDIS_REPLY_STRING)
                goto out;
        if (strcmp(rep->element[0]->str, "denied") == 0) {
                r = -EACCES;
                goto out;
        }
        if (strcmp(rep->element[0]->str, "ok") || rep->elements != 4)
                goto out;
        for (int i = 1; i < 4; i++)
                if (rep->element[i]->type != REDIS_REPLY_STRING)
                        goto out;
        if (!ret) {
                r = 0;
                goto out;
        }
        if (rep->element[1]->len >= sizeof(ret->tenant) || !json_input_id_valid(rep->element[1]->str))
                goto out;
        memcpy(ret->tenant, rep->element[1]->str, rep->element[1]->len + 1);
        ret->admin = strcmp(rep->element[2]->str, "1") == 0;
        snprintf(ret->key_id, sizeof(ret->key_id), "%s", id);
        r = 0;
out:
        reply_free(rep);
        return r;
}

int auth_lookup(struct redis_conn *c, const struct broker_config *cfg, const char *key,
                struct auth_principal *ret)
{
        char hash[65], seed_tenant[AUTH_TENANT_MAX];
        uint64_t gen;
        int r;

        memset(ret, 0, sizeof(*ret));
        if (!auth_key_well_formed(key))
                return -EACCES;
        r = auth_key_hash(key, hash);
        if (r < 0)
                return r;
        if (auth_cache_get(hash, ret))
                return 0;
        gen = auth_cache_gen(); /* before the lookup: a revocation after it voids the put */
        (void)auth_seed_tenant(cfg, hash, seed_tenant); /* "" when not a seed */
        r = lookup_script(c, hash, seed_tenant, ret);
        if (r == 0)
                auth_cache_put(gen, hash, ret);
        return r;
}

int auth_seed_all(struct redis_conn *c, const struct broker_config *cfg)
{
        const char *p = cfg->osb_api_keys;
        char seed[AUTH_KEY_LEN_MAX + 1], tenant[AUTH_TENANT_MAX], hash[65];
        int n = 0, r = 0;

        while (*p) {
                size_t len = strcspn(p, ","), klen = strcspn(p, ":");
                if (klen < len && klen <= AUTH_KEY_LEN_MAX && len - klen - 1 < AUTH_TENANT_MAX) {
                        memcpy(seed, p, klen);
                        seed[klen] = '\0';
                        memcpy(tenant, p + klen + 1, len - klen - 1);
                        tenant[len - klen - 1] = '\0';
                        if (auth_key_well_formed(seed) && json_input_id_valid(tenant) &&
                            auth_key_hash(seed, hash) == 0) {
                                r = lookup_script(c, hash, tenant, NULL);
                                if (r == -EIO || r == -EPROTO)
                                        break;
                                n += r == 0;
                                r = 0;
                        }
                }
                p += len;
                if (*p == ',')
                        p++;
        }
        explicit_bzero(seed, sizeof(seed));
        return r < 0 ? r : n;
}
