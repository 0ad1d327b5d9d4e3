/* provider_metered: a provider that forwards every call to another one and
 * counts its backend failures in broker_provider_errors_total{op=...}
 * (metrics.h). Failures that describe the request or the sandbox's state
 * rather than the backend (-ENOENT, -EBUSY, -EINVAL, -EFBIG) are not counted. */
#pragma once
#include "provider.h"

/* Replace *p by a metered provider that owns the old *p. On -ENOMEM the old
 * provider is freed and *p is NULL. */
int provider_metered(struct provider **p);
