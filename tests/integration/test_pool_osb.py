"""OpenSandbox creates from the warm pool (issue 13; docs/OPENSANDBOX.md "Creates
from the warm pool"): a create whose image has a pool takes a member in the
script that stores its record (the sandbox gets the member's id), answers
Running at once, with the request's limits applied by a container update
(HostConfig), its env in every command, and its entrypoint started by the
agent as the sandbox's main process; an empty pool is a cold create. Raw
HTTP and the official Python SDK (SandboxSync)."""

import datetime
import time

from brokerlib import wait_until
from sandboxlib import BASE_IMAGE, DOCKER, SB, require_docker
from sdklib import KEY, OSB, python_sdk_python, start_osb_broker
from test_execd import Execd

require_docker()

CPU_NANO = 250 * 1000000
MEM = 128 * 1024 * 1024


def pool_broker(request, services, it_root, size, **env):
    return start_osb_broker(request, services, it_root, POOL="%s:%d" % (BASE_IMAGE, size),
                            BROKER_CAPACITY=6, IDLE_POLICY="delete", RECONCILE_MS=1000, **env)


def ready_ids(b):
    return b.redis.zrange(b.key("wpool:" + BASE_IMAGE), 0, -1)


def wait_full(b, n, timeout=60):
    return wait_until(lambda: len(ready_ids(b)) >= n and ready_ids(b), timeout, 0.1,
                      "pool filled to %d" % n)


def pool_stat(b):
    return b.redis.hgetall(b.key("wpoolstat:" + BASE_IMAGE))


def body(entrypoint=("sleep", "7654321"), env=None):
    return {"image": {"uri": BASE_IMAGE}, "entrypoint": list(entrypoint), "timeout": 600,
            "resourceLimits": {"cpu": "250m", "memory": "128Mi"},
            "env": env if env is not None else {"POOL_TEST_VAR": "from-the-create", "HOME": "/root"},
            "metadata": {"team": "pool"}}


def execd(b, osb, sid):
    r = osb.endpoint(sid, 44772)
    assert r.status == 200, r
    return Execd(SB(b), sid, r.json["headers"]["X-EXECD-ACCESS-TOKEN"])


def run(ex, command):
    st, _, events = ex.command_stream({"command": command})
    assert st == 200, events
    out = "".join(e["text"] for e in events if e["type"] == "stdout")
    done = [e for e in events if e["type"] == "execution_complete"]
    assert done, events
    return out


def processes(sid):
    st, top = DOCKER.call("GET", "/containers/sb-%s/top?ps_args=-eo%%20pid,args" % sid)
    assert st == 200, (st, top)
    return [p[-1] for p in top["Processes"]]


def check_applied(b, osb, sid, entry="sleep 7654321"):
    hc = DOCKER.inspect("sb-" + sid)["HostConfig"]
    assert hc["NanoCpus"] == CPU_NANO and hc["Memory"] == MEM, hc
    ex = execd(b, osb, sid)
    env = run(ex, "env")
    assert "POOL_TEST_VAR=from-the-create" in env.splitlines(), env
    # a command's own envs win over the create's
    st, _, events = ex.command_stream({"command": "echo $POOL_TEST_VAR",
                                       "envs": {"POOL_TEST_VAR": "own"}})
    assert "".join(e["text"] for e in events if e["type"] == "stdout").strip() == "own", events
    assert any(p == entry for p in processes(sid)), processes(sid)


def test_create_takes_a_member_applies_the_request_and_refills(request, services, it_root):
    b = pool_broker(request, services, it_root, 1)
    request.node._it_brokers = [b]
    osb = OSB(b, "alpha")
    (member,) = wait_full(b, 1)
    assert DOCKER.inspect("sb-" + member)["HostConfig"]["NanoCpus"] != CPU_NANO
    t0 = time.monotonic()
    r = osb.create_raw(body())
    ms = (time.monotonic() - t0) * 1000
    assert r.status == 202, r
    sid = r.json["id"]
    print("warm create answered Running in %.1f ms" % ms)
    assert sid == member, (sid, member)
    assert r.json["status"]["state"] == "Running", r.json
    assert r.headers.get("Location") == "/v1/sandboxes/" + sid
    g = osb.get(sid)
    assert g.status == 200 and g.json["metadata"] == {"team": "pool"}, g
    assert g.json["expiresAt"] and g.json["status"]["state"] == "Running", g.json
    # the spec's AllocationSummary names the pool (as POOL does) on GET
    assert g.json["allocation"] == {"mode": "pool", "poolRef": BASE_IMAGE, "state": "allocated"}, g.json
    assert "allocation" not in r.json, r.json  # not a member of CreateSandboxResponse
    rec = b.redis.hgetall(b.key("sandbox:" + sid))
    assert rec["tenant"] == "alpha" and rec["poolLimits"], rec
    assert not b.redis.exists(b.key("wpoolm:" + sid))
    check_applied(b, osb, sid)
    assert pool_stat(b).get("warm") == "1", pool_stat(b)
    # the pool makes a new member; the claimed one is the sandbox's
    wait_until(lambda: ready_ids(b) and ready_ids(b)[0] != sid, 60, 0.1, "pool refilled")
    # the entrypoint is the sandbox's main process: its exit ends the sandbox
    ex = execd(b, osb, sid)
    ex.command_stream({"command": "pkill -x sleep"})  # may end with the sandbox
    st = wait_until(lambda: osb.state(sid)["state"] == "Failed" and osb.state(sid), 30, 0.2,
                    "sandbox Failed when its entrypoint ends")
    assert st["reason"] == "ENTRYPOINT_EXITED", st


