"""A lease whose sandbox died does not read healthy (issue 24, M3).

The attack: a tenant's sandbox container is killed behind the broker's back
(straight through the Docker Engine API, as `docker kill` would), while its
client keeps heartbeating. Before the fix the heartbeat answered 200 active,
a re-acquire of the session handed back the dead sandbox, and the slot stayed
held for as long as the client heartbeat. Now (lib/store/lua/sandbox_state.lua,
heartbeat.lua, acquire.lua):

- the heartbeat answers 404 SANDBOX_LOST with the reason within a few seconds
  (404: the lease has ended, so a client acquires again; the code says why);
- the slot is freed at once (GET /v1/status; a queued ticket of another tenant
  is granted), and the dead container is removed (the teardown list, not the
  reconciler, which is held off here);
- a re-acquire of the session gets a new sandbox that runs commands, or queues;
- in user_shared and multi_user_shared every lease of the sandbox answers the
  same, and their re-acquires share one new sandbox;
- a lease the slot index does not know (made by an older broker) is caught by
  the heartbeat or the re-acquire that finds its record Failed.

Another tenant's lease on another sandbox is checked throughout: it stays
active and runs commands. Waits are bounded generously (LOST_BOUND_S).
"""

import time
import uuid

from brokerlib import wait_until
from sandboxlib import DOCKER, SB, check_sandbox_lease, docker_broker, require_docker  # noqa: F401

require_docker()

LOST_BOUND_S = 10.0  # the watch marks the record within a second or two
OTHER_KEY = "itk-other-%s" % uuid.uuid4().hex


def uid():
    return "u" + uuid.uuid4().hex[:10]


def start(docker_broker, capacity=3, **env):
    # the reconciler (which also removes dead containers) is held off: what
    # answers here is the watch and the teardown list
    return docker_broker(BROKER_CAPACITY=capacity, RECONCILE_MS=3600000, IDLE_POLICY="delete",
                         OPENSANDBOX_API_KEYS="%s:other" % OTHER_KEY, **env)


def acquire(sb, user, session, key=None, **body):
    body.update({"userId": user, "sessionId": session})
    return sb.b.request("POST", "/v1/leases/acquire", body, auth=key or True, timeout=60)


def acquired(sb, user, session, key=None, mode="exclusive", **body):
    """Acquire and wait for the lease; returns it."""
    r = acquire(sb, user, session, key, mode=mode, **body)
    if r.status == 200:
        return check_sandbox_lease(r.json["lease"], mode)
    assert r.status == 202, r
    lease = wait_until(lambda: (lambda p: p.json.get("lease") if p.json.get("status") == "granted"
                                else None)(sb.b.request("GET", "/v1/leases/poll?ticketId=" + r.json["ticketId"],
                                                        auth=key or True)),
                       90, 0.1, "ticket %s granted" % r.json["ticketId"])
    return check_sandbox_lease(lease, mode)


def heartbeat(sb, lease=None, user=None, session=None, key=None):
    body = {"leaseId": lease["leaseId"]} if lease else {"userId": user, "sessionId": session}
    return sb.b.request("POST", "/v1/leases/heartbeat", body, auth=key or True)


def run(sb, lease, cmd, key=None):
    r = sb.b.request("POST", "/v1/sandboxes/%s/exec" % lease["sandboxId"], {"cmd": cmd},
                     {"X-Lease-ID": lease["leaseId"],
                      "Authorization": "Bearer %s" % (key or sb.b.api_key)}, timeout=60)
    return r


def runs(sb, lease, key=None):
    r = run(sb, lease, "echo alive; id -un", key)
    assert r.status == 200 and r.json["stdout"].startswith("alive\n"), r
    return r.json["stdout"].split("\n")[1]


def kill(sid):
    DOCKER.call("POST", "/containers/sb-%s/kill?signal=KILL" % sid)


def lost(sb, lease, key=None, user=None, session=None):
    """Wait until the heartbeat (by id, or by session) answers SANDBOX_LOST."""
    t0 = time.monotonic()

    def check():
        r = heartbeat(sb, None if user else lease, user, session, key)
        if r.status == 200:
            return None
        assert r.status == 404 and r.json["code"] == "SANDBOX_LOST", r
        return r
    r = wait_until(check, LOST_BOUND_S, 0.05, "heartbeat of %s says SANDBOX_LOST" % lease["leaseId"])
    print("\nlost: heartbeat answered SANDBOX_LOST %.2f s after the check began" % (time.monotonic() - t0))
    assert lease["sandboxId"] in r.json["message"] and lease["leaseId"] in r.json["message"], r
    return r


