"""Sandboxes under gVisor (SANDBOX_RUNTIME=runsc; Debian's runsc, registered in
dockerd by scripts/docker-up with --network=none and --host-uds=open;
docs/OPERATIONS.md, "gVisor").

With Debian 12's runsc (release 20221219) the host cannot connect to a socket
bound inside gVisor, so the sandbox-agent of a gVisor sandbox dials out
instead (sandbox-agent --dial; docs/AGENT.md, "Transports"): it keeps idle
connections to dial.sock, which sandbox-egress-relay --agent-dir binds in
the sandbox's run directory beside agent.sock, and the relay pairs each
connection of the broker to agent.sock with one of them. Proven here: the
agent's commands, files, egress and port endpoints under gVisor, its run
directory read-only, a relay restart survived, and a runsc sandbox beside a
runc one. The egress and ingress suites also run under runsc
(test_egress.py, test_ingress.py)."""

import base64
import platform
import time

from sandboxlib import DOCKER, docker_broker, require_docker  # noqa: F401
from test_agent_sandbox import exec_ids

require_docker()

AGENT_LABEL = "io.sandbox-broker.agent"


def test_runsc_is_registered():
    st, info = DOCKER.call("GET", "/info")
    assert st == 200, (st, info)
    rt = (info.get("Runtimes") or {}).get("runsc")
    assert rt, "scripts/docker-up registers runsc (Debian's runsc package)"
    # the agent dials out: runsc must let it open a host socket
    assert "--host-uds=open" in (rt.get("runtimeArgs") or []), rt


def test_commands_and_files_under_gvisor(docker_broker):
    sb = docker_broker(SANDBOX_RUNTIME="runsc")
    lease = sb.acquire("u1", "s1")
    sid = lease["sandboxId"]
    since = time.time() - 60
    c = sb.container(sid)
    assert c["HostConfig"]["Runtime"] == "runsc", c["HostConfig"]
    # the agent is PID 1 and dials; its run directory is read-only
    assert c["Config"]["Labels"].get(AGENT_LABEL) == "dial", c["Config"]["Labels"]
    assert c["Config"]["Entrypoint"][1:3] == ["--dial", "/.sandbox-broker/run/dial.sock"], c["Config"]
    assert any(m["Destination"] == "/.sandbox-broker/run" and not m["RW"] for m in c["Mounts"]), \
        c["Mounts"]
    r = sb.run(lease, "uname -r; echo err >&2; exit 4")
    assert r["exitCode"] == 4 and r["stderr"] == "err\n", r
    # gVisor's Sentry reports a kernel of its own, not the host's
    assert r["stdout"].strip() and r["stdout"].strip() != platform.release(), r
    # files through the agent, both ways, byte for byte
    data = bytes(range(256)) * 256
    assert sb.write(lease, "/workspace/blob", data).status == 200
    rd = sb.read(lease, "/workspace/blob")
    assert rd.status == 200 and base64.b64decode(rd.json["content"]) == data, rd.status
    r = sb.run(lease, "wc -c < /workspace/blob; echo gvisor > /workspace/g.txt")
    assert r["stdout"] == "65536\n", r
    # the sandbox cannot touch the relay's sockets: the directory is read-only
    r = sb.run(lease, "rm -f /.sandbox-broker/run/agent.sock; echo rm=$?; "
                      "touch /.sandbox-broker/run/x; echo touch=$?")
    assert "rm=1" in r["stdout"] and "touch=1" in r["stdout"], r
    assert r["stderr"].count("Read-only file system") == 2, r
    assert sb.run(lease, "echo still")["stdout"] == "still\n"
    # no interface but loopback
    r = sb.run(lease, "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '")
    assert r["stdout"].split() == ["lo"], r
    # stop and start again keep the workspace, and the agent dials again
    assert sb.stop(lease).status == 200
    assert sb.start(lease).status == 200
    r = sb.run(lease, "cat /workspace/g.txt")
    assert r["stdout"] == "gvisor\n", r
    # no `docker exec` was needed for any of it
    assert exec_ids(sb, sid, since) == [], "no command may use docker exec"


def test_relay_restart_is_survived(docker_broker):
    """The relay is the only way in: when it restarts, the agent's idle
    connections end and it dials the new relay's socket."""
    sb = docker_broker(SANDBOX_RUNTIME="runsc")
    lease = sb.acquire("u1", "s1")
    assert sb.run(lease, "echo one")["stdout"] == "one\n"
    old = sb.b.pid("egress-relay")
    sb.b.stop("egress-relay")
    sb.b.start("egress-relay")
    assert sb.b.pid("egress-relay") != old
    deadline = time.monotonic() + 30
    while True:
        r = sb.exec(lease, "echo two")
        if r.status == 200 and r.json.get("stdout") == "two\n":
            break
        assert time.monotonic() < deadline, r
        time.sleep(0.2)
    assert sb.run(lease, "echo three")["stdout"] == "three\n"


