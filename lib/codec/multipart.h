/* multipart: an incremental parser of multipart/form-data bodies (RFC 7578,
 * RFC 2046 section 5.1.1) for uploads: the body is fed in chunks of any size
 * as it is read, and each part's headers and bytes go to callbacks, so a
 * large file part is never held whole by the parser.
 *
 * Caps: MULTIPART_HDR_MAX bytes of headers per part, MULTIPART_MAX_PARTS
 * parts. Part sizes are the caller's to bound (on_data may refuse). Pure:
 * no I/O. A whole delimiter inside a part that is not followed by "--",
 * transport padding or CRLF is an error (RFC 2046: a part must not contain
 * its delimiter), not data. Errors: -EPROTO (malformed body), -E2BIG (a cap), -ENOMEM, or the
 * callback's own negative value. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#define MULTIPART_BOUNDARY_MAX 70 /* RFC 2046 */
#define MULTIPART_HDR_MAX 8192
#define MULTIPART_MAX_PARTS 512

/* What a part's headers say (Content-Disposition and Content-Type). */
struct multipart_part {
        char name[128];          /* form field name; "" if none */
        char filename[256];      /* "" if none */
        bool has_filename;
        char content_type[128];  /* "" if none */
};

struct multipart_cb {
        int (*on_begin)(void *ud, const struct multipart_part *part);
        int (*on_data)(void *ud, const char *data, size_t len); /* len > 0 */
        int (*on_end)(void *ud);
};

struct multipart;

/* Extract the boundary parameter of a Content-Type value
 * ("multipart/form-data; boundary=..."). Returns 0, or -EINVAL when the type
 * is not multipart/form-data or the boundary is missing or malformed. */
int multipart_boundary(const char *content_type, char *boundary, size_t size);

/* A parser for boundary (copied); cb and ud are borrowed. Returns 0, -EINVAL
 * (bad boundary) or -ENOMEM; *ret owned by the caller (multipart_free). */
int multipart_new(const char *boundary, const struct multipart_cb *cb, void *ud,
                  struct multipart **ret);

/* Feed the next len bytes. After an error the parser stays failed. */
int multipart_feed(struct multipart *m, const char *data, size_t len);

/* End of body: 0 if the closing delimiter was seen, else -EPROTO. */
int multipart_finish(struct multipart *m);

/* Number of parts begun so far. */
int multipart_parts(const struct multipart *m);

/* Free; accepts NULL. */
void multipart_free(struct multipart *m);
