"""sandbox-agent inside real Docker sandboxes, through the broker (docs/AGENT.md).

Every sandbox runs the agent as PID 1 and the broker's commands go through its
socket, never `docker exec`. The sandbox side is hostile: root in it can plant a
link (to the host's Docker socket) where the agent's socket should be, replace
the agent's socket with a listener of its own that answers garbage or nothing,
and signal PID 1. Each must give a clear error for that sandbox only, never a
hang, and never reach the host.
"""

import json
import os
import time
import urllib.parse

from sandboxlib import DOCKER, docker_broker, require_docker  # noqa: F401

require_docker()

SOCK = "/.sandbox-broker/run/agent.sock"


def exec_ids(sb, sid, since):
    """exec_create events Docker recorded for sid's container since `since`
    (a Unix time): every `docker exec` leaves one, finished or not."""
    cid = sb.container(sid)["Id"]
    q = urllib.parse.urlencode({
        "since": "%.3f" % since, "until": "%.3f" % (time.time() + 0.5),
        "filters": json.dumps({"type": ["container"], "container": [cid]})})
    st, body = DOCKER.call("GET", "/events?" + q)
    assert st == 200, (st, body)
    events = [json.loads(line) for line in body.decode().splitlines() if line.strip()] \
        if isinstance(body, bytes) else ([body] if body else [])
    return [e for e in events if e.get("Action", "").startswith("exec_create")]


def run_dir(sb, sid):
    return os.path.join(sb.b.config.get("AGENT_DIR") or os.path.join(sb.b.state_dir, "agents"),
                        sb.container(sid)["Id"])


def test_commands_go_through_the_agent_not_docker_exec(docker_broker):
    sb = docker_broker()
    lease = sb.acquire("u1", "s1")
    sid = lease["sandboxId"]
    since = time.time() - 60
    c = sb.container(sid)
    assert c["Path"] == "/.sandbox-broker/agent", c["Path"]
    assert not c["HostConfig"].get("Init"), "the agent is PID 1, not docker-init"
    r = sb.run(lease, "cat /proc/1/cmdline | tr '\\0' ' '; echo; echo out; echo err >&2; exit 3")
    assert r["stdout"].startswith("/.sandbox-broker/agent --socket " + SOCK), r
    assert "out\n" in r["stdout"] and r["stderr"] == "err\n" and r["exitCode"] == 3, r
    # files too
    assert sb.write(lease, "/workspace/a.txt", b"hello agent").status == 200
    r = sb.read(lease, "/workspace/a.txt")
    assert r.status == 200, r
    assert exec_ids(sb, sid, since) == [], "no command may use docker exec"
    # the agent's binary is read-only in the sandbox
    r = sb.run(lease, "echo x > /.sandbox-broker/agent; echo rc=$?")
    assert "rc=0" not in r["stdout"], r


def test_docker_exec_transport_is_kept_as_a_setting(docker_broker):
    sb = docker_broker(EXEC_TRANSPORT="docker")
    lease = sb.acquire("u1", "s1")
    sid = lease["sandboxId"]
    since = time.time() - 1
    assert sb.run(lease, "echo via-docker")["stdout"] == "via-docker\n"
    assert exec_ids(sb, sid, since), "EXEC_TRANSPORT=docker must use docker exec"


def test_planted_link_to_the_docker_socket_is_refused(docker_broker):
    sb = docker_broker()
    lease = sb.acquire("u1", "s1")
    sid = lease["sandboxId"]
    # the link's text is resolved on the host if the broker followed it
    r = sb.run(lease, "rm -f %s && ln -s /var/run/docker.sock %s && ls -l %s" % (SOCK, SOCK, SOCK))
    assert r["exitCode"] == 0, r
    before = [c["Id"] for c in sb.containers()]
    since = time.time() - 1
    t0 = time.monotonic()
    r = sb.exec(lease, "echo should-not-run")
    assert r.status >= 500 and r.status != 504, r
    assert "agent" in r.json["message"], r
    assert time.monotonic() - t0 < 10, "a refused socket must fail at once"
    assert exec_ids(sb, sid, since) == [], "no fallback to docker exec"
    # the broker and Docker are fine, nothing new was created through the link
    assert [c["Id"] for c in sb.containers()] == before
    assert sb.b.get("/health").status == 200
    assert os.path.islink(os.path.join(run_dir(sb, sid), "agent.sock"))
    # a regular file there is refused the same way
    path = os.path.join(run_dir(sb, sid), "agent.sock")
    os.unlink(path)
    with open(path, "w") as f:
        f.write("not a socket")
    r = sb.exec(lease, "echo should-not-run")
    assert r.status >= 500 and "agent" in r.json["message"], r


