/* sandbox_record: see sandbox_record.h. */
#include "store/sandbox_record.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/redis_conn.h"
#include "store/sandbox_record_reply.h"

#define CORE 0u

enum kind {
        TEXT,  /* into a char array of the struct */
        NUM,   /* a long long; absent = 0 */
        NUM_1, /* a long long; absent = -1 */
        HEAP,  /* a malloc'd char * of the struct */
};

/* The record's fields: the one list every read takes its HMGET from. */
static const struct field {
        const char *name;
        unsigned group;
        enum kind kind;
        size_t off, size; /* of the member; size for TEXT only */
} fields[] = {
#define F_TEXT(n, g, m) { n, g, TEXT, offsetof(struct sandbox_record, m), sizeof(((struct sandbox_record *)0)->m) }
#define F(n, g, k, m) { n, g, k, offsetof(struct sandbox_record, m), 0 }
        F_TEXT("state", CORE, state),
        F_TEXT("reason", CORE, reason),
        F_TEXT("lastTransitionAt", CORE, last_transition_at),
        F_TEXT("ref", CORE, ref),
        F_TEXT("userId", SANDBOX_RECORD_OWNER, user_id),
        F_TEXT("tenant", SANDBOX_RECORD_OWNER, tenant),
        F_TEXT("answerBy", SANDBOX_RECORD_OWNER, answer_by),
        F_TEXT("image", SANDBOX_RECORD_SPEC, image),
        F("nanoCpus", SANDBOX_RECORD_SPEC, NUM, nano_cpus),
        F("memoryBytes", SANDBOX_RECORD_SPEC, NUM, memory_bytes),
        F("pids", SANDBOX_RECORD_SPEC, NUM, pids),
        F("diskMb", SANDBOX_RECORD_SPEC, NUM_1, disk_mb),
        F_TEXT("poolLimits", SANDBOX_RECORD_SPEC, pool_limits),
        F_TEXT("runtime", SANDBOX_RECORD_SPEC, runtime),
        F("entrypoint", SANDBOX_RECORD_SPEC, HEAP, entrypoint),
        F("env", SANDBOX_RECORD_SPEC, HEAP, env),
        F("volumes", SANDBOX_RECORD_VOLUMES, HEAP, volumes),
        F("egress_policy", SANDBOX_RECORD_EGRESS, HEAP, egress_policy),
        F("message", SANDBOX_RECORD_STATUS, HEAP, message),
#undef F
#undef F_TEXT
};
#define N_FIELDS (sizeof(fields) / sizeof(fields[0]))

int sandbox_record_key(const struct broker_config *cfg, const char *sid, char *buf, size_t size)
{
        int n = snprintf(buf, size, "%ssandbox:%s", cfg->key_prefix, sid);

        if (n < 0 || (size_t)n >= size) {
                if (size)
                        buf[0] = '\0';
                return -ENAMETOOLONG;
        }
        return 0;
}

/* One field's value v (NULL: absent) into rec. */
static int field_set(struct sandbox_record *rec, const struct field *f, const redisReply *v)
{
        char *at = (char *)rec + f->off;
        const char *s = reply_is_str(v, NULL) ? v->str : NULL;
        size_t len = s ? v->len : 0;

        switch (f->kind) {
        case TEXT:
                if (len >= f->size)
                        return -EPROTO;
                memcpy(at, s ? s : "", len);
                at[len] = '\0';
                return 0;
        case NUM:
        case NUM_1:
                *(long long *)(void *)at = s ? strtoll(s, NULL, 10) : f->kind == NUM_1 ? -1 : 0;
                return 0;
        case HEAP: {
                char *p = malloc(len + 1);

                if (!p)
                        return -ENOMEM;
                memcpy(p, s ? s : "", len);
                p[len] = '\0';
                *(char **)(void *)at = p;
                if (f->off == offsetof(struct sandbox_record, egress_policy))
                        rec->egress_policy_len = len;
                return 0;
        }
        }
        return -EPROTO;
}

