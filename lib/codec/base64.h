/* base64: RFC 4648 standard alphabet with padding, for file contents in JSON. */
#pragma once
#include <stddef.h>

/* Encode len bytes; *ret is a new NUL-terminated string (free()). -ENOMEM. */
int base64_encode(const void *data, size_t len, char **ret);

/* Decode text (whitespace not allowed, padding required for partial groups);
 * *ret gets a new buffer of *ret_len bytes (free()). -EINVAL on bad input,
 * -EFBIG if the result would exceed max_len. */
int base64_decode(const char *text, size_t text_len, size_t max_len, void **ret, size_t *ret_len);
