"""The three sandbox scenarios of issue 3, against a real dockerd:

1. capacity 2, three sessions: two sandboxes run, the third waits; a
   release(deleted) hands the slot to the third with a new sandbox and removes
   the released container; release(idle) with IDLE_POLICY=stop_keep stops and
   keeps the container, and the same session gets it back running.
2. one user, two user_shared sessions: one container, a directory each; a
   file written by one session is in its own directory only.
3. two users in one multi_user_shared pool: one container, a Linux user each;
   one cannot read the other's home (checked by exec and by the file API).

scripts/run-scenarios runs them by name (-k scenario1 / scenario2 / scenario3).
"""

import time

import pytest

from brokerlib import check_error, check_lease, wait_until
from sandboxlib import (DOCKER, check_sandbox_lease, docker_broker,  # noqa: F401
                        require_docker)

require_docker()


def running_sandboxes(sb):
    """{sandboxId: state} of this broker's containers, per the Engine API."""
    return {c["Labels"]["io.sandbox-broker.sandbox-id"]: c["State"]
            for c in sb.containers()}


def test_scenario1_capacity_queue_release(docker_broker):
    sb = docker_broker(BROKER_CAPACITY=2, IDLE_POLICY="stop_keep")

    l1 = check_sandbox_lease(check_lease(sb.acquire("alice", "s1"), "alice", "s1"))
    l2 = check_sandbox_lease(check_lease(sb.acquire("bob", "s1"), "bob", "s1"))
    assert l1["sandboxId"] != l2["sandboxId"]
    for lease in (l1, l2):
        c = sb.container(lease["sandboxId"])
        assert c is not None, "no container sb-%s" % lease["sandboxId"]
        assert c["State"]["Running"] is True, c["State"]
        assert c["Name"] == "/sb-" + lease["sandboxId"]
        labels = c["Config"]["Labels"]
        assert labels["io.sandbox-broker.managed"] == "1"
        assert labels["io.sandbox-broker.sandbox-id"] == lease["sandboxId"]
        assert labels["io.sandbox-broker.prefix"] == sb.prefix
        assert sb.record(lease["sandboxId"])["state"] == "Running"
        assert sb.record(lease["sandboxId"])["ref"] == c["Id"]
    assert running_sandboxes(sb) == {l1["sandboxId"]: "running",
                                     l2["sandboxId"]: "running"}

    # the third session waits: no third container
    r = sb.acquire_raw("carol", "s1")
    assert r.status == 202 and r.json["status"] == "queued", r
    ticket = r.json["ticketId"]
    r = sb.b.poll(ticket)
    assert r.status == 200 and r.json["status"] == "queued", r
    assert len(sb.containers()) == 2, sb.containers()
    st = sb.b.status()
    assert st["activeSlots"] == 2 and st["queueDepth"] == 1, st

    # release(deleted): the third is granted with a new sandbox, the
    # released container is removed
    assert sb.release("alice", "s1", "deleted")["reason"] == "deleted"
    seen = []
    l3 = check_sandbox_lease(check_lease(sb.poll_lease(ticket, seen=seen), "carol", "s1"))
    assert l3["sandboxId"] not in (l1["sandboxId"], l2["sandboxId"]), l3
    sb.wait_container_state(l1["sandboxId"], None, timeout=60)
    assert sb.wait_record_state(l1["sandboxId"], "Terminated", 30)
    assert sb.container(l3["sandboxId"])["State"]["Running"] is True
    assert running_sandboxes(sb) == {l2["sandboxId"]: "running",
                                     l3["sandboxId"]: "running"}
    assert sb.b.status()["activeSlots"] == 2

    # the new sandbox really works
    res = sb.run(l3, "echo hello from $SANDBOX_ID")
    assert res["exitCode"] == 0 and res["stdout"] == "hello from %s\n" % l3["sandboxId"], res

    if not sb.stops:
        # a provider that cannot stop a sandbox and keep it (Kubernetes: docs/KUBERNETES.md)
        # removes it at an idle release under stop_keep; the session gets a new one
        assert sb.release("bob", "s1", "idle")["reason"] == "idle"
        sb.wait_container_state(l2["sandboxId"], None, timeout=60)
        assert sb.wait_record_state(l2["sandboxId"], "Terminated", 30)
        wait_until(lambda: sb.b.status()["activeSlots"] == 1, 10, desc="slot freed")
        again = check_sandbox_lease(sb.acquire("bob", "s1"))
        assert again["sandboxId"] not in (l2["sandboxId"], l3["sandboxId"]), again
        assert sb.run(again, "echo again")["stdout"] == "again\n"
        check_error(sb.exec(l2, "true"), 404, "SANDBOX_NOT_FOUND")
        return

    # release(idle) with stop_keep: stopped, kept; the same session gets it back
    sb.run(l2, "echo kept > /workspace/marker")
    assert sb.release("bob", "s1", "idle")["reason"] == "idle"
    sb.wait_container_state(l2["sandboxId"], ("exited",), timeout=60)
    assert sb.wait_record_state(l2["sandboxId"], "Stopped", 30)
    c = sb.container(l2["sandboxId"])
    assert c is not None and c["State"]["Running"] is False, c and c["State"]
    assert len(sb.containers()) == 2  # l2 (stopped) and l3
    wait_until(lambda: sb.b.status()["activeSlots"] == 1, 10, desc="slot freed")

    again = check_sandbox_lease(sb.acquire("bob", "s1"))
    assert again["sandboxId"] == l2["sandboxId"], (again, l2)
    assert again["leaseId"] != l2["leaseId"]
    assert sb.container(l2["sandboxId"])["State"]["Running"] is True
    assert sb.record(l2["sandboxId"])["state"] == "Running"
    res = sb.run(again, "cat /workspace/marker")
    assert res["stdout"] == "kept\n", res
    # the old lease no longer opens the sandbox
    check_error(sb.exec(l2, "true"), 404, "SANDBOX_NOT_FOUND")


