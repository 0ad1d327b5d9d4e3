"""OpenSandbox lifecycle hooks (issue 28; docs/OPENSANDBOX.md, "Lifecycle
hooks"; docs/AGENT.md, "Lifecycle hooks"), against a real Docker broker:

- preStart runs before the entrypoint (the official Python SDK's own create
  with lifecycle): the entrypoint sees its file, the SDK's create returns a
  Running sandbox, and a command sees the file too;
- a preStart that exits 3 makes the sandbox Failed, reason PRESTART_FAILED,
  its message naming the code, its container removed; one over its
  timeout: Failed, PRESTART_TIMEOUT. Meanwhile another tenant's sandbox is
  made and runs its commands;
- periodic hooks run while the sandbox runs (@every 1s: >= 2 runs in a few
  seconds), a run never overlaps the previous one of its hook (a lock file
  shows one at a time; skips are logged), a run past its timeout has its
  whole process group killed;
- every bad lifecycle is a 400 naming the field, and makes nothing (no
  record, no container). The byte caps of the commands (64 KiB, 32 KiB)
  are above the create body's default cap (MAX_BODY_BYTES, 16 KiB): the
  unit tests (test_opensandbox.c) check them.
"""

import json
import subprocess
import time

import pytest

from brokerlib import wait_until
from sandboxlib import DOCKER, SB, require_docker
from sdklib import KEY, OSB, container, python_sdk_python, start_osb_broker, wait_container_gone
from test_execd import Execd, out_texts

require_docker()

BASE = "sandbox-broker/base:latest"


@pytest.fixture(scope="module")
def lb(request, services, it_root):
    return start_osb_broker(request, services, it_root, BROKER_CAPACITY=6, IDLE_POLICY="delete")


@pytest.fixture(autouse=True)
def _logs_on_failure(request, lb):
    request.node._it_brokers = [lb]


def execd(b, sid, tenant="alpha"):
    r = OSB(b, tenant).endpoint(sid, 44772)
    assert r.status == 200, r
    return Execd(SB(b), sid, r.json["headers"]["X-EXECD-ACCESS-TOKEN"])


def sh(ex, text):
    """Run shell text in the sandbox; its stdout."""
    st, _, events = ex.command_stream({"command": text})
    assert st == 200, (st, events)
    return "".join(out_texts(events))


def create(b, tenant="alpha", entrypoint=("sleep", "infinity"), wait=True, **lifecycle):
    return OSB(b, tenant).create(image=BASE, entrypoint=entrypoint, wait=wait, lifecycle=lifecycle)


def failed_status(b, sid, tenant="alpha", timeout=90):
    return OSB(b, tenant).wait_state(sid, "Failed", timeout=timeout)["status"]


def bravo_works(b):
    """Another tenant's sandbox is made and runs a command."""
    osb = OSB(b, "bravo")
    sid = osb.create(image=BASE)
    assert sh(execd(b, sid, "bravo"), "echo bravo-ok") == "bravo-ok\n"
    assert osb.delete(sid).status == 204
    return sid


PY_CREATE = r"""
import json, sys
from datetime import timedelta
from opensandbox import SandboxSync
from opensandbox.config import ConnectionConfigSync
from opensandbox.models import SandboxLifecycle, LifecycleHook
cfg = ConnectionConfigSync(domain=sys.argv[1], api_key=sys.argv[2], protocol="http")
sb = SandboxSync.create(sys.argv[3], connection_config=cfg,
                        entrypoint=["sh", "-c", "cat /tmp/pre > /tmp/seen-by-entrypoint; exec sleep infinity"],
                        timeout=timedelta(minutes=5), ready_timeout=timedelta(seconds=90),
                        lifecycle=SandboxLifecycle(pre_start=LifecycleHook(
                            command=["sh", "-c", "sleep 1; echo made-by-prestart > /tmp/pre"],
                            timeout_seconds=30)))
out = {"id": sb.id, "state": sb.get_info().status.state}
e = sb.commands.run("cat /tmp/pre /tmp/seen-by-entrypoint")
out["files"] = "".join(m.text for m in e.logs.stdout)
sb.kill()
print(json.dumps(out))
"""


