"""The runtime API (exec, files, start/stop, delete) against real Docker
sandboxes: exit codes, stderr, cwd, env, timeouts that kill, capped output,
byte-exact binary files, path confinement, tenant isolation (404), and
start/stop/delete changing the real container.

One broker (EXEC_MAX_OUTPUT=65536) serves the module; each test takes its own
leases (own users), so tests do not see each other's sandboxes.
"""

import hashlib
import os
import time
import uuid

import pytest

import conftest
from brokerlib import check_error, wait_until
from sandboxlib import DOCKER, SB, check_sandbox_lease, docker_broker, require_docker  # noqa: F401

require_docker()

EXEC_MAX_OUTPUT = 65536
FILE_MAX_BYTES = 8 * 1024 * 1024  # the default


@pytest.fixture(scope="module")
def rt(request, services, it_root):
    env = {"SANDBOX_PROVIDER": "docker", "BROKER_CAPACITY": "12",
           "EXEC_MAX_OUTPUT": str(EXEC_MAX_OUTPUT), "IDLE_POLICY": "stop_keep"}
    b = conftest.make_broker(request, services, it_root, **env)
    return SB(b)


@pytest.fixture(autouse=True)
def _logs_on_failure(request, rt):
    """Let conftest's report hook add the module broker's logs on failure."""
    request.node._it_brokers = [rt.b]


def user():
    return "u" + uuid.uuid4().hex[:10]


@pytest.fixture
def lease(rt):
    """A fresh exclusive lease with its sandbox; released (deleted) after."""
    u = user()
    lz = check_sandbox_lease(rt.acquire(u, "s1"))
    yield lz
    rt.b.release(u, "s1", "deleted")


def test_exec_exit_codes_stdout_stderr(rt, lease):
    res = rt.run(lease, "echo out; echo err >&2; exit 3")
    assert res["exitCode"] == 3, res
    assert res["stdout"] == "out\n" and res["stderr"] == "err\n", res
    assert res["stdoutTruncated"] is False and res["stderrTruncated"] is False, res
    assert res["timedOut"] is False, res
    assert isinstance(res["durationMs"], int) and res["durationMs"] >= 0, res

    res = rt.run(lease, "true")
    assert (res["exitCode"], res["stdout"], res["stderr"]) == (0, "", ""), res
    res = rt.run(lease, ["sh", "-c", "exit 7"])
    assert res["exitCode"] == 7, res
    # array form: no shell parsing of the arguments
    res = rt.run(lease, ["printf", "%s|", "a b", "$HOME", "*"])
    assert res["stdout"] == "a b|$HOME|*|", res
    res = rt.run(lease, ["/no/such/program"])
    assert res["exitCode"] != 0, res
    res = rt.run(lease, "id -un")
    assert res["stdout"] == "root\n", res


def test_exec_cwd_and_env(rt, lease):
    assert rt.run(lease, "pwd")["stdout"] == "/workspace\n"
    assert rt.run(lease, "pwd", cwd="/tmp")["stdout"] == "/tmp\n"
    rt.run(lease, "mkdir -p sub/dir")
    assert rt.run(lease, "pwd", cwd="sub/dir")["stdout"] == "/workspace/sub/dir\n"
    res = rt.run(lease, 'printf "%s|%s" "$FOO" "$BAR_2"', env={"FOO": "bar baz", "BAR_2": "x=y;z"})
    assert res["stdout"] == "bar baz|x=y;z", res
    check_error(rt.exec(lease, "pwd", cwd="../etc"), 400, "INVALID_REQUEST")
    check_error(rt.exec(lease, "pwd", env={"1BAD": "x"}), 400, "INVALID_REQUEST")
    check_error(rt.exec(lease, "pwd", env={"A": 1}), 400, "INVALID_REQUEST")
    check_error(rt.exec(lease, ""), 400, "INVALID_REQUEST")
    check_error(rt.exec(lease, []), 400, "INVALID_REQUEST")
    check_error(rt.exec(lease, 42), 400, "INVALID_REQUEST")
    check_error(rt.exec(lease, "true", timeoutMs=0), 400, "INVALID_REQUEST")
    check_error(rt.exec(lease, "true", timeoutMs="5"), 400, "INVALID_REQUEST")