int sandbox_record_read(struct redis_conn *rc, const struct broker_config *cfg, const char *sid,
                        unsigned groups, struct sandbox_record *ret)
{
        char key[SANDBOX_RECORD_KEY_MAX];
        const char *argv[2 + N_FIELDS];
        const struct field *asked[N_FIELDS];
        redisReply *rep = NULL;
        size_t n = 0;
        int r;

        memset(ret, 0, sizeof(*ret));
        r = sandbox_record_key(cfg, sid, key, sizeof(key));
        if (r < 0)
                return r;
        argv[0] = "HMGET";
        argv[1] = key;
        for (size_t i = 0; i < N_FIELDS; i++)
                if (fields[i].group == CORE || (fields[i].group & groups)) {
                        asked[n] = &fields[i];
                        argv[2 + n++] = fields[i].name;
                }
        r = redis_conn_command(rc, (int)(2 + n), argv, &rep);
        if (r < 0)
                return r;
        r = -EPROTO;
        if (rep->type != REDIS_REPLY_ARRAY || rep->elements != n)
                goto out;
        /* fields[0] is the state: no state, no record */
        r = -ENOENT;
        if (!reply_is_str(rep->element[0], NULL))
                goto out;
        ret->groups = groups;
        for (size_t i = 0; i < n; i++) {
                r = field_set(ret, asked[i], rep->element[i]);
                if (r < 0)
                        goto out;
        }
        r = 0;
out:
        reply_free(rep);
        if (r < 0)
                sandbox_record_clear(ret);
        return r;
}

int sandbox_record_from_hash(const redisReply *h, unsigned groups, struct sandbox_record *ret)
{
        int r;

        memset(ret, 0, sizeof(*ret));
        if (!h || h->type != REDIS_REPLY_ARRAY || h->elements % 2)
                return -EPROTO;
        /* fields[0] is the state: no state, no record */
        if (!reply_hash_get(h, fields[0].name))
                return -ENOENT;
        ret->groups = groups;
        for (size_t i = 0; i < N_FIELDS; i++) {
                if (fields[i].group != CORE && !(fields[i].group & groups))
                        continue;
                r = field_set(ret, &fields[i], reply_hash_find(h, fields[i].name));
                if (r < 0) {
                        sandbox_record_clear(ret);
                        return r;
                }
        }
        return 0;
}

void sandbox_record_clear(struct sandbox_record *rec)
{
        if (!rec)
                return;
        free(rec->entrypoint);
        free(rec->env);
        free(rec->volumes);
        free(rec->egress_policy);
        free(rec->message);
        memset(rec, 0, sizeof(*rec));
}

/* "<ms>\t<state>\t<reason>\t<message>" into *t; -EPROTO when it is not one. */
static int transition_parse(const char *s, size_t len, struct sandbox_transition *t)
{
        const char *end = s + len, *f[3];
        char num[24];
        char *e;
        size_t n;
        int i;

        memset(t, 0, sizeof(*t));
        f[0] = memchr(s, '\t', len);
        for (i = 1; i < 3 && f[i - 1]; i++)
                f[i] = memchr(f[i - 1] + 1, '\t', (size_t)(end - f[i - 1] - 1));
        if (i < 3 || !f[2])
                return -EPROTO;
        n = (size_t)(f[0] - s);
        if (n == 0 || n >= sizeof(num))
                return -EPROTO;
        memcpy(num, s, n);
        num[n] = '\0';
        t->at_ms = strtoll(num, &e, 10);
        if (*e || t->at_ms < 0)
                return -EPROTO;
        n = (size_t)(f[1] - f[0] - 1);
        if (n == 0 || n >= sizeof(t->state))
                return -EPROTO;
        memcpy(t->state, f[0] + 1, n);
        n = (size_t)(f[2] - f[1] - 1);
        if (n >= sizeof(t->reason))
                return -EPROTO;
        memcpy(t->reason, f[1] + 1, n);
        t->message = f[2] + 1;
        t->message_len = (size_t)(end - f[2] - 1);
        return 0;
}

int sandbox_record_transitions(struct redis_conn *rc, const struct broker_config *cfg, const char *sid,
                               int (*fn)(void *ud, const struct sandbox_transition *t), void *ud)
{
        char key[SANDBOX_RECORD_KEY_MAX];
        redisReply *rep = NULL;
        size_t i;
        int n, r;

        n = snprintf(key, sizeof(key), "%ssbevents:%s", cfg->key_prefix, sid);
        if (n < 0 || (size_t)n >= sizeof(key))
                return -ENAMETOOLONG;
        const char *argv[] = { "LRANGE", key, "0", "-1" };
        r = redis_conn_command(rc, 4, argv, &rep);
        if (r < 0)
                return r;
        if (rep->type != REDIS_REPLY_ARRAY) {
                r = -EPROTO;
                goto out;
        }
        for (i = 0; i < rep->elements; i++) {
                const redisReply *e = rep->element[i];
                struct sandbox_transition t;

                if (e->type != REDIS_REPLY_STRING || transition_parse(e->str, e->len, &t) < 0)
                        continue;
                if ((r = fn(ud, &t)) < 0)
                        goto out;
        }
        r = 0;
out:
        reply_free(rep);
        return r;
}
