/* daytona_json: the JSON bodies the Daytona provider sends and the parts of
 * Daytona's answers it reads. Pure (no I/O), so unit tests and fuzzers can
 * drive it. Contract: api/openapi.yaml of github.com/daytonaio/daytona/libs/api-client-go v0.190.0 (scripts/daytona-specs) (schemas
 * CreateSandbox, Sandbox, ListSandboxesResponse) and toolbox-openapi.yaml
 * (ExecuteRequest, ExecuteResponse). */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include "providers/provider.h"

#define DAYTONA_STATE_MAX 32
#define DAYTONA_URL_MAX 512

/* What create needs beyond the sandbox_spec. */
struct daytona_create_opts {
        const char *user;      /* Linux user the toolbox runs as; NULL: the snapshot's */
        const char *target;    /* region; NULL or "": Daytona's default */
        int auto_stop_min;     /* autoStopInterval; 0 disables */
        int auto_delete_min;   /* autoDeleteInterval; < 0 disables */
};

/* The fields of a Sandbox object we use. */
struct daytona_sandbox {
        char id[PROVIDER_REF_MAX];
        char state[DAYTONA_STATE_MAX];      /* "" if absent */
        char error_reason[PROVIDER_ERR_MAX];
        char toolbox_url[DAYTONA_URL_MAX];  /* toolboxProxyUrl, "" if absent */
        bool managed;                       /* PROVIDER_LABEL_MANAGED = "1" */
        char sandbox_id[64];                /* our labels, "" if absent */
        char prefix[64];
};

/* Body of POST /sandbox: name "sb-<sandbox_id>", snapshot = spec->image,
 * env, our labels, networkBlockAll for network "none", the intervals.
 * *ret is malloc'ed (free()). Errors: -EINVAL (no id or image, env entry
 * without '='), -ENOMEM. */
int daytona_json_create_body(const struct sandbox_spec *spec, const struct daytona_create_opts *o,
                             char **ret);

/* Parse a Sandbox object. Errors: -EPROTO (not JSON, no string id, a field
 * too long). */
int daytona_json_parse_sandbox(const char *body, struct daytona_sandbox *ret);

/* Map Daytona's SandboxState to ours; unknown strings are CREATED (not
 * usable yet). destroyed/destroying are MISSING. */
enum sandbox_run_state daytona_json_state(const char *state);

/* True for the states a wait must give up on: error, build_failed. */
bool daytona_json_state_failed(const char *state);

/* Parse GET /sandbox (ListSandboxesResponse): call fn for every item
 * carrying our managed label; copy nextCursor into ret_cursor ("" when
 * null or absent). Errors: -EPROTO. */
int daytona_json_parse_list(const char *body, void (*fn)(void *ud, const struct sandbox_info *info),
                            void *ud, char *ret_cursor, size_t cursor_size);

/* Body of POST {toolbox}/process/execute. env ("K=V", may be NULL) becomes
 * envs, cwd may be NULL. Errors: -EINVAL (env entry without '='), -ENOMEM. */
int daytona_json_exec_body(const char *command, const char *const *env, const char *cwd,
                           int timeout_s, char **ret);

/* Parse an ExecuteResponse: *ret_result points into a new string (free()),
 * *ret_exit_code is -1 when absent. Errors: -EPROTO, -ENOMEM. */
int daytona_json_parse_exec(const char *body, int *ret_exit_code, char **ret_result,
                            size_t *ret_len);

/* Copy Daytona's error message ("message", a string or an array of them,
 * else "error", else a prefix of a non-JSON body) into ret_err
 * (PROVIDER_ERR_MAX bytes) as "daytona: <what>: HTTP <status>: <msg>";
 * ret_err may be NULL. */
void daytona_json_error_message(const char *what, long status, const char *body, char *ret_err);
