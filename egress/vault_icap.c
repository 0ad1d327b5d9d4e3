/* sandbox-vault-icap: the Credential Vault's injector (docs/EGRESS.md,
 * "Credential Vault"), an ICAP REQMOD service (RFC 3507) for Squid on
 * 127.0.0.1. Squid sends it only the requests whose host a binding of the
 * sandbox's vault names for their scheme (`adaptation_access` with the
 * helper's `--vault` role, egress/squid-vault.conf.in): plain HTTP, and
 * HTTPS that Squid decrypted (ssl_bump, only for a CONNECT to a host bound
 * for https: egress/squid-vault-tls.conf.in); every other request never
 * comes here.
 *
 * Per request: the sandbox is Squid's client address (X-Client-IP, the id as
 * IPv6, written by sandbox-egress-relay's PROXY line); its vault is read from
 * Redis (vault_store.h), sealed values opened with VAULT_KEY_FILE's key, and
 * lib/sandbox/vault_inject.c rewrites the request head (and a body of at most
 * VAULT_HTTP_BODY_MAX). Unchanged: 204. Anything that goes wrong (no
 * identity, Redis, a value that does not open, a body over the cap): ICAP 500,
 * and Squid (bypass=off) answers the client an error: a request is never sent
 * half-injected. Logged: one line per injected request (SANDBOX_ID,
 * EGRESS_HOST, how many bindings), never a value.
 *
 * One process; a child per connection (Squid keeps them open), at most
 * ICAP_CONNS_MAX at once (more are closed at once); each read waits at most
 * ICAP_IDLE_S. Only Squid may ask: every REQMOD must carry X-Vault-Key, the
 * shared EGRESS_VAULT_ICAP_TOKEN Squid adds (adaptation_meta), else ICAP 403
 * and nothing read; another local process on 127.0.0.1 cannot have a request
 * injected and read the secret back. Usage: sandbox-vault-icap --port PORT
 * (environment: EGRESS_VAULT_ICAP_TOKEN, at least 16 characters; the broker's
 * REDIS_*, REDIS_KEY_PREFIX, VAULT_KEY_FILE, LOG_LEVEL). */
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <openssl/crypto.h>

#include "core/config.h"
#include "core/log.h"
#include "store/redis_conn.h"
#include "sandbox/vault_inject.h"
#include "sandbox/vault_seal.h"
#include "sandbox/vault_store.h"

#define ICAP_CONNS_MAX 64
#define ICAP_IDLE_S 60
#define ICAP_HEAD_MAX 16384
#define ISTAG "\"sbvault1\""

struct conn {
        int fd;
        char buf[65536];
        size_t len; /* bytes in buf */
};

/* Read more into c->buf; 0 at EOF/error/timeout. */
static ssize_t fill(struct conn *c)
{
        ssize_t n;

        if (c->len == sizeof(c->buf))
                return -1;
        do
                n = read(c->fd, c->buf + c->len, sizeof(c->buf) - c->len);
        while (n < 0 && errno == EINTR);
        if (n > 0)
                c->len += (size_t)n;
        return n;
}

/* Take n bytes from the front of c->buf into out (may be NULL). */
static void take(struct conn *c, void *out, size_t n)
{
        if (out)
                memcpy(out, c->buf, n);
        memmove(c->buf, c->buf + n, c->len - n);
        c->len -= n;
}

/* Read until the buffer holds "\r\n\r\n"; its end offset, or -1. */
static ssize_t read_head(struct conn *c, size_t max)
{
        for (;;) {
                char *e = memmem(c->buf, c->len, "\r\n\r\n", 4);

                if (e)
                        return e + 4 - c->buf;
                if (c->len >= max || fill(c) <= 0)
                        return -1;
        }
}

/* Read exactly n bytes into out. */
static int read_n(struct conn *c, char *out, size_t n)
{
        while (c->len < n)
                if (fill(c) <= 0)
                        return -1;
        take(c, out, n);
        return 0;
}