def test_scenario2_user_shared_workdirs(docker_broker):
    sb = docker_broker(BROKER_CAPACITY=2)

    l1 = check_sandbox_lease(sb.acquire("dana", "s1", "user_shared"), "user_shared")
    l2 = check_sandbox_lease(sb.acquire("dana", "s2", "user_shared"), "user_shared")
    assert l1["sandboxId"] == l2["sandboxId"], (l1, l2)
    assert l1["leaseId"] != l2["leaseId"]
    assert (l1["workdir"], l2["workdir"]) == ("/workspace/s1", "/workspace/s2")
    assert [c["Labels"]["io.sandbox-broker.sandbox-id"] for c in sb.containers()] \
        == [l1["sandboxId"]]
    assert sb.b.status()["activeSlots"] == 1

    # each session's commands run in its own directory
    assert sb.run(l1, "pwd")["stdout"] == "/workspace/s1\n"
    assert sb.run(l2, "pwd")["stdout"] == "/workspace/s2\n"

    # a file written by session 1 (relative path) lands in /workspace/s1 only
    r = sb.write(l1, "notes/todo.txt", b"from session one\n")
    assert r.status == 200, r
    assert r.json["path"] == "/workspace/s1/notes/todo.txt", r
    assert r.json["size"] == 17, r
    res = sb.run(l2, "test -e notes/todo.txt; echo here=$?; "
                     "cat /workspace/s1/notes/todo.txt; ls -A /workspace/s2 | wc -l")
    assert res["stdout"] == "here=1\nfrom session one\n0\n", res
    res = sb.run(l1, "cat notes/todo.txt")
    assert res["stdout"] == "from session one\n", res

    # the file API of session 2 neither finds it in its own dir nor reaches
    # into session 1's
    check_error(sb.read(l2, "notes/todo.txt"), 404, "FILE_NOT_FOUND")
    check_error(sb.read(l2, "/workspace/s1/notes/todo.txt"), 400, "INVALID_REQUEST")
    check_error(sb.write(l2, "/workspace/s1/evil.txt", b"x"), 400, "INVALID_REQUEST")
    r = sb.read(l1, "notes/todo.txt")
    assert r.status == 200 and r.json["size"] == 17, r

    # deleting a shared sandbox from one of its sessions is refused
    r = sb.delete(l1)
    check_error(r, 409, "CONFLICT")
    assert sb.container(l1["sandboxId"])["State"]["Running"] is True

    # releasing one session (even with reason deleted) keeps the sandbox of
    # the other running
    sb.release("dana", "s1", "deleted")
    time.sleep(1)  # give a (wrong) teardown time to happen
    assert sb.container(l1["sandboxId"])["State"]["Running"] is True
    assert sb.run(l2, "cat /workspace/s1/notes/todo.txt")["stdout"] == "from session one\n"
    check_error(sb.exec(l1, "true"), 404, "SANDBOX_NOT_FOUND")
    # the last session's idle release parks it (stop_keep; removes it where the provider
    # cannot stop and keep)
    sb.release("dana", "s2", "idle")
    sb.wait_container_state(l2["sandboxId"], ("exited",) if sb.stops else None, timeout=60)


