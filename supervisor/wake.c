/* wake: a Redis pub/sub subscription to <prefix>wake, published by every
 * script that frees a slot, so the supervisor grants the next ticket at once
 * instead of on its next tick. If the subscription is down the supervisor
 * still works, at tick speed. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>

#include "core/log.h"
#include "supervisor.h"
#include "core/timeutil.h"

#define SUB_RETRY_MS 1000

void sup_wake_close(struct sup *s)
{
        if (s->sub)
                redisFree(s->sub);
        s->sub = NULL;
}

static int sub_connect(struct sup *s)
{
        struct timeval tv = { s->cfg.redis_timeout_ms / 1000, (s->cfg.redis_timeout_ms % 1000) * 1000 };
        redisReply *rep = NULL;
        char channel[96];

        if (s->cfg.redis_host[0] == '/')
                s->sub = redisConnectUnixWithTimeout(s->cfg.redis_host, tv);
        else
                s->sub = redisConnectWithTimeout(s->cfg.redis_host, s->cfg.redis_port, tv);
        if (!s->sub || s->sub->err)
                goto fail;
        snprintf(channel, sizeof(channel), "%swake", s->cfg.key_prefix);
        rep = redisCommand(s->sub, "SUBSCRIBE %s", channel);
        if (!rep || rep->type != REDIS_REPLY_ARRAY)
                goto fail;
        freeReplyObject(rep);
        return 0;
fail:
        if (rep)
                freeReplyObject(rep);
        sup_wake_close(s);
        s->sub_retry_at = timeutil_mono_ms() + SUB_RETRY_MS;
        return -EIO;
}

int sup_wake_wait(struct sup *s, int timeout_ms)
{
        struct pollfd pfd;
        void *reply = NULL;
        int woken = 0;

        if (!s->sub && timeutil_mono_ms() >= s->sub_retry_at && sub_connect(s) == 0)
                log_info(NULL, "subscribed to %swake", s->cfg.key_prefix);
        if (!s->sub) {
                poll(NULL, 0, timeout_ms);
                return 0;
        }
        pfd = (struct pollfd){ .fd = s->sub->fd, .events = POLLIN };
        if (poll(&pfd, 1, timeout_ms) <= 0)
                return 0;
        if (redisBufferRead(s->sub) != REDIS_OK)
                goto broken;
        for (;;) {
                if (redisGetReplyFromReader(s->sub, &reply) != REDIS_OK)
                        goto broken;
                if (!reply)
                        break;
                freeReplyObject(reply);
                woken = 1;
        }
        return woken;
broken:
        log_warn(NULL, "wake subscription lost; granting on ticks until it is back");
        sup_wake_close(s);
        s->sub_retry_at = timeutil_mono_ms() + SUB_RETRY_MS;
        return 1; /* re-check the queue now rather than miss a wake-up */
}