def container_gone(sid):
    wait_until(lambda: DOCKER.state("sb-" + sid) is None, 30, 0.1, "container sb-%s removed" % sid)


def slots(sb):
    return sb.b.status()["activeSlots"]


class Bystander:
    """Another tenant's lease on its own sandbox, checked during the attack."""

    def __init__(self, sb):
        self.sb = sb
        self.user = uid()
        self.lease = acquired(sb, self.user, "s1", OTHER_KEY)
        assert runs(sb, self.lease, OTHER_KEY) == "root"

    def check(self):
        r = heartbeat(self.sb, self.lease, key=OTHER_KEY)
        assert r.status == 200 and r.json["status"] == "active", r
        assert r.json["lease"]["sandboxId"] == self.lease["sandboxId"], r
        assert runs(self.sb, self.lease, OTHER_KEY) == "root"


def test_exclusive_killed_sandbox_heartbeat_says_lost_slot_freed_container_removed(docker_broker):
    sb = start(docker_broker, capacity=2)
    other = Bystander(sb)
    u = uid()
    lz = acquired(sb, u, "s1")
    sid = lz["sandboxId"]
    assert runs(sb, lz) == "root"
    assert slots(sb) == 2
    # capacity is full: another session of the other tenant waits
    waiter = uid()
    q = acquire(sb, waiter, "s1", OTHER_KEY)
    assert q.status == 202 and q.json["status"] == "queued", q

    kill(sid)
    r = lost(sb, lz)
    assert "ENTRYPOINT_EXITED" in r.json["message"] and "137" in r.json["message"], r
    # by session too, and again (the answer holds; nothing is renewed)
    r2 = heartbeat(sb, user=u, session="s1")
    assert r2.status == 404 and r2.json["code"] == "SANDBOX_LOST", r2
    assert heartbeat(sb, lz).json["code"] == "SANDBOX_LOST"
    # the lease is gone from Redis; the record stays Failed with its reason
    assert not sb.b.redis.exists(sb.b.key("lease:" + lz["leaseId"]))
    rec = SB(sb.b).record(sid)
    assert rec["state"] == "Failed" and rec["reason"] == "ENTRYPOINT_EXITED", rec
    # the slot came back: the other tenant's queued ticket takes it
    g = wait_until(lambda: (lambda p: p if p.json["status"] == "granted" else None)(
        sb.b.request("GET", "/v1/leases/poll?ticketId=" + q.json["ticketId"], auth=OTHER_KEY)),
        LOST_BOUND_S, 0.1, "the queued ticket granted")
    assert g.json["lease"]["sandboxId"] != sid
    container_gone(sid)
    other.check()
    assert slots(sb) == 2
    assert sb.b.redis.scard(sb.b.key("active")) == 2

    # a re-acquire of the session: no slot free now, so it queues ...
    r = acquire(sb, u, "s1")
    assert r.status == 202 and r.json["status"] == "queued", r
    # ... and is granted a new sandbox once one frees
    r = sb.b.request("POST", "/v1/leases/release",
                     {"userId": waiter, "sessionId": "s1", "reason": "deleted"},
                     auth=OTHER_KEY)
    assert r.status == 200, r
    new = acquired(sb, u, "s1")
    assert new["sandboxId"] != sid and new["leaseId"] != lz["leaseId"], new
    assert runs(sb, new) == "root"
    # the new lease answers heartbeats; the lost one still says why it ended
    r = heartbeat(sb, user=u, session="s1")
    assert r.status == 200 and r.json["lease"]["leaseId"] == new["leaseId"], r
    assert heartbeat(sb, lz).json["code"] == "SANDBOX_LOST"
    # the other tenant cannot read the lost lease's story: 404 like any unknown id
    r = heartbeat(sb, lz, key=OTHER_KEY)
    assert r.status == 404 and r.json["code"] == "LEASE_NOT_FOUND", r
    other.check()


def test_reacquire_right_after_the_kill_never_hands_back_the_dead_sandbox(docker_broker):
    sb = start(docker_broker, capacity=3)
    other = Bystander(sb)
    u = uid()
    lz = acquired(sb, u, "s1")
    sid = lz["sandboxId"]
    kill(sid)
    SB(sb.b).wait_record_state(sid, "Failed", timeout=LOST_BOUND_S)
    # the client re-acquires instead of heartbeating: a new sandbox, not the dead one
    new = acquired(sb, u, "s1")
    assert new["sandboxId"] != sid, new
    assert runs(sb, new) == "root"
    container_gone(sid)
    assert slots(sb) == 2
    other.check()