/* An ICAP chunked body (RFC 3507 4.5) into *ret (malloc'd), at most max. */
static int read_chunked(struct conn *c, char **ret, size_t *ret_len, size_t max)
{
        char *body = NULL, line[64];
        size_t len = 0;

        *ret = NULL;
        for (;;) {
                char *eol, *end;
                unsigned long n;

                while (!(eol = memmem(c->buf, c->len, "\r\n", 2)))
                        if (c->len > sizeof(line) || fill(c) <= 0)
                                goto fail;
                if ((size_t)(eol - c->buf) >= sizeof(line))
                        goto fail;
                memcpy(line, c->buf, (size_t)(eol - c->buf));
                line[eol - c->buf] = '\0';
                take(c, NULL, (size_t)(eol - c->buf) + 2);
                n = strtoul(line, &end, 16);
                if (end == line || (*end && *end != ';'))
                        goto fail;
                if (n == 0) {
                        char crlf[2];

                        if (read_n(c, crlf, 2) < 0 || memcmp(crlf, "\r\n", 2))
                                goto fail;
                        break;
                }
                if (n > max - len) {
                        errno = EFBIG;
                        goto fail;
                }
                char *nb = realloc(body, len + n + 1);
                if (!nb)
                        goto fail;
                body = nb;
                if (read_n(c, body + len, n) < 0 || read_n(c, line, 2) < 0 || memcmp(line, "\r\n", 2))
                        goto fail;
                len += n;
        }
        *ret = body;
        *ret_len = len;
        return 0;
fail:
        free(body);
        return -1;
}

static int write_all(int fd, const char *p, size_t n)
{
        while (n) {
                ssize_t w = write(fd, p, n);

                if (w < 0 && errno == EINTR)
                        continue;
                if (w <= 0)
                        return -1;
                p += w;
                n -= (size_t)w;
        }
        return 0;
}

/* The value of ICAP header name in head[0..len), into out. */
static int icap_header(const char *head, size_t len, const char *name, char *out, size_t size)
{
        size_t nl = strlen(name);

        for (const char *p = head; p < head + len;) {
                const char *eol = memmem(p, (size_t)(head + len - p), "\r\n", 2);

                if (!eol)
                        break;
                if ((size_t)(eol - p) > nl + 1 && !strncasecmp(p, name, nl) && p[nl] == ':') {
                        const char *v = p + nl + 1;

                        while (*v == ' ')
                                v++;
                        if ((size_t)(eol - v) >= size)
                                return -1;
                        memcpy(out, v, (size_t)(eol - v));
                        out[eol - v] = '\0';
                        return 0;
                }
                p = eol + 2;
        }
        return -1;
}

static void sid_of(const char *ip, char sid[33])
{
        struct in6_addr a;

        sid[0] = '\0';
        if (inet_pton(AF_INET6, ip, &a) != 1)
                return;
        for (int i = 0; i < 16; i++)
                snprintf(sid + 2 * i, 3, "%02x", a.s6_addr[i]);
}

static int reply(struct conn *c, const char *status)
{
        char out[256];
        int n = snprintf(out, sizeof(out),
                         "ICAP/1.0 %s\r\nISTag: " ISTAG "\r\nEncapsulated: null-body=0\r\n\r\n",
                         status);

        return write_all(c->fd, out, (size_t)n);
}

