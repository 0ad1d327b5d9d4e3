"""The Kubernetes provider (SANDBOX_PROVIDER=kubernetes, lib/providers/kubernetes/) driven through
the broker's real stack (brokerlib: nginx, the FastCGI handlers, the supervisor, Redis, Kafka on
free loopback ports) against the project's own test cluster (scripts/k8s-up, one per module, with
sandbox-broker/tiny and sandbox-broker/agent imported).

Two tenants of the OpenSandbox API: alpha makes sandboxes, bravo tries to reach them.
- a sandbox created by POST /v1/sandboxes is a Running Pod in the broker's namespace with our
  labels and annotations, its limits, restartPolicy Never, no ServiceAccount token, no service
  links, every capability dropped but the Docker provider's few, no privilege escalation; GET is
  Running; bravo's GET, pause and DELETE of it are 404 and change nothing; pause is a 501 JSON
  error that changes nothing; DELETE removes the pod;
- a pod deleted behind the broker's back (a REST DELETE with the admin certificate, as kubectl
  would) turns its record Failed through the supervisor's watch (RECONCILE_MS is ten minutes
  here: the reconciler cannot be what saw it), within a few seconds;
- the supervisor restarted follows the watch again: a pod deleted after the restart is seen too.

Two brokers on the cluster: `kb` with KUBERNETES_AGENT=0 (the pod's command its entrypoint;
commands 501) for the lifecycle and the watch, `ka` with the agent (KUBERNETES_AGENT=1, the
default) and the relay (sandbox-egress-relay --agent-dir, started by scripts/stack for
SANDBOX_PROVIDER=kubernetes):
- an OpenSandbox create, then commands through the execd route on the pod (plain, streamed line by
  line with the exit code, a file uploaded and downloaded byte-exact); bravo gets no endpoint, a
  wrong token or bravo's own token does nothing there;
- a lease acquire, then exec, write and read through the lease API; another user's lease id gets
  nothing of it;
- a pod deleted behind our back takes its marker, run directory and agent.sock with it;
- a marker rewritten with another key: the relay's handshake fails, the call is 502 "sandbox agent
  unreachable" and the command never runs; put back, the agent answers;
- k8s-up's firewall: from a pod, nothing of the host (a listener on 0.0.0.0, Redis, nginx, the
  kubelet at the bridge address) nor another pod's agent port answers; the relay still does.

Needs root, dockerd with sandbox-broker/tiny:latest and sandbox-broker/agent:latest
(scripts/build-images tiny, scripts/k8s-agent-image), the built broker (make), Redis, Kafka.
K8S_TEST_CLUSTER=STATE_DIR runs against a cluster already up (scripts/k8s-up with both images).
"""

import os
import sys
import time
import uuid

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "integration"))

import brokerlib  # noqa: E402
from brokerlib import Broker, wait_until  # noqa: E402
from sdklib import API_KEYS_ENV, OSB, check_osb_error  # noqa: E402
from test_cluster import IMAGE  # noqa: E402
from k8slib import AGENT_IMAGE, NS, L  # noqa: E402

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the cluster needs root")


@pytest.fixture(scope="module")
def kb(cluster, services):
    env = cluster["env"]
    b = Broker(services, os.path.join(cluster["state"], "it", "broker-" + uuid.uuid4().hex[:6]),
               SANDBOX_PROVIDER="kubernetes", BROKER_CAPACITY="4",
               OPENSANDBOX_API_KEYS=API_KEYS_ENV,
               KUBERNETES_API_URL=env["K8S_API"], KUBERNETES_CA_FILE=env["K8S_CA"],
               KUBERNETES_CERT_FILE=env["K8S_ADMIN_CERT"], KUBERNETES_KEY_FILE=env["K8S_ADMIN_KEY"],
               KUBERNETES_NAMESPACE=NS, KUBERNETES_IMAGE_PULL_POLICY="Never",
               KUBERNETES_AGENT="0", SANDBOX_IMAGE=IMAGE, RECONCILE_MS="600000",
               IDLE_POLICY="stop_keep")
    try:
        b.up()
        yield b
    finally:
        print(b.logs_tail(60))
        b.down()


