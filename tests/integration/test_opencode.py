"""The OpenCode plugin (@sandbox-broker/opencode, plugins/opencode) with the
real OpenCode (npm `opencode-ai`, run headless by `opencode serve`), a
scripted local model, and the real broker stack with Docker sandboxes.

- test_opencode_tools_run_in_sandbox: one session's write, bash, edit, read,
  grep and glob run in its sandbox: the files are in the container and not on
  the host; the outputs look like the built-ins'; deleting the session
  releases its lease (reason deleted) and removes the container.
- test_opencode_capacity_queue_idle_release: capacity 2, three sessions: the
  third's tool call waits in the queue (its title showed the queue position
  live, seen on OpenCode's event stream; its result records it) and
  completes after an idle release frees a slot; session deletion releases
  with reason deleted.
- test_opencode_bash_streams_output: a bash printing lines for ~3 s shows
  its output so far in metadata updates before it completes.
- test_opencode_child_session_shares_lease: a child session (parentID) runs
  on its parent's lease at capacity 1; its going idle while the parent works
  releases nothing; the family idle releases the lease.
- test_opencode_user_shared_two_sessions: one user, two sessions in
  user_shared: one sandbox, a directory each; a child session (parentID)
  runs on its parent's lease and directory.
- test_opencode_multi_user_pool: two users (two OpenCode processes, one at a
  time) in a multi_user_shared pool: one sandbox, a Linux user each; user A's
  read of user B's file fails with a permission error.
- test_opencode_plugin_hooks: no OpenCode; a Node test
  (opencode/plugin_hooks.test.mjs) calls the plugin's hooks and tools against
  a broker with a 3 s lease TTL: heartbeats, idle release, reacquire after
  expiry, child sessions, broker down or hung, wrong or missing API key.

scripts/opencode-install (run by scripts/deps-install, and by these tests)
installs OpenCode and builds the plugin; without it these tests fail.
"""

import io
import os
import re
import subprocess
import sys
import tarfile
import threading
import time

from brokerlib import wait_until
from sandboxlib import DOCKER, docker_broker, require_docker  # noqa: F401

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "opencode"))
from oclib import (_in_thread, completed, container_file, installed, model, opencode,  # noqa: E402,F401
                   part_updates, tools_by_name)
from runner import PLUGIN_DIST  # noqa: E402

require_docker()


def nginx_requests(b, path):
    """How many requests for `path` the broker's nginx logged (its access log)."""
    try:
        with open(os.path.join(b.state_dir, "nginx", "access.log")) as f:
            return sum(1 for ln in f if '"GET %s ' % path in ln)
    except OSError:
        return 0


# ------------------------------------------------ the plugin's hooks, no OpenCode

HOOKS_TEST = os.path.join(os.path.dirname(__file__), "opencode", "plugin_hooks.test.mjs")


def test_opencode_plugin_hooks(docker_broker):
    """The plugin's hooks and LeaseManager called directly by a Node test
    (opencode/plugin_hooks.test.mjs, node --test) against a real broker with a
    3 s lease TTL: heartbeats keep a lease past its TTL; idle release after
    the grace period (a new turn disarms it) and transparent reacquire; a tool
    call on an expired lease gets a new one on the same sandbox; a child
    session shares its parent's lease; a closed port, a hung broker and a
    wrong or missing API key give clear tool errors within a bounded time."""
    sb = docker_broker(BROKER_CAPACITY=2, LEASE_TTL_MS=3000, IDLE_POLICY="stop_keep")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SANDBOX_BROKER", "OPENCODE"))}
    env.update({"PLUGIN_DIST": PLUGIN_DIST, "BROKER_URL": "http://127.0.0.1:%d" % sb.b.port,
                "BROKER_API_KEY": sb.b.api_key, "LEASE_TTL_MS": "3000"})
    r = subprocess.run(["node", "--test", "--test-reporter=spec", HOOKS_TEST], env=env,
                       capture_output=True, text=True, timeout=300)
    print(r.stdout[-6000:], r.stderr[-3000:])
    assert r.returncode == 0, "node --test plugin_hooks.test.mjs failed:\n%s\n%s" % (r.stdout[-8000:], r.stderr[-3000:])
    assert "# fail 0" in r.stdout or "\u2139 fail 0" in r.stdout, r.stdout[-2000:]
    # nothing leaked: every lease the plugin took is gone, from the broker's view
    st = sb.b.status()
    assert st["activeLeases"] == 0 and st["queueDepth"] == 0, st


