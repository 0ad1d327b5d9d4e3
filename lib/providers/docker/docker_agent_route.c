/* docker_agent_route: a Docker sandbox's commands, files and ingress
 * through its sandbox-agent (agent_client.h) when it was made with one and
 * EXEC_TRANSPORT=agent, else commands through docker_exec_fallback.c; an
 * unreachable agent as this sandbox's failure (-EIO). */
#include "providers/docker/docker_internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "providers/agent/agent_client.h"

/* The run directory of ref's agent when commands go through it: a
 * container made with the agent has one; one made before (or without)
 * keeps `docker exec`. */
static bool agent_dir_for(struct docker *d, const char *ref, char *dir, size_t size)
{
        return d->agent.exec && docker_agent_run_dir(&d->agent, ref, dir, size) == 0;
}

/* An agent that cannot be reached is this sandbox's failure, not Docker's:
 * -ECONNREFUSED would read "the provider is unreachable" and -ENOENT "the
 * sandbox is gone"; both are -EIO with the agent's reason (a planted link,
 * a dead listener, no socket). */
static int agent_errno(int r)
{
        return r == -ECONNREFUSED || r == -ENOENT ? -EIO : r;
}

int docker_exec(struct provider *p, const char *ref, const struct exec_spec *spec,
                struct exec_result *ret, char *ret_err)
{
        char dir[256];

        if (agent_dir_for(impl(p), ref, dir, sizeof(dir)))
                return agent_errno(agent_exec(dir, spec, ret, ret_err));
        return docker_exec_fallback(impl(p), ref, spec, NULL, ret, ret_err);
}

int docker_exec_stream(struct provider *p, const char *ref, const struct exec_spec *spec,
                       const struct exec_stream_cb *cb, struct exec_result *ret,
                       char *ret_err)
{
        char dir[256];

        if (agent_dir_for(impl(p), ref, dir, sizeof(dir)))
                return agent_errno(agent_exec_stream(dir, spec, cb, ret, ret_err));
        return docker_exec_fallback(impl(p), ref, spec, cb, ret, ret_err);
}

/* ---- files, through the agent ---- */

/* A file call's errno: the agent client says -ENOENT both for "no such
 * file" (its 404) and for "no socket" (agent_connect), and -ECONNREFUSED
 * for a dead or planted socket. Only the first is the file's; the others
 * are this sandbox's failure (-EIO, as agent_errno), told apart by the
 * connect's message. */
static int agent_file_errno(int r, const char *err)
{
        static const char unreachable[] = "sandbox agent unreachable";

        if (r == -ECONNREFUSED)
                return -EIO;
        if (r == -ENOENT && strncmp(err, unreachable, sizeof(unreachable) - 1) == 0)
                return -EIO;
        return r;
}

int docker_read_file(struct provider *p, const char *ref, const char *path,
                     int64_t offset, int64_t len, const struct file_read_cb *cb,
                     int timeout_ms, char *ret_err)
{
        char dir[256], err[PROVIDER_ERR_MAX] = "";
        int r;

        if (!agent_dir_for(impl(p), ref, dir, sizeof(dir))) {
                provider_errf(ret_err, "docker: no sandbox agent in %.64s", ref);
                return -EOPNOTSUPP;
        }
        r = agent_read_file_fd(dir, path, offset, len, cb, timeout_ms, err);
        if (r < 0)
                provider_errf(ret_err, "%s", err);
        return agent_file_errno(r, err);
}

int docker_write_file(struct provider *p, const char *ref, const char *path,
                      const void *data, size_t len, int mode, int64_t uid, int64_t gid,
                      bool append, int timeout_ms, char *ret_err)
{
        char dir[256], err[PROVIDER_ERR_MAX] = "";
        int r;

        if (!agent_dir_for(impl(p), ref, dir, sizeof(dir))) {
                provider_errf(ret_err, "docker: no sandbox agent in %.64s", ref);
                return -EOPNOTSUPP;
        }
        r = agent_write_file(dir, path, data, len, mode, uid, gid, append, timeout_ms, err);
        if (r < 0)
                provider_errf(ret_err, "%s", err);
        return agent_file_errno(r, err);
}

/* ---- ingress ---- */

/* The run directory is AGENT_DIR/<container id> (docker_agent.h). */
int docker_agent_dir_name(struct provider *p, const char *ref, char *buf, size_t size,
                          char *ret_err)
{
        struct docker *d = impl(p);
        char dir[256];

        if (!d->agent.bin[0] || docker_agent_run_dir(&d->agent, ref, dir, sizeof(dir)) < 0) {
                provider_errf(ret_err, "docker: no sandbox agent in %.64s", ref);
                return -EOPNOTSUPP;
        }
        if ((size_t)snprintf(buf, size, "%s", ref) >= size)
                return -ENAMETOOLONG;
        return 0;
}