def pods(api, prefix=None):
    code, body = api.call("GET", "/api/v1/namespaces/%s/pods?labelSelector=%smanaged%%3D1" % (NS, L))
    assert code == 200, body
    items = body["items"]
    if prefix is not None:
        items = [p for p in items
                 if p["metadata"]["annotations"].get(L + "prefix") == prefix]
    return items


def pod_of(api, sid):
    code, body = api.call("GET", "/api/v1/namespaces/%s/pods/sb-%s" % (NS, sid))
    return body if code == 200 else None


def create(o, **kw):
    body = {"image": {"uri": IMAGE}, "entrypoint": ["sleep", "3600"], "timeout": 600,
            "resourceLimits": {"cpu": "250m", "memory": "128Mi"}}
    body.update(kw)
    r = o.create_raw(body)
    assert r.status == 202, r
    return r.json["id"]


def test_create_is_a_running_pod_with_our_labels_and_limits(cluster, kb):
    api = cluster["api"]
    alpha, bravo = OSB(kb, "alpha"), OSB(kb, "bravo")
    t0 = time.monotonic()
    sid = create(alpha, env={"FOO": "bar"})
    sb = alpha.wait_state(sid, "Running", timeout=120)
    print("POST /v1/sandboxes -> Running: %.2f s" % (time.monotonic() - t0))
    assert sb["status"]["state"] == "Running"

    pod = pod_of(api, sid)
    assert pod is not None and pod["status"]["phase"] == "Running", pod
    md, spec = pod["metadata"], pod["spec"]
    assert md["labels"][L + "managed"] == "1"
    assert md["labels"][L + "sandbox-id"] == sid
    assert md["labels"][L + "agent"] == "0"
    assert md["labels"][L + "prefix-hash"].startswith("p")
    assert md["annotations"][L + "sandbox-id"] == sid
    assert md["annotations"][L + "prefix"] == kb.prefix
    assert spec["restartPolicy"] == "Never"
    assert spec["automountServiceAccountToken"] is False
    assert spec["enableServiceLinks"] is False
    c = spec["containers"][0]
    assert c["name"] == "sandbox" and c["image"] == IMAGE and c["imagePullPolicy"] == "Never"
    assert c["command"] == ["sleep", "3600"], c
    assert {"name": "FOO", "value": "bar"} in c["env"], c["env"]
    assert c["resources"]["limits"]["cpu"] == "250m", c["resources"]
    assert c["resources"]["limits"]["memory"] in ("134217728", "128Mi"), c["resources"]
    sc = c["securityContext"]
    assert sc["capabilities"]["drop"] == ["ALL"] and "NET_RAW" not in sc["capabilities"]["add"], sc
    assert sc["allowPrivilegeEscalation"] is False
    # no ServiceAccount token in the pod
    assert not [v for v in spec.get("volumes", []) if v.get("projected")], spec.get("volumes")

    # the other tenant: 404 on everything, nothing changes
    for r in (bravo.get(sid), bravo.pause(sid), bravo.delete(sid)):
        check_osb_error(r, 404)
    # pause: the backend cannot, a 501 JSON error, nothing changes
    r = alpha.pause(sid)
    check_osb_error(r, 501)
    assert "pause" in r.json["message"], r
    assert alpha.state(sid)["state"] == "Running"
    assert pod_of(api, sid)["status"]["phase"] == "Running"

    r = alpha.delete(sid)
    assert r.status == 204, r
    alpha.wait_state(sid, "Terminated", timeout=60)
    wait_until(lambda: pod_of(api, sid) is None, 60, 0.2, "pod sb-%s gone" % sid)
    assert not pods(api, kb.prefix), "no pod of this broker left"


def delete_behind_our_back(api, sid):
    code, body = api.call("DELETE", "/api/v1/namespaces/%s/pods/sb-%s" % (NS, sid),
                          {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0})
    assert code == 200, body
    return time.monotonic()