def test_prestart_runs_before_the_entrypoint_sdk(lb):
    cp = subprocess.run([python_sdk_python(), "-c", PY_CREATE, "127.0.0.1:%d" % lb.port, KEY["alpha"], BASE],
                        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                        timeout=240)
    assert cp.returncode == 0, (cp.stdout[-2000:], cp.stderr[-4000:])
    out = json.loads(cp.stdout.decode().splitlines()[-1])
    assert out["state"] == "Running", out
    # the entrypoint started after preStart had written the file
    assert out["files"] == "made-by-prestart\nmade-by-prestart\n", out


def test_prestart_never_shows_running_before_it_ends(lb):
    osb = OSB(lb)
    sid = create(lb, wait=False, preStart={"command": ["sh", "-c", "sleep 3; touch /tmp/pre-done"]})
    seen = []
    osb.wait_state(sid, "Running", seen=seen)
    assert seen[0] == "Pending" and "Running" not in seen[:-1], seen
    assert sh(execd(lb, sid), "ls /tmp/pre-done") == "/tmp/pre-done\n"
    assert osb.delete(sid).status == 204


def test_failing_prestart_fails_the_sandbox_and_removes_it(lb):
    sid = create(lb, wait=False, preStart={"command": ["sh", "-c", "echo no-good >&2; exit 3"]})
    st = failed_status(lb, sid)
    assert st["reason"] == "PRESTART_FAILED", st
    assert "exited with code 3" in st["message"] and "no-good" in st["message"], st
    wait_container_gone(lb, sid)
    bravo_works(lb)


def test_prestart_over_its_timeout_fails_the_sandbox_while_others_work(lb):
    t0 = time.monotonic()
    sid = create(lb, wait=False, preStart={"command": ["sleep", "600"], "timeoutSeconds": 4})
    # during it: bravo's sandbox is made and serves
    bravo_works(lb)
    st = failed_status(lb, sid)
    assert st["reason"] == "PRESTART_TIMEOUT", st
    assert "timeout (4 s)" in st["message"], st
    assert time.monotonic() - t0 < 60  # generous: 4 s plus a create on a loaded host
    wait_container_gone(lb, sid)


def test_periodic_every_second_runs_repeatedly(lb):
    sid = create(lb, periodic=[{"name": "tick", "schedule": "@every 1s",
                                "command": ["sh", "-c", "date +%s >> /tmp/ticks"]}])
    ex = execd(lb, sid)
    time.sleep(3.5)
    ticks = sh(ex, "cat /tmp/ticks").split()
    assert len(ticks) >= 2, ticks
    assert OSB(lb).delete(sid).status == 204


def test_periodic_runs_never_overlap_and_are_killed_at_their_timeout(lb):
    slow = ("if [ -e /tmp/lock ]; then echo overlap >> /tmp/overlaps; fi; touch /tmp/lock; "
            "echo run >> /tmp/runs; sleep 2.5; rm -f /tmp/lock")
    stuck = "echo $$ > /tmp/stuck.pid; sleep 300 & echo $! > /tmp/stuck-child.pid; wait; echo survived > /tmp/survived"
    sid = create(lb, periodic=[
        {"name": "slow", "schedule": "@every 1s", "command": ["sh", "-c", slow], "timeoutSeconds": 10},
        {"name": "stuck", "schedule": "@every 1s", "command": ["sh", "-c", stuck], "timeoutSeconds": 1},
    ])
    ex = execd(lb, sid)
    time.sleep(8)
    out = sh(ex, "cat /tmp/runs; cat /tmp/overlaps 2>/dev/null; echo --; "
                 "for f in /tmp/stuck.pid /tmp/stuck-child.pid; do kill -0 $(cat $f) 2>/dev/null && echo alive; done; "
                 "cat /tmp/survived 2>/dev/null; true")
    runs, rest = out.split("--\n")
    assert runs.split() and set(runs.split()) == {"run"}, out  # no "overlap" line
    assert 2 <= len(runs.split()) <= 4, out  # 8 s of a 2.5 s run every 1 s
    # the last stuck run was just started, or killed with its child
    assert "survived" not in rest, out
    logs = subprocess.run(["docker", "logs", container(lb, sid)["Id"]], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, timeout=30).stdout.decode()
    assert "hook slow: run skipped, the previous one is still running" in logs, logs
    assert "hook stuck: killed at its timeout (1 s)" in logs, logs
    assert OSB(lb).delete(sid).status == 204


