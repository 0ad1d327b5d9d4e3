"""Sandboxes under gVisor (SANDBOX_RUNTIME=runsc; Debian's runsc, registered in
dockerd by scripts/docker-up with --network=none; docs/OPERATIONS.md, "gVisor").

With Debian 12's runsc (release 20221219) the sandbox-agent's socket cannot be
served from inside gVisor (docs/OPERATIONS.md says why), so a gVisor sandbox
runs without the agent (SANDBOX_AGENT= : commands through `docker exec`, PID 1
docker-init), and the file API's uploads, staged by Docker in the container's
/tmp, do not reach gVisor's own /tmp. What works is proven here: commands,
gVisor's own kernel answering, no interface but the loopback, a workspace kept
over stop/start."""

import platform

from sandboxlib import DOCKER, docker_broker, require_docker  # noqa: F401

require_docker()


def test_runsc_is_registered():
    st, info = DOCKER.call("GET", "/info")
    assert st == 200, (st, info)
    assert "runsc" in (info.get("Runtimes") or {}), \
        "scripts/docker-up registers runsc (Debian's runsc package)"


def test_commands_and_files_under_gvisor(docker_broker):
    sb = docker_broker(SANDBOX_RUNTIME="runsc", SANDBOX_AGENT="")
    lease = sb.acquire("u1", "s1")
    sid = lease["sandboxId"]
    c = sb.container(sid)
    assert c["HostConfig"]["Runtime"] == "runsc", c["HostConfig"]
    r = sb.run(lease, "uname -r; echo err >&2; exit 4")
    assert r["exitCode"] == 4 and r["stderr"] == "err\n", r
    # gVisor's Sentry reports a kernel of its own, not the host's
    assert r["stdout"].strip() and r["stdout"].strip() != platform.release(), r
    # a file made by a command is there for the next one
    r = sb.run(lease, "echo gvisor > /workspace/g.txt; cat /workspace/g.txt")
    assert r["stdout"] == "gvisor\n", r
    # no interface but loopback
    r = sb.run(lease, "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '")
    assert r["stdout"].split() == ["lo"], r
    # stop and start again keep the workspace
    assert sb.stop(lease).status == 200
    assert sb.start(lease).status == 200
    r = sb.run(lease, "cat /workspace/g.txt")
    assert r["stdout"] == "gvisor\n", r


# ------------------------------------------------- one runtime per sandbox
#
# SANDBOX_RUNTIMES lets a create choose its runtime with
# `extensions: {"runtime": "runsc"}` (docs/OPENSANDBOX.md, "Runtimes"); the
# broker keeps its agent for the others. A runsc sandbox is made without the
# agent (what the tests above do globally with SANDBOX_AGENT=): commands
# through `docker exec`, no egress (a networkPolicy is 400), no endpoints but
# execd's (501).

import json  # noqa: E402

import pytest  # noqa: E402

from sandboxlib import SB  # noqa: E402
from sdklib import OSB, check_osb_error, start_osb_broker  # noqa: E402
from test_execd import Execd  # noqa: E402

AGENT_LABEL = "io.sandbox-broker.agent"


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


def test_osb_create_picks_runsc_per_sandbox_beside_runc(rb):
    osb = OSB(rb, "alpha")
    g = osb.create(extensions={"runtime": "runsc"})
    r = osb.create()  # SANDBOX_RUNTIME: sandbox-runc, with the agent
    try:
        # both at once, each in its own runtime
        assert osb.state(g)["state"] == "Running" and osb.state(r)["state"] == "Running"
        cg, cr = DOCKER.inspect("sb-" + g), DOCKER.inspect("sb-" + r)
        assert cg["HostConfig"]["Runtime"] == "runsc", cg["HostConfig"]
        assert cr["HostConfig"]["Runtime"] == "sandbox-runc", cr["HostConfig"]
        assert not (cg["Config"]["Labels"] or {}).get(AGENT_LABEL), cg["Config"]["Labels"]
        assert cr["Config"]["Labels"].get(AGENT_LABEL) == "1", cr["Config"]["Labels"]
        assert rb.redis.hget(rb.key("sandbox:%s" % g), "runtime") == "runsc"
        assert rb.redis.hget(rb.key("sandbox:%s" % r), "runtime") == "sandbox-runc"
        # gVisor's kernel answers in one, the host's in the other
        xg, xr = _execd(rb, osb, g), _execd(rb, osb, r)
        out = _run(xg, "uname -r; dmesg | head -n 3")
        assert "gVisor" in out and platform.release() not in out, out
        assert _run(xr, "uname -r").strip() == platform.release()
        assert _run(xg, "echo hi > /tmp/x; cat /tmp/x") == "hi\n"
        # no agent, no egress: the record says deny-all, and what needs the
        # agent is 501 naming the runtime
        assert json.loads(rb.redis.hget(rb.key("sandbox:%s" % g), "egress_policy")) == \
            {"defaultAction": "deny", "egress": []}
        for port in (18080, 8080):
            e = check_osb_error(osb.endpoint(g, port), 501)
            assert "not available under runtime runsc" in e["message"], e
        st, _, body = xg.json("GET", "/policy", port=18080)
        assert st == 501 and "runtime runsc" in body["message"], (st, body)
        st, _, body = xg.json("PATCH", "/policy", [{"action": "allow", "target": "a.test"}],
                              port=18080)
        assert st == 501, (st, body)
        st, _, _ = xg.request("GET", "/", port=8080)
        assert st == 501, st
        # the runc sandbox keeps them
        assert osb.endpoint(r, 18080).status == 200
        st, _, body = xr.json("GET", "/policy", port=18080)
        assert st == 200, (st, body)
    finally:
        osb.delete(g)
        osb.delete(r)


