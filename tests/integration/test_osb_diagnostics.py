"""OpenSandbox 1.1.1's diagnostics (issue 28), through the official Python
SDK's own calls (SandboxManagerSync.get_diagnostic_logs / _events, and
SandboxSync's) against a real Docker broker, and attacked:

- logs: what the sandbox's main process printed (stdout and stderr, each
  in order), from the container's log, inline text/plain; the tail cap
  (DIAGNOSTICS_LOG_TAIL) and the byte cap (DIAGNOSTICS_LOG_MAX_BYTES) hold
  whatever the sandbox writes (truncated: true, whole lines kept); bytes
  that are no UTF-8 arrive as U+FFFD in valid JSON; a deleted sandbox's
  logs are 404 (its container is gone);
- events: the lifecycle as the broker recorded it, Running -> Paused ->
  Running -> Stopping -> Terminated in order with reasons and times, capped
  at the last 64 transitions in Redis (a list that expires with the
  record);
- another tenant's sandbox and an unknown one are 404, with nothing of the
  owner's output in the answer; a sandbox flooding its log leaves another
  tenant's diagnostics answered, small, meanwhile;
- bad scopes and tails are 400 JSON; the deprecated form without scope
  (osb devops) 501 with the reason.
"""

import json
import re
import threading
import time

import pytest

from brokerlib import http_request, wait_until
from sandboxlib import BASE_IMAGE, require_docker
from sdklib import KEY, OSB, python_sdk_python, run_script, start_osb_broker

require_docker()

TAIL_CAP = 40
BYTE_CAP = 4096


@pytest.fixture(scope="module")
def db(request, services, it_root):
    return start_osb_broker(request, services, it_root, BROKER_CAPACITY=6, IDLE_POLICY="delete",
                            DIAGNOSTICS_LOG_TAIL=TAIL_CAP, DIAGNOSTICS_LOG_MAX_BYTES=BYTE_CAP)


@pytest.fixture(autouse=True)
def _logs_on_failure(request, db):
    request.node._it_brokers = [db]


def sh(script):
    """An entrypoint: script, then stay up."""
    return ("sh", "-c", script + "; exec sleep infinity")


def diag(o, sid, kind, query="scope=container", tenant=None):
    osb = o.as_tenant(tenant) if tenant else o
    return osb.call("GET", "/sandboxes/%s/diagnostics/%s%s" % (sid, kind, "?" + query if query else ""))


def wait_logs(o, sid, needle, query="scope=container"):
    def check():
        r = diag(o, sid, "logs", query)
        assert r.status == 200, r
        return r.json if needle in r.json["content"] else None
    return wait_until(check, 60, 0.2, "%s in the logs of %s" % (needle, sid))


SDK_SCRIPT = r"""
import json, sys
from datetime import timedelta
from opensandbox import SandboxManagerSync, SandboxSync
from opensandbox.config import ConnectionConfigSync

domain, key, sid = sys.argv[1], sys.argv[2], sys.argv[3]
cfg = ConnectionConfigSync(domain=domain, api_key=key, protocol="http",
                           request_timeout=timedelta(seconds=60))
out = {}
m = SandboxManagerSync.create(connection_config=cfg)
for name, call in (("logs", m.get_diagnostic_logs), ("events", m.get_diagnostic_events)):
    scope = "container" if name == "logs" else "lifecycle"
    try:
        out[name] = call(sid, scope=scope).model_dump(mode="json", by_alias=True)
    except Exception as e:
        out[name] = {"error": getattr(e, "status_code", None), "message": str(e)}
if len(sys.argv) > 4:
    # the same through the sandbox object (SandboxSync.connect needs it live)
    sb = SandboxSync.connect(sid, connection_config=cfg)
    out["sandbox_logs"] = sb.get_diagnostic_logs("all").model_dump(mode="json", by_alias=True)
    out["sandbox_events"] = sb.get_diagnostic_events("runtime").model_dump(mode="json", by_alias=True)
print(json.dumps(out))
"""


