/* fuzz_vault: Credential Vault bodies (POST and PATCH /credential-vault) are
 * untrusted bytes. Feeds them to vault_parse_create() and, against a fixed
 * vault, vault_apply_patch(), and checks the contracts: an accepted vault
 * passes vault_check, stays within its caps, and no sanitized view carries a
 * "value" member; a refusal has a message. Any crash, sanitizer report or
 * abort() is a bug. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "sandbox/vault.h"
#include "sandbox/vault_view.h"

static const char base[] =
        "{\"credentials\":[{\"name\":\"a\",\"source\":{\"value\":\"SECRETVALUE\"}}],\"bindings\":"
        "[{\"name\":\"b\",\"match\":{\"hosts\":[\"h.test\"]},\"auth\":{\"type\":\"bearer\","
        "\"credential\":\"a\"}}]}";

/* chosen: the input itself holds the fixed vault's secret (say as a header
 * name, which views show): then a view may hold it too */
static void check_vault(struct json_object *v, bool chosen)
{
        struct json_object *o = NULL, *c, *b;

        CHECK(vault_check(v) == 0);
        CHECK(json_object_object_get_ex(v, "credentials", &c) &&
              json_object_array_length(c) <= VAULT_CREDENTIALS_MAX);
        CHECK(json_object_object_get_ex(v, "bindings", &b) &&
              json_object_array_length(b) <= VAULT_BINDINGS_MAX);
        for (int w = VAULT_VIEW_STATE; w <= VAULT_VIEW_BINDINGS; w++) {
                CHECK(vault_view(v, (enum vault_view)w, &o) == 0);
                /* a credential's view has its name, source type and revision only */
                struct json_object *cl;
                if (json_object_object_get_ex(o, "credentials", &cl))
                        for (size_t i = 0; i < json_object_array_length(cl); i++) {
                                struct json_object *e = json_object_array_get_idx(cl, i);
                                CHECK(json_object_object_length(e) == 3 &&
                                      json_object_object_get_ex(e, "name", NULL) &&
                                      json_object_object_get_ex(e, "sourceType", NULL) &&
                                      json_object_object_get_ex(e, "revision", NULL));
                        }
                CHECK(chosen || !strstr(json_object_to_json_string(o), "SECRETVALUE"));
                json_object_put(o);
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        static struct json_object *cur;
        struct json_object *v = NULL;
        char err[64] = ""; /* short: exercises truncation */
        int r;

        bool chosen = memmem(data, size, "SECRETVALUE", 11) != NULL;

        if (!cur) {
                char e[256];
                CHECK(vault_parse_create(base, strlen(base), &cur, e, sizeof(e)) == 0);
        }
        r = vault_parse_create((const char *)data, size, &v, err, sizeof(err));
        CHECK(r == 0 || r == -EINVAL || r == -ENOMEM);
        if (r == 0)
                check_vault(v, chosen);
        else
                CHECK(!v && err[0] != '\0' && strnlen(err, sizeof(err)) < sizeof(err));
        json_object_put(v);
        v = NULL;
        r = vault_apply_patch(cur, (const char *)data, size, &v, err, sizeof(err));
        CHECK(r == 0 || r == -EINVAL || r == -ESTALE || r == -ENOMEM);
        if (r == 0)
                check_vault(v, chosen);
        else
                CHECK(!v);
        json_object_put(v);
        return 0;
}
