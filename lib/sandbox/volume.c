/* volume: see volume.h. */
#include "sandbox/volume.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <json-c/json.h>
#include <openssl/evp.h>

#include "core/json_input.h"

int volume_backend_name(const struct broker_config *cfg, const char *tenant, const char *name,
                        char *buf, size_t size)
{
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned int mdlen = 0;
        char *in = NULL, hex[17];
        int n;

        /* the key prefix too: two brokers on one dockerd share nothing */
        n = asprintf(&in, "%s\n%s", cfg->key_prefix, tenant);
        if (n < 0)
                return -ENOMEM;
        if (!EVP_Digest(in, (size_t)n, md, &mdlen, EVP_sha256(), NULL) || mdlen < 8) {
                free(in);
                return -ENOMEM;
        }
        free(in);
        for (int i = 0; i < 8; i++)
                snprintf(hex + 2 * i, 3, "%02x", md[i]);
        n = snprintf(buf, size, "sbv-%s-%s", hex, name);
        return n < 0 || (size_t)n >= size ? -EINVAL : 0;
}

/* ---- host paths ---- */

/* Resolve e's host path (joined with its subPath) under the allowlist:
 * the resolved directory into ret_path (PATH_MAX), whether writes are
 * allowed into *ret_rw. The most specific (longest) matching entry wins. */
static int host_resolve(const struct broker_config *cfg, const struct volume_entry *e,
                        char *ret_path, bool *ret_rw, char *err)
{
        struct volume_allow *allow = malloc(sizeof(*allow));
        char *joined = NULL, root[PATH_MAX];
        size_t best = 0;
        struct stat st;
        bool found = false;
        int r = -ENOMEM;

        if (!allow)
                goto out;
        r = volume_allow_parse(cfg->volume_host_allow, allow, err);
        if (r < 0)
                goto out;
        if (allow->n == 0) {
                snprintf(err,
                         VOLUME_ERR_MAX, "volume '%s': host volumes are not enabled on this server (VOLUME_HOST_ALLOW)",
                         e->name);
                r = -EPERM;
                goto out;
        }
        r = -ENOMEM;
        if (asprintf(&joined, "%s%s%s", e->host_path, e->sub_path[0] ? "/" : "", e->sub_path) < 0) {
                joined = NULL;
                goto out;
        }
        r = -EPERM;
        /* one answer for "not there" and "not allowed": no oracle of the host */
        snprintf(err, VOLUME_ERR_MAX,
                 "volume '%s': host path %.64s%s%.64s does not exist or is not "
                 "under an allowed directory (VOLUME_HOST_ALLOW)",
                 e->name, e->host_path, e->sub_path[0] ? "/" : "", e->sub_path);
        if (strlen(joined) >= PATH_MAX || !realpath(joined, ret_path) ||
            strlen(ret_path) > VOLUME_PATH_MAX)
                goto out;
        for (size_t i = 0; i < allow->n; i++) {
                size_t n;
                if (!realpath(allow->e[i].dir, root) || !volume_path_within(ret_path, root))
                        continue;
                n = strlen(root);
                if (!found || n > best) {
                        best = n;
                        *ret_rw = allow->e[i].rw;
                        found = true;
                }
        }
        if (!found)
                goto out;
        if (stat(ret_path, &st) < 0 || !S_ISDIR(st.st_mode)) {
                snprintf(err, VOLUME_ERR_MAX, "volume '%s': host path %.64s is not a directory",
                         e->name, e->host_path);
                goto out;
        }
        r = 0;
out:
        if (r == -ENOMEM)
                snprintf(err, VOLUME_ERR_MAX, "volumes: out of memory");
        free(allow);
        free(joined);
        return r;
}

/* ---- named volumes ---- */

struct count {
        int n;
};

static void count_one(void *ud, const struct volume_info *v)
{
        (void)v;
        ((struct count *)ud)->n++;
}

/* Find or make e's named volume: its backend name into name, *ret_made
 * when this call made it. */
