/* fuzz_daytona_json: Daytona's answers come over the network from a service
 * we do not run. Each input is taken as a response body (NUL-terminated, as
 * the HTTP client hands it over) and fed to every daytona_json reader: a
 * Sandbox object, a ListSandboxesResponse (with cursor buffers of several
 * sizes), an ExecuteResponse, the error message, and the state mappings.
 * Outputs go into buffers malloc'ed at exactly their size and pre-filled
 * with garbage, so an over-write is a sanitizer report and a missing NUL a
 * contract failure. Any crash, sanitizer report or abort() is a bug. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "providers/daytona/daytona_json.h"
#include "fuzz.h"

#define TERMINATED(a) (strnlen((a), sizeof(a)) < sizeof(a))

static void check_state(enum sandbox_run_state s)
{
        CHECK(s == SANDBOX_RUN_MISSING || s == SANDBOX_RUN_CREATED || s == SANDBOX_RUN_RUNNING ||
              s == SANDBOX_RUN_PAUSED || s == SANDBOX_RUN_EXITED);
}

static void check_state_str(const char *s)
{
        check_state(daytona_json_state(s));
        /* a state a wait gives up on is never a usable one */
        if (daytona_json_state_failed(s))
                CHECK(daytona_json_state(s) == SANDBOX_RUN_EXITED);
}

struct list_count {
        size_t calls, max;
};

static void on_item(void *ud, const struct sandbox_info *info)
{
        struct list_count *c = ud;

        check_state(info->state);
        CHECK(TERMINATED(info->sandbox_id));
        CHECK(TERMINATED(info->prefix));
        CHECK(TERMINATED(info->ref));
        CHECK(info->ref[0] != '\0');
        c->calls++;
        CHECK(c->calls <= c->max);
}

static void check_list(const char *body, size_t body_len, size_t cursor_size)
{
        struct list_count count = { 0, body_len / 8 + 1 };
        char *cursor = malloc(cursor_size);
        int r;

        CHECK(cursor);
        memset(cursor, 0xA5, cursor_size);
        r = daytona_json_parse_list(body, on_item, &count, cursor, cursor_size);
        CHECK(r == 0 || r == -EPROTO);
        CHECK(strnlen(cursor, cursor_size) < cursor_size);
        free(cursor);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        /* daytona.c uses a 512-byte cursor; also the smallest sizes */
        static const size_t cursor_sizes[] = { 1, 2, 9, 512 };
        char *body = malloc(size + 1);
        struct daytona_sandbox *sb;
        char *err, *result;
        size_t len;
        int exit_code, r;
        long status;

        CHECK(body);
        memcpy(body, data, size);
        body[size] = '\0';

        sb = malloc(sizeof(*sb));
        CHECK(sb);
        memset(sb, 0xA5, sizeof(*sb));
        r = daytona_json_parse_sandbox(body, sb);
        CHECK(r == 0 || r == -EPROTO);
        if (r == 0) {
                CHECK(TERMINATED(sb->id) && sb->id[0] != '\0');
                CHECK(TERMINATED(sb->state));
                CHECK(TERMINATED(sb->error_reason));
                CHECK(TERMINATED(sb->toolbox_url));
                CHECK(TERMINATED(sb->sandbox_id));
                CHECK(TERMINATED(sb->prefix));
                CHECK(sb->managed == true || sb->managed == false);
                check_state_str(sb->state);
        }
        free(sb);

        for (size_t i = 0; i < sizeof(cursor_sizes) / sizeof(cursor_sizes[0]); i++)
                check_list(body, size, cursor_sizes[i]);

        exit_code = -2;
        result = (char *)"unset";
        len = 99;
        r = daytona_json_parse_exec(body, &exit_code, &result, &len);
        CHECK(r == 0 || r == -EPROTO || r == -ENOMEM);
        if (r == 0) {
                CHECK(result != NULL);
                CHECK(result[len] == '\0');
                CHECK(strlen(result) <= len);
                CHECK(len <= size); /* escapes only shrink, never grow */
                free(result);
        } else {
                CHECK(result == NULL && len == 0 && exit_code == -1);
        }

        check_state_str(body);

        status = size >= 2 ? (long)data[0] << 8 | data[1] : 500;
        err = malloc(PROVIDER_ERR_MAX);
        CHECK(err);
        memset(err, 0xA5, PROVIDER_ERR_MAX);
        daytona_json_error_message("fuzz", status, body, err);
        CHECK(strnlen(err, PROVIDER_ERR_MAX) < PROVIDER_ERR_MAX);
        CHECK(strncmp(err, "daytona: fuzz: HTTP ", 20) == 0);
        memset(err, 0xA5, PROVIDER_ERR_MAX);
        daytona_json_error_message("fuzz", status, NULL, err);
        CHECK(strnlen(err, PROVIDER_ERR_MAX) < PROVIDER_ERR_MAX);
        daytona_json_error_message("fuzz", status, body, NULL);
        free(err);

        free(body);
        return 0;
}
