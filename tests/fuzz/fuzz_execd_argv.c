/* fuzz_execd_argv: the bodies of POST /command (execd) and POST
 * /v1/metrics/events (the SDKs' create events) are untrusted bytes. Parses
 * them as the handlers do (json_input_parse_object), then feeds the object
 * to execd_argv_parse() and osb_metrics_event_parse(), checking their
 * contracts: exactly one of command or argv, argv within its caps and
 * NUL-free, the status text the strings joined; an event's fields within
 * theirs. Any crash, sanitizer report or abort() is a bug. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "execd_argv.h"
#include "fuzz.h"
#include "core/json_input.h"
#include "sandbox/opensandbox.h"

static struct execd_cmd_input in;

static void check_argv(struct json_object *obj)
{
        char err[48] = ""; /* short: exercises truncation */
        size_t bytes = 0, want = 0;
        char *text;
        int r = execd_argv_parse(obj, &in, err, sizeof(err));

        if (r < 0) {
                CHECK(r == -EINVAL);
                CHECK(in.command == NULL && in.argc == 0);
                CHECK(err[0] != '\0' && strnlen(err, sizeof(err)) < sizeof(err));
                return;
        }
        CHECK(r == 0);
        CHECK((in.command != NULL) != (in.argc > 0));
        if (in.command)
                CHECK(in.command[0] != '\0');
        CHECK(in.argc <= EXECD_ARGV_MAX && in.argv[in.argc] == NULL);
        for (int i = 0; i < in.argc; i++) {
                bytes += strlen(in.argv[i]) + 1;
                want += strlen(in.argv[i]) + (i ? 1 : 0);
        }
        CHECK(bytes <= EXECD_ARGV_MAX_BYTES);
        CHECK(in.argc == 0 || in.argv[0][0] != '\0');
        text = execd_argv_text(&in);
        CHECK(text != NULL);
        CHECK(strlen(text) == (in.command ? strlen(in.command) : want));
        free(text);
}

static void check_event(struct json_object *obj)
{
        struct osb_metrics_event ev;
        char err[OSB_ERR_MAX] = "";
        int r = osb_metrics_event_parse(obj, &ev, err);

        if (r < 0) {
                CHECK(r == -EINVAL);
                CHECK(err[0] != '\0' && strnlen(err, sizeof(err)) < sizeof(err));
                return;
        }
        CHECK(r == 0);
        CHECK(ev.duration_ms >= 0 && ev.duration_ms <= OSB_EVENT_DURATION_MAX_MS);
        CHECK(ev.sandbox_id == NULL || json_input_id_valid(ev.sandbox_id));
        CHECK(ev.image == NULL || (ev.image[0] && strlen(ev.image) <= OSB_EVENT_IMAGE_MAX));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct json_object *obj = NULL;
        char err[256] = "";

        if (json_input_parse_object((const char *)data, size, JSON_INPUT_MAX_DEPTH, &obj, err,
                                    sizeof(err)) < 0)
                return 0;
        check_argv(obj);
        check_event(obj);
        json_put(obj);
        return 0;
}