static int named_ensure(struct provider *pv, const struct broker_config *cfg, const char *tenant,
                        const char *sid, const struct volume_entry *e, char *name, bool *ret_made,
                        char *err)
{
        struct volume_info v;
        struct count c = { 0 };
        char perr[PROVIDER_ERR_MAX] = "";
        int r;

        *ret_made = false;
        if (volume_backend_name(cfg, tenant, e->claim, name, VOLUME_BACKEND_NAME_MAX) < 0) {
                snprintf(err, VOLUME_ERR_MAX, "volume '%s': name too long", e->name);
                return -EINVAL;
        }
        r = provider_volume_inspect(pv, name, &v, perr);
        if (r == 0) {
                /* the name is derived from the tenant: a volume of that name
                 * that is not labelled as the tenant's is nobody's to mount */
                if (!v.managed || strcmp(v.prefix, cfg->key_prefix) || strcmp(v.tenant, tenant)) {
                        snprintf(err, VOLUME_ERR_MAX,
                                 "volume '%s': its name is held by a volume "
                                 "this broker did not make for you",
                                 e->name);
                        return -EEXIST;
                }
                return 0;
        }
        if (r != -ENOENT) {
                snprintf(err, VOLUME_ERR_MAX, "%s", perr);
                return r;
        }
        if (!e->create_if_missing) {
                snprintf(err, VOLUME_ERR_MAX,
                         "volume '%s': there is no volume '%s' and "
                         "createIfNotExists is false",
                         e->name, e->claim);
                return -ENOENT;
        }
        r = provider_volume_list(pv, cfg->key_prefix, tenant, count_one, &c, perr);
        if (r < 0) {
                snprintf(err, VOLUME_ERR_MAX, "%s", perr);
                return r;
        }
        if (c.n >= cfg->volume_max_per_tenant) {
                snprintf(err, VOLUME_ERR_MAX,
                         "volume '%s': you already have %d named volumes "
                         "(the limit, VOLUME_MAX_PER_TENANT)",
                         e->name, c.n);
                return -EDQUOT;
        }
        memset(&v, 0, sizeof(v));
        snprintf(v.name, sizeof(v.name), "%s", name);
        snprintf(v.prefix, sizeof(v.prefix), "%s", cfg->key_prefix);
        snprintf(v.tenant, sizeof(v.tenant), "%s", tenant);
        snprintf(v.volume, sizeof(v.volume), "%s", e->claim);
        snprintf(v.sandbox_id, sizeof(v.sandbox_id), "%s", sid);
        r = provider_volume_create(pv, &v, perr);
        if (r < 0) {
                snprintf(err, VOLUME_ERR_MAX, "%s", perr);
                return r;
        }
        *ret_made = true;
        return 0;
}

/* ---- the record ---- */

static int record_add(struct json_object *a, const char *name, const char *kind, const char *source,
                      const char *target, bool ro, bool made, bool del)
{
        struct json_object *o = json_object_new_object();

        if (!o || json_add_str(o, "name", name) < 0 || json_add_str(o, "kind", kind) < 0 ||
            json_add_str(o, "source", source) < 0 || json_add_str(o, "target", target) < 0 ||
            json_add(o, "readOnly", json_object_new_boolean(ro)) < 0 ||
            json_add(o, "made", json_object_new_boolean(made)) < 0 ||
            json_add(o, "deleteOnTermination", json_object_new_boolean(del)) < 0 ||
            json_object_array_add(a, o) < 0) {
                json_put(o);
                return -ENOMEM;
        }
        return 0;
}

static int prepare_one(struct provider *pv, const struct broker_config *cfg, const char *tenant,
                       const char *sid, const struct volume_entry *e, struct json_object *rec,
                       char *err)
{
        char path[PATH_MAX], name[VOLUME_BACKEND_NAME_MAX];
        bool rw = false, made = false;
        int r;

        if (e->kind == VOLUME_HOST) {
                r = host_resolve(cfg, e, path, &rw, err);
                if (r < 0)
                        return r;
                /* read-only unless both the operator and the client allow writes */
                r = record_add(rec, e->name, "bind", path, e->mount_path, e->read_only || !rw,
                               false, false);
        } else {
                if (e->sub_path[0]) {
                        /* the Engine API this broker speaks (1.41) has no
                         * volume subpath, and resolving one in the volume's
                         * host directory would follow the sandboxes' links */
                        snprintf(err, VOLUME_ERR_MAX,
                                 "volume '%s': subPath is not supported for pvc "
                                 "volumes on this server",
                                 e->name);
                        return -EINVAL;
                }
                r = named_ensure(pv, cfg, tenant, sid, e, name, &made, err);
                if (r < 0)
                        return r;
                r = record_add(rec, e->name, "volume", name, e->mount_path, e->read_only, made,
                               made && e->delete_on_termination);
                if (r < 0 && made) {
                        char ignored[PROVIDER_ERR_MAX];
                        (void)provider_volume_remove(pv, name, ignored);
                }
        }
        if (r == -ENOMEM)
                snprintf(err, VOLUME_ERR_MAX, "volumes: out of memory");
        return r;
}

