"""Nothing leaks (docs/ARCHITECTURE.md §5): the supervisor's reconciler removes managed
containers without a live record (and only this broker's), marks records
whose container vanished Failed, and heals a supervisor killed while it was
making a sandbox; lease expiry and the idle policies remove containers.
"""

import os
import signal
import time
import uuid

import pytest

from brokerlib import check_error, wait_until
from sandboxlib import DOCKER, check_sandbox_lease, docker_broker, require_docker  # noqa: F401

require_docker()

RECONCILE_MS = 1000


def assert_no_leak(sb):
    """Every container of this broker has a live record, and each record has
    at most one container."""
    seen = {}
    for c in sb.containers():
        sid = c["Labels"]["io.sandbox-broker.sandbox-id"]
        seen.setdefault(sid, []).append(c["Id"])
        rec = sb.record(sid)
        assert rec.get("state") in ("Pending", "Running", "Stopped", "Stopping"), \
            "container %s (sandbox %s) has record %r" % (c["Id"][:12], sid, rec)
        if rec.get("state") in ("Running", "Stopped"):
            assert rec.get("ref") == c["Id"], (rec, c["Id"])
    dup = {k: v for k, v in seen.items() if len(v) > 1}
    assert not dup, "sandboxes with several containers: %r" % dup


def test_reconciler_removes_orphans_of_its_own_prefix_only(docker_broker):
    other = docker_broker(BROKER_CAPACITY=1, RECONCILE_MS=RECONCILE_MS)
    kept = check_sandbox_lease(other.acquire("olga", "s1"))
    sb = docker_broker(BROKER_CAPACITY=2, RECONCILE_MS=RECONCILE_MS)
    live = check_sandbox_lease(sb.acquire("paul", "s1"))

    # an orphan made by hand: our labels and prefix, no record at all
    orphan_sid = uuid.uuid4().hex
    cid = DOCKER.create_orphan(sb.prefix, orphan_sid)
    assert DOCKER.state(cid) == "running"
    # an orphan whose record says Terminated
    term_sid = uuid.uuid4().hex
    sb.b.redis.hset(sb.b.key("sandbox:" + term_sid),
                    mapping={"sandboxId": term_sid, "state": "Terminated", "ref": ""})
    cid2 = DOCKER.create_orphan(sb.prefix, term_sid)
    t0 = time.monotonic()
    wait_until(lambda: DOCKER.inspect(cid) is None and DOCKER.inspect(cid2) is None,
               10 * RECONCILE_MS / 1000.0, 0.2, "orphans removed by the reconciler")
    took = time.monotonic() - t0
    assert "removed orphan container" in sb.b.logs("supervisor")
    # the broker's live sandbox, and the other broker's, are left alone (give
    # both reconcilers a few more rounds)
    time.sleep(3 * RECONCILE_MS / 1000.0)
    assert DOCKER.state("sb-" + live["sandboxId"]) == "running"
    assert DOCKER.state("sb-" + kept["sandboxId"]) == "running"
    assert sb.record(live["sandboxId"])["state"] == "Running"
    assert sb.run(live, "true")["exitCode"] == 0
    assert_no_leak(sb)
    assert_no_leak(other)
    print("orphans removed after %.1f s" % took)


def test_container_removed_by_hand_marks_record_failed(docker_broker):
    sb = docker_broker(BROKER_CAPACITY=2, RECONCILE_MS=RECONCILE_MS)
    lz = check_sandbox_lease(sb.acquire("quinn", "s1"))
    sid = lz["sandboxId"]
    ref = sb.record(sid)["ref"]
    assert DOCKER.remove("sb-" + sid) == 204
    rec = sb.wait_record_state(sid, "Failed", 10 * RECONCILE_MS / 1000.0)
    # the supervisor's watch sees the kill ("die", 137) before the
    # reconciler sees the container gone
    assert rec.get("reason") in ("ENTRYPOINT_EXITED", "CONTAINER_MISSING"), rec
    assert ref  # it had a container
    # the lease ended with its sandbox (issue 24): the heartbeat says so, the
    # runtime calls find no sandbox for the lease (not 5xx), the slot is back
    r = sb.b.heartbeat(lease_id=lz["leaseId"])
    check_error(r, 404, "SANDBOX_LOST")
    r = sb.exec(lz, "true")
    check_error(r, 404, "SANDBOX_NOT_FOUND")
    # nothing is recreated behind our back
    assert sb.containers(sid) == []
    wait_until(lambda: sb.b.status()["activeSlots"] == 0, 10, desc="slot freed")
    again = check_sandbox_lease(sb.acquire("quinn", "s1"))
    assert again["sandboxId"] != sid
    assert sb.run(again, "true")["exitCode"] == 0
    assert_no_leak(sb)


def test_a_pause_state_the_watch_missed_follows_the_container(docker_broker):
    # what the event stream missed (it reconnects): a record that says Paused
    # over a running container goes Running. Not while the record's last
    # move is later than the reconciler's listing of the containers (it may
    # be the broker's own pause of a container the listing saw running): a
    # record stamped 4 s ahead stays Paused over three rounds.
    sb = docker_broker(BROKER_CAPACITY=1, RECONCILE_MS=RECONCILE_MS)
    lz = check_sandbox_lease(sb.acquire("rita", "s1"))
    sid = lz["sandboxId"]
    key = sb.b.key("sandbox:" + sid)
    ahead_ms = int(sb.b.redis.time()[0]) * 1000 + 4000
    sb.b.redis.hset(key, mapping={"state": "Paused", "lastTransitionAt": str(ahead_ms)})
    time.sleep(3 * RECONCILE_MS / 1000.0)
    assert sb.record(sid)["state"] == "Paused"
    rec = sb.wait_record_state(sid, "Running", 15)
    assert rec.get("reason") == "CONTAINER_UNPAUSED", rec
    assert "1 record(s) paused or unpaused after their container" in sb.b.logs("supervisor")
    assert sb.run(lz, "true")["exitCode"] == 0


