/* daytona_exec: see daytona_exec.h. */
#include "providers/daytona/daytona_exec.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/base64.h"

/* $1 nonce, $2 cap, $3 stdin file or "", $4 timeout (s), $5 user or "",
 * then argv. The command's streams go to files so that their sizes are
 * known and only a capped prefix travels back, base64'd so that any byte
 * survives the JSON "result" string. */
static const char wrapper[] =
        "n=$1 m=$2 i=$3 t=$4 u=$5; shift 5\n"
        "o=$(mktemp) && e=$(mktemp) || exit 125\n"
        "if [ -n \"$u\" ]; then set -- runuser -u \"$u\" -- \"$@\"; fi\n"
        "if [ -n \"$i\" ]; then timeout -s KILL \"$t\" \"$@\" <\"$i\" >\"$o\" 2>\"$e\"; r=$?;"
        " rm -f -- \"$i\";\n"
        "else timeout -s KILL \"$t\" \"$@\" </dev/null >\"$o\" 2>\"$e\"; r=$?; fi\n"
        "printf ':%s: %s %s %s\\n' \"$n\" \"$r\" \"$(wc -c <\"$o\")\" \"$(wc -c <\"$e\")\"\n"
        "head -c \"$m\" \"$o\" | base64\n"
        "printf '\\n:%s:\\n' \"$n\"\n"
        "head -c \"$m\" \"$e\" | base64\n"
        "rm -f -- \"$o\" \"$e\"\n";

/* Append s to the buffer single-quoted for sh ('...' with ' as '\''). */
static int quote(char **buf, size_t *len, size_t *cap, const char *s)
{
        size_t need = *len + 4 * strlen(s) + 4;

        if (need > *cap) {
                size_t c = *cap ? *cap : 256;
                char *n;

                while (c < need)
                        c *= 2;
                n = realloc(*buf, c);
                if (!n)
                        return -ENOMEM;
                *buf = n;
                *cap = c;
        }
        if (*len)
                (*buf)[(*len)++] = ' ';
        (*buf)[(*len)++] = '\'';
        for (; *s; s++) {
                if (*s == '\'') {
                        memcpy(*buf + *len, "'\\''", 4);
                        *len += 4;
                } else {
                        (*buf)[(*len)++] = *s;
                }
        }
        (*buf)[(*len)++] = '\'';
        (*buf)[*len] = '\0';
        return 0;
}

int daytona_exec_command(const char *const *argv, const struct daytona_exec_wrap *w, char **ret)
{
        char *buf = NULL, cap_s[32], secs[32];
        size_t len = 0, cap = 0;
        int r = -EINVAL;

        if (!argv || !argv[0] || !w->nonce || !w->nonce[0] || w->timeout_ms <= 0)
                goto out;
        snprintf(cap_s, sizeof(cap_s), "%zu", w->max_output);
        /* coreutils timeout honours fractional seconds; busybox rounds. */
        snprintf(secs, sizeof(secs), "%d.%03d", w->timeout_ms / 1000, w->timeout_ms % 1000);
        const char *head[] = { "sh", "-c", wrapper, "sh", w->nonce, cap_s,
                               w->stdin_path ? w->stdin_path : "", secs,
                               w->run_as ? w->run_as : "" };
        for (size_t i = 0; i < sizeof(head) / sizeof(head[0]); i++)
                if ((r = quote(&buf, &len, &cap, head[i])) < 0)
                        goto out;
        for (; *argv; argv++)
                if ((r = quote(&buf, &len, &cap, *argv)) < 0)
                        goto out;
        r = 0;
out:
        if (r < 0) {
                free(buf);
                buf = NULL;
        }
        *ret = buf;
        return r;
}

/* Decode base64 text that may carry line breaks (coreutils wraps at 76). */
static int b64_lines(const char *p, size_t n, size_t max, char **ret, size_t *ret_len)
{
        char *clean = malloc(n + 1);
        void *data = NULL;
        size_t k = 0, dlen = 0;
        int r = -ENOMEM;

        *ret = NULL;
        *ret_len = 0;
        if (!clean)
                goto out;
        for (size_t i = 0; i < n; i++)
                if (p[i] != '\n' && p[i] != '\r' && p[i] != ' ')
                        clean[k++] = p[i];
        r = base64_decode(clean, k, max, &data, &dlen);
        if (r < 0) {
                r = r == -ENOMEM ? r : -EPROTO;
                goto out;
        }
        /* NUL-terminate for the caller's convenience. */
        *ret = realloc(data, dlen + 1);
        if (!*ret) {
                r = -ENOMEM;
                goto out;
        }
        data = NULL;
        (*ret)[dlen] = '\0';
        *ret_len = dlen;
        r = 0;
out:
        free(clean);
        free(data);
        return r;
}

int daytona_exec_decode(const char *result, size_t len, const char *nonce, size_t max_output,
                        struct exec_result *ret)
{
        char tag[80], *end;
        const char *h, *body, *sep, *stop = result + len;
        size_t tag_len, olen = 0, elen = 0;
        long long rc, so, se;
        int r = -EPROTO;

        memset(ret, 0, sizeof(*ret));
        ret->exit_code = -1;
        if (!result || !nonce || snprintf(tag, sizeof(tag), ":%s:", nonce) >= (int)sizeof(tag))
                return -EPROTO;
        tag_len = strlen(tag);
        h = memmem(result, len, tag, tag_len);
        if (!h)
                return -EPROTO;
        /* Header: exit code and the two full sizes. */
        errno = 0;
        rc = strtoll(h + tag_len, &end, 10);
        if (end == h + tag_len || errno)
                return -EPROTO;
        so = strtoll(end, &end, 10);
        se = strtoll(end, &end, 10);
        if (errno || end > stop || so < 0 || se < 0 || rc < INT32_MIN || rc > INT32_MAX)
                return -EPROTO;
        body = memchr(end, '\n', (size_t)(stop - end));
        if (!body)
                return -EPROTO;
        body++;
        sep = memmem(body, (size_t)(stop - body), tag, tag_len);
        if (!sep)
                return -EPROTO;
        r = b64_lines(body, (size_t)(sep - body), max_output, &ret->out, &olen);
        if (r < 0)
                goto out;
        sep += tag_len;
        r = b64_lines(sep, (size_t)(stop - sep), max_output, &ret->err, &elen);
        if (r < 0)
                goto out;
        ret->out_len = olen;
        ret->err_len = elen;
        ret->out_truncated = (unsigned long long)so > olen;
        ret->err_truncated = (unsigned long long)se > elen;
        ret->exit_code = (int)rc;
        r = 0;
out:
        if (r < 0) {
                exec_result_free(ret);
                ret->exit_code = -1;
        }
        return r;
}