def test_pod_deleted_behind_our_back_fails_the_record(cluster, kb):
    api = cluster["api"]
    alpha, bravo = OSB(kb, "alpha"), OSB(kb, "bravo")
    sid = create(alpha)
    alpha.wait_state(sid, "Running", timeout=120)
    other = create(bravo)  # bravo's sandbox must not move
    bravo.wait_state(other, "Running", timeout=120)

    t0 = delete_behind_our_back(api, sid)
    sb = wait_until(lambda: (lambda s: s if s["status"]["state"] == "Failed" else None)(alpha.get(sid).json),
                    30, 0.1, "record Failed")
    took = time.monotonic() - t0
    print("pod deleted -> record Failed: %.2f s" % took)
    assert took < 10, took  # the watch: 2 s on an idle box; RECONCILE_MS is 10 minutes here
    assert sb["status"].get("reason"), sb
    assert bravo.state(other)["state"] == "Running"
    assert pod_of(api, other)["status"]["phase"] == "Running"

    # the supervisor restarted: it follows again from a fresh list
    kb.stop("supervisor")
    kb.start("supervisor")
    t0 = delete_behind_our_back(api, other)
    wait_until(lambda: bravo.state(other)["state"] == "Failed", 30, 0.1, "bravo's record Failed")
    print("after a supervisor restart, pod deleted -> record Failed: %.2f s" % (time.monotonic() - t0))
    for o, s in ((alpha, sid), (bravo, other)):
        o.delete(s)
    wait_until(lambda: not pods(api, kb.prefix), 60, 0.2, "no pod of this broker left")


def test_oom_killed_pod_fails_the_record_with_the_reason(cluster, kb):
    api = cluster["api"]
    alpha = OSB(kb, "alpha")
    # Running first, then the shell (the pod's main process) holds 256 MB in a
    # variable under a 64 MiB limit: the kernel kills it, the kubelet says OOMKilled
    sid = create(alpha, entrypoint=["sh", "-c", "sleep 3; x=$(head -c 268435456 /dev/zero | tr '\\0' a); sleep 3600"],
                 resourceLimits={"cpu": "500m", "memory": "64Mi"})
    alpha.wait_state(sid, "Running", timeout=120)

    def failed():
        sb = alpha.get(sid).json
        return sb if sb["status"]["state"] == "Failed" else None
    sb = wait_until(failed, 90, 0.1, "record Failed")
    pod = pod_of(api, sid)
    term = pod["status"]["containerStatuses"][0]["state"].get("terminated") if pod else None
    assert term and term["reason"] == "OOMKilled", pod and pod["status"]
    assert sb["status"]["reason"] == "OOM_KILLED", sb
    # the record moved at most a few seconds after the kubelet saw it
    seen = parse_iso(term["finishedAt"])
    moved = brokerlib.parse_iso_ms(sb["status"]["lastTransitionAt"]) / 1000.0
    print("container OOM killed -> record Failed: %.2f s" % (moved - seen))
    assert moved - seen < 10, (seen, moved)
    alpha.delete(sid)
    wait_until(lambda: pod_of(api, sid) is None, 60, 0.2, "pod sb-%s gone" % sid)


def parse_iso(s):
    """An API server timestamp (RFC 3339, seconds) as epoch seconds."""
    import calendar
    return calendar.timegm(time.strptime(s, "%Y-%m-%dT%H:%M:%SZ"))


def test_create_of_an_image_the_node_lacks_fails_at_once_and_leaves_no_pod(cluster, kb):
    api = cluster["api"]
    alpha = OSB(kb, "alpha")
    t0 = time.monotonic()
    sid = create(alpha, image={"uri": "sandbox-broker/not-imported:1"})

    def failed():
        sb = alpha.get(sid).json
        return sb if sb["status"]["state"] == "Failed" else None
    sb = wait_until(failed, 60, 0.2, "record Failed")
    took = time.monotonic() - t0
    print("create of a missing image -> Failed: %.2f s" % took)
    # the kubelet's reason, well before KUBERNETES_POD_WAIT_MS (60 s)
    assert "ErrImageNeverPull" in sb["status"]["message"], sb
    assert took < 45, took
    wait_until(lambda: pod_of(api, sid) is None, 60, 0.2, "pod sb-%s gone" % sid)


