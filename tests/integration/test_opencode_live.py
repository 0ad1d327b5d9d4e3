"""What a person sees, and what survives: the OpenCode plugin with the real OpenCode (its TUI
driven in tmux and read off the screen, `opencode run`, `opencode serve`), a scripted model and
a broker with Docker sandboxes, through queues, outages and stops.

- test_queue_on_the_tui_screen: capacity 1, the slot held by another lease: the TUI shows the
  waiting bash call's queue position (under the command and as a toast), then the command's
  output once the slot frees; leaving the TUI (ctrl+c) releases the lease.
- test_queue_in_opencode_run: the same through `opencode run`: the position and the sandbox
  being ready are printed on stderr while it waits; the output follows.
- test_supervisor_down_then_back: the supervisor SIGKILLed before the first tool call: the call waits
  (202 provisioning: the lease is heartbeated, and the broker's explanation reaches the tool's
  title); the supervisor starts; the call completes on that same lease.
- test_nginx_restart_while_a_command_runs: nginx stops and starts while a bash call runs: the
  call's result is the command's real outcome, read back from the broker, with a note saying
  so, and the command ran once.
- test_expired_lease_is_told: OpenCode suspended (SIGSTOP) past the lease TTL: the broker
  expires the lease and removes the sandbox; the next call runs in a new sandbox, and the model
  reads, at the top of that result, that its files are gone.
- test_dead_sandbox_is_told: the session's container killed behind the broker's back: the
  broker ends the lease (SANDBOX_LOST); the person is told at once (a toast), the model at its
  next call, with the reason, and that call runs in a new sandbox.
- test_sigterm_and_sigint_of_serve_release: `opencode serve` stopped with SIGTERM (and once
  more with SIGINT) releases its lease at once (reason idle), so the sandbox is kept
  (stop_keep), not left to expire and be removed.
"""

import os
import signal
import sys
import threading
import time

from brokerlib import wait_until
from sandboxlib import DOCKER, docker_broker, require_docker  # noqa: F401

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "opencode"))
from oclib import _in_thread, completed, installed, model, opencode, part_updates, tools_by_name  # noqa: E402,F401
from runner import OpenCode, Tui, opencode_run  # noqa: E402

require_docker()


def hold_the_slot(sb):
    """Another user's lease takes the broker's only slot; returns its releaser."""
    lease = sb.acquire("holder", "hold-1")
    stop = threading.Event()

    def beat():
        while not stop.wait(1.0):
            sb.b.heartbeat("holder", "hold-1")
    threading.Thread(target=beat, daemon=True).start()

    def release():
        stop.set()
        sb.release("holder", "hold-1", "deleted")
    return lease, release


def released_leases(b):
    """The fcgi log's release lines (reason and session)."""
    return [ln for ln in b.logs("fcgi-leases").splitlines() if "lease released (reason" in ln]


def test_queue_on_the_tui_screen(docker_broker, model, tmp_path):
    sb = docker_broker(BROKER_CAPACITY=1, IDLE_POLICY="stop_keep")
    _, release = hold_the_slot(sb)
    model.script("tuiq", [[("bash", {"command": "echo hello from the queue; pwd", "description": "Say hello"})], "all done"])
    oc = OpenCode(str(tmp_path / "oc"), model, {
        "SANDBOX_BROKER_URL": "http://127.0.0.1:%d" % sb.b.port, "SANDBOX_BROKER_API_KEY": sb.b.api_key,
        "SANDBOX_BROKER_POLL_MS": "200", "SANDBOX_BROKER_IDLE_RELEASE_MS": "-1"}).setup()
    tui = Tui(oc).start(prompt="SCRIPT:tuiq go")
    try:
        # waiting: the position under the command, and the toast
        screen = tui.wait_for(r"Waiting for a sandbox \(position 1 in the queue\)", 90)
        print(screen)
        assert screen.count("Waiting for a sandbox (position 1 in the queue)") >= 1
        assert "echo hello from the queue" in screen, screen
        assert sb.b.status()["queueDepth"] == 1
        release()
        screen = tui.wait_for(r"hello from the queue[^\n]*\n[^\n]*/workspace", 90, "the command's output")
        print(screen)
        tui.wait_for(r"all done", 60)
        assert sb.b.status()["activeLeases"] == 1
        # leaving the TUI releases the session's lease (dispose), reason idle
        tui.keys("C-c")
        for _ in range(20):
            if not tui.alive():
                break
            time.sleep(0.25)
        if tui.alive():
            tui.keys("C-c")  # the first one only cleared the prompt
        wait_until(lambda: sb.b.status()["activeLeases"] == 0, 30, desc="the TUI's lease released on exit")
        assert any("reason idle" in ln for ln in released_leases(sb.b)), released_leases(sb.b)
    finally:
        tui.stop()


