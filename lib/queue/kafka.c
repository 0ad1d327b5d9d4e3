/* kafka: see kafka.h. */
#include "queue/kafka.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <librdkafka/rdkafka.h>

#include "core/log.h"
#include "core/metrics.h"

/* Audit events waiting for their delivery report, at most: beyond it an
 * event is dropped rather than queued, so the events topic can never fill
 * librdkafka's queue (default 100000 messages) that tickets share. */
#define KAFKA_EVENTS_INFLIGHT_MAX 10000
#define AUDIT_DROPPED "broker_audit_dropped_total"

/* The _private of an audit event: tells its delivery report from a
 * ticket's (which points at its struct delivery). */
static char event_mark;

struct kafka_producer {
        rd_kafka_t *rk;    /* tickets: linger.ms 0, each produce sent at once */
        rd_kafka_t *rk_ev; /* audit events: batched (KAFKA_EVENTS_LINGER_MS) */
        char topic[128];
        char events_topic[160];
        atomic_int events_inflight;
        int timeout_ms;
        pthread_t poller;
        bool poller_started;
        volatile bool stop;
};

struct kafka_consumer {
        rd_kafka_t *rk;
        char topic[128];
        unsigned generation;
};

/* One produce waiting for its delivery report. Shared by the waiter and the
 * delivery callback; the last of the two to let go frees it. */
struct delivery {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        int refs;
        bool done;
        rd_kafka_resp_err_t err;
};

static void delivery_unref(struct delivery *d)
{
        int left;

        pthread_mutex_lock(&d->lock);
        left = --d->refs;
        pthread_mutex_unlock(&d->lock);
        if (left == 0) {
                pthread_mutex_destroy(&d->lock);
                pthread_cond_destroy(&d->cond);
                free(d);
        }
}

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
        struct kafka_producer *p = opaque;
        struct delivery *d = m->_private;

        (void)rk;
        if ((void *)d == &event_mark) {
                atomic_fetch_sub(&p->events_inflight, 1);
                if (m->err) {
                        metrics_add(AUDIT_DROPPED, 1);
                        log_debug(NULL, "kafka: audit event lost: %s", rd_kafka_err2str(m->err));
                }
                return;
        }
        if (!d)
                return;
        pthread_mutex_lock(&d->lock);
        d->err = m->err;
        d->done = true;
        pthread_cond_signal(&d->cond);
        pthread_mutex_unlock(&d->lock);
        delivery_unref(d);
}

static void on_log(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
        (void)rk;
        /* librdkafka is library code: its chatter goes to debug, its
         * warnings stay warnings (e.g. a broker that cannot be reached). */
        log_emit(level <= LOG_WARNING ? LOG_WARNING : LOG_DEBUG, NULL, "kafka %s: %s", fac, buf);
}

static int conf_set(rd_kafka_conf_t *conf, const char *k, const char *v, char *err, size_t errsz)
{
        if (rd_kafka_conf_set(conf, k, v, err, errsz) != RD_KAFKA_CONF_OK)
                return -EINVAL;
        return 0;
}

/* Serves the delivery reports of both instances: a ticket's at once (its
 * acquire waits for it), the events' (counting only) at least every 50 ms. */
static void *producer_poll_loop(void *arg)
{
        struct kafka_producer *p = arg;

        while (!p->stop) {
                rd_kafka_poll(p->rk, 50);
                rd_kafka_poll(p->rk_ev, 0);
        }
        return NULL;
}

/* One librdkafka producer instance of p (opaque for on_delivery): acks=all,
 * idempotent; linger_ms is how long it gathers messages into one request. */