def test_impostor_listener_answering_garbage_or_nothing(docker_broker):
    sb = docker_broker()
    lease = sb.acquire("u1", "s1")
    # a python listener replaces the agent's socket: garbage first
    impostor = (
        "import os, socket, sys, time\n"
        "p = %r\n"
        "os.unlink(p)\n"
        "s = socket.socket(socket.AF_UNIX); s.bind(p); s.listen(8)\n"
        "mode = sys.argv[1]\n"
        "while True:\n"
        "    c, _ = s.accept()\n"
        "    if mode == 'garbage':\n"
        "        c.sendall(b'HTTP/1.1 200 OK\\r\\nTransfer-Encoding: chunked\\r\\n\\r\\n'\n"
        "                  b'ffffffffffffffffff\\r\\n' + os.urandom(4096)); c.close()\n"
        "    elif mode == 'huge':\n"
        "        c.sendall(b'HTTP/1.1 200 OK\\r\\n' + b'X: ' + b'a' * (1 << 20))\n"
        "        c.close()\n"
        "    else:\n"
        "        time.sleep(3600)\n"
    ) % SOCK
    r = sb.write(lease, "/tmp/impostor.py", impostor.encode())
    assert r.status == 200, r
    r = sb.run(lease, "setsid python3 /tmp/impostor.py garbage >/dev/null 2>&1 < /dev/null &")
    assert r["exitCode"] == 0, r
    time.sleep(0.5)
    for _ in range(3):
        r = sb.exec(lease, "echo hi")
        assert r.status >= 500, r
        assert "agent" in r.json["message"], r
    assert sb.b.get("/health").status == 200


def test_pid1_survives_sigkill_and_sigterm_ends_the_sandbox_clearly(docker_broker):
    sb = docker_broker()
    lease = sb.acquire("u1", "s1")
    sid = lease["sandboxId"]
    # SIGKILL from inside the sandbox cannot reach its PID 1
    r = sb.run(lease, "kill -9 1; echo rc=$?")
    assert sb.run(lease, "echo still-here")["stdout"] == "still-here\n"
    # SIGTERM is the agent's stop: the sandbox ends (its lease ends with it and the dead
    # container is removed: API.md, "A lease whose sandbox died"); the next command fails
    # at once with a clear error (never a hang)
    sb.exec(lease, "kill -TERM 1")
    sb.wait_container_state(sid, ("exited", None), timeout=20)
    t0 = time.monotonic()
    r = sb.exec(lease, "echo hi")
    assert r.status in (404, 409, 502, 503), r
    assert time.monotonic() - t0 < 10
    assert sb.b.get("/health").status == 200


def test_sigterm_to_pid1_ends_the_sandbox_and_its_record_says_so(docker_broker):
    sb = docker_broker()
    lease = sb.acquire("u1", "s1")
    sid = lease["sandboxId"]
    sb.exec(lease, "kill -TERM 1")
    # the supervisor follows Docker's events: the record leaves Running at once
    rec = sb.wait_record_state(sid, "Failed", timeout=10)
    assert rec.get("reason") == "ENTRYPOINT_EXITED", rec
    assert "exited with code" in rec.get("message", ""), rec


def test_an_exited_entrypoint_shows_in_the_lifecycle_state(request, services, it_root):
    from sdklib import OSB, start_osb_broker
    b = start_osb_broker(request, services, it_root)
    osb = OSB(b)
    sid = osb.create(entrypoint=("sh", "-c", "sleep 2; echo bye; exit 3"))
    try:
        t0 = time.monotonic()
        sb = osb.wait_state(sid, "Failed", timeout=15)
        assert time.monotonic() - t0 < 5, "seen late: %.1f s" % (time.monotonic() - t0)
        st = sb["status"]
        assert st["reason"] == "ENTRYPOINT_EXITED", st
        assert "code 3" in st["message"], st
    finally:
        osb.delete(sid)
