/* fuzz_egress_policy: NetworkPolicy JSON (OpenSandbox create, EGRESS_DEFAULT)
 * and the egress API's PATCH/DELETE bodies are untrusted bytes. Feeds them to
 * egress_policy_parse(), egress_rules_parse() and egress_targets_parse(), and
 * checks the contracts: accepted policies normalize to JSON that parses back
 * to the same JSON, matching never crashes, merges stay within the cap. Any
 * crash, sanitizer report or abort() is a bug. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/egress_policy.h"
#include "fuzz.h"

static struct egress_policy p, q;
static struct egress_rule rules[EGRESS_RULES_MAX];
static char targets[EGRESS_RULES_MAX][EGRESS_TARGET_MAX + 1];

static void check_policy(const struct egress_policy *pol)
{
        char *s = NULL, *s2 = NULL, err[256] = "";

        CHECK(pol->n <= EGRESS_RULES_MAX);
        for (size_t i = 0; i < pol->n; i++) {
                CHECK(strlen(pol->rules[i].target) <= EGRESS_TARGET_MAX);
                (void)egress_policy_allows(pol, pol->rules[i].target);
        }
        CHECK(egress_policy_to_json(pol, &s) == 0);
        CHECK(egress_policy_parse(s, strlen(s), &q, err, sizeof(err)) == 0);
        CHECK(egress_policy_to_json(&q, &s2) == 0);
        CHECK(strcmp(s, s2) == 0);
        free(s);
        free(s2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        const char *buf = (const char *)data;
        char err[64] = ""; /* short: exercises truncation */
        size_t n = 0;
        int r;

        r = egress_policy_parse(buf, size, &p, err, sizeof(err));
        CHECK(r == 0 || r == -EINVAL || r == -ENOMEM);
        if (r == 0) {
                check_policy(&p);
        } else {
                CHECK(err[0] != '\0' && strnlen(err, sizeof(err)) < sizeof(err));
                egress_policy_deny_all(&p);
        }

        r = egress_rules_parse(buf, size, rules, &n, err, sizeof(err));
        CHECK(r == 0 || r == -EINVAL || r == -ENOMEM);
        if (r == 0) {
                CHECK(n >= 1 && n <= EGRESS_RULES_MAX);
                r = egress_policy_merge(&p, rules, n, err, sizeof(err));
                CHECK(r == 0 || r == -EINVAL);
                check_policy(&p);
        }

        r = egress_targets_parse(buf, size, targets, &n, err, sizeof(err));
        CHECK(r == 0 || r == -EINVAL || r == -ENOMEM);
        if (r == 0) {
                size_t before = p.n;
                CHECK(n >= 1 && n <= EGRESS_RULES_MAX);
                CHECK(egress_policy_remove(&p, targets, n) <= before);
                check_policy(&p);
        }

        /* The input as a host name, NUL-terminated. */
        if (size <= 300) {
                char host[301];
                memcpy(host, buf, size);
                host[size] = '\0';
                (void)egress_policy_allows(&p, host);
        }
        return 0;
}