# --------------------------------------------------------------- end to end

def test_opencode_tools_run_in_sandbox(docker_broker, opencode, model):
    sb = docker_broker(BROKER_CAPACITY=2)
    model.script("e2e", [
        [("write", {"filePath": "notes/hello.txt", "content": "hello from opencode\nsecond line\n"})],
        [("bash", {"command": "cat notes/hello.txt; pwd; id -un; echo oops >&2; exit 3",
                   "description": "Show the file"})],
        [("edit", {"filePath": "notes/hello.txt", "oldString": "hello from", "newString": "goodbye from"})],
        [("read", {"filePath": "notes/hello.txt"})],
        [("grep", {"pattern": "goodbye", "include": "*.txt"})],
        [("glob", {"pattern": "**/*.txt"})],
        [("bash", {"command": "printf 'print(1)\\n' > patched.py; sed -i s/second/third/ notes/hello.txt"})],
        [("read", {"filePath": "missing.txt"})],
        [("bash", {"command": "sleep 5", "timeout": 500})],
        [("list", {"path": "notes"})],
        [("webfetch", {"url": "http://127.0.0.1:%d/health" % sb.b.port, "format": "text"})],
        "All done.",
    ])
    health_before = nginx_requests(sb.b, "/health")
    oc = opencode(sb.b, IDLE_RELEASE_MS="-1")
    sid = oc.session()
    oc.prompt(sid, "SCRIPT:e2e please work in the sandbox")

    tools = tools_by_name(oc, sid)
    assert [t for t, _ in tools] == ["write", "bash", "edit", "read", "grep", "glob", "bash",
                                     "read", "bash", "list", "webfetch"], tools
    w, b, e, r, g, gl, ap, miss, slow, ls, wf = [s for _, s in tools]
    sandbox_id = completed(w)["metadata"]["sandboxId"]
    assert completed(w)["output"] == "Wrote file successfully."

    # bash: combined output, the sandbox's workdir and user, the exit code
    out = completed(b)["output"]
    assert out.startswith("hello from opencode\nsecond line\n/workspace\nroot\n"), out
    assert "oops" in out, out
    assert b["metadata"]["exit"] == 3, b["metadata"]
    assert b["title"] == "Show the file"
    assert completed(e)["output"] == "Edit applied successfully."
    out = completed(r)["output"]
    assert out == ("<path>/workspace/notes/hello.txt</path>\n<type>file</type>\n<content>\n"
                   "1: goodbye from opencode\n2: second line\n\n(End of file - total 2 lines)\n</content>"), out
    assert completed(g)["output"] == ("Found 1 matches\n/workspace/notes/hello.txt:\n"
                                      "  Line 1: goodbye from opencode"), g
    assert completed(gl)["output"] == "/workspace/notes/hello.txt", gl
    assert completed(ap)["output"] == "(no output)", ap
    assert miss["status"] == "error" and "File not found: /workspace/missing.txt" in miss["error"], miss
    out = completed(slow)["output"]
    assert "terminated command after exceeding timeout 500 ms" in out, out
    assert completed(ls)["output"] == "/workspace/notes/\n  hello.txt", ls
    # webfetch ran in the sandbox, which has no network: the broker's own /health on the
    # host's loopback was not reached (the built-in would have fetched it from the host)
    assert wf["status"] == "error", wf
    assert "The sandbox could not reach 127.0.0.1:%d" % sb.b.port in wf["error"], wf
    assert nginx_requests(sb.b, "/health") == health_before
    # OpenCode's own host tools that the plugin does not replace are denied while it is loaded
    st, cfg = oc.call("GET", "/config")
    assert st == 200 and all(cfg["permission"][t] == "deny" for t in ("websearch", "codesearch", "lsp")), cfg.get("permission")

    # the world: the files are in the container, not on the host
    assert container_file(sandbox_id, "/workspace/notes/hello.txt") == b"goodbye from opencode\nthird line\n"
    assert container_file(sandbox_id, "/workspace/patched.py") == b"print(1)\n"
    for p in ("notes/hello.txt", "hello.txt", "patched.py"):
        assert not os.path.exists(os.path.join(oc.project, p)), p
    # the model was told where it works, and got our tools in place of the built-ins
    assert "/workspace" in model.system_prompt("e2e") and "Sandbox Broker" in model.system_prompt("e2e")
    offered = model.tools_offered("e2e")
    for t in ("bash", "read", "write", "edit", "glob", "grep"):
        assert t in offered, offered
    # the tool results the model saw are the sandbox's
    results = model.tool_results("e2e")
    assert results[1][0] == "bash" and "/workspace" in results[1][1], results

    # deleting the session releases its lease with reason deleted: the container goes
    lease_before = sb.b.status()
    assert lease_before["activeLeases"] == 1, lease_before
    oc.delete(sid)
    wait_until(lambda: sb.b.status()["activeLeases"] == 0, 30, desc="lease released")
    sb.wait_container_state(sandbox_id, None, timeout=60)


