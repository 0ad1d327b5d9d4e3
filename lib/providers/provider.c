/* provider: see provider.h. The backends live in their own folders
 * (docker/, daytona/); the factory in provider_factory.c. */
#include "providers/provider.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void exec_result_free(struct exec_result *r)
{
        if (!r)
                return;
        free(r->out);
        free(r->err);
        r->out = r->err = NULL;
        r->out_len = r->err_len = 0;
}

void provider_free(struct provider *p)
{
        if (p && p->ops && p->ops->free)
                p->ops->free(p);
}

void provider_errf(char *ret_err, const char *fmt, ...)
{
        va_list ap;

        if (!ret_err)
                return;
        va_start(ap, fmt);
        vsnprintf(ret_err, PROVIDER_ERR_MAX, fmt, ap);
        va_end(ap);
}

bool provider_can_stream(const struct provider *p)
{
        return p->ops->exec_stream != NULL;
}

int provider_exec(struct provider *p, const char *ref, const struct exec_spec *spec,
                  struct exec_result *ret, char *ret_err)
{
        return p->ops->exec(p, ref, spec, ret, ret_err);
}

int provider_exec_stream(struct provider *p, const char *ref, const struct exec_spec *spec,
                         const struct exec_stream_cb *cb, struct exec_result *ret, char *ret_err)
{
        int r;

        if (p->ops->exec_stream)
                return p->ops->exec_stream(p, ref, spec, cb, ret, ret_err);
        /* A backend without streaming: the same callbacks, once, at the end. */
        r = p->ops->exec(p, ref, spec, ret, ret_err);
        if (r == 0 && ret->out_len)
                r = cb->on_output(cb->ud, 1, ret->out, ret->out_len);
        if (r == 0 && ret->err_len)
                r = cb->on_output(cb->ud, 2, ret->err, ret->err_len);
        return r;
}

int provider_watch_events(struct provider *p, const char *prefix,
                          void (*on_event)(void *ud, const struct sandbox_event *ev),
                          bool (*stop)(void *ud), void *ud, char *ret_err)
{
        if (!p->ops->watch_events) {
                provider_errf(ret_err, "%s: no event stream", p->ops->name);
                return -EOPNOTSUPP;
        }
        return p->ops->watch_events(p, prefix, on_event, stop, ud, ret_err);
}

int provider_image_ensure(struct provider *p, const char *image, const struct image_auth *auth,
                          int timeout_ms, const struct image_pull_cb *cb, char *ret_err)
{
        if (!p->ops->image_ensure) {
                provider_errf(ret_err, "%s: images cannot be pulled by this provider", p->ops->name);
                return -EOPNOTSUPP;
        }
        return p->ops->image_ensure(p, image, auth, timeout_ms, cb, ret_err);
}

bool provider_can_snapshot(const struct provider *p)
{
        return p->ops->snapshot_create && p->ops->snapshot_delete;
}

int provider_snapshot_create(struct provider *p, const char *ref, const struct snapshot_spec *spec,
                             int64_t *ret_size, char *ret_err)
{
        if (!provider_can_snapshot(p)) {
                provider_errf(ret_err, "snapshots are not supported by the %s provider", p->ops->name);
                return -EOPNOTSUPP;
        }
        return p->ops->snapshot_create(p, ref, spec, ret_size, ret_err);
}

int provider_snapshot_delete(struct provider *p, const char *image, char *ret_err)
{
        if (!provider_can_snapshot(p)) {
                provider_errf(ret_err, "snapshots are not supported by the %s provider", p->ops->name);
                return -EOPNOTSUPP;
        }
        return p->ops->snapshot_delete(p, image, ret_err);
}

int provider_snapshot_list(struct provider *p, const char *prefix,
                           void (*fn)(void *ud, const struct snapshot_image *im), void *ud,
                           char *ret_err)
{
        if (!p->ops->snapshot_list) {
                provider_errf(ret_err, "the %s provider cannot list snapshot images", p->ops->name);
                return -EOPNOTSUPP;
        }
        return p->ops->snapshot_list(p, prefix, fn, ud, ret_err);
}

