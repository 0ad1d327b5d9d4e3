/* lifecycle: the hooks of an OpenSandbox create (CreateSandboxRequest
 * .lifecycle {preStart, periodic[]}; docs/OPENSANDBOX.md, "Lifecycle
 * hooks"). Checked at create into a normalized JSON kept in the sandbox's
 * record (field "lifecycle"); read back by the provisioning, which runs
 * preStart through the agent before it starts the entrypoint, and gives
 * the periodic hooks to the agent as `--hook` arguments of the container
 * (agent/hooks.h), which runs them. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>

#include "core/config.h"

#define LIFECYCLE_ARGS_MAX 256               /* strings of one hook's command */
#define LIFECYCLE_PRESTART_BYTES (64 * 1024) /* preStart.command, all its strings */
#define LIFECYCLE_PERIODIC_BYTES (32 * 1024) /* every periodic command's strings together */
#define LIFECYCLE_PERIODIC_MAX 16            /* = HOOKS_MAX of the agent */
#define LIFECYCLE_NAME_MAX 63
#define LIFECYCLE_PRESTART_TIMEOUT_MAX_S 10800
#define LIFECYCLE_PERIODIC_TIMEOUT_MAX_S 300 /* = HOOK_TIMEOUT_MAX_S of the agent */
#define LIFECYCLE_TIMEOUT_DEFAULT_S 60
#define LIFECYCLE_ERR_MAX 256

/* body.lifecycle (lc; NULL or JSON null: none) checked. Returns 0 with
 * *ret the normalized JSON (malloc'd; NULL when there are no hooks), or
 * -EINVAL with err naming the field, or -ENOMEM. */
int lifecycle_parse(const struct broker_config *cfg, struct json_object *lc, char **ret, char *err);

/* What the provisioning does with a record's lifecycle JSON. */
struct lifecycle_run {
        struct json_object *obj; /* owns the strings below */
        const char **pre_argv;   /* NULL-terminated, NULL: no preStart */
        int pre_timeout_s;
        char **hook_args; /* "--hook", SPEC, ... NULL-terminated; NULL: no periodic */
        size_t n_hook_args;
};

/* json ("" or NULL: none) into *run. Returns 0, -EPROTO when it is not
 * what lifecycle_parse makes, or -ENOMEM. */
int lifecycle_run_read(const char *json, struct lifecycle_run *run);
void lifecycle_run_free(struct lifecycle_run *run);
