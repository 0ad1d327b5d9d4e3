/* snapshot_store: see snapshot_store.h. */
#include "sandbox/snapshot_store.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/lua_scripts.h"
#include "sandbox/snapshot_reply.h"

static void copy_state(const redisReply *rep, char *ret_state)
{
        if (ret_state)
                snprintf(ret_state, SNAPSHOT_STATE_MAX, "%s",
                         rep->elements == 2 && reply_is_str(rep->element[1], NULL) ? rep->element[1]->str
                                                                             : "");
}

/* How long a snapshot may stay Creating: a commit is bounded by the
 * timeout; a little more for its bookkeeping. */
static int stale_ms(const struct broker_config *cfg)
{
        return cfg->snapshot_timeout_ms + 30000;
}

int snapshot_store_begin(struct redis_conn *rc, const struct broker_config *cfg, const char *id,
                         const char *tenant, const char *sid, const char *name, char *ret_state,
                         long long *ret_n)
{
        char image[SNAPSHOT_IMAGE_MAX], max[16];
        redisReply *rep = NULL;
        int r;

        if (snapshot_image_name(id, image, sizeof(image)) < 0)
                return -EINVAL;
        snprintf(max, sizeof(max), "%d", cfg->snapshot_max_per_tenant);
        const char *argv[] = { id, tenant, sid, name, image, max };
        r = redis_conn_script_tagged(rc, LUA_SNAPSHOT_BEGIN, 6, argv, &rep);
        if (r < 0)
                return r;
        if (reply_is_str(rep->element[0], "ok")) {
                r = 0;
        } else if (reply_is_str(rep->element[0], "nosandbox")) {
                r = -ENOENT;
        } else if (reply_is_str(rep->element[0], "state")) {
                copy_state(rep, ret_state);
                r = -EBUSY;
        } else if (reply_is_str(rep->element[0], "limit") && rep->elements == 2 &&
                   rep->element[1]->type == REDIS_REPLY_INTEGER) {
                *ret_n = rep->element[1]->integer;
                r = -EDQUOT;
        } else {
                r = -EPROTO;
        }
        reply_free(rep);
        return r;
}

/* from -> to (to "-": drop the record); tenant "" = any. -ENOENT, -EBUSY. */
static int set_state(struct redis_conn *rc, const char *id, const char *tenant, const char *from,
                     const char *to, const char *reason, const char *message, const char *size)
{
        const char *argv[] = { id, tenant, from, to, reason, message, size };
        redisReply *rep = NULL;
        int r = redis_conn_script_tagged(rc, LUA_SNAPSHOT_STATE, 7, argv, &rep);

        if (r < 0)
                return r;
        r = reply_is_str(rep->element[0], "ok")         ? 0
            : reply_is_str(rep->element[0], "notfound") ? -ENOENT
                                                  : -EBUSY;
        reply_free(rep);
        return r;
}

