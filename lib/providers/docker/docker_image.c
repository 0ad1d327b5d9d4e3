/* docker_image: see docker_image.h. */
#include "providers/docker/docker_image.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/base64.h"
#include "providers/docker/docker_json.h"
#include "codec/linebuf.h"

#define DOCKER_PULL_LINE_MAX 65536

int docker_image_split(const char *image, char *name, size_t name_size, char *tag,
                       size_t tag_size)
{
        size_t len = image ? strlen(image) : 0;
        const char *slash, *colon;

        if (len == 0 || len >= DOCKER_IMAGE_MAX || len >= name_size || tag_size < 8)
                return -EINVAL;
        for (const char *p = image; *p; p++)
                if ((unsigned char)*p <= ' ' || *p == 0x7f)
                        return -EINVAL;
        if (strchr(image, '@')) {
                /* Docker API: fromImage "may include a tag or digest" */
                strcpy(name, image);
                tag[0] = '\0';
                return 0;
        }
        /* a tag is after the last ':' that follows the last '/'
         * ("host:5000/repo" has none) */
        slash = strrchr(image, '/');
        colon = strrchr(slash ? slash : image, ':');
        if (!colon) {
                strcpy(name, image);
                strcpy(tag, "latest");
                return 0;
        }
        if (colon == image || !colon[1] || strlen(colon + 1) >= tag_size)
                return -EINVAL;
        memcpy(name, image, (size_t)(colon - image));
        name[colon - image] = '\0';
        strcpy(tag, colon + 1);
        return 0;
}

/* The registry of image as Docker resolves it: the first path part when it
 * looks like a host (has '.' or ':', or is "localhost"), else Docker Hub. */
static void registry_of(const char *image, char *buf, size_t size)
{
        size_t n = strcspn(image, "/");

        if (image[n] == '/' && n < size &&
            (memchr(image, '.', n) || memchr(image, ':', n) || (n == 9 && !strncmp(image, "localhost", 9)))) {
                memcpy(buf, image, n);
                buf[n] = '\0';
                return;
        }
        snprintf(buf, size, "https://index.docker.io/v1/");
}

int docker_registry_auth(const struct image_auth *auth, const char *image, char **ret)
{
        struct json_object *o = json_object_new_object();
        char server[DOCKER_IMAGE_MAX];
        char *b64 = NULL;
        const char *js;
        int r = -ENOMEM;

        *ret = NULL;
        if (!o)
                return -ENOMEM;
        registry_of(image, server, sizeof(server));
        if (json_object_object_add(o, "username", json_object_new_string(auth->username ? auth->username : "")) ||
            json_object_object_add(o, "password", json_object_new_string(auth->password ? auth->password : "")) ||
            json_object_object_add(o, "serveraddress", json_object_new_string(server)))
                goto out;
        js = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
        if (!js)
                goto out;
        r = base64_encode(js, strlen(js), &b64);
        /* wipe json-c's rendering of the password */
        explicit_bzero((char *)js, strlen(js));
        if (r < 0)
                goto out;
        /* Docker decodes X-Registry-Auth as base64url */
        for (char *p = b64; *p; p++)
                *p = *p == '+' ? '-' : *p == '/' ? '_' : *p;
        *ret = b64;
        r = 0;
out:
        json_object_put(o);
        return r;
}

int docker_pull_errno(long status, const char *message)
{
        const char *m = message ? message : "";

        if (strstr(m, "unauthorized") || strstr(m, "authentication required") ||
            strstr(m, "no basic auth credentials") || strstr(m, "denied") ||
            strstr(m, "incorrect username or password") || status == 401 || status == 403)
                return -EACCES;
        if (strstr(m, "not found") || strstr(m, "manifest unknown") || strstr(m, "does not exist") ||
            status == 404)
                return -ENOENT;
        return -EIO;
}

static int layer_index(struct docker_pull_state *s, const char *id)
{
        for (int i = 0; i < s->n; i++)
                if (strcmp(s->ids[i], id) == 0)
                        return i;
        if (s->n >= DOCKER_PULL_LAYERS)
                return -1;
        snprintf(s->ids[s->n], sizeof(s->ids[0]), "%s", id);
        s->done[s->n] = false;
        return s->n++;
}

