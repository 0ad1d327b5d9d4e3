"""Chaos on Kubernetes (issue 26's proof): what a crash or an outage must not leave behind.

- the supervisor SIGKILLed (by its PID) while it creates a sandbox: its pod is POSTed, the lease
  not granted yet. After the supervisor's restart the ticket is not lost (the lease is granted,
  on a sandbox that runs commands), no pod is left without a record (the one of the killed create
  is removed, or is the lease's), and no record lies (each Running record has a running pod, no
  record is stuck creating). Another user's lease, made before, runs on throughout.
- the API server SIGKILLed (by the PID k8s-up recorded) and started again with the same arguments
  and environment, while sandboxes run and one is being created: the supervisor's watch follows
  again (from its last resourceVersion, or a fresh list after a 410), so a pod deleted behind our
  back afterwards turns its record Failed (RECONCILE_MS is ten minutes here: not the reconciler);
  the create in flight ends Running, or Failed with no pod left; the running sandboxes are
  untouched and still run commands; nothing is orphaned.
"""

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "integration"))

import sandboxlib  # noqa: E402
from brokerlib import wait_until  # noqa: E402
from k8slib import NS, PodView  # noqa: E402
from sandboxlib import SB, check_sandbox_lease  # noqa: E402
from sdklib import OSB  # noqa: E402
from test_cluster import IMAGE  # noqa: E402

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the cluster needs root")


@pytest.fixture
def chaos_broker(k8s_broker, monkeypatch):
    monkeypatch.setattr(sandboxlib, "LEASE_PROVIDER", "kubernetes")

    def factory(**env):
        cfg = dict(SANDBOX_IMAGE=IMAGE, BROKER_CAPACITY=6, IDLE_POLICY="delete",
                   RECONCILE_MS=600000)
        cfg.update(env)
        return SB(k8s_broker(**cfg))
    return factory


def records(sb):
    """{sandbox id: record} of this broker."""
    out = {}
    for k in sb.b.redis.scan_iter(sb.b.key("sandbox:*")):
        k = k.decode() if isinstance(k, bytes) else k
        sid = k.rsplit(":", 1)[1]
        if len(sid) == 32:
            rec = sb.b.redis.hgetall(k)
            if rec:
                out[sid] = rec
    return out


def consistent(sb):
    """None when every pod of this broker has a record that says it runs, every Running record has
    a running pod, and no record is between states; else what is wrong."""
    pods = {c["Labels"]["io.sandbox-broker.sandbox-id"]: c["State"]
            for c in sb.containers()}
    members = set(sb.b.redis.zrange(sb.b.key("wpool:all"), 0, -1))
    recs = records(sb)
    wrong = []
    for sid, st in pods.items():
        if sid in members:
            continue
        rec = recs.get(sid)
        if rec is None:
            wrong.append("pod sb-%s (%s) without a record" % (sid, st))
        elif rec.get("state") == "Running" and st != "running":
            wrong.append("record %s Running, pod %s" % (sid, st))
        elif rec.get("state") in ("Terminated", "Failed") and st == "running":
            wrong.append("record %s %s, pod running" % (sid, rec.get("state")))
    for sid, rec in recs.items():
        if rec.get("state") == "Running" and sid not in pods:
            wrong.append("record %s Running without a pod" % sid)
        if rec.get("state") not in ("Running", "Terminated", "Failed", "Stopped", "Paused"):
            wrong.append("record %s %s" % (sid, rec.get("state")))
    return "; ".join(wrong) or None


def converge(sb, timeout=60):
    last = [None]

    def ok():
        last[0] = consistent(sb)
        return last[0] is None
    try:
        wait_until(ok, timeout, 0.5, "pods and records agree")
    except AssertionError as e:
        raise AssertionError("%s: %s" % (e, last[0]))


def acquire_in_background(sb, user):
    """acquire_raw in a thread: {"r": the answer} when it comes."""
    out = {}
    t = threading.Thread(target=lambda: out.update(r=sb.acquire_raw(user, "s1")), daemon=True)
    t.start()
    return t, out


def lease_of(sb, answer):
    r = answer["r"]
    if r.status == 200:
        return r.json.get("lease", r.json)
    assert r.status == 202, r
    return sb.poll_lease(r.json["ticketId"], timeout=120)


def test_supervisor_sigkilled_mid_create_loses_no_ticket_and_leaves_no_orphan(chaos_broker):
    sb = chaos_broker()
    other = check_sandbox_lease(sb.acquire("bravo", "s1"))
    before = {c["Id"] for c in sb.containers()}
    t, out = acquire_in_background(sb, "alpha")
    # the create's pod POSTed (its name is new), the lease not yet granted: SIGKILL, by PID
    new = wait_until(lambda: [c for c in sb.containers() if c["Id"] not in before], 60, 0.005,
                     "the create's pod POSTed")
    pid = sb.b.pid("supervisor")
    os.kill(pid, signal.SIGKILL)
    print("supervisor %d SIGKILLed with pod %s %s" % (pid, new[0]["Id"], new[0]["State"]))
    killed_sid = new[0]["Labels"]["io.sandbox-broker.sandbox-id"]
    # meanwhile the other user's sandbox runs commands (the relay and the agent need no supervisor)
    assert sb.run(other, "echo still")["stdout"] == "still\n"
    sb.b.start("supervisor")
    t.join(120)
    assert "r" in out, "acquire never answered"
    lease = check_sandbox_lease(lease_of(sb, out))
    assert lease["userId"] == "alpha"
    res = sb.run(lease, "hostname")
    assert res["stdout"] == "sb-%s\n" % lease["sandboxId"], res
    print("lease granted on %s (the killed create's pod: %s)" % (lease["sandboxId"], killed_sid))
    converge(sb, 90)
    if killed_sid != lease["sandboxId"]:
        sb.wait_container_state(killed_sid, None, timeout=60)
    assert sb.run(other, "hostname")["stdout"] == "sb-%s\n" % other["sandboxId"]
    sb.release("alpha", "s1")
    sb.release("bravo", "s1")
    for s in (lease["sandboxId"], other["sandboxId"]):
        sb.wait_container_state(s, None, timeout=60)
    converge(sb, 30)


