/* provider_metered: see provider_metered.h. */
#include "providers/provider_metered.h"

#include <errno.h>
#include <stdlib.h>

#include "core/metrics.h"

/* The wrapper's own table: the forwarding functions where the inner
 * provider has the op, NULL where it has none, so callers see exactly
 * the backend's capabilities. */
struct metered {
        struct provider_ops ops;
        struct provider *inner;
};

#define INNER(p) (((struct metered *)(p)->impl)->inner)

static int counted(int r, const char *op)
{
        if (r < 0 && r != -ENOENT && r != -EBUSY && r != -EINVAL && r != -EFBIG && r != -EALREADY)
                metrics_provider_error(op);
        return r;
}

static int m_create(struct provider *p, const struct sandbox_spec *spec, char *ret_ref, char *ret_err)
{
        return counted(INNER(p)->ops->create(INNER(p), spec, ret_ref, ret_err), "create");
}

static int m_start(struct provider *p, const char *ref, char *ret_err)
{
        return counted(INNER(p)->ops->start(INNER(p), ref, ret_err), "start");
}

static int m_stop(struct provider *p, const char *ref, char *ret_err)
{
        return counted(INNER(p)->ops->stop(INNER(p), ref, ret_err), "stop");
}

static int m_pause(struct provider *p, const char *ref, char *ret_err)
{
        return counted(INNER(p)->ops->pause(INNER(p), ref, ret_err), "pause");
}

static int m_resume(struct provider *p, const char *ref, char *ret_err)
{
        return counted(INNER(p)->ops->resume(INNER(p), ref, ret_err), "resume");
}

static int m_remove(struct provider *p, const char *ref, char *ret_err)
{
        return counted(INNER(p)->ops->remove(INNER(p), ref, ret_err), "remove");
}

static int m_exec(struct provider *p, const char *ref, const struct exec_spec *spec,
                  struct exec_result *ret, char *ret_err)
{
        return counted(INNER(p)->ops->exec(INNER(p), ref, spec, ret, ret_err), "exec");
}

/* Only in the table when the inner provider streams. */
static int m_exec_stream(struct provider *p, const char *ref, const struct exec_spec *spec,
                         const struct exec_stream_cb *cb, struct exec_result *ret, char *ret_err)
{
        return counted(INNER(p)->ops->exec_stream(INNER(p), ref, spec, cb, ret, ret_err), "exec");
}

static int m_inspect(struct provider *p, const char *ref, struct sandbox_info *ret, char *ret_err)
{
        return counted(INNER(p)->ops->inspect(INNER(p), ref, ret, ret_err), "inspect");
}

static int m_list_managed(struct provider *p, void (*fn)(void *ud, const struct sandbox_info *info),
                          void *ud, char *ret_err)
{
        return counted(INNER(p)->ops->list_managed(INNER(p), fn, ud, ret_err), "list");
}

static int m_put_archive(struct provider *p, const char *ref, const char *dir, const void *tar,
                         size_t len, char *ret_err)
{
        return counted(INNER(p)->ops->put_archive(INNER(p), ref, dir, tar, len, ret_err), "put_archive");
}

static int m_get_archive(struct provider *p, const char *ref, const char *path, size_t max_len,
                         void **ret_tar, size_t *ret_len, char *ret_err)
{
        return counted(INNER(p)->ops->get_archive(INNER(p), ref, path, max_len, ret_tar, ret_len, ret_err),
                       "get_archive");
}

static int m_ping(struct provider *p, char *ret_err)
{
        return counted(INNER(p)->ops->ping(INNER(p), ret_err), "ping");
}

/* A file call's failure is the backend's unless the file's own answer
 * (no such file, a directory, permission) or "not here, use a command". */
static int counted_file(int r, const char *op)
{
        if (r == -EISDIR || r == -EACCES || r == -EOPNOTSUPP)
                return r;
        return counted(r, op);
}

static int m_read_file(struct provider *p, const char *ref, const char *path, int64_t offset,
                       int64_t len, const struct file_read_cb *cb, int timeout_ms, char *ret_err)
{
        return counted_file(INNER(p)->ops->read_file(INNER(p), ref, path, offset, len, cb,
                                                     timeout_ms, ret_err),
                            "read_file");
}

static int m_write_file(struct provider *p, const char *ref, const char *path, const void *data,
                        size_t len, int mode, int64_t uid, int64_t gid, bool append,
                        int timeout_ms, char *ret_err)
{
        return counted_file(INNER(p)->ops->write_file(INNER(p), ref, path, data, len, mode, uid,
                                                      gid, append, timeout_ms, ret_err),
                            "write_file");
}

/* not counted: one call lives as long as the stream */
static int m_watch_events(struct provider *p, const char *prefix,
                          void (*on_event)(void *ud, const struct sandbox_event *ev),
                          bool (*stop)(void *ud), void *ud, char *ret_err)
{
        return INNER(p)->ops->watch_events(INNER(p), prefix, on_event, stop, ud, ret_err);
}

/* not counted: a refused or missing image is the request's, not the backend's */
static int m_image_ensure(struct provider *p, const char *image, const struct image_auth *auth,
                          int timeout_ms, const struct image_pull_cb *cb, char *ret_err)
{
        return INNER(p)->ops->image_ensure(INNER(p), image, auth, timeout_ms, cb, ret_err);
}