int snapshot_store_commit(struct redis_conn *rc, struct provider *pv,
                          const struct broker_config *cfg, const char *id, char *err)
{
        char key[160], perr[PROVIDER_ERR_MAX] = "", ignored[PROVIDER_ERR_MAX], msg[SNAPSHOT_ERR_MAX];
        char size_s[24];
        redisReply *rec = NULL;
        const char *ref, *sid, *tenant, *image;
        int64_t size = 0;
        int r;

        snprintf(key, sizeof(key), "%ssnapshot:%s", cfg->key_prefix, id);
        const char *argv[] = { "HGETALL", key };
        r = redis_conn_command(rc, 2, argv, &rec);
        if (r < 0)
                return r;
        ref = reply_hash_get(rec, "ref");
        sid = reply_hash_get(rec, "sandboxId");
        tenant = reply_hash_get(rec, "tenant");
        image = reply_hash_get(rec, "image");
        if (!ref || !sid || !tenant || !image) {
                snprintf(err, SNAPSHOT_ERR_MAX, "snapshot %s has no record", id);
                r = -ENOENT;
                goto out;
        }
        struct snapshot_spec spec = { .image = image,
                                      .snapshot_id = id,
                                      .sandbox_id = sid,
                                      .tenant = tenant,
                                      .key_prefix = cfg->key_prefix,
                                      .timeout_ms = cfg->snapshot_timeout_ms,
                                      .max_bytes = cfg->snapshot_max_bytes };
        r = provider_snapshot_create(pv, ref, &spec, &size, perr);
        if ((r == 0 && size > cfg->snapshot_max_bytes) || r == -EFBIG) {
                /* too large: nothing of it stays on the host (the backend
                 * may have refused before saving: -EFBIG) */
                if (r == 0)
                        (void)provider_snapshot_delete(pv, image, ignored);
                snprintf(msg, sizeof(msg),
                         "the snapshot would be %lld bytes, over the limit of %lld "
                         "(SNAPSHOT_MAX_BYTES); nothing of it was kept",
                         (long long)size, cfg->snapshot_max_bytes);
                r = -EFBIG;
                (void)set_state(rc, id, "", "Creating", "Failed", "snapshot_too_large", msg, "");
        } else if (r < 0) {
                if (r == -ETIMEDOUT)
                        (void)provider_snapshot_delete(pv, image, ignored); /* it may still land */
                snprintf(msg, sizeof(msg), "%s",
                         perr[0] ? perr : "the provider could not save the sandbox");
                (void)set_state(rc, id, "", "Creating", "Failed", "snapshot_capture_failed", msg, "");
        } else {
                snprintf(size_s, sizeof(size_s), "%lld", (long long)size);
                r = set_state(rc, id, "", "Creating", "Ready", "snapshot_ready", "", size_s);
                if (r < 0) {
                        /* the record moved on (it read as lost): the image is nobody's */
                        (void)provider_snapshot_delete(pv, image, ignored);
                        snprintf(msg, sizeof(msg), "the snapshot record changed while it was saved");
                }
        }
        if (r < 0)
                snprintf(err, SNAPSHOT_ERR_MAX, "%s", msg);
out:
        reply_free(rec);
        return r;
}

/* The record of tenant's snapshot id into *ret (flat HGETALL array, the
 * caller's to free). -ENOENT. */
static int record_get(struct redis_conn *rc, const struct broker_config *cfg, const char *id,
                      const char *tenant, redisReply **ret)
{
        char stale[16];
        redisReply *rep = NULL;
        int r;

        *ret = NULL;
        snprintf(stale, sizeof(stale), "%d", stale_ms(cfg));
        const char *argv[] = { id, tenant, stale };
        r = redis_conn_script_tagged(rc, LUA_SNAPSHOT_GET, 3, argv, &rep);
        if (r < 0)
                return r;
        if (reply_is_str(rep->element[0], "ok") && rep->elements == 2 &&
            rep->element[1]->type == REDIS_REPLY_ARRAY) {
                *ret = rep->element[1];
                rep->element[1] = NULL; /* handed out */
                rep->elements = 1;
        } else {
                r = reply_is_str(rep->element[0], "notfound") ? -ENOENT : -EPROTO;
        }
        reply_free(rep);
        return r;
}

int snapshot_store_get(struct redis_conn *rc, const struct broker_config *cfg, const char *id,
                       const char *tenant, struct json_object **ret)
{
        redisReply *rec = NULL;
        int r = record_get(rc, cfg, id, tenant, &rec);

        *ret = NULL;
        if (r == 0 && snapshot_json(rec, ret) < 0)
                r = -EPROTO; /* a record snapshot_get.lua found: not "no snapshot" */
        reply_free(rec);
        return r;
}