int provider_snapshot_prune(struct provider *p, const char *id, char *ret_err)
{
        if (!p->ops->snapshot_prune) {
                provider_errf(ret_err, "the %s provider cannot remove snapshot images", p->ops->name);
                return -EOPNOTSUPP;
        }
        return p->ops->snapshot_prune(p, id, ret_err);
}

const char *provider_name(const struct provider *p)
{
        return p->ops->name;
}

bool provider_has_volumes(const struct provider *p)
{
        return p->ops->volume_create && p->ops->volume_inspect && p->ops->volume_list &&
               p->ops->volume_remove;
}

static int no_volumes(struct provider *p, char *ret_err)
{
        provider_errf(ret_err, "volumes are not supported by this provider (%s)", p->ops->name);
        return -EOPNOTSUPP;
}

int provider_volume_create(struct provider *p, const struct volume_info *v, char *ret_err)
{
        return provider_has_volumes(p) ? p->ops->volume_create(p, v, ret_err) : no_volumes(p, ret_err);
}

int provider_volume_inspect(struct provider *p, const char *name, struct volume_info *ret,
                            char *ret_err)
{
        return provider_has_volumes(p) ? p->ops->volume_inspect(p, name, ret, ret_err)
                                       : no_volumes(p, ret_err);
}

int provider_volume_list(struct provider *p, const char *prefix, const char *tenant,
                         void (*fn)(void *ud, const struct volume_info *v), void *ud, char *ret_err)
{
        return provider_has_volumes(p) ? p->ops->volume_list(p, prefix, tenant, fn, ud, ret_err)
                                       : no_volumes(p, ret_err);
}

int provider_volume_remove(struct provider *p, const char *name, char *ret_err)
{
        return provider_has_volumes(p) ? p->ops->volume_remove(p, name, ret_err) : no_volumes(p, ret_err);
}

int provider_reap_orphans(struct provider *p, int *ret_count, char *ret_err)
{
        *ret_count = 0;
        return p->ops->reap_orphans ? p->ops->reap_orphans(p, ret_count, ret_err) : 0;
}

int provider_agent_dir_name(struct provider *p, const char *ref, char *buf, size_t size,
                            char *ret_err)
{
        if (!p->ops->agent_dir_name) {
                provider_errf(ret_err, "%s: sandboxes have no agent to reach their ports",
                              p->ops->name);
                return -EOPNOTSUPP;
        }
        return p->ops->agent_dir_name(p, ref, buf, size, ret_err);
}

bool provider_has_files(const struct provider *p)
{
        return p->ops->read_file && p->ops->write_file;
}

int provider_read_file(struct provider *p, const char *ref, const char *path, int64_t offset,
                       int64_t len, const struct file_read_cb *cb, int timeout_ms, char *ret_err)
{
        if (!p->ops->read_file) {
                provider_errf(ret_err, "%s: no file reads", p->ops->name);
                return -EOPNOTSUPP;
        }
        return p->ops->read_file(p, ref, path, offset, len, cb, timeout_ms, ret_err);
}

int provider_write_file(struct provider *p, const char *ref, const char *path, const void *data,
                        size_t len, int mode, int64_t uid, int64_t gid, bool append,
                        int timeout_ms, char *ret_err)
{
        if (!p->ops->write_file) {
                provider_errf(ret_err, "%s: no file writes", p->ops->name);
                return -EOPNOTSUPP;
        }
        return p->ops->write_file(p, ref, path, data, len, mode, uid, gid, append, timeout_ms,
                                  ret_err);
}

int provider_create(struct provider *p, const struct sandbox_spec *spec, char *ret_ref,
                    char *ret_err)
{
        return p->ops->create(p, spec, ret_ref, ret_err);
}

