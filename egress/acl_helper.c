/* sandbox-egress-acl: Squid's external ACL helper for sandbox egress
 * (docs/EGRESS.md).
 *
 * Squid runs it as `external_acl_type ... %>a %DST %PORT`: one request per
 * line, "<source address> <host> <port>", answered by one line, OK or ERR.
 * The source address is what sandbox-egress-relay declared in its PROXY
 * line: the sandbox id read as an IPv6 address. The sandbox's policy is the
 * `egress_policy` field of its record <prefix>sandbox:<sid> in Redis (no
 * record, no field, or an unreadable policy: deny). A policy read is cached
 * EGRESS_ACL_CACHE_MS; Squid caches an answer for its ttl= (1 s), so a change
 * takes effect within about 2 s.
 *
 * Every decision is logged once (SANDBOX_ID=, EGRESS_HOST=, EGRESS_PORT=,
 * EGRESS_VERDICT=) and counted (broker_egress_{allowed,denied}_total). A
 * Redis failure denies (and is logged), never allows. Configured by the
 * broker's environment (REDIS_*, LOG_LEVEL, ...; docs/CONFIGURATION.md). */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "egress_policy.h"
#include "log.h"
#include "metrics.h"
#include "redis_conn.h"
#include "timeutil.h"

#define EGRESS_ACL_CACHE_MS 1000
#define EGRESS_ACL_CACHE_N 16
#define EGRESS_ACL_LINE_MAX 4096

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

/* The sandbox id from an IPv6 source address; false if it is none. */
static bool sid_from_addr(const char *addr, char sid[33])
{
        struct in6_addr a;

        if (inet_pton(AF_INET6, addr, &a) != 1)
                return false;
        for (int i = 0; i < 16; i++)
                snprintf(sid + 2 * i, 3, "%02x", a.s6_addr[i]);
        return true;
}

/* Read the policy of sid from Redis into c. Returns 0 (c->found says whether
 * there was a readable one) or a negative errno (Redis unreachable). */
static int policy_load(struct acl *acl, const char *sid, struct cached *c)
{
        char key[160], err[256];
        const char *argv[] = { "HGET", key, "egress_policy" };
        redisReply *rep = NULL;
        int r;

        snprintf(key, sizeof(key), "%ssandbox:%s", acl->cfg.key_prefix, sid);
        r = redis_conn_command(acl->redis, 3, argv, &rep);
        if (r < 0)
                return r;
        c->found = false;
        if (rep->type == REDIS_REPLY_STRING &&
            egress_policy_parse(rep->str, rep->len, &c->policy, err, sizeof(err)) == 0)
                c->found = true;
        else if (rep->type == REDIS_REPLY_STRING)
                log_warn(LOG_KV({ "SANDBOX_ID", sid }), "egress: unreadable policy: %s", err);
        reply_free(rep);
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

/* Squid %-encodes tokens (RFC 1738 style); undo it in place. */
static void unescape(char *s)
{
        char *o = s;

        for (; *s; s++) {
                unsigned v;
                if (s[0] == '%' && s[1] && s[2] && sscanf(s + 1, "%2x", &v) == 1) {
                        *o++ = (char)v;
                        s += 2;
                } else {
                        *o++ = *s;
                }
        }
        *o = '\0';
}

static const char *decide(struct acl *acl, char *line)
{
        char *save = NULL, *src = strtok_r(line, " \t\r\n", &save);
        char *host = strtok_r(NULL, " \t\r\n", &save);
        char *port = strtok_r(NULL, " \t\r\n", &save);
        char sid[33] = "";
        const struct cached *c = NULL;
        bool allow = false;
        int r = 0;

        if (!src || !host || !port)
                return "ERR message=bad%20request";
        unescape(src);
        unescape(host);
        unescape(port);
        /* a name from the sandbox: no control bytes reach the logs */
        for (const char *t = host; *t; t++)
                if ((unsigned char)*t < 0x21 || (unsigned char)*t == 0x7f)
                        return "ERR message=bad%20host";
        if (sid_from_addr(src, sid)) {
                c = policy_get(acl, sid, &r);
                allow = c && c->found && egress_policy_allows(&c->policy, host);
        }
        if (r < 0)
                log_err(LOG_KV({ "SANDBOX_ID", sid }), "egress: policy read failed: %s",
                        strerror(-r));
        log_info(LOG_KV({ "SANDBOX_ID", sid }, { "EGRESS_HOST", host }, { "EGRESS_PORT", port },
                        { "EGRESS_VERDICT", allow ? "allow" : "deny" }),
                 "egress %s %s:%s%s", allow ? "allowed" : "denied", host, port,
                 !sid[0]          ? " (no sandbox identity)"
                 : c && !c->found ? " (no policy)"
                                  : "");
        metrics_add(allow ? "broker_egress_allowed_total" : "broker_egress_denied_total", 1);
        return allow ? "OK" : "ERR";
}

int main(void)
{
        static struct acl acl;
        char err[256], line[EGRESS_ACL_LINE_MAX];
        int r;

        log_init("sandbox-egress-acl", LOG_INFO);
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
        /* unbuffered: poll() on fd 0 must see every line not yet read */
        setvbuf(stdin, NULL, _IONBF, 0);
        for (;;) {
                struct pollfd p = { .fd = 0, .events = POLLIN };

                /* idle: the counts still reach /metrics within a second */
                if (poll(&p, 1, METRICS_FLUSH_MS) == 0) {
                        (void)metrics_flush(acl.redis, &acl.cfg);
                        continue;
                }
                if (!fgets(line, sizeof(line), stdin))
                        break;
                if (!strchr(line, '\n') && !feof(stdin)) {
                        int ch;
                        while ((ch = getchar()) != EOF && ch != '\n')
                                ;
                        puts("ERR message=too%20long");
                        continue;
                }
                puts(decide(&acl, line));
                metrics_flush_due(acl.redis, &acl.cfg);
        }
        (void)metrics_flush(acl.redis, &acl.cfg);
        redis_conn_free(acl.redis);
        return 0;
}