/* The answer of one REQMOD whose request is h (body included). */
static int reqmod(struct conn *c, struct redis_conn *rc, const struct broker_config *cfg,
                  const char *sid, struct vault_http *h, bool allow204)
{
        struct json_object *v = NULL;
        uint8_t key[VAULT_KEY_BYTES];
        bool have_key = false;
        char err[256], *head = NULL, host[300] = "";
        size_t hl = 0;
        int applied = 0, r;

        r = vault_store_get(rc, sid, &v);
        if ((r == -ENODATA || r == -ENOENT) && allow204)
                return reply(c, "204 No Content");
        if (r == -ENODATA || r == -ENOENT)
                r = 0; /* no vault (deleted meanwhile): the request goes on as it came */
        if (r < 0) {
                log_err(LOG_KV({ "SANDBOX_ID", sid }), "vault injector: reading the vault: %s",
                        strerror(-r));
                return reply(c, "500 Server Error");
        }
        if (cfg->vault_key_file[0]) {
                if (vault_key_load(cfg->vault_key_file, key, err, sizeof(err)) < 0) {
                        log_err(LOG_KV({ "SANDBOX_ID", sid }), "vault injector: %s", err);
                        json_object_put(v);
                        return reply(c, "500 Server Error");
                }
                have_key = true;
        }
        r = v ? vault_inject(v, have_key ? key : NULL, sid, h, &applied) : 0;
        OPENSSL_cleanse(key, sizeof(key));
        json_object_put(v);
        snprintf(host, sizeof(host), "%.*s", (int)strcspn(h->uri + 7, "/?#"), h->uri + 7);
        if (r < 0) {
                log_err(LOG_KV({ "SANDBOX_ID", sid }, { "EGRESS_HOST", host }),
                        "vault injector: request refused: %s",
                        r == -EBADMSG ? "a credential does not open (VAULT_KEY_FILE changed?)"
                                      : strerror(-r));
                return reply(c, "500 Server Error");
        }
        if (applied == 0 && allow204)
                return reply(c, "204 No Content");
        /* applied == 0 without 204: the request sent back as it came */
        if (vault_http_format(h, &head, &hl) < 0)
                return reply(c, "500 Server Error");
        char icap[256];
        int n = h->body ? snprintf(icap, sizeof(icap),
                                   "ICAP/1.0 200 OK\r\nISTag: " ISTAG
                                   "\r\nEncapsulated: req-hdr=0, req-body=%zu\r\n\r\n",
                                   hl)
                        : snprintf(icap, sizeof(icap),
                                   "ICAP/1.0 200 OK\r\nISTag: " ISTAG
                                   "\r\nEncapsulated: req-hdr=0, null-body=%zu\r\n\r\n",
                                   hl);
        char chunk[32];
        int cn = h->body ? snprintf(chunk, sizeof(chunk), "%zx\r\n", h->body_len) : 0;
        r = write_all(c->fd, icap, (size_t)n) < 0 || write_all(c->fd, head, hl) < 0 ||
                            (h->body && h->body_len &&
                             (write_all(c->fd, chunk, (size_t)cn) < 0 ||
                              write_all(c->fd, h->body, h->body_len) < 0 ||
                              write_all(c->fd, "\r\n", 2) < 0)) ||
                            (h->body && write_all(c->fd, "0\r\n\r\n", 5) < 0)
                    ? -1
                    : 0;
        OPENSSL_cleanse(head, hl);
        free(head);
        if (applied)
                log_info(LOG_KV({ "SANDBOX_ID", sid }, { "EGRESS_HOST", host }),
                         "vault injector: %d binding(s) applied to %s", applied, h->method);
        return r;
}

/* Whether the REQMOD's X-Vault-Key is the shared token (constant time). */
static bool from_squid(const char *head, size_t len, const char *token)
{
        char got[256] = "";

        return icap_header(head, len, "X-Vault-Key", got, sizeof(got)) == 0 &&
               strlen(got) == strlen(token) && CRYPTO_memcmp(got, token, strlen(token)) == 0;
}