def test_with_the_agent_the_pod_runs_it_and_the_marker_follows_the_pod(cluster, services):
    """KUBERNETES_AGENT=1: the pod's init container copies the agent in and the pod's command is
    the agent with --listen-tcp; the pod runs and the broker writes AGENT_DIR/<pod>.tcp (its IP,
    the port, the pod's key) and removes it with the pod: no pod, no marker, no run directory."""
    env = cluster["env"]
    b = Broker(services, os.path.join(cluster["state"], "it", "broker-" + uuid.uuid4().hex[:6]),
               SANDBOX_PROVIDER="kubernetes", BROKER_CAPACITY="2", OPENSANDBOX_API_KEYS=API_KEYS_ENV,
               KUBERNETES_API_URL=env["K8S_API"], KUBERNETES_CA_FILE=env["K8S_CA"],
               KUBERNETES_CERT_FILE=env["K8S_ADMIN_CERT"], KUBERNETES_KEY_FILE=env["K8S_ADMIN_KEY"],
               KUBERNETES_NAMESPACE=NS, KUBERNETES_IMAGE_PULL_POLICY="Never",
               KUBERNETES_AGENT="1", KUBERNETES_AGENT_IMAGE=AGENT_IMAGE, SANDBOX_IMAGE=IMAGE,
               KUBERNETES_POD_WAIT_MS="30000")
    api = cluster["api"]
    try:
        b.up()
        agent_dir = os.path.join(b.state_dir, "agents")
        alpha = OSB(b, "alpha")
        sid = create(alpha)
        alpha.wait_state(sid, "Running", timeout=90)
        name = "sb-" + sid
        marker = os.path.join(agent_dir, name + ".tcp")
        pod = pod_of(api, sid)
        key = [e["value"] for e in pod["spec"]["containers"][0]["env"] if e["name"] == "SANDBOX_AGENT_KEY"]
        assert len(key) == 1 and len(key[0]) == 64, key
        with open(marker) as f:
            assert f.read() == "%s 7070 %s\n" % (pod["status"]["podIP"], key[0])
        assert os.stat(marker).st_mode & 0o777 == 0o600
        assert os.stat(os.path.join(agent_dir, name)).st_mode & 0o777 == 0o700
        assert alpha.delete(sid).status == 204
        wait_until(lambda: pod_of(api, sid) is None, 60, 0.2, "pod gone")
        assert not os.path.exists(marker)
        assert not os.path.exists(os.path.join(agent_dir, name))
        assert not pods(api, b.prefix)
    finally:
        print(b.logs_tail(40))
        b.down()


def labelled_pod(name, sid, prefix):
    """A pod as the provider labels them (what a crashed create, or another broker, leaves)."""
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": {L + "managed": "1", L + "sandbox-id": sid, L + "agent": "0"},
                         "annotations": {L + "sandbox-id": sid, L + "prefix": prefix}},
            "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 0,
                     "automountServiceAccountToken": False,
                     "containers": [{"name": "sandbox", "image": IMAGE, "imagePullPolicy": "Never",
                                     "command": ["sleep", "3600"]}]}}


def test_reconciler_removes_its_orphan_pods_and_only_its_own(cluster, kb):
    """A pod of this broker's prefix with no record (a create whose supervisor died after the POST)
    is removed by the reconciler (run at the supervisor's start); a pod of another broker's prefix
    in the same namespace is left alone."""
    api = cluster["api"]
    mine, theirs = uuid.uuid4().hex, uuid.uuid4().hex
    for name, sid, prefix in (("sb-" + mine, mine, kb.prefix), ("sb-" + theirs, theirs, "other-broker:")):
        code, body = api.call("POST", "/api/v1/namespaces/%s/pods" % NS, labelled_pod(name, sid, prefix))
        assert code == 201, body
    try:
        kb.stop("supervisor")
        kb.start("supervisor")
        wait_until(lambda: pod_of(api, mine) is None, 60, 0.2, "orphan pod removed")
        assert pod_of(api, theirs) is not None, "another broker's pod was touched"
        assert "removed orphan container sb-" + mine[:9] in kb.logs("supervisor")
    finally:
        for sid in (mine, theirs):
            api.call("DELETE", "/api/v1/namespaces/%s/pods/sb-%s" % (NS, sid), {"gracePeriodSeconds": 0})


