"""Seats of one multi_user_shared pool sandbox do not see each other's
processes: the sandbox runs under the OCI runtime sandbox-runc
(runtime/sandbox-runc.c, registered in dockerd by scripts/docker-up), which
mounts its /proc hidepid=invisible, so a seat user (sbu<N>) sees only its own
processes, and a secret passed on a command line stays with its seat. Checked
on a fresh sandbox and again after a stop/start (Docker mounts a new /proc on
every start). With SANDBOX_RUNTIME= (dockerd's default runtime) the same
checks fail: seats see each other. A runtime dockerd does not know fails the
sandbox with dockerd's reason.
"""

import uuid

import pytest

from brokerlib import wait_until
from sandboxlib import (DOCKER, SB_HTTP_TIMEOUT, check_sandbox_lease, docker_broker,  # noqa: F401
                        require_docker)

require_docker()

M = "multi_user_shared"


def spawn_secret(sb, lease, token):
    """Start, in the background and in its own session (so the exec's
    `timeout` does not take it along), a process of lease's seat whose
    command line carries token. Returns its pid, as the seat itself sees it."""
    r = sb.run(lease, "setsid sh -c 'sleep 300; true' %s </dev/null >/dev/null 2>&1 &" % token)
    assert r["exitCode"] == 0, r

    def find():
        out = sb.run(lease, "ps -eo pid=,user=,args=")["stdout"]
        for line in out.splitlines():
            pid, user, args = line.split(None, 2)
            if token in args and args.startswith("sh -c"):
                assert user == lease["linuxUser"], line
                return int(pid)
        return None
    return wait_until(find, 10, 0.2, "seat %s sees its own process" % lease["linuxUser"])


def check_hidden(sb, la, lb, token, pid):
    """lb's seat sees nothing of la's process; la's seat still does."""
    ps_b = sb.run(lb, "ps -eo user,pid,args")
    assert ps_b["exitCode"] == 0, ps_b
    assert "ps -eo user,pid,args" in ps_b["stdout"], "B must see its own ps: %r" % ps_b
    assert token not in ps_b["stdout"], "seat B sees seat A's command line: %r" % ps_b["stdout"]
    assert la["linuxUser"] not in ps_b["stdout"], "seat B sees seat A's processes: %r" % ps_b["stdout"]
    # not through /proc directly either: no listing, no cmdline, no environ
    r = sb.run(lb, "ls /proc; cat /proc/*/cmdline | tr '\\0' ' '; echo; "
                   "cat /proc/%d/cmdline" % pid)
    assert token not in r["stdout"], "seat B reads A's cmdline: %r" % r
    assert "\n%d\n" % pid not in "\n" + r["stdout"], "seat B lists A's pid %d: %r" % (pid, r)
    assert r["exitCode"] != 0, "cat /proc/%d/cmdline must fail for seat B: %r" % (pid, r)
    r = sb.run(lb, "test -e /proc/%d" % pid)
    assert r["exitCode"] != 0, "seat B sees /proc/%d: %r" % (pid, r)
    # A still sees (and owns) its process
    r = sb.run(la, "cat /proc/%d/cmdline | tr '\\0' ' '" % pid)
    assert r["exitCode"] == 0 and token in r["stdout"], r
    # and the mechanism is the one documented (docs/IMAGES.md)
    r = sb.run(la, "grep ' /proc ' /proc/self/mountinfo")
    assert "hidepid=invisible" in r["stdout"] or "hidepid=2" in r["stdout"], r


def runtime_of(lease):
    """HostConfig.Runtime of the lease's container (Engine API inspect)."""
    c = DOCKER.inspect("sb-" + lease["sandboxId"])
    assert c is not None, "no container for %r" % lease
    return c["HostConfig"].get("Runtime")


def pool_pair(sb):
    """Two seats (leases) of one fresh pool sandbox."""
    pool = "p" + uuid.uuid4().hex[:8]
    ua, ub = "a" + uuid.uuid4().hex[:8], "b" + uuid.uuid4().hex[:8]
    la = check_sandbox_lease(sb.acquire(ua, "s1", mode=M, pool=pool), M)
    lb = check_sandbox_lease(sb.acquire(ub, "s1", mode=M, pool=pool), M)
    assert la["sandboxId"] == lb["sandboxId"], "one pool sandbox: %r %r" % (la, lb)
    assert la["linuxUser"] != lb["linuxUser"], (la, lb)
    return la, lb


def test_seats_do_not_see_each_others_processes(docker_broker):  # noqa: F811
    sb = docker_broker(BROKER_CAPACITY=2, POOL_SEATS=2)
    la, lb = pool_pair(sb)
    # the default SANDBOX_RUNTIME is what hides them
    assert runtime_of(la) == "sandbox-runc", runtime_of(la)

    token = "secret-arg-A-" + uuid.uuid4().hex
    pid = spawn_secret(sb, la, token)
    check_hidden(sb, la, lb, token, pid)

    # B's own background process is hidden from A the same way
    token_b = "secret-arg-B-" + uuid.uuid4().hex
    pid_b = spawn_secret(sb, lb, token_b)
    check_hidden(sb, lb, la, token_b, pid_b)

    # a stopped pool sandbox started again gets a fresh /proc: hidden again
    r = sb.stop(la)
    assert r.status == 200 and r.json["state"] == "Stopped", r
    r = sb.start(la)
    assert r.status == 200 and r.json["state"] == "Running", r
    token = "secret-arg-A2-" + uuid.uuid4().hex
    pid = spawn_secret(sb, la, token)
    check_hidden(sb, la, lb, token, pid)
    assert runtime_of(la) == "sandbox-runc", runtime_of(la)


def test_default_runtime_does_not_hide(docker_broker):  # noqa: F811
    """SANDBOX_RUNTIME= (dockerd's default runtime): seats see each other,
    as documented; and the checks above do catch it."""
    sb = docker_broker(BROKER_CAPACITY=1, POOL_SEATS=2, SANDBOX_RUNTIME="")
    la, lb = pool_pair(sb)
    assert runtime_of(la) != "sandbox-runc", runtime_of(la)
    token = "visible-arg-A-" + uuid.uuid4().hex
    pid = spawn_secret(sb, la, token)
    assert token in sb.run(lb, "ps -eo args")["stdout"]
    with pytest.raises(AssertionError):
        check_hidden(sb, la, lb, token, pid)


def test_unknown_runtime_fails_the_sandbox(docker_broker):  # noqa: F811
    name = "no-such-runtime-" + uuid.uuid4().hex[:8]
    sb = docker_broker(BROKER_CAPACITY=1, SANDBOX_RUNTIME=name)
    r = sb.b.acquire("u" + uuid.uuid4().hex[:8], "s1", M, "p" + uuid.uuid4().hex[:8],
                     timeout=SB_HTTP_TIMEOUT)
    assert r.status == 502 and r.json["code"] == "SANDBOX_FAILED", r
    assert "runtime" in r.json["message"] and name in r.json["message"], r