int provider_remove(struct provider *p, const char *ref, char *ret_err)
{
        return p->ops->remove(p, ref, ret_err);
}

int provider_inspect(struct provider *p, const char *ref, struct sandbox_info *ret, char *ret_err)
{
        return p->ops->inspect(p, ref, ret, ret_err);
}

int provider_list_managed(struct provider *p, void (*fn)(void *ud, const struct sandbox_info *info),
                          void *ud, char *ret_err)
{
        return p->ops->list_managed(p, fn, ud, ret_err);
}

int provider_ping(struct provider *p, char *ret_err)
{
        return p->ops->ping(p, ret_err);
}

bool provider_can_update_limits(const struct provider *p)
{
        return p->ops->update_limits != NULL;
}

int provider_update_limits(struct provider *p, const char *ref, const struct sandbox_limits *l,
                           char *ret_err)
{
        if (!p->ops->update_limits) {
                provider_errf(ret_err, "%s: limits cannot be changed in place", p->ops->name);
                return -EOPNOTSUPP;
        }
        return p->ops->update_limits(p, ref, l, ret_err);
}

int provider_image_id(struct provider *p, const char *image, char *ret_id, char *ret_err)
{
        if (!p->ops->image_id) {
                provider_errf(ret_err, "%s: no image ids", p->ops->name);
                return -EOPNOTSUPP;
        }
        return p->ops->image_id(p, image, ret_id, ret_err);
}

int provider_logs(struct provider *p, const char *ref, const struct logs_spec *spec,
                  struct sandbox_logs *ret, char *ret_err)
{
        memset(ret, 0, sizeof(*ret));
        if (!p->ops->logs) {
                provider_errf(ret_err, "%s: this broker reads no sandbox output from this backend",
                              p->ops->name);
                return -EOPNOTSUPP;
        }
        if (spec->tail <= 0 || spec->max_bytes == 0 || spec->timeout_ms <= 0) {
                provider_errf(ret_err, "a read of logs needs a tail, a byte cap and a timeout");
                return -EINVAL;
        }
        return p->ops->logs(p, ref, spec, ret, ret_err);
}

void provider_logs_release(struct sandbox_logs *l)
{
        if (!l)
                return;
        free(l->data);
        memset(l, 0, sizeof(*l));
}

bool provider_can_watch_events(const struct provider *p)
{
        return p->ops->watch_events != NULL;
}

int provider_start(struct provider *p, const char *ref, char *ret_err)
{
        return p->ops->start(p, ref, ret_err);
}

int provider_stop(struct provider *p, const char *ref, char *ret_err)
{
        return p->ops->stop(p, ref, ret_err);
}

int provider_pause(struct provider *p, const char *ref, char *ret_err)
{
        return p->ops->pause(p, ref, ret_err);
}

int provider_resume(struct provider *p, const char *ref, char *ret_err)
{
        return p->ops->resume(p, ref, ret_err);
}

enum api_error provider_api_error(int r, const char *what, const char *err, char *msg, size_t size)
{
        enum api_error e = API_SANDBOX_FAILED;
        const char *why;

        switch (r) {
        case -ECONNREFUSED:
                e = API_UNAVAILABLE;
                why = "the sandbox provider is unreachable";
                break;
        case -ENOENT:
                e = API_SANDBOX_NOT_RUNNING;
                why = "the sandbox's container is gone";
                break;
        case -EBUSY:
                e = API_SANDBOX_NOT_RUNNING;
                why = "the sandbox is not running";
                break;
        case -ETIMEDOUT:
                why = "the sandbox provider timed out";
                break;
        case -EOPNOTSUPP:
                e = API_NOT_IMPLEMENTED;
                why = err && *err ? err : "not supported by this sandbox provider";
                break;
        default:
                why = err && *err ? err : strerror(r < 0 ? -r : r);
                break;
        }
        if (size)
                snprintf(msg, size, "%s: %s", what, why);
        return e;
}