def test_a_lease_the_slot_index_does_not_know_is_caught_by_acquire_and_heartbeat(docker_broker):
    # A lease made by a broker before the slot index (P..slotleases) is not
    # ended by the watch; the first heartbeat or acquire that finds its
    # record Failed ends it.
    sb = start(docker_broker, capacity=3)
    other = Bystander(sb)
    u = uid()
    la = acquired(sb, u, "s1")
    lb = acquired(sb, u, "s2")
    for lz in (la, lb):
        slot = sb.b.redis.hget(sb.b.key("lease:" + lz["leaseId"]), "slot")
        assert sb.b.redis.srem(sb.b.key("slotleases:" + slot), lz["leaseId"]) == 1
    kill(la["sandboxId"])
    kill(lb["sandboxId"])
    SB(sb.b).wait_record_state(la["sandboxId"], "Failed", timeout=LOST_BOUND_S)
    SB(sb.b).wait_record_state(lb["sandboxId"], "Failed", timeout=LOST_BOUND_S)
    assert sb.b.redis.exists(sb.b.key("lease:" + la["leaseId"]))  # not ended by the watch
    assert slots(sb) == 3
    # the acquire finds it lost: a new sandbox
    new = acquired(sb, u, "s1")
    assert new["sandboxId"] != la["sandboxId"]
    assert runs(sb, new) == "root"
    assert heartbeat(sb, la).json["code"] == "SANDBOX_LOST"
    # the heartbeat finds the other one lost, and frees its slot
    r = heartbeat(sb, lb)
    assert r.status == 404 and r.json["code"] == "SANDBOX_LOST", r
    assert slots(sb) == 2
    other.check()


def test_user_shared_every_session_of_the_dead_sandbox_learns_it(docker_broker):
    sb = start(docker_broker, capacity=3)
    other = Bystander(sb)
    u = uid()
    m = "user_shared"
    l1 = acquired(sb, u, "s1", mode=m)
    l2 = acquired(sb, u, "s2", mode=m)
    sid = l1["sandboxId"]
    assert l2["sandboxId"] == sid
    assert slots(sb) == 2
    kill(sid)
    for lz in (l1, l2):
        r = lost(sb, lz)
        assert "ENTRYPOINT_EXITED" in r.json["message"], r
    r = heartbeat(sb, user=u, session="s2")
    assert r.status == 404 and r.json["code"] == "SANDBOX_LOST", r
    assert slots(sb) == 1  # the user's slot is freed
    container_gone(sid)
    other.check()
    # both sessions come back on one new sandbox, each with its directory
    n1 = acquired(sb, u, "s1", mode=m)
    n2 = acquired(sb, u, "s2", mode=m)
    assert n1["sandboxId"] == n2["sandboxId"] != sid, (n1, n2)
    for n in (n1, n2):
        r = run(sb, n, "test -d %s && echo ok" % n["workdir"])
        assert r.status == 200 and r.json["stdout"] == "ok\n", r
    assert slots(sb) == 2
    other.check()


def test_multi_user_shared_every_user_of_the_dead_sandbox_learns_it(docker_broker):
    sb = start(docker_broker, capacity=3, POOL_SEATS=3)
    other = Bystander(sb)
    m = "multi_user_shared"
    a, b = uid(), uid()
    la = acquired(sb, a, "s1", mode=m, poolId="p")
    lb = acquired(sb, b, "s1", mode=m, poolId="p")
    sid = la["sandboxId"]
    assert lb["sandboxId"] == sid and la["linuxUser"] != lb["linuxUser"]
    kill(sid)
    for lz in (la, lb):
        lost(sb, lz)
    r = heartbeat(sb, user=b, session="s1")
    assert r.status == 404 and r.json["code"] == "SANDBOX_LOST", r
    assert slots(sb) == 1
    container_gone(sid)
    other.check()
    na = acquired(sb, a, "s1", mode=m, poolId="p")
    nb = acquired(sb, b, "s1", mode=m, poolId="p")
    assert na["sandboxId"] == nb["sandboxId"] != sid, (na, nb)
    assert runs(sb, na) == na["linuxUser"]
    assert runs(sb, nb) == nb["linuxUser"]
    other.check()