int snapshot_store_image(struct redis_conn *rc, const struct broker_config *cfg, const char *id,
                         const char *tenant, char *image, char *ret_state)
{
        redisReply *rec = NULL;
        const char *st, *im;
        int r = record_get(rc, cfg, id, tenant, &rec);

        if (r < 0)
                return r;
        st = reply_hash_get(rec, "state");
        im = reply_hash_get(rec, "image");
        snprintf(ret_state, SNAPSHOT_STATE_MAX, "%s", st ? st : "");
        if (!st || strcmp(st, "Ready") != 0 || !im || strlen(im) >= SNAPSHOT_IMAGE_MAX)
                r = -EBUSY;
        else
                strcpy(image, im);
        reply_free(rec);
        return r;
}

int snapshot_store_list(struct redis_conn *rc, const char *tenant, long page, long size,
                        const char *sid, const char *name, const char *const *states, int n,
                        long long *ret_total, struct json_object **ret_items)
{
        const char *argv[6 + 8];
        char pg[24], sz[24], ns[8];
        redisReply *rep = NULL;
        struct json_object *items = NULL;
        int argc = 0, r;

        *ret_total = 0;
        *ret_items = NULL;
        if (n < 0 || n > 8)
                return -EINVAL;
        snprintf(pg, sizeof(pg), "%ld", page);
        snprintf(sz, sizeof(sz), "%ld", size);
        snprintf(ns, sizeof(ns), "%d", n);
        argv[argc++] = tenant;
        argv[argc++] = pg;
        argv[argc++] = sz;
        argv[argc++] = sid;
        argv[argc++] = name;
        argv[argc++] = ns;
        for (int i = 0; i < n; i++)
                argv[argc++] = states[i];
        r = redis_conn_script(rc, LUA_SNAPSHOT_LIST, argc, argv, &rep);
        if (r < 0)
                return r;
        r = -EPROTO;
        if (rep->type != REDIS_REPLY_ARRAY || rep->elements < 1 ||
            rep->element[0]->type != REDIS_REPLY_INTEGER)
                goto out;
        r = -ENOMEM;
        items = json_object_new_array();
        if (!items)
                goto out;
        for (size_t i = 1; i < rep->elements; i++) {
                struct json_object *o;
                /* a record that does not render is left out of the page */
                if (snapshot_json(rep->element[i], &o) == 0 && json_object_array_add(items, o) < 0) {
                        json_object_put(o);
                        goto out;
                }
        }
        *ret_total = rep->element[0]->integer;
        *ret_items = items;
        items = NULL;
        r = 0;
out:
        json_object_put(items);
        reply_free(rep);
        return r;
}

int snapshot_store_delete(struct redis_conn *rc, struct provider *pv, const struct broker_config *cfg,
                          const char *id, const char *tenant, char *ret_state, char *err)
{
        char perr[PROVIDER_ERR_MAX] = "";
        redisReply *rec = NULL;
        const char *st, *im;
        int r = record_get(rc, cfg, id, tenant, &rec);

        if (r < 0)
                return r;
        st = reply_hash_get(rec, "state");
        im = reply_hash_get(rec, "image");
        snprintf(ret_state, SNAPSHOT_STATE_MAX, "%s", st ? st : "");
        if (!st || !im) {
                r = -EPROTO;
                goto out;
        }
        if (strcmp(st, "Failed") == 0) {
                /* no image was kept */
                r = set_state(rc, id, tenant, "Failed", "-", "", "", "");
                goto out;
        }
        /* Deleting: a delete that did not finish (its handler died) is
         * taken up again; removing the image twice is harmless */
        if (strcmp(st, "Ready") != 0 && strcmp(st, "Deleting") != 0) {
                r = -EBUSY;
                goto out;
        }
        if (strcmp(st, "Ready") == 0) {
                r = set_state(rc, id, tenant, "Ready", "Deleting", "snapshot_deleting",
                              "removing the image", "");
                if (r < 0)
                        goto out;
        }
        r = provider_snapshot_delete(pv, im, perr);
        if (r < 0 && r != -ENOENT) {
                snprintf(err, SNAPSHOT_ERR_MAX, "%s", perr);
                (void)set_state(rc, id, tenant, "Deleting", "Ready", "snapshot_ready", "", "");
                if (r == -EBUSY)
                        r = -EREMOTEIO; /* the backend's conflict, not the snapshot's state */
                goto out;
        }
        r = set_state(rc, id, tenant, "Deleting", "-", "", "", "");
        if (r == -ENOENT)
                r = 0; /* a concurrent delete finished it: gone either way */
out:
        if (r == -EBUSY && st && strcmp(st, "Ready") == 0)
                snprintf(ret_state, SNAPSHOT_STATE_MAX, "Deleting"); /* another delete won */
        reply_free(rec);
        return r;
}

