/* sandbox-agent: the env file (envfile.h). */
#include "envfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SLOTS 2048 /* open addressing over the keys: > 2 * ENVFILE_MAX_VARS, a power of 2 */

struct parse {
        struct envfile *e;
        uint32_t slot[SLOTS]; /* index + 1 into e->vars; 0: empty */
};

static bool key_start(char c)
{
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}

static bool key_char(char c)
{
        return key_start(c) || (c >= '0' && c <= '9');
}

static uint32_t key_hash(const char *k, size_t n)
{
        uint32_t h = 2166136261u;

        for (size_t i = 0; i < n; i++)
                h = (h ^ (unsigned char)k[i]) * 16777619u;
        return h;
}

/* The slot of key (klen bytes) in the table: the one holding it (*found),
 * or the empty one where it goes. */
static uint32_t key_slot(const struct parse *p, const char *key, size_t klen, bool *found)
{
        uint32_t h = key_hash(key, klen) & (SLOTS - 1);

        for (;; h = (h + 1) & (SLOTS - 1)) {
                uint32_t i = p->slot[h];

                if (i == 0) {
                        *found = false;
                        return h;
                }
                if (strncmp(p->e->vars[i - 1], key, klen) == 0 && p->e->vars[i - 1][klen] == '=') {
                        *found = true;
                        return h;
                }
        }
}
/* "KEY=" then the value of vlen bytes at v, decoded when dq (the
 * double-quoted form), as one owned string. */
static char *var_make(const char *key, size_t klen, const char *v, size_t vlen, bool dq)
{
        char *kv = malloc(klen + 1 + vlen + 1), *o;

        if (!kv)
                return NULL;
        memcpy(kv, key, klen);
        kv[klen] = '=';
        o = kv + klen + 1;
        for (size_t i = 0; i < vlen; i++) {
                char c = v[i];

                if (dq && c == '\\' && i + 1 < vlen) {
                        char n = v[i + 1];

                        c = n == 'n'                ? '\n'
                            : n == 'r'              ? '\r'
                            : n == 't'              ? '\t'
                            : n == '\\' || n == '"' ? n
                                                    : 0;
                        if (c) {
                                i++;
                        } else {
                                c = '\\'; /* not an escape: kept as written */
                        }
                }
                *o++ = c;
        }
        *o = '\0';
        return kv;
}

/* Offset just past the line holding offset pos (len when it is the last). */
static size_t next_line(const char *buf, size_t len, size_t pos)
{
        const char *nl = pos < len ? memchr(buf + pos, '\n', len - pos) : NULL;

        return nl ? (size_t)(nl - buf) + 1 : len;
}

/* One entry at pos. Returns the offset where the next one starts, and the
 * value's span in *v / *vlen (*vlen = SIZE_MAX: not an entry). */
static size_t entry_scan(const char *buf, size_t len, size_t pos, size_t *klen, size_t *v,
                         size_t *vlen, bool *dq)
{
        size_t k = pos, end;

        *vlen = SIZE_MAX;
        *dq = false;
        if (k >= len || !key_start(buf[k]))
                return next_line(buf, len, pos);
        while (k < len && key_char(buf[k]))
                k++;
        *klen = k - pos;
        if (k >= len || buf[k] != '=' || *klen > ENVFILE_KEY_MAX)
                return next_line(buf, len, pos);
        k++;
        if (k < len && buf[k] == '\'') {
                const char *q = memchr(buf + k + 1, '\'', len - k - 1);

                if (!q)
                        return next_line(buf, len, pos);
                end = (size_t)(q - buf);
                if ((end + 1 < len && buf[end + 1] != '\n') || memchr(buf + k + 1, '\0', end - k - 1))
                        return next_line(buf, len, pos);
                *v = k + 1;
                *vlen = end - k - 1;
                return end + 1 < len ? end + 2 : len;
        }
        if (k < len && buf[k] == '"') {
                for (end = k + 1; end < len && buf[end] != '"'; end++) {
                        if (buf[end] == '\n' || buf[end] == '\0')
                                return next_line(buf, len, pos);
                        if (buf[end] == '\\' && end + 1 < len && buf[end + 1] != '\n' &&
                            buf[end + 1] != '\0')
                                end++;
                }
                if (end >= len || (end + 1 < len && buf[end + 1] != '\n'))
                        return next_line(buf, len, pos);
                *v = k + 1;
                *vlen = end - k - 1;
                *dq = true;
                return end + 1 < len ? end + 2 : len;
        }
        end = next_line(buf, len, k);
        *v = k;
        *vlen = end - k - (end > k && buf[end - 1] == '\n');
        if (memchr(buf + k, '\0', *vlen))
                *vlen = SIZE_MAX;
        return end;
}

