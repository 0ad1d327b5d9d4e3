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
import random
import subprocess
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
            and not d.startswith("sb-") and not d.startswith("etc-")]
    assert dirs == [sb.container(lease["sandboxId"])["Id"]], dirs
    assert [d for d in os.listdir(agents) if d.startswith("etc-")] == ["etc-" + lease["sandboxId"]]
    assert list(mounts_under(agents)) == [os.path.realpath(os.path.join(agents, dirs[0]))]
    # the first sandbox keeps working (its tmpfs is there; the helper is not needed)
    assert sb.run(lease, "echo still")["stdout"] == "still\n"
    sb.b.start("mountd")
    l2 = sb.acquire("u2", "s2")
    assert sb.run(l2, "echo back")["stdout"] == "back\n"


def test_bounds_off_is_said_at_start(docker_broker):
    """MOUNTD_SOCKET= (set empty) and SANDBOX_DISK_MB=0: no helper, plain run
    directories, no disks, and the supervisor's log says at start that they
    are unbounded."""
    sb = docker_broker(MOUNTD_SOCKET="", SANDBOX_DISK_MB="0")
    lease = sb.acquire("u", "s")
    assert sb.run(lease, "echo ok")["stdout"] == "ok\n"
    rd = run_dir(sb, lease["sandboxId"])
    assert mounts_under(rd) == {}
    log = sb.b.logs("supervisor")
    assert "MOUNTD_SOCKET is empty" in log and "SANDBOX_DISK_MB=0" in log, log[-2000:]
    assert "unbounded" in log
    assert "io.sandbox-broker.disk-mb" not in sb.container(lease["sandboxId"])["Config"]["Labels"]
    assert not os.path.exists(os.path.join(sb.b.state_dir, "run", "mountd.sock"))
    assert DOCKER.ping()


# ------------------------------------------------------------------ disks (H4)
#
# Every sandbox has a disk of its own: an ext4 image (DISK_DIR/<sandbox id>.img;
# sparse in the stack) loop-mounted by sandbox-mountd on its container's writable
# overlay2 layer, so everything it writes to its root filesystem stops at ENOSPC at
# SANDBOX_DISK_MB (or its create's resourceLimits["ephemeral-storage"], within the
# tenant's maxDiskMb). /etc/hosts, /etc/hostname and /etc/resolv.conf, which Docker
# keeps as writable files of its own disk, are read-only; its logs are rotated.

MIB = 1024 * 1024


def disk_dir(sb):
    return os.path.join(sb.b.state_dir, "disks")


def layer_dir(sb, sid):
    return os.path.dirname(sb.container(sid)["GraphDriver"]["Data"]["UpperDir"])


def free_bytes(path):
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def fill(sb, lease, path, mib, run=None):
    """dd of mib MiB of zeros into path in the sandbox, until it stops; the
    bytes written and dd's complaint."""
    run = run or sb.run
    r = run(lease, "dd if=/dev/zero of=%s bs=1M count=%d 2>&1 | tail -4; sync;"
                   " echo size=$(wc -c < %s)" % (path, mib, path))
    out = r["stdout"]
    return int(out.split("size=")[1].split()[0]), out


def test_dd_stops_at_the_disk_and_the_host_barely_moves(docker_broker):
    """The report: dd of 3 GiB in a sandbox took 3.1 GB of the host's Docker disk.
    With a 256 MiB disk, dd of 2 GiB in /workspace stops with ENOSPC at about 256 MiB,
    so does one in /tmp (the same disk), and the host's free space drops by at most the
    disk (sparse here), never by the 2 GiB asked for."""
    sb = docker_broker(SANDBOX_DISK_MB="256", IDLE_POLICY="delete")
    lease = sb.acquire("u", "s")
    sid = lease["sandboxId"]
    c = sb.container(sid)
    assert c["Config"]["Labels"]["io.sandbox-broker.disk-mb"] == "256"
    img = os.path.join(disk_dir(sb), sid + ".img")
    assert os.path.isfile(img) and os.path.getsize(img) == 256 * MIB
    # the sandbox sees its disk as its root filesystem's size
    df = sb.run(lease, "df -k / | tail -1")["stdout"].split()
    assert 180 * 1024 < int(df[1]) <= 256 * 1024, df
    docker_root = os.path.dirname(os.path.dirname(layer_dir(sb, sid)))
    before = (free_bytes(docker_root), free_bytes(disk_dir(sb)))

    size, out = fill(sb, lease, "/workspace/big", 2048)
    assert "No space left on device" in out, out
    assert 150 * MIB < size <= 256 * MIB, out
    size2, out = fill(sb, lease, "/tmp/more", 2048)
    assert "No space left on device" in out and size2 < 16 * MIB, out
    # a file write through the API on the full disk (what writeback freed taken too):
    # the agent's reason
    sb.run(lease, "for i in 1 2 3; do cat /dev/zero > /workspace/pad$i 2>/dev/null; sync; done")
    w = sb.write(lease, "/workspace/note.txt", b"x" * 65536)
    assert w.status == 502 and "space" in w.json["message"].lower(), w
    sb.run(lease, "rm -f /workspace/pad* /workspace/note.txt /tmp/more")
    sb.run(lease, "rm -f /workspace/big")
    size3, out = fill(sb, lease, "/tmp/big", 2048)
    assert "No space left on device" in out and 150 * MIB < size3 <= 256 * MIB, out
    after = (free_bytes(docker_root), free_bytes(disk_dir(sb)))
    # the image lives on the same filesystem as Docker here: what it took is at most the
    # disk, with room for what other processes of this machine write meanwhile
    assert before[0] - after[0] < 700 * MIB, (before, after)
    assert os.path.getsize(img) == 256 * MIB  # a disk never grows

    # Docker's own writable files of the sandbox: read-only now
    r = sb.run(lease, "for f in hosts hostname resolv.conf; do"
                      " dd if=/dev/zero of=/etc/$f bs=1M count=10 2>&1 | tail -1; done;"
                      " cat /etc/hostname; grep -c localhost /etc/hosts")
    assert r["stdout"].count("Read-only file system") == 3, r
    assert c["Id"][:12] in r["stdout"], r
    # its logs: what the sandbox writes to PID 1's stdout is rotated at 1 MiB, 2 files
    sb.run(lease, "head -c 10485760 /dev/zero | tr '\\0' x > /proc/1/fd/1", timeoutMs=120000)
    log = c["LogPath"]
    logs = [p for p in os.listdir(os.path.dirname(log)) if p.startswith(os.path.basename(log))]
    total = sum(os.path.getsize(os.path.join(os.path.dirname(log), p)) for p in logs)
    assert total < 3 * MIB, (logs, total)

    # the image goes with the sandbox
    sb.release("u", "s")
    sb.wait_container_state(sid, None, timeout=60)
    wait_until(lambda: not os.path.exists(img), 30, 0.2, "the disk image removed")