int volume_for_create(struct provider *pv, const struct broker_config *cfg, const char *tenant,
                      const char *sid, struct json_object *body, char **ret_record, char *err)
{
        struct json_object *vols = NULL, *rec = NULL;
        struct volume_set *set = malloc(sizeof(*set));
        const char *s;
        int r = -ENOMEM;

        *ret_record = NULL;
        if (!set) {
                snprintf(err, VOLUME_ERR_MAX, "volumes: out of memory");
                goto out;
        }
        json_object_object_get_ex(body, "volumes", &vols);
        r = volume_spec_parse(vols, set, err);
        if (r < 0 || set->n == 0)
                goto out;
        if (!provider_has_volumes(pv)) {
                snprintf(err, VOLUME_ERR_MAX, "volumes are not supported by this provider (%s)",
                         provider_name(pv));
                r = -EOPNOTSUPP;
                goto out;
        }
        rec = json_object_new_array();
        r = rec ? 0 : -ENOMEM;
        for (size_t i = 0; r == 0 && i < set->n; i++)
                r = prepare_one(pv, cfg, tenant, sid, &set->v[i], rec, err);
        if (r == 0) {
                s = json_object_to_json_string_ext(rec, JSON_C_TO_STRING_PLAIN |
                                                                JSON_C_TO_STRING_NOSLASHESCAPE);
                *ret_record = s && strlen(s) < VOLUME_RECORD_MAX ? strdup(s) : NULL;
                if (!*ret_record) {
                        snprintf(err, VOLUME_ERR_MAX, "volumes: out of memory");
                        r = -ENOMEM;
                }
        }
        if (r < 0 && rec)
                volume_undo(pv, json_object_to_json_string(rec));
out:
        json_put(rec);
        free(set);
        return r;
}

/* Remove the named volumes of record for which key (and "made") is true. */
static int remove_flagged(struct provider *pv, const char *record, const char *key)
{
        struct json_object *a = record && record[0] ? json_parse_or_null(record) : NULL, *f;
        char ignored[PROVIDER_ERR_MAX];
        int n = 0;

        for (size_t i = 0;
             a && json_object_is_type(a, json_type_array) && i < json_object_array_length(a); i++) {
                struct json_object *o = json_object_array_get_idx(a, i), *made = NULL;
                const char *kind = json_get_str(o, "kind"), *src = json_get_str(o, "source");
                if (!kind || strcmp(kind, "volume") || !src ||
                    !json_object_object_get_ex(o, "made", &made) || !json_object_get_boolean(made) ||
                    !json_object_object_get_ex(o, key, &f) || !json_object_get_boolean(f))
                        continue;
                if (provider_volume_remove(pv, src, ignored) == 0)
                        n++;
        }
        json_put(a);
        return n;
}

void volume_undo(struct provider *pv, const char *record)
{
        (void)remove_flagged(pv, record, "made");
}

int volume_release(struct provider *pv, const char *record)
{
        return remove_flagged(pv, record, "deleteOnTermination");
}

int volume_mounts_parse(const char *record, struct volume_mounts *ret)
{
        struct json_object *a;
        size_t n;

        memset(ret, 0, sizeof(*ret));
        if (!record || !record[0])
                return 0;
        a = json_parse_or_null(record);
        if (!a || !json_object_is_type(a, json_type_array) ||
            (n = json_object_array_length(a)) > VOLUME_MAX) {
                json_put(a);
                return -EPROTO;
        }
        for (size_t i = 0; i < n; i++) {
                struct json_object *o = json_object_array_get_idx(a, i), *ro = NULL;
                const char *kind = json_get_str(o, "kind"), *src = json_get_str(o, "source"),
                           *dst = json_get_str(o, "target");
                if (!kind || !src || !dst || (strcmp(kind, "bind") && strcmp(kind, "volume")) ||
                    !json_object_object_get_ex(o, "readOnly", &ro)) {
                        json_put(a);
                        memset(ret, 0, sizeof(*ret));
                        return -EPROTO;
                }
                ret->m[i] = (struct sandbox_mount){
                        .kind = strcmp(kind, "bind") == 0 ? SANDBOX_MOUNT_BIND : SANDBOX_MOUNT_VOLUME,
                        .source = src,
                        .target = dst,
                        .read_only = json_object_get_boolean(ro),
                };
        }
        ret->n = n;
        ret->owner = a;
        return 0;
}