# ------------------------------------------------- one runtime per sandbox
#
# SANDBOX_RUNTIMES lets a create choose its runtime with
# `extensions: {"runtime": "runsc"}` (docs/OPENSANDBOX.md, "Runtimes"); a
# runsc sandbox's agent dials, the others' listen, and both have everything:
# execd, egress, port endpoints.

import json  # noqa: E402

import pytest  # noqa: E402

from sandboxlib import SB  # noqa: E402
from sdklib import OSB, check_osb_error, start_osb_broker  # noqa: E402
from test_execd import Execd  # noqa: E402


@pytest.fixture(scope="module")
def rb(request, services, it_root):
    return start_osb_broker(request, services, it_root, BROKER_CAPACITY=4, IDLE_POLICY="delete",
                            SANDBOX_RUNTIMES="runsc")


def _execd(b, osb, sid):
    r = osb.endpoint(sid, 44772)
    assert r.status == 200, r
    return Execd(SB(b), sid, r.json["headers"]["X-EXECD-ACCESS-TOKEN"])


def _run(ex, command):
    st, _, events = ex.command_stream({"command": command})
    assert st == 200, events
    done = [e for e in events if e["type"] == "execution_complete"]
    assert done, events
    return "".join(e["text"] for e in events if e["type"] == "stdout")


POLICY = {"defaultAction": "deny", "egress": [{"action": "allow", "target": "a.test"}]}


def test_osb_create_picks_runsc_per_sandbox_beside_runc(rb):
    osb = OSB(rb, "alpha")
    g = osb.create(extensions={"runtime": "runsc"}, networkPolicy=POLICY)
    r = osb.create()  # SANDBOX_RUNTIME: sandbox-runc, with the agent
    try:
        # both at once, each in its own runtime
        assert osb.state(g)["state"] == "Running" and osb.state(r)["state"] == "Running"
        cg, cr = DOCKER.inspect("sb-" + g), DOCKER.inspect("sb-" + r)
        assert cg["HostConfig"]["Runtime"] == "runsc", cg["HostConfig"]
        assert cr["HostConfig"]["Runtime"] == "sandbox-runc", cr["HostConfig"]
        assert cg["Config"]["Labels"].get(AGENT_LABEL) == "dial", cg["Config"]["Labels"]
        assert cr["Config"]["Labels"].get(AGENT_LABEL) == "1", cr["Config"]["Labels"]
        assert rb.redis.hget(rb.key("sandbox:%s" % g), "runtime") == "runsc"
        assert rb.redis.hget(rb.key("sandbox:%s" % r), "runtime") == "sandbox-runc"
        # gVisor's kernel answers in one, the host's in the other
        xg, xr = _execd(rb, osb, g), _execd(rb, osb, r)
        out = _run(xg, "uname -r; dmesg | head -n 3")
        assert "gVisor" in out and platform.release() not in out, out
        assert _run(xr, "uname -r").strip() == platform.release()
        assert _run(xg, "echo hi > /tmp/x; cat /tmp/x") == "hi\n"
        # the create's networkPolicy is the record's, and egress's API serves it
        assert json.loads(rb.redis.hget(rb.key("sandbox:%s" % g), "egress_policy")) == POLICY
        for x in (xg, xr):
            assert osb.endpoint(x.sid, 18080).status == 200
        st, _, body = xg.json("GET", "/policy", port=18080)
        assert st == 200 and body["policy"]["egress"] == POLICY["egress"], (st, body)
        # a port endpoint reaches a server inside gVisor through the agent
        st, _, events = xg.command_stream({"command": "cd /tmp && exec python3 -m http.server 8080 "
                                                      "--bind 127.0.0.1", "background": True})
        assert st == 200, events
        deadline = time.monotonic() + 30
        while True:
            st, _, body = xg.request("GET", "/x", port=8080)
            if st == 200:
                break
            assert time.monotonic() < deadline, (st, body)
            time.sleep(0.2)
        assert body == b"hi\n", body
    finally:
        osb.delete(g)
        osb.delete(r)


@pytest.mark.parametrize("body,want", [
    ({"extensions": {"runtime": "kata"}},
     'extensions.runtime: "kata" is not an allowed runtime (allowed: sandbox-runc, runsc)'),
    ({"extensions": {"runtime": 1}}, "extensions.runtime: a non-string"),
])
def test_osb_create_refusals_make_nothing(rb, body, want):
    osb = OSB(rb, "alpha")
    before = set(rb.redis.zrange(rb.key("sandboxes"), 0, -1))
    containers = {c["Id"] for c in DOCKER.list(prefix=rb.prefix)}
    full = {"image": {"uri": "sandbox-broker/base:latest"}, "entrypoint": ["sleep", "infinity"]}
    full.update(body)
    e = check_osb_error(osb.create_raw(full), 400)
    assert want in e["message"], e
    # nothing new (an earlier test's deleted sandboxes may still be going)
    assert set(rb.redis.zrange(rb.key("sandboxes"), 0, -1)) <= before
    assert {c["Id"] for c in DOCKER.list(prefix=rb.prefix)} <= containers


