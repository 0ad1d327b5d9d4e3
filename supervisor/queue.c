/* queue: the ticket queue as the supervisor sees it.
 *
 * Kafka carries the tickets in arrival order; Redis holds their state. A
 * message is committed only after its ticket has left the queue in Redis,
 * so a supervisor killed at any point re-reads it, finds the ticket already
 * granted (the grant script is idempotent) and just commits. A granted
 * lease's sandbox is an intent in Redis from the same step, so nothing of
 * it lives only here either. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <json-c/json.h>

#include "queue/audit.h"
#include "core/json_input.h"
#include "store/lease.h"
#include "core/log.h"
#include "core/metrics.h"
#include "supervisor.h"

static void on_granted(void *ud, const char *ticket, const char *lease, const char *user,
                       const char *session)
{
        struct sup *s = ud;
        char tenant[AUDIT_TENANT_MAX];
        const char *bare;
        int64_t created, granted;

        /* The grant stored the lease's intent with it (grant.lua): the
         * loop's intake takes it next, like any other supervisor's would. */
        s->granted = true;
        metrics_add("broker_tickets_granted_total", 1);
        if (lease_ticket_times(s->redis, &s->cfg, ticket, &created, &granted) == 0)
                metrics_observe_ms(METRICS_GRANT_WAIT, granted - created);
        log_info(LOG_KV({ "TICKET_ID", ticket }, { "LEASE_ID", lease }, { "USER_ID", user },
                        { "SESSION_ID", session }),
                 "ticket granted");
        (void)audit_split_user(user, tenant, sizeof(tenant), &bare);
        audit_emit(s->events, &(struct audit_event){ .type = AUDIT_LEASE_GRANTED,
                                                     .tenant = tenant,
                                                     .user_id = bare,
                                                     .session_id = session,
                                                     .lease_id = lease,
                                                     .ticket_id = ticket });
}

void sup_ticket_expired(struct sup *s, const char *ticket)
{
        char user[272], session[160], tenant[AUDIT_TENANT_MAX];
        const char *bare;

        metrics_add("broker_tickets_expired_total", 1);
        log_info(LOG_KV({ "TICKET_ID", ticket }),
                 "ticket expired: nobody polled it within TICKET_TTL_MS");
        /* The grant script names only the ticket; its Kafka message, if we
         * hold it, names the user. */
        sup_queue_ticket_user(s, ticket, user, sizeof(user), session, sizeof(session));
        (void)audit_split_user(user, tenant, sizeof(tenant), &bare);
        audit_emit(s->events, &(struct audit_event){ .type = AUDIT_TICKET_EXPIRED,
                                                     .tenant = tenant,
                                                     .user_id = bare,
                                                     .session_id = session,
                                                     .ticket_id = ticket,
                                                     .reason = "not polled within TICKET_TTL_MS" });
}

static void on_expired(void *ud, const char *ticket)
{
        sup_ticket_expired(ud, ticket);
}

static struct sup_fifo_entry *fifo_at(struct sup *s, int i)
{
        return &s->fifo[(s->fifo_head + i) % SUP_FIFO_MAX];
}

static void fifo_pop(struct sup *s)
{
        kafka_msg_free(fifo_at(s, 0)->msg);
        fifo_at(s, 0)->msg = NULL;
        s->fifo_head = (s->fifo_head + 1) % SUP_FIFO_MAX;
        s->fifo_len--;
}

static void copy_field(struct json_object *o, const char *key, char *buf, size_t size)
{
        struct json_object *v;

        if (json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string))
                snprintf(buf, size, "%s", json_object_get_string(v));
}

