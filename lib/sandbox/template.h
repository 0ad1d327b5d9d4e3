/* template: the pure part of OpenSandbox templates (docs/OPENSANDBOX.md,
 * "Templates"): what a client sends to POST /v1/templates, the stored form,
 * the FsbTemplate answer, the metadata filter of the list and the create of
 * a sandbox from a template (CreateSandboxRequest.templateId). No Redis, no
 * I/O: template_store.h keeps the records.
 *
 * The contract is the one opensandbox-server 1.1.1 serves: a template
 * fixes a sandbox's workload (image, entrypoint, env, resourceLimits); a
 * create with templateId brings only what is not workload (timeout, which
 * it must, metadata, networkPolicy, extensions), and naming a workload
 * field beside templateId is a 400, not a silent override. The broker has
 * no golden-image build: the template's image runs as any image does, so
 * a template is Succeeded as soon as it is stored; publish, format and
 * readiness are kept and echoed, and drive nothing. */
#pragma once
#include <stdbool.h>
#include <json-c/json.h>

#include "core/config.h"

#define TEMPLATE_ID_LEN 36 /* "tpl-" and 32 lowercase hex characters */
#define TEMPLATE_ERR_MAX 256
#define TEMPLATE_PUBLISH_MAX 1024 /* bytes of publish */
#define TEMPLATE_PROBE_MAX 1024   /* bytes of readiness.probe */
#define TEMPLATE_STORED_MAX 65536 /* bytes of a template's stored form */
#define TEMPLATE_FILTER_MAX 16    /* metadata pairs of a list filter */

/* Is s a template id this server could have made ("tpl-" + 32 hex)? */
bool template_id_valid(const char *s);

/* Validate a CreateFsbTemplateRequest body and turn it into the stored
 * form (*ret, the caller's to json_put): image, publish, format, and
 * those of resourceLimits (cpu, memory, disk), entrypoint, env, metadata,
 * readiness that were given. Unknown fields are refused, as the
 * reference's model forbids them. A template must make a valid create:
 * the create it stands for is checked with osb_create_parse under cfg's
 * rules (limits, disks, entrypoint and env bounds), so what is stored can
 * be used. Returns 0, -EINVAL with err (TEMPLATE_ERR_MAX), or -ENOMEM. */
int template_parse(const struct broker_config *cfg, struct json_object *body,
                   struct json_object **ret, char *err);

/* The FsbTemplate answer of stored form spec (borrowed), id and its
 * times (ms since the epoch): a new object, the caller's (NULL: no
 * memory). */
struct json_object *template_json(struct json_object *spec, const char *id, long long created_ms,
                                  long long updated_ms);

/* Parse a list's metadata filter (the URL-decoded value of ?metadata=,
 * "k=v&k2=v2", itself URL-encoded pairs) into *ret, an object of
 * strings (the caller's). "" is no filter (an empty object). Returns 0, or
 * -EINVAL with err for a malformed pair or more than TEMPLATE_FILTER_MAX. */
int template_filter_parse(const char *s, struct json_object **ret, char *err);

/* Does stored form spec carry every pair of filter (AND)? */
bool template_filter_match(struct json_object *spec, struct json_object *filter);

/* The templateId of a CreateSandboxRequest body into *ret (borrowed from
 * body): NULL when the field is absent, null or blank (the reference
 * then creates as without it). -EINVAL with err when it is present but
 * not a string. */
int template_create_ref(struct json_object *body, const char **ret, char *err);

/* The create body a template-mode CreateSandboxRequest stands for: the
 * template's workload (spec: image, entrypoint or the reference's default
 * ["tail", "-f", "/dev/null"], env, resourceLimits with disk as
 * "ephemeral-storage") and the request's own fields (timeout, metadata,
 * networkPolicy, extensions, anything else it may carry), templateId
 * left out: a new object into *ret, the caller's. -EINVAL with err when
 * the request names a workload field (image, snapshotId, entrypoint, env,
 * resourceLimits, resourceRequests, volumes, platform, credentialProxy,
 * secureAccess true, lifecycle) or gives no timeout; -ENOMEM. */
int template_merge(struct json_object *spec, struct json_object *body, struct json_object **ret,
                   char *err);
