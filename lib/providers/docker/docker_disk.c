/* docker_disk: see docker_disk.h. */
#include "providers/docker/docker_disk.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "providers/docker/docker_mountd.h"
#include "providers/http_buf.h"
#include "providers/provider.h"

#define INSPECT_MAX (1024 * 1024)

int docker_disk_inspect(struct docker_api *api, int timeout_ms, const char *ref,
                        struct docker_disk_info *ret, char *ret_err)
{
        struct http_buf resp = { 0 };
        char *e = http_escape(ref), *path = NULL;
        int r = -ENOMEM;

        memset(ret, 0, sizeof(*ret));
        if (e && asprintf(&path, "/containers/%s/json", e) < 0)
                path = NULL;
        r = docker_api_json(api, "GET", path, NULL, timeout_ms, INSPECT_MAX, &resp, "inspect",
                            ret_err);
        if (r == 0 && docker_json_parse_disk(resp.data, ret) < 0) {
                provider_errf(ret_err, "docker: inspect: unexpected answer");
                r = -EIO;
        }
        http_buf_release(&resp);
        free(path);
        free(e);
        return r;
}

int docker_disk_attach(struct docker_api *api, int timeout_ms, const char *mountd, const char *ref,
                       char *ret_err)
{
        struct docker_disk_info di;
        char line[200];
        int r;

        r = docker_disk_inspect(api, timeout_ms, ref, &di, ret_err);
        if (r < 0 || di.disk_mb <= 0)
                return r;
        if (!mountd[0]) {
                provider_errf(ret_err,
                              "docker: the sandbox has a disk of %lld MiB and MOUNTD_SOCKET is "
                              "empty: nothing can mount it",
                              di.disk_mb);
                return -EIO;
        }
        if (strlen(di.sandbox_id) != 32 || strspn(di.sandbox_id, "0123456789abcdef") != 32) {
                provider_errf(ret_err, "docker: the sandbox's disk: no sandbox id label");
                return -EIO;
        }
        if (!di.layer[0]) {
                provider_errf(ret_err,
                              "docker: sandbox disks need dockerd's overlay2 storage driver "
                              "(this dockerd: %.20s); or SANDBOX_DISK_MB=0 (unbounded)",
                              di.driver[0] ? di.driver : "unknown");
                return -EIO;
        }
        snprintf(line, sizeof(line), "disk-make %s %lld %s", di.sandbox_id, di.disk_mb, di.layer);
        return docker_mountd_call(mountd, timeout_ms, line, NULL, 0, ret_err);
}

int docker_disk_remove(const char *mountd, int timeout_ms, const char *sid, char *ret_err)
{
        char line[64];

        if (!mountd[0] || strlen(sid) != 32)
                return 0;
        snprintf(line, sizeof(line), "undisk %s", sid);
        return docker_mountd_call(mountd, timeout_ms, line, NULL, 0, ret_err);
}
