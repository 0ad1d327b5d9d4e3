"""Host bounds (issue 24, H3 and H4; docs/OPERATIONS.md, "Host bounds").

Nothing a sandbox writes may land on a filesystem of the host that other
sandboxes share without a bound. Root in a sandbox is the attacker here: it
fills what it can reach, and another tenant's sandbox must keep working.

- The agent's run directory (/.sandbox-broker/run, read-write in the sandbox
  so that its agent can bind its socket) is a tmpfs of its own that
  sandbox-mountd, the host's mount helper, mounts on AGENT_DIR/<container id>:
  a sandbox that fills it fills only that tmpfs (64 KiB, 32 inodes), never
  AGENT_DIR's filesystem (the shipped units put it on the host's /run, where
  20,000 empty files took every inode before: H3).
- Without the helper no sandbox is made with an unbounded run directory: the
  create fails, naming the helper; MOUNTD_SOCKET= (set empty) turns the bound
  off, and the supervisor says so at start.
"""

import os
import time

from brokerlib import wait_until
from sandboxlib import DOCKER, docker_broker, require_docker  # noqa: F401

require_docker()

KB = "kb_hostbounds_%d" % os.getpid()
SEEDS = "%s:tb" % KB


def run_dir(sb, sid):
    return os.path.join(sb.b.state_dir, "agents", sb.container(sid)["Id"])


def mounts_under(path):
    """{mount point: fstype} of the mounts at or below path."""
    path = os.path.realpath(path)
    out = {}
    with open("/proc/self/mountinfo") as f:
        for line in f:
            parts = line.split()
            mp = parts[4]
            fstype = parts[parts.index("-") + 1]
            if mp == path or mp.startswith(path + "/"):
                out[mp] = fstype
    return out


def as_tenant(sb, key):
    """exec/acquire for tenant `key` on broker sb (the lease API)."""
    hdrs = {"Authorization": "Bearer %s" % key}

    def acquire(user, session):
        r = sb.b.post("/v1/leases/acquire", {"userId": user, "sessionId": session},
                      headers=hdrs, timeout=60)
        if r.status == 202:
            tid = r.json["ticketId"]
            r = wait_until(lambda: (lambda p: p if p.json["status"] == "granted" else None)(
                sb.b.get("/v1/leases/poll?ticketId=%s" % tid, headers=hdrs, timeout=60)),
                90, 0.2, "lease of %s granted" % user)
        assert r.status == 200, r
        return r.json["lease"]

    def run(lease, cmd):
        r = sb.b.request("POST", "/v1/sandboxes/%s/exec" % lease["sandboxId"], {"cmd": cmd},
                         dict(hdrs, **{"X-Lease-ID": lease["leaseId"]}), 60)
        assert r.status == 200, r
        return r.json
    return acquire, run


def test_run_dir_fill_stays_in_its_sandbox(docker_broker):
    """Root in tenant A's sandbox creates files in its run directory until the
    filesystem refuses; that is its own tmpfs, after a few dozen files.
    Tenant B's sandbox is made after it (a new run directory) and runs
    commands and writes files; A's own agent still answers."""
    sb = docker_broker(OPENSANDBOX_API_KEYS=SEEDS, BROKER_CAPACITY=4)
    la = sb.acquire("ua", "sa")
    rd = run_dir(sb, la["sandboxId"])
    agents = os.path.dirname(rd)
    assert mounts_under(rd) == {os.path.realpath(rd): "tmpfs"}, mounts_under(agents)
    assert os.stat(rd).st_dev != os.stat(agents).st_dev
    host_before = os.statvfs(agents)

    # the attack of the report: 20,000 empty files, then bytes
    # (`true`, not `:`: a failed redirection of a special builtin ends sh)
    r = sb.run(la, "cd /.sandbox-broker/run && i=0; while [ $i -lt 20000 ] && true > f$i 2>/dev/null;"
                   " do i=$((i+1)); done; echo made=$i; true > one-more; echo rc=$?;"
                   " rm -f f1 f2; head -c 1048576 /dev/zero > big; echo bytes=$?;"
                   " ls -l big | awk '{print \"size=\" $5}'", timeoutMs=120000)
    out = r["stdout"]
    assert "made=" in out and "size=" in out, r
    made = int(out.split("made=")[1].split()[0])
    assert 20 <= made <= 32, out  # 32 inodes: the root, agent.sock and the files
    assert "rc=0" not in out and "bytes=0" not in out, out
    size = int(out.split("size=")[1].split()[0])
    assert size <= 64 * 1024, out
    # the host's filesystem under AGENT_DIR got none of it (its free inodes may move by
    # what other processes of this machine do; not by 20,000)
    host_after = os.statvfs(agents)
    assert host_before.f_ffree - host_after.f_ffree < 1000, (host_before, host_after)
    assert os.statvfs(rd).f_ffree == 0 or os.statvfs(rd).f_bfree == 0

    # A's agent still answers (its socket was there before the fill)
    assert sb.run(la, "echo alive")["stdout"] == "alive\n"

    # tenant B: a new sandbox (its own run directory), commands and files
    acquire_b, run_b = as_tenant(sb, KB)
    lb = acquire_b("ub", "sb")
    assert lb["sandboxId"] != la["sandboxId"]
    r = run_b(lb, "cd /.sandbox-broker/run && for i in 1 2 3; do true > b$i || exit 9; done; echo ok")
    assert r["exitCode"] == 0 and r["stdout"] == "ok\n", r
    for i in range(5):
        assert run_b(lb, "echo b%d" % i)["stdout"] == "b%d\n" % i
    # and A's tenant can still make sandboxes too
    la2 = sb.acquire("ua2", "sa2")
    assert sb.run(la2, "echo a2")["stdout"] == "a2\n"


