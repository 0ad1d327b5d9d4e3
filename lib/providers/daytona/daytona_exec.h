/* daytona_exec: how an exec_spec runs through Daytona's toolbox
 * POST /process/execute, which takes one command string and answers with
 * the exit code and stdout+stderr combined into one text ("result", a JSON
 * string, so bytes that are not UTF-8 would be mangled).
 *
 * To keep our API's split, byte-exact, capped output, the command runs under
 * a small sh wrapper that sends the command's stdout and stderr to two temp
 * files, then prints
 *     ":<nonce>: <exit code> <stdout size> <stderr size>\n"
 *     base64(first max_output bytes of stdout) "\n:<nonce>:\n"
 *     base64(first max_output bytes of stderr)
 * where nonce is a fresh random id the command cannot guess. The wrapper
 * also applies the timeout (`timeout -s KILL`), stdin (a file uploaded
 * beforehand, removed after the run) and the Linux user (`runuser -u`, when
 * the toolbox runs as root). So the image needs sh, mktemp, timeout, head,
 * wc, base64 (coreutils or busybox) and, for other users, runuser
 * (util-linux).
 *
 * Pure: no I/O, for unit tests and fuzzers. */
#pragma once
#include <stddef.h>

#include "providers/provider.h"

/* What the wrapper needs besides argv. */
struct daytona_exec_wrap {
        const char *nonce;      /* [0-9a-f]+, fresh per call */
        int timeout_ms;         /* > 0 */
        size_t max_output;      /* per stream */
        const char *stdin_path; /* NULL: stdin is /dev/null */
        const char *run_as;     /* NULL: the toolbox's user */
};

/* The command string for argv under the wrapper, every argument quoted for
 * sh. *ret is malloc'ed (free()). Errors: -EINVAL (empty argv, no nonce),
 * -ENOMEM. */
int daytona_exec_command(const char *const *argv, const struct daytona_exec_wrap *w, char **ret);

/* Decode the wrapper's output (the "result" of the answer) into ret: exit
 * code, out/err (owned, NUL-terminated), the truncation flags for streams
 * longer than max_output. Errors: -EPROTO (no header with this nonce: the
 * wrapper did not run, e.g. no sh; or a malformed body), -ENOMEM. */
int daytona_exec_decode(const char *result, size_t len, const char *nonce, size_t max_output,
                        struct exec_result *ret);