def test_one_tenant_fills_its_disk_another_writes(docker_broker):
    """Tenant A fills its whole disk; tenant B's sandbox writes 64 MiB and runs
    commands meanwhile and after, and A's own sandbox still answers."""
    sb = docker_broker(OPENSANDBOX_API_KEYS=SEEDS, BROKER_CAPACITY=4, SANDBOX_DISK_MB="128")
    la = sb.acquire("ua", "sa")
    acquire_b, run_b = as_tenant(sb, KB)
    lb = acquire_b("ub", "sb")
    size, out = fill(sb, la, "/workspace/fill", 4096)
    assert "No space left on device" in out and size <= 128 * MIB, out
    r = run_b(lb, "dd if=/dev/zero of=/workspace/b bs=1M count=64 2>&1 | tail -1;"
                  " echo size=$(wc -c < /workspace/b)")
    assert "size=%d" % (64 * MIB) in r["stdout"], r
    for i in range(3):
        assert run_b(lb, "echo b%d > /tmp/f%d && cat /tmp/f%d" % (i, i, i))["stdout"] == "b%d\n" % i
    assert sb.run(la, "echo a")["stdout"] == "a\n"


def test_stop_start_keeps_the_disk_and_a_lost_mount_comes_back(docker_broker):
    """A stopped sandbox keeps its files (the disk stays mounted); a disk
    unmounted behind the broker's back (a reboot, a restart of dockerd) is
    mounted again by the next start, with its files; while unmounted the
    container cannot start at all (never on the shared disk)."""
    sb = docker_broker(SANDBOX_DISK_MB="128")
    lease = sb.acquire("u", "s")
    sid = lease["sandboxId"]
    sb.run(lease, "echo kept > /workspace/keep; echo etc > /etc/mine")
    assert sb.stop(lease).status == 200
    sb.wait_container_state(sid, "exited")
    assert sb.start(lease).status == 200
    assert sb.run(lease, "cat /workspace/keep /etc/mine")["stdout"] == "kept\netc\n"

    assert sb.stop(lease).status == 200
    sb.wait_container_state(sid, "exited")
    layer = layer_dir(sb, sid)
    assert subprocess.run(["umount", layer]).returncode == 0
    # Docker alone cannot start it now: the layer has no diff without its disk
    st, body = DOCKER.call("POST", "/containers/%s/start" % sb.container(sid)["Id"])
    assert st >= 400, (st, body)
    assert sb.start(lease).status == 200
    assert sb.run(lease, "cat /workspace/keep; df -k / | tail -1")["stdout"].startswith("kept\n")
    size, out = fill(sb, lease, "/workspace/big", 1024)
    assert "No space left on device" in out and size <= 128 * MIB, out

    # an image lost while unmounted: the start fails, naming it, and never runs the
    # sandbox on an empty disk (its files gone quietly) or on the shared one
    assert sb.stop(lease).status == 200
    sb.wait_container_state(sid, "exited")
    assert subprocess.run(["umount", layer]).returncode == 0
    os.unlink(os.path.join(disk_dir(sb), sid + ".img"))
    r = sb.start(lease)
    assert r.status >= 500 and "disk image" in r.json["message"] and "is gone" in r.json["message"], r
    assert sb.container(sid)["State"]["Status"] == "exited"


