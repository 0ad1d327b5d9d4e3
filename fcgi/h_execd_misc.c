/* h_execd_misc: the rest of the data plane served by the broker: execd's
 * GET /ping and GET /metrics (execd-api.yaml) and the egress sidecar's
 * unserved routes; the egress policy (egress-api.yaml) is h_egress.c.
 *
 * Metrics come from the sandbox's own cgroup (v2: cpu.stat, cpu.max,
 * memory.current, memory.max; v1: cpuacct.usage, cpu.cfs_quota_us and
 * cfs_period_us, memory.usage_in_bytes, memory.limit_in_bytes), sampled by
 * one exec over 200 ms; without a limit the host's numbers (nproc,
 * MemTotal) stand in, as execd reports them. */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "execd.h"
#include "execd_scripts.h"
#include "core/json_input.h"
#include "core/log.h"
#include "readiness.h"
#include "routes.h"
#include "sse.h"
#include "core/timeutil.h"

/* GET /ping: 200 once the sandbox is Running. While it is Pending the
 * answer waits (bounded, readiness.h) for it to leave Pending, then 503 if
 * it has not: the SDKs keep polling on 503. A sandbox that is Failed,
 * Stopping or Terminated will never be ready: 403 SANDBOX_UNUSABLE with the
 * record's reason and message, a status the Python SDK does not retry (its
 * create then fails at once with that message, and deletes the sandbox);
 * 401 for a wrong token stops it as well. */
void h_execd_ping(struct request *req)
{
        char detail[READINESS_DETAIL_MAX];
        struct readiness rd;
        struct execd x;
        int r;

        if (execd_open(req, &x, false) < 0)
                return;
        r = readiness_read(req, x.sandbox_id, &rd);
        if (r < 0) {
                reply_errno(req, r, "sandbox lookup");
                return;
        }
        readiness_wait(req, x.sandbox_id, false, &rd);
        if (readiness_ready(&rd)) {
                reply_empty(req, 200);
                return;
        }
        readiness_detail(&rd, detail, sizeof(detail));
        if (readiness_final(&rd))
                reply_error(req, API_SANDBOX_UNUSABLE, "sandbox %s is %s%s: it will never be ready",
                            x.sandbox_id, rd.state, detail);
        else
                reply_error(req, API_UNAVAILABLE, "sandbox %s is %s%s, not Running yet", x.sandbox_id,
                            rd.state, detail);
}

/* A route of execd-api.yaml or egress-api.yaml the broker does not serve
 * (docs/EXECD.md, "Differences from execd"): 501 with a message, after the
 * same credential check as every data-plane route (an unknown id or a wrong
 * token is still 404). */
void h_execd_not_implemented(struct request *req)
{
        const char *what = strstr(req->route, "/proxy/");
        struct execd x;

        if (execd_open(req, &x, false) < 0)
                return;
        /* "/proxy/44772/files/mv" -> "/files/mv" */
        what = what ? strchr(what + strlen("/proxy/"), '/') : NULL;
        if (what && strncmp(what, "/v1/isolated/", 13) == 0) {
                /* a route of any path below it: name the path asked */
                const char *asked = strstr(req->path, "/v1/isolated/");
                reply_error(req, API_NOT_IMPLEMENTED,
                            "%s %.200s: isolated sessions are in no OpenSandbox specification this "
                            "broker follows and are not served; run commands in the sandbox itself, and "
                            "file operations as a uid/gid under /v1/filesystem/{uid}/{gid} (docs/EXECD.md)",
                            req->method, asked ? asked : what);
                return;
        }
        if (what && (strcmp(what, "/pty") == 0 || strncmp(what, "/pty/", 5) == 0)) {
                reply_error(req, API_NOT_IMPLEMENTED,
                            "%s /pty...: PTY sessions (and their WebSocket) are not served: "
                            "no SDK or CLI of the versions this broker follows calls them; run "
                            "commands, or a bash session (/session), instead "
                            "(docs/OPENSANDBOX.md, \"PTY sessions\")",
                            req->method);
                return;
        }
        reply_error(req, API_NOT_IMPLEMENTED, "%s %s of %s is not served by this broker (docs/EXECD.md)",
                    req->method, what ? what : req->route,
                    strstr(req->route, "/18080/") ? "egress-api.yaml" : "execd-api.yaml");
}

static double kv_num(const char *text, const char *key, bool *ok)
{
        size_t kl = strlen(key);

        for (const char *p = text; p && *p;) {
                const char *nl = strchr(p, '\n');
                if (strncmp(p, key, kl) == 0 && p[kl] == '=') {
                        char *end;
                        double v = strtod(p + kl + 1, &end);
                        *ok = end != p + kl + 1 && (*end == '\n' || *end == '\0' || *end == ' ');
                        return *ok ? v : 0;
                }
                p = nl ? nl + 1 : NULL;
        }
        *ok = false;
        return 0;
}

/* One sample of the sandbox's metrics (the spec's Metrics object) into
 * *ret, or a negative errno (the reason in why). */
