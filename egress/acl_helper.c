/* sandbox-egress-acl: Squid's external ACL helper for sandbox egress
 * (docs/EGRESS.md).
 *
 * Squid runs it as `external_acl_type ... %>a %PORT %DATA %DST`: one request
 * per line (parsed by lib/sandbox/egress_acl_req.c), answered by one line,
 * OK or ERR. The source address is what sandbox-egress-relay declared in its
 * PROXY line: the sandbox id read as an IPv6 address.
 *
 * Two roles, one per external_acl_type of egress/squid.conf.in:
 *  - (no argument) the policy question, on the name as the sandbox wrote it
 *    (Squid has resolved nothing yet): the sandbox's policy is the
 *    `egress_policy` field of its record <prefix>sandbox:<sid> in Redis (no
 *    record, no field, an unreadable policy or request: deny). A policy read
 *    is cached EGRESS_ACL_CACHE_MS; Squid caches no answer (cache=0), so
 *    every request is asked here, and a change takes effect within about a
 *    second. A Redis failure denies (and is logged). A deny is the request's
 *    verdict: logged and counted here. A yes is not yet one (Squid then
 *    checks the addresses the name resolves to): not logged here.
 *  - `--record`: the recorder of the verdicts squid.conf reaches itself: a
 *    port not in EGRESS_PORTS, a resolved address in a blocked range (Squid
 *    asks it last on its deny lines; the deny happens whatever it answers:
 *    each of those lines is repeated without it), and "allowed" (asked last
 *    on the allow line, after the policy and the address checks: there its
 *    OK is needed, anything else denies). It logs, counts and answers OK.
 *  - `--vault`: whether the sandbox's Credential Vault binds the host, for
 *    http (<data> "-") or https (<data> "https"): Squid's
 *    `adaptation_access` to the injector asks it, and, for https, its
 *    `ssl_bump` (only a CONNECT to a bound host is decrypted).
 *
 * Every verdict is logged once (SANDBOX_ID=, EGRESS_HOST=, EGRESS_PORT=,
 * EGRESS_VERDICT=, and EGRESS_REASON=policy|port|address for a deny) and
 * counted (broker_egress_allowed_total, broker_egress_denied_total{reason=}).
 * Configured by the broker's environment (REDIS_*, LOG_LEVEL, ...;
 * docs/CONFIGURATION.md). */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/config.h"
#include "sandbox/egress_acl_req.h"
#include "core/egress_policy.h"
#include "core/log.h"
#include "core/metrics.h"
#include "store/metrics_store.h"
#include "store/redis_conn.h"
#include "store/sandbox_record.h"
#include "core/timeutil.h"
#include "core/json_input.h"
#include "sandbox/vault_inject.h"
#include "sandbox/vault_store.h"

enum { ROLE_POLICY, ROLE_RECORD, ROLE_VAULT };

#define EGRESS_ACL_CACHE_MS 1000
#define EGRESS_ACL_CACHE_N 16

struct cached {
        char sid[33];
        int64_t at; /* 0: empty */
        bool found;
        struct egress_policy policy;
};

struct acl {
        struct broker_config cfg;
        struct redis_conn *redis;
        struct cached cache[EGRESS_ACL_CACHE_N];
        unsigned next; /* round-robin eviction */
};

/* Read the policy of sid from Redis into c. Returns 0 (c->found says whether
 * there was a readable one) or a negative errno (Redis unreachable). */
static int policy_load(struct acl *acl, const char *sid, struct cached *c)
{
        char err[256];
        struct sandbox_record rec;
        int r = sandbox_record_read(acl->redis, &acl->cfg, sid, SANDBOX_RECORD_EGRESS, &rec);

        c->found = false;
        if (r == -ENOENT || r == -ENAMETOOLONG)
                return 0; /* no record: no policy */
        if (r == -EPROTO) {
                log_warn(LOG_KV({ "SANDBOX_ID", sid }), "egress: unreadable sandbox record");
                return 0;
        }
        if (r < 0)
                return r;
        if (rec.egress_policy[0] && egress_policy_parse(rec.egress_policy, rec.egress_policy_len,
                                                        &c->policy, err, sizeof(err)) == 0)
                c->found = true;
        else if (rec.egress_policy[0])
                log_warn(LOG_KV({ "SANDBOX_ID", sid }), "egress: unreadable policy: %s", err);
        sandbox_record_clear(&rec);
        return 0;
}

