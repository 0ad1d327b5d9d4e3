/* http_buf: see http_buf.h. */
#include "providers/http_buf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int http_buf_append(struct http_buf *b, const void *p, size_t n)
{
        size_t room = b->max > b->len ? b->max - b->len : 0;

        if (n > room) {
                b->truncated = true;
                n = room;
        }
        if (n == 0)
                return 0;
        if (b->len + n + 1 > b->cap) {
                size_t cap = b->cap ? b->cap : 4096;
                char *d;

                while (cap < b->len + n + 1)
                        cap *= 2;
                if (cap > b->max + 1)
                        cap = b->max + 1;
                d = realloc(b->data, cap);
                if (!d)
                        return -ENOMEM;
                b->data = d;
                b->cap = cap;
        }
        memcpy(b->data + b->len, p, n);
        b->len += n;
        b->data[b->len] = '\0';
        return 0;
}

void http_buf_release(struct http_buf *b)
{
        if (!b)
                return;
        free(b->data);
        b->data = NULL;
        b->len = b->cap = 0;
        b->truncated = false;
}

int http_buf_steal(struct http_buf *b, char **ret, size_t *ret_len)
{
        char *d = b->data;

        if (!d) {
                d = calloc(1, 1);
                if (!d)
                        return -ENOMEM;
        }
        *ret = d;
        if (ret_len)
                *ret_len = b->len;
        b->data = NULL;
        b->len = b->cap = 0;
        return 0;
}

char *http_escape(const char *s)
{
        static const char hex[] = "0123456789ABCDEF";
        size_t n = strlen(s);
        char *e = malloc(3 * n + 1), *o = e;

        if (!e)
                return NULL;
        for (; *s; s++) {
                unsigned char ch = (unsigned char)*s;

                if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                    (ch >= '0' && ch <= '9') || ch == '-' || ch == '.' || ch == '_' || ch == '~') {
                        *o++ = (char)ch;
                } else {
                        *o++ = '%';
                        *o++ = hex[ch >> 4];
                        *o++ = hex[ch & 15];
                }
        }
        *o = '\0';
        return e;
}

int http_curl_errno(CURLcode c)
{
        switch (c) {
        case CURLE_COULDNT_CONNECT:
        case CURLE_COULDNT_RESOLVE_HOST:
                return -ECONNREFUSED;
        case CURLE_OPERATION_TIMEDOUT:
                return -ETIMEDOUT;
        case CURLE_OUT_OF_MEMORY:
                return -ENOMEM;
        default:
                return -EIO;
        }
}

void http_curl_method(CURL *c, const char *method, const char *json)
{
        if (json) {
                curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(json));
                curl_easy_setopt(c, CURLOPT_POSTFIELDS, json);
        } else if (strcmp(method, "POST") == 0) {
                curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)0);
                curl_easy_setopt(c, CURLOPT_POSTFIELDS, "");
        } else {
                curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
        }
        if (strcmp(method, "GET") != 0 && strcmp(method, "POST") != 0)
                curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
}
