"""Shared by the Kubernetes provider's tests (test_provider*.py): one test cluster for the session
(scripts/k8s-up with the images the sandboxes use imported; K8S_TEST_CLUSTER=STATE_DIR runs against
one already up), Redis and Kafka once (brokerlib.Services), brokers with SANDBOX_PROVIDER=kubernetes
(`k8s_broker`), and PodView: this broker's pods in the Engine API's shapes, so that the integration
suite's own test bodies (tests/integration: the lease scenarios, the OpenSandbox SDK flows), which
check "the container", run unchanged against pods (sandboxlib.view_of).

test_cluster.py starts and stops clusters of its own: it runs first (file order), before this
session's cluster is up (two clusters at once share kubelet's fixed device-plugin socket path).
"""

import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "integration"))
sys.path.insert(0, HERE)

from brokerlib import Services  # noqa: E402
from k8slib import IMAGES, NS, start_broker, stop_broker  # noqa: E402
from test_cluster import Api, read_env, start_cluster, stop_cluster  # noqa: E402


@pytest.fixture(scope="session")
def cluster():
    reuse = os.environ.get("K8S_TEST_CLUSTER")  # a running cluster's state dir (development)
    if reuse:
        env = read_env(os.path.join(reuse, "cluster.env"))
        c = {"state": reuse, "env": env, "api": Api(env)}
        c["api"].call("POST", "/api/v1/namespaces", {"metadata": {"name": NS}})
        yield c
        return
    c, up = start_cluster(IMAGES)
    try:
        assert up.returncode == 0, up.stderr[-4000:]
        api = c["api"]
        code, body = api.call("POST", "/api/v1/namespaces", {"metadata": {"name": NS}})
        assert code == 201, body
        yield c
    finally:
        stop_cluster(c)


@pytest.fixture(scope="session")
def services(cluster):
    root = os.path.join(cluster["state"], "it")
    os.makedirs(root, exist_ok=True)
    svc = Services(root)
    try:
        svc.up()
        yield svc
    finally:
        svc.down()


@pytest.fixture
def k8s_broker(request, cluster, services):
    """Factory: k8s_broker(like=None, **env) -> a running brokerlib.Broker on the cluster, with
    `sandbox_view` (PodView); torn down with its pods. like: a broker of this test whose key
    prefix, Kafka topic and group the new one shares (k8slib.start_broker)."""
    made = []

    def factory(like=None, **env):
        made.append(start_broker(cluster, services, like=like, **env))
        request.node._it_brokers = made
        return made[-1]
    yield factory
    # every broker down before any pods are deleted: a broker sharing a prefix would make more
    try:
        for b in made:
            b.down()
    finally:
        for b in made:
            stop_broker(cluster, b)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    setattr(item, "rep_" + rep.when, rep)
    if rep.failed:
        for b in getattr(item, "_it_brokers", []):
            rep.sections.append(("broker logs (%s) [%s]" % (b.state_dir, rep.when), b.logs_tail(60)))
