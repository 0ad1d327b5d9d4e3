/* sandbox-agent: the sandbox's env file (docs/AGENT.md, "The env file"):
 * the `KEY=VALUE` lines the OpenSandbox SDK's `commands.set_env` appends to
 * the file the sandbox's EXECD_ENVS names, loaded for every user command
 * (POST /exec with envfile=1).
 *
 * The file is written by code in the sandbox (hostile), so it is parsed,
 * never sourced by a shell, and strictly: an entry is
 *   KEY=VALUE       VALUE to the end of the line, verbatim
 *   KEY='VALUE'     VALUE verbatim up to the next ', which must end the
 *                   line; it may span lines (no ' inside)
 *   KEY="VALUE"     on one line; \\ \" \n \r \t are escapes, any other
 *                   backslash stays as written; $NAME is not expanded
 * with KEY [A-Za-z_][A-Za-z0-9_]* (at most ENVFILE_KEY_MAX bytes). Any
 * other line (blank, comment, a NUL byte, a bad key, an unterminated
 * quote) is skipped: the next entry starts on the following line. A key
 * given twice: the last entry wins. Bounds: at most ENVFILE_MAX_BYTES of
 * the file (the newest: its end) and ENVFILE_MAX_VARS distinct keys (the
 * ones written last). Pure: includes only libc, fuzzed
 * (tests/fuzz/fuzz_agent_envfile.c). */
#pragma once

#include <stddef.h>

#define ENVFILE_MAX_BYTES (256 * 1024)
#define ENVFILE_MAX_VARS 1024
#define ENVFILE_KEY_MAX 255

struct envfile {
        char **vars; /* "KEY=VALUE", NUL-free, owned; n of them */
        size_t n;
};

/* Parse len bytes of buf (any bytes) into *ret, newest first. Returns 0
 * or -ENOMEM; *ret is freed with envfile_free either way. */
int envfile_parse(const char *buf, size_t len, struct envfile *ret);

/* Read and parse the file at path: opened O_NOFOLLOW|O_NONBLOCK, only a
 * regular file; over ENVFILE_MAX_BYTES, its last ENVFILE_MAX_BYTES from
 * the first line start on. A file that is missing or cannot be read is an
 * empty result (the command still runs). Returns 0 or -ENOMEM. */
int envfile_load(const char *path, struct envfile *ret);

void envfile_free(struct envfile *e);