def test_lease_acquire_is_a_pod_and_release_removes_it(cluster, kb):
    """The lease API on the same provider: an exclusive acquire gets a Running pod; exec (no agent)
    and stop are 501 and change nothing; the release's
    teardown (IDLE_POLICY=stop_keep here: a pod cannot be stopped and kept) removes the pod and the
    record ends Terminated, instead of a stop retried for ever."""
    from sandboxlib import SB
    api = cluster["api"]
    sb = SB(kb)
    lease = sb.acquire("k8s-user", "s1")
    sid = lease["sandboxId"]
    pod = pod_of(api, sid)
    assert pod is not None and pod["status"]["phase"] == "Running", pod
    assert pod["metadata"]["annotations"][L + "prefix"] == kb.prefix
    assert sb.record(sid)["state"] == "Running"
    # without the agent (KUBERNETES_AGENT=0) a command cannot run, and a pod cannot be stopped and
    # kept: 501 with the reason, nothing changes
    r = sb.exec(lease, ["true"])
    assert r.status == 501 and r.json["code"] == "NOT_IMPLEMENTED" and "agent" in r.json["message"], r
    r = sb.stop(lease)
    assert r.status == 501 and "stopped" in r.json["message"], r
    assert sb.record(sid)["state"] == "Running"
    assert pod_of(api, sid)["status"]["phase"] == "Running"
    sb.release("k8s-user", "s1")
    wait_until(lambda: pod_of(api, sid) is None, 60, 0.2, "pod sb-%s gone" % sid)
    wait_until(lambda: sb.record(sid).get("state") in ("Terminated", None), 60, 0.2, "record Terminated")


# ---- with the agent (KUBERNETES_AGENT=1, the default): the relay connects to each pod's agent ----

@pytest.fixture(scope="module")
def ka(cluster, services):
    """A broker whose pods run the agent (KUBERNETES_AGENT=1) and whose relay (scripts/stack starts
    sandbox-egress-relay --agent-dir AGENT_DIR for SANDBOX_PROVIDER=kubernetes) serves each pod's
    AGENT_DIR/<pod>/agent.sock by a TCP connection to the pod's agent, key-checked both ways."""
    env = cluster["env"]
    b = Broker(services, os.path.join(cluster["state"], "it", "broker-" + uuid.uuid4().hex[:6]),
               SANDBOX_PROVIDER="kubernetes", BROKER_CAPACITY="4", OPENSANDBOX_API_KEYS=API_KEYS_ENV,
               KUBERNETES_API_URL=env["K8S_API"], KUBERNETES_CA_FILE=env["K8S_CA"],
               KUBERNETES_CERT_FILE=env["K8S_ADMIN_CERT"], KUBERNETES_KEY_FILE=env["K8S_ADMIN_KEY"],
               KUBERNETES_NAMESPACE=NS, KUBERNETES_IMAGE_PULL_POLICY="Never",
               KUBERNETES_AGENT_IMAGE=AGENT_IMAGE, SANDBOX_IMAGE=IMAGE, RECONCILE_MS="600000",
               KUBERNETES_POD_WAIT_MS="60000", IDLE_POLICY="delete")
    try:
        b.up()
        with open("/proc/%d/cmdline" % b.pid("egress-relay")) as f:
            assert "--agent-dir" in f.read().split("\0")
        yield b
    finally:
        print(b.logs_tail(60))
        b.down()