def test_exec_timeout_kills_the_command(rt, lease):
    t0 = time.monotonic()
    res = rt.run(lease, "echo started; sleep 30; echo never", timeoutMs=1500)
    took = time.monotonic() - t0
    assert res["timedOut"] is True, res
    assert res["exitCode"] != 0, res
    assert res["stdout"] == "started\n", res
    assert took < 15, "timeout of 1.5 s took %.1f s" % took
    # the command is gone, not left running in the sandbox
    def no_sleep():
        r = rt.run(lease, "ps -eo args | grep -c '^sleep 30' || true")
        return r["stdout"].strip() == "0" or None
    wait_until(no_sleep, 10, 0.5, "sleep 30 killed")
    # a command within its timeout is not flagged
    res = rt.run(lease, "sleep 0.2; echo ok", timeoutMs=10000)
    assert res["timedOut"] is False and res["stdout"] == "ok\n", res


def test_exec_large_output_is_capped(rt, lease):
    res = rt.run(lease, "head -c 1048576 /dev/zero | tr '\\0' a")
    assert res["stdoutTruncated"] is True, {k: v for k, v in res.items() if k != "stdout"}
    assert len(res["stdout"]) == EXEC_MAX_OUTPUT, len(res["stdout"])
    assert set(res["stdout"]) == {"a"}
    assert res["stderrTruncated"] is False and res["stderr"] == "", res["stderr"][:200]
    res = rt.run(lease, "head -c 1048576 /dev/zero | tr '\\0' b >&2; echo small")
    assert res["stderrTruncated"] is True and len(res["stderr"]) == EXEC_MAX_OUTPUT
    assert res["stdout"] == "small\n" and res["stdoutTruncated"] is False
    # exactly the cap is not truncated
    res = rt.run(lease, "head -c %d /dev/zero | tr '\\0' c" % EXEC_MAX_OUTPUT)
    assert res["stdoutTruncated"] is False and len(res["stdout"]) == EXEC_MAX_OUTPUT


def test_file_binary_round_trip(rt, lease):
    data = os.urandom(200 * 1024) + b"\0\0\0" + bytes(range(256)) + b"\0"
    r = rt.write(lease, "bin/blob.dat", data)
    assert r.status == 200, r
    assert r.json == {"path": "/workspace/bin/blob.dat", "size": len(data)}, r.json
    r = rt.read(lease, "bin/blob.dat")
    assert r.status == 200, r
    assert r.json["path"] == "/workspace/bin/blob.dat" and r.json["size"] == len(data)
    import base64
    assert base64.b64decode(r.json["content"]) == data
    # the bytes in the container are the same (checked independently)
    res = rt.run(lease, "sha256sum bin/blob.dat; stat -c %s bin/blob.dat")
    digest, size = res["stdout"].split("\n")[0].split()[0], res["stdout"].split("\n")[1]
    assert digest == hashlib.sha256(data).hexdigest() and int(size) == len(data), res
    # absolute path in an exclusive sandbox, overwrite, empty file
    r = rt.write(lease, "/workspace/bin/blob.dat", b"")
    assert r.status == 200 and r.json["size"] == 0, r
    r = rt.read(lease, "/workspace/bin/blob.dat")
    assert r.status == 200 and r.json["size"] == 0 and r.json["content"] == "", r


