/* provider_factory: the one list of sandbox backends, and the provider of
 * the broker's config built from it.
 *
 * Adding a backend (docs/PROVIDERS.md): a new folder lib/providers/<name>/
 * that implements struct provider_ops and defines a struct
 * provider_backend <name>_backend, plus one line in provider_factory.c. */
#pragma once
#include "core/config.h"
#include "providers/provider.h"

/* The backend named name (a SANDBOX_PROVIDER value), or NULL. */
const struct provider_backend *provider_backend_find(const char *name);

/* Build the configured provider, metered (provider_metered.h): *ret is
 * NULL for SANDBOX_PROVIDER=none. On failure *ret is NULL and ret_err
 * (PROVIDER_ERR_MAX bytes) says why. Errors: -EINVAL (an unknown name, or
 * the backend's), -ENOMEM. */
int provider_new_from_config(const struct broker_config *cfg, struct provider **ret, char *ret_err);

/* The configured backend's deadline_ms (see struct provider_backend): the
 * longest one create or start may take. 30 s without a backend. */
int provider_deadline_ms(const struct broker_config *cfg);
