/* reply_fake: hand-built hiredis replies for the unit tests that replace
 * Redis at the link seam (redis_conn_command, redis_conn_script). Each is
 * allocated as hiredis allocates its own, so the code under test releases
 * it with reply_free (freeReplyObject) exactly as a real one; an array takes
 * ownership of its elements. A failed allocation fails the test. */
#pragma once
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <hiredis/hiredis.h>

static inline redisReply *r_new(int type)
{
        redisReply *r = calloc(1, sizeof(*r));

        assert_non_null(r);
        r->type = type;
        return r;
}

/* A reply of type (STRING, STATUS, ERROR) holding n bytes of s. */
static inline redisReply *r_typed_bytes(int type, const char *s, size_t n)
{
        redisReply *r = r_new(type);

        r->str = malloc(n + 1);
        assert_non_null(r->str);
        memcpy(r->str, s, n);
        r->str[n] = '\0';
        r->len = n;
        return r;
}

static inline redisReply *r_bytes(const char *s, size_t n)
{
        return r_typed_bytes(REDIS_REPLY_STRING, s, n);
}

static inline redisReply *r_strtype(int type, const char *s)
{
        return r_typed_bytes(type, s, strlen(s));
}

static inline redisReply *r_str(const char *s)
{
        return r_strtype(REDIS_REPLY_STRING, s);
}

static inline redisReply *r_status(const char *s)
{
        return r_strtype(REDIS_REPLY_STATUS, s);
}

static inline redisReply *r_int(long long v)
{
        redisReply *r = r_new(REDIS_REPLY_INTEGER);

        r->integer = v;
        return r;
}

static inline redisReply *r_nil(void)
{
        return r_new(REDIS_REPLY_NIL);
}

/* An array of n replies (taking ownership of each). */
static inline redisReply *r_arr(size_t n, ...)
{
        redisReply *r = r_new(REDIS_REPLY_ARRAY);
        va_list ap;

        r->elements = n;
        r->element = calloc(n ? n : 1, sizeof(*r->element));
        assert_non_null(r->element);
        va_start(ap, n);
        for (size_t i = 0; i < n; i++)
                r->element[i] = va_arg(ap, redisReply *);
        va_end(ap);
        return r;
}

/* An array of bulk strings from a NULL-terminated list, like HGETALL's. */
static inline redisReply *r_strs(const char *first, ...)
{
        redisReply *r = r_new(REDIS_REPLY_ARRAY);
        size_t n = 0;
        va_list ap;

        va_start(ap, first);
        for (const char *s = first; s; s = va_arg(ap, const char *))
                n++;
        va_end(ap);
        r->elements = n;
        r->element = calloc(n ? n : 1, sizeof(*r->element));
        assert_non_null(r->element);
        va_start(ap, first);
        n = 0;
        for (const char *s = first; s; s = va_arg(ap, const char *))
                r->element[n++] = r_str(s);
        va_end(ap);
        return r;
}