int docker_pull_line(struct docker_pull_state *s, const char *line, size_t len)
{
        struct json_tokener *tok;
        struct json_object *o, *v, *id;
        const char *st;
        int r = 0, i, n0 = s->n, d0 = s->n_done;

        if (len == 0 || len > DOCKER_PULL_LINE_MAX)
                return 0;
        tok = json_tokener_new_ex(8);
        if (!tok)
                return 0;
        o = json_tokener_parse_ex(tok, line, (int)len);
        json_tokener_free(tok);
        if (!o || !json_object_is_type(o, json_type_object))
                goto out;
        if (json_object_object_get_ex(o, "error", &v)) {
                snprintf(s->error, sizeof(s->error), "%s",
                         json_object_is_type(v, json_type_string) ? json_object_get_string(v)
                                                                  : "the pull failed");
                r = docker_pull_errno(0, s->error);
                goto out;
        }
        if (!json_object_object_get_ex(o, "status", &v) || !json_object_is_type(v, json_type_string) ||
            !json_object_object_get_ex(o, "id", &id) || !json_object_is_type(id, json_type_string))
                goto out;
        st = json_object_get_string(v);
        /* per-layer lines; "Pulling from <repo>" also carries an id (the tag) */
        if (strncmp(st, "Pulling from", 12) == 0 || strncmp(st, "Digest:", 7) == 0 ||
            strncmp(st, "Status:", 7) == 0)
                goto out;
        i = layer_index(s, json_object_get_string(id));
        if (i < 0)
                goto out;
        if (!s->done[i] && (strcmp(st, "Pull complete") == 0 || strcmp(st, "Already exists") == 0)) {
                s->done[i] = true;
                s->n_done++;
        }
        r = s->n != n0 || s->n_done != d0;
out:
        json_object_put(o);
        return r;
}

int docker_image_present(struct docker_api *api, const char *image, int timeout_ms,
                         char *ret_err)
{
        char *esc = http_escape(image), *path = NULL;
        long status = 0;
        int r = -ENOMEM;

        if (!esc || asprintf(&path, "/images/%s/json", esc) < 0) {
                path = NULL;
                goto out;
        }
        r = docker_api_call(api, "GET", path, NULL, timeout_ms, &status, NULL, 1024 * 1024, ret_err);
        if (r < 0)
                goto out;
        r = status / 100 == 2 ? 1 : status == 404 ? 0 : -EIO;
        if (r < 0 && ret_err)
                snprintf(ret_err, PROVIDER_ERR_MAX, "docker: image inspect: HTTP %ld", status);
out:
        free(esc);
        free(path);
        return r;
}

int docker_image_id(struct docker_api *api, const char *image, int timeout_ms, char *ret_id,
                    size_t size, char *ret_err)
{
        char *esc = http_escape(image), *path = NULL;
        struct http_buf resp = { 0 };
        struct json_object *o = NULL, *id;
        long status = 0;
        int r = -ENOMEM;

        if (!esc || asprintf(&path, "/images/%s/json", esc) < 0) {
                path = NULL;
                goto out;
        }
        r = docker_api_call(api, "GET", path, NULL, timeout_ms, &status, &resp, 1024 * 1024, ret_err);
        if (r < 0)
                goto out;
        if (status == 404) {
                r = -ENOENT;
                goto out;
        }
        r = -EIO;
        if (status / 100 != 2 || !resp.data)
                goto out;
        o = json_tokener_parse(resp.data);
        if (!o || !json_object_object_get_ex(o, "Id", &id) || !json_object_is_type(id, json_type_string) ||
            (size_t)json_object_get_string_len(id) >= size)
                goto out;
        strcpy(ret_id, json_object_get_string(id));
        r = 0;
out:
        if (r == -EIO && ret_err)
                snprintf(ret_err, PROVIDER_ERR_MAX, "docker: image inspect: HTTP %ld", status);
        json_object_put(o);
        http_buf_release(&resp);
        free(esc);
        free(path);
        return r;
}

struct pull {
        struct linebuf lb;
        struct docker_pull_state st;
        const struct image_pull_cb *cb;
        int failed;
};