static rd_kafka_t *instance_new(const struct broker_config *cfg, const char *client_id,
                                int linger_ms, struct kafka_producer *p, char *err, size_t errsz)
{
        rd_kafka_conf_t *conf = rd_kafka_conf_new();
        char timeout[16], linger[16];
        rd_kafka_t *rk;

        if (!conf) {
                snprintf(err, errsz, "out of memory");
                return NULL;
        }
        snprintf(timeout, sizeof(timeout), "%d", cfg->kafka_timeout_ms);
        snprintf(linger, sizeof(linger), "%d", linger_ms);
        if (conf_set(conf, "bootstrap.servers", cfg->kafka_brokers, err, errsz) < 0 ||
            conf_set(conf, "client.id", client_id, err, errsz) < 0 ||
            conf_set(conf, "acks", "all", err, errsz) < 0 ||
            conf_set(conf, "enable.idempotence", "true", err, errsz) < 0 ||
            conf_set(conf, "linger.ms", linger, err, errsz) < 0 ||
            conf_set(conf, "message.timeout.ms", timeout, err, errsz) < 0 ||
            conf_set(conf, "socket.timeout.ms", timeout, err, errsz) < 0) {
                rd_kafka_conf_destroy(conf);
                return NULL;
        }
        rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
        rd_kafka_conf_set_log_cb(conf, on_log);
        rd_kafka_conf_set_opaque(conf, p);
        rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, errsz);
        if (!rk)
                rd_kafka_conf_destroy(conf); /* owned by rk only on success */
        return rk;
}

int kafka_producer_new(const struct broker_config *cfg, const char *client_id,
                       struct kafka_producer **ret, char *err, size_t errsz)
{
        struct kafka_producer *p = calloc(1, sizeof(*p));
        char ev_id[160];
        int r = -EINVAL;

        *ret = NULL;
        if (!p)
                return -ENOMEM;
        snprintf(p->topic, sizeof(p->topic), "%s", cfg->kafka_topic);
        snprintf(p->events_topic, sizeof(p->events_topic), "%s", cfg->kafka_events_topic);
        atomic_init(&p->events_inflight, 0);
        p->timeout_ms = cfg->kafka_timeout_ms;
        snprintf(ev_id, sizeof(ev_id), "%s-events", client_id);
        p->rk = instance_new(cfg, client_id, 0, p, err, errsz);
        if (!p->rk)
                goto out;
        p->rk_ev = instance_new(cfg, ev_id, cfg->kafka_events_linger_ms, p, err, errsz);
        if (!p->rk_ev)
                goto out;
        if (pthread_create(&p->poller, NULL, producer_poll_loop, p) != 0) {
                snprintf(err, errsz, "cannot start the delivery thread");
                r = -EAGAIN;
                goto out;
        }
        p->poller_started = true;
        *ret = p;
        p = NULL;
        r = 0;
out:
        kafka_producer_free(p);
        return r;
}

void kafka_producer_flush(struct kafka_producer *p)
{
        if (!p)
                return;
        rd_kafka_flush(p->rk_ev, p->timeout_ms);
        rd_kafka_flush(p->rk, p->timeout_ms);
}

void kafka_producer_free(struct kafka_producer *p)
{
        if (!p)
                return;
        if (p->rk)
                rd_kafka_flush(p->rk, p->timeout_ms);
        if (p->rk_ev)
                rd_kafka_flush(p->rk_ev, p->timeout_ms); /* the events still lingering */
        p->stop = true;
        if (p->poller_started)
                pthread_join(p->poller, NULL);
        if (p->rk_ev)
                rd_kafka_destroy(p->rk_ev);
        if (p->rk)
                rd_kafka_destroy(p->rk);
        free(p);
}

