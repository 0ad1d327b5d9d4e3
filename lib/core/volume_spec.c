/* volume_spec: see volume_spec.h. */
#include "core/volume_spec.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

/* Mount points a sandbox's volume may not take or shadow: the broker's own
 * (sandbox-agent, egress: docker_agent.h) and the kernel's. */
static const char *const reserved_mounts[] = { "/.sandbox-broker", "/proc", "/sys", "/dev", NULL };

/* The spec's DNS label: [a-z0-9]([-a-z0-9]*[a-z0-9])?, at most 63. */
static bool dns_label(const char *s)
{
        size_t n = strlen(s);

        if (n == 0 || n > VOLUME_NAME_MAX)
                return false;
        for (size_t i = 0; i < n; i++) {
                unsigned char c = (unsigned char)s[i];
                bool alnum = isdigit(c) || (c >= 'a' && c <= 'z');
                if (!alnum && !(c == '-' && i > 0 && i + 1 < n))
                        return false;
        }
        return true;
}

bool volume_path_normal(const char *path, bool relative)
{
        size_t n = strlen(path);
        const char *p = path;

        if (n == 0 || n > VOLUME_PATH_MAX || (path[0] == '/') == relative || path[n - 1] == '/')
                return relative ? false : n == 1 && path[0] == '/';
        for (const char *c = path; *c; c++)
                if ((unsigned char)*c < 0x20 || *c == 0x7f)
                        return false;
        if (*p == '/')
                p++;
        /* each component: non-empty, not "." or ".." */
        while (*p) {
                size_t k = strcspn(p, "/");
                if (k == 0 || (k == 1 && p[0] == '.') || (k == 2 && p[0] == '.' && p[1] == '.'))
                        return false;
                p += k;
                if (*p == '/')
                        p++;
        }
        return true;
}

bool volume_path_within(const char *resolved, const char *root)
{
        size_t n = strlen(root);

        if (strcmp(root, "/") == 0)
                return resolved[0] == '/';
        return strncmp(resolved, root, n) == 0 && (resolved[n] == '\0' || resolved[n] == '/');
}

