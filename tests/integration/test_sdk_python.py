"""The official OpenSandbox Python SDK (`opensandbox` from PyPI, unmodified)
runs its quickstart flow against the broker: create (image, entrypoint,
resource limits, timeout, env, metadata) and wait until ready, get_info,
files.write_file, commands.run (stdout lines; a failing command's exit code
and stderr), files.read_file, renew, get_info, kill.

The flow is tests/integration/sdk/quickstart.py, run in a subprocess with the
test venv's python (scripts/sdk-install puts the SDK there; the test installs
it itself when it is missing). It only knows the broker's host:port and an
API key, like any OpenSandbox user. The broker runs the Docker provider.
"""

import pytest

from sandboxlib import require_docker
from sdklib import KEY, OSB, SDK_DIR, check_quickstart, python_sdk_python, run_script, \
    start_osb_broker

require_docker()

TEXT = "hello from the python sdk\nsecond line\nünïcödé ✓\n"


@pytest.fixture(scope="module")
def osb_broker(request, services, it_root):
    return start_osb_broker(request, services, it_root, BROKER_CAPACITY=4)


@pytest.fixture(autouse=True)
def _logs_on_failure(request, osb_broker):
    request.node._it_brokers = [osb_broker]


def test_python_sdk_quickstart(osb_broker):
    py = python_sdk_python()
    run = run_script([py, SDK_DIR + "/quickstart.py"], {
        "QS_DOMAIN": "127.0.0.1:%d" % osb_broker.port,
        "QS_API_KEY": KEY["alpha"],
    }, timeout=300)
    check_quickstart(run, osb_broker, TEXT, OSB(osb_broker, "alpha"))


def test_python_sdk_wrong_key_is_refused(osb_broker):
    """The SDK surfaces the broker's 401 as an error with the spec's code."""
    py = python_sdk_python()
    run = run_script([py, SDK_DIR + "/quickstart.py"], {
        "QS_DOMAIN": "127.0.0.1:%d" % osb_broker.port,
        "QS_API_KEY": "not-a-known-key",
    }, timeout=120)
    assert run.rc == 1, run.explain()
    f = run.failure()
    assert f is not None and f["step"] == "create", run.explain()
    assert f.get("status") == 401, run.explain()
    assert f.get("code") == "UNAUTHORIZED", run.explain()


def test_python_sdk_5mib_file_and_10000_lines(osb_broker):
    """A 5 MiB binary round trip (the SDK's chunked multipart upload, then a
    download) and a 10,000-line command, complete and in order, through the SDK."""
    py = python_sdk_python()
    run = run_script([py, SDK_DIR + "/bulk.py"], {
        "QS_DOMAIN": "127.0.0.1:%d" % osb_broker.port,
        "QS_API_KEY": KEY["charlie"],
    }, timeout=300)
    w = run.step("write_5mib")
    s = run.step("sha256_in_sandbox")
    assert s["exit_code"] == 0 and s["stdout"] == [w["sha256"] + "\n", "%d\n" % (5 * 1024 * 1024)], s
    r = run.step("read_5mib")
    assert r["bytes"] == w["bytes"] and r["sha256"] == w["sha256"], (r, w)
    q = run.step("seq_10000")
    assert q["exit_code"] == 0 and q["count"] == 10000 and q["in_order"], q
    run.step("done")
    assert run.rc == 0, run.explain()


def test_python_sdk_metrics_are_the_sandboxs_and_an_exited_entrypoint_shows(osb_broker):
    """Through the SDK: get_metrics reports the sandbox's own limits (within 10%
    of the 1.5 CPUs and 384 MiB asked; the host has 2 CPUs and 24 GiB), and an
    entrypoint that exits with 7 leaves Running with its code in the status."""
    py = python_sdk_python()
    run = run_script([py, SDK_DIR + "/limits.py"], {
        "QS_DOMAIN": "127.0.0.1:%d" % osb_broker.port,
        "QS_API_KEY": KEY["bravo"],
    }, timeout=300)
    m = run.step("metrics")
    assert abs(m["cpu_count"] - m["want_cpu"]) <= 0.1 * m["want_cpu"], m
    assert abs(m["memory_total_in_mib"] - m["want_memory_mib"]) <= 0.1 * m["want_memory_mib"], m
    assert 0 < m["memory_used_in_mib"] <= m["memory_total_in_mib"], m
    assert 0 <= m["cpu_used_percentage"] <= 100, m
    e = run.step("exited")
    assert e["state"] == "Failed", e
    assert e["reason"] == "ENTRYPOINT_EXITED" and "7" in (e["message"] or ""), e
    run.step("done")
    assert run.rc == 0, run.explain()