int kafka_produce_sync(struct kafka_producer *p, const char *key, const char *payload, size_t len)
{
        struct delivery *d = calloc(1, sizeof(*d));
        struct timespec deadline;
        rd_kafka_resp_err_t err;
        int r = 0;

        if (!d)
                return -ENOMEM;
        pthread_mutex_init(&d->lock, NULL);
        pthread_cond_init(&d->cond, NULL);
        d->refs = 2;
        err = rd_kafka_producev(p->rk, RD_KAFKA_V_TOPIC(p->topic),
                                RD_KAFKA_V_KEY(key, strlen(key)),
                                RD_KAFKA_V_VALUE((void *)payload, len),
                                RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_OPAQUE(d),
                                RD_KAFKA_V_END);
        if (err) {
                log_debug(NULL, "kafka: produce: %s", rd_kafka_err2str(err));
                d->refs = 1;
                delivery_unref(d);
                return err == RD_KAFKA_RESP_ERR__QUEUE_FULL ? -ENOBUFS : -EIO;
        }
        /* message.timeout.ms bounds the delivery report; the extra second
         * only guards against a report that never comes. */
        clock_gettime(CLOCK_REALTIME, &deadline);
        deadline.tv_sec += p->timeout_ms / 1000 + 1;
        deadline.tv_nsec += (long)(p->timeout_ms % 1000) * 1000000L;
        if (deadline.tv_nsec >= 1000000000L) {
                deadline.tv_sec++;
                deadline.tv_nsec -= 1000000000L;
        }
        pthread_mutex_lock(&d->lock);
        while (!d->done && r == 0)
                r = -pthread_cond_timedwait(&d->cond, &d->lock, &deadline);
        if (d->done)
                r = d->err == RD_KAFKA_RESP_ERR_NO_ERROR ? 0
                    : d->err == RD_KAFKA_RESP_ERR__MSG_TIMED_OUT ? -ETIMEDOUT : -EIO;
        else
                r = -ETIMEDOUT;
        if (r < 0 && d->done)
                log_debug(NULL, "kafka: delivery: %s", rd_kafka_err2str(d->err));
        pthread_mutex_unlock(&d->lock);
        delivery_unref(d);
        return r;
}

int kafka_produce_event(struct kafka_producer *p, const char *key, const char *payload, size_t len)
{
        rd_kafka_resp_err_t err;

        if (atomic_fetch_add(&p->events_inflight, 1) >= KAFKA_EVENTS_INFLIGHT_MAX) {
                atomic_fetch_sub(&p->events_inflight, 1);
                metrics_add(AUDIT_DROPPED, 1);
                return -ENOBUFS;
        }
        /* No RD_KAFKA_MSG_F_BLOCK: a full queue fails here at once. */
        err = rd_kafka_producev(p->rk_ev, RD_KAFKA_V_TOPIC(p->events_topic),
                                RD_KAFKA_V_KEY(key, key ? strlen(key) : 0),
                                RD_KAFKA_V_VALUE((void *)payload, len),
                                RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                RD_KAFKA_V_OPAQUE(&event_mark), RD_KAFKA_V_END);
        if (err) {
                atomic_fetch_sub(&p->events_inflight, 1);
                metrics_add(AUDIT_DROPPED, 1);
                log_debug(NULL, "kafka: audit event: %s", rd_kafka_err2str(err));
                return err == RD_KAFKA_RESP_ERR__QUEUE_FULL ? -ENOBUFS : -EIO;
        }
        return 0;
}

int kafka_producer_check(struct kafka_producer *p, int timeout_ms, char *err, size_t errsz)
{
        const struct rd_kafka_metadata *md = NULL;
        rd_kafka_topic_t *t = rd_kafka_topic_new(p->rk, p->topic, NULL);
        rd_kafka_resp_err_t e;
        int r = 0;

        if (!t) {
                snprintf(err, errsz, "cannot create topic handle");
                return -EIO;
        }
        e = rd_kafka_metadata(p->rk, 0, t, &md, timeout_ms);
        if (e) {
                snprintf(err, errsz, "%s", rd_kafka_err2str(e));
                r = -EIO;
        } else if (md->topic_cnt != 1 || md->topics[0].err) {
                snprintf(err, errsz, "topic %s: %s", p->topic,
                         md->topic_cnt ? rd_kafka_err2str(md->topics[0].err) : "missing");
                r = -EIO;
        }
        if (md)
                rd_kafka_metadata_destroy(md);
        rd_kafka_topic_destroy(t);
        return r;
}