void sup_queue_ticket_user(struct sup *s, const char *ticket_id, char *user, size_t usersz,
                           char *session, size_t sessionsz)
{
        user[0] = session[0] = '\0';
        for (int i = 0; i < s->fifo_len; i++) {
                struct sup_fifo_entry *e = fifo_at(s, i);
                struct json_object *o = NULL;
                char err[64];

                if (strcmp(e->ticket_id, ticket_id) != 0)
                        continue;
                if (json_input_parse_object(e->msg->payload, e->msg->len, JSON_INPUT_MAX_DEPTH, &o,
                                            err, sizeof(err)) == 0) {
                        char tenant[AUDIT_TENANT_MAX] = "", bare[JSON_INPUT_ID_MAX + 1] = "";

                        /* The message names tenant and user apart; hand
                         * them back scoped, as Redis spells users. */
                        copy_field(o, "tenant", tenant, sizeof(tenant));
                        copy_field(o, "userId", bare, sizeof(bare));
                        if (tenant[0] && bare[0])
                                snprintf(user, usersz, "%s/%s", tenant, bare);
                        else
                                snprintf(user, usersz, "%s", bare);
                        copy_field(o, "sessionId", session, sessionsz);
                }
                json_put(o);
                return;
        }
}

void sup_queue_clear(struct sup *s)
{
        while (s->fifo_len > 0)
                fifo_pop(s);
        s->last_offset = -1;
        s->paused = false;
}

int sup_queue_fetch(struct sup *s, int timeout_ms)
{
        struct kafka_msg *m = NULL;
        int r, got = 0;

        if (kafka_consumer_generation(s->consumer) != s->generation) {
                /* Partitions moved: what we hold may now belong to another
                 * supervisor, which re-reads it from the committed offset. */
                s->generation = kafka_consumer_generation(s->consumer);
                sup_queue_clear(s);
        }
        if (s->fifo_len >= SUP_FIFO_MAX) {
                if (!s->paused && kafka_consumer_pause(s->consumer, 1) == 0)
                        s->paused = true;
                timeout_ms = 0; /* still poll: it keeps our group membership alive */
        } else if (s->paused && kafka_consumer_pause(s->consumer, 0) == 0) {
                s->paused = false;
        }
        for (;;) {
                r = kafka_consumer_poll(s->consumer, got ? 0 : timeout_ms, &m);
                if (r <= 0)
                        return r < 0 ? r : got;
                if (m->offset <= s->last_offset) {
                        kafka_msg_free(m); /* re-delivered after a pause: already held */
                        continue;
                }
                if (s->fifo_len >= SUP_FIFO_MAX) {
                        /* Cannot happen while paused; keep it safe anyway:
                         * dropping an uncommitted message only delays it. */
                        kafka_msg_free(m);
                        return got;
                }
                s->last_offset = m->offset;
                struct sup_fifo_entry *e = fifo_at(s, s->fifo_len);
                e->msg = m;
                if (lease_ticket_message_id(m->payload, m->len, e->ticket_id) < 0) {
                        log_warn(NULL, "kafka: message at offset %lld is not a ticket; skipping it",
                                 (long long)m->offset);
                        e->ticket_id[0] = '\0';
                }
                s->fifo_len++;
                got++;
        }
}

int sup_queue_grant(struct sup *s)
{
        const struct lease_grant_hooks grant_hooks = { on_granted, on_expired, NULL, s };
        char state[16];
        int r;

        /* Work on the oldest held ticket; one step may grant several. */
        while (s->fifo_len > 0) {
                struct sup_fifo_entry *e = fifo_at(s, 0);

                if (e->ticket_id[0]) {
                        r = lease_grant_step(s->redis, &s->cfg, e->ticket_id, &grant_hooks, state);
                        if (r < 0)
                                return r;
                        if (strcmp(state, "queued") == 0)
                                return 0; /* no slot yet: wait for a wake-up */
                }
                r = kafka_consumer_commit(s->consumer, e->msg);
                if (r < 0)
                        log_warn(LOG_KV({ "TICKET_ID", e->ticket_id }),
                                 "kafka: commit failed; the ticket will be seen again and skipped");
                fifo_pop(s);
        }
        /* Nothing held: still grant whatever Redis has queued (a ticket whose
         * message another supervisor holds, or one a crash left unsent). */
        return lease_grant_step(s->redis, &s->cfg, "", &grant_hooks, NULL);
}