def agent_paths(b, sid):
    d = os.path.join(b.state_dir, "agents")
    return os.path.join(d, "sb-%s.tcp" % sid), os.path.join(d, "sb-" + sid, "agent.sock")


def execd_of(b, osb, sid):
    from test_execd import Execd
    from sandboxlib import SB
    r = osb.endpoint(sid, 44772)
    assert r.status == 200, r
    return Execd(SB(b), sid, r.json["headers"]["X-EXECD-ACCESS-TOKEN"])


def stdout_of(events):
    return "".join(e.get("text", "") for e in events if e.get("type") == "stdout")


def agent_sandbox(b, osb, **kw):
    sid = create(osb, **kw)
    osb.wait_state(sid, "Running", timeout=120)
    marker, sock = agent_paths(b, sid)
    wait_until(lambda: os.path.exists(sock), 30, 0.1, "the relay's agent.sock for sb-" + sid)
    return sid, execd_of(b, osb, sid)


def test_agent_commands_streams_and_files_on_a_pod(cluster, ka):
    api = cluster["api"]
    alpha, bravo = OSB(ka, "alpha"), OSB(ka, "bravo")
    sid, ex = agent_sandbox(ka, alpha)
    pod = pod_of(api, sid)
    assert pod["metadata"]["labels"][L + "agent"] == "1"
    assert pod["spec"]["containers"][0]["command"][0] != "sleep", pod["spec"]["containers"][0]

    # a command through the execd route, on the pod
    st, _, events = ex.command_stream({"command": "echo hi; hostname"})
    assert st == 200, events
    assert stdout_of(events).split() == ["hi", "sb-" + sid], events
    assert any(e.get("type") == "execution_complete" for e in events), events

    # a streamed command: each line an event, in order, the exit code an error event
    st, _, events = ex.command_stream(
        {"command": "for i in 1 2 3 4 5; do echo line$i; sleep 0.2; done; echo oops >&2; exit 3"})
    assert st == 200, events
    assert [e["text"].strip() for e in events if e.get("type") == "stdout"] == \
        ["line%d" % i for i in range(1, 6)], events
    assert "oops" in "".join(e.get("text", "") for e in events if e.get("type") == "stderr")
    errs = [e for e in events if e.get("type") == "error"]
    assert errs and str(errs[0]["error"]["evalue"]) == "3", events
    ts = [e["_t"] for e in events if e.get("type") == "stdout"]
    assert ts[-1] - ts[0] > 0.3, ts  # streamed as they came (0.8 s of sleeps), not at the end

    # a file written through the files API, read back byte-exact and seen by a command
    from test_execd import multipart
    data = os.urandom(70000) + b"\nend\n"
    body, ctype = multipart([("/tmp/k8s-file.bin", data, {})])
    st, _, raw = ex.request("POST", "/files/upload", body, {"Content-Type": ctype})
    assert st == 200, raw
    st, _, raw = ex.request("GET", "/files/download?path=/tmp/k8s-file.bin")
    assert st == 200 and raw == data, (st, len(raw))
    st, _, events = ex.command_stream({"command": "wc -c < /tmp/k8s-file.bin"})
    assert stdout_of(events).strip() == str(len(data)), events

    # the other tenant: no endpoint, no token that works, its own sandbox's token is refused here
    check_osb_error(bravo.endpoint(sid, 44772), 404)
    st, _, _ = ex.request("GET", "/ping", token="not-the-token")
    assert st in (401, 404), st  # the broker does not say whether the sandbox exists
    other, bex = agent_sandbox(ka, bravo)
    st, _, _ = ex.request("POST", "/command", {"command": "touch /tmp/bravo-was-here"}, token=bex.token)
    assert st in (401, 403, 404), st
    st, _, events = ex.command_stream({"command": "ls /tmp/bravo-was-here 2>&1 || echo absent"})
    assert "absent" in stdout_of(events), events
    st, _, events = bex.command_stream({"command": "hostname"})
    assert stdout_of(events).strip() == "sb-" + other, events

    for o, s in ((alpha, sid), (bravo, other)):
        assert o.delete(s).status == 204
    wait_until(lambda: not pods(api, ka.prefix), 60, 0.2, "no pod of this broker left")