def test_orphans_are_reaped(docker_broker):
    """A container removed behind the broker's back leaves its disk image, run
    directory and etc directory: the reconciler removes them."""
    sb = docker_broker(SANDBOX_DISK_MB="128", RECONCILE_MS="1000")
    lease = sb.acquire("u", "s")
    sid = lease["sandboxId"]
    cid = sb.container(sid)["Id"]
    img = os.path.join(disk_dir(sb), sid + ".img")
    run = os.path.join(sb.b.state_dir, "agents", cid)
    etc = os.path.join(sb.b.state_dir, "agents", "etc-" + sid)
    assert os.path.exists(img) and os.path.isdir(run) and os.path.isdir(etc)
    # the reconciler keeps what a live container has
    time.sleep(2.5)
    assert os.path.exists(img) and os.path.isdir(run)
    st, _ = DOCKER.call("DELETE", "/containers/%s?force=1" % cid)
    assert st == 204
    wait_until(lambda: not os.path.exists(img) and not os.path.exists(run), 30, 0.2,
               "the orphan image and run directory reaped")
    assert mounts_under(os.path.join(sb.b.state_dir, "agents")) == {}
    # its etc directory with its run directory (through the sb- link to it)
    assert not os.path.exists(etc)
    # The watch usually sees that container die and tears its sandbox down
    # first; what only the reconciler can find is a leftover no record
    # names (a container removed while no supervisor ran): plant one.
    ghost = os.path.join(sb.b.state_dir, "agents", "%064x" % random.getrandbits(256))
    os.mkdir(ghost)
    open(os.path.join(ghost, "stray"), "w").close()
    wait_until(lambda: not os.path.exists(ghost), 30, 0.2, "the ghost run directory reaped")
    assert "host leftover(s) of removed containers reaped" in sb.b.logs("supervisor")


def test_disk_per_sandbox_and_per_tenant(docker_broker):
    """An OpenSandbox create asks for its disk (resourceLimits
    ephemeral-storage); a tenant's maxDiskMb (broker-admin tenant set
    --max-disk-mb) caps what its creates may ask and lowers its default;
    a refused ask is a 400 that changes nothing."""
    import subprocess as sp
    from brokerlib import BUILD_DIR, base_env, http_request
    sb = docker_broker(OPENSANDBOX_API_KEYS=SEEDS, BROKER_CAPACITY=4, SANDBOX_DISK_MB="256")
    b = sb.b

    def osb(method, path, body=None):
        return http_request(b.port, method, "/v1" + path, body,
                            {"OPEN-SANDBOX-API-KEY": KB}, 60)

    def create(limits):
        body = {"image": {"uri": "sandbox-broker/tiny:latest"}, "entrypoint": ["sleep", "infinity"],
                "timeout": 600, "resourceLimits": limits}
        return osb("POST", "/sandboxes", body)

    def running(sid):
        wait_until(lambda: osb("GET", "/sandboxes/" + sid).json["status"]["state"] == "Running",
                   90, 0.2, "sandbox %s running" % sid)
        return sb.container(sid)["Config"]["Labels"].get("io.sandbox-broker.disk-mb")

    r = create({"ephemeral-storage": "512Mi"})
    assert r.status == 202, r
    assert running(r.json["id"]) == "512"
    r = create({"cpu": "250m"})
    assert r.status == 202, r
    assert running(r.json["id"]) == "256"  # SANDBOX_DISK_MB
    r = create({"ephemeral-storage": "9Gi"})
    assert r.status == 400 and "ephemeral-storage" in r.json["message"], r

    env = base_env()
    env.update({"REDIS_HOST": "127.0.0.1", "REDIS_PORT": str(b.services.redis_port),
                "REDIS_KEY_PREFIX": b.prefix})
    cp = sp.run([os.path.join(BUILD_DIR, "broker-admin"), "tenant", "set", "tb", "--max-disk-mb", "128"],
                env=env, capture_output=True, text=True)
    if cp.returncode == 1 and "no tenant" in cp.stderr:
        cp = sp.run([os.path.join(BUILD_DIR, "broker-admin"), "tenant", "add", "tb",
                     "--max-disk-mb", "128"], env=env, capture_output=True, text=True)
    assert cp.returncode == 0, cp.stderr
    keys = sorted(b.redis.keys(b.prefix + "*"))
    r = create({"ephemeral-storage": "256Mi"})
    assert r.status == 400 and "at most 128Mi for tenant tb" in r.json["message"], r
    assert sorted(b.redis.keys(b.prefix + "*")) == keys  # nothing changed
    r = create({})
    assert r.status == 202, r
    assert running(r.json["id"]) == "128"  # the tenant's cap is below the default
    cp = sp.run([os.path.join(BUILD_DIR, "broker-admin"), "tenant", "set", "tb", "--max-disk-mb", "0"],
                env=env, capture_output=True, text=True)
    assert cp.returncode == 2 and "64.." in cp.stderr, cp.stderr  # never unbounded
