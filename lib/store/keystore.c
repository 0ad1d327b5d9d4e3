/* keystore: see keystore.h. */
#include "store/keystore.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "core/json_input.h"

/* The tag of a script's {'tag', ...} reply with exactly n elements. */
static bool reply_tagged(const redisReply *r, const char *tag, size_t n)
{
        return r && r->type == REDIS_REPLY_ARRAY && r->elements == n &&
               reply_is_str(r->element[0], tag);
}

/* A non-negative integer reply or decimal string; -1 for "" or nil;
 * -2 for anything else. */
static long long reply_count(const redisReply *r)
{
        char *end;
        long long v;

        if (r && r->type == REDIS_REPLY_INTEGER)
                return r->integer >= 0 ? r->integer : -2;
        if (r && r->type == REDIS_REPLY_NIL)
                return -1;
        if (!reply_is_str(r, NULL))
                return -2;
        if (r->len == 0)
                return -1;
        if (r->str[0] < '0' || r->str[0] > '9')
                return -2;
        errno = 0;
        v = strtoll(r->str, &end, 10);
        return *end || errno ? -2 : v;
}

static int copy_str(const redisReply *r, char *buf, size_t size)
{
        if (!reply_is_str(r, NULL) || r->len >= size || strlen(r->str) != r->len)
                return -EPROTO;
        memcpy(buf, r->str, r->len + 1);
        return 0;
}

static int copy_flag(const redisReply *r, bool *ret)
{
        if (reply_is_str(r, "1"))
                *ret = true;
        else if (reply_is_str(r, "0"))
                *ret = false;
        else
                return -EPROTO;
        return 0;
}

bool keystore_id_valid(const char *s)
{
        if (!s || strlen(s) != KEYSTORE_ID_LEN)
                return false;
        for (; *s; s++)
                if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
                        return false;
        return true;
}

static bool cap_valid(long long v)
{
        return v == KEYSTORE_CAP_KEEP || v == KEYSTORE_CAP_DEFAULT ||
               (v >= 0 && v <= KEYSTORE_CAP_MAX);
}

static bool disk_cap_valid(long long v)
{
        return v == KEYSTORE_CAP_KEEP || v == KEYSTORE_CAP_DEFAULT ||
               (v >= CONFIG_DISK_MIN_MB && v <= CONFIG_DISK_MAX_MB);
}

static void cap_arg(long long v, char *buf, size_t size)
{
        if (v == KEYSTORE_CAP_KEEP)
                buf[0] = '\0';
        else if (v == KEYSTORE_CAP_DEFAULT)
                snprintf(buf, size, "default");
        else
                snprintf(buf, size, "%lld", v);
}

int keystore_tenant_set(struct redis_conn *c, const char *tenant, enum keystore_tenant_op op,
                        long long max_slots, long long max_sandboxes, long long max_disk_mb)
{
        char slots[24], sandboxes[24], disk[24];
        redisReply *rep = NULL;
        int r;

        if (!json_input_id_valid(tenant) || !cap_valid(max_slots) || !cap_valid(max_sandboxes) ||
            !disk_cap_valid(max_disk_mb) ||
            (op != KEYSTORE_TENANT_CREATE && op != KEYSTORE_TENANT_UPDATE))
                return -EINVAL;
        cap_arg(max_slots, slots, sizeof(slots));
        cap_arg(max_sandboxes, sandboxes, sizeof(sandboxes));
        cap_arg(max_disk_mb, disk, sizeof(disk));
        const char *argv[] = { tenant, op == KEYSTORE_TENANT_CREATE ? "create" : "update", slots,
                               sandboxes, disk };
        r = redis_conn_script(c, LUA_TENANT_SET, 5, argv, &rep);
        if (r < 0)
                return r;
        if (reply_tagged(rep, "created", 1) || reply_tagged(rep, "updated", 1))
                r = 0;
        else if (reply_tagged(rep, "exists", 1))
                r = -EEXIST;
        else if (reply_tagged(rep, "notfound", 1))
                r = -ENOENT;
        else
                r = -EPROTO;
        reply_free(rep);
        return r;
}

/* One row of tenant_list: {tenant, maxSlots, maxSandboxes, createdAt, liveKeys,
 * maxDiskMb}. */
static int tenant_from_row(const redisReply *row, struct keystore_tenant *t)
{
        int r;

        if (!row || row->type != REDIS_REPLY_ARRAY || row->elements != 6)
                return -EPROTO;
        r = copy_str(row->element[0], t->name, sizeof(t->name));
        if (r < 0)
                return r;
        t->max_slots = reply_count(row->element[1]);
        t->max_sandboxes = reply_count(row->element[2]);
        t->created_at_ms = reply_count(row->element[3]);
        t->live_keys = reply_count(row->element[4]);
        t->max_disk_mb = reply_count(row->element[5]);
        if (t->max_slots < -1 || t->max_sandboxes < -1 || t->created_at_ms < -1 ||
            t->live_keys < 0 || t->max_disk_mb < -1)
                return -EPROTO;
        return 0;
}