def test_file_5mib_round_trip_and_limits(rt, lease):
    import base64
    data = os.urandom(5 * 1024 * 1024)
    r = rt.write(lease, "big.bin", data)
    assert r.status == 200 and r.json["size"] == len(data), r
    r = rt.read(lease, "big.bin")
    assert r.status == 200, r
    assert base64.b64decode(r.json["content"]) == data
    # just over FILE_MAX_BYTES: refused on write ...
    check_error(rt.write(lease, "huge.bin", b"\x01" * (FILE_MAX_BYTES + 1)), 413, "FILE_TOO_LARGE")
    assert rt.run(lease, "test -e huge.bin; echo $?")["stdout"] == "1\n"
    # ... and on read of a file made inside the sandbox
    rt.run(lease, "head -c %d /dev/zero > huge.bin" % (FILE_MAX_BYTES + 1))
    check_error(rt.read(lease, "huge.bin"), 413, "FILE_TOO_LARGE")
    # exactly FILE_MAX_BYTES reads back
    rt.run(lease, "head -c %d /dev/zero > max.bin" % FILE_MAX_BYTES)
    r = rt.read(lease, "max.bin")
    assert r.status == 200 and r.json["size"] == FILE_MAX_BYTES, r


def test_file_errors_and_path_traversal(rt, lease):
    check_error(rt.read(lease, "missing.txt"), 404, "FILE_NOT_FOUND")
    check_error(rt.read(lease, "/workspace/nodir/missing.txt"), 404, "FILE_NOT_FOUND")
    for p in ("../etc/passwd", "/workspace/../etc/passwd", "a/../../etc/passwd",
              "..", "sub/..", "./../x"):
        check_error(rt.read(lease, p), 400, "INVALID_REQUEST")
        check_error(rt.write(lease, p, b"pwned"), 400, "INVALID_REQUEST")
    check_error(rt.write(lease, "", b"x"), 400, "INVALID_REQUEST")
    # a file name over NAME_MAX (255 bytes) is the caller's error, said before any exec
    r = rt.write(lease, "n" * 256, b"x")
    check_error(r, 400, "INVALID_REQUEST")
    assert "NAME_MAX" in r.json["message"], r
    check_error(rt.read(lease, "/workspace/" + "n" * 300 + "/x"), 400, "INVALID_REQUEST")
    check_error(rt.call("POST", lease, "/files/write", {"path": "x.txt", "content": "not base64!"}),
                400, "INVALID_REQUEST")
    check_error(rt.call("POST", lease, "/files/write", {"path": "x.txt"}), 400, "INVALID_REQUEST")
    check_error(rt.call("POST", lease, "/files/read", {}), 400, "INVALID_REQUEST")
    check_error(rt.call("POST", lease, "/files/read", {"path": 5}), 400, "INVALID_REQUEST")
    res = rt.run(lease, "ls /etc/pwned /pwned /x.txt /workspace/x.txt 2>&1 | grep -vc 'No such' || true")
    assert res["stdout"] == "0\n", res
    check_error(rt.read(lease, "/workspace"), 400, "INVALID_REQUEST")  # a directory


def test_foreign_tenant_gets_404_and_nothing_runs(rt, lease):
    other = check_sandbox_lease(rt.acquire(user(), "s1"))
    assert other["sandboxId"] != lease["sandboxId"]
    sid = lease["sandboxId"]
    foreign = {"sandbox_id": sid, "lease_id": other["leaseId"]}
    check_error(rt.exec(lease, "touch /workspace/pwned", **foreign), 404, "SANDBOX_NOT_FOUND")
    check_error(rt.write(lease, "pwned2", b"x", **foreign), 404, "SANDBOX_NOT_FOUND")
    check_error(rt.read(lease, "/etc/hostname", **foreign), 404, "SANDBOX_NOT_FOUND")
    check_error(rt.stop(lease, **foreign), 404, "SANDBOX_NOT_FOUND")
    r = rt.delete(lease, **foreign)
    check_error(r, 404, "SANDBOX_NOT_FOUND")
    assert DOCKER.state("sb-" + sid) == "running"
    res = rt.run(lease, "ls /workspace/pwned /workspace/pwned2 2>&1 | grep -c 'No such'")
    assert res["stdout"] == "2\n", res
    # unknown sandbox / lease ids, bad or missing header
    unknown = uuid.uuid4().hex
    check_error(rt.exec(lease, "true", sandbox_id=unknown), 404, "SANDBOX_NOT_FOUND")
    check_error(rt.exec(lease, "true", lease_id=uuid.uuid4().hex), 404, "SANDBOX_NOT_FOUND")
    check_error(rt.exec(lease, "true", sandbox_id="../../v1/status"), 404)
    check_error(rt.exec(lease, "true", lease_id="NOT-A-LEASE"), 400, "INVALID_REQUEST")
    r = rt.b.post("/v1/sandboxes/%s/exec" % sid, {"cmd": "touch /workspace/pwned3"})
    check_error(r, 400, "INVALID_REQUEST")
    assert rt.run(lease, "test -e /workspace/pwned3; echo $?")["stdout"] == "1\n"
    # a released lease no longer opens its sandbox
    rt.release(other["userId"], "s1", "deleted")
    check_error(rt.exec(other, "true"), 404, "SANDBOX_NOT_FOUND")


