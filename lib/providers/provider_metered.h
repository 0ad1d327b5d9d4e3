/* provider_metered: a provider that forwards every call to another one and
 * counts its backend failures in broker_provider_errors_total{op=...}
 * (metrics.h). Failures that describe the request or the sandbox's state
 * rather than the backend (-ENOENT, -EBUSY, -EINVAL, -EFBIG) are not counted.
 *
 * The wrapper has exactly the ops of the provider it wraps: an op the
 * backend lacks (exec_stream on Daytona) is NULL in the wrapper too, so
 * provider_can_stream() and the facade's fallback see the truth. Its
 * ops->name is the backend's. */
#pragma once
#include "providers/provider.h"

/* Replace *p by a metered provider that owns the old *p. On -ENOMEM the old
 * provider is freed and *p is NULL. */
int provider_metered(struct provider **p);