def test_opencode_bash_streams_output(docker_broker, opencode, model):
    """A long bash call shows its output while it runs: OpenCode publishes the
    call's metadata updates (metadata.output, as its built-in bash tool does)
    with the first lines before the last is printed; the result is the whole
    output, with the command's exit code, and no output file is left behind."""
    sb = docker_broker(BROKER_CAPACITY=1)
    model.script("stream", [
        [("bash", {"command": "for i in 1 2 3 4 5 6 7 8; do echo line $i; sleep 0.4; done; exit 4",
                   "description": "Count slowly"})],
        [("bash", {"command": "echo quick"})],
        "streamed"])
    oc = opencode(sb.b, IDLE_RELEASE_MS="-1")
    sid = oc.session()
    oc.watch_events()
    oc.prompt(sid, "SCRIPT:stream")

    (_, slow), (_, quick) = tools_by_name(oc, sid)
    lines = "".join("line %d\n" % i for i in range(1, 9))
    assert completed(slow)["output"] == lines, slow
    assert slow["metadata"]["exit"] == 4 and slow["metadata"]["output"] == lines, slow["metadata"]
    assert completed(quick)["output"] == "quick\n", quick
    # partial output while it ran: some lines, not yet the last
    partial = [u["metadata"]["output"] for u in part_updates(oc, sid, "bash")
               if u["status"] == "running" and (u.get("metadata") or {}).get("streaming")]
    print("streamed updates: %r" % partial)
    assert partial, [(u["status"], u.get("title"), u.get("metadata")) for u in part_updates(oc, sid, "bash")]
    assert partial[0].startswith("line 1\n") and "line 8" not in partial[0], partial
    assert all(lines.startswith(p) for p in partial), partial
    # the copy of the output in the sandbox's /tmp is gone
    st, body = DOCKER.call("GET", "/containers/sb-%s/archive?path=/tmp" % slow["metadata"]["sandboxId"])
    assert st == 200, (st, body)
    with tarfile.open(fileobj=io.BytesIO(body)) as t:
        left = [m.name for m in t.getmembers() if ".opencode-out" in m.name]
    assert left == [], left