BAD = [
    ({"preStart": {"command": []}}, "lifecycle.preStart.command"),
    ({"preStart": {"command": [" "]}}, "lifecycle.preStart.command[0]"),
    ({"preStart": {"command": ["true"], "timeoutSeconds": 0}}, "lifecycle.preStart.timeoutSeconds"),
    ({"preStart": {"command": ["true"], "timeoutSeconds": 10801}}, "lifecycle.preStart.timeoutSeconds"),
    ({"preStart": {"command": ["x"] * 257}}, "lifecycle.preStart.command"),
    ({"preStart": {"command": ["true"], "shell": True}}, "lifecycle.preStart: unknown field"),
    ({"postStop": {}}, "lifecycle: unknown field"),
    ({"periodic": [{"name": "a", "schedule": "@every 0s", "command": ["true"]}]}, "lifecycle.periodic[0].schedule"),
    ({"periodic": [{"name": "a", "schedule": "61 * * * *", "command": ["true"]}]}, "lifecycle.periodic[0].schedule"),
    ({"periodic": [{"name": "a", "schedule": "* * * *", "command": ["true"]}]}, "lifecycle.periodic[0].schedule"),
    ({"periodic": [{"name": "a", "schedule": "0 0 30 2 *", "command": ["true"]}]}, "never fires"),
    ({"periodic": [{"name": "a b", "schedule": "@hourly", "command": ["true"]}]}, "lifecycle.periodic[0].name"),
    ({"periodic": [{"name": "a" * 64, "schedule": "@hourly", "command": ["true"]}]}, "lifecycle.periodic[0].name"),
    ({"periodic": [{"name": "a", "schedule": "@hourly", "command": ["true"]},
                   {"name": "a", "schedule": "@daily", "command": ["true"]}]}, "names must be unique"),
    ({"periodic": [{"name": "h%d" % i, "schedule": "@hourly", "command": ["true"]} for i in range(17)]},
     "lifecycle.periodic must be an array of at most 16"),
    ({"periodic": [{"name": "a", "schedule": "@hourly", "command": ["true"], "timeoutSeconds": 301}]},
     "lifecycle.periodic[0].timeoutSeconds"),
    ({"periodic": {"name": "a"}}, "lifecycle.periodic must be an array"),
    ("hooks", "lifecycle must be an object"),
]


def test_bad_lifecycle_is_400_and_makes_nothing(lb):
    osb = OSB(lb)
    before = {c["Id"] for c in DOCKER.list(prefix=lb.prefix)}
    # ids, not a count: an earlier test's sandbox may still leave the list
    # (its teardown) while this one runs; nothing new may join it
    ids0 = {s["id"] for s in osb.list().json["items"]}
    for lc, words in BAD:
        body = {"image": {"uri": BASE}, "entrypoint": ["sleep", "infinity"], "lifecycle": lc}
        r = osb.create_raw(body)
        assert r.status == 400, (lc if len(json.dumps(lc)) < 300 else words, r)
        assert words in r.json["message"], (words, r.json)
    assert {s["id"] for s in osb.list().json["items"]} <= ids0
    assert {c["Id"] for c in DOCKER.list(prefix=lb.prefix)} <= before
    # null is no hooks at all, as the spec's optional field
    sid = osb.create(image=BASE, lifecycle=None)
    assert osb.delete(sid).status == 204