static const struct cached *policy_get(struct acl *acl, const char *sid, int *ret_err)
{
        int64_t now = timeutil_mono_ms();
        struct cached *c;

        *ret_err = 0;
        for (int i = 0; i < EGRESS_ACL_CACHE_N; i++) {
                c = &acl->cache[i];
                if (c->at && !strcmp(c->sid, sid) && now - c->at < EGRESS_ACL_CACHE_MS)
                        return c;
        }
        c = &acl->cache[acl->next++ % EGRESS_ACL_CACHE_N];
        c->at = 0;
        *ret_err = policy_load(acl, sid, c);
        if (*ret_err < 0)
                return NULL;
        snprintf(c->sid, sizeof(c->sid), "%s", sid);
        c->at = now ? now : 1;
        return c;
}

/* Log and count one decision: allowed, or denied for reason; why is a note
 * for the message ("" or " (no policy)", ...). The message of a decision
 * with nothing to note is "egress allowed|denied <host>:<port>" (the
 * journalctl recipes of docs/OPERATIONS.md and tests/deploy/run rely on it). */
static void decision_log(const struct egress_acl_req *q, bool allow, enum egress_refusal reason,
                         const char *why)
{
        const char *rname = allow ? NULL : egress_refusal_name(reason);
        const char *host = q->host[0] ? q->host : "-";
        char port[12] = "-", series[METRICS_SERIES_LEN];

        if (q->port >= 0)
                snprintf(port, sizeof(port), "%d", q->port);
        log_info(LOG_KV({ "SANDBOX_ID", q->sid }, { "EGRESS_HOST", host }, { "EGRESS_PORT", port },
                        { "EGRESS_VERDICT", allow ? "allow" : "deny" }, { "EGRESS_REASON", rname }),
                 "egress %s %s:%s%s", allow ? "allowed" : "denied", host, port, why);
        if (allow) {
                metrics_add("broker_egress_allowed_total", 1);
                return;
        }
        snprintf(series, sizeof(series), "broker_egress_denied_total{reason=\"%s\"}", rname);
        metrics_add(series, 1);
}

/* One policy question: OK or ERR. A deny (a line that does not parse is
 * one too) is logged and counted; an OK is recorded later, by the --record
 * role on squid.conf's allow line, if the address checks pass. */
static const char *decide(struct acl *acl, const char *line, size_t len)
{
        struct egress_acl_req q;
        const struct cached *c = NULL;
        bool allow = false;
        int r = 0, pr;

        pr = egress_acl_req_parse(line, len, &q);
        if (pr == 0 && (q.refusal != EGRESS_REFUSAL_NONE || q.allowed || q.https)) {
                /* a record's (or the vault's) line sent to the policy role: a wrong squid.conf */
                log_err(NULL, "egress: a policy question with a verdict (port|address|allowed); "
                              "check squid.conf against egress/squid.conf.in");
                pr = -EINVAL;
        }
        if (pr == 0 && q.sid[0]) {
                c = policy_get(acl, q.sid, &r);
                allow = c && c->found && egress_policy_allows(&c->policy, q.host);
        }
        if (r < 0)
                log_err(LOG_KV({ "SANDBOX_ID", q.sid }), "egress: policy read failed: %s",
                        strerror(-r));
        if (allow)
                return "OK";
        decision_log(&q, false, EGRESS_REFUSAL_NONE,
                     pr < 0           ? " (unreadable request)"
                     : !q.sid[0]      ? " (no sandbox identity)"
                     : c && !c->found ? " (no policy)"
                                      : "");
        return "ERR";
}

/* One verdict of squid.conf's (--record): a refusal (port, address) or an
 * allow, logged and counted. A refusal is answered OK, but its answer does
 * not matter: squid.conf.in follows every deny line that asks this helper
 * with the same deny without it. On the allow line the answer decides: OK
 * for a request read whole, with its sandbox; anything else is denied (and
 * logged so, as the policy role would have). */