def test_lease_mode_runtime(docker_broker):
    """SANDBOX_RUNTIME_<MODE>: user_shared leases under runsc, exclusive
    ones under SANDBOX_RUNTIME, each with its agent and the configured
    egress."""
    default = {"defaultAction": "deny", "egress": [{"action": "allow", "target": "a.test"}]}
    sb = docker_broker(BROKER_CAPACITY=2, SANDBOX_RUNTIMES="runsc",
                       SANDBOX_RUNTIME_USER_SHARED="runsc", EGRESS_DEFAULT=json.dumps(default))
    lg = sb.acquire("u1", "s1", mode="user_shared")
    lr = sb.acquire("u2", "s1", mode="exclusive")
    cg, cr = sb.container(lg["sandboxId"]), sb.container(lr["sandboxId"])
    assert cg["HostConfig"]["Runtime"] == "runsc", cg["HostConfig"]
    assert cr["HostConfig"]["Runtime"] == "sandbox-runc", cr["HostConfig"]
    assert cg["Config"]["Labels"].get(AGENT_LABEL) == "dial", cg["Config"]["Labels"]
    assert sb.b.redis.hget(sb.b.key("sandbox:%s" % lg["sandboxId"]), "runtime") == "runsc"
    r = sb.run(lg, "dmesg | head -n 3; exit 3")
    assert r["exitCode"] == 3 and "gVisor" in r["stdout"], r
    r = sb.run(lr, "uname -r")
    assert r["stdout"].strip() == platform.release(), r
    # both get EGRESS_DEFAULT
    pol = lambda lease: json.loads(sb.b.redis.hget(sb.b.key("sandbox:%s" % lease["sandboxId"]),  # noqa: E731
                                                   "egress_policy"))
    assert pol(lg) == default
    assert pol(lr) == default
    # a stop and start of the gVisor one: its agent dials again, the
    # workspace is kept
    assert sb.run(lg, "echo kept > /workspace/k")["exitCode"] == 0
    assert sb.stop(lg).status == 200
    assert sb.start(lg).status == 200
    assert sb.run(lg, "cat /workspace/k")["stdout"] == "kept\n"


def test_mode_runtime_not_allowed_stops_the_broker(request, services, it_root):
    import conftest
    from brokerlib import Broker, StackError
    b = Broker(services, conftest._state_dir(it_root, request.node.name),
               SANDBOX_RUNTIME_EXCLUSIVE="runsc")
    request.addfinalizer(b.down)
    with pytest.raises(StackError) as e:
        b.up()
    assert "SANDBOX_RUNTIME_EXCLUSIVE=runsc: not an allowed runtime" in str(e.value), e.value


def test_warm_pool_never_serves_another_runtime(request, services, it_root):
    """POOL members run SANDBOX_RUNTIME: a runsc create (and a runsc lease
    mode) is a cold create, the members stay in the pool."""
    from brokerlib import wait_until
    from sandboxlib import BASE_IMAGE
    b = start_osb_broker(request, services, it_root, POOL="%s:1" % BASE_IMAGE, BROKER_CAPACITY=4,
                         IDLE_POLICY="delete", SANDBOX_RUNTIMES="runsc",
                         SANDBOX_RUNTIME_USER_SHARED="runsc")
    pool = b.key("wpool:" + BASE_IMAGE)
    members = wait_until(lambda: b.redis.zrange(pool, 0, -1), 90, 0.2, "pool filled")
    osb = OSB(b, "alpha")
    g = osb.create(extensions={"runtime": "runsc"})
    try:
        assert g not in members
        assert DOCKER.inspect("sb-" + g)["HostConfig"]["Runtime"] == "runsc"
        lease = SB(b).acquire("u1", "s1", mode="user_shared")
        assert lease["sandboxId"] not in members
        assert DOCKER.inspect("sb-" + lease["sandboxId"])["HostConfig"]["Runtime"] == "runsc"
        assert b.redis.zrange(pool, 0, -1) == members
        assert int(b.redis.hget(b.key("wpoolstat:" + BASE_IMAGE), "warm") or 0) == 0
        # a create of the pool's runtime still takes the member
        r = osb.create()
        assert r in members, (r, members)
        assert DOCKER.inspect("sb-" + r)["HostConfig"]["Runtime"] == "sandbox-runc"
        osb.delete(r)
    finally:
        osb.delete(g)
