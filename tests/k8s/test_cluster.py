"""The test Kubernetes cluster (scripts/k8s-up / k8s-down, docs/KUBERNETES.md) on this host.

One cluster per module, in a temp state dir: k8s-up (building once into $K8S_CACHE if needed)
with sandbox-broker/tiny:latest imported; a namespace and its default ServiceAccount; a Pod of
that image (imagePullPolicy Never) made through the REST API with the admin client cert, Running
and Ready, its busybox httpd reached from the host by pod IP; the Pod deleted and gone. Then,
with a second Pod left running on purpose, k8s-down: the sysctls kubelet changes are back to
what they were before k8s-up, no process of the cluster is left (by PID and by any command line
naming the state dir), no mount remains under the state dir, the bridge and the cgroup root are
gone.

Needs root, dockerd with sandbox-broker/tiny:latest (scripts/build-images), Go, and the Debian
packages of scripts/deps-install. The first run builds Kubernetes (~8 min idle, much longer on a
loaded machine); later ones start a Ready node in seconds. K8S_TEST_KEEP=1 keeps the state dir.
"""

import json
import os
import shutil
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
import uuid

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
IMAGE = "sandbox-broker/tiny:latest"
SYSCTLS = ["vm.overcommit_memory", "vm.panic_on_oom", "kernel.panic", "kernel.panic_on_oops",
           "kernel.keys.root_maxkeys", "kernel.keys.root_maxbytes"] + \
    [k for k in ("net.bridge.bridge-nf-call-iptables", "net.bridge.bridge-nf-call-ip6tables")
     if os.path.exists("/proc/sys/" + k.replace(".", "/"))]  # k8s-up sets them (pod to pod filtered)

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the cluster needs root")


def read_sysctls():
    out = {}
    for k in SYSCTLS:
        with open("/proc/sys/" + k.replace(".", "/")) as f:
            out[k] = f.read().strip()
    return out


def read_env(path):
    env = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#") and "=" in line:
                k, v = line.split("=", 1)
                env[k] = v
    return env