def test_opencode_child_session_shares_lease(docker_broker, opencode, model):
    """A child session (parentID, as the task tool makes) runs on its parent's
    lease and sandbox, even at capacity 1; the child going idle while its
    parent still works releases nothing (the parent's long bash call survives
    the grace period); once parent and child are idle, the parent's lease is
    released after the grace period."""
    sb = docker_broker(BROKER_CAPACITY=1)
    model.script("ch_parent", [[("bash", {"command": "echo parent > p.txt; sleep 25; cat p.txt"})],
                               "parent done"])
    # the parent's lease being active does not mean its bash has run yet: the child waits
    # (up to 20 s) for the parent's file
    model.script("ch_child", [[("bash", {"command": "for i in $(seq 200); do [ -s p.txt ] && break; "
                                                    "sleep 0.1; done; cat p.txt; echo child; pwd"})],
                              "child done"])
    oc = opencode(sb.b, IDLE_RELEASE_MS="1500")
    parent = oc.session()
    jp = _in_thread(oc.prompt, parent, "SCRIPT:ch_parent")
    wait_until(lambda: sb.b.status()["activeLeases"] == 1, 90, desc="the parent's lease")
    lease0 = sb.b.live_leases()

    child = oc.session(parent=parent)
    oc.prompt(child, "SCRIPT:ch_child")
    (_, bc), = tools_by_name(oc, child)
    assert completed(bc)["output"] == "parent\nchild\n/workspace\n", bc
    # the child is idle now; past the grace period the parent's lease is still there
    time.sleep(3)
    st = sb.b.status()
    assert (st["activeLeases"], st["queueDepth"]) == (1, 0), st
    assert sb.b.live_leases() == lease0, (sb.b.live_leases(), lease0)   # the same lease, never renewed

    jp()
    (_, bp), = tools_by_name(oc, parent)
    assert completed(bp)["output"] == "parent\n", bp
    assert bp["metadata"]["sandboxId"] == bc["metadata"]["sandboxId"], (bp, bc)
    # now the whole family is idle: the parent's lease goes after the grace period
    wait_until(lambda: sb.b.status()["activeLeases"] == 0, 30, desc="the parent's idle release")


# ---------------------------------------------------- the three scenarios

def test_opencode_capacity_queue_idle_release(docker_broker, opencode, model):
    """Scenario 1 through OpenCode: capacity 2, three sessions. The third
    session's tool call waits in the queue (its metadata records the position)
    and completes after the first session goes idle and its lease is
    released; the first session's next tool call gets its stopped sandbox
    back (stop_keep); deleting a session removes its sandbox."""
    sb = docker_broker(BROKER_CAPACITY=2, IDLE_POLICY="stop_keep")
    model.script("cap_a", [[("bash", {"command": "echo a > marker; sleep 6; cat marker"})], "a done"])
    model.script("cap_b", [[("bash", {"command": "echo b > marker; sleep 20; cat marker"})], "b done"])
    model.script("cap_c", [[("bash", {"command": "echo c from $(pwd)"})], "c done"])
    model.script("cap_a2", [[("read", {"filePath": "marker"})], "a2 done"])
    oc = opencode(sb.b, IDLE_RELEASE_MS="1500", USER_ID="alice")
    s1, s2, s3 = oc.session(), oc.session(), oc.session()
    oc.watch_events()

    j1 = _in_thread(oc.prompt, s1, "SCRIPT:cap_a")
    j2 = _in_thread(oc.prompt, s2, "SCRIPT:cap_b")
    wait_until(lambda: sb.b.status()["activeSlots"] == 2 and len(sb.containers()) == 2, 90,
               desc="two sandboxes")
    j3 = _in_thread(oc.prompt, s3, "SCRIPT:cap_c")

    # the third waits: queued at the broker, no third container, the tool's title says so
    wait_until(lambda: sb.b.status()["queueDepth"] == 1, 30, desc="s3 queued")
    assert sb.b.status()["queueDepth"] == 1
    assert len(sb.containers()) == 2

    # s1's turn ends; 1.5 s later its lease is released (idle): s3 gets the slot
    j1()
    j3()
    (tool3, st3), = tools_by_name(oc, s3)
    assert completed(st3)["output"] == "c from /workspace\n", st3
    # while it waited, the running call's title and metadata showed its queue position live
    # (ctx.metadata, published by OpenCode as message.part.updated events)
    waiting = [u for u in part_updates(oc, s3, "bash") if u["status"] == "running"
               and (u.get("metadata") or {}).get("sandbox") == "queued"]
    assert waiting, part_updates(oc, s3, "bash")
    assert waiting[0]["title"] == "Waiting for a sandbox (position 1 in the queue)", waiting[0]
    assert waiting[0]["metadata"]["queuePosition"] == 1, waiting[0]
    # the call says it waited, and where it was in the queue
    assert st3["metadata"]["queued"]["position"] == 1, st3["metadata"]
    assert st3["metadata"]["queued"]["waitedMs"] > 1000, st3["metadata"]
    sid1 = completed(tools_by_name(oc, s1)[0][1])["metadata"]["sandboxId"]
    sid3 = st3["metadata"]["sandboxId"]
    assert sid3 != sid1
    sb.wait_container_state(sid1, ("exited",), timeout=60)   # stop_keep: stopped, kept
    assert container_file(sid3, "/workspace/marker") is None

    # s1 again: after s2 and s3 go idle a slot frees, and its own stopped sandbox comes back
    j2()
    oc.prompt(s1, "SCRIPT:cap_a2")
    (_, st1b), = [t for t in tools_by_name(oc, s1) if t[0] == "read"]
    assert completed(st1b)["metadata"]["sandboxId"] == sid1, st1b
    assert "1: a" in st1b["output"], st1b

    # deleting a session releases with reason deleted: its sandbox is removed
    oc.delete(s1)
    sb.wait_container_state(sid1, None, timeout=60)