def test_lease_acquire_then_exec_through_the_agent(cluster, ka):
    from sandboxlib import SB
    api = cluster["api"]
    sb = SB(ka)
    lease = sb.acquire("k8s-user", "s1")
    sid = lease["sandboxId"]
    assert pod_of(api, sid)["metadata"]["labels"][L + "agent"] == "1"
    res = sb.run(lease, ["sh", "-c", "echo leased; hostname"])
    assert res["stdout"].split() == ["leased", "sb-" + sid], res
    assert sb.write(lease, "/tmp/l.txt", b"lease file\n").status == 200
    r = sb.read(lease, "/tmp/l.txt")
    assert r.status == 200, r
    # another user's lease: nothing of this sandbox
    other = sb.acquire("k8s-other", "s1")
    assert other["sandboxId"] != sid
    r = sb.exec(lease, ["touch", "/tmp/x"], lease_id=other["leaseId"])
    assert r.status in (403, 404, 409), r
    assert sb.run(lease, ["sh", "-c", "test -e /tmp/x && echo present || echo absent"])["stdout"] == "absent\n"
    sb.release("k8s-user", "s1")
    sb.release("k8s-other", "s1")
    wait_until(lambda: pod_of(api, sid) is None, 60, 0.2, "pod sb-%s gone" % sid)
    wait_until(lambda: not pods(api, ka.prefix), 60, 0.2, "no pod of this broker left")


def test_pod_deleted_removes_its_marker_and_agent_socket(cluster, ka):
    api = cluster["api"]
    alpha = OSB(ka, "alpha")
    sid, ex = agent_sandbox(ka, alpha)
    marker, sock = agent_paths(ka, sid)
    assert os.path.exists(marker) and os.path.exists(sock)
    delete_behind_our_back(api, sid)
    wait_until(lambda: alpha.state(sid)["state"] == "Failed", 30, 0.1, "record Failed")
    wait_until(lambda: not os.path.exists(marker) and not os.path.exists(sock), 30, 0.1,
               "marker and agent.sock gone")
    wait_until(lambda: not os.path.exists(os.path.dirname(sock)), 30, 0.1, "run directory gone")
    alpha.delete(sid)


def test_agent_answering_with_a_wrong_key_is_unreachable_and_gets_nothing(cluster, ka):
    """The marker rewritten with another key (as if another pod, or an impostor, held the address):
    the relay's handshake fails before a byte of the broker's is sent, the call fails "sandbox agent
    unreachable" and the command never runs; the marker put back, the agent answers again."""
    alpha = OSB(ka, "alpha")
    sid, ex = agent_sandbox(ka, alpha)
    marker, sock = agent_paths(ka, sid)
    with open(marker) as f:
        good = f.read()
    addr, port, key = good.split()
    wrong = "%s %s %s\n" % (addr, port, uuid.uuid4().hex + uuid.uuid4().hex)

    def put(line):
        tmp = marker + ".test"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, line.encode())
        os.close(fd)
        os.rename(tmp, marker)
    changed = "agent of sb-%s: marker changed" % sid
    before = ka.logs("egress-relay").count(changed)
    put(wrong)
    try:
        wait_until(lambda: ka.logs("egress-relay").count(changed) > before, 10, 0.05, "the relay re-read it")
        # the command route: the stream starts (init), then the agent's failure as its error event
        st, _, events = ex.command_stream({"command": "touch /tmp/reached; echo ran"})
        assert st == 200, events
        errs = [e for e in events if e.get("type") == "error"]
        assert errs and "sandbox agent unreachable" in " ".join(errs[0]["error"]["traceback"]), events
        assert stdout_of(events) == "", events
        # a plain call: a 5xx JSON error naming it
        st, _, raw = ex.request("GET", "/files/download?path=/etc/hostname")
        print("download with the wrong key:", st, raw[:300])
        assert st >= 500 and b"sandbox agent unreachable" in raw, (st, raw[:300])
        assert "handshake refused: not the sandbox's agent (wrong key)" in ka.logs("egress-relay")
    finally:
        put(good)

    def answers():
        st, _, events = ex.command_stream({"command": "test -e /tmp/reached && echo present || echo absent"})
        return stdout_of(events).strip() if st == 200 and stdout_of(events) else None
    assert wait_until(answers, 10, 0.2, "the agent answering again") == "absent"
    assert alpha.delete(sid).status == 204


