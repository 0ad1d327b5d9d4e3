/* vault_inject: what the egress path does with a sandbox's Credential Vault
 * (vault.h) to one HTTP request of that sandbox (plain, or decrypted by
 * Squid's ssl_bump from a CONNECT to a bound host: its URI is https://):
 * the bindings whose match covers the request (host, scheme, method, path) set their auth
 * header (bearer, basic, apiKey, customHeaders) and replace their
 * substitutions' placeholders by the credential's value in the places they
 * name (header values, the path and the query URL-encoded, the body: JSON-
 * escaped for application/json, form-encoded for
 * application/x-www-form-urlencoded, as is for other text; an encoded
 * (Content-Encoding) or multipart body is left alone).
 *
 * Pure code over a parsed request head; the ICAP service (egress/vault_icap.c)
 * does the I/O. Bounds: a head of at most VAULT_HTTP_HEAD_MAX bytes and
 * VAULT_HTTP_HEADERS_MAX fields; a body is the caller's (VAULT_HTTP_BODY_MAX).
 * No function logs; values live only in the request they are put into. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>

#define VAULT_HTTP_HEAD_MAX (64 * 1024)
#define VAULT_HTTP_HEADERS_MAX 128
#define VAULT_HTTP_BODY_MAX (1024 * 1024)

struct vault_http {
        char *method;
        char *uri; /* absolute: http(s)://host[:port]/path?query, as a proxy gets it */
        char *version;
        size_t n;
        char *name[VAULT_HTTP_HEADERS_MAX];
        char *value[VAULT_HTTP_HEADERS_MAX];
        char *body; /* NULL: none */
        size_t body_len;
};

/* Parse a request head (request line, fields, the empty line) of len bytes.
 * 0, -EINVAL (not a request head of an absolute http:// or https:// URI, a field
 * without a colon or with a CR/LF/NUL inside, over the caps), -ENOMEM.
 * On error *h is cleared. */
int vault_http_parse(const char *head, size_t len, struct vault_http *h);

/* The head back as text (malloc'd, *ret_len bytes, NUL-terminated). */
int vault_http_format(const struct vault_http *h, char **ret, size_t *ret_len);

/* Free what h owns (body included); h may be half-built. */
void vault_http_clear(struct vault_http *h);

/* Whether any binding of vault v covers host for scheme ("http" or
 * "https"): the question Squid asks before sending a request through the
 * injector (only such requests go there). host: as the client named it. */
bool vault_host_bound(struct json_object *v, const char *scheme, const char *host);

/* Apply v's bindings to h (see above). key: VAULT_KEY_FILE's key for sealed
 * values (NULL: only values in clear can be used); sid: the sandbox.
 * *ret_applied gets how many bindings applied. 0, -ENOMEM, -EBADMSG (a
 * sealed value that does not open: nothing is applied, h unchanged in
 * effect for the caller, which refuses the request), -EINVAL (the result
 * would exceed the caps). */
int vault_inject(struct json_object *v, const uint8_t *key, const char *sid, struct vault_http *h,
                 int *ret_applied);