bool volume_storage_valid(const char *s)
{
        static const char *const units[] = { "", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", NULL };
        const char *p = s;

        if (!isdigit((unsigned char)*p) || strlen(s) > 32)
                return false;
        while (isdigit((unsigned char)*p))
                p++;
        if (*p == '.') {
                p++;
                if (!isdigit((unsigned char)*p))
                        return false;
                while (isdigit((unsigned char)*p))
                        p++;
        }
        for (size_t i = 0; units[i]; i++)
                if (strcmp(p, units[i]) == 0)
                        return true;
        return false;
}

/* A string field of o into buf (size bytes): 0, 1 when absent or null,
 * -EINVAL when not a string, too long or holding a NUL. */
static int get_str(struct json_object *o, const char *key, char *buf, size_t size)
{
        struct json_object *v;
        int len;

        if (!json_object_object_get_ex(o, key, &v) || json_object_is_type(v, json_type_null))
                return 1;
        if (!json_object_is_type(v, json_type_string))
                return -EINVAL;
        len = json_object_get_string_len(v);
        if (len < 0 || (size_t)len >= size || strlen(json_object_get_string(v)) != (size_t)len)
                return -EINVAL;
        memcpy(buf, json_object_get_string(v), (size_t)len + 1);
        return 0;
}

/* A boolean field of o into *ret (left as is when absent or null). */
static int get_bool(struct json_object *o, const char *key, bool *ret)
{
        struct json_object *v;

        if (!json_object_object_get_ex(o, key, &v) || json_object_is_type(v, json_type_null))
                return 0;
        if (!json_object_is_type(v, json_type_boolean))
                return -EINVAL;
        *ret = json_object_get_boolean(v);
        return 0;
}

static bool only_keys(struct json_object *o, const char *const *keys, const char **ret_bad)
{
        json_object_object_foreach(o, k, v) {
                bool known = false;
                (void)v;
                for (size_t i = 0; keys[i] && !known; i++)
                        known = strcmp(k, keys[i]) == 0;
                if (!known) {
                        *ret_bad = k;
                        return false;
                }
        }
        return true;
}

static int parse_host(struct json_object *h, struct volume_entry *e, size_t i, char *err)
{
        static const char *const keys[] = { "path", NULL };
        const char *bad;

        if (!json_object_is_type(h, json_type_object) || !only_keys(h, keys, &bad)) {
                snprintf(err, VOLUME_ERR_MAX, "volumes[%zu].host must be an object {path}", i);
                return -EINVAL;
        }
        if (get_str(h, "path", e->host_path, sizeof(e->host_path)) != 0 || e->host_path[0] != '/') {
                snprintf(err, VOLUME_ERR_MAX,
                         "volumes[%zu].host.path must be an absolute host path of at most %d bytes",
                         i, VOLUME_PATH_MAX);
                return -EINVAL;
        }
        for (const char *c = e->host_path; *c; c++)
                if ((unsigned char)*c < 0x20 || *c == 0x7f) {
                        snprintf(err, VOLUME_ERR_MAX,
                                 "volumes[%zu].host.path must not hold control characters", i);
                        return -EINVAL;
                }
        e->kind = VOLUME_HOST;
        return 0;
}

static int parse_pvc(struct json_object *p, struct volume_entry *e, size_t i, char *err)
{
        static const char *const keys[] = { "claimName",
                                            "createIfNotExists",
                                            "deleteOnSandboxTermination",
                                            "storageClass",
                                            "storage",
                                            "accessModes",
                                            NULL };
        struct json_object *v;
        char storage[40];
        const char *bad = "";
        int r;

        if (!json_object_is_type(p, json_type_object) || !only_keys(p, keys, &bad)) {
                snprintf(err, VOLUME_ERR_MAX, "volumes[%zu].pvc: unknown field '%.32s'", i, bad);
                return -EINVAL;
        }
        if (get_str(p, "claimName", e->claim, sizeof(e->claim)) != 0 || !dns_label(e->claim)) {
                snprintf(err,
                         VOLUME_ERR_MAX, "volumes[%zu].pvc.claimName must be a DNS label (a-z, 0-9, '-', at most %d)",
                         i, VOLUME_NAME_MAX);
                return -EINVAL;
        }
        e->create_if_missing = true;
        if (get_bool(p, "createIfNotExists", &e->create_if_missing) < 0 ||
            get_bool(p, "deleteOnSandboxTermination", &e->delete_on_termination) < 0) {
                snprintf(err,
                         VOLUME_ERR_MAX, "volumes[%zu].pvc: createIfNotExists and deleteOnSandboxTermination are booleans",
                         i);
                return -EINVAL;
        }
        r = get_str(p, "storage", storage, sizeof(storage));
        if (r < 0 || (r == 0 && !volume_storage_valid(storage))) {
                snprintf(err,
                         VOLUME_ERR_MAX, "volumes[%zu].pvc.storage must be a quantity like \"1Gi\" (it is not enforced on Docker)",
                         i);
                return -EINVAL;
        }
        /* Kubernetes hints: Docker has no use for them, as the spec says */
        if (json_object_object_get_ex(p, "storageClass", &v) &&
            !json_object_is_type(v, json_type_null) && !json_object_is_type(v, json_type_string)) {
                snprintf(err, VOLUME_ERR_MAX, "volumes[%zu].pvc.storageClass must be a string", i);
                return -EINVAL;
        }
        if (json_object_object_get_ex(p, "accessModes", &v) &&
            !json_object_is_type(v, json_type_null)) {
                bool ok = json_object_is_type(v, json_type_array) && json_object_array_length(v) <= 8;
                for (size_t k = 0; ok && k < json_object_array_length(v); k++)
                        ok = json_object_is_type(json_object_array_get_idx(v, k), json_type_string);
                if (!ok) {
                        snprintf(err, VOLUME_ERR_MAX,
                                 "volumes[%zu].pvc.accessModes must be an array of strings", i);
                        return -EINVAL;
                }
        }
        e->kind = VOLUME_NAMED;
        return 0;
}

static bool reserved_mount(const char *path)
{
        for (size_t i = 0; reserved_mounts[i]; i++)
                if (volume_path_within(path, reserved_mounts[i]))
                        return true;
        return false;
}

static int parse_entry(struct json_object *o, struct volume_entry *e, size_t i, char *err)
{
        static const char *const keys[] = { "name",      "host",     "pvc",     "ossfs",
                                            "mountPath", "readOnly", "subPath", NULL };
        struct json_object *h = NULL, *p = NULL, *x = NULL;
        const char *bad = "";
        int backends, r;

        if (!json_object_is_type(o, json_type_object)) {
                snprintf(err, VOLUME_ERR_MAX, "volumes[%zu] must be an object", i);
                return -EINVAL;
        }
        if (!only_keys(o, keys, &bad)) {
                snprintf(err, VOLUME_ERR_MAX, "volumes[%zu]: unknown field '%.32s'", i, bad);
                return -EINVAL;
        }
        if (get_str(o, "name", e->name, sizeof(e->name)) != 0 || !dns_label(e->name)) {
                snprintf(err, VOLUME_ERR_MAX,
                         "volumes[%zu].name must be a DNS label (a-z, 0-9, '-', at most %d)", i,
                         VOLUME_NAME_MAX);
                return -EINVAL;
        }
        json_object_object_get_ex(o, "host", &h);
        json_object_object_get_ex(o, "pvc", &p);
        json_object_object_get_ex(o, "ossfs", &x);
        h = json_object_is_type(h, json_type_null) ? NULL : h;
        p = json_object_is_type(p, json_type_null) ? NULL : p;
        x = json_object_is_type(x, json_type_null) ? NULL : x;
        backends = !!h + !!p + !!x;
        if (backends != 1) {
                snprintf(err, VOLUME_ERR_MAX,
                         "volume '%s' must have exactly one backend (host or pvc)", e->name);
                return -EINVAL;
        }
        if (x) {
                snprintf(err,
                         VOLUME_ERR_MAX, "volume '%s': the ossfs backend is not supported by this server (host and pvc are)",
                         e->name);
                return -EINVAL;
        }
        r = h ? parse_host(h, e, i, err) : parse_pvc(p, e, i, err);
        if (r < 0)
                return r;
        if (get_str(o, "mountPath", e->mount_path, sizeof(e->mount_path)) != 0 ||
            !volume_path_normal(e->mount_path, false) || strcmp(e->mount_path, "/") == 0) {
                snprintf(err, VOLUME_ERR_MAX,
                         "volume '%s': mountPath must be an absolute normalised path other than / "
                         "(no '.', '..', '//' or trailing '/'; at most %d bytes)",
                         e->name, VOLUME_PATH_MAX);
                return -EINVAL;
        }
        if (reserved_mount(e->mount_path)) {
                snprintf(err,
                         VOLUME_ERR_MAX, "volume '%s': mountPath %.64s is reserved (/.sandbox-broker, /proc, /sys, /dev)",
                         e->name, e->mount_path);
                return -EINVAL;
        }
        r = get_str(o, "subPath", e->sub_path, sizeof(e->sub_path));
        if (r < 0 || (r == 0 && e->sub_path[0] && !volume_path_normal(e->sub_path, true))) {
                snprintf(err,
                         VOLUME_ERR_MAX, "volume '%s': subPath must be a relative normalised path (no '..', '.', '//')",
                         e->name);
                return -EINVAL;
        }
        if (r == 1)
                e->sub_path[0] = '\0';
        if (get_bool(o, "readOnly", &e->read_only) < 0) {
                snprintf(err, VOLUME_ERR_MAX, "volume '%s': readOnly must be a boolean", e->name);
                return -EINVAL;
        }
        return 0;
}

int volume_spec_parse(struct json_object *volumes, struct volume_set *set, char *err)
{
        size_t n;

        memset(set, 0, sizeof(*set));
        if (!volumes || json_object_is_type(volumes, json_type_null))
                return 0;
        if (!json_object_is_type(volumes, json_type_array) ||
            (n = json_object_array_length(volumes)) > VOLUME_MAX) {
                snprintf(err, VOLUME_ERR_MAX, "volumes must be an array of at most %d volumes",
                         VOLUME_MAX);
                return -EINVAL;
        }
        for (size_t i = 0; i < n; i++) {
                struct volume_entry *e = &set->v[i];
                if (parse_entry(json_object_array_get_idx(volumes, i), e, i, err) < 0)
                        return -EINVAL;
                for (size_t j = 0; j < i; j++) {
                        if (strcmp(set->v[j].name, e->name) == 0) {
                                snprintf(err, VOLUME_ERR_MAX, "volume name '%s' is used twice",
                                         e->name);
                                return -EINVAL;
                        }
                        if (strcmp(set->v[j].mount_path, e->mount_path) == 0) {
                                snprintf(err, VOLUME_ERR_MAX,
                                         "volumes '%s' and '%s' have the same mountPath",
                                         set->v[j].name, e->name);
                                return -EINVAL;
                        }
                }
                set->n = i + 1;
        }
        return 0;
}

int volume_allow_parse(const char *s, struct volume_allow *ret, char *err)
{
        const char *p = s;

        memset(ret, 0, sizeof(*ret));
        while (*p) {
                size_t k = strcspn(p, ","), d = k;
                bool rw = false;

                if (k > 3 && strncmp(p + k - 3, ":rw", 3) == 0) {
                        rw = true;
                        d = k - 3;
                } else if (k > 3 && strncmp(p + k - 3, ":ro", 3) == 0) {
                        d = k - 3;
                }
                if (ret->n == VOLUME_ALLOW_MAX || d == 0 || d > VOLUME_PATH_MAX) {
                        snprintf(err, VOLUME_ERR_MAX,
                                 "VOLUME_HOST_ALLOW: at most %d entries of "
                                 "absolute directories, each dir[:ro|:rw]",
                                 VOLUME_ALLOW_MAX);
                        return -EINVAL;
                }
                memcpy(ret->e[ret->n].dir, p, d);
                ret->e[ret->n].dir[d] = '\0';
                if (!volume_path_normal(ret->e[ret->n].dir, false) ||
                    strchr(ret->e[ret->n].dir, ':')) {
                        snprintf(err, VOLUME_ERR_MAX,
                                 "VOLUME_HOST_ALLOW: '%.64s' is not an absolute normalised "
                                 "directory "
                                 "(dir, dir:ro or dir:rw)",
                                 ret->e[ret->n].dir);
                        return -EINVAL;
                }
                ret->e[ret->n++].rw = rw;
                p += k;
                if (*p == ',')
                        p++;
        }
        return 0;
}