int keystore_tenant_list(struct redis_conn *c, struct keystore_tenant **ret, size_t *ret_n)
{
        struct keystore_tenant *v = NULL;
        redisReply *rep = NULL;
        int r;

        *ret = NULL;
        *ret_n = 0;
        r = redis_conn_script(c, LUA_TENANT_LIST, 0, NULL, &rep);
        if (r < 0)
                return r;
        if (rep->type != REDIS_REPLY_ARRAY) {
                r = -EPROTO;
                goto out;
        }
        if (rep->elements > 0) {
                v = calloc(rep->elements, sizeof(*v));
                if (!v) {
                        r = -ENOMEM;
                        goto out;
                }
        }
        for (size_t i = 0; i < rep->elements; i++) {
                r = tenant_from_row(rep->element[i], &v[i]);
                if (r < 0)
                        goto out;
        }
        *ret = v;
        *ret_n = rep->elements;
        v = NULL;
out:
        free(v);
        reply_free(rep);
        return r;
}

/* Map the answer of key_create or key_rotate into *k; expect_id is the id
 * of the hash that was sent, which the stored record must have. */
static int key_from_created(const redisReply *rep, const char *expect_id, struct keystore_key *k)
{
        int r;

        /* key_create: {'created', id, createdAt} (tenant, name, admin: the caller's);
         * key_rotate: {'rotated', id, tenant, name, admin, createdAt} */
        if (reply_tagged(rep, "created", 3)) {
                r = copy_str(rep->element[1], k->id, sizeof(k->id));
                k->created_at_ms = reply_count(rep->element[2]);
        } else if (reply_tagged(rep, "rotated", 6)) {
                r = copy_str(rep->element[1], k->id, sizeof(k->id));
                if (r == 0)
                        r = copy_str(rep->element[2], k->tenant, sizeof(k->tenant));
                if (r == 0)
                        r = copy_str(rep->element[3], k->name, sizeof(k->name));
                if (r == 0)
                        r = copy_flag(rep->element[4], &k->admin);
                k->created_at_ms = reply_count(rep->element[5]);
        } else if (reply_tagged(rep, "notenant", 1) || reply_tagged(rep, "notfound", 1)) {
                return -ENOENT;
        } else if (reply_tagged(rep, "collision", 1)) {
                return -EEXIST;
        } else if (reply_tagged(rep, "revoked", 1)) {
                return -EKEYREVOKED;
        } else {
                return -EPROTO;
        }
        if (r == 0 && (strcmp(k->id, expect_id) != 0 || k->created_at_ms < 0))
                r = -EPROTO;
        return r;
}

/* The hash of key and its id (hash_hex: 65 bytes, id: KEYSTORE_ID_LEN + 1). */
static int key_hash_id(const char *key, char *hash_hex, char *id)
{
        int r;

        if (!key || !auth_key_well_formed(key))
                return -EINVAL;
        r = auth_key_hash(key, hash_hex);
        if (r < 0)
                return r;
        if (strlen(hash_hex) != 64)
                return -EPROTO;
        memcpy(id, hash_hex, KEYSTORE_ID_LEN);
        id[KEYSTORE_ID_LEN] = '\0';
        return 0;
}

int keystore_key_add(struct redis_conn *c, const char *key, const char *tenant, const char *name,
                     bool admin, bool create_tenant, struct keystore_key *ret_key)
{
        struct keystore_key k = { .revoked_at_ms = -1 };
        char hash[65], id[KEYSTORE_ID_LEN + 1];
        redisReply *rep = NULL;
        int r;

        if (!name)
                name = "";
        if (!json_input_id_valid(tenant) || (*name && !json_input_id_valid(name)))
                return -EINVAL;
        r = key_hash_id(key, hash, id);
        if (r < 0)
                return r;
        const char *argv[] = { hash, tenant, name, admin ? "1" : "0", create_tenant ? "1" : "0" };
        r = redis_conn_script(c, LUA_KEY_CREATE, 5, argv, &rep);
        if (r < 0)
                return r;
        r = key_from_created(rep, id, &k);
        reply_free(rep);
        if (r < 0)
                return r;
        /* the script stored what it was given: tenant and name are valid ids */
        snprintf(k.tenant, sizeof(k.tenant), "%s", tenant);
        snprintf(k.name, sizeof(k.name), "%s", name);
        k.admin = admin;
        if (ret_key)
                *ret_key = k;
        return 0;
}

int keystore_key_create(struct redis_conn *c, const char *tenant, const char *name, bool admin,
                        bool create_tenant, char ret_secret[AUTH_KEY_MAX],
                        struct keystore_key *ret_key)
{
        int r;

        memset(ret_secret, 0, AUTH_KEY_MAX);
        if (!json_input_id_valid(tenant) || (name && *name && !json_input_id_valid(name)))
                return -EINVAL;
        r = auth_key_generate(ret_secret);
        if (r == 0)
                r = keystore_key_add(c, ret_secret, tenant, name, admin, create_tenant, ret_key);
        if (r < 0)
                explicit_bzero(ret_secret, AUTH_KEY_MAX);
        return r;
}