def test_run_dir_tmpfs_goes_with_the_sandbox(docker_broker):
    """A released sandbox's run directory is unmounted and removed, the
    mount does not outlive the container."""
    sb = docker_broker(IDLE_POLICY="delete")
    lease = sb.acquire("u", "s")
    rd = run_dir(sb, lease["sandboxId"])
    assert os.path.realpath(rd) in mounts_under(rd)
    sb.run(lease, "for i in 1 2 3; do true > /.sandbox-broker/run/x$i; done")
    sb.release("u", "s")
    sb.wait_container_state(lease["sandboxId"], None, timeout=60)
    wait_until(lambda: not os.path.exists(rd), 30, 0.2, "run directory removed")
    assert mounts_under(os.path.dirname(rd)) == {}


def test_no_helper_no_sandbox(docker_broker):
    """The helper stops: a new sandbox fails with a reason that names it, and
    no container is left with an unbounded run directory; the helper back,
    sandboxes are made again."""
    sb = docker_broker(BROKER_CAPACITY=4)
    lease = sb.acquire("u0", "s0")  # the supervisor is ready: the helper answered
    sb.b.stop("mountd")
    r = sb.acquire_raw("u1", "s1")
    if r.status == 202:
        tid = r.json["ticketId"]
        r = wait_until(lambda: (lambda p: p if p.json["status"] != "provisioning" else None)(
            sb.b.poll(tid, timeout=60)), 90, 0.2, "the lease's sandbox fails")
        assert r.json["status"] == "failed", r
        reason = r.json.get("error") or r.json.get("message") or str(r.json)
    else:
        assert r.status == 502, r
        reason = r.json["message"]
    assert "sandbox-mountd" in reason, r
    agents = os.path.join(sb.b.state_dir, "agents")
    # the only run directories are the first sandbox's (bounded) one
    dirs = [d for d in os.listdir(agents) if os.path.isdir(os.path.join(agents, d))
            and not d.startswith("sb-")]
    assert dirs == [sb.container(lease["sandboxId"])["Id"]], dirs
    assert list(mounts_under(agents)) == [os.path.realpath(os.path.join(agents, dirs[0]))]
    # the first sandbox keeps working (its tmpfs is there; the helper is not needed)
    assert sb.run(lease, "echo still")["stdout"] == "still\n"
    sb.b.start("mountd")
    l2 = sb.acquire("u2", "s2")
    assert sb.run(l2, "echo back")["stdout"] == "back\n"


def test_bounds_off_is_said_at_start(docker_broker):
    """MOUNTD_SOCKET= (set empty): no helper, plain run directories, and the
    supervisor's log says at start that they are unbounded."""
    sb = docker_broker(MOUNTD_SOCKET="")
    lease = sb.acquire("u", "s")
    assert sb.run(lease, "echo ok")["stdout"] == "ok\n"
    rd = run_dir(sb, lease["sandboxId"])
    assert mounts_under(rd) == {}
    log = sb.b.logs("supervisor")
    assert "MOUNTD_SOCKET is empty" in log and "unbounded" in log, log[-2000:]
    assert not os.path.exists(os.path.join(sb.b.state_dir, "run", "mountd.sock"))
    assert DOCKER.ping()
