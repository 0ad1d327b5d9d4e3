/* provider_metered: see provider_metered.h. */
#include "provider_metered.h"

#include <errno.h>
#include <stdlib.h>

#include "metrics.h"

#define INNER(p) ((struct provider *)(p)->impl)

static int counted(int r, const char *op)
{
        if (r < 0 && r != -ENOENT && r != -EBUSY && r != -EINVAL && r != -EFBIG)
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

static int m_exec_stream(struct provider *p, const char *ref, const struct exec_spec *spec,
                         const struct exec_stream_cb *cb, struct exec_result *ret, char *ret_err)
{
        if (!INNER(p)->ops->exec_stream)
                return -EOPNOTSUPP;
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

static void m_free(struct provider *p)
{
        provider_free(INNER(p));
        free(p);
}

static const struct provider_ops metered_ops = {
        .name = "metered",
        .create = m_create, .start = m_start, .stop = m_stop, .pause = m_pause,
        .resume = m_resume, .remove = m_remove, .exec = m_exec, .exec_stream = m_exec_stream,
        .inspect = m_inspect,
        .list_managed = m_list_managed, .put_archive = m_put_archive,
        .get_archive = m_get_archive, .ping = m_ping, .free = m_free,
};

int provider_metered(struct provider **p)
{
        struct provider *w = malloc(sizeof(*w));

        if (!w) {
                provider_free(*p);
                *p = NULL;
                return -ENOMEM;
        }
        w->ops = &metered_ops;
        w->impl = *p;
        *p = w;
        return 0;
}