/* The revoke and rotate scripts PUBLISH the old key's hash to every
 * handler's key cache (auth_cache.h), which applies whatever is on its
 * subscription socket before it trusts an entry. Redis writes the script's
 * answer and the subscribers' messages in the same pass of its event loop,
 * the answer first: a caller that went on at once could have its next
 * request checked before the message reached a handler (seen when the box
 * is loaded). Redis answers a later command only after that pass, so once a
 * PING is answered every subscriber's socket holds the message: the key is
 * refused from the caller's next request on. */
static int publish_delivered(struct redis_conn *c)
{
        return redis_conn_ping(c) < 0 ? -EIO : 0;
}

int keystore_key_revoke(struct redis_conn *c, const char *id, enum keystore_revoke_result *ret_result)
{
        redisReply *rep = NULL;
        int r;

        if (!keystore_id_valid(id))
                return -EINVAL;
        const char *argv[] = { id };
        r = redis_conn_script(c, LUA_KEY_REVOKE, 1, argv, &rep);
        if (r < 0)
                return r;
        if (reply_tagged(rep, "revoked", 2) && reply_is_str(rep->element[1], NULL))
                *ret_result = KEYSTORE_REVOKED;
        else if (reply_tagged(rep, "already", 2) && reply_is_str(rep->element[1], NULL))
                *ret_result = KEYSTORE_ALREADY_REVOKED;
        else if (reply_tagged(rep, "notfound", 1))
                r = -ENOENT;
        else
                r = -EPROTO;
        reply_free(rep);
        if (r == 0 && *ret_result == KEYSTORE_REVOKED)
                r = publish_delivered(c);
        return r;
}

int keystore_key_rotate(struct redis_conn *c, const char *id, char ret_secret[AUTH_KEY_MAX],
                        struct keystore_key *ret_key)
{
        struct keystore_key k = { .revoked_at_ms = -1 };
        char hash[65], new_id[KEYSTORE_ID_LEN + 1];
        redisReply *rep = NULL;
        int r;

        memset(ret_secret, 0, AUTH_KEY_MAX);
        if (!keystore_id_valid(id))
                return -EINVAL;
        r = auth_key_generate(ret_secret);
        if (r == 0)
                r = key_hash_id(ret_secret, hash, new_id);
        if (r < 0)
                goto out;
        const char *argv[] = { id, hash };
        r = redis_conn_script(c, LUA_KEY_ROTATE, 2, argv, &rep);
        if (r < 0)
                goto out;
        r = key_from_created(rep, new_id, &k);
        /* only 'rotated' carries the tenant: 'created' here is a wrong reply */
        if (r == 0 && !k.tenant[0])
                r = -EPROTO;
        if (r == 0)
                r = publish_delivered(c);
        if (r == 0 && ret_key)
                *ret_key = k;
out:
        reply_free(rep);
        if (r < 0)
                explicit_bzero(ret_secret, AUTH_KEY_MAX);
        return r;
}

/* One row of key_list: {id, tenant, name, admin, createdAt, revoked, revokedAt}. */
static int key_from_row(const redisReply *row, struct keystore_key *k)
{
        int r;

        if (!row || row->type != REDIS_REPLY_ARRAY || row->elements != 7)
                return -EPROTO;
        r = copy_str(row->element[0], k->id, sizeof(k->id));
        if (r == 0 && !keystore_id_valid(k->id))
                r = -EPROTO;
        if (r == 0)
                r = copy_str(row->element[1], k->tenant, sizeof(k->tenant));
        if (r == 0)
                r = copy_str(row->element[2], k->name, sizeof(k->name));
        if (r == 0)
                r = copy_flag(row->element[3], &k->admin);
        if (r == 0)
                r = copy_flag(row->element[5], &k->revoked);
        if (r < 0)
                return r;
        k->created_at_ms = reply_count(row->element[4]);
        k->revoked_at_ms = reply_count(row->element[6]);
        if (k->created_at_ms < -1 || k->revoked_at_ms < -1)
                return -EPROTO;
        return 0;
}

int keystore_key_list(struct redis_conn *c, const char *tenant, struct keystore_key **ret,
                      size_t *ret_n)
{
        struct keystore_key *v = NULL;
        redisReply *rep = NULL;
        int r;

        *ret = NULL;
        *ret_n = 0;
        if (!tenant)
                tenant = "";
        if (*tenant && !json_input_id_valid(tenant))
                return -EINVAL;
        const char *argv[] = { tenant };
        r = redis_conn_script(c, LUA_KEY_LIST, 1, argv, &rep);
        if (r < 0)
                return r;
        if (rep->type != REDIS_REPLY_ARRAY) {
                r = -EPROTO;
                goto out;
        }
        if (rep->elements > 0) {
                v = calloc(rep->elements, sizeof(*v));
                if (!v) {
                        r = -ENOMEM;
                        goto out;
                }
        }
        for (size_t i = 0; i < rep->elements; i++) {
                r = key_from_row(rep->element[i], &v[i]);
                if (r < 0)
                        goto out;
        }
        *ret = v;
        *ret_n = rep->elements;
        v = NULL;
out:
        free(v);
        reply_free(rep);
        return r;
}
