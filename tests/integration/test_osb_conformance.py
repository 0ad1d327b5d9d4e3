"""OpenSandbox conformance (issue 15): every public method of the official
Python SDK (sync and async: Sandbox, SandboxManager, SandboxPool*,
SandboxPoolManager*, commands, files, metrics), of the TypeScript SDK, and
every `osb` subcommand, called for real against one Docker broker, each
result checked.

The drivers are in tests/integration/conformance/ (py_driver.py, ts_driver.mjs,
osb_driver.py); each finds its methods by introspection and writes
{method: outcome}. The outcomes must equal conformance/expected.json
("works", "501-by-design", "n/a: reason" for a method not called, or the
HTTP status a method meets today); a method missing from it, or an outcome
that differs, fails the test with the list. When everything matches, the
table of docs/OPENSANDBOX.md between <!-- conformance:begin --> and
<!-- conformance:end --> is rewritten from expected.json (sorted, no ids), so
the docs never show a failing run and a re-run changes nothing.
"""

import json
import os
import shutil
import subprocess
import sys
import uuid

import pytest

from brokerlib import REPO
from sandboxlib import require_docker
from sdklib import KEY, node_sdk_entry, node_skip_reason, python_sdk_python, start_osb_broker

require_docker()

CONF_DIR = os.path.join(REPO, "tests", "integration", "conformance")
EXPECTED = os.path.join(CONF_DIR, "expected.json")
DOC = os.path.join(REPO, "docs", "OPENSANDBOX.md")
BEGIN, END = "<!-- conformance:begin -->", "<!-- conformance:end -->"
IMAGE = "sandbox-broker/base:latest"
POOL_IMAGE = "sandbox-broker/tiny:latest"
DRIVER_TIMEOUT = 600


@pytest.fixture(scope="module")
def osb_broker(request, services, it_root, tmp_path_factory):
    # a warm pool of the tiny image, for the create-from-a-warm-pool check;
    # a host directory sandboxes may mount read-write, for the volume check
    host_dir = tmp_path_factory.mktemp("conf-volume")
    os.chmod(str(host_dir), 0o777)
    b = start_osb_broker(request, services, it_root, BROKER_CAPACITY=12, IDLE_POLICY="delete",
                         POOL="%s:1" % POOL_IMAGE, RECONCILE_MS=1000,
                         VOLUME_HOST_ALLOW="%s:rw" % host_dir)
    b.conf_host_dir = str(host_dir)
    return b


@pytest.fixture(autouse=True)
def _logs_on_failure(request, osb_broker):
    request.node._it_brokers = [osb_broker]


def load_expected():
    with open(EXPECTED, encoding="utf-8") as fh:
        exp = json.load(fh)
    return {s: exp[s] for s in ("python", "typescript", "osb")}, exp.get("notes", {})


def matches(want, got):
    if want.startswith("n/a:"):
        return got == "not called"
    return want == got


def compare(section, want, got):
    """Lines describing every difference between expected and actual."""
    bad = []
    for m in sorted(set(want) | set(got)):
        if m not in got:
            bad.append("%s %s: expected %r, the driver did not report it" % (section, m, want[m]))
        elif m not in want:
            bad.append("%s %s: %r, missing from expected.json" % (section, m, got[m]))
        elif not matches(want[m], got[m]):
            bad.append("%s %s: expected %r, got %r" % (section, m, want[m], got[m]))
    return bad


def table(expected, notes):
    rows = ["| SDK / CLI | method | result | note |", "|---|---|---|---|"]
    for section in ("python", "typescript", "osb"):
        for m in sorted(expected[section]):
            rows.append("| %s | `%s` | %s | %s |" % (section, m, expected[section][m],
                                                       notes.get("%s %s" % (section, m), "")))
    return "\n".join(rows) + "\n"


def write_table(text):
    """Put text between the markers of docs/OPENSANDBOX.md; only writes
    when it changed."""
    with open(DOC, encoding="utf-8") as fh:
        doc = fh.read()
    a, b = doc.index(BEGIN) + len(BEGIN), doc.index(END)
    new = doc[:a] + "\n" + text + doc[b:]
    if new != doc:
        with open(DOC, "w", encoding="utf-8") as fh:
            fh.write(new)


def start(cmd, log, env=None):
    full = dict(os.environ)
    full.update(env or {})
    return subprocess.Popen(cmd, cwd=CONF_DIR, env=full, stdin=subprocess.DEVNULL,
                            stdout=log, stderr=subprocess.STDOUT)


def test_opensandbox_conformance(osb_broker, tmp_path):
    domain = "127.0.0.1:%d" % osb_broker.port
    tag = uuid.uuid4().hex[:10]
    env = {"CONF_HOST_DIR": osb_broker.conf_host_dir, "HOME": str(tmp_path), "CONF_POOL_IMAGE": POOL_IMAGE,
           "CONF_STATUS_AUTH": osb_broker.auth_headers()["Authorization"]}
    py = python_sdk_python()
    out, procs = {}, {}
    out["python"] = tmp_path / "python.json"
    procs["python"] = [py, "py_driver.py", domain, KEY["alpha"], IMAGE, tag, str(out["python"])]
    out["osb"] = tmp_path / "osb.json"
    procs["osb"] = [py, "osb_driver.py", domain, KEY["bravo"], IMAGE, tag, str(out["osb"])]
    reason = node_skip_reason()
    if reason is None:
        out["typescript"] = tmp_path / "typescript.json"
        procs["typescript"] = [shutil.which("node"), "ts_driver.mjs", domain, KEY["charlie"], IMAGE, tag,
                               str(out["typescript"])]
        env["QS_SDK"] = node_sdk_entry()
    running = {}
    for name, cmd in procs.items():
        if not os.path.exists(os.path.join(CONF_DIR, cmd[1])):
            continue
        log = open(str(tmp_path / (name + ".log")), "w")
        running[name] = (start(cmd, log, env), log)
    for name, (p, log) in running.items():
        try:
            p.wait(timeout=DRIVER_TIMEOUT)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        log.close()

    expected, notes = load_expected()
    bad = []
    for section in ("python", "typescript", "osb"):
        if section not in running:
            if section != "typescript":
                bad.append("%s: no driver ran" % section)
            continue
        p, _ = running[section]
        if p.returncode != 0 or not out[section].exists():
            log = (tmp_path / (section + ".log")).read_text()
            bad.append("%s driver exited %s:\n%s" % (section, p.returncode, log[-4000:]))
            continue
        got = json.loads(out[section].read_text())
        bad += compare(section, expected[section], got)
    if bad:
        logs = "\n".join("--- %s.log (tail)\n%s" % (s, (tmp_path / (s + ".log")).read_text()[-3000:])
                         for s in running)
        pytest.fail("%d conformance differences:\n  %s\n%s" % (len(bad), "\n  ".join(bad), logs),
                    pytrace=False)
    if "typescript" not in running:
        # node is missing: the rest was checked, but the table would be partial
        pytest.skip("the TypeScript driver did not run (%s); docs/OPENSANDBOX.md not rewritten" % reason)
    write_table(table(expected, notes))
