"""Integration test harness: real nginx, FastCGI handlers, supervisor, Redis
and Kafka, started with scripts/stack on free loopback ports.

- session fixture `services`: Redis + Kafka once per run (own state dir).
- function fixture `broker`: a factory, broker(**env) -> brokerlib.Broker,
  each with its own state dir, HTTP port, Redis key prefix, Kafka topic and
  consumer group. Torn down with `scripts/stack down` for its state dir.
- on a failed test, the tail of that test's broker logs is added to the
  report, and its state dir is kept (path printed).

Environment knobs: IT_TMPDIR (where state dirs go), IT_KEEP=1 (keep every
state dir), IT_LOG_LEVEL (LOG_LEVEL of the broker programs), IT_SEED (seed of
the random choices in the crash test).
"""

import os
import re
import tempfile

import pytest

import brokerlib
from brokerlib import Broker, Services, StackError

KEEP = os.environ.get("IT_KEEP") == "1"


def pytest_configure(config):
    config._it_failed = False


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    setattr(item, "rep_" + rep.when, rep)
    if rep.failed:
        item.config._it_failed = True
        for b in getattr(item, "_it_brokers", []):
            rep.sections.append((
                "broker logs (%s) [%s]" % (b.state_dir, rep.when),
                b.logs_tail(60)))
        svc = getattr(item.config, "_it_services", None)
        if svc is not None and rep.when == "setup" and not getattr(item, "_it_brokers", []):
            rep.sections.append(("services logs (%s)" % svc.state_dir,
                                 brokerlib.logs_tail(svc.state_dir, 40)))


@pytest.fixture(scope="session")
def it_root(request):
    # absolute: brokers get paths under it in their configuration (VOLUME_HOST_ALLOW
    # wants absolute ones); an empty IT_TMPDIR means the default
    root = os.path.abspath(tempfile.mkdtemp(prefix="sbit-", dir=os.environ.get("IT_TMPDIR") or None))

    def fin():
        if KEEP or request.config._it_failed:
            print("\nintegration state kept under %s" % root)
        else:
            brokerlib.rmtree_quiet(root)
    request.addfinalizer(fin)
    return root


@pytest.fixture(scope="session")
def services(request, it_root):
    svc = Services(it_root)
    request.config._it_services = svc
    request.addfinalizer(svc.down)
    err = None
    try:
        svc.up()
    except StackError as e:
        err = "services-up failed: %s\n%s" % (e, brokerlib.logs_tail(svc.state_dir, 40))
    if err:
        pytest.fail(err, pytrace=False)
    return svc


_counter = [0]


def _state_dir(root, name):
    _counter[0] += 1
    short = re.sub(r"[^A-Za-z0-9_]+", "_", name)[:28]
    return os.path.join(root, "%03d-%s" % (_counter[0], short))


def _remove_containers(b):
    """Force-remove every Docker container labelled with b's Redis prefix
    (only what b made; sandboxlib.Docker.remove_prefix), when dockerd runs."""
    from sandboxlib import DOCKER, DOCKER_SOCK
    if not os.path.exists(DOCKER_SOCK):
        return
    try:
        n = DOCKER.remove_prefix(b.prefix)
    except Exception as e:  # the state dir's own cleanup still runs
        print("\ncontainer cleanup of %s failed: %r" % (b.prefix, e))
        return
    if n:
        print("\n%d container(s) of %s removed at teardown" % (n, b.prefix))


def make_broker(request, services, root, **env):
    """Start a broker; register it for log dumps and teardown on `request`:
    `scripts/stack down`, then its containers removed, then its state dir
    (mounts first) removed or, after a failure, kept."""
    b = Broker(services, _state_dir(root, request.node.name), **env)
    node = request.node
    if not hasattr(node, "_it_brokers"):
        node._it_brokers = []
    node._it_brokers.append(b)

    def fin():
        try:
            b.down()
        finally:
            # whatever it made, even when the test failed midway: its
            # supervisor is down, so nothing makes more
            _remove_containers(b)
        failed = any(getattr(node, "rep_" + w, None) is not None
                     and getattr(node, "rep_" + w).failed
                     for w in ("setup", "call"))
        if not isinstance(node, pytest.Item):  # module/session scoped broker
            failed = failed or request.config._it_failed
        if failed or KEEP:
            # the logs stay; what was mounted for the sandboxes goes
            brokerlib.unmount_under(b.state_dir)
            print("\nbroker state kept: %s" % b.state_dir)
        else:
            brokerlib.rmtree_quiet(b.state_dir)
    request.addfinalizer(fin)
    err = None
    try:
        b.up()
    except StackError as e:
        err = "broker-up failed: %s" % e
    if err:
        pytest.fail(err, pytrace=False)
    return b


@pytest.fixture
def broker(request, services, it_root):
    """Factory: broker(BROKER_CAPACITY=1, ...) -> a running Broker."""
    def factory(**env):
        return make_broker(request, services, it_root, **env)
    return factory
