/* readiness: see readiness.h. */
#include "readiness.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "sandbox/opensandbox.h"
#include "store/sandbox_record.h"
#include "core/timeutil.h"

/* Requests of this process waiting in readiness_wait right now. */
static struct {
        atomic_int waiting;
} readiness_ctx;

int readiness_read(struct request *req, const char *sid, struct readiness *ret)
{
        struct sandbox_record rec;
        int r = sandbox_record_read(req->w->redis, req->w->cfg, sid, SANDBOX_RECORD_STATUS, &rec);

        memset(ret, 0, sizeof(*ret));
        if (r == -ENOENT) {
                /* gone: it expired after it finished */
                snprintf(ret->state, sizeof(ret->state), "Terminated");
                return 0;
        }
        if (r < 0)
                return r;
        snprintf(ret->state, sizeof(ret->state), "%s", rec.state);
        snprintf(ret->reason, sizeof(ret->reason), "%s", rec.reason);
        snprintf(ret->message, sizeof(ret->message), "%s", rec.message);
        ret->ref = rec.ref[0] != '\0';
        sandbox_record_clear(&rec);
        return 0;
}

static bool waiting_for(const struct readiness *r, bool creating_only)
{
        /* a queued sandbox waits for a slot, which may take minutes */
        return strcmp(r->state, "Pending") == 0 && (!creating_only || strcmp(r->reason, "QUEUED") != 0);
}

void readiness_wait(struct request *req, const char *sid, bool creating_only, struct readiness *r)
{
        int cap = req->w->cfg->fcgi_threads / 4;
        int64_t end = timeutil_mono_ms() + READINESS_HOLD_MS;
        const struct timespec tick = { 0, READINESS_POLL_MS * 1000000L };
        struct readiness next;

        /* a quarter of the threads at most: commands, files and the
         * lifecycle calls keep the rest */
        if (atomic_fetch_add(&readiness_ctx.waiting, 1) >= (cap > 0 ? cap : 1))
                goto out;
        while (waiting_for(r, creating_only) && timeutil_mono_ms() < end) {
                (void)nanosleep(&tick, NULL);
                if (readiness_read(req, sid, &next) < 0)
                        break;
                *r = next;
        }
out:
        atomic_fetch_sub(&readiness_ctx.waiting, 1);
}

bool readiness_ready(const struct readiness *r)
{
        return strcmp(r->state, "Running") == 0 && r->ref;
}

bool readiness_final(const struct readiness *r)
{
        return strcmp(r->state, "Failed") == 0 || strcmp(r->state, "Stopping") == 0 ||
               strcmp(r->state, "Terminated") == 0;
}

void readiness_detail(const struct readiness *r, char *buf, size_t size)
{
        if (r->reason[0] && r->message[0])
                snprintf(buf, size, " (%s: %s)", r->reason, r->message);
        else if (r->reason[0] || r->message[0])
                snprintf(buf, size, " (%s)", r->reason[0] ? r->reason : r->message);
        else if (size > 0)
                buf[0] = '\0';
}