@pytest.mark.parametrize("kill_at", ["pending", "created"])
def test_supervisor_killed_while_creating_leaves_no_orphan(docker_broker, kill_at):
    """kill_at: "pending" = as soon as the new record is Pending (before or
    during the container create); "created" = once the container exists
    (its create answered or the ref is recorded), before it is Running."""
    # A lease left provisioning by the crash is picked up once the dead
    # process's sandbox lock (LOCK_KEEPER_TTL_MS, 6 s, no longer renewed)
    # ran out. The Docker timeouts only bound each call: generous, so that a
    # container start on a loaded machine (ASan, 2 cores) is not taken for
    # a failure.
    sb = docker_broker(BROKER_CAPACITY=1, RECONCILE_MS=RECONCILE_MS,
                       DOCKER_TIMEOUT_MS=15000, SANDBOX_START_TIMEOUT_MS=15000,
                       IDLE_POLICY="delete")
    holder = check_sandbox_lease(sb.acquire("rita", "s1"))
    r = sb.acquire_raw("sam", "s1")
    assert r.status == 202, r
    ticket = r.json["ticketId"]
    assert sb.b.poll(ticket).json["status"] == "queued"
    pid = sb.b.pid("supervisor")
    assert pid, "no supervisor pid"
    sandboxes = sb.b.key("sandboxes")

    def pending_new():
        for sid in sb.b.redis.zrange(sandboxes, 0, -1):
            if sid == holder["sandboxId"]:
                continue
            rec = sb.record(sid)
            if kill_at == "pending" and rec.get("state") == "Pending":
                return sid
            if kill_at == "created" and (rec.get("state") != "Pending" or rec.get("ref")
                                         or DOCKER.inspect("sb-" + sid) is not None):
                return sid
        return None

    sb.release("rita", "s1", "deleted")
    sid = wait_until(pending_new, 30, 0.002, "a Pending record for the queued lease")
    os.kill(pid, signal.SIGKILL)
    at_kill = {"record": sb.record(sid), "containers": [c["Id"][:12] for c in sb.containers(sid)]}
    wait_until(lambda: not os.path.exists("/proc/%d" % pid) or
               open("/proc/%d/stat" % pid).read().split(") ")[1][0] in "ZX",
               10, 0.05, "supervisor dead")
    r = sb.b.poll(ticket)
    assert r.status == 200 and r.json["status"] in ("provisioning", "granted"), r
    # let whatever Docker call was in flight land, then look once more
    time.sleep(1)
    at_restart = {"record": sb.record(sid), "containers": [c["Id"][:12] for c in sb.containers(sid)]}

    sb.b.start("supervisor")
    lease = sb.poll_lease(ticket, timeout=90)
    check_sandbox_lease(lease)
    assert lease["userId"] == "sam" and lease["sandboxId"] == sid, (lease, at_kill)
    assert sb.record(sid)["state"] == "Running"
    cs = sb.containers(sid)
    assert len(cs) == 1, (cs, at_kill, at_restart)
    assert cs[0]["State"] == "running" and cs[0]["Id"] == sb.record(sid)["ref"]
    assert sb.run(lease, "echo alive")["stdout"] == "alive\n"
    # the holder's container went with its release; no container lacks a live
    # record, even after a few more reconciler rounds
    sb.wait_container_state(holder["sandboxId"], None, 30)
    time.sleep(3 * RECONCILE_MS / 1000.0)
    assert [c["Labels"]["io.sandbox-broker.sandbox-id"] for c in sb.containers()] == [sid]
    assert_no_leak(sb)
    print("kill at %s: state at kill: %r; at restart: %r" % (kill_at, at_kill, at_restart))


def test_lease_expiry_and_idle_policies_remove_containers(docker_broker):
    sb = docker_broker(BROKER_CAPACITY=3, LEASE_TTL_MS=3000, IDLE_POLICY="stop_keep",
                       IDLE_KEEP_MS=2000, RECONCILE_MS=RECONCILE_MS)
    expiring = check_sandbox_lease(sb.acquire("tom", "s1"))
    parked = check_sandbox_lease(sb.acquire("uma", "s1"))
    # parked by release(idle), then removed once IDLE_KEEP_MS passed
    sb.release("uma", "s1", "idle")
    # lease expiry (no heartbeat for LEASE_TTL_MS) removes the container
    sb.wait_container_state(expiring["sandboxId"], None, 30)
    rec = sb.wait_record_state(expiring["sandboxId"], "Terminated", 10)
    check_error(sb.b.heartbeat("tom", "s1"), 404, "LEASE_NOT_FOUND")
    sb.wait_container_state(parked["sandboxId"], None, 30)
    sb.wait_record_state(parked["sandboxId"], "Terminated", 10)
    assert sb.containers() == []
    assert rec


def test_idle_policy_delete_removes_on_idle_release(docker_broker):
    sb = docker_broker(BROKER_CAPACITY=2, IDLE_POLICY="delete")
    lz = check_sandbox_lease(sb.acquire("vic", "s1"))
    sb.release("vic", "s1", "idle")
    sb.wait_container_state(lz["sandboxId"], None, 30)
    again = check_sandbox_lease(sb.acquire("vic", "s1"))
    assert again["sandboxId"] != lz["sandboxId"]