/* The images listed, by the snapshot ids on them. */
struct reap_list {
        struct snapshot_image *items;
        size_t len, cap;
        bool oom;
};

static void reap_collect(void *ud, const struct snapshot_image *im)
{
        struct reap_list *l = ud;
        char name[SNAPSHOT_IMAGE_MAX];

        /* only what the broker makes: its id on it, and no name but the
         * one the broker gave it (an image pulled with our labels on it is
         * not a snapshot's) */
        if (!snapshot_id_valid(im->snapshot_id) || snapshot_image_name(im->snapshot_id, name, sizeof(name)) < 0 ||
            (im->names && (im->names != 1 || strcmp(im->name, name) != 0)))
                return;
        if (l->len == l->cap) {
                /* as many as the provider's answer holds (its size is capped) */
                size_t cap = l->cap ? 2 * l->cap : 32;
                struct snapshot_image *n = realloc(l->items, cap * sizeof(*n));
                if (!n) {
                        l->oom = true;
                        return;
                }
                l->items = n;
                l->cap = cap;
        }
        l->items[l->len++] = *im;
}

int snapshot_store_reap(struct redis_conn *rc, struct provider *pv, const struct broker_config *cfg,
                        int *ret_removed, char *err)
{
        struct reap_list l = { 0 };
        char stale[16], perr[PROVIDER_ERR_MAX];
        int r;

        *ret_removed = 0;
        err[0] = '\0';
        if (!provider_can_snapshot(pv))
                return 0;
        r = provider_snapshot_list(pv, cfg->key_prefix, reap_collect, &l, perr);
        if (r == -EOPNOTSUPP) {
                r = 0;
                goto out;
        }
        if (r < 0 || l.oom) {
                snprintf(err, SNAPSHOT_ERR_MAX, "%s", r < 0 ? perr : "out of memory");
                r = r < 0 ? r : -ENOMEM;
                goto out;
        }
        snprintf(stale, sizeof(stale), "%d", stale_ms(cfg));
        for (size_t first = 0; first < l.len; first += SNAPSHOT_REAP_BATCH) {
                const char *argv[1 + SNAPSHOT_REAP_BATCH];
                size_t n = l.len - first < SNAPSHOT_REAP_BATCH ? l.len - first : SNAPSHOT_REAP_BATCH;
                redisReply *rep = NULL;

                argv[0] = stale;
                for (size_t i = 0; i < n; i++)
                        argv[1 + i] = l.items[first + i].snapshot_id;
                r = redis_conn_script(rc, LUA_SNAPSHOT_REAP, (int)(1 + n), argv, &rep);
                if (r < 0)
                        goto out;
                if (rep->type != REDIS_REPLY_ARRAY || rep->elements != n) {
                        reply_free(rep);
                        r = -EPROTO;
                        goto out;
                }
                for (size_t i = 0; i < n; i++) {
                        if (!reply_is_str(rep->element[i], "remove"))
                                continue;
                        /* not forced: an image a sandbox still runs from stays
                         * (-EBUSY) until that sandbox is gone */
                        r = provider_snapshot_prune(pv, l.items[first + i].id, perr);
                        if (r == 0 || r == -ENOENT)
                                (*ret_removed)++;
                }
                reply_free(rep);
        }
        r = 0;
out:
        free(l.items);
        return r;
}
