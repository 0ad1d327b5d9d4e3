/* daytona: the Daytona provider (struct provider_ops over Daytona's REST API
 * and its toolbox API, lib/providers/daytona/daytona_api.h; docs/DAYTONA.md). A sandbox is a
 * Daytona sandbox named sb-<sandbox_id> made from a snapshot (the record's
 * image) and carrying the PROVIDER_LABEL_* labels; its ref is Daytona's
 * sandbox id.
 *
 * create returns once the sandbox is `started` (Daytona creates and starts
 * in one step); start, stop and pause wait for their target state too. Each
 * wait polls with backoff and gives up after poll_max_ms; `error` and
 * `build_failed` end it at once with Daytona's errorReason.
 *
 * exec and files go through the toolbox at {toolboxProxyUrl}/{id}; see
 * daytona_exec.h for how one command runs.
 *
 * Errors (see provider.h), mapped from Daytona's answers:
 *   401/403 -EACCES, 404 -ENOENT, 409 -EBUSY, 429 (after bounded retries)
 *   -EAGAIN, other 4xx/5xx and a sandbox in error -EREMOTEIO, a malformed
 *   answer -EPROTO, no answer in time -ETIMEDOUT, unreachable -ECONNREFUSED,
 *   exec as a user the toolbox cannot switch to -EPERM.
 * (-EIO is never returned: callers read it as "Redis is down".)
 *
 * NOT thread-safe (one libcurl handle); each thread owns its provider.
 * curl_global_init() must run once before threads start. */
#pragma once
#include "core/config.h"
#include "providers/provider.h"

struct daytona_settings {
        const char *api_url;   /* e.g. https://app.daytona.io/api */
        const char *api_key;   /* bearer token; never logged */
        const char *org_id;    /* NULL or "": no organization header */
        const char *target;    /* region; NULL or "": Daytona's default */
        const char *user;      /* Linux user the toolbox runs as ("root") */
        int timeout_ms;        /* bound of every API call; > 0 */
        int poll_max_ms;       /* bound of a wait for a state; > 0 */
        int auto_stop_min;     /* autoStopInterval of new sandboxes (0: off) */
        int auto_delete_min;   /* autoDeleteInterval of new sandboxes (< 0: off) */
};

/* Make a Daytona provider; the settings are copied. No request is made yet
 * (ops->ping checks). *ret is freed with provider_free().
 * Errors: -EINVAL (no URL or key, a timeout <= 0), -ENOMEM. */
int daytona_provider_new(const struct daytona_settings *s, struct provider **ret);

/* The same from the broker's config (SANDBOX_PROVIDER=daytona): DAYTONA_*
 * settings; a stopped sandbox is kept IDLE_KEEP_MS (rounded up to Daytona's
 * minutes) before Daytona deletes it on its own. */
int daytona_provider_from_config(const struct broker_config *cfg, struct provider **ret);

/* The factory's entry (provider_factory.c): SANDBOX_PROVIDER=daytona,
 * built by daytona_provider_from_config; deadline DAYTONA_TIMEOUT_MS +
 * DAYTONA_POLL_MAX_MS (one call, then the wait for the state). */
extern const struct provider_backend daytona_backend;
