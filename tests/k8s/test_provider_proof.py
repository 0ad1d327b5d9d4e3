"""Issue 26's proof, part one: the project's own tests, unchanged, on SANDBOX_PROVIDER=kubernetes.

The bodies are tests/integration's, imported (not copied), with this module's fixtures in place of
the Docker ones: `docker_broker` and `osb_broker` give a broker on the test cluster (conftest.py's
k8s_broker: the agent in every pod, the relay) whose `sandbox_view` shows its pods as containers,
so "the container sb-<id>" of a body is the pod sb-<id>.

- the lease scenarios (test_sandbox_scenarios.py): capacity 2 and a queue, release(deleted) hands
  the slot on; user_shared sessions in directories of one pod; multi_user_shared seats (Linux users
  of the multiuser image, made by the agent: agent/seat.c) that cannot read each other's homes.
  Where a body expects a stop-and-keep (IDLE_POLICY=stop_keep), the view says the provider cannot
  (`stops` False): the idle release removes the pod and the session gets a new one
  (docs/KUBERNETES.md, "Lifecycle");
- the OpenSandbox SDKs (test_sdk_python.py, test_sdk_typescript.py): the official Python and
  TypeScript SDKs' quickstart (create, get_info, write, run, a failing command, read, renew, kill),
  a wrong key, a 5 MiB file and 10,000 lines, metrics of the pod's own limits and an exited
  entrypoint.

What the Kubernetes provider answers 501 for (pause/resume, snapshots, stop-and-keep through the
lease API) and 400 for (volumes) is tested in test_provider.py and listed in docs/KUBERNETES.md.
"""

import os
import sys
import uuid

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "integration"))

import sandboxlib  # noqa: E402
from k8slib import start_broker, stop_broker  # noqa: E402
from sandboxlib import SB  # noqa: E402
from test_sandbox_scenarios import (test_scenario1_capacity_queue_release,  # noqa: E402,F401
                                    test_scenario2_user_shared_workdirs,
                                    test_scenario3_multi_user_pool_isolation)
from test_seat_isolation import check_hidden, pool_pair, spawn_secret  # noqa: E402
from test_sdk_python import (test_python_sdk_5mib_file_and_10000_lines,  # noqa: E402,F401
                             test_python_sdk_metrics_are_the_sandboxs_and_an_exited_entrypoint_shows,
                             test_python_sdk_quickstart, test_python_sdk_wrong_key_is_refused)
from test_sdk_typescript import (test_typescript_sdk_quickstart,  # noqa: E402,F401
                                 test_typescript_sdk_wrong_key_is_refused)

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the cluster needs root")


RUNTIME = "sandbox-runc"  # the RuntimeClass k8s-up makes: runc with /proc hidepid=invisible


@pytest.fixture
def docker_broker(k8s_broker, monkeypatch):
    """The scenarios' factory: docker_broker(BROKER_CAPACITY=2, ...) -> SB, here on the cluster;
    the leases name the provider "kubernetes". SANDBOX_RUNTIME is the RuntimeClass sandbox-runc
    unless given, as Docker's default is the runtime of that name (SANDBOX_RUNTIME=None: unset)."""
    monkeypatch.setattr(sandboxlib, "LEASE_PROVIDER", "kubernetes")

    def factory(**env):
        env.setdefault("SANDBOX_RUNTIME", RUNTIME)
        return SB(k8s_broker(**env))
    return factory


@pytest.fixture(scope="module")
def osb_broker(cluster, services):
    """One broker for the SDK flows (each makes and kills its own sandboxes)."""
    b = start_broker(cluster, services, BROKER_CAPACITY=4, SANDBOX_RUNTIME=RUNTIME)
    try:
        yield b
    finally:
        stop_broker(cluster, b)


@pytest.fixture(autouse=True)
def _logs_on_failure(request):
    if "osb_broker" in request.fixturenames:
        request.node._it_brokers = [request.getfixturevalue("osb_broker")]


def runtime_class(sb, lease):
    return sb.container(lease["sandboxId"])["Pod"]["spec"].get("runtimeClassName")


def test_seats_do_not_see_each_others_processes(docker_broker):
    """test_seat_isolation.py's attack on a pod: a seat's background process carries a secret on
    its command line; the other seat of the pool pod sees nothing of it (ps, /proc listing,
    cmdline), both ways, and the pod's /proc is hidepid=invisible. The pod runs under the
    RuntimeClass sandbox-runc (SANDBOX_RUNTIME): the Pod API has no option for /proc's mount."""
    sb = docker_broker(BROKER_CAPACITY=2, POOL_SEATS=2)
    la, lb = pool_pair(sb)
    assert runtime_class(sb, la) == RUNTIME
    assert "their seats see each other's processes" not in sb.b.logs("supervisor")
    token = "secret-arg-A-" + uuid.uuid4().hex
    check_hidden(sb, la, lb, token, spawn_secret(sb, la, token))
    token_b = "secret-arg-B-" + uuid.uuid4().hex
    check_hidden(sb, lb, la, token_b, spawn_secret(sb, lb, token_b))


def test_without_the_runtime_class_seats_see_each_other(docker_broker):
    """SANDBOX_RUNTIME unset on Kubernetes (the cluster's default runtime): nothing hides a seat's
    processes from another, as documented; the checks above do catch it."""
    sb = docker_broker(BROKER_CAPACITY=1, POOL_SEATS=2, SANDBOX_RUNTIME=None)
    la, lb = pool_pair(sb)
    assert runtime_class(sb, la) is None
    token = "visible-arg-A-" + uuid.uuid4().hex
    pid = spawn_secret(sb, la, token)
    assert token in sb.run(lb, "ps -eo args")["stdout"]
    with pytest.raises(AssertionError):
        check_hidden(sb, la, lb, token, pid)
    # and the supervisor said so at its start, naming the setting that fixes it
    log = sb.b.logs("supervisor")
    assert "their seats see each other's processes" in log, log[-2000:]
    assert "SANDBOX_RUNTIME_MULTI_USER_SHARED=sandbox-runc" in log

