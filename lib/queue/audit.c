/* audit: see audit.h. */
#include "queue/audit.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

#include "core/json_input.h"
#include "queue/kafka.h"
#include "core/log.h"
#include "core/metrics.h"
#include "core/timeutil.h"

static int add_str(struct json_object *o, const char *key, const char *v)
{
        struct json_object *s;

        if (!v || !*v)
                return 0;
        s = json_object_new_string(v);
        if (!s)
                return -ENOMEM;
        if (json_object_object_add(o, key, s) < 0) {
                json_put(s);
                return -ENOMEM;
        }
        return 0;
}

int audit_event_json(const struct audit_event *ev, int64_t time_ms, char **ret)
{
        struct json_object *o = NULL;
        char ts[32];
        int r;

        *ret = NULL;
        if (!ev->type || !*ev->type)
                return -EINVAL;
        o = json_object_new_object();
        if (!o)
                return -ENOMEM;
        timeutil_format_iso(time_ms, ts, sizeof(ts));
        r = add_str(o, "type", ev->type);
        if (r == 0)
                r = add_str(o, "time", ts);
        if (r == 0)
                r = add_str(o, "tenant", ev->tenant);
        if (r == 0)
                r = add_str(o, "userId", ev->user_id);
        if (r == 0)
                r = add_str(o, "sessionId", ev->session_id);
        if (r == 0)
                r = add_str(o, "leaseId", ev->lease_id);
        if (r == 0)
                r = add_str(o, "sandboxId", ev->sandbox_id);
        if (r == 0)
                r = add_str(o, "ticketId", ev->ticket_id);
        if (r == 0)
                r = add_str(o, "requestId", ev->request_id);
        if (r == 0)
                r = add_str(o, "reason", ev->reason);
        if (r == 0) {
                /* NOSLASHESCAPE: "tenant/user" ids stay greppable as written. */
                const char *s = json_object_to_json_string_ext(
                        o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
                *ret = s ? strdup(s) : NULL;
                if (!*ret)
                        r = -ENOMEM;
        }
        json_put(o);
        return r;
}

void audit_emit(struct kafka_producer *p, const struct audit_event *ev)
{
        char *json = NULL;

        if (!ev || !ev->type || !*ev->type)
                return;
        log_info(LOG_KV({ "EVENT", ev->type }, { "TENANT", ev->tenant }, { "USER_ID", ev->user_id },
                        { "SESSION_ID", ev->session_id }, { "LEASE_ID", ev->lease_id },
                        { "SANDBOX_ID", ev->sandbox_id }, { "TICKET_ID", ev->ticket_id },
                        { "REQUEST_ID", ev->request_id }, { "REASON", ev->reason }),
                 "%s%saudit: %s", ev->note && *ev->note ? ev->note : "",
                 ev->note && *ev->note ? "; " : "", ev->type);
        if (!p)
                return;
        if (audit_event_json(ev, timeutil_now_ms(), &json) < 0) {
                /* Out of memory: the journald copy above is the record. */
                metrics_add("broker_audit_dropped_total", 1);
                return;
        }
        /* Dropped events are counted by kafka_produce_event(); nothing a
         * request could do about them. */
        (void)kafka_produce_event(p, ev->tenant && *ev->tenant ? ev->tenant : NULL, json,
                                  strlen(json));
        free(json);
}

int audit_split_user(const char *scoped, char *tenant, size_t tenantsz, const char **ret_user)
{
        const char *slash;
        size_t n;

        if (tenantsz)
                tenant[0] = '\0';
        *ret_user = scoped;
        if (!scoped)
                return 0;
        slash = strchr(scoped, '/');
        if (!slash)
                return 0;
        n = (size_t)(slash - scoped);
        if (n >= tenantsz)
                return -ENAMETOOLONG;
        memcpy(tenant, scoped, n);
        tenant[n] = '\0';
        *ret_user = slash + 1;
        return 0;
}