static int m_image_id(struct provider *p, const char *image, char *ret_id, char *ret_err)
{
        return counted(INNER(p)->ops->image_id(INNER(p), image, ret_id, ret_err), "image_id");
}

static int m_update_limits(struct provider *p, const char *ref, const struct sandbox_limits *l,
                           char *ret_err)
{
        return counted(INNER(p)->ops->update_limits(INNER(p), ref, l, ret_err), "update_limits");
}

static int m_snapshot_create(struct provider *p, const char *ref, const struct snapshot_spec *spec,
                             int64_t *ret_size, char *ret_err)
{
        return counted(INNER(p)->ops->snapshot_create(INNER(p), ref, spec, ret_size, ret_err),
                       "snapshot_create");
}

static int m_snapshot_delete(struct provider *p, const char *image, char *ret_err)
{
        return counted(INNER(p)->ops->snapshot_delete(INNER(p), image, ret_err), "snapshot_delete");
}

static int m_snapshot_list(struct provider *p, const char *prefix,
                           void (*fn)(void *ud, const struct snapshot_image *im), void *ud,
                           char *ret_err)
{
        return counted(INNER(p)->ops->snapshot_list(INNER(p), prefix, fn, ud, ret_err), "snapshot_list");
}

static int m_snapshot_prune(struct provider *p, const char *id, char *ret_err)
{
        return counted(INNER(p)->ops->snapshot_prune(INNER(p), id, ret_err), "snapshot_prune");
}

static int m_volume_create(struct provider *p, const struct volume_info *v, char *ret_err)
{
        return counted(INNER(p)->ops->volume_create(INNER(p), v, ret_err), "volume_create");
}

static int m_volume_inspect(struct provider *p, const char *name, struct volume_info *ret,
                            char *ret_err)
{
        return counted(INNER(p)->ops->volume_inspect(INNER(p), name, ret, ret_err), "volume_inspect");
}

static int m_volume_list(struct provider *p, const char *prefix, const char *tenant,
                         void (*fn)(void *ud, const struct volume_info *v), void *ud, char *ret_err)
{
        return counted(INNER(p)->ops->volume_list(INNER(p), prefix, tenant, fn, ud, ret_err), "volume_list");
}

static int m_volume_remove(struct provider *p, const char *name, char *ret_err)
{
        return counted(INNER(p)->ops->volume_remove(INNER(p), name, ret_err), "volume_remove");
}

/* A local lookup (no backend call): not counted. */
static int m_agent_dir_name(struct provider *p, const char *ref, char *buf, size_t size,
                            char *ret_err)
{
        return INNER(p)->ops->agent_dir_name(INNER(p), ref, buf, size, ret_err);
}

static int m_logs(struct provider *p, const char *ref, const struct logs_spec *spec,
                  struct sandbox_logs *ret, char *ret_err)
{
        return counted(INNER(p)->ops->logs(INNER(p), ref, spec, ret, ret_err), "logs");
}

static int m_reap_orphans(struct provider *p, int *ret_count, char *ret_err)
{
        return counted(INNER(p)->ops->reap_orphans(INNER(p), ret_count, ret_err), "reap_orphans");
}

static void m_free(struct provider *p)
{
        provider_free(INNER(p));
        free(p->impl);
        free(p);
}

/* Forward op only if the inner table has it. */
#define MIRROR(op) (in->op ? m_##op : NULL)

int provider_metered(struct provider **p)
{
        const struct provider_ops *in = (*p)->ops;
        struct provider *w = malloc(sizeof(*w));
        struct metered *m = malloc(sizeof(*m));

        if (!w || !m) {
                free(w);
                free(m);
                provider_free(*p);
                *p = NULL;
                return -ENOMEM;
        }
        m->ops = (struct provider_ops){
                .name = in->name,
                .create = MIRROR(create), .start = MIRROR(start), .stop = MIRROR(stop),
                .pause = MIRROR(pause), .resume = MIRROR(resume), .remove = MIRROR(remove),
                .exec = MIRROR(exec), .exec_stream = MIRROR(exec_stream), .inspect = MIRROR(inspect),
                .list_managed = MIRROR(list_managed), .put_archive = MIRROR(put_archive),
                .get_archive = MIRROR(get_archive), .ping = MIRROR(ping),
                .watch_events = MIRROR(watch_events), .read_file = MIRROR(read_file),
                .write_file = MIRROR(write_file), .image_ensure = MIRROR(image_ensure),
                .update_limits = MIRROR(update_limits),
                .snapshot_create = MIRROR(snapshot_create), .snapshot_delete = MIRROR(snapshot_delete),
                .snapshot_list = MIRROR(snapshot_list), .snapshot_prune = MIRROR(snapshot_prune),
                .volume_create = MIRROR(volume_create), .volume_inspect = MIRROR(volume_inspect),
                .volume_list = MIRROR(volume_list), .volume_remove = MIRROR(volume_remove),
                .agent_dir_name = MIRROR(agent_dir_name),
                .image_id = MIRROR(image_id), .reap_orphans = MIRROR(reap_orphans),
                .logs = MIRROR(logs),
                .free = m_free,
        };
        m->inner = *p;
        w->ops = &m->ops;
        w->impl = m;
        *p = w;
        return 0;
}
