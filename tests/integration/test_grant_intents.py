"""A ticket granted from the queue is provisioned from a durable intent
(docs/ARCHITECTURE.md 3.2, "Provisioning workers").

grant.lua stores the intent (the lease id on P..intents) in the same step
that makes the lease, as acquire.lua does for a direct acquire, and wakes
the supervisors; their idle workers take it with intents_take.lua. So a
supervisor killed between the grant and its workers loses nothing: the
intent waits in Redis (the reaper leaves its lease alone, the finder of
stale leases leaves it to whoever takes the intent), and the next
supervisor makes it. Two supervisors granting and taking intents side by
side make each sandbox once.
"""

import os
import uuid

from brokerlib import wait_until
from sandboxlib import (PROVISION_TIMEOUT, SB_HTTP_TIMEOUT, TINY_IMAGE, docker_broker,  # noqa: F401
                        require_docker, start_second_supervisor)

require_docker()

LUA = os.path.join(os.path.dirname(__file__), "..", "..", "lib", "store", "lua")


def script(name):
    """The script as the broker runs it: common.lua's text, then the
    operation's (scripts/embed-lua)."""
    with open(os.path.join(LUA, "common.lua")) as f:
        common = f.read()
    with open(os.path.join(LUA, name + ".lua")) as f:
        return common + f.read()




def test_queued_grant_intent_outlives_the_supervisor(docker_broker):
    sb = docker_broker(BROKER_CAPACITY=1, IDLE_POLICY="delete", TICKET_TTL_MS=300000,
                       SANDBOX_IMAGE=TINY_IMAGE)
    b = sb.b
    r = b.acquire("h", "s", timeout=SB_HTTP_TIMEOUT)
    assert r.status == 200, r
    r = b.acquire("q", "s", timeout=SB_HTTP_TIMEOUT)
    assert r.status == 202 and r.json["status"] == "queued", r
    tid = r.json["ticketId"]
    b.stop("supervisor", kill=True)
    sb.release("h", "s", "deleted")

    # the grant of a supervisor killed right after it, before its loop took
    # the intent: what grant.lua leaves is all there is
    lid = uuid.uuid4().hex
    state, granted, expired = b.redis.eval(script("grant"), 0, b.prefix, tid, "1", "60000",
                                           "300000", "4", "docker", "0", lid)
    assert state == "granted" and granted[:2] == [tid, lid], (state, granted, expired)
    assert b.redis.lrange(b.key("intents"), 0, -1) == [lid]
    assert b.redis.hget(b.key("lease:" + lid), "state") == "provisioning"
    r = b.poll(tid, timeout=SB_HTTP_TIMEOUT)
    assert r.status == 200 and r.json["status"] == "provisioning", r

    # long past its expiry and every provisioning bound: the reaper must
    # still leave it (its intent waits), and the finder of stale leases
    # leaves it to whoever takes the intent
    b.redis.zadd(b.key("leases"), {lid: 1})
    b.redis.zadd(b.key("provisioning"), {lid: 1})
    b.redis.hset(b.key("lease:" + lid), "createdAt", "1")
    assert b.redis.eval(script("lease_stale"), 0, b.prefix, "3000", "64") == []

    b.start("supervisor")
    got = sb.poll_lease(tid)
    assert got["leaseId"] == lid and got["sandboxId"], got
    assert len(sb.containers(got["sandboxId"])) == 1
    assert sb.run(got, "echo ok")["stdout"] == "ok\n"
    assert b.redis.llen(b.key("intents")) == 0
    logs = b.logs("supervisor")
    # made from the intent, not found abandoned
    assert "sandbox ready for a lease" in logs and lid in logs
    assert "a lease left provisioning" not in logs
    sb.release("q", "s", "deleted")
    wait_until(lambda: sb.containers() == [], PROVISION_TIMEOUT, 0.2, "containers removed")


def test_two_supervisors_make_each_granted_sandbox_once(docker_broker, request):
    n = 8
    sb = docker_broker(BROKER_CAPACITY=n, IDLE_POLICY="delete", TICKET_TTL_MS=300000,
                       SANDBOX_IMAGE=TINY_IMAGE, PROVISION_WORKERS=2)
    b = sb.b
    sup2 = start_second_supervisor(sb, request)

    for i in range(n):
        r = b.acquire("h%d" % i, "s", timeout=SB_HTTP_TIMEOUT)
        assert r.status == 200, r
    tickets = []
    for i in range(n):
        r = b.acquire("q%d" % i, "s", timeout=SB_HTTP_TIMEOUT)
        assert r.status == 202 and r.json["status"] == "queued", r
        tickets.append(r.json["ticketId"])
    for i in range(n):
        sb.release("h%d" % i, "s", "deleted")
    leases = [sb.poll_lease(t) for t in tickets]
    assert sup2.poll() is None, "the second supervisor exited"
    sids = {l["sandboxId"] for l in leases}
    assert len(sids) == n, leases
    # every lease was taken from its intent by one supervisor: none of
    # them was left for the finder of stale leases
    logs = b.logs("supervisor")
    with open(os.path.join(b.state_dir, "logs", "supervisor2.log"), errors="replace") as f:
        logs += f.read()
    ready = [x for x in logs.splitlines() if "sandbox ready for a lease" in x]
    for l in leases:
        assert any(l["leaseId"] in x for x in ready), (l["leaseId"], ready)
    assert b.redis.llen(b.key("intents")) == 0
    wait_until(lambda: len(sb.containers()) == n, PROVISION_TIMEOUT, 0.2,
               "the holders' containers gone, one per queued lease left")
    # one container per sandbox, each its record's
    for sid in sids:
        cs = sb.containers(sid)
        assert len(cs) == 1, (sid, cs)
        assert sb.record(sid)["state"] == "Running", sb.record(sid)
