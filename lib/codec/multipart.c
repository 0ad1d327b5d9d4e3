/* multipart: see multipart.h.
 *
 * The body is scanned byte by byte for the delimiter CRLF "--" boundary.
 * The delimiter's only CR is its first byte (boundary characters never
 * include CR or LF, RFC 2046 bchars), so after a mismatch the match can only
 * restart at a CR: no KMP table is needed, and the bytes of a broken partial
 * match are known (the delimiter's own prefix) and handed out as data. */
#include "codec/multipart.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum mp_state { ST_PREAMBLE, ST_AFTER_DELIM, ST_HEADERS, ST_BODY, ST_EPILOGUE, ST_FAILED };
enum ad_state { AD_START, AD_DASH, AD_CR };

struct multipart {
        const struct multipart_cb *cb;
        void *ud;
        char delim[MULTIPART_BOUNDARY_MAX + 5]; /* "\r\n--" boundary */
        size_t dlen, mi;                        /* delimiter length, bytes matched */
        enum mp_state st;
        enum ad_state ad;
        char hdr[MULTIPART_HDR_MAX + 1];
        size_t hdr_len;
        int parts;
        int err;
};

static bool bchar(char c)
{
        return isalnum((unsigned char)c) || strchr("'()+_,-./:=? ", c) != NULL;
}

static bool boundary_valid(const char *b, size_t n)
{
        if (n == 0 || n > MULTIPART_BOUNDARY_MAX || b[n - 1] == ' ')
                return false;
        for (size_t i = 0; i < n; i++)
                if (!bchar(b[i]))
                        return false;
        return true;
}

/* Value of parameter `name` in a header value "type; a=b; c=\"d\"" into out;
 * quoted-string escapes are undone. Returns 0, -ENOENT, -E2BIG, -EINVAL. */
static int header_param(const char *v, const char *name, char *out, size_t size)
{
        size_t nlen = strlen(name);
        const char *p = strchr(v, ';');

        while (p) {
                size_t o = 0;

                p++;
                while (*p == ' ' || *p == '\t')
                        p++;
                if (strncasecmp(p, name, nlen) != 0 || p[nlen] != '=') {
                        /* skip this parameter, minding quoted semicolons */
                        bool q = false;
                        for (; *p && (q || *p != ';'); p++) {
                                if (*p == '\\' && q && p[1])
                                        p++;
                                else if (*p == '"')
                                        q = !q;
                        }
                        p = *p ? p : NULL;
                        continue;
                }
                p += nlen + 1;
                if (*p == '"') {
                        for (p++; *p && *p != '"'; p++) {
                                if (*p == '\\' && p[1])
                                        p++;
                                if (o + 1 >= size)
                                        return -E2BIG;
                                out[o++] = *p;
                        }
                        if (*p != '"')
                                return -EINVAL;
                } else {
                        for (; *p && *p != ';' && *p != ' ' && *p != '\t'; p++) {
                                if (o + 1 >= size)
                                        return -E2BIG;
                                out[o++] = *p;
                        }
                }
                out[o] = '\0';
                return 0;
        }
        return -ENOENT;
}

int multipart_boundary(const char *content_type, char *boundary, size_t size)
{
        static const char type[] = "multipart/form-data";
        char b[MULTIPART_BOUNDARY_MAX + 2];
        size_t n;

        if (!content_type)
                return -EINVAL;
        while (*content_type == ' ' || *content_type == '\t')
                content_type++;
        if (strncasecmp(content_type, type, sizeof(type) - 1) != 0 ||
            (content_type[sizeof(type) - 1] != ';' && content_type[sizeof(type) - 1] != ' '))
                return -EINVAL;
        if (header_param(content_type, "boundary", b, sizeof(b)) < 0)
                return -EINVAL;
        n = strlen(b);
        if (!boundary_valid(b, n) || n + 1 > size)
                return -EINVAL;
        memcpy(boundary, b, n + 1);
        return 0;
}

int multipart_new(const char *boundary, const struct multipart_cb *cb, void *ud,
                  struct multipart **ret)
{
        size_t n = strlen(boundary);
        struct multipart *m;

        *ret = NULL;
        if (!boundary_valid(boundary, n))
                return -EINVAL;
        m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        m->cb = cb;
        m->ud = ud;
        memcpy(m->delim, "\r\n--", 4);
        memcpy(m->delim + 4, boundary, n);
        m->dlen = n + 4;
        m->st = ST_PREAMBLE;
        m->mi = 2; /* the body may start with the delimiter without its CRLF */
        *ret = m;
        return 0;
}

void multipart_free(struct multipart *m)
{
        free(m);
}

int multipart_parts(const struct multipart *m)
{
        return m->parts;
}

/* Parse the collected headers (CRLF-separated lines, ending with an empty
 * one) and begin the part. */