/* An entry's place in the buffer. */
struct span {
        uint32_t key, klen, v, vlen;
        bool dq;
};

int envfile_parse(const char *buf, size_t len, struct envfile *ret)
{
        struct parse *p = calloc(1, sizeof(*p));
        struct span *sp = NULL;
        size_t pos = 0, n = 0, cap = 0;
        int r = -ENOMEM;

        *ret = (struct envfile){ 0 };
        if (!p || len > UINT32_MAX)
                goto out;
        p->e = ret;
        /* forward, as an entry may span lines ... */
        while (pos < len) {
                size_t klen = 0, v = 0, vlen, start = pos;
                bool dq;

                pos = entry_scan(buf, len, pos, &klen, &v, &vlen, &dq);
                if (vlen == SIZE_MAX)
                        continue;
                if (n == cap) {
                        struct span *g = realloc(sp, (cap ? cap * 2 : 64) * sizeof(*sp));
                        if (!g)
                                goto out;
                        sp = g;
                        cap = cap ? cap * 2 : 64;
                }
                sp[n++] = (struct span){ (uint32_t)start, (uint32_t)klen, (uint32_t)v,
                                         (uint32_t)vlen, dq };
        }
        /* ... then backward: the last entry of a key wins, and when there
         * are more keys than ENVFILE_MAX_VARS the newest are kept */
        ret->vars = n ? calloc(ENVFILE_MAX_VARS, sizeof(char *)) : NULL;
        if (n && !ret->vars)
                goto out;
        for (size_t i = n; i-- > 0 && ret->n < ENVFILE_MAX_VARS;) {
                const struct span *s = &sp[i];
                bool found;
                uint32_t h = key_slot(p, buf + s->key, s->klen, &found);
                char *kv;

                if (found)
                        continue;
                kv = var_make(buf + s->key, s->klen, buf + s->v, s->vlen, s->dq);
                if (!kv)
                        goto out;
                ret->vars[ret->n++] = kv;
                p->slot[h] = (uint32_t)ret->n;
        }
        r = 0;
out:
        free(sp);
        free(p);
        return r;
}

int envfile_load(const char *path, struct envfile *ret)
{
        char *buf = NULL;
        size_t len = 0, skip = 0;
        struct stat st;
        int fd, r = 0;

        *ret = (struct envfile){ 0 };
        fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return 0;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
                goto out;
        /* the newest entries are at the end: keep those */
        if (st.st_size > ENVFILE_MAX_BYTES && lseek(fd, st.st_size - ENVFILE_MAX_BYTES, SEEK_SET) < 0)
                goto out;
        buf = malloc(ENVFILE_MAX_BYTES);
        if (!buf) {
                r = -ENOMEM;
                goto out;
        }
        while (len < ENVFILE_MAX_BYTES) {
                ssize_t n = read(fd, buf + len, ENVFILE_MAX_BYTES - len);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break;
                len += (size_t)n;
        }
        if (st.st_size > ENVFILE_MAX_BYTES) {
                /* a cut line is not an entry */
                const char *nl = memchr(buf, '\n', len);
                skip = nl ? (size_t)(nl - buf) + 1 : len;
        }
        r = envfile_parse(buf + skip, len - skip, ret);
out:
        free(buf);
        (void)close(fd);
        return r;
}

void envfile_free(struct envfile *e)
{
        if (!e)
                return;
        for (size_t i = 0; i < e->n; i++)
                free(e->vars[i]);
        free(e->vars);
        *e = (struct envfile){ 0 };
}