static int pull_line(void *ud, const char *line, size_t len)
{
        struct pull *p = ud;
        int r = docker_pull_line(&p->st, line, len);
        char msg[96];

        if (r < 0) {
                p->failed = r;
                return 0; /* keep reading: dockerd ends the answer itself */
        }
        if (r > 0 && p->cb && p->cb->on_progress) {
                snprintf(msg, sizeof(msg), "pulling image: %d/%d layers", p->st.n_done, p->st.n);
                p->cb->on_progress(p->cb->ud, msg);
        }
        return 0;
}

static int pull_sink(void *ud, const void *data, size_t len)
{
        struct pull *p = ud;

        return linebuf_feed(&p->lb, data, len, pull_line, p);
}

/* Copy msg into ret_err with every occurrence of secret masked. */
static void scrub_set(char *ret_err, const char *prefix, const char *msg, const char *secret)
{
        char buf[PROVIDER_ERR_MAX];
        size_t sl = secret ? strlen(secret) : 0;
        char *hit, *from = buf;

        if (!ret_err)
                return;
        snprintf(buf, sizeof(buf), "%s%s", prefix, msg);
        while (sl > 0 && (hit = strstr(from, secret)) != NULL) {
                memset(hit, '*', sl);
                from = hit + sl;
        }
        snprintf(ret_err, PROVIDER_ERR_MAX, "%s", buf);
        explicit_bzero(buf, sizeof(buf));
}

int docker_image_pull(struct docker_api *api, const char *image, const struct image_auth *auth,
                      int timeout_ms, const struct image_pull_cb *cb, char *ret_err)
{
        char name[DOCKER_IMAGE_MAX], tag[DOCKER_IMAGE_MAX], *en = NULL, *et = NULL, *path = NULL;
        char *b64 = NULL, *hdr = NULL, terr[PROVIDER_ERR_MAX] = "";
        const char *headers[2] = { NULL, NULL };
        const char *secret = auth ? auth->password : NULL;
        struct pull p = { .lb = { .max = DOCKER_PULL_LINE_MAX }, .cb = cb };
        struct http_buf resp = { 0 };
        long status = 0;
        int r;

        r = docker_image_split(image, name, sizeof(name), tag, sizeof(tag));
        if (r < 0) {
                scrub_set(ret_err, "", "image pull: not a valid image reference", NULL);
                return r;
        }
        r = -ENOMEM;
        en = http_escape(name);
        et = http_escape(tag);
        if (!en || !et)
                goto nomem;
        if (tag[0] ? asprintf(&path, "/images/create?fromImage=%s&tag=%s", en, et) < 0
                   : asprintf(&path, "/images/create?fromImage=%s", en) < 0) {
                path = NULL;
                goto nomem;
        }
        if (auth && (auth->username || auth->password)) {
                r = docker_registry_auth(auth, image, &b64);
                if (r < 0 || asprintf(&hdr, "X-Registry-Auth: %s", b64) < 0) {
                        hdr = NULL;
                        r = -ENOMEM;
                        goto nomem;
                }
                headers[0] = hdr;
        }
        if (cb && cb->on_progress)
                cb->on_progress(cb->ud, "pulling image");
        struct docker_request req = {
                .method = "POST",
                .path = path,
                .timeout_ms = timeout_ms,
                .headers = headers,
                .sink = pull_sink,
                .sink_ud = &p,
        };
        r = docker_api_request(api, &req, &status, &resp, terr);
        if (r == 0)
                (void)linebuf_flush(&p.lb, pull_line, &p);
        if (r == -ETIMEDOUT) {
                if (ret_err)
                        snprintf(ret_err, PROVIDER_ERR_MAX,
                                 "image pull: %s not pulled within %d ms (IMAGE_PULL_TIMEOUT_MS)",
                                 image, timeout_ms);
        } else if (r < 0) {
                scrub_set(ret_err, "image pull: ", terr, secret);
        } else if (status / 100 != 2) {
                char msg[PROVIDER_ERR_MAX];

                docker_json_error_message("image pull", status, resp.data, msg);
                r = docker_pull_errno(status, msg);
                scrub_set(ret_err, "", msg, secret);
                explicit_bzero(msg, sizeof(msg));
        } else if (p.failed) {
                r = p.failed;
                scrub_set(ret_err, "image pull: ", p.st.error, secret);
        }
        goto out;
nomem:
        scrub_set(ret_err, "", "image pull: out of memory", NULL);
out:
        if (b64) {
                explicit_bzero(b64, strlen(b64));
                free(b64);
        }
        if (hdr) {
                explicit_bzero(hdr, strlen(hdr));
                free(hdr);
        }
        explicit_bzero(p.st.error, sizeof(p.st.error));
        linebuf_release(&p.lb);
        http_buf_release(&resp);
        free(en);
        free(et);
        free(path);
        return r;
}

