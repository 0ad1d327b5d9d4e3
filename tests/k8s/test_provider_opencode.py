"""Issue 26's proof: the OpenCode plugin's main scenario on SANDBOX_PROVIDER=kubernetes.

tests/integration/test_opencode.py's test_opencode_tools_run_in_sandbox, imported unchanged (the
real OpenCode, headless, with the plugin and a scripted local model), with a broker on the test
cluster in place of the Docker one: one session's write, bash, edit, read, grep, glob, list and a
webfetch the sandbox cannot make run in its pod; the files are in the pod, not on the host;
deleting the session releases the lease and removes the pod. "The container's file" is read
from the pod by `kubectl exec ... cat` (the Docker body reads it with the Engine API's archive).
"""

import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "integration"))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "integration", "opencode"))

import sandboxlib  # noqa: E402
import test_opencode  # noqa: E402
from k8slib import NS  # noqa: E402
from oclib import installed, model, opencode  # noqa: E402,F401
from sandboxlib import SB  # noqa: E402
from test_opencode import test_opencode_tools_run_in_sandbox  # noqa: E402,F401

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the cluster needs root")


@pytest.fixture
def docker_broker(k8s_broker, cluster, monkeypatch):
    """The body's factory, on the cluster; its "container file" read from the pod."""
    monkeypatch.setattr(sandboxlib, "LEASE_PROVIDER", "kubernetes")
    env = cluster["env"]
    kubectl = os.path.join(env["K8S_BIN"], "kubectl")

    def pod_file(sandbox_id, path):
        cp = subprocess.run([kubectl, "--kubeconfig", env["KUBECONFIG"], "-n", NS, "exec",
                             "sb-" + sandbox_id, "-c", "sandbox", "--", "cat", path],
                            stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
        return cp.stdout if cp.returncode == 0 else None
    monkeypatch.setattr(test_opencode, "container_file", pod_file)

    def factory(**env):
        return SB(k8s_broker(**env))
    return factory
