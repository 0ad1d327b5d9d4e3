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

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "integration"))

import sandboxlib  # noqa: E402
from sandboxlib import SB  # noqa: E402
from test_sandbox_scenarios import (test_scenario1_capacity_queue_release,  # noqa: E402,F401
                                    test_scenario2_user_shared_workdirs,
                                    test_scenario3_multi_user_pool_isolation)
from test_sdk_python import (test_python_sdk_5mib_file_and_10000_lines,  # noqa: E402,F401
                             test_python_sdk_metrics_are_the_sandboxs_and_an_exited_entrypoint_shows,
                             test_python_sdk_quickstart, test_python_sdk_wrong_key_is_refused)
from test_sdk_typescript import (test_typescript_sdk_quickstart,  # noqa: E402,F401
                                 test_typescript_sdk_wrong_key_is_refused)

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the cluster needs root")


@pytest.fixture
def docker_broker(k8s_broker, monkeypatch):
    """The scenarios' factory: docker_broker(BROKER_CAPACITY=2, ...) -> SB, here on the cluster;
    the leases name the provider "kubernetes"."""
    monkeypatch.setattr(sandboxlib, "LEASE_PROVIDER", "kubernetes")
    return lambda **env: SB(k8s_broker(**env))


@pytest.fixture
def osb_broker(k8s_broker):
    return k8s_broker(BROKER_CAPACITY=4)
