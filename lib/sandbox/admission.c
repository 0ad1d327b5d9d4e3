/* admission: see admission.h. */
#include "sandbox/admission.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void admission_outcome_clear(struct admission_outcome *o)
{
        if (!o)
                return;
        lease_outcome_clear(&o->lease);
        memset(o, 0, sizeof(*o));
}

enum admission_queue admission_enqueue(struct redis_conn *c, struct kafka_producer *kafka,
                                       const struct lease_request *req, const char *ticket_id,
                                       int *ret_produce_r)
{
        char *msg = NULL;
        int r = lease_ticket_message(req, ticket_id, &msg);

        if (r == 0)
                r = kafka ? kafka_produce_sync(kafka, ticket_id, msg, strlen(msg)) : -ENOTCONN;
        free(msg);
        *ret_produce_r = r;
        if (r == 0)
                return ADMISSION_QUEUE_PRODUCED;
        /* 1: a supervisor already served it from Redis (granted or expired) */
        if (lease_ticket_cancel(c, ticket_id) == 1)
                return ADMISSION_QUEUE_SERVED;
        return ADMISSION_QUEUE_UNAVAILABLE;
}

int admission_acquire(struct redis_conn *c, struct kafka_producer *kafka,
                      const struct broker_config *cfg, const struct lease_request *req,
                      struct admission_outcome *ret)
{
        int r;

        memset(ret, 0, sizeof(*ret));
        r = lease_acquire(c, cfg, req, &ret->lease);
        if (r < 0)
                return r;
        if (ret->lease.kind == LEASE_QUEUED && ret->lease.new_ticket)
                ret->queue = admission_enqueue(c, kafka, req, ret->lease.ticket_id, &ret->produce_r);
        return 0;
}