def proc_start(pid):
    """Start time of a live PID (None for no process or a zombie)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(") ", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return None
    return None if fields[0] in ("Z", "X") else fields[19]


def mounts_under(path):
    found = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            mp = line.split()[4].replace("\\040", " ")
            if mp == path or mp.startswith(path + "/"):
                found.append(mp)
    return found


def procs_naming(text):
    """PIDs whose command line mentions text (the state dir): a catch-all for anything left."""
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == os.getpid() or proc_start(int(d)) is None:
            continue
        try:
            with open("/proc/%s/cmdline" % d, "rb") as f:
                if text.encode() in f.read():
                    pids.append(int(d))
        except OSError:
            pass
    return pids


def link_exists(name):
    return subprocess.run(["ip", "link", "show", name], capture_output=True).returncode == 0


class Api:
    """The API server through urllib, authenticated by the admin client certificate."""

    def __init__(self, env):
        self.base = env["K8S_API"]
        self.ctx = ssl.create_default_context(cafile=env["K8S_CA"])
        self.ctx.load_cert_chain(env["K8S_ADMIN_CERT"], env["K8S_ADMIN_KEY"])

    def call(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json",
                                              "Accept": "application/json"})
        try:
            with urllib.request.urlopen(req, context=self.ctx, timeout=30) as r:
                return r.status, json.loads(r.read() or b"{}")
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"{}")

    def wait(self, what, pred, timeout=120):
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            last = pred()
            if last:
                return last
            time.sleep(0.2)
        pytest.fail("timed out after %ds waiting for %s" % (timeout, what))


def pod_spec(name, port):
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "k8s-cluster-test"}},
        "spec": {
            "terminationGracePeriodSeconds": 1,
            "restartPolicy": "Never",
            "containers": [{
                "name": "web", "image": IMAGE, "imagePullPolicy": "Never",
                "command": ["sh", "-c", "mkdir -p /tmp/www && echo hello-from-$POD_NAME "
                            "> /tmp/www/index.html && exec httpd -f -p %d -h /tmp/www" % port],
                "env": [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
                "ports": [{"containerPort": port}],
                "readinessProbe": {"tcpSocket": {"port": port}, "periodSeconds": 1},
                "resources": {"limits": {"memory": "32Mi", "cpu": "200m"}},
            }],
        },
    }


def pod_ready(api, ns, name):
    code, pod = api.call("GET", "/api/v1/namespaces/%s/pods/%s" % (ns, name))
    if code != 200 or pod["status"].get("phase") != "Running":
        return None
    conds = {c["type"]: c["status"] for c in pod["status"].get("conditions", [])}
    return pod if conds.get("Ready") == "True" and pod["status"].get("podIP") else None


def http_get(ip, port):
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open("http://%s:%d/" % (ip, port), timeout=5) as r:
        return r.read().decode().strip()


def record_cluster(state, env):
    """What k8s-down must take away, read while the cluster runs with a pod: the recorded
    processes, the pod's processes in the cgroup root, the shims' sockets; checks there are mounts
    under the state dir, the bridge and the cgroup root (so the checks after are not vacuous)."""
    assert mounts_under(state), "a running pod mounts under the state dir (netns, rootfs, token)"
    assert link_exists(env["K8S_BRIDGE"])
    cg = "/sys/fs/cgroup/memory" + env["K8S_CGROUP_ROOT"]
    assert os.path.isdir(cg)
    recorded = {}
    for name in os.listdir(os.path.join(state, "pids")):
        with open(os.path.join(state, "pids", name)) as f:
            pid, start = f.read().split()
        recorded[name] = (int(pid), start)
    assert {"etcd", "containerd", "kube-apiserver", "kube-controller-manager",
            "kube-scheduler", "kubelet"} <= set(recorded)
    # the container's processes (busybox httpd, pause), to check they are gone too
    for root, _dirs, files in os.walk(cg):
        if "cgroup.procs" in files:
            with open(os.path.join(root, "cgroup.procs")) as f:
                for p in f.read().split():
                    recorded["cgroup:" + p] = (int(p), proc_start(int(p)))
    assert any(k.startswith("cgroup:") for k in recorded), "the pod's processes are in the cgroup root"
    # the shims' sockets live in containerd's fixed /run/containerd/s: ours must go with them
    shim_socks = []
    for root, _dirs, files in os.walk(os.path.join(state, "containerd", "state")):
        if "address" in files:
            with open(os.path.join(root, "address")) as f:
                shim_socks.append(f.read().strip().replace("unix://", "", 1))
    assert shim_socks and all(os.path.exists(p) for p in shim_socks), shim_socks
    return recorded, shim_socks


def run_down(cluster):
    t0 = time.monotonic()
    down = subprocess.run([os.path.join(ROOT, "scripts/k8s-down"), cluster["state"]],
                          capture_output=True, text=True, timeout=300)
    cluster["down"] = down
    print("k8s-down: %.1f s\n%s" % (time.monotonic() - t0, down.stderr[-2000:]))
    assert down.returncode == 0, down.stderr[-3000:]
    return down


def assert_host_clean(state, env, before, during, recorded, shim_socks):
    after = read_sysctls()
    assert after == before, {"before": before, "during": during, "after": after}
    left = {n: p for n, (p, s) in recorded.items() if s is not None and proc_start(p) == s}
    assert not left, "processes of the cluster still alive: %r" % left
    assert not procs_naming(state), "processes naming the state dir: %r" % procs_naming(state)
    assert not mounts_under(state), mounts_under(state)
    assert not link_exists(env["K8S_BRIDGE"])
    assert not [p for p in shim_socks if os.path.exists(p)]
    for h in os.listdir("/sys/fs/cgroup"):
        assert not os.path.exists("/sys/fs/cgroup/%s%s" % (h, env["K8S_CGROUP_ROOT"]))
    net = "sbk8s-" + env["K8S_BRIDGE"][len("sbk8s"):]
    if os.path.isdir("/var/lib/cni/results"):   # libcni's fixed cache: no entry of our network
        assert not [f for f in os.listdir("/var/lib/cni/results") if f.startswith(net)]
    assert not firewall_rules(net), firewall_rules(net)  # the bridge's chains and jumps gone


def firewall_rules(net):
    """The iptables/ip6tables rules and chains of this cluster's pod bridge (sbk8s-<id>-in/-fwd)."""
    out = []
    for tool in ("iptables", "ip6tables"):
        if shutil.which(tool):
            r = subprocess.run([tool, "-w", "-S"], capture_output=True, text=True)
            out += [tool + " " + line for line in r.stdout.splitlines() if net + "-" in line]
    return out


def start_cluster(images=(IMAGE,)):
    for im in images:
        if subprocess.run(["docker", "image", "inspect", im], capture_output=True).returncode:
            pytest.fail("no local %s: run scripts/build-images tiny (scripts/k8s-agent-image)" % im)
    state = tempfile.mkdtemp(prefix="k8s-test-", dir=os.environ.get("IT_TMPDIR"))
    before = read_sysctls()
    t0 = time.monotonic()
    imports = [a for im in images for a in ("--import", im)]
    up = subprocess.run([os.path.join(ROOT, "scripts/k8s-up")] + imports + [state],
                        capture_output=True, text=True, timeout=4 * 3600)
    print("k8s-up: %.1f s\n%s" % (time.monotonic() - t0, up.stderr[-3000:]))
    c = {"state": state, "sysctls_before": before, "down": None}
    if up.returncode == 0:
        c["env"] = read_env(os.path.join(state, "cluster.env"))
        c["api"] = Api(c["env"])
    return c, up


def stop_cluster(c):
    if c["down"] is None:
        subprocess.run([os.path.join(ROOT, "scripts/k8s-down"), c["state"]], timeout=300)
    if os.environ.get("K8S_TEST_KEEP") != "1" and not mounts_under(c["state"]):
        shutil.rmtree(c["state"], ignore_errors=True)