def sdk(db, tmp_path, tenant, sid, live=False):
    py = python_sdk_python()
    script = tmp_path / "diag_sdk.py"
    script.write_text(SDK_SCRIPT)
    args = [py, str(script), "127.0.0.1:%d" % db.port, KEY[tenant], sid] + (["live"] if live else [])
    run = run_script(args, env={})
    assert run.rc == 0, run.explain()
    return json.loads(run.out.strip().splitlines()[-1])


def check_content(d, sid, kind, scope):
    """The DiagnosticContentResponse of an inline answer."""
    assert d["sandboxId"] == sid and d["kind"] == kind and d["scope"] == scope, d
    assert d["delivery"] == "inline" and d["contentType"].startswith("text/plain"), d
    assert d.get("contentUrl") is None and d.get("expiresAt") is None, d
    assert isinstance(d["truncated"], bool), d
    assert d["contentLength"] == len(d["content"].encode("utf-8")), d


# ------------------------------------------------------------------ logs

def test_sdk_logs_show_what_the_sandbox_printed(db, tmp_path):
    o = OSB(db, "alpha")
    sid = o.create(BASE_IMAGE, entrypoint=sh("echo out-one; echo err-two >&2; echo out-three"))
    try:
        wait_logs(o, sid, "out-three")
        out = sdk(db, tmp_path, "alpha", sid, live=True)
        logs = out["logs"]
        check_content(logs, sid, "logs", "container")
        lines = logs["content"].splitlines()
        # stdout and stderr both, each stream in its order (Docker copies the
        # two pipes apart: their interleaving is Docker's)
        assert [l for l in lines if l in ("out-one", "out-three")] == ["out-one", "out-three"], logs
        assert lines.count("err-two") == 1, logs
        assert logs["truncated"] is False and not logs.get("warnings"), logs
        # scope all: the same output, with a warning that it is all there is
        assert "out-three" in out["sandbox_logs"]["content"], out
        assert out["sandbox_logs"]["scope"] == "all" and out["sandbox_logs"]["warnings"], out
        ev = out["events"]
        check_content(ev, sid, "events", "lifecycle")
        assert " Running" in ev["content"], ev
        assert out["sandbox_events"]["scope"] == "runtime" and out["sandbox_events"]["warnings"], out
    finally:
        o.delete(sid)


def test_logs_tail_cap_keeps_the_last_lines(db):
    o = OSB(db, "alpha")
    sid = o.create(BASE_IMAGE, entrypoint=sh("i=0; while [ $i -lt 200 ]; do echo n-$i; i=$((i+1)); done"))
    try:
        d = wait_logs(o, sid, "n-199")
        lines = d["content"].splitlines()
        # the default tail is the cap: exactly its last TAIL_CAP lines, whole
        assert lines == ["n-%d" % i for i in range(200 - TAIL_CAP, 200)], d
        assert d["truncated"] is True, d
        # a client's smaller tail
        r = diag(o, sid, "logs", "scope=container&tail=3")
        assert r.status == 200 and r.json["content"] == "n-197\nn-198\nn-199\n", r
        assert r.json["truncated"] is True, r
        # over the cap, zero, junk: 400, nothing else said
        for bad in ("%d" % (TAIL_CAP + 1), "0", "-1", "x", "", "1e3", "99999999999999999999"):
            r = diag(o, sid, "logs", "scope=container&tail=" + bad)
            assert r.status == 400 and r.json["code"] == "INVALID_REQUEST", (bad, r)
            assert "DIAGNOSTICS_LOG_TAIL" in r.json["message"], r
    finally:
        o.delete(sid)


