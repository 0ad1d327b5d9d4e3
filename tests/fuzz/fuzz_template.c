/* fuzz_template: the body of POST /v1/templates, the body of a create with
 * templateId and a list's ?metadata= filter are untrusted bytes, and so is
 * a template's stored form read back from Redis. Each input is fed to
 * template_parse() (as JSON; a stored form that comes out answers and
 * merges), to template_merge() (as a create body, against a fixed
 * template) and to template_filter_parse() (as text). Any crash, sanitizer
 * report or abort() is a bug. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "core/config.h"
#include "fuzz.h"
#include "core/json_input.h"
#include "sandbox/opensandbox.h"
#include "sandbox/template.h"

static struct broker_config cfg = { .provider = "docker",
                                    .sandbox_millicpus = 500,
                                    .sandbox_memory_mb = 512,
                                    .sandbox_disk_mb = 1024,
                                    .sandbox_disk_max_mb = 4096,
                                    .osb_max_timeout_s = 86400 };

static void check_merge(struct json_object *spec, struct json_object *body)
{
        struct json_object *out = NULL;
        char err[TEMPLATE_ERR_MAX] = "";
        int r = template_merge(spec, body, &out, err);

        CHECK(r == 0 || r == -EINVAL);
        CHECK(r == 0 ? out != NULL
                     : (out == NULL && err[0] && strnlen(err, sizeof(err)) < sizeof(err)));
        if (r == 0) {
                struct json_object *v;
                CHECK(!json_object_object_get_ex(out, "templateId", NULL));
                CHECK(json_object_object_get_ex(out, "image", &v) &&
                      json_object_is_type(v, json_type_object));
                CHECK(json_object_object_get_ex(out, "entrypoint", &v) &&
                      json_object_is_type(v, json_type_array));
        }
        json_object_put(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        char *text = malloc(size + 1), err[TEMPLATE_ERR_MAX];
        struct json_tokener *tok = json_tokener_new_ex(32);
        struct json_object *o = NULL, *spec = NULL, *base = NULL, *filter = NULL, *answer;
        int r;

        CHECK(text && tok);
        memcpy(text, data, size);
        text[size] = '\0';
        base = json_tokener_parse(
                "{\"image\":\"busybox:1\",\"publish\":\"p\",\"entrypoint\":[\"sleep\",\"9\"]}");
        CHECK(base);
        o = json_tokener_parse_ex(tok, text, (int)size);
        if (o && json_object_is_type(o, json_type_object)) {
                err[0] = '\0';
                r = template_parse(&cfg, o, &spec, err);
                CHECK(r == 0 || r == -EINVAL);
                if (r == 0) {
                        CHECK(spec && json_get_str(spec, "image") && json_get_str(spec, "publish"));
                        CHECK(strlen(json_object_to_json_string(spec)) < TEMPLATE_STORED_MAX + 1024);
                        answer = template_json(spec, "tpl-0123456789abcdef0123456789abcdef", 1, 2);
                        CHECK(answer);
                        json_object_put(answer);
                        check_merge(spec, base);
                } else {
                        CHECK(!spec && err[0] && strnlen(err, sizeof(err)) < sizeof(err));
                }
                check_merge(base, o);
        }
        r = template_filter_parse(text, &filter, err);
        CHECK(r == 0 || r == -EINVAL);
        CHECK(r == 0 ? filter != NULL && json_object_object_length(filter) <= TEMPLATE_FILTER_MAX
                     : filter == NULL);
        if (spec)
                (void)template_filter_match(spec, filter);
        json_object_put(filter);
        json_object_put(spec);
        json_object_put(base);
        json_object_put(o);
        json_tokener_free(tok);
        free(text);
        return 0;
}
