/* osb_diag: see osb_diag.h. */
#include "sandbox/osb_diag.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "providers/http_buf.h"
#include "providers/provider_factory.h"
#include "core/timeutil.h"
#include "codec/utf8.h"

void osb_diag_clear(struct osb_diag *d)
{
        if (!d)
                return;
        free(d->content);
        memset(d, 0, sizeof(*d));
}

static int diag_set(struct osb_diag *d, const char *s, size_t len)
{
        return utf8_sanitize(s, len, &d->content, &d->len);
}

int osb_diag_logs(struct provider *pv, const struct broker_config *cfg,
                  const struct sandbox_record *rec, int tail, struct osb_diag *ret, char *err)
{
        struct sandbox_logs l;
        int r;

        memset(ret, 0, sizeof(*ret));
        if (tail < 1 || tail > cfg->diag_log_tail)
                return -EINVAL;
        if (!strcmp(rec->state, "Stopping") || !strcmp(rec->state, "Terminated")) {
                provider_errf(err,
                              "the sandbox was deleted: its container and its output are gone");
                return -ENOENT;
        }
        if (!rec->ref[0]) {
                snprintf(ret->warning, sizeof(ret->warning),
                         "the sandbox has no container (it is %s): no output to show", rec->state);
                return diag_set(ret, "", 0);
        }
        struct logs_spec spec = {
                .tail = tail,
                .max_bytes = (size_t)cfg->diag_log_max_bytes,
                .timeout_ms = provider_deadline_ms(cfg),
        };
        r = provider_logs(pv, rec->ref, &spec, &l, err);
        if (r == 0) {
                ret->truncated = l.truncated;
                r = diag_set(ret, l.data, l.len);
        }
        provider_logs_release(&l);
        return r;
}

struct events_text {
        struct http_buf out;
        int n;
};

/* One transition as one line: a message's own line breaks become spaces. */
static int events_line(void *ud, const struct sandbox_transition *t)
{
        struct events_text *e = ud;
        char iso[40], head[160];
        size_t i;
        int n, r;

        if (timeutil_format_iso(t->at_ms, iso, sizeof(iso)) < 0)
                snprintf(iso, sizeof(iso), "%lld", t->at_ms);
        n = snprintf(head, sizeof(head), "%s %s%s%s%s", iso, t->state, t->reason[0] ? " " : "",
                     t->reason, t->message_len ? ": " : "");
        if (n < 0 || (size_t)n >= sizeof(head))
                return -EPROTO;
        if ((r = http_buf_append(&e->out, head, (size_t)n)) < 0)
                return r;
        for (i = 0; i < t->message_len; i++) {
                char c = t->message[i] == '\n' || t->message[i] == '\r' ? ' ' : t->message[i];
                if ((r = http_buf_append(&e->out, &c, 1)) < 0)
                        return r;
        }
        e->n++;
        return http_buf_append(&e->out, "\n", 1);
}

int osb_diag_events(struct redis_conn *rc, const struct broker_config *cfg, const char *sid,
                    struct osb_diag *ret)
{
        /* 64 lines of at most ~700 bytes: the cap is never reached */
        struct events_text e = { .out.max = 128 * 1024 };
        int r;

        memset(ret, 0, sizeof(*ret));
        r = sandbox_record_transitions(rc, cfg, sid, events_line, &e);
        if (r == 0) {
                /* the list keeps the last SANDBOX_TRANSITIONS_KEEP: a full one
                 * may have dropped older transitions */
                ret->truncated = e.n >= SANDBOX_TRANSITIONS_KEEP;
                r = diag_set(ret, e.out.data ? e.out.data : "", e.out.len);
        }
        http_buf_release(&e.out);
        return r;
}