# ---- the API server restarted ----------------------------------------------------------------

def proc_start(pid):
    with open("/proc/%d/stat" % pid) as f:
        return f.read().rsplit(")", 1)[1].split()[19]


def restart_apiserver(cluster, down_s):
    """SIGKILL kube-apiserver by the PID k8s-up recorded (STATE_DIR/pids/kube-apiserver: PID and
    start time, checked), wait down_s, start it again as k8s-up did (same argv, environment and
    working directory, its own session, its log appended) and record the new PID for k8s-down.
    Returns when /readyz answers."""
    state = cluster["state"]
    rec = os.path.join(state, "pids", "kube-apiserver")
    pid, start = open(rec).read().split()
    pid = int(pid)
    assert proc_start(pid) == start, "the recorded kube-apiserver is not the one running"
    argv = open("/proc/%d/cmdline" % pid, "rb").read().split(b"\0")[:-1]
    env = dict(e.split(b"=", 1) for e in open("/proc/%d/environ" % pid, "rb").read().split(b"\0") if b"=" in e)
    cwd = os.readlink("/proc/%d/cwd" % pid)
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: not os.path.exists("/proc/%d" % pid) or
               open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()[0] == "Z",
               10, 0.02, "kube-apiserver gone")
    time.sleep(down_s)
    log = open(os.path.join(state, "logs", "kube-apiserver.log"), "ab")
    p = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=log,
                         stderr=subprocess.STDOUT, start_new_session=True)
    log.close()
    with open(rec + ".tmp", "w") as f:
        f.write("%d %s\n" % (p.pid, proc_start(p.pid)))
    os.rename(rec + ".tmp", rec)
    t0 = time.monotonic()
    wait_until(lambda: _answers(cluster), 120, 0.2, "the API server back")
    return p, time.monotonic() - t0


def _answers(cluster):
    try:
        return cluster["api"].call("GET", "/api/v1/namespaces/%s/pods?limit=1" % NS)[0] == 200
    except Exception:  # refused, reset, or not JSON while it starts
        return False


def test_api_server_restarted_the_watch_follows_again_and_nothing_is_orphaned(chaos_broker, cluster):
    if os.environ.get("K8S_TEST_CLUSTER") and os.environ.get("K8S_TEST_NO_APISERVER_KILL") == "1":
        pytest.skip("K8S_TEST_NO_APISERVER_KILL=1")
    sb = chaos_broker()
    alpha, bravo = OSB(sb.b, "alpha"), OSB(sb.b, "bravo")
    body = {"image": {"uri": IMAGE}, "entrypoint": ["sleep", "3600"], "timeout": 600,
            "resourceLimits": {"cpu": "250m", "memory": "128Mi"}}
    running = []
    for o in (alpha, alpha, bravo):
        r = o.create_raw(body)
        assert r.status == 202, r
        o.wait_state(r.json["id"], "Running", timeout=120)
        running.append((o, r.json["id"]))
    lease = check_sandbox_lease(sb.acquire("carol", "s1"))
    before = {c["Id"] for c in sb.containers()}
    # one more being created when the API server goes
    r = alpha.create_raw(body)
    assert r.status == 202, r
    inflight = r.json["id"]
    wait_until(lambda: [c for c in sb.containers() if c["Id"] not in before], 60, 0.005,
               "the create's pod POSTed")
    p, took = restart_apiserver(cluster, down_s=1)
    print("kube-apiserver restarted (pid %d), answering %.1f s after its start" % (p.pid, took))

    # the create in flight: Running, or Failed with its pod removed; never a lie
    st = wait_until(lambda: (lambda s: s if s in ("Running", "Failed") else None)(alpha.state(inflight)["state"]),
                    120, 0.2, "the create in flight settled")
    print("the create in flight: %s" % st)
    if st == "Failed":
        sb.wait_container_state(inflight, None, timeout=60)
    # the sandboxes that ran still run, and run commands
    for o, s in running:
        assert o.state(s)["state"] == "Running", s
    assert sb.run(lease, "hostname")["stdout"] == "sb-%s\n" % lease["sandboxId"]
    converge(sb, 60)

    # the watch follows again: a pod deleted behind our back now is Failed within seconds
    o, victim = running[1]
    code, _ = cluster["api"].call("DELETE", "/api/v1/namespaces/%s/pods/sb-%s" % (NS, victim),
                                  {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0})
    assert code == 200
    t0 = time.monotonic()
    wait_until(lambda: o.state(victim)["state"] == "Failed", 30, 0.1, "the deleted pod's record Failed")
    print("after the restart, pod deleted -> record Failed: %.2f s" % (time.monotonic() - t0))
    assert bravo.state(running[2][1])["state"] == "Running"
    converge(sb, 30)
    for o, s in running + [(alpha, inflight)]:
        o.delete(s)
    sb.release("carol", "s1")
    wait_until(lambda: not PodView(cluster["api"]).pods(sb.prefix), 60, 0.2, "no pod left")
    converge(sb, 30)
