/* execd_argv: what a RunCommandRequest asks to run (execd-api.yaml, and
 * `argv` as opensandbox 1.1.1's SDKs send it): exactly one of `command`,
 * shell text, or `argv`, a program and its literal arguments that no shell
 * ever parses. Pure: no request, no I/O. */
#pragma once
#include <stddef.h>
#include <json-c/json.h>

#define EXECD_ARGV_MAX 256               /* entries of argv */
#define EXECD_ARGV_MAX_BYTES (64 * 1024) /* of argv in all: each string's bytes and its NUL */

struct execd_cmd_input {
        const char *command;                  /* shell text, or NULL with argv */
        const char *argv[EXECD_ARGV_MAX + 1]; /* NULL-terminated; argc 0 with command */
        int argc;
};

/* Read body's command or argv into *ret (whose strings borrow from body).
 * A null member counts as absent. command: a non-empty string without NUL.
 * argv: an array of 1 to EXECD_ARGV_MAX strings without NUL, argv[0]
 * non-empty (the others may be ""), EXECD_ARGV_MAX_BYTES in all at most.
 * Both or neither: an error. Returns 0, or -EINVAL with the reason, meant
 * for the client, in err. */
int execd_argv_parse(struct json_object *body, struct execd_cmd_input *ret, char *err, size_t errsz);

/* The text a command's status reports for in (its command, or argv joined
 * by spaces) into a new string the caller frees; NULL without memory. */
char *execd_argv_text(const struct execd_cmd_input *in);