def probe_script(targets):
    """A shell line for a pod: for each (ip, port), 'ip:port open' or 'ip:port closed'."""
    return "; ".join("if timeout 6 nc -w 3 %s %d </dev/null >/dev/null 2>&1; then echo %s:%d open; "
                     "else echo %s:%d closed; fi" % (ip, port, ip, port, ip, port)
                     for ip, port in targets)


def test_pods_reach_nothing_of_the_host_nor_each_other(cluster, ka, services):
    """k8s-up's firewall on the pod bridge (scripts/k8s/common.sh, k8s_firewall_up): from a pod,
    as root there, nothing of the host answers at the bridge address: not a service listening on
    every address (a listener of this test on 0.0.0.0, as a Redis or nginx bound so would be),
    not the stack's Redis and nginx ports, not the kubelet's API (which listens on the bridge
    address itself); another pod's agent port is closed to it too. The relay, which opens its
    connections from the host, still reaches every agent, and the pod reaches its own agent port
    (nc works there: a closed port is the firewall, not the probe)."""
    import socket
    import threading
    env = cluster["env"]
    bridge_ip = env["K8S_BRIDGE_IP"]
    with open(os.path.join(env["K8S_STATE_DIR"], "etc", "kubelet.yaml")) as f:
        kubelet_port = int([ln.split()[1] for ln in f if ln.startswith("port:")][0])
    lsn = socket.socket()
    lsn.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsn.bind(("0.0.0.0", 0))
    lsn.listen(16)
    port = lsn.getsockname()[1]
    peers = []

    def serve():
        while True:
            try:
                c, a = lsn.accept()
            except OSError:
                return
            peers.append(a[0])
            c.close()
    threading.Thread(target=serve, daemon=True).start()
    try:
        # the listener does answer at the bridge address (the host itself connects)
        socket.create_connection((bridge_ip, port), timeout=5).close()
        wait_until(lambda: bridge_ip in peers, 5, 0.05, "the host's own probe accepted")
        alpha, bravo = OSB(ka, "alpha"), OSB(ka, "bravo")
        sid, ex = agent_sandbox(ka, alpha)
        other, bex = agent_sandbox(ka, bravo)
        other_ip = pod_of(cluster["api"], other)["status"]["podIP"]
        targets = [("127.0.0.1", 7070), (bridge_ip, port), (bridge_ip, services.redis_port),
                   (bridge_ip, ka.port), (bridge_ip, kubelet_port), (other_ip, 7070)]
        st, _, events = ex.command_stream({"command": probe_script(targets)}, timeout=120)
        assert st == 200, events
        got = [ln.strip() for ln in stdout_of(events).replace("\r", "").split("\n") if ln.strip()]
        if len(got) != len(targets):  # events without their newline: one line per event
            got = [e["text"].strip() for e in events if e.get("type") == "stdout"]
        print("from pod sb-%s: %s" % (sid, got))
        assert got[0] == "127.0.0.1:7070 open", got  # the probe works
        assert got[1:] == ["%s:%d closed" % t for t in targets[1:]], got
        assert [p for p in peers if p != bridge_ip] == [], peers  # nothing from a pod got through
        # the relay (from the host) still reaches both agents
        for e, s in ((ex, sid), (bex, other)):
            st, _, events = e.command_stream({"command": "hostname"})
            assert stdout_of(events).strip() == "sb-" + s, events
        for o, s in ((alpha, sid), (bravo, other)):
            assert o.delete(s).status == 204
    finally:
        lsn.close()