def test_empty_pool_is_a_cold_create(request, services, it_root):
    # a pool of size 0: the image is pooled (claims are counted) but never stocked
    b = pool_broker(request, services, it_root, 0)
    request.node._it_brokers = [b]
    osb = OSB(b, "bravo")
    r = osb.create_raw(body())
    assert r.status == 202 and r.json["status"]["state"] == "Pending", r
    sid = r.json["id"]
    osb.wait_state(sid, "Running")
    rec = b.redis.hgetall(b.key("sandbox:" + sid))
    assert not rec.get("poolLimits"), rec
    assert "allocation" not in osb.get(sid).json
    check_applied(b, osb, sid)
    stat = pool_stat(b)
    assert stat.get("cold") == "1" and not stat.get("warm"), stat
    assert osb.delete(sid).status == 204


def test_a_failing_entrypoint_fails_the_sandbox(request, services, it_root):
    b = pool_broker(request, services, it_root, 1)
    request.node._it_brokers = [b]
    osb = OSB(b, "charlie")
    (member,) = wait_full(b, 1)
    r = osb.create_raw(body(entrypoint=("/no/such/program",)))
    assert r.status == 202 and r.json["id"] == member, r
    st = wait_until(lambda: osb.state(member)["state"] == "Failed" and osb.state(member), 30, 0.2,
                    "Failed")
    assert "entrypoint" in st["message"], st
    wait_until(lambda: DOCKER.state("sb-" + member) is None, 30, 0.2, "container removed")


def test_python_sdk_create_from_the_pool(request, services, it_root):
    python_sdk_python()
    from opensandbox import SandboxSync
    from opensandbox.config import ConnectionConfigSync

    b = pool_broker(request, services, it_root, 1)
    request.node._it_brokers = [b]
    config = ConnectionConfigSync(domain="127.0.0.1:%d" % b.port, api_key=KEY["delta"],
                                  protocol="http", request_timeout=datetime.timedelta(seconds=60))
    (member,) = wait_full(b, 1)
    t0 = time.monotonic()
    sb = SandboxSync.create(BASE_IMAGE, connection_config=config, entrypoint=["sleep", "7654321"],
                            env={"POOL_TEST_VAR": "from-the-sdk"},
                            resource={"cpu": "250m", "memory": "128Mi"})
    print("SDK create from the pool: %.1f ms" % ((time.monotonic() - t0) * 1000))
    try:
        assert sb.id == member, (sb.id, member)
        out = sb.commands.run("env").logs.stdout
        text = "".join(m.text for m in out)
        assert "POOL_TEST_VAR=from-the-sdk" in text, text
        hc = DOCKER.inspect("sb-" + member)["HostConfig"]
        assert hc["NanoCpus"] == CPU_NANO and hc["Memory"] == MEM, hc
        assert "sleep 7654321" in processes(member)
    finally:
        sb.kill()


def test_members_are_made_with_the_latest_claims_limits(request, services, it_root):
    # a claim asking for at least the default limits (the Python SDK's own
    # default is 1 CPU, 2 GiB) makes the pool's next members with them; a
    # like create then takes such a member: no container update is needed
    b = pool_broker(request, services, it_root, 2)
    request.node._it_brokers = [b]
    osb = OSB(b, "echo")
    wait_full(b, 2)
    want = "%d,%d,%d" % (10 ** 9, 1024 ** 3, 256)
    big = dict(body(), resourceLimits={"cpu": "1", "memory": "1Gi"})
    r = osb.create_raw(big)
    assert r.status == 202 and r.json["status"]["state"] == "Running", r
    first = r.json["id"]
    rec = b.redis.hgetall(b.key("sandbox:" + first))
    assert rec["poolLimits"] != want, rec  # a default member, updated
    assert DOCKER.inspect("sb-" + first)["HostConfig"]["NanoCpus"] == 10 ** 9
    assert pool_stat(b).get("lastLimits") == want, pool_stat(b)
    # the refill makes the new member with the claim's limits
    new = wait_until(lambda: [s for s in ready_ids(b)
                              if b.redis.hget(b.key("wpoolm:" + s), "limits") == want], 60, 0.1,
                     "a member made with the claim's limits")[0]
    hc = DOCKER.inspect("sb-" + new)["HostConfig"]
    assert hc["NanoCpus"] == 10 ** 9 and hc["Memory"] == 1024 ** 3, hc
    # a like create takes that member although an older one is ready
    assert len(ready_ids(b)) == 2 and ready_ids(b)[0] != new, ready_ids(b)
    r = osb.create_raw(big)
    assert r.status == 202 and r.json["id"] == new and r.json["status"]["state"] == "Running", r
    assert b.redis.hget(b.key("sandbox:" + new), "poolLimits") == want
    # a create below the defaults leaves the pool's limits at the defaults
    r = osb.create_raw(body())
    assert r.status == 202, r
    assert pool_stat(b).get("lastLimits") == "%d,%d,%d" % (CPU_NANO, MEM, 256)
    wait_until(lambda: len(ready_ids(b)) == 2 and all(
        b.redis.hget(b.key("wpoolm:" + s), "limits") != want or s == ready_ids(b)[0]
        for s in ready_ids(b)), 60, 0.1, "refilled with the default limits")
    for sid in (first, new, r.json["id"]):
        assert osb.delete(sid).status == 204
