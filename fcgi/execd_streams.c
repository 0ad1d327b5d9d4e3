/* execd_streams: see execd_streams.h. */
#include "execd_streams.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

struct stream_slot {
        bool used, interrupted;
        char sid[64];
        char cmd_id[33];
};

static struct {
        pthread_mutex_t lock;
        struct stream_slot slot[EXECD_STREAMS_MAX];
} streams = { .lock = PTHREAD_MUTEX_INITIALIZER };

int execd_streams_take(int cap, const char *sid, const char *id, int *ret_slot)
{
        int per = 0, total = 0, free_i = -1;
        bool ok;

        if (cap < 1)
                cap = 1;
        pthread_mutex_lock(&streams.lock);
        for (int i = 0; i < EXECD_STREAMS_MAX; i++) {
                if (!streams.slot[i].used) {
                        if (free_i < 0)
                                free_i = i;
                        continue;
                }
                total++;
                if (strcmp(streams.slot[i].sid, sid) == 0)
                        per++;
        }
        ok = free_i >= 0 && per < EXECD_STREAMS_PER_SANDBOX && total < cap;
        if (ok) {
                struct stream_slot *s = &streams.slot[free_i];
                *s = (struct stream_slot){ .used = true };
                snprintf(s->sid, sizeof(s->sid), "%s", sid);
                snprintf(s->cmd_id, sizeof(s->cmd_id), "%s", id);
        }
        pthread_mutex_unlock(&streams.lock);
        *ret_slot = ok ? free_i : -1;
        return ok ? 0 : -EAGAIN;
}

void execd_streams_put(int slot)
{
        if (slot < 0 || slot >= EXECD_STREAMS_MAX)
                return;
        pthread_mutex_lock(&streams.lock);
        streams.slot[slot].used = false;
        pthread_mutex_unlock(&streams.lock);
}

bool execd_streams_find(const char *sid, const char *id, bool mark)
{
        bool found = false;

        pthread_mutex_lock(&streams.lock);
        for (int i = 0; i < EXECD_STREAMS_MAX; i++) {
                struct stream_slot *s = &streams.slot[i];
                if (s->used && strcmp(s->sid, sid) == 0 && strcmp(s->cmd_id, id) == 0) {
                        found = true;
                        s->interrupted |= mark;
                        break;
                }
        }
        pthread_mutex_unlock(&streams.lock);
        return found;
}

bool execd_streams_interrupted(int slot)
{
        bool v;

        pthread_mutex_lock(&streams.lock);
        v = streams.slot[slot].interrupted;
        pthread_mutex_unlock(&streams.lock);
        return v;
}