/* Serve one connection's ICAP requests until it ends. */
static void serve(int fd, const struct broker_config *cfg, const char *token)
{
        static struct conn c;
        struct redis_conn *rc = NULL;

        c.fd = fd;
        c.len = 0;
        if (redis_conn_new(cfg, &rc) < 0) {
                log_err(NULL, "vault injector: no Redis");
                return;
        }
        for (;;) {
                char head[ICAP_HEAD_MAX + 1], enc[256], ip[64] = "", allow[64] = "", sid[33];
                ssize_t hend = read_head(&c, ICAP_HEAD_MAX);
                struct vault_http h;
                size_t hdr_len = 0;
                char *p, *req = NULL, *body = NULL;
                size_t body_len = 0;
                bool has_body = false;

                if (hend < 0)
                        break;
                take(&c, head, (size_t)hend);
                head[hend] = '\0';
                if (!strncmp(head, "OPTIONS ", 8)) {
                        static const char opt[] =
                                "ICAP/1.0 200 OK\r\nMethods: REQMOD\r\nISTag: " ISTAG
                                "\r\nService: sandbox-broker vault injector\r\n"
                                "Allow: 204\r\nOptions-TTL: 3600\r\n"
                                "Max-Connections: 64\r\nEncapsulated: null-body=0\r\n\r\n";
                        if (write_all(fd, opt, sizeof(opt) - 1) < 0)
                                break;
                        continue;
                }
                if (strncmp(head, "REQMOD ", 7) ||
                    icap_header(head, (size_t)hend, "Encapsulated", enc, sizeof(enc)) < 0)
                        break;
                if (!from_squid(head, (size_t)hend, token)) {
                        log_warn(NULL, "vault injector: a REQMOD without Squid's key refused");
                        (void)reply(&c, "403 Forbidden");
                        break;
                }
                (void)icap_header(head, (size_t)hend, "X-Client-IP", ip, sizeof(ip));
                (void)icap_header(head, (size_t)hend, "Allow", allow, sizeof(allow));
                /* "req-hdr=0, req-body=N" or "req-hdr=0, null-body=N" */
                if (!strstr(enc, "req-hdr=0") ||
                    !((p = strstr(enc, "req-body=")) || (p = strstr(enc, "null-body="))))
                        break;
                has_body = !strncmp(p, "req-body=", 9);
                hdr_len = strtoul(strchr(p, '=') + 1, NULL, 10);
                if (hdr_len == 0 || hdr_len > VAULT_HTTP_HEAD_MAX || !(req = malloc(hdr_len)) ||
                    read_n(&c, req, hdr_len) < 0) {
                        free(req);
                        break;
                }
                if (has_body && read_chunked(&c, &body, &body_len, VAULT_HTTP_BODY_MAX) < 0) {
                        /* a body over the cap (or broken): refused, the connection ends */
                        free(req);
                        (void)reply(&c, "500 Server Error");
                        break;
                }
                sid_of(ip, sid);
                int r = vault_http_parse(req, hdr_len, &h);
                OPENSSL_cleanse(req, hdr_len);
                free(req);
                if (r < 0 || !sid[0]) {
                        free(body);
                        if (reply(&c, "500 Server Error") < 0)
                                break;
                        continue;
                }
                if (has_body) {
                        h.body = body ? body : strdup("");
                        h.body_len = body_len;
                }
                r = reqmod(&c, rc, cfg, sid, &h, strstr(allow, "204") != NULL);
                vault_http_clear(&h);
                if (r < 0)
                        break;
        }
        redis_conn_free(rc);
}

int main(int argc, char **argv)
{
        static struct broker_config cfg;
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        int lfd, one = 1, port = argc == 3 && !strcmp(argv[1], "--port") ? atoi(argv[2]) : 0;
        const char *token = getenv("EGRESS_VAULT_ICAP_TOKEN");
        unsigned children = 0;
        char err[256];

        log_init("sandbox-vault-icap", LOG_INFO);
        if (port < 1 || port > 65535) {
                log_err(NULL, "usage: sandbox-vault-icap --port PORT");
                return 2;
        }
        if (!token || strlen(token) < 16 || strlen(token) > 128 || strpbrk(token, "\"\r\n ")) {
                log_err(NULL, "EGRESS_VAULT_ICAP_TOKEN: 16 to 128 characters without quotes or "
                              "spaces needed");
                return 2;
        }
        if (config_load(&cfg, err, sizeof(err)) < 0) {
                log_err(NULL, "config: %s", err);
                return 1;
        }
        log_init("sandbox-vault-icap", cfg.log_priority);
        (void)signal(SIGPIPE, SIG_IGN);
        a.sin_port = htons((uint16_t)port);
        lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (lfd < 0 || setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
            bind(lfd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(lfd, 64) < 0) {
                log_err(NULL, "listen on 127.0.0.1:%d: %s", port, strerror(errno));
                return 1;
        }
        log_info(NULL, "vault injector on 127.0.0.1:%d", port);
        for (;;) {
                int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
                pid_t pid;

                while (waitpid(-1, NULL, WNOHANG) > 0)
                        children--;
                if (fd < 0)
                        continue;
                if (children >= ICAP_CONNS_MAX) {
                        close(fd);
                        continue;
                }
                pid = fork();
                if (pid == 0) {
                        struct timeval tv = { .tv_sec = ICAP_IDLE_S };

                        close(lfd);
                        (void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
                        (void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
                        serve(fd, &cfg, token);
                        _exit(0);
                }
                if (pid > 0)
                        children++;
                close(fd);
        }
}
