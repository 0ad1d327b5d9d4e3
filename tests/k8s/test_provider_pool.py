"""The warm pool on Kubernetes (lib/sandbox/pool.c, docs/CONFIGURATION.md "Warm pool"): members
are pods made ahead (Running, the agent in them, no lease), a claim takes one in its one Redis
script (never twice, even in a storm of acquires), the pool refills, and a member whose pod
vanishes behind the broker's back leaves the pool at once through the supervisor's watch
(pool_member_lost), not at the pool's periodic check: no claim gets a dead member.

Two users: the storm's and another one's lease, whose sandbox (a claimed member) is checked to
run on through the member's deletion and the refill.
"""

import concurrent.futures
import os
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "integration"))

import sandboxlib  # noqa: E402
from brokerlib import wait_until  # noqa: E402
from k8slib import NS  # noqa: E402
from sandboxlib import SB, check_sandbox_lease  # noqa: E402
from test_cluster import IMAGE  # noqa: E402

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the cluster needs root")


@pytest.fixture
def pool_broker(k8s_broker, monkeypatch):
    monkeypatch.setattr(sandboxlib, "LEASE_PROVIDER", "kubernetes")

    def factory(size, **env):
        cfg = dict(SANDBOX_IMAGE=IMAGE, POOL="%s:%d" % (IMAGE, size), BROKER_CAPACITY=8,
                   IDLE_POLICY="delete")
        cfg.update(env)
        return SB(k8s_broker(**cfg))
    return factory


def ready_ids(sb):
    return sb.b.redis.zrange(sb.b.key("wpool:" + IMAGE), 0, -1)


def wait_full(sb, n, timeout=90):
    return wait_until(lambda: len(ready_ids(sb)) >= n and ready_ids(sb), timeout, 0.1,
                      "pool filled to %d" % n)


def pool_status(sb):
    r = sb.b.get("/v1/status")
    assert r.status == 200, r
    return [p for p in r.json["pools"] if p["image"] == IMAGE][0]


def test_members_are_pods_a_claim_takes_one_never_twice_and_the_pool_refills(pool_broker):
    sb = pool_broker(2)
    members = set(wait_full(sb, 2))
    for sid in members:
        c = sb.container(sid)
        assert c["State"]["Running"], c["State"]
        assert c["Config"]["Labels"]["io.sandbox-broker.agent"] == "1", c["Config"]["Labels"]
        assert not sb.record(sid), "a member has no sandbox record before its claim"

    t0 = time.monotonic()
    lz = check_sandbox_lease(sb.acquire("wu", "s1"))
    res = sb.run(lz, "hostname")
    print("warm: acquire -> first command %.1f ms" % ((time.monotonic() - t0) * 1000))
    assert lz["sandboxId"] in members, (lz, members)
    assert res["stdout"] == "sb-%s\n" % lz["sandboxId"], res
    assert not sb.b.redis.exists(sb.b.key("wpoolm:" + lz["sandboxId"]))
    assert sb.record(lz["sandboxId"])["state"] == "Running"
    wait_until(lambda: len(ready_ids(sb)) == 2 and lz["sandboxId"] not in ready_ids(sb), 90, 0.1,
               "pool refilled")
    assert pool_status(sb)["claimsWarm"] == 1

    # a storm: 5 acquires at once against 2 ready members; each member goes to one lease only
    members = set(ready_ids(sb))
    with concurrent.futures.ThreadPoolExecutor(5) as ex:
        leases = list(ex.map(lambda i: check_sandbox_lease(sb.acquire("st%d" % i, "s")), range(5)))
    sids = [x["sandboxId"] for x in leases]
    assert len(set(sids)) == 5, sids
    assert members <= set(sids), (members, sids)
    for x in leases:
        assert sb.run(x, "hostname")["stdout"] == "sb-%s\n" % x["sandboxId"]
    st = pool_status(sb)
    assert st["claimsWarm"] >= 3 and st["claimsWarm"] + st["claimsCold"] == 6, st

    # releasing (IDLE_POLICY=delete) removes the claimed pods, never a member
    sb.release("wu", "s1")
    for i in range(5):
        sb.release("st%d" % i, "s")
    for s in sids + [lz["sandboxId"]]:
        sb.wait_container_state(s, None, timeout=60)
    for sid in ready_ids(sb):  # whatever the refill made meanwhile
        assert sb.container(sid)["State"]["Running"]


def test_member_pod_deleted_leaves_the_pool_through_the_watch(pool_broker, cluster):
    sb = pool_broker(2)
    other = check_sandbox_lease(sb.acquire("other", "s1"))  # takes a member; must run on
    wait_until(lambda: len(ready_ids(sb)) == 2 and other["sandboxId"] not in ready_ids(sb), 90, 0.1,
               "pool refilled after the first claim")
    victim = ready_ids(sb)[0]
    code, body = cluster["api"].call("DELETE", "/api/v1/namespaces/%s/pods/sb-%s" % (NS, victim),
                                     {"kind": "DeleteOptions", "apiVersion": "v1",
                                      "gracePeriodSeconds": 0})
    assert code == 200, body
    # out of the pool, by the watch (the pool's own check would say "its container is gone")
    wait_until(lambda: not sb.b.redis.exists(sb.b.key("wpoolm:" + victim)), 30, 0.05,
               "the member dropped")
    assert victim not in ready_ids(sb)
    wait_until(lambda: "pool: member removed (the watch saw its container end or go)" in
               sb.b.logs("supervisor"), 10, 0.1, "the watch's drop logged")  # logged after it
    # claims meanwhile get live pods only, and the pool makes a new member
    for i in range(2):
        lz = check_sandbox_lease(sb.acquire("after%d" % i, "s"))
        assert lz["sandboxId"] != victim
        assert sb.run(lz, "true")["exitCode"] == 0
    wait_full(sb, 2)
    assert victim not in ready_ids(sb)
    assert sb.run(other, "hostname")["stdout"] == "sb-%s\n" % other["sandboxId"]
    assert sb.record(other["sandboxId"])["state"] == "Running"
