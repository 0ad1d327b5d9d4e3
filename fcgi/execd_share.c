/* execd_share: see execd_share.h. */
#include "execd_share.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>

struct share_slot {
        bool used, control;
        char tenant[EXECD_SHARE_TENANT_MAX];
};

static struct {
        pthread_mutex_t lock;
        struct share_slot slot[EXECD_SHARE_SLOTS];
} shares = { .lock = PTHREAD_MUTEX_INITIALIZER };

int execd_share_cap(int threads)
{
        return threads - EXECD_THREADS_RESERVED > 1 ? threads - EXECD_THREADS_RESERVED : 1;
}

int execd_share_of(int threads, int pct)
{
        int n = execd_share_cap(threads) * pct / 100;

        return n > 1 ? n : 1;
}

int execd_share_take(const char *tenant, bool control, int share, int cap, int *ret_slot,
                     int *ret_held)
{
        int mine = 0, heavy = 0, free_i = -1;
        bool ok;

        *ret_slot = -1;
        *ret_held = 0;
        if (strlen(tenant) >= EXECD_SHARE_TENANT_MAX)
                return -EINVAL;
        pthread_mutex_lock(&shares.lock);
        for (int i = 0; i < EXECD_SHARE_SLOTS; i++) {
                const struct share_slot *s = &shares.slot[i];

                if (!s->used) {
                        if (free_i < 0)
                                free_i = i;
                        continue;
                }
                if (strcmp(s->tenant, tenant) == 0)
                        mine++;
                if (!s->control)
                        heavy++;
        }
        if (control)
                ok = mine < share + EXECD_SHARE_CONTROL_EXTRA;
        else
                ok = mine < share && heavy < cap;
        ok = ok && free_i >= 0;
        if (ok) {
                struct share_slot *s = &shares.slot[free_i];

                s->used = true;
                s->control = control;
                strcpy(s->tenant, tenant);
                *ret_slot = free_i;
                mine++;
        }
        pthread_mutex_unlock(&shares.lock);
        *ret_held = mine;
        return ok ? 0 : -EAGAIN;
}

void execd_share_put(int slot)
{
        if (slot < 0 || slot >= EXECD_SHARE_SLOTS)
                return;
        pthread_mutex_lock(&shares.lock);
        shares.slot[slot].used = false;
        pthread_mutex_unlock(&shares.lock);
}

int execd_share_held(const char *tenant)
{
        int n = 0;

        pthread_mutex_lock(&shares.lock);
        for (int i = 0; i < EXECD_SHARE_SLOTS; i++)
                if (shares.slot[i].used && (!tenant || strcmp(shares.slot[i].tenant, tenant) == 0))
                        n++;
        pthread_mutex_unlock(&shares.lock);
        return n;
}