def test_queue_in_opencode_run(docker_broker, model, tmp_path):
    sb = docker_broker(BROKER_CAPACITY=1)
    _, release = hold_the_slot(sb)
    model.script("runq", [[("bash", {"command": "echo ran after the wait"})], "done"])
    oc = OpenCode(str(tmp_path / "oc"), model, {
        "SANDBOX_BROKER_URL": "http://127.0.0.1:%d" % sb.b.port, "SANDBOX_BROKER_API_KEY": sb.b.api_key,
        "SANDBOX_BROKER_POLL_MS": "200"}).setup()
    j = _in_thread(opencode_run, oc, "SCRIPT:runq go")
    wait_until(lambda: sb.b.status()["queueDepth"] == 1, 90, desc="run's call queued")
    time.sleep(2)
    release()
    rc, stdout, stderr = j()
    print(stdout, stderr)
    assert rc == 0
    assert "sandbox-broker: Waiting for a sandbox (position 1 in the queue)" in stderr, stderr
    assert "sandbox-broker: Sandbox ready after" in stderr, stderr
    assert "ran after the wait" in stderr, stderr   # run prints the tools' output on stderr
    assert sb.b.status()["activeLeases"] == 0, "run released its lease at its end"


def test_supervisor_down_then_back(docker_broker, opencode, model):
    # a short TTL: the lease whose sandbox waits for the supervisor must be heartbeated meanwhile
    sb = docker_broker(BROKER_CAPACITY=2, LEASE_TTL_MS="3000")
    sb.b.stop("supervisor", kill=True)
    model.script("nosup", [[("bash", {"command": "echo made at last", "description": "Wait for it"})], "done"])
    oc = opencode(sb.b, IDLE_RELEASE_MS="-1", HEARTBEAT_MS="500")
    sid = oc.session()
    oc.watch_events()
    j = _in_thread(oc.prompt, sid, "SCRIPT:nosup")

    # the lease exists (its slot held), its sandbox cannot be made: the tool's title says why
    def told():
        return [u for u in part_updates(oc, sid, "bash") if (u.get("metadata") or {}).get("sandbox") == "provisioning"]
    wait_until(lambda: told(), 60, desc="the waiting call's title")
    title = told()[0]["title"]
    print(title)
    assert title.startswith("Waiting for a sandbox (starting it): "), title
    assert "supervisor" in title, title
    lease0 = sb.b.live_leases()
    assert len(lease0) == 1, lease0
    # three TTLs without a supervisor (nothing reaps meanwhile, so the heartbeats are checked
    # below: the supervisor's first round reaps a lease not heartbeated within the TTL)
    time.sleep(9)
    sb.b.start("supervisor")
    j()
    (_, st), = tools_by_name(oc, sid)
    assert completed(st)["output"] == "made at last\n", st
    assert sb.b.live_leases() == lease0, "the same lease, kept alive while its sandbox was made"
    assert len(sb.containers()) == 1, "one sandbox made"


def test_nginx_restart_while_a_command_runs(docker_broker, opencode, model):
    sb = docker_broker(BROKER_CAPACITY=2)
    model.script("ngx", [[("bash", {"command": "echo start; sleep 6; echo ran >> runs.txt; echo finished", "description": "Long"})],
                         [("bash", {"command": "cat runs.txt"})], "done"])
    oc = opencode(sb.b, IDLE_RELEASE_MS="-1")
    sid = oc.session()
    j = _in_thread(oc.prompt, sid, "SCRIPT:ngx")
    wait_until(lambda: sb.b.status()["activeLeases"] == 1, 60, desc="the lease")
    time.sleep(2.5)
    sb.b.stop("nginx")
    time.sleep(3)
    sb.b.start("nginx")
    j()
    (_, first), (_, second) = tools_by_name(oc, sid)
    out = completed(first)["output"]
    print(out)
    assert out.startswith("start\nfinished\n"), out
    assert "this result was recovered from the broker (the command ran once)" in out, out
    assert first["metadata"]["recovered"] is True
    assert completed(second)["output"] == "ran\n", "the command ran exactly once"


