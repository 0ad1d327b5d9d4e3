/* h_metrics: GET /metrics, the Prometheus text exposition (metrics.h):
 * the counters every broker process flushed to Redis plus live gauges. */
#include <stdlib.h>

#include "metrics.h"
#include "routes.h"

void h_metrics(struct request *req)
{
        char *text = NULL;
        size_t len = 0;
        int r = metrics_render(req->w->redis, req->w->cfg, &text, &len);

        if (r < 0) {
                reply_errno(req, r, "metrics");
                return;
        }
        reply_text(req, 200, "text/plain; version=0.0.4; charset=utf-8", text, len);
        free(text);
}
