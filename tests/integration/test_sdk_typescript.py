"""The official OpenSandbox TypeScript SDK (`@alibaba-group/opensandbox` from
npm, unmodified) runs its quickstart flow against the broker under Node:
create (image, entrypoint, resource limits, timeout, env, metadata) and wait
until ready, getInfo, files.writeFiles, commands.run (stdout lines; a failing
command's exit code and stderr), files.readFile, renew, getInfo, kill.

The flow is tests/integration/sdk/quickstart.mjs, run with `node`; the SDK is
imported from .cache/node (scripts/sdk-install; the test installs it itself
when it is missing). Skipped, with the reason, only when Node.js >= 20 is not
there. The broker runs the Docker provider.
"""

import shutil

import pytest

from sandboxlib import require_docker
from sdklib import KEY, OSB, SDK_DIR, check_quickstart, node_sdk_entry, node_skip_reason, \
    run_script, start_osb_broker

require_docker()
_reason = node_skip_reason()
if _reason:
    pytest.skip(_reason, allow_module_level=True)

TEXT = "hello from the typescript sdk\nsecond line\nünïcödé ✓\n"


@pytest.fixture(scope="module")
def osb_broker(request, services, it_root):
    return start_osb_broker(request, services, it_root, BROKER_CAPACITY=4)


@pytest.fixture(autouse=True)
def _logs_on_failure(request, osb_broker):
    request.node._it_brokers = [osb_broker]


def _run(broker, key, timeout):
    return run_script([shutil.which("node"), SDK_DIR + "/quickstart.mjs"], {
        "QS_DOMAIN": "127.0.0.1:%d" % broker.port,
        "QS_API_KEY": key,
        "QS_SDK": node_sdk_entry(),
    }, timeout=timeout)


def test_typescript_sdk_quickstart(osb_broker):
    run = _run(osb_broker, KEY["bravo"], 300)
    check_quickstart(run, osb_broker, TEXT, OSB(osb_broker, "bravo"))


def test_typescript_sdk_wrong_key_is_refused(osb_broker):
    run = _run(osb_broker, "not-a-known-key", 120)
    assert run.rc == 1, run.explain()
    f = run.failure()
    assert f is not None and f["step"] == "create", run.explain()
    assert f.get("status") == 401, run.explain()
    assert f.get("code") == "UNAUTHORIZED", run.explain()
