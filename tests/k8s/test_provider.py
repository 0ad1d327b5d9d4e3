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

The agent cannot answer on TCP before the agent-tcp branch lands (`--listen-tcp`): these tests run
with KUBERNETES_AGENT=0, the pod's command its entrypoint (docs/KUBERNETES.md). The agent's Pod
layout is covered by tests/unit/test_kubernetes_json.c.

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
from brokerlib import Broker, Services, wait_until  # noqa: E402
from sdklib import API_KEYS_ENV, OSB, check_osb_error  # noqa: E402
from test_cluster import IMAGE, Api, read_env, start_cluster, stop_cluster  # noqa: E402

AGENT_IMAGE = "sandbox-broker/agent:latest"
NS = "sbk-it"
L = "sandbox-broker.io/"

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the cluster needs root")


@pytest.fixture(scope="module")
def cluster():
    reuse = os.environ.get("K8S_TEST_CLUSTER")  # a running cluster's state dir (development)
    if reuse:
        env = read_env(os.path.join(reuse, "cluster.env"))
        c = {"state": reuse, "env": env, "api": Api(env)}
        c["api"].call("POST", "/api/v1/namespaces", {"metadata": {"name": NS}})
        yield c
        return
    c, up = start_cluster((IMAGE, AGENT_IMAGE))
    try:
        assert up.returncode == 0, up.stderr[-4000:]
        api = c["api"]
        code, body = api.call("POST", "/api/v1/namespaces", {"metadata": {"name": NS}})
        assert code == 201, body
        yield c
    finally:
        stop_cluster(c)


@pytest.fixture(scope="module")
def services(cluster):
    root = os.path.join(cluster["state"], "it")
    os.makedirs(root, exist_ok=True)
    svc = Services(root)
    try:
        svc.up()
        yield svc
    finally:
        svc.down()


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
    the agent with --listen-tcp. With an agent that has the TCP transport the pod runs and the
    broker writes AGENT_DIR/<pod>.tcp (its IP, the port, the pod's key) and removes it with the
    pod; with one that does not yet (before the agent-tcp branch) the agent refuses the option, the
    pod ends, and the create fails with nothing left behind: no pod, no marker, no run directory."""
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
        sb = wait_until(lambda: (lambda s: s if s["status"]["state"] in ("Running", "Failed") else None)(
            alpha.get(sid).json), 90, 0.2, "Running or Failed")
        name = "sb-" + sid
        marker = os.path.join(agent_dir, name + ".tcp")
        if sb["status"]["state"] == "Running":
            pod = pod_of(api, sid)
            key = [e["value"] for e in pod["spec"]["containers"][0]["env"] if e["name"] == "SANDBOX_AGENT_KEY"]
            assert len(key) == 1 and len(key[0]) == 64, key
            with open(marker) as f:
                assert f.read() == "%s 7070 %s\n" % (pod["status"]["podIP"], key[0])
            assert os.stat(marker).st_mode & 0o777 == 0o600
            assert os.stat(os.path.join(agent_dir, name)).st_mode & 0o777 == 0o700
            assert alpha.delete(sid).status == 204
            wait_until(lambda: pod_of(api, sid) is None, 60, 0.2, "pod gone")
        else:
            assert "ended" in sb["status"]["message"], sb
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
