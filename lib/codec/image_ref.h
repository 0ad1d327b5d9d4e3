/* image_ref: an image reference in the one spelling Docker means by it, so
 * that two spellings of one image compare equal (the warm pool's image and
 * a claim's: POOL, SANDBOX_IMAGE, an OpenSandbox create's image).
 *
 * Docker's normalisation (distribution/reference, ParseNormalizedNamed and
 * TagNameOnly): a first path component with a '.' or a ':', or
 * "localhost", is a registry host, else the registry is docker.io
 * ("index.docker.io" is docker.io too); a docker.io name of one component
 * is under "library/"; a name with neither tag nor digest is ":latest".
 * A digest is kept (and no tag is added to it); a tag with a digest keeps
 * both. So "base", "library/base:latest" and "docker.io/library/base" are
 * all "docker.io/library/base:latest"; "sandbox-broker/base" is
 * "docker.io/sandbox-broker/base:latest". Pure: no I/O. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#define IMAGE_REF_MAX 320 /* room for a normalised reference of a 255-byte one */

/* Write image's normalised reference into out (size bytes). Returns 0, or
 * -EINVAL when image is not a reference Docker would take by name (empty,
 * a space or control character, an empty component, uppercase in the
 * repository path, a bare image id), -E2BIG when out is too small. */
int image_ref_normalize(const char *image, char *out, size_t size);

/* Do a and b name the same image? Each is normalised; one that cannot be
 * is compared as written. */
bool image_ref_same(const char *a, const char *b);