int docker_commit_body(const struct snapshot_spec *spec, char **ret)
{
        struct json_object *o = NULL, *labels = NULL;
        const char *s;
        int r = -EINVAL;

        *ret = NULL;
        if (!spec->snapshot_id || !spec->sandbox_id || !spec->tenant || !spec->image)
                goto out;
        r = -ENOMEM;
        o = json_object_new_object();
        labels = json_object_new_object();
        if (!o || !labels)
                goto out;
        /* Docker merges the container's labels into the image's: those
         * that tie a container to a sandbox are blanked, so that they never
         * mark the image or what is made from it */
        if (json_object_object_add(labels, PROVIDER_LABEL_MANAGED, json_object_new_string("")) ||
            json_object_object_add(labels, PROVIDER_LABEL_SANDBOX, json_object_new_string("")) ||
            json_object_object_add(labels, PROVIDER_LABEL_AGENT, json_object_new_string("")) ||
            json_object_object_add(labels, PROVIDER_LABEL_SNAPSHOT, json_object_new_string(spec->snapshot_id)) ||
            json_object_object_add(labels, PROVIDER_LABEL_SNAPSHOT_OF, json_object_new_string(spec->sandbox_id)) ||
            json_object_object_add(labels, PROVIDER_LABEL_TENANT, json_object_new_string(spec->tenant)) ||
            json_object_object_add(labels, PROVIDER_LABEL_PREFIX,
                                   json_object_new_string(spec->key_prefix ? spec->key_prefix : "")) ||
            json_object_object_add(o, "Entrypoint", json_object_new_array()))
                goto out;
        if (json_object_object_add(o, "Labels", labels)) {
                goto out;
        }
        labels = NULL;
        s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
        *ret = s ? strdup(s) : NULL;
        r = *ret ? 0 : -ENOMEM;
out:
        json_object_put(labels);
        json_object_put(o);
        return r;
}

int docker_size_parse(const char *body, const char *field, int64_t *ret_size)
{
        struct json_object *o = body ? json_tokener_parse(body) : NULL, *v;
        int r = -EPROTO;

        if (o && json_object_is_type(o, json_type_object) && json_object_object_get_ex(o, field, &v) &&
            json_object_is_type(v, json_type_int) && json_object_get_int64(v) >= 0) {
                *ret_size = json_object_get_int64(v);
                r = 0;
        }
        json_object_put(o);
        return r;
}

/* One call (docker_api_json), answers capped at 1 MiB. */
static int image_call(struct docker_api *api, const char *method, const char *path, const char *body,
                      int timeout_ms, struct http_buf *resp, const char *what, char *ret_err)
{
        return docker_api_json(api, method, path, body, timeout_ms, 1024 * 1024, resp, what, ret_err);
}