def test_scenario3_multi_user_pool_isolation(docker_broker):
    sb = docker_broker(BROKER_CAPACITY=2, POOL_SEATS=4)

    la = check_sandbox_lease(check_lease(sb.acquire("erin", "s1", "multi_user_shared", "p1"),
                                         "erin", "s1", "multi_user_shared", "p1"),
                             "multi_user_shared")
    lb = check_sandbox_lease(check_lease(sb.acquire("frank", "s1", "multi_user_shared", "p1"),
                                         "frank", "s1", "multi_user_shared", "p1"),
                             "multi_user_shared")
    assert la["sandboxId"] == lb["sandboxId"], (la, lb)
    assert (la["seat"], lb["seat"]) == (1, 2)
    assert (la["linuxUser"], lb["linuxUser"]) == ("sbu1", "sbu2")
    assert (la["workdir"], lb["workdir"]) == ("/home/sbu1", "/home/sbu2")
    assert len(sb.containers()) == 1
    c = sb.container(la["sandboxId"])
    assert c["Config"]["Image"] == "sandbox-broker/multiuser:latest", c["Config"]["Image"]

    ra, rb = sb.run(la, "id -un; pwd"), sb.run(lb, "id -un; pwd")
    assert ra["stdout"] == "sbu1\n/home/sbu1\n", ra
    assert rb["stdout"] == "sbu2\n/home/sbu2\n", rb

    r = sb.write(la, "secret.txt", b"erin's secret\n")
    assert r.status == 200 and r.json["path"] == "/home/sbu1/secret.txt", r
    res = sb.run(la, "stat -c '%U %a' secret.txt /home/sbu1")
    assert res["stdout"].split("\n")[0].split()[0] == "sbu1", res
    assert res["stdout"].split("\n")[1] == "sbu1 700", res

    # B cannot read A's file, by exec...
    res = sb.run(lb, "cat /home/sbu1/secret.txt")
    assert res["exitCode"] != 0, res
    assert "Permission denied" in res["stderr"], res
    assert "secret" not in res["stdout"], res
    res = sb.run(lb, "ls /home/sbu1")
    assert res["exitCode"] != 0 and "Permission denied" in res["stderr"], res
    # ... nor by the file API (outside its workdir: refused before it runs)
    check_error(sb.read(lb, "/home/sbu1/secret.txt"), 400, "INVALID_REQUEST")
    check_error(sb.write(lb, "/home/sbu1/planted.txt", b"x"), 400, "INVALID_REQUEST")
    # and cannot escalate to root
    res = sb.run(lb, "sudo -n cat /home/sbu1/secret.txt")
    assert res["exitCode"] != 0 and "secret" not in res["stdout"], res
    # A still reads its own
    r = sb.read(la, "secret.txt")
    assert r.status == 200 and r.json["size"] == 14, r
    assert sb.run(la, "cat /home/sbu1/secret.txt")["stdout"] == "erin's secret\n"

    # A cannot delete the pool sandbox while B uses it
    check_error(sb.delete(la), 409, "CONFLICT")
    # B leaving (reason deleted) keeps the pool sandbox for A
    sb.release("frank", "s1", "deleted")
    time.sleep(1)  # give a (wrong) teardown time to happen
    assert sb.container(la["sandboxId"])["State"]["Running"] is True
    assert sb.run(la, "id -un")["stdout"] == "sbu1\n"
    check_error(sb.exec(lb, "true"), 404, "SANDBOX_NOT_FOUND")
    # alone now: A may delete it
    r = sb.delete(la)
    assert r.status == 204, r
    sb.wait_container_state(la["sandboxId"], None, timeout=60)