static const char *record(const char *line, size_t len)
{
        struct egress_acl_req q;
        int r = egress_acl_req_parse(line, len, &q);

        if (q.allowed) {
                bool ok = r == 0 && q.sid[0];
                decision_log(&q, ok, EGRESS_REFUSAL_NONE,
                             ok      ? ""
                             : r < 0 ? " (unreadable request)"
                                     : " (no sandbox identity)");
                return ok ? "OK" : "ERR";
        }
        if (q.refusal == EGRESS_REFUSAL_NONE) {
                log_err(NULL, "egress: a record without its verdict (port|address|allowed); "
                              "check squid.conf against egress/squid.conf.in");
                return "ERR";
        }
        decision_log(&q, false, q.refusal,
                     r < 0                              ? " (refused by Squid; unreadable request)"
                     : q.refusal == EGRESS_REFUSAL_PORT ? " (refused by Squid: port not allowed)"
                                                        : " (refused by Squid: blocked address)");
        return "OK";
}

/* --vault: whether the sandbox's Credential Vault binds the host for http
 * or, <data> "https", for https (vault_inject.h), i.e. whether Squid sends
 * the request through the injector (egress/vault_icap.c), and whether it
 * decrypts a CONNECT (ssl_bump). Not a verdict: nothing is logged or
 * counted. A Redis failure or an unreadable vault is ERR: the request then
 * leaves as the sandbox wrote it (a CONNECT: tunnelled, not decrypted),
 * placeholders and all, never with a secret. */
static const char *vault_bound(struct acl *acl, const char *line, size_t len)
{
        struct egress_acl_req q;
        struct json_object *v = NULL;
        bool yes = false;

        if (egress_acl_req_parse(line, len, &q) == 0 && q.sid[0] &&
            vault_store_get(acl->redis, q.sid, &v) == 0)
                yes = vault_host_bound(v, q.https ? "https" : "http", q.host);
        json_put(v);
        return yes ? "OK" : "ERR";
}

/* The line being read from Squid: its first EGRESS_ACL_REQ_MAX bytes. */
struct input {
        char buf[EGRESS_ACL_REQ_MAX];
        size_t len; /* > EGRESS_ACL_REQ_MAX: cut, the rest is dropped */
};

/* Answer every line completed by data[0..n): one answer per line, in order,
 * as Squid expects (no concurrency= channel). */
static void input_feed(struct acl *acl, struct input *in, int role, const char *data, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                if (in->len < sizeof(in->buf))
                        in->buf[in->len] = data[i];
                if (in->len <= sizeof(in->buf))
                        in->len++;
                if (data[i] != '\n')
                        continue;
                puts(role == ROLE_RECORD  ? record(in->buf, in->len)
                     : role == ROLE_VAULT ? vault_bound(acl, in->buf, in->len)
                                          : decide(acl, in->buf, in->len));
                in->len = 0;
        }
}

int main(int argc, char **argv)
{
        static struct acl acl;
        static struct input in;
        char err[256];
        int role = argc == 2 && !strcmp(argv[1], "--record")  ? ROLE_RECORD
                   : argc == 2 && !strcmp(argv[1], "--vault") ? ROLE_VAULT
                                                              : ROLE_POLICY;
        int r;

        log_init("sandbox-egress-acl", LOG_INFO);
        if (argc > 2 || (argc == 2 && role == ROLE_POLICY)) {
                log_err(NULL, "usage: sandbox-egress-acl [--record|--vault]");
                return 2;
        }
        r = config_load(&acl.cfg, err, sizeof(err));
        if (r < 0) {
                log_err(NULL, "config: %s", err);
                return 1;
        }
        log_init("sandbox-egress-acl", acl.cfg.log_priority);
        r = redis_conn_new(&acl.cfg, &acl.redis);
        if (r < 0) {
                log_err(NULL, "redis: %s", strerror(-r));
                return 1;
        }
        setvbuf(stdout, NULL, _IOLBF, 0);
        for (;;) {
                struct pollfd p = { .fd = 0, .events = POLLIN };
                char chunk[4096];
                ssize_t n;

                /* idle: the counts still reach /metrics within a second */
                if (poll(&p, 1, METRICS_FLUSH_MS) == 0) {
                        (void)metrics_flush(acl.redis, &acl.cfg);
                        continue;
                }
                n = read(0, chunk, sizeof(chunk));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break;
                input_feed(&acl, &in, role, chunk, (size_t)n);
                metrics_flush_due(acl.redis, &acl.cfg);
        }
        (void)metrics_flush(acl.redis, &acl.cfg);
        redis_conn_free(acl.redis);
        return 0;
}
