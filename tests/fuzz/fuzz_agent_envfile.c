/* fuzz_agent_envfile: sandbox-agent parses the env file of the SDK's
 * set_env (agent/envfile.c), which code in the sandbox writes: any bytes.
 * The input is the file. Contracts: every result is "KEY=VALUE" with a
 * valid key of at most ENVFILE_KEY_MAX bytes, no key twice, at most
 * ENVFILE_MAX_VARS of them, no value longer than the input; parsing the
 * same bytes again gives the same result. Any crash, sanitizer report or
 * abort() is a bug. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "envfile.h"
#include "fuzz.h"

static size_t key_len(const char *kv)
{
        size_t k = 0;

        CHECK((kv[0] >= 'A' && kv[0] <= 'Z') || (kv[0] >= 'a' && kv[0] <= 'z') || kv[0] == '_');
        while ((kv[k] >= 'A' && kv[k] <= 'Z') || (kv[k] >= 'a' && kv[k] <= 'z') || kv[k] == '_' ||
               (kv[k] >= '0' && kv[k] <= '9'))
                k++;
        CHECK(kv[k] == '=');
        return k;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct envfile a, b;

        if (size > 2 * ENVFILE_MAX_BYTES)
                return 0;
        if (envfile_parse((const char *)data, size, &a) < 0) {
                envfile_free(&a);
                return 0;
        }
        CHECK(a.n <= ENVFILE_MAX_VARS);
        for (size_t i = 0; i < a.n; i++) {
                size_t k = key_len(a.vars[i]);

                CHECK(k <= ENVFILE_KEY_MAX);
                CHECK(strlen(a.vars[i]) <= size);
                for (size_t j = 0; j < i; j++)
                        CHECK(strncmp(a.vars[j], a.vars[i], k + 1) != 0);
        }
        if (envfile_parse((const char *)data, size, &b) == 0) {
                CHECK(a.n == b.n);
                for (size_t i = 0; i < a.n; i++)
                        CHECK(strcmp(a.vars[i], b.vars[i]) == 0);
        }
        envfile_free(&b);
        envfile_free(&a);
        return 0;
}