int kafka_topic_ensure(struct kafka_producer *p, int timeout_ms, char *err, size_t errsz)
{
        /* The tickets' one partition keeps the queue in order; the events
         * topic starts with one too (an operator may create it beforehand
         * with more: events are keyed by tenant, so a tenant's stay in order). */
        const char *names[2] = { p->topic, p->events_topic };
        rd_kafka_NewTopic_t *nt[2] = { NULL, NULL };
        rd_kafka_AdminOptions_t *opts = NULL;
        rd_kafka_queue_t *q = NULL;
        rd_kafka_event_t *ev = NULL;
        const rd_kafka_topic_result_t **res;
        size_t n = 0;
        int r = -EIO;

        for (int i = 0; i < 2; i++)
                if (!(nt[i] = rd_kafka_NewTopic_new(names[i], 1, 1, err, errsz)))
                        goto out;
        q = rd_kafka_queue_new(p->rk);
        opts = rd_kafka_AdminOptions_new(p->rk, RD_KAFKA_ADMIN_OP_CREATETOPICS);
        if (!q || !opts)
                goto out;
        rd_kafka_AdminOptions_set_operation_timeout(opts, timeout_ms, err, errsz);
        rd_kafka_AdminOptions_set_request_timeout(opts, timeout_ms, err, errsz);
        rd_kafka_CreateTopics(p->rk, nt, 2, opts, q);
        ev = rd_kafka_queue_poll(q, timeout_ms + 1000);
        if (!ev) {
                snprintf(err, errsz, "no answer from Kafka within %d ms", timeout_ms);
                goto out;
        }
        if (rd_kafka_event_error(ev)) {
                snprintf(err, errsz, "%s", rd_kafka_event_error_string(ev));
                goto out;
        }
        res = rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(ev), &n);
        if (n != 2) {
                snprintf(err, errsz, "Kafka answered for %zu topic(s) of 2", n);
                goto out;
        }
        for (size_t i = 0; i < n; i++) {
                rd_kafka_resp_err_t e = rd_kafka_topic_result_error(res[i]);
                if (e && e != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) {
                        snprintf(err, errsz, "topic %s: %s", rd_kafka_topic_result_name(res[i]),
                                 rd_kafka_err2str(e));
                        goto out;
                }
        }
        r = 0;
out:
        if (ev)
                rd_kafka_event_destroy(ev);
        if (opts)
                rd_kafka_AdminOptions_destroy(opts);
        if (q)
                rd_kafka_queue_destroy(q);
        for (int i = 0; i < 2; i++)
                if (nt[i])
                        rd_kafka_NewTopic_destroy(nt[i]);
        return r;
}

static void on_rebalance(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                         rd_kafka_topic_partition_list_t *parts, void *opaque)
{
        struct kafka_consumer *c = opaque;

        if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
                log_info(NULL, "kafka: assigned %d partition(s)", parts->cnt);
                rd_kafka_assign(rk, parts);
        } else {
                log_info(NULL, "kafka: partitions revoked");
                c->generation++;
                rd_kafka_assign(rk, NULL);
        }
}

int kafka_consumer_new(const struct broker_config *cfg, struct kafka_consumer **ret, char *err,
                       size_t errsz)
{
        struct kafka_consumer *c = NULL;
        rd_kafka_conf_t *conf = rd_kafka_conf_new();
        rd_kafka_topic_partition_list_t *topics = NULL;
        char session[16], heartbeat[16];
        int r = -EINVAL;

        *ret = NULL;
        if (!conf)
                return -ENOMEM;
        c = calloc(1, sizeof(*c));
        if (!c) {
                r = -ENOMEM;
                goto out;
        }
        snprintf(c->topic, sizeof(c->topic), "%s", cfg->kafka_topic);
        snprintf(session, sizeof(session), "%d", cfg->kafka_session_timeout_ms);
        snprintf(heartbeat, sizeof(heartbeat), "%d", cfg->kafka_session_timeout_ms / 3);
        if (conf_set(conf, "bootstrap.servers", cfg->kafka_brokers, err, errsz) < 0 ||
            conf_set(conf, "group.id", cfg->kafka_group, err, errsz) < 0 ||
            conf_set(conf, "client.id", "broker-supervisor", err, errsz) < 0 ||
            conf_set(conf, "enable.auto.commit", "false", err, errsz) < 0 ||
            conf_set(conf, "enable.auto.offset.store", "false", err, errsz) < 0 ||
            conf_set(conf, "auto.offset.reset", "earliest", err, errsz) < 0 ||
            conf_set(conf, "session.timeout.ms", session, err, errsz) < 0 ||
            conf_set(conf, "heartbeat.interval.ms", heartbeat, err, errsz) < 0 ||
            /* Grants do not wait for Kafka: a release wakes the supervisor
             * through Redis and the grant script takes the queue's head from
             * Redis. Kafka only has to deliver each ticket once, in order, so
             * a long poll (less idle CPU for broker and supervisor) costs no
             * grant latency (measured in docs/LOAD-CAPACITY.md). */
            conf_set(conf, "fetch.wait.max.ms", "100", err, errsz) < 0 ||
            conf_set(conf, "fetch.error.backoff.ms", "50", err, errsz) < 0)
                goto out;
        rd_kafka_conf_set_log_cb(conf, on_log);
        rd_kafka_conf_set_rebalance_cb(conf, on_rebalance);
        rd_kafka_conf_set_opaque(conf, c);
        c->rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, errsz);
        if (!c->rk)
                goto out;
        conf = NULL;
        rd_kafka_poll_set_consumer(c->rk);
        topics = rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(topics, cfg->kafka_topic, RD_KAFKA_PARTITION_UA);
        if (rd_kafka_subscribe(c->rk, topics)) {
                snprintf(err, errsz, "cannot subscribe to %s", cfg->kafka_topic);
                r = -EIO;
                goto out;
        }
        *ret = c;
        c = NULL;
        r = 0;