def test_stop_start_change_the_container(rt, lease):
    sid = lease["sandboxId"]
    rt.run(lease, "echo persisted > keep.txt")
    r = rt.stop(lease)
    assert r.status == 200 and r.json == {"sandboxId": sid, "state": "Stopped"}, r
    assert DOCKER.state("sb-" + sid) == "exited"
    assert rt.record(sid)["state"] == "Stopped"
    check_error(rt.exec(lease, "true"), 409, "SANDBOX_NOT_RUNNING")
    check_error(rt.read(lease, "keep.txt"), 409, "SANDBOX_NOT_RUNNING")
    r = rt.stop(lease)  # idempotent
    assert r.status == 200 and r.json["state"] == "Stopped", r
    r = rt.start(lease)
    assert r.status == 200 and r.json == {"sandboxId": sid, "state": "Running"}, r
    assert DOCKER.state("sb-" + sid) == "running"
    assert rt.record(sid)["state"] == "Running"
    r = rt.start(lease)
    assert r.status == 200 and r.json["state"] == "Running", r
    assert rt.run(lease, "cat keep.txt")["stdout"] == "persisted\n"


def test_delete_removes_the_container(rt):
    u = user()
    lz = rt.acquire(u, "s1")
    sid = lz["sandboxId"]
    assert DOCKER.state("sb-" + sid) == "running"
    r = rt.delete(lz)
    assert r.status == 204, r
    assert r.raw == b"", r
    rt.wait_container_state(sid, None, timeout=60)
    rt.wait_record_state(sid, "Terminated", 30)
    assert rt.containers(sid) == []
    # the lease is gone with it
    check_error(rt.b.heartbeat(u, "s1"), 404, "LEASE_NOT_FOUND")
    check_error(rt.exec(lz, "true"), 404, "SANDBOX_NOT_FOUND")
    # a new acquire gets a new sandbox
    again = rt.acquire(u, "s1")
    assert again["sandboxId"] != sid
    rt.release(u, "s1", "deleted")


def test_stopped_sandbox_released_idle_is_kept_and_restarted(rt):
    u = user()
    lz = rt.acquire(u, "s1")
    sid = lz["sandboxId"]
    rt.run(lz, "echo mine > keep.txt")
    assert rt.stop(lz).status == 200
    rt.release(u, "s1", "idle")
    rt.wait_record_state(sid, "Stopped", 30)
    assert DOCKER.state("sb-" + sid) == "exited"
    again = rt.acquire(u, "s1")
    assert again["sandboxId"] == sid, (again, lz)
    assert DOCKER.state("sb-" + sid) == "running"
    assert rt.run(again, "cat keep.txt")["stdout"] == "mine\n"
    # stopped by its holder, then released with reason deleted: removed
    assert rt.stop(again).status == 200
    rt.release(u, "s1", "deleted")
    rt.wait_container_state(sid, None, timeout=60)
    rt.wait_record_state(sid, "Terminated", 30)