def test_expired_lease_is_told(docker_broker, opencode, model):
    sb = docker_broker(BROKER_CAPACITY=2, LEASE_TTL_MS="3000")
    model.script("exp1", [[("write", {"filePath": "notes.txt", "content": "remember me\n"})], "saved"])
    model.script("exp2", [[("read", {"filePath": "notes.txt"})], "hm"])
    oc = opencode(sb.b, IDLE_RELEASE_MS="-1", HEARTBEAT_MS="500")
    sid = oc.session()
    oc.prompt(sid, "SCRIPT:exp1")
    (_, w), = tools_by_name(oc, sid)
    old = completed(w)["metadata"]["sandboxId"]
    # OpenCode is suspended (a laptop lid closed) for longer than the lease's TTL
    os.killpg(oc.proc.pid, signal.SIGSTOP)
    try:
        wait_until(lambda: sb.b.status()["activeLeases"] == 0, 30, desc="the broker to expire the lease")
        sb.wait_container_state(old, None, timeout=60)
    finally:
        os.killpg(oc.proc.pid, signal.SIGCONT)
    oc.watch_events()
    oc.prompt(sid, "SCRIPT:exp2")
    (_, r) = tools_by_name(oc, sid)[1]
    assert r["status"] == "error", r
    print(r["error"])
    assert r["error"].startswith("NOTE: the sandbox this session worked in (%s) is gone: the broker no longer knows its lease: it expired" % old[:12]), r["error"]
    assert "files and processes from before are lost" in r["error"]
    assert "File not found: /workspace/notes.txt" in r["error"]
    # the model read it (its next request), and the person was told (a toast)
    tool, text = model.tool_results("exp2")[-1]
    assert tool == "read" and text.startswith("NOTE: the sandbox this session worked in"), text
    toasts = [e for e in oc.events if (e.get("payload", e)).get("type") == "tui.toast.show"]
    assert any("is gone" in (t.get("payload", t))["properties"]["message"] for t in toasts), toasts


def test_sigterm_and_sigint_of_serve_release(docker_broker, opencode, model):
    sb = docker_broker(BROKER_CAPACITY=2, IDLE_POLICY="stop_keep", LEASE_TTL_MS="60000")
    for n, sig in enumerate((signal.SIGTERM, signal.SIGINT)):
        model.script("sig%d" % n, [[("bash", {"command": "echo kept > kept.txt"})], "ok"])
        oc = opencode(sb.b, IDLE_RELEASE_MS="-1", USER_ID="sig%d" % n)
        sid = oc.session()
        oc.prompt(sid, "SCRIPT:sig%d" % n)
        (_, b), = tools_by_name(oc, sid)
        sandbox = completed(b)["metadata"]["sandboxId"]
        assert sb.b.status()["activeLeases"] == 1
        t0 = time.monotonic()
        os.kill(oc.proc.pid, sig)
        oc.proc.wait(15)
        # released at once, not at the TTL (60 s): reason idle, so the sandbox is stopped and kept
        wait_until(lambda: sb.b.status()["activeLeases"] == 0, 10, desc="the lease released on %s" % sig.name)
        assert time.monotonic() - t0 < 10
        assert any("reason idle" in ln and sid in ln for ln in released_leases(sb.b)), released_leases(sb.b)
        sb.wait_container_state(sandbox, ("exited",), timeout=60)
        oc.stop()


def test_dead_sandbox_is_told(docker_broker, opencode, model):
    sb = docker_broker(BROKER_CAPACITY=2)
    model.script("dead1", [[("write", {"filePath": "notes.txt", "content": "remember me\n"})], "saved"])
    model.script("dead2", [[("bash", {"command": "cat notes.txt; echo status $?"})], "hm"])
    oc = opencode(sb.b, IDLE_RELEASE_MS="-1", HEARTBEAT_MS="500")
    sid = oc.session()
    oc.watch_events()
    oc.prompt(sid, "SCRIPT:dead1")
    (_, w), = tools_by_name(oc, sid)
    old = completed(w)["metadata"]["sandboxId"]
    st, body = DOCKER.call("POST", "/containers/sb-%s/kill" % old)
    assert st == 204, (st, body)
    # the broker ends the lease; the plugin's next heartbeat hears SANDBOX_LOST and says so
    wait_until(lambda: sb.b.status()["activeLeases"] == 0, 30, desc="the broker to end the lease")

    def toasts():
        return [(e.get("payload", e))["properties"]["message"] for e in list(oc.events)
                if (e.get("payload", e)).get("type") == "tui.toast.show"]
    wait_until(lambda: any("sandbox is gone" in t for t in toasts()), 30, desc="the toast")
    told = [t for t in toasts() if "sandbox is gone" in t][0]
    print(told)
    assert "it died (ENTRYPOINT_EXITED" in told, told
    oc.prompt(sid, "SCRIPT:dead2")
    (_, b) = tools_by_name(oc, sid)[1]
    out = completed(b)["output"]
    print(out)
    assert out.startswith("NOTE: the sandbox this session worked in (%s) is gone: it died (ENTRYPOINT_EXITED" % old[:12]), out
    assert "status 1" in out, out
    assert b["metadata"]["sandboxId"] != old
