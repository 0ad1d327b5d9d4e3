/* image_policy: which images may be pulled from a registry (IMAGE_ALLOW).
 *
 * IMAGE_ALLOW is a comma-separated list of shell-style patterns (fnmatch
 * without FNM_PATHNAME: a star also matches a slash), matched against the
 * image reference exactly as the client wrote it: "127.0.0.1:5000/" plus a
 * star, "registry.example.com/team/" plus a star, "python:3.12-slim". "" (the default) allows
 * no pull at all: only images already on the host are used. An image
 * present on the host is used whatever the list says. Pure: no I/O. */
#pragma once
#include <stdbool.h>

/* Is image allowed to be pulled under allow (the IMAGE_ALLOW value)? An
 * empty list, or an empty or too long image, allows nothing. */
bool image_policy_allows(const char *allow, const char *image);