int docker_image_commit(struct docker_api *api, const char *ref, const struct snapshot_spec *spec,
                        int64_t *ret_size, char *ret_err)
{
        char name[DOCKER_IMAGE_MAX], tag[DOCKER_IMAGE_MAX];
        char *body = NULL, *path = NULL, *ec = NULL, *en = NULL, *et = NULL;
        struct http_buf resp = { 0 };
        int r;

        r = docker_image_split(spec->image, name, sizeof(name), tag, sizeof(tag));
        if (r < 0 || !tag[0]) {
                provider_errf(ret_err, "snapshot: not a valid image name");
                return -EINVAL;
        }
        r = docker_commit_body(spec, &body);
        if (r < 0)
                goto nomem;
        ec = http_escape(ref);
        en = http_escape(name);
        et = http_escape(tag);
        if (!ec || !en || !et) {
                r = -ENOMEM;
                goto nomem;
        }
        if (spec->max_bytes > 0) {
                /* a sandbox over the cap is not written to disk as an image first */
                if (asprintf(&path, "/containers/%s/json?size=1", ec) < 0) {
                        path = NULL;
                        r = -ENOMEM;
                        goto nomem;
                }
                r = image_call(api, "GET", path, NULL, spec->timeout_ms, &resp, "snapshot size", ret_err);
                if (r < 0)
                        goto out;
                if (docker_size_parse(resp.data, "SizeRootFs", ret_size) == 0 && *ret_size > spec->max_bytes) {
                        provider_errf(ret_err, "snapshot: the sandbox holds %lld bytes",
                                      (long long)*ret_size);
                        r = -EFBIG;
                        goto out;
                }
                http_buf_release(&resp);
                resp = (struct http_buf){ 0 };
                free(path);
        }
        if (asprintf(&path, "/commit?container=%s&repo=%s&tag=%s&pause=1", ec, en, et) < 0) {
                path = NULL;
                r = -ENOMEM;
                goto nomem;
        }
        r = image_call(api, "POST", path, body, spec->timeout_ms, NULL, "snapshot", ret_err);
        if (r < 0)
                goto out;
        free(path);
        if (asprintf(&path, "/images/%s:%s/json", en, et) < 0) {
                path = NULL;
                r = -ENOMEM;
                goto nomem;
        }
        r = image_call(api, "GET", path, NULL, spec->timeout_ms, &resp, "snapshot size", ret_err);
        if (r == 0 && docker_size_parse(resp.data, "Size", ret_size) < 0) {
                provider_errf(ret_err, "snapshot: image inspect without a Size");
                r = -EIO;
        }
        goto out;
nomem:
        if (r == -ENOMEM)
                provider_errf(ret_err, "snapshot: out of memory");
out:
        http_buf_release(&resp);
        free(body);
        free(path);
        free(ec);
        free(en);
        free(et);
        return r;
}

int docker_image_remove(struct docker_api *api, const char *image, int timeout_ms, char *ret_err)
{
        char *en = http_escape(image), *path = NULL;
        int r;

        if (!en || asprintf(&path, "/images/%s?force=1", en) < 0) {
                free(en);
                provider_errf(ret_err, "snapshot delete: out of memory");
                return -ENOMEM;
        }
        r = image_call(api, "DELETE", path, NULL, timeout_ms, NULL, "snapshot delete", ret_err);
        free(en);
        free(path);
        return r;
}

struct snapshot_filter {
        const char *prefix;
        void (*fn)(void *ud, const struct snapshot_image *im);
        void *ud;
};

static void snapshot_of_prefix(void *ud, const struct snapshot_image *im)
{
        const struct snapshot_filter *f = ud;

        /* the prefix is compared here, not in Docker's filter: a label
         * filter "key=value" would take the prefix's own '=' for its end */
        if (im->snapshot_id[0] && strcmp(im->prefix, f->prefix) == 0)
                f->fn(f->ud, im);
}

int docker_image_list_snapshots(struct docker_api *api, const char *prefix, int timeout_ms,
                                void (*fn)(void *ud, const struct snapshot_image *im), void *ud,
                                char *ret_err)
{
        /* filters={"label":["io.sandbox-broker.snapshot-id"]}, escaped */
        static const char path[] = "/images/json?filters=%7B%22label%22%3A%5B%22"
                                   PROVIDER_LABEL_SNAPSHOT "%22%5D%7D";
        struct snapshot_filter f = { prefix, fn, ud };
        struct http_buf resp = { 0 };
        int r;

        /* one summary is well under 2 KiB: 16 MiB is thousands of images */
        r = docker_api_json(api, "GET", path, NULL, timeout_ms, 16 * 1024 * 1024, &resp,
                            "snapshot images", ret_err);
        if (r == 0 && docker_json_parse_images(resp.data, snapshot_of_prefix, &f) < 0) {
                provider_errf(ret_err, "docker: snapshot images: an answer that is not a list");
                r = -EIO;
        }
        http_buf_release(&resp);
        return r;
}

int docker_image_prune(struct docker_api *api, const char *id, int timeout_ms, char *ret_err)
{
        char *en = http_escape(id), *path = NULL;
        int r;

        if (!en || asprintf(&path, "/images/%s", en) < 0) {
                free(en);
                provider_errf(ret_err, "snapshot image removal: out of memory");
                return -ENOMEM;
        }
        r = image_call(api, "DELETE", path, NULL, timeout_ms, NULL, "snapshot image removal", ret_err);
        free(en);
        free(path);
        return r;
}