static int part_begin(struct multipart *m)
{
        struct multipart_part part;
        char *line = m->hdr, *end;
        int r;

        memset(&part, 0, sizeof(part));
        m->hdr[m->hdr_len] = '\0';
        for (; (end = strstr(line, "\r\n")) != NULL && end != line; line = end + 2) {
                char *colon, *v;

                *end = '\0';
                colon = strchr(line, ':');
                if (!colon || colon == line)
                        return -EPROTO;
                *colon = '\0';
                for (v = colon + 1; *v == ' ' || *v == '\t'; v++)
                        ;
                if (strcasecmp(line, "Content-Disposition") == 0) {
                        if (strncasecmp(v, "form-data", 9) != 0)
                                return -EPROTO;
                        /* a repeated header replaces the earlier one */
                        part.name[0] = part.filename[0] = '\0';
                        r = header_param(v, "name", part.name, sizeof(part.name));
                        if (r < 0 && r != -ENOENT)
                                return r == -E2BIG ? -E2BIG : -EPROTO;
                        r = header_param(v, "filename", part.filename, sizeof(part.filename));
                        if (r < 0 && r != -ENOENT)
                                return r == -E2BIG ? -E2BIG : -EPROTO;
                        part.has_filename = r == 0;
                } else if (strcasecmp(line, "Content-Type") == 0) {
                        size_t n = strlen(v);
                        while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t'))
                                n--;
                        if (n >= sizeof(part.content_type))
                                return -E2BIG;
                        memcpy(part.content_type, v, n);
                        part.content_type[n] = '\0';
                }
        }
        if (m->parts >= MULTIPART_MAX_PARTS)
                return -E2BIG;
        m->parts++;
        return m->cb->on_begin ? m->cb->on_begin(m->ud, &part) : 0;
}

static int data(struct multipart *m, const char *p, size_t n)
{
        if (n == 0 || m->st != ST_BODY || !m->cb->on_data)
                return 0;
        return m->cb->on_data(m->ud, p, n);
}

static int fail(struct multipart *m, int r)
{
        m->st = ST_FAILED;
        m->err = r;
        return r;
}

int multipart_feed(struct multipart *m, const char *buf, size_t len)
{
        size_t run = 0; /* start of the current run of body bytes in buf */
        bool in_run = false;
        int r;

        if (m->st == ST_FAILED)
                return m->err;
        for (size_t i = 0; i < len; i++) {
                char c = buf[i];

                switch (m->st) {
                case ST_PREAMBLE:
                case ST_BODY:
                        if (m->mi == 0 && c != m->delim[0]) {
                                /* body bytes up to the next CR, the only byte
                                 * a delimiter can start at: skipped at once */
                                const char *cr = memchr(buf + i, m->delim[0], len - i);

                                if (!in_run) {
                                        run = i;
                                        in_run = true;
                                }
                                i = cr ? (size_t)(cr - buf) - 1 : len - 1;
                                continue;
                        }
                        if (c == m->delim[m->mi]) {
                                if (m->mi == 0 && in_run) {
                                        if ((r = data(m, buf + run, i - run)) < 0)
                                                return fail(m, r);
                                        in_run = false;
                                }
                                if (++m->mi < m->dlen)
                                        continue;
                                /* a whole delimiter */
                                m->mi = 0;
                                if (m->st == ST_BODY && m->cb->on_end &&
                                    (r = m->cb->on_end(m->ud)) < 0)
                                        return fail(m, r);
                                m->st = ST_AFTER_DELIM;
                                m->ad = AD_START;
                                continue;
                        }
                        if (m->mi > 0) { /* a broken partial match was body bytes */
                                size_t k = m->mi;
                                /* the preamble's virtual CRLF was never data */
                                size_t from = m->st == ST_PREAMBLE ? k : 0;
                                if ((r = data(m, m->delim + from, k - from)) < 0)
                                        return fail(m, r);
                                m->mi = 0;
                                if (c == '\r') {
                                        m->mi = 1;
                                        continue;
                                }
                        }
                        if (!in_run) {
                                run = i;
                                in_run = true;
                        }
                        continue;
                case ST_AFTER_DELIM:
                        if (m->ad == AD_START && c == '-') {
                                m->ad = AD_DASH;
                        } else if (m->ad == AD_DASH) {
                                if (c != '-')
                                        return fail(m, -EPROTO);
                                m->st = ST_EPILOGUE;
                        } else if (m->ad == AD_START && (c == ' ' || c == '\t')) {
                                /* transport padding */
                        } else if (m->ad == AD_START && c == '\r') {
                                m->ad = AD_CR;
                        } else if (m->ad == AD_CR && c == '\n') {
                                m->st = ST_HEADERS;
                                m->hdr_len = 0;
                        } else {
                                return fail(m, -EPROTO);
                        }
                        continue;
                case ST_HEADERS:
                        if (m->hdr_len >= MULTIPART_HDR_MAX)
                                return fail(m, -E2BIG);
                        m->hdr[m->hdr_len++] = c;
                        if (c == '\n' && m->hdr_len >= 2 && m->hdr[m->hdr_len - 2] == '\r' &&
                            (m->hdr_len == 2 ||
                             (m->hdr_len >= 4 && memcmp(m->hdr + m->hdr_len - 4, "\r\n\r\n", 4) == 0))) {
                                if ((r = part_begin(m)) < 0)
                                        return fail(m, r);
                                m->st = ST_BODY;
                                m->mi = 0;
                                in_run = false;
                        }
                        continue;
                case ST_EPILOGUE:
                        return 0;
                case ST_FAILED:
                        return m->err;
                }
        }
        if (in_run && (r = data(m, buf + run, len - run)) < 0)
                return fail(m, r);
        return 0;
}

int multipart_finish(struct multipart *m)
{
        if (m->st == ST_FAILED)
                return m->err;
        return m->st == ST_EPILOGUE ? 0 : -EPROTO;
}