@pytest.fixture(scope="module")
def cluster():
    c, up = start_cluster()
    try:
        assert up.returncode == 0, up.stderr[-4000:]
        assert up.stdout.strip().splitlines()[-1] == os.path.join(c["state"], "kubeconfig")
        yield c
    finally:
        stop_cluster(c)


def test_pod_runs_ready_and_answers_on_its_ip(cluster):
    api, env = cluster["api"], cluster["env"]
    code, node = api.call("GET", "/api/v1/nodes/" + env["K8S_NODE"])
    assert code == 200
    assert node["status"]["nodeInfo"]["kubeletVersion"].startswith("v1.37.")
    assert any(a["address"] == env["K8S_BRIDGE_IP"] for a in node["status"]["addresses"])
    # anonymous requests are refused (the client certificate is what authenticates)
    anon = ssl.create_default_context(cafile=env["K8S_CA"])
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(env["K8S_API"] + "/api/v1/namespaces", context=anon, timeout=10)
    assert e.value.code in (401, 403)

    ns = "t-" + uuid.uuid4().hex[:8]
    code, _ = api.call("POST", "/api/v1/namespaces", {"metadata": {"name": ns}})
    assert code == 201
    api.wait("the default ServiceAccount of " + ns, lambda: api.call(
        "GET", "/api/v1/namespaces/%s/serviceaccounts/default" % ns)[0] == 200, timeout=60)

    t0 = time.monotonic()
    code, body = api.call("POST", "/api/v1/namespaces/%s/pods" % ns, pod_spec("web", 8080))
    assert code == 201, body
    pod = api.wait("pod web Running and Ready", lambda: pod_ready(api, ns, "web"), timeout=120)
    print("pod POST -> Ready: %.2f s" % (time.monotonic() - t0))
    ip = pod["status"]["podIP"]
    net = env["K8S_POD_CIDR"].rsplit(".", 1)[0] + "."
    assert ip.startswith(net), (ip, env["K8S_POD_CIDR"])
    assert pod["spec"]["nodeName"] == env["K8S_NODE"]
    assert http_get(ip, 8080) == "hello-from-web"

    code, _ = api.call("DELETE", "/api/v1/namespaces/%s/pods/web" % ns)
    assert code == 200
    api.wait("pod web gone", lambda: api.call(
        "GET", "/api/v1/namespaces/%s/pods/web" % ns)[0] == 404, timeout=90)
    # its sandbox is torn down too: the address no longer answers
    def unreachable():
        try:
            with socket.create_connection((ip, 8080), timeout=1):
                return False
        except OSError:
            return True
    api.wait("pod IP %s to stop answering" % ip, unreachable, timeout=60)
    cluster["ns"] = ns


def test_down_undoes_every_host_change(cluster):
    api, env, state = cluster["api"], cluster["env"], cluster["state"]
    ns = cluster.get("ns") or "default"
    # a pod left running on purpose: k8s-down must take it down with everything it mounted
    code, body = api.call("POST", "/api/v1/namespaces/%s/pods" % ns, pod_spec("left", 8081))
    assert code == 201, body
    pod = api.wait("pod left Ready", lambda: pod_ready(api, ns, "left"), timeout=120)
    assert http_get(pod["status"]["podIP"], 8081) == "hello-from-left"

    during = read_sysctls()
    assert len(firewall_rules("sbk8s-" + env["K8S_BRIDGE"][len("sbk8s"):])) >= 6  # while it runs
    recorded, shim_socks = record_cluster(state, env)
    run_down(cluster)
    assert_host_clean(state, env, cluster["sysctls_before"], during, recorded, shim_socks)
    # a second k8s-down is a no-op that succeeds
    again = subprocess.run([os.path.join(ROOT, "scripts/k8s-down"), state],
                           capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr


def test_down_after_a_crash_still_cleans_up():
    """kubelet, containerd and the API server SIGKILLed with a pod running (no pod deletion, no
    CNI DEL, shims orphaned): k8s-down still leaves nothing behind."""
    c, up = start_cluster()
    try:
        assert up.returncode == 0, up.stderr[-4000:]
        api, env, state = c["api"], c["env"], c["state"]
        code, body = api.call("POST", "/api/v1/namespaces/default/pods", pod_spec("crash", 8082))
        assert code == 201, body
        pod = api.wait("pod crash Ready", lambda: pod_ready(api, "default", "crash"), timeout=120)
        assert http_get(pod["status"]["podIP"], 8082) == "hello-from-crash"
        during = read_sysctls()
        recorded, shim_socks = record_cluster(state, env)
        for name in ("kubelet", "containerd", "kube-apiserver"):
            pid, start = recorded[name]
            assert proc_start(pid) == start
            os.kill(pid, 9)
        run_down(c)
        assert_host_clean(state, env, c["sysctls_before"], during, recorded, shim_socks)
    finally:
        stop_cluster(c)