def test_logs_byte_cap_keeps_the_newest_whole_lines(db):
    o = OSB(db, "alpha")
    # 30 lines of ~300 bytes (9 KB, under the tail cap): the byte cap cuts
    sid = o.create(BASE_IMAGE, entrypoint=sh(
        "i=0; while [ $i -lt 30 ]; do printf 'L%02d-%0290d\\n' $i 0; i=$((i+1)); done"))
    try:
        d = wait_logs(o, sid, "L29-")
        body = d["content"].encode("utf-8")
        assert len(body) <= BYTE_CAP and d["truncated"] is True, d
        lines = d["content"].splitlines()
        assert lines and all(re.fullmatch(r"L\d\d-0{290}", l) for l in lines), lines[:2]
        assert lines[-1].startswith("L29-") and len(lines) >= BYTE_CAP // 300 - 1, lines
        nums = [int(l[1:3]) for l in lines]
        assert nums == list(range(30 - len(nums), 30)), nums
    finally:
        o.delete(sid)


def test_logs_bytes_that_are_no_utf8_arrive_as_replacement(db):
    o = OSB(db, "alpha")
    sid = o.create(BASE_IMAGE, entrypoint=sh(r"printf 'bad-\377\376-nul-\000-end\n'"))
    try:
        d = wait_logs(o, sid, "-end")
        assert "bad-\ufffd\ufffd-nul-\ufffd-end" in d["content"], d
    finally:
        o.delete(sid)


def test_deleted_sandbox_logs_404_events_keep_its_story(db, tmp_path):
    """Running -> Paused -> Running -> Terminated, from the SDK: the events
    show the transitions in order with their times; the logs of the deleted
    sandbox are 404 (its container went with it); the history lives in
    Redis as a capped list that expires with the record."""
    o = OSB(db, "bravo")
    sid = o.create(BASE_IMAGE, entrypoint=sh("echo story"))
    assert o.pause(sid).status == 202
    o.wait_state(sid, "Paused")
    assert o.resume(sid).status == 202
    o.wait_state(sid, "Running")
    assert o.delete(sid).status == 204
    o.wait_state(sid, "Terminated")
    out = sdk(db, tmp_path, "bravo", sid)
    assert out["logs"].get("error") == 404, out
    ev = out["events"]
    check_content(ev, sid, "events", "lifecycle")
    rows = [l.split(" ", 2) for l in ev["content"].splitlines()]
    states = [r[1] for r in rows]
    # the story in order (Pending first; nothing after Terminated)
    assert states[0] == "Pending" and states[-1] == "Terminated", states
    # a state may repeat when its reason changed (the supervisor's watch saw
    # the container unpaused before the resume's own write): one step of the story
    story = [s for i, s in enumerate(states) if s in ("Running", "Paused", "Terminated")
             and (i == 0 or states[i - 1] != s)]
    assert story == ["Running", "Paused", "Running", "Terminated"], ev["content"]
    assert "Stopping" in states[states.index("Paused"):], states
    times = [r[0] for r in rows]
    assert times == sorted(times) and all(t.endswith("Z") for t in times), times
    assert ev["truncated"] is False, ev
    # the world: one list per record, it expires with the record
    key = db.key("sbevents:" + sid)
    assert db.redis.llen(key) == len(rows), rows
    rec_ttl, ev_ttl = db.redis.ttl(db.key("sandbox:" + sid)), db.redis.ttl(key)
    assert 0 < ev_ttl <= 3600 and abs(ev_ttl - rec_ttl) <= 2, (ev_ttl, rec_ttl)
    # raw: the same 404 for the logs, 200 for the events while the record lives
    r = diag(o, sid, "logs")
    assert r.status == 404 and "deleted" in r.json["message"], r


