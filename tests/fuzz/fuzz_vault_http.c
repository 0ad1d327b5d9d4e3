/* fuzz_vault_http: the request head a sandbox sends through the Credential
 * Vault's injector is hostile bytes. Feeds them to vault_http_parse() and,
 * when accepted, vault_inject() with a fixed vault and vault_http_format(),
 * and checks: the head formats back within the caps, and the secret never
 * lands in the authority of the URI. Any crash or sanitizer report is a bug. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "sandbox/vault.h"
#include "sandbox/vault_inject.h"

static const char base[] =
        "{\"credentials\":[{\"name\":\"a\",\"source\":{\"value\":\"SECRETVALUE\"}}],\"bindings\":"
        "[{\"name\":\"b\",\"match\":{\"hosts\":[\"h.test\",\"*.w.test\"]},\"auth\":{\"type\":"
        "\"bearer\","
        "\"credential\":\"a\",\"substitutions\":[{\"credential\":\"a\",\"placeholder\":\"PH\","
        "\"in\":[\"header\",\"path\",\"query\",\"body\"]}]}}]}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        static struct json_object *v;
        struct vault_http h;
        char *out = NULL;
        size_t n = 0;
        int applied = 0, r;

        if (!v) {
                char e[256];
                CHECK(vault_parse_create(base, strlen(base), &v, e, sizeof(e)) == 0);
        }
        r = vault_http_parse((const char *)data, size, &h);
        CHECK(r == 0 || r == -EINVAL || r == -ENOMEM);
        if (r < 0)
                return 0;
        h.body = strdup("xxPHxx");
        h.body_len = 6;
        r = vault_inject(v, NULL, "0123456789abcdef0123456789abcdef", &h, &applied);
        CHECK(r == 0 || r == -EINVAL || r == -ENOMEM);
        CHECK(vault_http_format(&h, &out, &n) == 0);
        CHECK(strlen(out) == n);
        /* the authority is never rewritten */
        size_t auth = 7 + strcspn(h.uri + 7, "/?#");
        CHECK(!memmem(h.uri, auth, "SECRETVALUE", 11) || memmem(data, size, "SECRETVALUE", 11));
        free(out);
        vault_http_clear(&h);
        return 0;
}