out:
        if (topics)
                rd_kafka_topic_partition_list_destroy(topics);
        if (conf)
                rd_kafka_conf_destroy(conf);
        kafka_consumer_free(c);
        return r;
}

void kafka_consumer_free(struct kafka_consumer *c)
{
        if (!c)
                return;
        if (c->rk) {
                rd_kafka_consumer_close(c->rk);
                rd_kafka_destroy(c->rk);
        }
        free(c);
}

int kafka_consumer_poll(struct kafka_consumer *c, int timeout_ms, struct kafka_msg **ret)
{
        rd_kafka_message_t *m = rd_kafka_consumer_poll(c->rk, timeout_ms);
        struct kafka_msg *out;

        *ret = NULL;
        if (!m)
                return 0;
        if (m->err) {
                int fatal = m->err == RD_KAFKA_RESP_ERR__FATAL;
                if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
                        log_debug(NULL, "kafka: consume: %s", rd_kafka_message_errstr(m));
                rd_kafka_message_destroy(m);
                return fatal ? -EIO : 0;
        }
        out = calloc(1, sizeof(*out));
        if (out)
                out->payload = malloc(m->len + 1);
        if (!out || !out->payload) {
                free(out);
                rd_kafka_message_destroy(m);
                return -ENOMEM;
        }
        memcpy(out->payload, m->payload, m->len);
        out->payload[m->len] = '\0';
        out->len = m->len;
        out->partition = m->partition;
        out->offset = m->offset;
        rd_kafka_message_destroy(m);
        *ret = out;
        return 1;
}

int kafka_consumer_commit(struct kafka_consumer *c, const struct kafka_msg *m)
{
        rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
        rd_kafka_resp_err_t e;

        if (!l)
                return -ENOMEM;
        rd_kafka_topic_partition_list_add(l, c->topic, m->partition)->offset = m->offset + 1;
        e = rd_kafka_commit(c->rk, l, 0 /* synchronous */);
        rd_kafka_topic_partition_list_destroy(l);
        if (e) {
                log_debug(NULL, "kafka: commit: %s", rd_kafka_err2str(e));
                return -EIO;
        }
        return 0;
}

int kafka_consumer_pause(struct kafka_consumer *c, int pause)
{
        rd_kafka_topic_partition_list_t *parts = NULL;
        rd_kafka_resp_err_t e;

        if (rd_kafka_assignment(c->rk, &parts))
                return -EIO;
        e = pause ? rd_kafka_pause_partitions(c->rk, parts) : rd_kafka_resume_partitions(c->rk, parts);
        rd_kafka_topic_partition_list_destroy(parts);
        return e ? -EIO : 0;
}

unsigned kafka_consumer_generation(const struct kafka_consumer *c)
{
        return c->generation;
}

void kafka_msg_free(struct kafka_msg *m)
{
        if (!m)
                return;
        free(m->payload);
        free(m);
}