def test_events_history_is_capped(db):
    """A tenant that pauses and resumes its sandbox 34 times (68 transitions
    at least, and the create's 4) keeps 64 in Redis; the answer says
    truncated, newest last."""
    o = OSB(db, "charlie")
    sid = o.create(BASE_IMAGE)
    try:
        for _ in range(34):
            assert o.pause(sid).status == 202
            o.wait_state(sid, "Paused")
            assert o.resume(sid).status == 202
            o.wait_state(sid, "Running")
            # pacing, not a bound: a pause right after a resume has met
            # Docker's "already paused" (noticed here, not this test's subject)
            time.sleep(0.2)
        assert db.redis.llen(db.key("sbevents:" + sid)) == 64
        r = diag(o, sid, "events", "scope=lifecycle")
        assert r.status == 200 and r.json["truncated"] is True, r
        states = [l.split(" ")[1] for l in r.json["content"].splitlines()]
        assert len(states) == 64 and states[-1] == "Running" and "Pending" not in states, states
    finally:
        o.delete(sid)


# ----------------------------------------------------------- the attacks

def test_other_tenant_and_unknown_are_404_and_a_flood_harms_no_one(db, tmp_path):
    """delta's sandbox floods its log; echo asks delta's sandbox's
    diagnostics (404, none of delta's bytes) and its own (200, small, on
    time) during the flood; delta's own answer stays within the byte cap."""
    a, b = OSB(db, "delta"), OSB(db, "echo")
    flood = a.create(BASE_IMAGE, entrypoint=("sh", "-c", "echo SECRET-delta; yes FLOOD-delta-line"))
    mine = b.create(BASE_IMAGE, entrypoint=sh("echo echo-own"))
    try:
        wait_logs(b, mine, "echo-own")
        stop = threading.Event()
        sizes = []

        def flood_reads():
            while not stop.is_set():
                r = diag(a, flood, "logs")
                if r.status == 200:
                    sizes.append(len(r.json["content"].encode("utf-8")))
        t = threading.Thread(target=flood_reads)
        t.start()
        try:
            for _ in range(5):
                for kind, q in (("logs", "scope=container"), ("events", "scope=lifecycle")):
                    r = diag(b, flood, kind, q)
                    assert r.status == 404 and r.json["code"] == "SANDBOX_NOT_FOUND", r
                    assert "delta" not in json.dumps(r.json).replace(flood, ""), r
                t0 = time.monotonic()
                r = diag(b, mine, "logs")
                assert r.status == 200 and "echo-own" in r.json["content"], r
                assert time.monotonic() - t0 < 10, "echo's logs took %.1fs" % (time.monotonic() - t0)
        finally:
            stop.set()
            t.join(60)
        assert sizes and max(sizes) <= BYTE_CAP, sizes
        # through the SDK: bravo's own manager gets 404 for delta's sandbox
        out = sdk(db, tmp_path, "echo", flood)
        assert out["logs"].get("error") == 404 and out["events"].get("error") == 404, out
        for kind in ("logs", "events"):
            r = diag(b, "a" * 32, kind, "scope=all")
            assert r.status == 404 and r.json["code"] == "SANDBOX_NOT_FOUND", r
    finally:
        a.delete(flood)
        b.delete(mine)


def test_bad_scopes_400_and_no_scope_501(db):
    o = OSB(db, "alpha")
    sid = o.create(BASE_IMAGE)
    try:
        for kind, bad in (("logs", "lifecycle"), ("logs", "runtime"), ("events", "container"),
                          ("logs", "x" * 100), ("events", ""), ("logs", "CONTAINER")):
            r = diag(o, sid, kind, "scope=" + bad)
            assert r.status == 400 and r.json["code"] == "INVALID_REQUEST", (kind, bad, r)
        for kind in ("logs", "events"):
            r = diag(o, sid, kind, "tail=10" if kind == "logs" else "")
            assert r.status == 501 and r.json["code"] == "NOT_IMPLEMENTED", r
            assert "scope" in r.json["message"], r
        # the other DevOps routes stay 501 with the reason
        r = o.call("GET", "/sandboxes/%s/diagnostics/inspect" % sid)
        assert r.status == 501 and "not served" in r.json["message"], r
        # no key: 401 before anything
        r = http_request(db.port, "GET", "/v1/sandboxes/%s/diagnostics/logs?scope=container" % sid)
        assert r.status == 401, r
    finally:
        o.delete(sid)
