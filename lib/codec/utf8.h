/* utf8: make command output safe to put in a JSON string. */
#pragma once
#include <stddef.h>

/* Copy len bytes of s into a new NUL-terminated string where every invalid
 * UTF-8 sequence (and NUL byte) is replaced by U+FFFD. *ret is owned by the
 * caller (free()). Returns 0 or -ENOMEM. */
int utf8_sanitize(const char *s, size_t len, char **ret, size_t *ret_len);
