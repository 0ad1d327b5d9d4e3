/* fuzz_volume_spec: the `volumes` of an OpenSandbox create are untrusted
 * bytes, and so is a record's volumes field read back from Redis (anyone
 * who can write the store). Each input is fed to volume_spec_parse() (as
 * JSON; the volume_set checked against its contract: every mountPath
 * absolute, normalised, not reserved, unique; names unique), to
 * volume_mounts_parse() (as a record) and to volume_allow_parse() (as
 * VOLUME_HOST_ALLOW). Any crash, sanitizer report or abort() is a bug. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "fuzz.h"
#include "sandbox/volume.h"
#include "core/volume_spec.h"

static struct volume_set set;
static struct volume_allow allow;

static void check_set(const struct volume_set *s)
{
        CHECK(s->n <= VOLUME_MAX);
        for (size_t i = 0; i < s->n; i++) {
                const struct volume_entry *e = &s->v[i];
                CHECK(volume_path_normal(e->mount_path, false) && strcmp(e->mount_path, "/") != 0);
                CHECK(!volume_path_within(e->mount_path, "/.sandbox-broker"));
                CHECK(!e->sub_path[0] || volume_path_normal(e->sub_path, true));
                CHECK(e->kind != VOLUME_HOST || e->host_path[0] == '/');
                CHECK(e->kind != VOLUME_NAMED || (e->claim[0] && !strchr(e->claim, '/')));
                for (size_t j = 0; j < i; j++) {
                        CHECK(strcmp(s->v[j].name, e->name) != 0);
                        CHECK(strcmp(s->v[j].mount_path, e->mount_path) != 0);
                }
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        char *text = malloc(size + 1), err[VOLUME_ERR_MAX];
        struct json_tokener *tok = json_tokener_new_ex(32);
        struct json_object *o = NULL;
        struct volume_mounts m;
        int r;

        CHECK(text && tok);
        memcpy(text, data, size);
        text[size] = '\0';
        o = json_tokener_parse_ex(tok, text, (int)size);
        if (o) {
                err[0] = '\0';
                r = volume_spec_parse(o, &set, err);
                CHECK(r == 0 || r == -EINVAL);
                if (r == 0)
                        check_set(&set);
                else
                        CHECK(err[0] && strnlen(err, sizeof(err)) < sizeof(err));
        }
        r = volume_mounts_parse(text, &m);
        CHECK(r == 0 || r == -EPROTO);
        if (r == 0) {
                CHECK(m.n <= VOLUME_MAX);
                for (size_t i = 0; i < m.n; i++)
                        CHECK(m.m[i].source && m.m[i].target);
        } else {
                CHECK(m.n == 0 && !m.owner);
        }
        volume_mounts_free(&m);
        r = volume_allow_parse(text, &allow, err);
        CHECK(r == 0 || r == -EINVAL);
        if (r == 0) {
                CHECK(allow.n <= VOLUME_ALLOW_MAX);
                for (size_t i = 0; i < allow.n; i++)
                        CHECK(volume_path_normal(allow.e[i].dir, false));
        }
        json_object_put(o);
        json_tokener_free(tok);
        free(text);
        return 0;
}