int volume_mounts_check(struct provider *pv, const struct volume_mounts *m, char *err)
{
        struct volume_info v;
        char perr[PROVIDER_ERR_MAX];
        int r;

        for (size_t i = 0; i < m->n; i++) {
                if (m->m[i].kind == SANDBOX_MOUNT_BIND) {
                        /* resolved at create time; a component swapped for a
                         * symlink since (a sandbox with a ":rw" entry can)
                         * would be followed by the mount: it must still
                         * resolve to itself */
                        char now[PATH_MAX];
                        struct stat st;
                        if (!realpath(m->m[i].source, now) || strcmp(now, m->m[i].source) ||
                            stat(now, &st) < 0 || !S_ISDIR(st.st_mode)) {
                                snprintf(err, PROVIDER_ERR_MAX,
                                         "the host directory of the volume at %.64s "
                                         "changed since the create",
                                         m->m[i].target);
                                return -ENOENT;
                        }
                        continue;
                }
                r = provider_volume_inspect(pv, m->m[i].source, &v, perr);
                if (r == -ENOENT) {
                        snprintf(err, PROVIDER_ERR_MAX,
                                 "a volume of the sandbox (mounted at %.64s) was "
                                 "deleted before the sandbox was made",
                                 m->m[i].target);
                        return -ENOENT;
                }
                if (r < 0) {
                        snprintf(err, PROVIDER_ERR_MAX, "%s", perr);
                        return r;
                }
        }
        return 0;
}

void volume_mounts_free(struct volume_mounts *m)
{
        json_put(m->owner);
        memset(m, 0, sizeof(*m));
}

/* ---- the tenant's routes ---- */

struct list_ctx {
        struct json_object *items;
        int failed;
};

static void list_one(void *ud, const struct volume_info *v)
{
        struct list_ctx *c = ud;
        struct json_object *o = json_object_new_object();

        if (!o || json_add_str(o, "name", v->volume) < 0 ||
            json_add_str(o, "createdAt", v->created_at) < 0 ||
            json_add_str(o, "createdBySandbox", v->sandbox_id) < 0 ||
            json_object_array_add(c->items, o) < 0) {
                json_put(o);
                c->failed = -ENOMEM;
        }
}

int volume_list_json(struct provider *pv, const struct broker_config *cfg, const char *tenant,
                     struct json_object **ret, char *err)
{
        struct list_ctx c = { json_object_new_array(), 0 };
        struct json_object *o = json_object_new_object();
        int r = -ENOMEM;

        *ret = NULL;
        if (!c.items || !o)
                goto out;
        r = provider_volume_list(pv, cfg->key_prefix, tenant, list_one, &c, err);
        if (r < 0)
                goto out;
        r = c.failed;
        if (r < 0)
                goto out;
        r = json_add(o, "items", c.items);
        c.items = NULL;
        if (r == 0) {
                *ret = o;
                o = NULL;
        }
out:
        if (r == -ENOMEM)
                snprintf(err, PROVIDER_ERR_MAX, "volumes: out of memory");
        json_put(c.items);
        json_put(o);
        return r;
}

int volume_delete(struct provider *pv, const struct broker_config *cfg, const char *tenant,
                  const char *name, char *err)
{
        struct volume_info v;
        char backend[VOLUME_BACKEND_NAME_MAX];
        size_t n = strlen(name);
        int r;

        /* a DNS label, as pvc.claimName (volume_spec.h) */
        for (size_t i = 0; i < n; i++)
                if (!((name[i] >= 'a' && name[i] <= 'z') || (name[i] >= '0' && name[i] <= '9') ||
                      (name[i] == '-' && i > 0 && i + 1 < n)))
                        n = 0;
        if (n == 0 || n > VOLUME_NAME_MAX ||
            volume_backend_name(cfg, tenant, name, backend, sizeof(backend)) < 0) {
                snprintf(err, PROVIDER_ERR_MAX,
                         "a volume name is a DNS label (a-z, 0-9, '-', at most %d)", VOLUME_NAME_MAX);
                return -EINVAL;
        }
        r = provider_volume_inspect(pv, backend, &v, err);
        if (r == 0 && (!v.managed || strcmp(v.prefix, cfg->key_prefix) || strcmp(v.tenant, tenant)))
                r = -ENOENT; /* not the tenant's: as if there were none */
        if (r == -ENOENT)
                snprintf(err, PROVIDER_ERR_MAX, "no volume %s", name);
        if (r < 0)
                return r;
        r = provider_volume_remove(pv, backend, err);
        if (r == -EBUSY)
                snprintf(err, PROVIDER_ERR_MAX, "volume %s is in use by a sandbox", name);
        else if (r == -ENOENT)
                snprintf(err, PROVIDER_ERR_MAX, "no volume %s", name);
        return r;
}
