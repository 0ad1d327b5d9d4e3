/* sandbox_teardown: a sandbox off the teardown list (sandbox.h): its
 * container stopped (parked for its slot) or removed, a Failed one's
 * purged, the named volumes it made released, its record Terminated. */
#include "sandbox/sandbox.h"
#include "sandbox/sandbox_internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "store/sandbox_record.h"
#include "sandbox/volume.h"

/* deleteOnSandboxTermination (volume.h): the named volumes the removed
 * sandbox's create made. A failure leaves them to the tenant's
 * DELETE /v1/volumes. */
static void release_volumes(struct redis_conn *rc, struct provider *pv,
                            const struct broker_config *cfg, const char *sid)
{
        struct sandbox_record rec;

        if (sandbox_record_read(rc, cfg, sid, SANDBOX_RECORD_VOLUMES, &rec) < 0)
                return;
        if (rec.volumes[0] && provider_has_volumes(pv))
                (void)volume_release(pv, rec.volumes);
        sandbox_record_clear(&rec);
}

int sandbox_teardown_next(struct redis_conn *rc, struct provider *pv,
                          const struct broker_config *cfg, char *ret_sid, char *err)
{
        redisReply *rep = NULL;
        char ref[PROVIDER_REF_MAX] = "", action[16] = "";
        int r;

        ret_sid[0] = '\0';
        r = redis_conn_script(rc, LUA_TEARDOWN_TAKE, 0, NULL, &rep);
        if (r < 0)
                return r;
        if (rep->type != REDIS_REPLY_ARRAY || (rep->elements != 0 && rep->elements != 3)) {
                reply_free(rep);
                return -EPROTO;
        }
        if (rep->elements == 0) {
                reply_free(rep);
                return 0;
        }
        r = copy_str(rep->element[0], ret_sid, 33);
        if (r == 0)
                r = copy_str(rep->element[1], ref, sizeof(ref));
        if (r == 0)
                r = copy_str(rep->element[2], action, sizeof(action));
        reply_free(rep);
        if (r < 0)
                return r;
        if (strcmp(action, "none") == 0)
                return 1;
        if (strcmp(action, "purge") == 0) {
                /* a Failed lease sandbox's dead container: the record stays Failed */
                const char *argv[] = { ret_sid };
                if (ref[0]) {
                        r = provider_remove(pv, ref, err);
                        if (r < 0 && r != -ENOENT)
                                return r; /* left in the busy list: the reconciler retries */
                }
                r = redis_conn_script(rc, LUA_TEARDOWN_PURGED, 1, argv, &rep);
                reply_free(rep);
                return r < 0 ? r : 1;
        }
        if (strcmp(action, "stop") == 0 && ref[0]) {
                r = provider_stop(pv, ref, err);
                if (r == 0)
                        r = sandbox_transition(rc, ret_sid, "Stopping", "Stopped", "",
                                               "stopped; kept for its slot's next lease", "");
                /* a backend that cannot stop and keep (Kubernetes: -EOPNOTSUPP)
                 * removes it as below */
                if (r != -ENOENT && r != -EOPNOTSUPP)
                        return r < 0 ? r : 1;
        }
        if (ref[0]) {
                r = provider_remove(pv, ref, err);
                if (r < 0 && r != -ENOENT)
                        return r; /* left in the busy list: the reconciler retries */
        }
        release_volumes(rc, pv, cfg, ret_sid);
        r = sandbox_transition(rc, ret_sid, "Stopping", "Terminated", "", "removed", "");
        return r < 0 && r != -EBUSY ? r : 1;
}