def test_opencode_user_shared_two_sessions(docker_broker, opencode, model):
    """Scenario 2 through OpenCode: one user, two sessions in user_shared:
    one sandbox, a directory each (/workspace/<session id>); a session's
    relative paths stay in its own directory. A child session (parentID, as
    the task tool makes) runs on its parent's lease, in its parent's
    directory. Deleting one session keeps the sandbox for the other."""
    sb = docker_broker(BROKER_CAPACITY=2)
    model.script("us_1", [[("write", {"filePath": "mine.txt", "content": "session one\n"})],
                          [("bash", {"command": "pwd; ls"})], "one done"])
    model.script("us_child", [[("bash", {"command": "pwd; cat mine.txt"})], "child done"])
    oc = opencode(sb.b, MODE="user_shared", USER_ID="dana", IDLE_RELEASE_MS="-1")
    s1, s2 = oc.session(), oc.session()
    model.script("us_2", [[("bash", {"command": "pwd; ls -A | wc -l"})],
                          [("read", {"filePath": "mine.txt"})],
                          [("grep", {"pattern": "session", "path": "/workspace"})],
                          [("read", {"filePath": "/workspace/%s/mine.txt" % s1})], "two done"])
    oc.prompt(s1, "SCRIPT:us_1")
    oc.prompt(s2, "SCRIPT:us_2")

    (_, w1), (_, b1) = tools_by_name(oc, s1)
    (_, b2), (_, r2), (_, g2), (_, r2b) = tools_by_name(oc, s2)
    sandbox_id = completed(w1)["metadata"]["sandboxId"]
    assert completed(b1)["output"] == "/workspace/%s\nmine.txt\n" % s1, b1
    assert completed(b2)["output"] == "/workspace/%s\n0\n" % s2, b2
    assert b2["metadata"]["sandboxId"] == sandbox_id, (b2, sandbox_id)
    # session 2's relative path is its own directory: session 1's file is not there
    assert r2["status"] == "error" and "File not found: /workspace/%s/mine.txt" % s2 in r2["error"], r2
    # read, write and the search tools stay in the session's directory alike (the broker's file
    # API refuses the rest; the plugin refuses it for glob, grep and list the same way)
    assert g2["status"] == "error" and g2["error"].startswith("Permission denied: /workspace is outside your working directory /workspace/%s" % s2), g2
    assert r2b["status"] == "error" and "Permission denied" in r2b["error"] and "outside your working directory" in r2b["error"], r2b
    assert container_file(sandbox_id, "/workspace/%s/mine.txt" % s1) == b"session one\n"
    assert container_file(sandbox_id, "/workspace/%s/mine.txt" % s2) is None
    assert [c["Labels"]["io.sandbox-broker.sandbox-id"] for c in sb.containers()] == [sandbox_id]
    st = sb.b.status()
    assert (st["activeSlots"], st["activeLeases"]) == (1, 2), st

    # a child session of s1 (what the task tool makes): s1's lease, s1's directory, no new lease
    child = oc.session(parent=s1)
    oc.prompt(child, "SCRIPT:us_child")
    (_, bc), = tools_by_name(oc, child)
    assert completed(bc)["output"] == "/workspace/%s\nsession one\n" % s1, bc
    assert bc["metadata"]["sandboxId"] == sandbox_id
    assert sb.b.status()["activeLeases"] == 2
    assert "/workspace/%s" % s1 in model.system_prompt("us_child")

    # deleting s1 releases its lease (reason deleted); the sandbox stays for s2
    oc.delete(s1)
    wait_until(lambda: sb.b.status()["activeLeases"] == 1, 30, desc="s1's lease released")
    time.sleep(1)  # give a (wrong) teardown time to happen
    assert DOCKER.state("sb-" + sandbox_id) == "running"
    oc.delete(s2)
    wait_until(lambda: sb.b.status()["activeLeases"] == 0, 30, desc="s2's lease released")