@pytest.mark.parametrize("body,want", [
    ({"extensions": {"runtime": "kata"}},
     'extensions.runtime: "kata" is not an allowed runtime (allowed: sandbox-runc, runsc)'),
    ({"extensions": {"runtime": 1}}, "extensions.runtime: a non-string"),
    ({"extensions": {"runtime": "runsc"},
      "networkPolicy": {"defaultAction": "deny", "egress": [{"action": "allow", "target": "a.test"}]}},
     "networkPolicy: egress is not available under runtime runsc"),
])
def test_osb_create_refusals_make_nothing(rb, body, want):
    osb = OSB(rb, "alpha")
    before = set(rb.redis.zrange(rb.key("sandboxes"), 0, -1))
    containers = {c["Id"] for c in DOCKER.list(prefix=rb.prefix)}
    full = {"image": {"uri": "sandbox-broker/base:latest"}, "entrypoint": ["sleep", "infinity"]}
    full.update(body)
    e = check_osb_error(osb.create_raw(full), 400)
    assert want in e["message"], e
    assert set(rb.redis.zrange(rb.key("sandboxes"), 0, -1)) == before
    assert {c["Id"] for c in DOCKER.list(prefix=rb.prefix)} == containers


def test_lease_mode_runtime(docker_broker):
    """SANDBOX_RUNTIME_<MODE>: user_shared leases under runsc, exclusive
    ones under SANDBOX_RUNTIME, with the agent as configured."""
    default = {"defaultAction": "deny", "egress": [{"action": "allow", "target": "a.test"}]}
    sb = docker_broker(BROKER_CAPACITY=2, SANDBOX_RUNTIMES="runsc",
                       SANDBOX_RUNTIME_USER_SHARED="runsc", EGRESS_DEFAULT=json.dumps(default))
    lg = sb.acquire("u1", "s1", mode="user_shared")
    lr = sb.acquire("u2", "s1", mode="exclusive")
    cg, cr = sb.container(lg["sandboxId"]), sb.container(lr["sandboxId"])
    assert cg["HostConfig"]["Runtime"] == "runsc", cg["HostConfig"]
    assert cr["HostConfig"]["Runtime"] == "sandbox-runc", cr["HostConfig"]
    assert not (cg["Config"]["Labels"] or {}).get(AGENT_LABEL)
    assert sb.b.redis.hget(sb.b.key("sandbox:%s" % lg["sandboxId"]), "runtime") == "runsc"
    r = sb.run(lg, "dmesg | head -n 3; exit 3")
    assert r["exitCode"] == 3 and "gVisor" in r["stdout"], r
    r = sb.run(lr, "uname -r")
    assert r["stdout"].strip() == platform.release(), r
    # no agent, no egress: the runsc record says deny-all, the other the default
    pol = lambda lease: json.loads(sb.b.redis.hget(sb.b.key("sandbox:%s" % lease["sandboxId"]),  # noqa: E731
                                                   "egress_policy"))
    assert pol(lg) == {"defaultAction": "deny", "egress": []}
    assert pol(lr) == default
    # a stop and start of the agentless one with an agent configured: no
    # wait for an agent that is not there, the workspace kept
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
