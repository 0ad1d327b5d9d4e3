/* docker_volume: Docker named volumes through the Engine API (Docker API
 * "Volume": POST /volumes/create, GET /volumes/{name}, GET /volumes with
 * label filters, DELETE /volumes/{name}), for the provider's volume_* ops
 * (provider.h). The bodies and answers are docker_json.h's. */
#pragma once
#include "providers/docker/docker_api.h"
#include "providers/provider.h"

/* Make v->name (local driver) with v's labels. Docker answers a name that
 * exists with that volume, unchanged: the caller inspects first. */
int docker_volume_create(struct docker_api *api, int timeout_ms, const struct volume_info *v,
                         char *ret_err);

/* Read one volume; -ENOENT when there is none of that name. */
int docker_volume_inspect(struct docker_api *api, int timeout_ms, const char *name,
                          struct volume_info *ret, char *ret_err);

/* Call fn for every managed volume labelled with prefix and tenant. */
int docker_volume_list(struct docker_api *api, int timeout_ms, const char *prefix, const char *tenant,
                       void (*fn)(void *ud, const struct volume_info *v), void *ud, char *ret_err);

/* Remove one: -ENOENT none, -EBUSY in use by a container (Docker's 409). */
int docker_volume_remove(struct docker_api *api, int timeout_ms, const char *name, char *ret_err);
