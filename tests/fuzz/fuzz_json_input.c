/* fuzz_json_input: request bodies are untrusted bytes. Feeds them to
 * json_input_parse_object() and, when that accepts them, reads the fields the
 * handlers read (json_input_get_id, json_input_get_enum), checking each
 * function's contract. Also the Kafka ticket message reader, which goes
 * through the same parser. Any crash, sanitizer report or abort() is a bug. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "core/json_input.h"
#include "store/lease.h"

static void check_id(struct json_object *obj, const char *name, bool required)
{
        const char *id = "unset";
        char err[256] = "";
        int r = json_input_get_id(obj, name, required, &id, err, sizeof(err));

        if (r == 0) {
                CHECK(id == NULL || (strlen(id) <= JSON_INPUT_ID_MAX && json_input_id_valid(id)));
                CHECK(required ? id != NULL : 1);
                return;
        }
        CHECK(r == -EINVAL || (r == -ENOENT && required));
        CHECK(id == NULL);
        CHECK(err[0] != '\0' && strnlen(err, sizeof(err)) < sizeof(err));
}

static void check_enum(struct json_object *obj, const char *name, const char *const *allowed)
{
        const char *v = "unset";
        char err[64] = ""; /* shorter than the message: exercises truncation */
        int r = json_input_get_enum(obj, name, allowed, &v, err, sizeof(err));

        if (r == 0) {
                bool found = v == NULL;
                for (const char *const *a = allowed; *a && !found; a++)
                        found = v == *a; /* the table's pointer, not the object's */
                CHECK(found);
                return;
        }
        CHECK(r == -EINVAL);
        CHECK(v == NULL);
        CHECK(err[0] != '\0' && strnlen(err, sizeof(err)) < sizeof(err));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct json_object *obj = (struct json_object *)&obj;
        char err[256] = "", ticket[33];
        int r;

        r = json_input_parse_object((const char *)data, size, JSON_INPUT_MAX_DEPTH, &obj, err,
                                    sizeof(err));
        if (r < 0) {
                CHECK(r == -EINVAL || r == -ENOMEM);
                CHECK(obj == NULL);
                CHECK(err[0] != '\0' && strnlen(err, sizeof(err)) < sizeof(err));
        } else {
                CHECK(r == 0);
                CHECK(obj != NULL && json_object_is_type(obj, json_type_object));
                check_id(obj, "userId", true);
                check_id(obj, "sessionId", false);
                check_id(obj, "ticketId", false);
                check_enum(obj, "mode", lease_modes);
                check_enum(obj, "reason", lease_release_reasons);
                json_put(obj);
        }

        memset(ticket, 'X', sizeof(ticket));
        r = lease_ticket_message_id((const char *)data, size, ticket);
        CHECK(r == 0 || r == -EINVAL);
        if (r == 0)
                CHECK(strnlen(ticket, sizeof(ticket)) == 32 && json_input_id_valid(ticket));
        return 0;
}
