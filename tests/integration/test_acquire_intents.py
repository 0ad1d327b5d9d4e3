"""A direct acquire is provisioned by the supervisors, not by its handler
(docs/ARCHITECTURE.md, "Provisioning intents").

The acquire stores the lease 'provisioning', a granted ticket and an intent
in Redis and wakes the supervisors; a provisioning worker makes the sandbox
while the handler waits (ACQUIRE_WAIT_MS), then answers 200, or 202
`provisioning` with the ticket to poll. With no supervisor running nothing
is made: the acquire answers 202 at once, and the sandbox is made when a
supervisor starts.
"""

import time

from brokerlib import wait_until
from sandboxlib import (PROVISION_TIMEOUT, SB_HTTP_TIMEOUT, TINY_IMAGE, docker_broker,  # noqa: F401
                        require_docker)

require_docker()


def test_no_supervisor_no_container_then_started_it_completes(docker_broker):
    sb = docker_broker(BROKER_CAPACITY=2, IDLE_POLICY="delete", SANDBOX_IMAGE=TINY_IMAGE)
    b = sb.b
    b.stop("supervisor")
    r = b.acquire("u1", "s1", timeout=SB_HTTP_TIMEOUT)
    # answered at once (no supervisor listens), not after ACQUIRE_WAIT_MS
    assert r.status == 202, r
    assert r.json["status"] == "provisioning", r
    assert "supervisor" in r.json["message"], r
    tid = r.json["ticketId"]
    lease = r.json["lease"]
    assert lease["userId"] == "u1" and lease["sessionId"] == "s1", r
    assert b.redis.hget(b.key("lease:" + lease["leaseId"]), "state") == "provisioning"
    assert b.active() == 1  # the slot is held
    r = b.poll(tid, timeout=SB_HTTP_TIMEOUT)
    assert r.status == 200 and r.json["status"] == "provisioning", r
    time.sleep(1.0)
    assert sb.containers() == [], "the handler made a container"

    # a repeated acquire is the same lease, still waiting
    r = b.acquire("u1", "s1", timeout=SB_HTTP_TIMEOUT)
    assert r.status == 202 and r.json["ticketId"] == tid, r
    assert r.json["lease"]["leaseId"] == lease["leaseId"], r

    b.start("supervisor")
    got = sb.poll_lease(tid)
    assert got["leaseId"] == lease["leaseId"] and got["sandboxId"], got
    assert len(sb.containers(got["sandboxId"])) == 1
    assert sb.run(got, "echo ok")["stdout"] == "ok\n"
    # made by the supervisor's worker
    assert lease["leaseId"] in b.logs("supervisor")
    r = b.acquire("u1", "s1", timeout=SB_HTTP_TIMEOUT)
    assert r.status == 200 and r.json["lease"]["sandboxId"] == got["sandboxId"], r
    assert b.redis.llen(b.key("intents")) == 0


def test_acquire_waits_for_the_worker_and_answers_200(docker_broker):
    sb = docker_broker(BROKER_CAPACITY=2, IDLE_POLICY="delete", SANDBOX_IMAGE=TINY_IMAGE)
    b = sb.b
    r = b.acquire("u2", "s1", timeout=SB_HTTP_TIMEOUT)
    assert r.status == 200 and r.json["status"] == "granted", r
    lease = r.json["lease"]
    assert lease["sandboxId"], r
    assert sb.run(lease, "echo ok")["stdout"] == "ok\n"
    wait_until(lambda: lease["leaseId"] in b.logs("supervisor"), 10, 0.2,
               "the supervisor logs the lease it made")
    assert "sandbox ready for a lease" in b.logs("supervisor")
    sb.release("u2", "s1", "deleted")
    wait_until(lambda: sb.containers() == [], PROVISION_TIMEOUT, 0.2, "container removed")


def test_wait_bound_answers_202_with_a_ticket_to_poll(docker_broker):
    # ACQUIRE_WAIT_MS=0: the handler does not wait; the contract of a slow
    # provisioning (202, ticket, poll until granted) shows on every acquire
    sb = docker_broker(BROKER_CAPACITY=2, IDLE_POLICY="delete", SANDBOX_IMAGE=TINY_IMAGE,
                       ACQUIRE_WAIT_MS=0)
    b = sb.b
    r = b.acquire("u3", "s1", timeout=SB_HTTP_TIMEOUT)
    assert r.status == 202 and r.json["status"] == "provisioning", r
    assert "message" not in r.json, r
    seen = []
    got = sb.poll_lease(r.json["ticketId"], seen=seen)
    assert seen[-1] == "granted" and set(seen) <= {"provisioning", "granted"}, seen
    assert got["leaseId"] == r.json["lease"]["leaseId"] and got["sandboxId"], got
    assert sb.run(got, "echo ok")["stdout"] == "ok\n"


def test_intent_taken_by_a_supervisor_that_died_is_recovered(docker_broker):
    # A supervisor that popped the intent and died before making the
    # sandbox: the lease is still 'provisioning' in P..provisioning, and the
    # recovery of the next supervisor makes it.
    sb = docker_broker(BROKER_CAPACITY=2, IDLE_POLICY="delete", SANDBOX_IMAGE=TINY_IMAGE)
    b = sb.b
    b.stop("supervisor", kill=True)
    r = b.acquire("u4", "s1", timeout=SB_HTTP_TIMEOUT)
    assert r.status == 202 and r.json["status"] == "provisioning", r
    lid = r.json["lease"]["leaseId"]
    assert b.redis.lpop(b.key("intents")) == lid
    b.start("supervisor")
    got = sb.poll_lease(r.json["ticketId"])
    assert got["leaseId"] == lid and got["sandboxId"], got
    assert "a lease left provisioning" in b.logs("supervisor")
    assert sb.run(got, "echo ok")["stdout"] == "ok\n"


def test_opensandbox_create_is_made_by_the_supervisor(docker_broker):
    from sdklib import API_KEYS_ENV, OSB
    sb = docker_broker(BROKER_CAPACITY=2, IDLE_POLICY="delete", SANDBOX_IMAGE=TINY_IMAGE,
                       OPENSANDBOX_API_KEYS=API_KEYS_ENV)
    b = sb.b
    osb = OSB(b, "alpha")
    b.stop("supervisor")
    sid = osb.create(wait=False)
    r = osb.get(sid)
    assert r.status == 200 and r.json["status"]["state"] == "Pending", r
    time.sleep(1.0)
    assert sb.containers() == [], "the handler made a container"
    b.start("supervisor")
    osb.wait_state(sid, "Running")
    assert len(sb.containers(sid)) == 1