def test_opencode_multi_user_pool(docker_broker, opencode, model):
    """Scenario 3 through OpenCode: two users in one multi_user_shared pool,
    each with their own OpenCode (one process at a time: the plugin's userId
    is per process). They share one sandbox as separate Linux users; user A's
    read of user B's file fails, and so does a cat of it."""
    sb = docker_broker(BROKER_CAPACITY=2, POOL_SEATS=4)
    pool = dict(MODE="multi_user_shared", POOL_ID="p1", IDLE_RELEASE_MS="-1")

    # user B (frank) writes a file in his home
    model.script("mu_b", [[("write", {"filePath": "secret.txt", "content": "frank's secret\n"})],
                          [("bash", {"command": "id -un; pwd; stat -c %a ."})],
                          [("bash", {"command": "echo frank-bg-secret; sleep 120", "background": True})], "b done"])
    ocb = opencode(sb.b, USER_ID="frank", **pool)
    sid_b = ocb.session()
    ocb.prompt(sid_b, "SCRIPT:mu_b")
    (_, wb), (_, bb), (_, bgb) = tools_by_name(ocb, sid_b)
    log_b = completed(bgb)["metadata"]["log"]
    # a seat's TMPDIR is its private /tmp/.seats/<uid> (docs/AGENT.md, "Seats")
    assert re.fullmatch(r"/tmp/\.seats/\d+/opencode-bg\.\w+/output\.log", log_b), bgb
    sandbox_id = completed(wb)["metadata"]["sandboxId"]
    user_b, home_b, mode_b = completed(bb)["output"].split()
    assert (home_b, mode_b) == ("/home/" + user_b, "700"), bb
    assert wb["metadata"]["filepath"] == home_b + "/secret.txt", wb

    # one OpenCode at a time: B's stops without releasing (SIGKILL, no dispose), as if it ran
    # elsewhere; the test heartbeats B's lease so that B keeps his seat meanwhile
    ocb.stop(kill=True)
    stop_hb = threading.Event()

    def heartbeat_b():
        while not stop_hb.wait(1.0):
            sb.b.heartbeat("frank", sid_b)
    assert sb.b.heartbeat("frank", sid_b).status == 200
    hb = threading.Thread(target=heartbeat_b, daemon=True)
    hb.start()
    try:
        # user A (erin), same pool: another seat, same sandbox; B's file is out of reach
        model.script("mu_a", [
            [("bash", {"command": "id -un; pwd"})],
            [("read", {"filePath": home_b + "/secret.txt"})],
            [("bash", {"command": "cat %s/secret.txt" % home_b})],
            [("write", {"filePath": "mine.txt", "content": "erin's\n"})],
            [("read", {"filePath": "mine.txt"})],
            [("bash", {"command": "cat %s; ls %s" % (log_b, os.path.dirname(log_b))})],
            [("grep", {"pattern": "secret", "path": home_b})],
            [("glob", {"pattern": "*.txt", "path": home_b})],
            "a done"])
        oca = opencode(sb.b, USER_ID="erin", **pool)
        sid_a = oca.session()
        oca.prompt(sid_a, "SCRIPT:mu_a")
        (_, ba), (_, ra), (_, ca), (_, wa), (_, ra2), (_, bga), (_, ga), (_, gla) = tools_by_name(oca, sid_a)
        user_a, home_a = completed(ba)["output"].split()
        assert user_a != user_b and home_a == "/home/" + user_a, (user_a, user_b)
        assert ba["metadata"]["sandboxId"] == sandbox_id
        # A's read of B's file fails with a permission error; so does a cat
        assert ra["status"] == "error", ra
        print("A's read of B's file: %s" % ra["error"])
        assert "Permission denied" in ra["error"] and home_b + "/secret.txt" in ra["error"], ra
        assert "frank's secret" not in ra["error"]
        out = completed(ca)["output"]
        assert "Permission denied" in out and "frank's secret" not in out, ca
        assert ca["metadata"]["exit"] != 0, ca
        assert "1: erin's" in completed(ra2)["output"], ra2
        # B's background log: in a directory of B's alone (0700), itself 0600; A reads nothing
        out = completed(bga)["output"]
        assert "frank-bg-secret" not in out and "Permission denied" in out, out
        for t in (ga, gla):
            assert t["status"] == "error", t
            assert t["error"].startswith("Permission denied: %s is outside your working directory %s" % (home_b, home_a)), t
        # what the plugin made in the sandbox: B's background directory in B's
        # private tmp, nothing else in /tmp but the seats' private tmps
        st, body = DOCKER.call("GET", "/containers/sb-%s/archive?path=/tmp" % sandbox_id)
        assert st == 200, (st, body)
        with tarfile.open(fileobj=io.BytesIO(body)) as t:
            made = {m.name: m for m in t.getmembers() if m.name != "tmp"}
        seat_b = "tmp" + os.path.dirname(os.path.dirname(log_b))[len("/tmp"):]
        bgdir = "tmp" + os.path.dirname(log_b)[len("/tmp"):]
        seats = sorted(n for n in made if re.fullmatch(r"tmp/\.seats/\d+", n))
        assert seat_b in seats and len(seats) <= 2, sorted(made)
        assert sorted(made) == sorted(["tmp/.seats"] + seats + [bgdir, bgdir + "/output.log"]), sorted(made)
        assert made["tmp/.seats"].uid == 0 and made["tmp/.seats"].mode & 0o777 == 0o711, made
        for n in seats:
            assert made[n].mode & 0o777 == 0o700 and made[n].uid == int(n.rsplit("/", 1)[1]), made[n]
        assert made[bgdir].mode & 0o777 == 0o700 and made[bgdir + "/output.log"].mode & 0o777 == 0o600, made
        assert made[bgdir].uid == made[bgdir + "/output.log"].uid == made[seat_b].uid != 0
        assert container_file(sandbox_id, home_a + "/mine.txt") == b"erin's\n"
        assert container_file(sandbox_id, home_b + "/secret.txt") == b"frank's secret\n"
        st = sb.b.status()
        assert (st["activeSlots"], st["activeLeases"]) == (1, 2), st
        assert len(sb.containers()) == 1
        oca.delete(sid_a)
    finally:
        stop_hb.set()
        hb.join(5)
    wait_until(lambda: sb.b.status()["activeLeases"] == 1, 30, desc="erin's lease released")
    sb.release("frank", sid_b, "deleted")
