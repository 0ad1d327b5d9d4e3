/* provider_factory: see provider_factory.h. */
#include "providers/provider_factory.h"

#include <errno.h>
#include <string.h>

#include "providers/daytona/daytona.h"
#include "providers/docker/docker.h"
#include "providers/kubernetes/kubernetes.h"
#include "providers/provider_metered.h"

#define DEADLINE_NONE_MS 30000

/* One line per backend. */
static const struct provider_backend *const backends[] = {
        &docker_backend,
        &daytona_backend,
        &kubernetes_backend,
};

const struct provider_backend *provider_backend_find(const char *name)
{
        for (size_t i = 0; i < sizeof(backends) / sizeof(backends[0]); i++)
                if (strcmp(backends[i]->name, name) == 0)
                        return backends[i];
        return NULL;
}

int provider_new_from_config(const struct broker_config *cfg, struct provider **ret, char *ret_err)
{
        const struct provider_backend *b;
        int r;

        *ret = NULL;
        if (strcmp(cfg->provider, "none") == 0)
                return 0;
        b = provider_backend_find(cfg->provider);
        if (!b) {
                provider_errf(ret_err, "%s provider: no such backend", cfg->provider);
                return -EINVAL;
        }
        r = b->new_from_config(cfg, ret);
        if (r == 0)
                r = provider_metered(ret); /* broker_provider_errors_total */
        if (r < 0) {
                provider_free(*ret);
                *ret = NULL;
                provider_errf(ret_err, "%s provider: %s", cfg->provider, strerror(-r));
        }
        return r;
}

int provider_deadline_ms(const struct broker_config *cfg)
{
        const struct provider_backend *b = provider_backend_find(cfg->provider);

        return b ? b->deadline_ms(cfg) : DEADLINE_NONE_MS;
}
