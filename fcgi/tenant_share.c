/* tenant_share: see tenant_share.h. */
#include "tenant_share.h"

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>

struct share_slot {
        bool used, control;
        char tenant[TENANT_SHARE_TENANT_MAX];
};

static struct {
        pthread_mutex_t lock;
        struct share_slot slot[TENANT_SHARE_SLOTS];
} shares = { .lock = PTHREAD_MUTEX_INITIALIZER };

int tenant_share_cap(int threads)
{
        return threads - TENANT_SHARE_RESERVED > 1 ? threads - TENANT_SHARE_RESERVED : 1;
}

int tenant_share_of(int threads, int pct)
{
        int n = tenant_share_cap(threads) * pct / 100;

        return n > 1 ? n : 1;
}

struct control_call {
        const char *group, *method, *route;
};

static const struct control_call control_calls[] = {
        { "execd", "GET", "/v1/sandboxes/{}/proxy/44772/command/status/{}" },
        { "execd", "GET", "/v1/sandboxes/{}/proxy/44772/command/{}/logs" },
        { "execd", "DELETE", "/v1/sandboxes/{}/proxy/44772/command" },
        { "execd", "DELETE", "/v1/sandboxes/{}/proxy/44772/session/{}" },
        { "execd", "GET", "/v1/sandboxes/{}/proxy/44772/ping" },
        { "execd", "GET", "/v1/sandboxes/{}/ingress-auth" },
        { "sandboxes", "GET", "/v1/sandboxes/{}" },
        { "sandboxes", "GET", "/v1/sandboxes/{}/exec/{}" },
        { "sandboxes", "DELETE", "/v1/sandboxes/{}" },
        { "sandboxes", "POST", "/v1/sandboxes/{}/stop" },
        { "sandboxes", "DELETE", "/v1/snapshots/{}" },
        { "sandboxes", "DELETE", "/v1/volumes/{}" },
};

bool tenant_share_is_control(const char *group, const char *method, const char *route)
{
        if (!group || !method || !route)
                return false;
        /* HEAD is served as GET (routes_dispatch) */
        if (strcmp(method, "HEAD") == 0)
                method = "GET";
        for (size_t i = 0; i < sizeof(control_calls) / sizeof(control_calls[0]); i++)
                if (strcmp(control_calls[i].group, group) == 0 &&
                    strcmp(control_calls[i].method, method) == 0 &&
                    strcmp(control_calls[i].route, route) == 0)
                        return true;
        return false;
}

int tenant_share_take(const char *tenant, bool control, int share, int cap, int *ret_slot,
                      int *ret_held)
{
        int mine = 0, heavy = 0, free_i = -1;
        bool ok;

        *ret_slot = -1;
        *ret_held = 0;
        if (strlen(tenant) >= TENANT_SHARE_TENANT_MAX)
                return -EINVAL;
        pthread_mutex_lock(&shares.lock);
        for (int i = 0; i < TENANT_SHARE_SLOTS; i++) {
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
                ok = mine < share + TENANT_SHARE_CONTROL_EXTRA;
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

void tenant_share_put(int slot)
{
        if (slot < 0 || slot >= TENANT_SHARE_SLOTS)
                return;
        pthread_mutex_lock(&shares.lock);
        shares.slot[slot].used = false;
        pthread_mutex_unlock(&shares.lock);
}

int tenant_share_held(const char *tenant)
{
        int n = 0;

        pthread_mutex_lock(&shares.lock);
        for (int i = 0; i < TENANT_SHARE_SLOTS; i++)
                if (shares.slot[i].used && (!tenant || strcmp(shares.slot[i].tenant, tenant) == 0))
                        n++;
        pthread_mutex_unlock(&shares.lock);
        return n;
}