static int metrics_sample(struct request *req, struct execd *x, struct json_object **ret, char *why,
                          size_t whysz)
{
        const char *argv[] = { "sh", "-c", EXECD_SH_METRICS, NULL };
        struct exec_result res = { 0 };
        struct json_object *o;
        double cpus = 1, pct = 0, total, used, quota, period;
        bool ok, ok2, ok3, ok4;
        const char *q;
        int r;

        struct exec_spec spec = { .argv = argv, .user = "root", .cwd = "/",
                                  .timeout_ms = req->w->cfg->exec_timeout_ms, .max_output = 8192 };

        *ret = NULL;
        r = provider_exec(req->w->provider, x->ref, &spec, &res, why);
        if (r == 0 && (res.exit_code != 0 || !res.out)) {
                snprintf(why, whysz, "cannot read the sandbox's metrics");
                r = -ENODATA;
        }
        if (r < 0)
                goto out;
        /* CPUs: the cgroup's quota ("max 100000" = none), else nproc */
        q = strstr(res.out, "cpumax=");
        if (q && sscanf(q + 7, "%lf %lf", &quota, &period) == 2 && period > 0)
                cpus = quota / period;
        else if ((cpus = kv_num(res.out, "nproc", &ok)), !ok || cpus <= 0)
                cpus = 1;
        {
                double u0 = kv_num(res.out, "u0", &ok), u1 = kv_num(res.out, "u1", &ok2);
                double t0 = kv_num(res.out, "t0", &ok3), t1 = kv_num(res.out, "t1", &ok4);
                if (ok && ok2 && ok3 && ok4 && t1 > t0)
                        pct = (u1 - u0) / ((t1 - t0) * cpus) * 100.0;
                if (pct < 0)
                        pct = 0;
                if (pct > 100)
                        pct = 100;
        }
        /* v2 "max" does not parse; v1's "no limit" is a huge number: either
         * way the host's memory stands in */
        total = kv_num(res.out, "memmax", &ok);
        {
                double host = kv_num(res.out, "memtotal", &ok2) * 1024;
                if (ok2 && (!ok || total > host))
                        total = host;
        }
        used = kv_num(res.out, "memcur", &ok);
        if (ok) {
                double inactive = kv_num(res.out, "inactive", &ok2);
                if (ok2 && inactive < used)
                        used -= inactive; /* as `docker stats` counts it */
        } else {
                used = total - kv_num(res.out, "memavail", &ok2) * 1024;
        }
        o = json_object_new_object();
        if (!o) {
                r = -ENOMEM;
                snprintf(why, whysz, "out of memory");
                goto out;
        }
        json_object_object_add(o, "cpu_count", json_object_new_double(cpus));
        json_object_object_add(o, "cpu_used_pct", json_object_new_double((double)(int64_t)(pct * 100) / 100));
        json_object_object_add(o, "mem_total_mib", json_object_new_double((double)(int64_t)(total / 1048576 * 100) / 100));
        json_object_object_add(o, "mem_used_mib", json_object_new_double((double)(int64_t)(used / 1048576 * 100) / 100));
        json_object_object_add(o, "timestamp", json_object_new_int64(timeutil_now_ms()));
        *ret = o;
out:
        exec_result_free(&res);
        return r;
}

void h_execd_metrics(struct request *req)
{
        struct json_object *o = NULL;
        char why[PROVIDER_ERR_MAX + 64] = "";
        struct execd x;
        int r;

        if (execd_open(req, &x, true) < 0)
                return;
        r = metrics_sample(req, &x, &o, why, sizeof(why));
        if (r == -ENODATA) {
                reply_error(req, API_SANDBOX_FAILED, "%s", why);
                return;
        }
        if (r < 0) {
                execd_reply_provider(req, &x, r, "metrics", why);
                return;
        }
        reply_json(req, 200, o);
        json_put(o);
}

/* GET /metrics/watch: a Metrics event about every second (each sample
 * itself takes 200 ms) until the client goes, the sandbox stops running,
 * or EXECD_WATCH_MAX_MS. Each watch holds one thread of the execd group,
 * so at most a quarter of them watch at once (503 past that). */
#define EXECD_WATCH_MAX_MS (3600 * 1000)
static atomic_int watching;

void h_execd_metrics_watch(struct request *req)
{
        int cap = req->w->cfg->fcgi_threads / 4;
        int64_t t0 = timeutil_mono_ms();
        struct execd x;
        struct sse s;

        if (execd_open(req, &x, true) < 0)
                return;
        if (atomic_fetch_add(&watching, 1) >= (cap > 0 ? cap : 1)) {
                atomic_fetch_sub(&watching, 1);
                reply_error(req, API_UNAVAILABLE, "too many metrics watches on this process; retry later");
                return;
        }
        sse_begin(&s, req);
        while (timeutil_mono_ms() - t0 < EXECD_WATCH_MAX_MS) {
                struct json_object *o = NULL;
                char why[PROVIDER_ERR_MAX + 64] = "";
                int64_t next = timeutil_mono_ms() + 1000;

                if (metrics_sample(req, &x, &o, why, sizeof(why)) < 0) {
                        log_info(execd_kv(req, &x), "metrics watch ends: %s", why);
                        break;
                }
                int r = sse_data(&s, o);
                json_put(o);
                if (r < 0)
                        break; /* the client is gone */
                while (timeutil_mono_ms() < next)
                        nanosleep(&(struct timespec){ 0, 50 * 1000 * 1000 }, NULL);
        }
        sse_end(&s);
        atomic_fetch_sub(&watching, 1);
}
